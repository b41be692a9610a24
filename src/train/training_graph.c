#include "train/training_graph.h"

#include <string.h>

int ct_training_graph_build(ct_training_graph *tg, const ct_model_def *model, int64_t height,
                            int64_t width, int64_t channels, int num_classes, uint64_t seed,
                            const ct_optimizer_config *optimizer, int with_training,
                            ct_status *status) {
  memset(tg, 0, sizeof *tg);
  ct_graph *g = ct_graph_new();
  if (g == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory building the graph");
    return 1;
  }
  tg->graph = g;
  ct_graph_set_seed(g, seed);
  tg->images = ct_placeholder(g, "images", CT_F32, ct_shape_of(4, (int64_t)-1, height, width, channels));
  tg->labels = ct_placeholder(g, "labels", CT_I32, ct_shape_of(1, (int64_t)-1));
  if (with_training) {
    ct_graph_push_name_scope(g, "tower_0");
    ct_output logits = model->build(g, tg->images, num_classes, 1);
    tg->loss = ct_reduce_mean(g, ct_sparse_softmax_cross_entropy(g, logits, tg->labels), 0, 0);
    tg->accuracy = ct_accuracy(g, logits, tg->labels);
    ct_graph_pop_name_scope(g);
    ct_optimizer_minimize(g, optimizer, tg->loss, &tg->train);
    ct_node *parts[65];
    int n = 0;
    parts[n++] = tg->train.op;
    for (int i = 0; i < ct_graph_update_op_count(g) && n < 65; ++i)
      parts[n++] = ct_graph_update_op(g, i);
    tg->step = ct_group(g, "train_step", n, parts);
  }
  ct_graph_push_name_scope(g, "eval");
  ct_output logits = model->build(g, tg->images, num_classes, 0);
  tg->eval_loss_sum = ct_reduce_sum(g, ct_sparse_softmax_cross_entropy(g, logits, tg->labels), 0, 0);
  tg->eval_accuracy = ct_accuracy(g, logits, tg->labels);
  ct_graph_pop_name_scope(g);
  const ct_status *gs = ct_graph_status(g);
  if (gs->code != CT_OK) {
    ct_status_set(status, gs->code, "building model '%s': %s", model->name, gs->message);
    ct_training_graph_free(tg);
    return 1;
  }
  return 0;
}

void ct_training_graph_free(ct_training_graph *tg) {
  ct_graph_free(tg->graph);
  memset(tg, 0, sizeof *tg);
}
