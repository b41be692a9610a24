/* ctower trainer: what `ctower train` and `ctower eval` run. */
#ifndef CTOWER_TRAINER_H
#define CTOWER_TRAINER_H

#include "ctower/config.h"
#include "ctower/session.h"
#include "ctower/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_train_flags {
  int memory_stats;      /* --memory-stats: print per-device allocator stats */
  int quiet;             /* --quiet: no progress bar, only epoch lines */
  int resume;            /* --resume: continue from train.checkpoint when it exists */
} ct_train_flags;

/* The session options the config's `session:` section asks for. */
void ct_session_options_from_config(const ct_config *config, ct_session_options *options);

/* Trains the model the config describes, printing progress to stdout and
 * writing the checkpoint after each epoch. Returns 0 or fills status. */
int ct_train_main(const ct_config *config, const ct_train_flags *flags, ct_status *status);

/* `ctower bench`: trains `warmup` untimed then `steps` timed steps of the
 * config's model on its devices and prints the median images/sec. Saves
 * nothing. Returns 0 or fills status. */
int ct_bench_main(const ct_config *config, int steps, int warmup, ct_status *status);

/* Restores the checkpoint (the config's, or checkpoint_path when not NULL),
 * prints test accuracy and loss. Returns 0 or fills status. */
int ct_eval_main(const ct_config *config, const char *checkpoint_path, ct_status *status);

#ifdef __cplusplus
}
#endif
#endif
