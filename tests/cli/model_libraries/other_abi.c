/* A model library built for another model ABI version than this ctower's:
 * `ctower train` must refuse it with a clear error (tests/cli/layers.sh). */
#include "ctower/models.h"

static ct_output build_dense(ct_graph *g, ct_output images, int num_classes, int training) {
  (void)training;
  return ct_layer_dense(g, images, num_classes, CT_ACTIVATION_NONE, "logits");
}

static const ct_model_def models[] = {{"dense", "one dense layer", build_dense, NULL}};

__attribute__((visibility("default"))) const ct_model_exports ctower_model_exports = {
    CT_MODEL_ABI_VERSION + 1, 1, models};
