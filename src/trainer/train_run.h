/* One training run (train_run.c): its datasets, graph, session and feeds,
 * and its steps; `ctower train`, `ctower bench` and `ctower plan` share it. */
#ifndef CTOWER_TRAINER_TRAIN_RUN_H
#define CTOWER_TRAINER_TRAIN_RUN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ctower/data.h"
#include "ctower/trainer.h"
#include "exec/estimate.h"
#include "observe/observer.h"
#include "parallel/strategy.h"
#include "trainer/batch_split.h"
#include "trainer/run_inputs.h"
#include "trainer/training_graph.h"

/* A step's feeds and fetches: made room for at setup, filled by each step. */
typedef struct ct_step_feeds {
  ct_tower_feeds *feeds; /* per tower, then the learning rate */
  float *weights;        /* batch + towers */
  /* with a GPU: the next step's feeds, which a step stages on the GPUs
   * (ct_session_run_staged); NULL without one (nothing to stage) */
  ct_tower_feeds *next_feeds;
  float *next_weights;
  ct_output *fetches; /* loss, then each tower's logits, then the strategy's */
  int n_fetches;
} ct_step_feeds;

/* With train.log_dir, on rank 0: the session's placement log, kept for
 * TensorBoard (printed too when session.log_device_placement asks). */
typedef struct ct_placement_log {
  FILE *file; /* where the session writes it, into text */
  char *text;
  size_t size;
} ct_placement_log;

/* The data, graph and session of a training run. */
typedef struct ct_train_run {
  const ct_trainer_options *options;
  ct_tower_options towers;
  ct_dataset *train_set, *test_set;
  ct_trainer_model model;
  ct_training_graph tg;
  ct_session *session;
  ct_pipeline *pipeline;          /* the training set's batches, prepared ahead */
  ct_batch_buffers buf;           /* the last batch: the pipeline's tensors (not owned) */
  ct_tower_split split;           /* the job's towers, and the last batch's rows of each */
  ct_tower_speeds speeds;         /* split: auto */
  ct_step_feeds step;
  const ct_strategy *strategy;    /* of towers.variable_update (src/parallel) */
  void *strategy_state;           /* its state for the run (its run_new's), or NULL */
  int ran;                        /* a step has run */
  ct_observed_step observed;      /* the last step's times and timeline (auto: where the
                                     speeds come from) */
  int interrupted;                /* the signal some rank got by the end of the last step
                                     (ct_interrupt_combine of them all), or 0: every rank stops
                                     after it */
  double learning_rate;           /* the schedule's rate at the last step */
  ct_placement_log placement;
} ct_train_run;

/* Checks the options, opens the datasets, builds the graph and the
 * session, and starts the input pipeline. Returns 0 or fills status; free
 * *run either way. */
int ct_train_run_setup(ct_train_run *run, const ct_trainer_options *options,
                       const ct_tower_options *towers, ct_status *status);
/* ct_train_run_setup without the input pipeline, for a run that only
 * predicts its steps (ct_train_run_estimate): no batch is read or made. */
int ct_train_run_setup_graph(ct_train_run *run, const ct_trainer_options *options,
                             const ct_tower_options *towers, ct_status *status);
void ct_train_run_free(ct_train_run *run);

/* The next global batch of the epoch: this process's rows of it, which
 * the input pipeline read, into run->buf, and their split over its towers
 * into run->split (ct_tower_split_take). Returns the batch's size n, 0
 * once the epoch is over, or -1 with status when an example cannot be
 * read. */
int64_t ct_train_run_next_batch(ct_train_run *run, ct_status *status);

/* The feeds of a step on the batch ct_train_run_next_batch read, into
 * run->step.feeds->feeds: each tower's shard, then `learning_rate` (borrowed).
 * Returns their count. */
int ct_train_run_feeds(ct_train_run *run, const ct_tensor *learning_rate);

/* Predicts a step on a full batch (ct_session_estimate_run) from its
 * shapes, without reading or running anything. Returns 0 or fills status;
 * free *estimate either way. */
int ct_train_run_estimate(ct_train_run *run, ct_run_estimate *estimate, ct_status *status);

/* One optimizer step over all towers (of every rank) on the batch
 * ct_train_run_next_batch read; fills the whole batch's loss and accuracy,
 * the same on every rank, and run->interrupted, the same on every rank.
 * Returns 0 or fills status (FAILED_PRECONDITION when the loss is no
 * longer finite). */
int ct_train_run_step(ct_train_run *run, int64_t global_step, double epochs_done, double *loss,
                      double *accuracy, ct_status *status);

/* Every rank, at the end of an epoch: what the strategy does then (with ps
 * tasks: each variable from the rank that holds it, so that every rank
 * evaluates and rank 0 saves the job's model; under async updates,
 * run->interrupted when any rank was asked to stop; with block momentum,
 * the end of the block when the epoch ran to its end, epoch_done). Returns
 * 0 or fills status. */
int ct_train_run_end_epoch(ct_train_run *run, int epoch_done, ct_status *status);
/* Every rank, at the end of training: what the strategy counted (with ps
 * tasks, rank 0 prints the updates applied and the staleness seen).
 * Returns 0 or fills status. */
int ct_train_run_report(ct_train_run *run, ct_status *status);

/* The observer of the run's steps (ct_observer_new): the trace and the
 * efficiency report that `options` ask for, sampled from first_sampled. */
ct_observer *ct_train_run_observe(const ct_train_run *run, const ct_observe_options *options,
                                  int64_t first_sampled, ct_status *status);
/* ct_observer_finish with each device's FLOPs of a step as predicted
 * (ct_train_run_estimate) when steps were sampled. Every rank calls it.
 * Returns 0 or fills status. */
int ct_train_run_finish_observing(ct_train_run *run, ct_observer *observer, ct_status *status);

/* Compares a hash of every variable with rank 0's (nothing in a process on
 * its own): replicas on every rank must stay bitwise equal. Returns 0, or 1
 * and FAILED_PRECONDITION naming the first rank that differs. */
int ct_train_run_check_replicas(ct_train_run *run, int64_t global_step, ct_status *status);

#endif
