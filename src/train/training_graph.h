/* The graph a training run needs, built once from a zoo model: inputs,
 * the training tower with its loss and update, and an evaluation copy that
 * shares the variables (no dropout, batch norm with moving statistics).
 * Shared by the trainer, `ctower eval` and the benchmarks. */
#ifndef CTOWER_TRAINING_GRAPH_H
#define CTOWER_TRAINING_GRAPH_H

#include "ctower/models.h"
#include "ctower/optimizer.h"

typedef struct ct_training_graph {
  ct_graph *graph;
  ct_output images;         /* [-1, H, W, C] f32 placeholder */
  ct_output labels;         /* [-1] i32 placeholder */
  /* training tower (name scope tower_0) */
  ct_output loss;           /* mean cross-entropy */
  ct_output accuracy;
  ct_train_op train;        /* the optimizer update and its learning-rate feed */
  ct_node *step;            /* runs the update and the model's update ops */
  /* evaluation copy (name scope eval) */
  ct_output eval_loss_sum;  /* summed cross-entropy of the batch */
  ct_output eval_accuracy;
} ct_training_graph;

/* Builds into a new graph. with_training = 0 builds only the evaluation copy
 * (for `ctower eval`). Returns 0 or fills status; *out then owns the graph
 * (free with ct_training_graph_free). */
int ct_training_graph_build(ct_training_graph *out, const ct_model_def *model, int64_t height,
                            int64_t width, int64_t channels, int num_classes, uint64_t seed,
                            const ct_optimizer_config *optimizer, int with_training,
                            ct_status *status);
void ct_training_graph_free(ct_training_graph *tg);

#endif
