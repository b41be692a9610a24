/* The image classifier of classifier.h: its tower loss and its update. */
#include "trainer/classifier.h"

#include <string.h>

typedef struct classifier_model {
  const ct_model_def *model;
  int num_classes;
  ct_output *logits; /* per tower */
} classifier_model;

/* ct_tower_loss_fn: the model's logits, then each example's cross-entropy. */
static ct_output cross_entropy(ct_graph *g, int tower, const ct_output *inputs, void *data) {
  classifier_model *c = data;
  c->logits[tower] = ct_model_build(c->model, g, inputs[CT_CLASSIFIER_IMAGES], c->num_classes, 1);
  return ct_sparse_softmax_cross_entropy(g, c->logits[tower], inputs[CT_CLASSIFIER_LABELS]);
}

int ct_classifier_towers_build(ct_graph *g, const ct_model_def *model, int64_t height,
                               int64_t width, int64_t channels, int num_classes,
                               const ct_tower_options *towers,
                               const ct_optimizer_config *optimizer, ct_classifier_towers *out) {
  memset(out, 0, sizeof *out);
  classifier_model data = {model, num_classes, out->logits};
  ct_tower_model tower_model = {
      .n_inputs = 2,
      .inputs = {{"images", CT_F32, ct_shape_of(3, height, width, channels)},
                 {"labels", CT_I32, ct_shape_of(0)}},
      .loss = cross_entropy,
      .user_data = &data,
  };
  if (ct_towers_build(g, &tower_model, towers, &out->towers)) return 1;
  if (ct_optimizer_apply_gradients(g, optimizer, out->towers.n_gradients, out->towers.variables,
                                   out->towers.gradients, &out->update))
    return 1;
  ct_node *parts[66];
  int n_parts = 0;
  parts[n_parts++] = out->update.op;
  /* what the strategy runs besides (the parameter server across ranks:
   * rank 0's variables, once updated, into every rank's copy) */
  ct_node *after = ct_towers_after_update(g, &out->towers);
  if (after) parts[n_parts++] = after;
  for (int i = 0; i < ct_graph_update_op_count(g) && n_parts < 66; ++i)
    parts[n_parts++] = ct_graph_update_op(g, i);
  out->step = ct_group(g, "train_step", n_parts, parts);
  return ct_graph_status(g)->code != CT_OK;
}

void ct_classifier_towers_free(ct_classifier_towers *c) { ct_towers_free(&c->towers); }

int ct_classifier_make_feeds(const ct_classifier_towers *c, const ct_tensor *images,
                             const ct_tensor *labels, int64_t n, const int64_t *sizes,
                             const ct_batch_share *share, ct_tower_feeds *out, float *weights) {
  const ct_tensor *batch[2] = {[CT_CLASSIFIER_IMAGES] = images, [CT_CLASSIFIER_LABELS] = labels};
  return ct_towers_make_feeds(&c->towers, batch, n, sizes, share, out, weights);
}
