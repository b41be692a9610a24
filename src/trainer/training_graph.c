#include "trainer/training_graph.h"

#include <stdio.h>
#include <string.h>

#include "parallel/strategy.h"

int ct_training_graph_build(ct_training_graph *tg, const ct_model_def *model, int64_t height,
                            int64_t width, int64_t channels, int num_classes, uint64_t seed,
                            const ct_tower_options *towers, const ct_optimizer_config *optimizer,
                            ct_status *status) {
  memset(tg, 0, sizeof *tg);
  snprintf(tg->image_shape, sizeof tg->image_shape, "%lldx%lldx%lld", (long long)height,
           (long long)width, (long long)channels);
  ct_graph *g = ct_graph_new();
  if (g == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory building the graph");
    return 1;
  }
  tg->graph = g;
  ct_graph_set_seed(g, seed);
  ct_tower_options single;
  ct_tower_options_defaults(&single);
  if (towers == NULL) towers = &single;
  if (optimizer)
    ct_classifier_towers_build(g, model, height, width, channels, num_classes, towers, optimizer,
                               &tg->train);
  /* The evaluation copies read the original variables where they live: the
   * parameter server's, or tower 0's (the plain names), which every replica
   * equals; tower k's copy computes on tower k's device. Without training
   * towers (`ctower eval`) there is one copy. */
  const ct_strategy *strategy = ct_strategy_of(towers->variable_update);
  const int ps = strategy && strategy->one_copy;
  tg->n_eval = optimizer ? towers->n_towers : 1;
  if (optimizer) ct_graph_push_variable_reuse(g); /* the training towers made them */
  for (int k = 0; k < tg->n_eval; ++k) {
    struct ct_eval_tower *e = &tg->eval[k];
    char scope[32];
    snprintf(scope, sizeof scope, k ? "eval_%d" : "eval", k);
    ct_graph_push_device(g, towers->devices[k]);
    ct_graph_push_variable_device(g, ps ? towers->ps_device : towers->devices[0]);
    ct_graph_push_name_scope(g, scope);
    e->images =
        ct_placeholder(g, "images", CT_F32, ct_shape_of(4, (int64_t)-1, height, width, channels));
    e->labels = ct_placeholder(g, "labels", CT_I32, ct_shape_of(1, (int64_t)-1));
    ct_output logits = ct_model_build(model, g, e->images, num_classes, 0);
    e->loss_sum = ct_reduce_sum(g, ct_sparse_softmax_cross_entropy(g, logits, e->labels), 0, 0);
    e->accuracy = ct_accuracy(g, logits, e->labels);
    ct_graph_pop_name_scope(g);
    ct_graph_pop_variable_device(g);
    ct_graph_pop_device(g);
  }
  if (optimizer) ct_graph_pop_variable_reuse(g);
  const ct_status *gs = ct_graph_status(g);
  if (gs->code != CT_OK) {
    ct_status_set(status, gs->code, "building model '%s': %s", model->name, gs->message);
    ct_training_graph_free(tg);
    return 1;
  }
  return 0;
}

void ct_training_graph_free(ct_training_graph *tg) {
  ct_classifier_towers_free(&tg->train);
  ct_graph_free(tg->graph);
  memset(tg, 0, sizeof *tg);
}
