/* `ctower train`: the epoch loop, with resuming, evaluation after each
 * epoch and checkpoints. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include "cluster/cluster.h"
#include "core/clock.h"
#include "ctower/checkpoint.h"
#include "observe/observer.h"
#include "observe/train_log.h"
#include "trainer/evaluate.h"
#include "trainer/interrupt.h"
#include "trainer/report.h"
#include "trainer/train_run.h"
#include "trainer/trainer_checkpoint.h"

/* The first step whose timeline is sampled (every tenth from it) and, by
 * default, traced (it and the next two): the first steps warm up caches
 * and allocators. */
enum { FIRST_OBSERVED_STEP = 5 };

/* The checkpoint's lock, on the rank that writes it (NULL elsewhere, and
 * without a checkpoint). Returns 0 or fills status. */
static int lock_checkpoint(const char *checkpoint, ct_checkpoint_lock **lock, ct_status *status) {
  *lock = NULL;
  if (checkpoint[0] == '\0' || ct_cluster_rank() != 0) return 0;
  int removed = 0;
  if ((*lock = ct_checkpoint_lock_acquire(checkpoint, &removed, status)) == NULL) return 1;
  if (removed)
    printf("removed %d temporary file%s left beside %s by a write that was interrupted\n", removed,
           removed == 1 ? "" : "s", checkpoint);
  return 0;
}

/* Saves where training stands after global_step steps, in `epoch`:
 * inside it (the next example's index) when it stopped early, else at its
 * end. */
static int save_position(ct_train_run *r, int64_t epoch, int64_t global_step, int stopped_early,
                         double test_accuracy, ct_status *status) {
  const int64_t position = ct_pipeline_position(r->pipeline);
  const int inside = stopped_early && position < ct_dataset_size(r->train_set);
  const ct_train_position now = {global_step, inside ? epoch : epoch + 1, inside ? position : 0};
  return ct_trainer_save_checkpoint(r->session, &r->tg, r->options, r->train_set, &now,
                                    test_accuracy, r->strategy, r->strategy_state, status);
}

static int train(const ct_trainer_options *o, const ct_tower_options *towers,
                 const ct_train_flags *flags, ct_status *status);

int ct_train_main(const ct_trainer_options *o, const ct_tower_options *towers,
                  const ct_train_flags *flags, ct_status *status) {
  if (flags->handle_signals) ct_interrupt_install();
  const int failed = train(o, towers, flags, status);
  if (flags->handle_signals) ct_interrupt_restore();
  return failed;
}

static int train(const ct_trainer_options *o, const ct_tower_options *towers,
                 const ct_train_flags *flags, ct_status *status) {
  /* before anything else, so that an unwritable log_dir or a checkpoint
   * another run writes stops the run early */
  ct_train_log log;
  if (ct_train_log_open(&log, o->train.log_dir, o->train.log_every_n_steps, status)) return 1;
  ct_checkpoint_lock *lock;
  if (lock_checkpoint(o->train.checkpoint, &lock, status)) {
    ct_train_log_close(&log, NULL);
    return 1;
  }
  ct_train_run r;
  ct_observer *observer = NULL;
  if (ct_train_run_setup(&r, o, towers, status) ||
      (observer = ct_train_run_observe(&r, &flags->observe, FIRST_OBSERVED_STEP, status)) == NULL) {
    ct_train_run_free(&r);
    ct_train_log_close(&log, NULL);
    ct_checkpoint_lock_release(lock);
    return 1;
  }
  const int64_t batches = ct_pipeline_batches_per_epoch(r.pipeline);
  const int64_t epochs = o->train.epochs;
  const char *checkpoint = o->train.checkpoint;
  ct_progress prog = {isatty(STDOUT_FILENO) && !flags->quiet, 0, ""};
  ct_trainer_print_banner(&r);
  const double start = ct_monotonic_seconds();
  ct_train_position at = {0, 0, 0};
  int failed = 0, stop = 0, evaluated = 0, interrupted = 0;
  int64_t stopped_epoch = 0;
  /* nothing there: a first run; whatever else is there is read, so that a
   * loop of links or a FIFO is an error saying so */
  if (flags->resume && checkpoint[0] && (access(checkpoint, F_OK) == 0 || errno != ENOENT)) {
    failed =
        ct_trainer_restore_checkpoint(r.session, &r.tg, o, r.train_set, checkpoint, &at,
                                      r.strategy, r.strategy_state, status);
    if (!failed && at.example >= ct_dataset_size(r.train_set)) {
      ct_status_set(status, CT_DATA_LOSS,
                    "checkpoint '%s' cannot be resumed: its epoch_example %lld is past the end of "
                    "the epoch (the training set has %lld examples); was it written for other "
                    "data?",
                    checkpoint, (long long)at.example, (long long)ct_dataset_size(r.train_set));
      failed = 1;
    }
    if (!failed && at.example > 0)
      printf("resumed from %s: epoch %lld at example %lld, step %lld\n", checkpoint,
             (long long)at.epoch + 1, (long long)at.example, (long long)at.step);
    else if (!failed)
      printf("resumed from %s: epoch %lld done, step %lld\n", checkpoint, (long long)at.epoch,
             (long long)at.step);
  }
  int64_t global_step = at.step;
  /* every rank starts from the same variables (the same seed, or the same
   * checkpoint) */
  failed = failed || ct_train_run_check_replicas(&r, global_step, status) ||
           ct_train_log_start(&log, r.session, global_step, flags->config_text, r.placement.text,
                              status);
  if (o->train.max_steps > 0 && global_step >= o->train.max_steps) stop = 1; /* resumed, done */
  if (flags->handle_signals) ct_interrupt_training_started();
  ct_eval_result test = {0, 0};
  for (int64_t epoch = at.epoch; epoch < epochs && !failed && !stop; ++epoch) {
    ct_pipeline_start_epoch(r.pipeline, epoch);
    int64_t batch = 0;
    if (epoch == at.epoch && at.example > 0) { /* a checkpoint from inside this epoch */
      ct_pipeline_seek(r.pipeline, at.example);
      batch = at.example / o->dataset.batch_size;
    }
    const double epoch_start = ct_monotonic_seconds();
    ct_train_log_epoch_start(&log);
    double loss_sum = 0, accuracy_sum = 0;
    int64_t examples = 0, first_batch = batch, n = 0;
    while (!failed && (n = ct_train_run_next_batch(&r, status)) > 0) {
      double loss, accuracy;
      r.observed.record_timeline = ct_observer_wants(observer, global_step);
      failed = ct_train_run_step(&r, global_step, (double)epoch + (double)batch / (double)batches,
                                 &loss, &accuracy, status);
      if (failed) break;
      ct_observer_add_step(observer, r.session, &r.observed, global_step);
      ++global_step, ++batch;
      if (o->train.check_every > 0 && global_step % o->train.check_every == 0 &&
          ct_train_run_check_replicas(&r, global_step, status)) {
        failed = 1;
        break;
      }
      loss_sum += loss * (double)n;
      accuracy_sum += accuracy * (double)n;
      examples += n;
      if (ct_train_log_step(&log, global_step, n, loss, accuracy, r.learning_rate, status)) {
        failed = 1;
        break;
      }
      double elapsed = ct_monotonic_seconds() - epoch_start;
      double rate = (double)examples / (elapsed > 0 ? elapsed : 1e-9);
      double eta = elapsed / (double)(batch - first_batch) * (double)(batches - batch);
      if (r.towers.n_towers > 1) /* the shard sizes of this step */
        for (int k = 0, used = 0; k < r.towers.n_towers && used < (int)sizeof prog.shards; ++k)
          used += snprintf(prog.shards + used, sizeof prog.shards - (size_t)used, "%s%lld",
                           k ? "+" : "towers ", (long long)r.split.sizes[k]);
      if (!flags->quiet)
        ct_progress_update(&prog, epoch + 1, epochs, batch, batches, loss_sum / (double)examples,
                           accuracy_sum / (double)examples, rate, eta);
      if (r.interrupted) {
        stop = 1, interrupted = r.interrupted;
        break;
      }
      if (o->train.max_steps > 0 && global_step >= o->train.max_steps) {
        stop = 1;
        break;
      }
    }
    if (n < 0) failed = 1; /* an example could not be read */
    if (failed) break;
    /* what the strategy does at the end of an epoch (with ps tasks: every
     * variable from the task that holds it) */
    if (ct_train_run_end_epoch(&r, batch >= batches, status)) {
      failed = 1;
      break;
    }
    if (r.interrupted) stop = 1, interrupted = r.interrupted; /* async: during the epoch */
    if (interrupted) { /* at once, without evaluating */
      stopped_epoch = epoch;
      if (checkpoint[0]) failed = save_position(&r, epoch, global_step, 1, test.accuracy, status);
      if (prog.tty) printf("\r\033[K");
      break;
    }
    double epoch_time = ct_monotonic_seconds() - epoch_start;
    failed = ct_trainer_evaluate(r.session, &r.tg, o, r.test_set, &test, status);
    if (!failed && !isfinite(test.loss)) { /* the last step's update made the weights so */
      ct_status_set(status, CT_FAILED_PRECONDITION,
                    "the test loss became %g after step %lld: the weights are no longer finite; "
                    "lower train.optimizer.learning_rate (now %g), or set train.check_numerics: "
                    "true to name the op that made it",
                    test.loss, (long long)global_step, o->train.schedule.base_rate);
      failed = 1;
    }
    if (failed) break;
    evaluated = 1;
    if (prog.tty) printf("\r\033[K");
    printf(
        "epoch %lld/%lld: train loss %.4f acc %.4f | test loss %.4f acc %.4f | %.1f s, %.0f "
        "img/s\n",
        (long long)epoch + 1, (long long)epochs, loss_sum / (double)(examples ? examples : 1),
        accuracy_sum / (double)(examples ? examples : 1), test.loss, test.accuracy, epoch_time,
        (double)examples / (epoch_time > 0 ? epoch_time : 1e-9));
    fflush(stdout);
    if (flags->on_epoch) {
      const double n_seen = (double)(examples ? examples : 1);
      const ct_epoch_result result = {
          epoch + 1, epochs, global_step, loss_sum / n_seen, accuracy_sum / n_seen, test.loss,
          test.accuracy, epoch_time, (double)examples / (epoch_time > 0 ? epoch_time : 1e-9)};
      flags->on_epoch(flags->on_epoch_user, &result);
    }
    /* stopped by max_steps inside the epoch: the checkpoint says where */
    if (checkpoint[0]) failed = save_position(&r, epoch, global_step, stop, test.accuracy, status);
    failed = failed || ct_train_log_epoch_end(&log, global_step, r.learning_rate, test.loss,
                                                test.accuracy, status);
  }
  failed = ct_train_log_close(&log, failed ? NULL : status) || failed;
  if (!failed && interrupted) {
    ct_interrupt_stopped_by(interrupted); /* every rank exits with the job's signal */
    const int sig = ct_interrupt_requested();
    char where[CT_STATUS_MESSAGE_MAX] = "nothing was saved (train.checkpoint is empty)";
    if (checkpoint[0])
      snprintf(where, sizeof where,
               "checkpoint %s holds it (epoch %lld at example %lld); train again with --resume "
               "to go on",
               checkpoint, (long long)stopped_epoch + 1, (long long)ct_pipeline_position(r.pipeline));
    ct_status_set(status, CT_CANCELLED, "stopped by %s after step %lld; %s",
                  sig == SIGTERM  ? "SIGTERM"
                  : sig == SIGINT ? "SIGINT"
                                  : "another rank's signal",
                  (long long)global_step, where);
    failed = 1;
  }
  /* nothing left to train (a resumed run that was done): the accuracy shown
   * is still the model's */
  if (!failed && !evaluated)
    failed = ct_trainer_evaluate(r.session, &r.tg, o, r.test_set, &test, status);
  if (!failed) {
    printf("done: %lld steps in %.1f s; test accuracy %.4f", (long long)global_step,
           ct_monotonic_seconds() - start, test.accuracy);
    if (checkpoint[0]) printf("; checkpoint %s", checkpoint);
    printf("\n");
    failed = ct_train_run_report(&r, status) || ct_train_run_finish_observing(&r, observer, status);
    ct_trainer_print_peak_memory(r.session);
    if (flags->memory_stats) ct_trainer_print_memory_stats(r.session);
  }
  ct_observer_free(observer);
  ct_train_run_free(&r);
  ct_checkpoint_lock_release(lock);
  return failed;
}
