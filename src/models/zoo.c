/* The model zoo. Each model maps images [N, H, W, C] to logits. */
#include <stdio.h>
#include <string.h>

#include "ctower/models.h"
#include "models/plugin_call.h"

/* 784-256-128-10 with ReLU. */
static ct_output build_mlp(ct_graph *g, ct_output images, int num_classes, int training) {
  (void)training;
  ct_output x = ct_layer_dense(g, images, 256, CT_ACTIVATION_RELU, "fc1");
  x = ct_layer_dense(g, x, 128, CT_ACTIVATION_RELU, "fc2");
  return ct_layer_dense(g, x, num_classes, CT_ACTIVATION_NONE, "logits");
}

/* The TensorFlow layers-tutorial CNN: conv 5x5x32, pool, conv 5x5x64, pool,
 * dense 1024, dropout 0.4, dense. */
static ct_output build_fmnist_cnn(ct_graph *g, ct_output images, int num_classes, int training) {
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
    shortcut =
        ct_layer_conv2d_bn(g, x, filters, 1, stride, CT_ACTIVATION_NONE, training, "shortcut");
  y = ct_relu(g, ct_add(g, y, shortcut));
  ct_graph_pop_variable_scope(g);
  ct_graph_pop_name_scope(g);
  return y;
}

ct_output ct_resnet_cifar(ct_graph *g, ct_output images, int depth, int num_classes, int training) {
  if (depth < 8 || (depth - 2) % 6 != 0) {
    ct_graph_set_error(g, CT_INVALID_ARGUMENT,
                       "a CIFAR ResNet has 6n + 2 layers (20, 32, 44, 56, 110...), not %d", depth);
    return (ct_output){NULL, 0};
  }
  const int blocks = (depth - 2) / 6;
  ct_output x = ct_layer_conv2d_bn(g, images, 16, 3, 1, CT_ACTIVATION_RELU, training, "conv0");
  static const int filters[3] = {16, 32, 64};
  for (int stage = 0; stage < 3; ++stage)
    for (int block = 0; block < blocks; ++block) {
      char name[32];
      snprintf(name, sizeof name, "stage%d_block%d", stage + 1, block + 1);
      x = residual_block(g, x, filters[stage], stage > 0 && block == 0 ? 2 : 1, training, name);
    }
  x = ct_layer_global_avg_pool(g, x, "pool");
  return ct_layer_dense(g, x, num_classes, CT_ACTIVATION_NONE, "logits");
}

#define RESNET(depth)                                                                  \
  static ct_output build_resnet##depth(ct_graph *g, ct_output images, int num_classes, \
                                       int training) {                                 \
    return ct_resnet_cifar(g, images, depth, num_classes, training);                   \
  }
RESNET(20)
RESNET(32)
RESNET(44)
RESNET(56)
RESNET(110)

/* The network of TensorFlow's CIFAR-10 tutorial (cifar10.inference), for
 * 24x24x3 crops: conv 5x5x64, max pool 3x3/2, LRN, conv 5x5x64, LRN, max
 * pool 3x3/2, dense 384, dense 192, linear. Initialized as the tutorial:
 * truncated normal weights (stddev 5e-2 for the convolutions, 0.04 for the
 * dense layers, 1/192 for the last), biases 0 (conv1, logits) or 0.1; the
 * two dense layers' weights decay by 0.004 (the tutorial's wd). */
static ct_output build_cifar10_cnn(ct_graph *g, ct_output images, int num_classes, int training) {
  (void)training;
  const ct_initializer zero = {CT_INIT_ZEROS, 0.0f}, tenth = {CT_INIT_CONSTANT, 0.1f};
  const ct_layer_params conv1 = {{CT_INIT_NORMAL, 5e-2f}, zero, 0.0f, 0},
                        conv2 = {{CT_INIT_NORMAL, 5e-2f}, tenth, 0.0f, 0},
                        local = {{CT_INIT_NORMAL, 0.04f}, tenth, 0.004f, 0},
                        logits = {{CT_INIT_NORMAL, 1.0f / 192.0f}, zero, 0.0f, 0};
  const float lrn_alpha = 0.001f / 9.0f;
  ct_output x = ct_layer_conv2d_with(g, images, 64, 5, 1, CT_PADDING_SAME, CT_ACTIVATION_RELU,
                                     &conv1, "conv1");
  x = ct_layer_max_pool(g, x, 3, 2, CT_PADDING_SAME, "pool1");
  x = ct_layer_lrn(g, x, 4, 1.0f, lrn_alpha, 0.75f, "norm1");
  x = ct_layer_conv2d_with(g, x, 64, 5, 1, CT_PADDING_SAME, CT_ACTIVATION_RELU, &conv2, "conv2");
  x = ct_layer_lrn(g, x, 4, 1.0f, lrn_alpha, 0.75f, "norm2");
  x = ct_layer_max_pool(g, x, 3, 2, CT_PADDING_SAME, "pool2");
  x = ct_layer_dense_with(g, x, 384, CT_ACTIVATION_RELU, &local, "local3");
  x = ct_layer_dense_with(g, x, 192, CT_ACTIVATION_RELU, &local, "local4");
  return ct_layer_dense_with(g, x, num_classes, CT_ACTIVATION_NONE, &logits, "logits");
}

static const ct_model_def models[] = {
    {"mlp", "multilayer perceptron 784-256-128-10, ReLU", build_mlp, NULL},
    {"fmnist_cnn", "2 conv (5x5x32, 5x5x64) + max pool, dense 1024, dropout 0.4", build_fmnist_cnn, NULL},
    {"cifar10_cnn", "TensorFlow CIFAR-10 tutorial: 2 conv 5x5x64 + pool + LRN, dense 384, 192",
     build_cifar10_cnn, NULL},
    {"resnet20", "CIFAR ResNet-20: 3x3 conv, 3 stages of 3 residual blocks (16/32/64), BN",
     build_resnet20, NULL},
    {"resnet32", "CIFAR ResNet-32: as resnet20 with 5 blocks per stage", build_resnet32, NULL},
    {"resnet44", "CIFAR ResNet-44: as resnet20 with 7 blocks per stage", build_resnet44, NULL},
    {"resnet56", "CIFAR ResNet-56: as resnet20 with 9 blocks per stage", build_resnet56, NULL},
    {"resnet110", "CIFAR ResNet-110: as resnet20 with 18 blocks per stage", build_resnet110, NULL},
};

/* model's build function; guarded (plugin_call.h) where it is another
 * object's code than ctower's own: a model library's. */
static ct_output call_build(const ct_model_def *model, ct_graph *g, ct_output images,
                            int num_classes, int training) {
  const void *build, *own;
  ct_output (*self)(const ct_model_def *, ct_graph *, ct_output, int, int) = ct_model_build;
  memcpy(&build, &model->build, sizeof build);
  memcpy(&own, &self, sizeof own);
  const char *object = ct_plugin_object_of(build), *own_object = ct_plugin_object_of(own);
  if (object == NULL || own_object == NULL || strcmp(object, own_object) == 0)
    return model->build(g, images, num_classes, training);
  char what[320];
  snprintf(what, sizeof what, "the build function of model '%s'", model->name);
  ct_plugin_call_begin(object, what);
  const ct_output logits = model->build(g, images, num_classes, training);
  ct_plugin_call_end();
  return logits;
}

/* logits, or a null output with the graph's error when they are not a
 * [N, num_classes] f32 output of graph g. */
static ct_output checked_logits(const ct_model_def *model, ct_graph *g, ct_output logits,
                                int num_classes) {
  if (ct_graph_status(g)->code != CT_OK) return logits;
  int of_graph = 0;
  for (int i = 0; i < ct_graph_node_count(g) && !of_graph; ++i)
    of_graph = ct_graph_node(g, i) == logits.node;
  if (!of_graph || logits.index < 0 || logits.index >= ct_node_num_outputs(logits.node)) {
    ct_graph_set_error(g, CT_INVALID_ARGUMENT,
                       "model '%s' returned an output that is not one of the graph's: its build "
                       "function must return an output of the ct_graph it was given",
                       model->name);
    return (ct_output){NULL, 0};
  }
  const ct_shape shape = ct_output_shape(logits);
  if (ct_output_dtype(logits) != CT_F32 || shape.rank != 2 || shape.dims[1] != num_classes) {
    char dims[96];
    ct_graph_set_error(g, CT_INVALID_ARGUMENT,
                       "model '%s' returned logits of shape %s (%s), but the dataset has %d "
                       "classes: a model's output must be f32 logits [batch, %d]",
                       model->name, ct_shape_str(&shape, dims, sizeof dims),
                       ct_dtype_name(ct_output_dtype(logits)), num_classes, num_classes);
    return (ct_output){NULL, 0};
  }
  return logits;
}

ct_output ct_model_build(const ct_model_def *model, ct_graph *g, ct_output images, int num_classes,
                         int training) {
  const ct_graph_scope_mark scopes = ct_graph_scope_mark_now(g);
  const ct_output logits =
      model->build ? call_build(model, g, images, num_classes, training)
                   : ct_layers_build(g, images, model->layers, num_classes, training);
  /* a scope left open would hold what is built next: the next tower */
  char open[200];
  if (ct_graph_scopes_return_to(g, &scopes, open, sizeof open)) {
    ct_graph_set_error(g, CT_FAILED_PRECONDITION,
                       "model '%s': its build function returned with %s; a build function "
                       "pops every scope it pushes (ct_graph_pop_device after "
                       "ct_graph_push_device, ...) and no other, before it returns",
                       model->name, open);
    return (ct_output){NULL, 0};
  }
  return checked_logits(model, g, logits, num_classes);
}

int ct_model_count(void) { return (int)(sizeof models / sizeof models[0]); }
const ct_model_def *ct_model_at(int index) {
  return index >= 0 && index < ct_model_count() ? &models[index] : NULL;
}
const ct_model_def *ct_model_find(const char *name) {
  for (int i = 0; i < ct_model_count(); ++i)
    if (strcmp(models[i].name, name) == 0) return &models[i];
  return NULL;
}
