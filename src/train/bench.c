/* `ctower bench`: the median time of a training step. */
#include <stdio.h>
#include <stdlib.h>

#include "train/trainer_internal.h"

static int compare_doubles(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int ct_bench_main(const ct_trainer_options *o, const ct_tower_options *towers, int steps,
                  int warmup, ct_status *status) {
  double *times = calloc((size_t)steps, sizeof *times);
  if (times == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory");
    return 1;
  }
  ct_train_run r;
  int failed = ct_train_run_setup(&r, o, towers, status);
  int64_t epoch = 0, step = 0;
  if (!failed) ct_batcher_start_epoch(r.batcher, epoch);
  while (!failed && step < warmup + steps) {
    int64_t n = ct_train_run_next_batch(&r);
    if (n < o->dataset.batch_size) { /* only full batches are timed */
      ct_batcher_start_epoch(r.batcher, ++epoch);
      continue;
    }
    double loss, accuracy, t0 = ct_trainer_now();
    failed = ct_train_run_step(&r, step, 0.0, &loss, &accuracy, status);
    if (!failed && step >= warmup) times[step - warmup] = ct_trainer_now() - t0;
    ++step;
  }
  if (!failed) {
    qsort(times, (size_t)steps, sizeof *times, compare_doubles);
    double median = times[steps / 2];
    char summary[128];
    printf("%s, batch %lld, %s: %.1f images/sec, %.2f ms/step (median of %d steps after %d "
           "warm-up)\n",
           o->model, (long long)o->dataset.batch_size,
           ct_trainer_tower_summary(&r.towers, summary, sizeof summary),
           (double)o->dataset.batch_size / median, median * 1e3, steps, warmup);
    ct_trainer_print_memory_stats(r.session);
  }
  free(times);
  ct_train_run_free(&r);
  return failed;
}
