/* The graph a training run needs, built once from a zoo model: the training
 * towers (ct_classifier_towers_build: one or more replicas, their loss and
 * update) and
 * evaluation copies, one on each tower's device (name scopes eval, eval_1,
 * ...; no dropout, batch norm with moving statistics), all reading the
 * original variables, so any tower count evaluates alike. Shared by the
 * trainer, `ctower eval` and the benchmarks. */
#ifndef CTOWER_TRAINING_GRAPH_H
#define CTOWER_TRAINING_GRAPH_H

#include "ctower/models.h"
#include "ctower/optimizer.h"
#include "ctower/towers.h"
#include "trainer/classifier.h"

typedef struct ct_training_graph {
  ct_graph *graph;
  char image_shape[48]; /* "28x28x1": the images it was built for (checkpoints record it) */
  ct_classifier_towers train; /* n_towers 0 when built without training */
  /* evaluation copies, one per tower device */
  int n_eval;
  struct ct_eval_tower {
    ct_output images;       /* [-1, H, W, C] f32 placeholder */
    ct_output labels;       /* [-1] i32 placeholder */
    ct_output loss_sum;     /* summed cross-entropy of its shard */
    ct_output accuracy;     /* fraction of its shard classified right */
  } eval[CT_MAX_DEVICES];
} ct_training_graph;

/* Builds into a new graph. towers NULL means ct_tower_options_defaults;
 * optimizer NULL builds only the evaluation copy (for `ctower eval`).
 * Returns 0 or fills status; *out then owns the graph (free with
 * ct_training_graph_free). */
int ct_training_graph_build(ct_training_graph *out, const ct_model_def *model, int64_t height,
                            int64_t width, int64_t channels, int num_classes, uint64_t seed,
                            const ct_tower_options *towers, const ct_optimizer_config *optimizer,
                            ct_status *status);
void ct_training_graph_free(ct_training_graph *tg);

#endif
