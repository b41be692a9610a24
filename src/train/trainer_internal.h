/* The parts of the trainer (private to src/train) that `ctower train`,
 * `ctower eval` and `ctower bench` share: the options' checks, datasets
 * and batch buffers, one training run and its steps, evaluation,
 * checkpoints, and what they print. */
#ifndef CTOWER_TRAIN_TRAINER_INTERNAL_H
#define CTOWER_TRAIN_TRAINER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ctower/data.h"
#include "ctower/trainer.h"
#include "core/clock.h"
#include "exec/estimate.h"
#include "parallel/strategy.h"
#include "train/training_graph.h"

/* INVALID_ARGUMENT naming the first option out of range (an unknown model,
 * a batch size, epoch or step count, or learning rate out of range);
 * returns 1 then. */
int ct_trainer_check_options(const ct_trainer_options *options, ct_status *status);

/* The model the options name: their layer list, a model of their shared
 * library, or the zoo's. Returns 0 or fills status; close it (after the
 * graphs built from it are freed) either way. */
typedef struct ct_trainer_model {
  ct_model_def def;
  ct_model_library *library; /* NULL unless model_library is set */
} ct_trainer_model;
int ct_trainer_model_open(const ct_trainer_options *options, ct_trainer_model *model,
                          ct_status *status);
void ct_trainer_model_close(ct_trainer_model *model);

/* `ctower plan`'s summary of the model: a row per layer (a name scope of
 * the first tower) with its output shape, parameters and device, and the
 * totals. Returns 0 or fills status. */
int ct_print_model_summary(ct_session *session, const ct_graph *graph, const char *model,
                           ct_status *status);

/* The training (train = 1) or test split of the dataset the options name. */
ct_dataset *ct_trainer_open_dataset(const ct_trainer_options *options, int train,
                                    ct_status *status);

/* A batch of images and labels, sized for the largest batch. */
typedef struct ct_batch_buffers {
  ct_tensor *images, *labels;
} ct_batch_buffers;

int ct_batch_buffers_init(ct_batch_buffers *buffers, int64_t batch, int64_t h, int64_t w,
                          int64_t c, ct_status *status);

/* dataset.augment, or NULL when it changes nothing. */
const ct_augment_options *ct_trainer_augment(const ct_trainer_options *options);

/* A pipeline of dataset.threads workers and dataset.prefetch batches over
 * ds in batches of `batch`: training's (train != 0: shuffled as
 * dataset.shuffle says, augmented with random draws) or evaluation's (in
 * order, the central crop and standardization). rows gives the rows
 * callback, its context and max_rows (threads and prefetch are set here).
 * NULL with status when it cannot start. */
ct_pipeline *ct_trainer_open_pipeline(const ct_trainer_options *options, const ct_dataset *ds,
                                      int64_t batch, int train, ct_pipeline_options rows,
                                      ct_status *status);

/* The shape of the images the model sees: the dataset's, cropped as
 * dataset.augment.crop asks (training and evaluation alike). */
void ct_trainer_image_shape(const ct_trainer_options *options, const ct_dataset *dataset,
                            int64_t *h, int64_t *w, int64_t *c);
void ct_batch_buffers_free(ct_batch_buffers *buffers);

/* evaluate.c: test loss and accuracy over a whole dataset, on the
 * evaluation copies. */
typedef struct ct_eval_result {
  double loss, accuracy;
} ct_eval_result;

int ct_trainer_evaluate(ct_session *session, const ct_training_graph *tg,
                        const ct_trainer_options *options, const ct_dataset *test,
                        ct_eval_result *result, ct_status *status);

/* trainer_checkpoint.c: where training stands: the global step, the epochs
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

/* When the host did what for the last batch and step (ct_monotonic_seconds). */
typedef struct ct_step_times {
  double input_start, input_end; /* reading the batch */
  double run_start, run_end;     /* the session's run of the step */
  double sync_start, sync_end;   /* summing the loss and accuracy over the ranks */
} ct_step_times;

/* train_run.c: the data, graph and session of a training run. */
typedef struct ct_train_run {
  const ct_trainer_options *options;
  ct_tower_options towers;
  ct_dataset *train_set, *test_set;
  ct_trainer_model model;
  ct_training_graph tg;
  ct_session *session;
  ct_pipeline *pipeline;          /* the training set's batches, prepared ahead */
  ct_batch_buffers buf;           /* the last batch: the pipeline's tensors (not owned) */
  int64_t *rows_sizes;            /* per global tower: the pipeline's even split */
  ct_tower_feeds *feeds;  /* per tower, then the learning rate */
  float *weights;         /* batch + towers */
  /* with a GPU: the next step's feeds, which a step stages on the GPUs
   * (ct_session_run_staged); NULL without one (nothing to stage) */
  ct_tower_feeds *next_feeds;
  float *next_weights;
  ct_output *fetches;     /* loss, then each tower's logits, then the strategy's */
  int n_fetches;
  int64_t sizes[CT_MAX_DEVICES];  /* the last step's shard sizes, of this process's towers */
  /* the job's towers: this process's are first_tower .. first_tower +
   * towers.n_towers - 1 of global_towers, in rank order (a process on its
   * own: 0 of towers.n_towers) */
  int first_tower, global_towers;
  int job_towers;                 /* this process's towers among them: 0 on a ps task */
  const ct_strategy *strategy;    /* of towers.variable_update (src/parallel) */
  void *strategy_state;           /* its state for the run (its run_new's), or NULL */
  int ran;                        /* a step has run */
  int64_t *global_sizes;          /* per global tower: the last step's shard sizes */
  ct_batch_share share;           /* this process's rows of the last global batch */
  int64_t rows;                   /* how many: the sum of sizes */
  int auto_split;                 /* split: auto, over several towers */
  double speeds[CT_MAX_DEVICES];  /* auto: examples/s of each tower, smoothed; 0 until measured */
  ct_run_metadata *timeline;      /* auto: where the speeds come from; and the steps observed */
  int record_timeline;            /* record the next step's timeline */
  ct_step_times times;            /* of the last batch and step */
  int interrupted;                /* the signal some rank got by the end of the last step
                                     (ct_interrupt_combine of them all), or 0: every rank stops
                                     after it */
  double learning_rate;           /* the schedule's rate at the last step */
  /* with train.log_dir, on rank 0: the placement log, kept for TensorBoard
   * (printed too when session.log_device_placement asks) */
  FILE *placement_log;
  char *placement;
  size_t placement_size;
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

/* The next global batch of the epoch: splits its n examples over the
 * job's towers and reads this process's rows of it into run->buf. Returns
 * n, 0 once the epoch is over, or -1 with status when an example cannot
 * be read. */
int64_t ct_train_run_next_batch(ct_train_run *run, ct_status *status);

/* The feeds of a step on the batch ct_train_run_next_batch read, into
 * run->feeds->feeds: each tower's shard, then `learning_rate` (borrowed).
 * Returns their count. */
int ct_train_run_feeds(ct_train_run *run, const ct_tensor *learning_rate);

/* Predicts a step on a full batch (ct_session_estimate_run) from its
 * shapes, without reading or running anything. Returns 0 or fills status;
 * free *estimate either way. */
int ct_train_run_estimate(ct_train_run *run, ct_run_estimate *estimate, ct_status *status);

/* One optimizer step over all towers (of every rank) on the batch
 * ct_train_run_next_batch read; fills the whole batch's loss and accuracy,
 * the same on every rank, and run->interrupted, the same on every rank. Returns 0 or fills status (FAILED_PRECONDITION
 * when the loss is no longer finite). */
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

/* Compares a hash of every variable with rank 0's (nothing in a process on
 * its own): replicas on every rank must stay bitwise equal. Returns 0, or 1
 * and FAILED_PRECONDITION naming the first rank that differs. */
int ct_train_run_check_replicas(ct_train_run *run, int64_t global_step, ct_status *status);

/* interrupt.c: SIGINT and SIGTERM during ct_train_main (handle_signals). */
void ct_interrupt_install(void);
void ct_interrupt_restore(void);
/* From here on the first signal stops the run after its step; until then
 * (start-up: datasets, the model, the session) it ends the process. */
void ct_interrupt_training_started(void);
/* The signal received since ct_interrupt_install, or 0. */
int ct_interrupt_requested(void);
/* The signal a job stops with when one rank got a and another b (0:
 * none): SIGINT when either is, else the other; so every rank of a job
 * exits with the same status, whichever rank was signalled. */
int ct_interrupt_combine(int a, int b);
/* The run stopped for the job's signal `sig`: ct_trainer_interrupt_signal
 * reports it, on every rank, from now on. */
void ct_interrupt_stopped_by(int sig);

/* observe.c: the trace (--trace) and the efficiency report of a run. It
 * samples a few steps' timelines (every tenth from `first_sampled`) and
 * every traced step's. */
typedef struct ct_observer ct_observer;

/* NULL and status when out of memory or (under MPI) the ranks cannot
 * agree on a clock. Every rank calls it at the same point. */
ct_observer *ct_observer_new(const ct_observe_options *options, const ct_train_run *run,
                             int64_t first_sampled, ct_status *status);
/* Whether step's timeline is wanted: set run->record_timeline from it. */
int ct_observer_wants(const ct_observer *observer, int64_t step);
/* Takes in the step just run (its timeline when it was wanted). */
void ct_observer_add_step(ct_observer *observer, const ct_train_run *run, int64_t step);
/* Prints the efficiency report (rank 0, from every rank's figures) and
 * writes the trace; every rank calls it. Returns 0 or fills status. */
int ct_observer_finish(ct_observer *observer, ct_train_run *run, ct_status *status);
void ct_observer_free(ct_observer *observer);

/* report.c: what training prints. */

/* "1 tower", "2 towers (replicated)", "2 towers (parameter server on /cpu:0)"; under a
 * cluster spec with ps tasks "1 ps task and 2 workers". */
const char *ct_trainer_tower_summary(const ct_tower_options *towers, char *buf, size_t size);

/* The first lines of `ctower train`: what is trained, how, on which devices. */
void ct_trainer_print_banner(const ct_train_run *run);

/* The progress line: redrawn on a terminal (at most every 0.2 s), else
 * printed at every tenth of the epoch. */
typedef struct ct_progress {
  int tty;
  double last_print;
  char shards[128];   /* "towers 64+64" when there are several */
} ct_progress;

void ct_progress_update(ct_progress *progress, int64_t epoch, int64_t epochs, int64_t batch,
                        int64_t batches, double loss, double accuracy, double images_per_sec,
                        double eta);

/* "CPU:0" for "/job:localhost/replica:0/task:0/device:CPU:0". */
const char *ct_trainer_device_short_name(const char *device_name);

/* The peak memory of every device that held anything. */
void ct_trainer_print_peak_memory(ct_session *session);
/* --memory-stats: every device's allocator, exactly. */
void ct_trainer_print_memory_stats(ct_session *session);

#endif
