/* `ctower bench`: timed training steps, printed as tf_cnn_benchmarks
 * prints them, their median, and where the time went. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cluster/communication.h"
#include "core/clock.h"
#include "core/median.h"
#include "observe/observer.h"
#include "trainer/report.h"
#include "trainer/train_run.h"

enum { DISPLAY_EVERY = 10 };

/* tf_cnn_benchmarks' figures for the first n step times: images/sec from
 * the mean time, the standard error of the per-step rates, and their
 * jitter (1.4826 times the median absolute deviation). */
static void perf_timing(int64_t batch, const double *times, int n, double *mean,
                        double *uncertainty, double *jitter) {
  double total = 0, sum = 0, sum_sq = 0;
  double *speeds = malloc((size_t)n * 2 * sizeof *speeds);
  for (int i = 0; i < n; ++i) {
    const double speed = (double)batch / times[i];
    total += times[i], sum += speed, sum_sq += speed * speed;
    if (speeds) speeds[i] = speed;
  }
  *mean = (double)batch / (total / n);
  const double variance = sum_sq / n - (sum / n) * (sum / n);
  *uncertainty = sqrt(variance > 0 ? variance : 0) / sqrt((double)n);
  *jitter = 0;
  if (speeds) {
    const double middle = ct_median(speeds, n);
    for (int i = 0; i < n; ++i) speeds[n + i] = fabs(speeds[i] - middle);
    *jitter = 1.4826 * ct_median(speeds + n, n);
  }
  free(speeds);
}

/* Times the steps of one run on `towers`; fills times[0..steps) and
 * *global_towers, the job's towers (every rank's). */
static int time_steps(const ct_trainer_options *o, const ct_tower_options *towers,
                      const ct_bench_flags *flags, int report, double *times, int *global_towers,
                      ct_status *status) {
  ct_train_run r;
  int failed = ct_train_run_setup(&r, o, towers, status);
  *global_towers = r.split.global_towers;
  ct_observer *observer = NULL;
  if (!failed && report) {
    observer = ct_train_run_observe(&r, &flags->observe, flags->warmup, status);
    failed = observer == NULL;
  }
  int64_t epoch = 0, step = 0;
  if (!failed) ct_pipeline_start_epoch(r.pipeline, epoch);
  if (!failed && report) printf("Step\tImg/sec\ttotal_loss\n");
  while (!failed && step < flags->warmup + flags->steps) {
    int64_t n = ct_train_run_next_batch(&r, status);
    if (n < 0) {
      failed = 1;
      break;
    }
    if (n < o->dataset.batch_size) { /* only full batches are timed */
      ct_pipeline_start_epoch(r.pipeline, ++epoch);
      continue;
    }
    r.observed.record_timeline = observer && ct_observer_wants(observer, step);
    /* a step's time starts when it waits for its batch: input the
     * pipeline does not hide counts */
    double loss, accuracy, t0 = r.observed.times.input_start;
    failed = ct_train_run_step(&r, step, 0.0, &loss, &accuracy, status);
    const int timed = (int)(step - flags->warmup);
    if (!failed && timed >= 0) times[timed] = ct_monotonic_seconds() - t0;
    if (!failed && observer) ct_observer_add_step(observer, r.session, &r.observed, step);
    if (!failed && report && timed >= 0 && (timed == 0 || (timed + 1) % DISPLAY_EVERY == 0)) {
      double mean, uncertainty, jitter;
      perf_timing(o->dataset.batch_size, times, timed + 1, &mean, &uncertainty, &jitter);
      printf("%d\timages/sec: %.1f +/- %.1f (jitter = %.1f)\t%.3f\n", timed + 1, mean, uncertainty,
             jitter, loss);
    }
    ++step;
  }
  if (!failed && report) {
    double mean, uncertainty, jitter;
    perf_timing(o->dataset.batch_size, times, flags->steps, &mean, &uncertainty, &jitter);
    printf(
        "----------------------------------------------------------------\n"
        "total images/sec: %.2f\n"
        "----------------------------------------------------------------\n",
        mean);
    failed = ct_train_run_finish_observing(&r, observer, status);
    ct_trainer_print_memory_stats(r.session);
  }
  ct_observer_free(observer);
  ct_train_run_free(&r);
  return failed;
}

int ct_bench_main(const ct_trainer_options *o, const ct_tower_options *towers,
                  const ct_bench_flags *flags, ct_status *status) {
  double *times = calloc((size_t)flags->steps, sizeof *times);
  if (times == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory");
    return 1;
  }
  if (flags->compare_single && ct_cluster_ps_tasks() > 0) {
    free(times);
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "--compare-single times rank 0's first tower alone, but under cluster.ps rank 0 "
                  "is a ps task without towers; run it without --compare-single, or compare "
                  "with a job without ps tasks");
    return 1;
  }
  char summary[128];
  int global_towers = 1;
  int failed = time_steps(o, towers, flags, 1, times, &global_towers, status);
  const double step_time = failed ? 0 : ct_median(times, flags->steps);
  if (!failed)
    printf(
        "%s, batch %lld, %s: %.1f images/sec, %.2f ms/step (median of %d steps after %d "
        "warm-up)\n",
        o->model, (long long)o->dataset.batch_size,
        ct_trainer_tower_summary(towers, summary, sizeof summary),
        (double)o->dataset.batch_size / step_time, step_time * 1e3, flags->steps, flags->warmup);
  if (!failed && flags->compare_single && global_towers > 1) {
    /* the same global batch on the first tower's device alone: in a job of
     * several ranks, rank 0's, as a job of its own while the others wait */
    ct_tower_options one = *towers;
    one.n_towers = 1;
    one.across_ranks = 0;
    int alone = 1;
    if (ct_cluster_rank() == 0) failed = time_steps(o, &one, flags, 0, times, &alone, status);
    ct_cluster_progress(-1, -1, "rank 0 timing one tower");
    failed = failed || ct_cluster_barrier(status);
    if (!failed && ct_cluster_rank() == 0) {
      const double single = ct_median(times, flags->steps);
      printf(
          "scaling: %d towers make %.2fx the images/sec of 1 tower (%.1f), an efficiency of "
          "%.0f%%\n",
          global_towers, single / step_time, (double)o->dataset.batch_size / single,
          100 * single / step_time / global_towers);
    }
  }
  free(times);
  return failed;
}
