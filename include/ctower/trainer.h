/* ctower trainer: what `ctower train`, `ctower eval` and `ctower bench` run,
 * for an image classifier of the model zoo on a dataset. Start from
 * ct_trainer_options_defaults and change what differs. */
#ifndef CTOWER_TRAINER_H
#define CTOWER_TRAINER_H

#include <stdint.h>

#include "ctower/data.h"
#include "ctower/models.h"
#include "ctower/optimizer.h"
#include "ctower/session.h"
#include "ctower/status.h"
#include "ctower/towers.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { CT_TRAINER_PATH = 512 };

typedef struct ct_dataset_options {
  char name[64];               /* "synthetic"; an IDX dataset read from path ("fashion_mnist",
                                  "mnist"); "cifar10", "cifar100", "image_folder", "tfrecord" */
  char path[CT_TRAINER_PATH];  /* the folder of its files */
  int64_t batch_size;          /* global batch, split across towers; > 0 */
  int shuffle;                 /* shuffle the training examples each epoch */
  /* synthetic: random images of this shape and class count; image_folder and
   * tfrecord: the shape images are converted to; tfrecord: the class count */
  int64_t image_shape[3];      /* [height, width, channels] */
  int64_t num_classes;
  int64_t train_size, test_size;
  int coarse_labels;           /* cifar100: the 20 superclasses */
  int64_t label_offset;        /* tfrecord: subtracted from each stored label */
  int skip_bad_examples;       /* skip bad examples with a warning instead of failing */
  int64_t threads;             /* input pipeline workers; 0: the cores the CPU devices leave
                                  (at least 1) */
  int64_t prefetch;            /* batches prepared ahead, >= 1 */
  int cache;                   /* keep decoded examples in memory */
  ct_augment_options augment;  /* training's augmentation (evaluation: its crop, standardize) */
} ct_dataset_options;

/* How a global batch is split across towers: evenly, or in proportion to
 * each tower's measured speed. */
typedef enum ct_batch_split { CT_BATCH_SPLIT_EVEN = 0, CT_BATCH_SPLIT_AUTO } ct_batch_split;

typedef struct ct_train_options {
  int64_t epochs;                  /* >= 0 */
  int64_t max_steps;               /* stop after this many steps; 0: all epochs */
  int64_t seed;                    /* weights, shuffling and synthetic data */
  ct_optimizer_config optimizer;
  ct_schedule schedule;            /* base_rate is the learning rate (> 0) */
  char checkpoint[CT_TRAINER_PATH]; /* written after each epoch; "" saves none */
  ct_batch_split split;
  int64_t check_every;  /* under several ranks: steps between checks that every rank's
                           variables are bitwise equal; 0: only at the start */
  char log_dir[CT_TRAINER_PATH]; /* TensorBoard event files go here (rank 0); "" writes none */
  int64_t log_every_n_steps;     /* steps between the event files' training scalars; >= 1 */
} ct_train_options;

typedef struct ct_trainer_options {
  char model[64];                  /* a zoo model (ct_model_find); with layers or model_library,
                                      the name of the model they give */
  ct_layer_list layers;            /* n > 0: the model is this list of layers */
  char model_library[CT_TRAINER_PATH]; /* not "": the model is `model` of this shared library
                                          (ct_model_library_open) */
  ct_dataset_options dataset;
  ct_train_options train;
  ct_session_options session;      /* the devices, train.precision and train.conv_algorithm */
} ct_trainer_options;

/* fmnist_cnn on Fashion-MNIST (/usr/share/datasets/fashion-mnist), batch
 * 128 shuffled, 10 epochs, seed 42, momentum 0.9 at a constant 0.01, no
 * checkpoint, an even split, no TensorBoard log (points every 10 steps when
 * there is one), the session's defaults. */
void ct_trainer_options_defaults(ct_trainer_options *options);

/* What `train` and `bench` record besides their results. */
typedef struct ct_observe_options {
  const char *trace_path; /* --trace FILE: a Chrome trace of the steps below; NULL: none */
  int64_t trace_first;    /* --trace-steps A:B: steps A .. B-1, counted from 0; */
  int64_t trace_end;      /*   A = B = 0: the command's default (see its help) */
} ct_observe_options;

/* One epoch of training, as `ctower train` prints it. */
typedef struct ct_epoch_result {
  int64_t epoch;           /* 1 for the first */
  int64_t epochs;          /* of the run */
  int64_t step;            /* global steps done */
  double train_loss, train_accuracy; /* means over the epoch's examples */
  double test_loss, test_accuracy;
  double seconds;          /* the epoch's training time */
  double images_per_second;
} ct_epoch_result;

typedef struct ct_train_flags {
  int memory_stats;      /* --memory-stats: print per-device allocator stats */
  int quiet;             /* --quiet: no progress bar, only epoch lines */
  int resume;            /* --resume: continue from train.checkpoint when it exists */
  int handle_signals;    /* the first SIGINT or SIGTERM stops the run after its step with a
                            checkpoint (CT_CANCELLED; ct_trainer_interrupt_signal says which),
                            a second ends the process at once; so does the first before the
                            first step (start-up has no work to save) */
  ct_observe_options observe;
  const char *config_text; /* the effective config (YAML), logged as text in train.log_dir;
                              NULL: none */
  /* Called after each epoch's line is printed (the history of a run), on
   * the thread that called ct_train_main; NULL: none. */
  void (*on_epoch)(void *user, const ct_epoch_result *result);
  void *on_epoch_user;
} ct_train_flags;

typedef struct ct_bench_flags {
  int steps, warmup;  /* timed steps (>= 1), and untimed ones before them */
  int compare_single; /* --compare-single: also time one tower, for the scaling efficiency */
  ct_observe_options observe;
} ct_bench_flags;

/* Trains the model the options describe on `towers`, printing progress to
 * stdout and writing the checkpoint after each epoch. Returns 0 or fills
 * status (INVALID_ARGUMENT for options out of range). */
int ct_train_main(const ct_trainer_options *options, const ct_tower_options *towers,
                  const ct_train_flags *flags, ct_status *status);

/* The signal that stopped the last ct_train_main (SIGINT, SIGTERM), or 0.
 * Under mpirun it is the job's, the same on every rank: SIGINT when any
 * rank got SIGINT, else SIGTERM. */
int ct_trainer_interrupt_signal(void);

/* `ctower bench`: trains flags->warmup untimed then flags->steps timed
 * steps of the model on `towers` and prints their images/sec as
 * tf_cnn_benchmarks does, the median, and where the time went. Saves
 * nothing. Returns 0 or fills status. */
int ct_bench_main(const ct_trainer_options *options, const ct_tower_options *towers,
                  const ct_bench_flags *flags, ct_status *status);

/* `ctower plan`: builds the session, graph and plan of a training step
 * without running one and prints, per device, the ops placed there and
 * why, parameter, optimizer-state and predicted peak bytes, FLOPs and
 * bytes copied and all-reduced, then the predicted step time, speed-up over
 * one tower and ranks until 90% efficiency on each link, from the
 * calibration file (conservative defaults without one). Returns 0, or
 * fills status: RESOURCE_EXHAUSTED when a device's predicted peak passes
 * its memory limit (after printing the plan). */
typedef struct ct_plan_flags {
  int verbose;             /* every node with its device and reason */
  const char *calibration; /* NULL: $XDG_CACHE_HOME/ctower/calibration.json, else
                              ~/.cache/ctower/calibration.json */
  double link_gbps[8];     /* links to answer "ranks until efficiency < 90%" for */
  int n_links;
} ct_plan_flags;

int ct_plan_main(const ct_trainer_options *options, const ct_tower_options *towers,
                 const ct_plan_flags *flags, ct_status *status);

/* `ctower bench --calibrate`: measures this machine's kernel rates, memory
 * bandwidth and all-reduce costs (in process, and over MPI under mpirun)
 * on devices made from `session` and writes them to `path` (rank 0; NULL:
 * the default path of ct_plan_flags.calibration).
 * Returns 0 or fills status. */
int ct_calibrate_main(const ct_session_options *session, const char *path, ct_status *status);

/* Restores the checkpoint (options->train.checkpoint, or checkpoint_path
 * when not NULL) into one copy of the model and prints its test accuracy
 * and loss. Returns 0 or fills status. */
int ct_eval_main(const ct_trainer_options *options, const char *checkpoint_path,
                 ct_status *status);

#ifdef __cplusplus
}
#endif
#endif
