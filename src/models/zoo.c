/* The model zoo. Each model maps images [N, H, W, C] to logits. */
#include <string.h>

#include "ctower/models.h"

/* 784-256-128-10 with ReLU. */
static ct_output build_mlp(ct_graph *g, ct_output images, int num_classes, int training) {
  (void)training;
  ct_output x = ct_layer_dense(g, images, 256, CT_ACTIVATION_RELU, "fc1");
  x = ct_layer_dense(g, x, 128, CT_ACTIVATION_RELU, "fc2");
  return ct_layer_dense(g, x, num_classes, CT_ACTIVATION_NONE, "logits");
}

/* The TensorFlow layers-tutorial CNN: conv 5x5x32, pool, conv 5x5x64, pool,
 * dense 1024, dropout 0.4, dense. */
static ct_output build_fmnist_cnn(ct_graph *g, ct_output images, int num_classes,
                                  int training) {
  ct_output x = ct_layer_conv2d(g, images, 32, 5, 1, CT_PADDING_SAME, CT_ACTIVATION_RELU, "conv1");
  x = ct_layer_max_pool(g, x, 2, 2, CT_PADDING_VALID, "pool1");
  x = ct_layer_conv2d(g, x, 64, 5, 1, CT_PADDING_SAME, CT_ACTIVATION_RELU, "conv2");
  x = ct_layer_max_pool(g, x, 2, 2, CT_PADDING_VALID, "pool2");
  x = ct_layer_dense(g, x, 1024, CT_ACTIVATION_RELU, "fc1");
  x = ct_layer_dropout(g, x, 0.4f, training, "dropout");
  return ct_layer_dense(g, x, num_classes, CT_ACTIVATION_NONE, "logits");
}

static const ct_model_def models[] = {
    {"mlp", "multilayer perceptron 784-256-128-10, ReLU", build_mlp},
    {"fmnist_cnn", "2 conv (5x5x32, 5x5x64) + max pool, dense 1024, dropout 0.4", build_fmnist_cnn},
};

int ct_model_count(void) { return (int)(sizeof models / sizeof models[0]); }
const ct_model_def *ct_model_at(int index) {
  return index >= 0 && index < ct_model_count() ? &models[index] : NULL;
}
const ct_model_def *ct_model_find(const char *name) {
  for (int i = 0; i < ct_model_count(); ++i)
    if (strcmp(models[i].name, name) == 0) return &models[i];
  return NULL;
}
