/* An image classifier trained as towers: each tower's inputs are "images"
 * [n_k, H, W, C] f32 and "labels" [n_k] i32, its per-example loss the
 * softmax cross-entropy of a zoo model's logits; the optimizer updates
 * every variable the towers return a gradient for (each replica, or each
 * variable once on the parameter server). Used by the trainer, `ctower
 * eval`, the benchmarks and the tests. */
#ifndef CTOWER_TRAINER_CLASSIFIER_H
#define CTOWER_TRAINER_CLASSIFIER_H

#include "ctower/models.h"
#include "ctower/optimizer.h"
#include "ctower/towers.h"

enum { CT_CLASSIFIER_IMAGES = 0, CT_CLASSIFIER_LABELS = 1 }; /* the towers' inputs */

typedef struct ct_classifier_towers {
  ct_tower_graph towers;             /* inputs: images, labels */
  ct_output logits[CT_MAX_DEVICES];  /* each tower's [n_k, classes] */
  ct_train_op update;                /* the updates and the learning-rate feed */
  ct_node *step;                     /* runs the updates and the model's update ops */
} ct_classifier_towers;

/* Builds the towers of `model` for images of H x W x C and num_classes
 * classes, and the optimizer's updates, into `graph`. Returns 0, or records
 * an error in the graph and returns 1. Free *out with
 * ct_classifier_towers_free either way (the graph stays the caller's). */
int ct_classifier_towers_build(ct_graph *graph, const ct_model_def *model, int64_t height,
                               int64_t width, int64_t channels, int num_classes,
                               const ct_tower_options *towers,
                               const ct_optimizer_config *optimizer, ct_classifier_towers *out);
void ct_classifier_towers_free(ct_classifier_towers *classifier);

/* ct_towers_make_feeds for a batch of images and labels. */
int ct_classifier_make_feeds(const ct_classifier_towers *classifier, const ct_tensor *images,
                             const ct_tensor *labels, int64_t n, const int64_t *sizes,
                             const ct_batch_share *share, ct_tower_feeds *out, float *weights);

#endif
