/* A model library: your own network for `ctower train` without rebuilding
 * ctower. Compile this file as a shared library against include/ctower
 * (CMake: add_library(example_models MODULE example_models.c); by hand:
 * cc -shared -fPIC -I include -o libexample_models.so example_models.c)
 * and point the config at it:
 *
 *   model:
 *     library: build/libexample_models.so
 *     name: small_cnn
 *
 * The library does not link ctower: the `ctower` command that loads it
 * provides the layer and op functions it calls. Everything else of the
 * command stays as it is: devices, towers, the data pipeline, checkpoints.
 * examples/model_library.yaml trains it. */
#include "ctower/models.h"

/* images [N, H, W, C] -> logits [N, num_classes]: a 3x3x16 convolution,
 * 2x2 max pooling, a 3x3x32 convolution, global average pooling, dense. */
static ct_output build_small_cnn(ct_graph *g, ct_output images, int num_classes, int training) {
  (void)training; /* no dropout or batch norm: training and evaluation build alike */
  ct_output x =
      ct_layer_conv2d(g, images, 16, 3, 1, CT_PADDING_SAME, CT_ACTIVATION_RELU, "conv1");
  x = ct_layer_max_pool(g, x, 2, 2, CT_PADDING_VALID, "pool1");
  x = ct_layer_conv2d(g, x, 32, 3, 1, CT_PADDING_SAME, CT_ACTIVATION_RELU, "conv2");
  x = ct_layer_global_avg_pool(g, x, "pool2");
  return ct_layer_dense(g, x, num_classes, CT_ACTIVATION_NONE, "logits");
}

static const ct_model_def example_models[] = {
    {"small_cnn", "2 convolutions (3x3x16, 3x3x32), pooling, dense", build_small_cnn, NULL},
};

CT_EXPORT_MODELS(example_models);
