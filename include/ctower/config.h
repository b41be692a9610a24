/* ctower configuration: the YAML file of ../docs/config.md as a C struct,
 * and its translation to the library's options (the library itself never
 * sees the config). Built as its own library, ctower_config, with libyaml.
 *
 * ct_config_defaults fills every key with its default; ct_config_load reads a
 * file over it; ct_config_apply_override sets one KEY=VALUE (VALUE as YAML).
 * Errors name the file and line (or the override) and the key at fault.
 */
#ifndef CTOWER_CONFIG_H
#define CTOWER_CONFIG_H

#include <stdint.h>
#include <stdio.h>

#include "ctower/models.h"
#include "ctower/session.h"
#include "ctower/status.h"
#include "ctower/towers.h"
#include "ctower/trainer.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { CT_CONFIG_MAX_DEVICES = 64, CT_CONFIG_STR = 512 };

typedef struct ct_config {
  char source[CT_CONFIG_STR];          /* the file it was read from, "" for defaults */
  struct {
    char name[64];                     /* a zoo model (mlp | fmnist_cnn | ...), or with layers or
                                          a library: the model's name */
    ct_layer_list layers;              /* a model as a list of layers; n = 0: none */
    char library[CT_CONFIG_STR];       /* a shared library exporting model `name`; "": none */
  } model;
  struct {
    char name[64];                     /* fashion_mnist | mnist | synthetic | cifar10 | cifar100 |
                                          image_folder | tfrecord */
    char path[CT_CONFIG_STR];
    int64_t batch_size;                /* global batch, > 0 */
    int shuffle;
    /* synthetic: random images of this shape and class count */
    int n_image_dims;
    int64_t image_shape[3];            /* [height, width, channels] */
    int64_t num_classes;
    int64_t train_size, test_size;
    char label[16];                    /* cifar100: fine | coarse */
    int64_t label_offset;              /* tfrecord: subtracted from each stored label */
    int skip_bad_examples;             /* skip bad examples with a warning instead of failing */
    int64_t threads;                   /* input pipeline workers; 0: automatic */
    int64_t prefetch;                  /* batches prepared ahead */
    int cache;                         /* keep decoded examples in memory */
    struct {
      int n_crop;
      int64_t crop[2];                 /* [height, width]; []: no crop */
      int64_t pad;
      int flip;
      double brightness;
      int n_contrast;
      double contrast[2];              /* [lo, hi] */
      int standardize;
    } augment;
  } dataset;
  struct {
    int64_t epochs;                    /* >= 0 */
    int64_t max_steps;                 /* 0: all epochs */
    int64_t seed;
    struct {
      char name[32];                   /* sgd | momentum | adam */
      double learning_rate;            /* > 0 */
      double momentum;                 /* [0, 1) */
      int nesterov;
      double weight_decay;             /* >= 0 */
      double beta1, beta2, epsilon;    /* adam */
    } optimizer;
    struct {
      char name[32];                   /* constant | step | piecewise | cosine */
      int64_t step_epochs;             /* step: decay every this many epochs */
      int64_t boundaries[8];           /* piecewise: epochs at which to decay, increasing */
      int n_boundaries;
      double gamma;                    /* step: factor per decay */
      double min_learning_rate;        /* cosine: floor */
      int64_t warmup_epochs;           /* linear warm-up before any schedule */
    } schedule;
    char checkpoint[CT_CONFIG_STR];    /* "" disables saving */
    char precision[8];                 /* fp32 | tf32 | bf16: matmul/convolution arithmetic */
    char conv_algorithm[10];           /* auto | direct | winograd: CPU convolutions */
    char log_dir[CT_CONFIG_STR];       /* TensorBoard event files; "" writes none */
    int check_numerics;                /* name the first op that makes a NaN or Inf */
    int64_t log_every_n_steps;         /* steps between TensorBoard's training scalars, >= 1 */
  } train;
  struct {
    int n_towers_listed;
    char towers[CT_CONFIG_MAX_DEVICES][64];
    int64_t n_towers;
    int64_t n_gpus;
    char variable_update[32];          /* replicated | parameter_server | block_momentum */
    char ps_device[64];
    char all_reduce[16];               /* auto | ring | tree | nccl */
    char compression[16];              /* none | bf16 | fp16 | onebit */
    int64_t block_steps;               /* block_momentum: local steps a block (K), >= 1 */
    double block_momentum;             /* block_momentum: eta in [0, 1); -1: 1 - 1/N */
    char split[16];                    /* even | auto */
  } devices;
  struct {
    int log_device_placement;
    int allow_soft_placement;
    int64_t device_count_cpu;          /* >= 1 */
    int64_t device_count_gpu;          /* -1: all */
    int n_cpu_virtual_devices;         /* > 0: the CPU split into this many logical devices */
    int64_t cpu_virtual_devices_mb[CT_CONFIG_MAX_DEVICES]; /* each one's memory limit; 0: none */
    int64_t intra_op_parallelism_threads; /* 0: all cores */
    int64_t inter_op_parallelism_threads;
    int64_t memory_limit_mb_cpu;       /* 0: none */
    int64_t memory_limit_mb_gpu;
    struct {
      int allow_growth;
      double per_process_gpu_memory_fraction; /* (0, 1] */
      char visible_device_list[128];
      int n_virtual_devices;
      int64_t virtual_devices_mb[CT_CONFIG_MAX_DEVICES];
    } gpu_options;
  } session;
  struct {                             /* a job of several processes (mpirun) */
    double stall_timeout_s;            /* a rank stalled this long ends the job; 0: never */
    int64_t check_every;               /* steps between replica-equality checks; 0: never */
    int64_t ps, worker;                /* the cluster spec: ranks 0..ps-1 are /job:ps, the rest
                                          /job:worker; 0 and 0: every rank a worker */
    char updates[8];                   /* "sync" | "async" (with ps tasks) */
    int64_t max_staleness;             /* async: steps a worker may read behind; -1: unbounded */
  } cluster;
} ct_config;

/* Fills every key with its documented default. */
void ct_config_defaults(ct_config *config);

/* Reads a YAML file over the current values. Keys not in the file keep their
 * value. On error returns 1 and fills status (NOT_FOUND for a missing
 * file, INVALID_ARGUMENT for malformed YAML, unknown keys, wrong types or
 * values out of range, each naming file:line); config may then be partly
 * updated and should be discarded. */
int ct_config_load(ct_config *config, const char *path, ct_status *status);

/* Applies "dotted.key=VALUE"; VALUE is parsed as YAML (lists and maps work).
 * On error returns 1 and fills status naming the override. */
int ct_config_apply_override(ct_config *config, const char *assignment, ct_status *status);

/* Checks what no single key can, once the file and every override are
 * applied: model.name names a zoo model unless model.layers or
 * model.library gives the model, and not both of them do. Returns 0, or 1
 * with INVALID_ARGUMENT. (ct_config_load checks its file alone.) */
int ct_config_check(const ct_config *config, ct_status *status);

/* Writes the whole effective config as YAML. */
void ct_config_write(const ct_config *config, FILE *out);

/* Where two layer lists (model.layers) first differ: the entry's place
 * ("model.layers[2]", "model.layers[3].layers[1]" when two blocks differ
 * only in their branch) into where, and each list's version of it as the
 * config writes it (its branch included; "absent" where one list ends
 * first) into a_text and b_text, long ones cut with "...". Returns 1, or 0
 * when the lists are the same. */
int ct_config_layers_difference(const ct_layer_list *a, const ct_layer_list *b, char *where,
                                size_t where_size, char *a_text, char *b_text, size_t text_size);

/* The session options of the `session:` section (and train.precision);
 * in a job of several processes (ct_cluster_size() > 1), this process's
 * task (job "worker", task = its rank) and its share of the machine's
 * cores (its local rank among the local ranks). */
void ct_config_session_options(const ct_config *config, ct_session_options *options);

/* The trainer options of the model, dataset, train and devices.split keys,
 * with ct_config_session_options. */
void ct_config_trainer_options(const ct_config *config, ct_trainer_options *options);

/* The towers the `devices:` section (and cluster.updates and
 * cluster.max_staleness) ask for, which ct_towers_resolve
 * (ctower/towers.h) puts on a session's devices. Cannot fail: the schema
 * has checked every value. */
void ct_config_tower_request(const ct_config *config, ct_tower_request *request);

#ifdef __cplusplus
}
#endif
#endif
