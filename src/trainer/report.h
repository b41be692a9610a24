/* What training prints (report.c). */
#ifndef CTOWER_TRAINER_REPORT_H
#define CTOWER_TRAINER_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "ctower/session.h"
#include "ctower/towers.h"
#include "trainer/train_run.h"

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


/* The peak memory of every device that held anything. */
void ct_trainer_print_peak_memory(ct_session *session);
/* --memory-stats: every device's allocator, exactly. */
void ct_trainer_print_memory_stats(ct_session *session);

#endif
