/* The model zoo. Each model maps images [N, H, W, C] to logits. */
#include <stdio.h>
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

/* A basic residual block: two 3x3 conv-BN units and a shortcut (identity,
 * or a strided 1x1 conv-BN projection where the shape changes: the
 * paper's option B), added, then ReLU. */
static ct_output residual_block(ct_graph *g, ct_output x, int filters, int stride, int training,
                                const char *name) {
  ct_graph_push_name_scope(g, name);
  ct_graph_push_variable_scope(g, name);
  ct_output y = ct_layer_conv2d_bn(g, x, filters, 3, stride, CT_ACTIVATION_RELU, training, "conv1");
  y = ct_layer_conv2d_bn(g, y, filters, 3, 1, CT_ACTIVATION_NONE, training, "conv2");
  ct_output shortcut = x;
  if (stride != 1 || ct_output_shape(x).dims[3] != filters)
    shortcut = ct_layer_conv2d_bn(g, x, filters, 1, stride, CT_ACTIVATION_NONE, training,
                                  "shortcut");
  y = ct_relu(g, ct_add(g, y, shortcut));
  ct_graph_pop_variable_scope(g);
  ct_graph_pop_name_scope(g);
  return y;
}

/* The CIFAR ResNet-20 of He et al. (2016): a 3x3x16 conv-BN-ReLU, three
 * stages of three residual blocks (16, 32, 64 filters; the second and third
 * stages start with stride 2), global average pooling, dense. */
static ct_output build_resnet20(ct_graph *g, ct_output images, int num_classes, int training) {
  ct_output x = ct_layer_conv2d_bn(g, images, 16, 3, 1, CT_ACTIVATION_RELU, training, "conv0");
  static const int filters[3] = {16, 32, 64};
  for (int stage = 0; stage < 3; ++stage)
    for (int block = 0; block < 3; ++block) {
      char name[32];
      snprintf(name, sizeof name, "stage%d_block%d", stage + 1, block + 1);
      x = residual_block(g, x, filters[stage], stage > 0 && block == 0 ? 2 : 1, training, name);
    }
  x = ct_layer_global_avg_pool(g, x, "pool");
  return ct_layer_dense(g, x, num_classes, CT_ACTIVATION_NONE, "logits");
}

static const ct_model_def models[] = {
    {"mlp", "multilayer perceptron 784-256-128-10, ReLU", build_mlp},
    {"fmnist_cnn", "2 conv (5x5x32, 5x5x64) + max pool, dense 1024, dropout 0.4", build_fmnist_cnn},
    {"resnet20", "CIFAR ResNet-20: 3x3 conv, 3 stages of 3 residual blocks (16/32/64), BN",
     build_resnet20},
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
