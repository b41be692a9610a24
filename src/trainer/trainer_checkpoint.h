/* A training run's checkpoints: saving and resuming (trainer_checkpoint.c). */
#ifndef CTOWER_TRAINER_TRAINER_CHECKPOINT_H
#define CTOWER_TRAINER_TRAINER_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "ctower/data.h"
#include "ctower/session.h"
#include "ctower/trainer.h"
#include "parallel/strategy.h"
#include "trainer/training_graph.h"

/* Where training stands: the global step, the epochs
 * done, and the index of the next example within the epoch under way (0
 * between epochs; a run stopped by max_steps stops inside one). */
typedef struct ct_train_position {
  int64_t step, epoch, example;
} ct_train_position;

/* Writes the original variables (not replicas), under their tower-free
 * names, with the position, the model, the optimizer, the test accuracy
 * and what the model learned from: the dataset, the image shape, the class
 * count, CIFAR-100's fine or coarse labels and (for an image folder) the
 * class names of train_set as a JSON array under "classes", to
 * options->train.checkpoint; besides, every rank's own values of the
 * variables each rank holds its own of (compression's residuals, and every
 * variable while the strategy's replicas differ) under replica_<rank>/,
 * and the strategy's own state (strategy NULL: none). Every rank calls it;
 * rank 0 writes. Returns 0 or fills status. */
int ct_trainer_save_checkpoint(ct_session *session, const ct_training_graph *tg,
                               const ct_trainer_options *options, const ct_dataset *train_set,
                               const ct_train_position *at, double test_accuracy,
                               const ct_strategy *strategy, void *strategy_state,
                               ct_status *status);

/* "classes: 0 cats, 1 dogs, ..." for a dataset with class names (the first
 * ones and the last when there are many), or "" without. */
void ct_trainer_classes_text(const ct_dataset *dataset, char *buf, size_t size);

/* Copies every variable tg's graph has (replicas from their original's
 * entry) from the checkpoint at path. A checkpoint that records another
 * model than options->model, or data other than `data` (the run's
 * training set, or eval's test set) in its dataset, image shape, class
 * names, class count or CIFAR-100 labels, is refused with INVALID_ARGUMENT
 * naming both, before anything is restored. When `at` is not NULL
 * (--resume) the checkpoint's optimizer must be the options' (refused
 * naming both otherwise), and *at is filled from its metadata (global_step,
 * epoch and epoch_example must each be a count: DATA_LOSS naming the one
 * that is not), and the strategy (NULL: none) restores its own state.
 * A rank's own value (replica_<rank>/) comes before the original's.
 * Returns 0 or fills status. */
int ct_trainer_restore_checkpoint(ct_session *session, const ct_training_graph *tg,
                                  const ct_trainer_options *options, const ct_dataset *data,
                                  const char *path, ct_train_position *at,
                                  const ct_strategy *strategy, void *strategy_state,
                                  ct_status *status);

#endif
