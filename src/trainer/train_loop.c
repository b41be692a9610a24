/* `ctower train`: the epoch loop, with resuming, evaluation after each
 * epoch and checkpoints. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include "cluster/communication.h"
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

/* A training run under way: the run, what it logs and reports, and where
 * it stands. */
typedef struct training {
  const ct_trainer_options *o;
  const ct_train_flags *flags;
  ct_train_run r;
  ct_train_log log;
  ct_observer *observer;
  ct_progress prog;
  int64_t global_step, batches;
  int stop, evaluated, interrupted; /* interrupted: the job's signal */
  int64_t stopped_epoch;            /* the epoch an interruption stopped */
  ct_eval_result test;              /* the last evaluation */
} training;

/* An epoch's sums over the steps run: loss and accuracy weighted by
 * examples. */
typedef struct epoch_sums {
  double loss, accuracy;
  int64_t examples;
} epoch_sums;

static int train(const ct_trainer_options *o, const ct_tower_options *towers,
                 const ct_train_flags *flags, ct_status *status);

int ct_train_main(const ct_trainer_options *o, const ct_tower_options *towers,
                  const ct_train_flags *flags, ct_status *status) {
  if (flags->handle_signals) ct_interrupt_install();
  const int failed = train(o, towers, flags, status);
  if (flags->handle_signals) ct_interrupt_restore();
  return failed;
}

/* --resume: where the checkpoint says training stands, into *at (nothing
 * there: a first run; whatever else is there is read, so that a loop of
 * links or a FIFO is an error saying so). Returns 0 or fills status. */
static int resume(training *t, ct_train_position *at, ct_status *status) {
  const char *checkpoint = t->o->train.checkpoint;
  ct_train_run *r = &t->r;
  if (!t->flags->resume || !checkpoint[0] || (access(checkpoint, F_OK) != 0 && errno == ENOENT))
    return 0;
  if (ct_trainer_restore_checkpoint(r->session, &r->tg, t->o, r->train_set, checkpoint, at,
                                    r->strategy, r->strategy_state, status))
    return 1;
  if (at->example >= ct_dataset_size(r->train_set)) {
    ct_status_set(status, CT_DATA_LOSS,
                  "checkpoint '%s' cannot be resumed: its epoch_example %lld is past the end of "
                  "the epoch (the training set has %lld examples); was it written for other "
                  "data?",
                  checkpoint, (long long)at->example, (long long)ct_dataset_size(r->train_set));
    return 1;
  }
  if (at->example > 0)
    printf("resumed from %s: epoch %lld at example %lld, step %lld\n", checkpoint,
           (long long)at->epoch + 1, (long long)at->example, (long long)at->step);
  else
    printf("resumed from %s: epoch %lld done, step %lld\n", checkpoint, (long long)at->epoch,
           (long long)at->step);
  return 0;
}

/* The progress line after a step of an epoch that started at epoch_start
 * with batch first_batch. */
static void show_progress(training *t, int64_t epoch, int64_t batch, int64_t first_batch,
                          const epoch_sums *sums, double epoch_start) {
  const ct_train_run *r = &t->r;
  ct_progress *prog = &t->prog;
  double elapsed = ct_monotonic_seconds() - epoch_start;
  double rate = (double)sums->examples / (elapsed > 0 ? elapsed : 1e-9);
  double eta = elapsed / (double)(batch - first_batch) * (double)(t->batches - batch);
  if (r->towers.n_towers > 1) /* the shard sizes of this step */
    for (int k = 0, used = 0; k < r->towers.n_towers && used < (int)sizeof prog->shards; ++k)
      used += snprintf(prog->shards + used, sizeof prog->shards - (size_t)used, "%s%lld",
                       k ? "+" : "towers ", (long long)r->split.sizes[k]);
  if (!t->flags->quiet)
    ct_progress_update(prog, epoch + 1, t->o->train.epochs, batch, t->batches,
                       sums->loss / (double)sums->examples,
                       sums->accuracy / (double)sums->examples, rate, eta);
}

/* The steps of `epoch` from *batch on, until it ends, max_steps or a
 * signal stops it; *batch and *sums follow. Returns 0 or fills status. */
static int run_steps(training *t, int64_t epoch, int64_t *batch, epoch_sums *sums,
                     double epoch_start, ct_status *status) {
  const ct_trainer_options *o = t->o;
  ct_train_run *r = &t->r;
  const int64_t first_batch = *batch;
  int64_t n;
  while ((n = ct_train_run_next_batch(r, status)) > 0) {
    double loss, accuracy;
    r->observed.record_timeline = ct_observer_wants(t->observer, t->global_step);
    if (ct_train_run_step(r, t->global_step,
                          (double)epoch + (double)*batch / (double)t->batches, &loss, &accuracy,
                          status))
      return 1;
    ct_observer_add_step(t->observer, r->session, &r->observed, t->global_step);
    ++t->global_step, ++*batch;
    if (o->train.check_every > 0 && t->global_step % o->train.check_every == 0 &&
        ct_train_run_check_replicas(r, t->global_step, status))
      return 1;
    sums->loss += loss * (double)n;
    sums->accuracy += accuracy * (double)n;
    sums->examples += n;
    if (ct_train_log_step(&t->log, t->global_step, n, loss, accuracy, r->learning_rate, status))
      return 1;
    show_progress(t, epoch, *batch, first_batch, sums, epoch_start);
    if (r->interrupted) {
      t->stop = 1, t->interrupted = r->interrupted;
      return 0;
    }
    if (o->train.max_steps > 0 && t->global_step >= o->train.max_steps) {
      t->stop = 1;
      return 0;
    }
  }
  return n < 0; /* an example could not be read */
}

/* After an epoch's steps: its evaluation, line, callback, checkpoint and
 * log. Returns 0 or fills status. */
static int evaluated_epoch(training *t, int64_t epoch, const epoch_sums *sums, double epoch_time,
                           ct_status *status) {
  const ct_trainer_options *o = t->o;
  ct_train_run *r = &t->r;
  if (ct_trainer_evaluate(r->session, &r->tg, o, r->test_set, &t->test, status)) return 1;
  if (!isfinite(t->test.loss)) { /* the last step's update made the weights so */
    ct_status_set(status, CT_FAILED_PRECONDITION,
                  "the test loss became %g after step %lld: the weights are no longer finite; "
                  "lower train.optimizer.learning_rate (now %g), or set train.check_numerics: "
                  "true to name the op that made it",
                  t->test.loss, (long long)t->global_step, o->train.schedule.base_rate);
    return 1;
  }
  t->evaluated = 1;
  const double seen = (double)(sums->examples ? sums->examples : 1);
  const double rate = (double)sums->examples / (epoch_time > 0 ? epoch_time : 1e-9);
  if (t->prog.tty) printf("\r\033[K");
  printf(
      "epoch %lld/%lld: train loss %.4f acc %.4f | test loss %.4f acc %.4f | %.1f s, %.0f "
      "img/s\n",
      (long long)epoch + 1, (long long)o->train.epochs, sums->loss / seen, sums->accuracy / seen,
      t->test.loss, t->test.accuracy, epoch_time, rate);
  fflush(stdout);
  if (t->flags->on_epoch) {
    const ct_epoch_result result = {epoch + 1,         o->train.epochs,      t->global_step,
                                    sums->loss / seen, sums->accuracy / seen, t->test.loss,
                                    t->test.accuracy,  epoch_time,           rate};
    t->flags->on_epoch(t->flags->on_epoch_user, &result);
  }
  /* stopped by max_steps inside the epoch: the checkpoint says where */
  if (o->train.checkpoint[0] &&
      save_position(r, epoch, t->global_step, t->stop, t->test.accuracy, status))
    return 1;
  return ct_train_log_epoch_end(&t->log, t->global_step, r->learning_rate, t->test.loss,
                                t->test.accuracy, status);
}

/* One epoch from `first_example` on: its steps, what the strategy does at
 * its end, then its evaluation, or at once the checkpoint when a signal
 * stopped it. Returns 0 or fills status. */
static int run_epoch(training *t, int64_t epoch, int64_t first_example, ct_status *status) {
  ct_train_run *r = &t->r;
  ct_pipeline_start_epoch(r->pipeline, epoch);
  int64_t batch = 0;
  if (first_example > 0) { /* a checkpoint from inside this epoch */
    ct_pipeline_seek(r->pipeline, first_example);
    batch = first_example / t->o->dataset.batch_size;
  }
  const double epoch_start = ct_monotonic_seconds();
  ct_train_log_epoch_start(&t->log);
  epoch_sums sums = {0, 0, 0};
  if (run_steps(t, epoch, &batch, &sums, epoch_start, status)) return 1;
  /* what the strategy does at the end of an epoch (with ps tasks: every
   * variable from the task that holds it) */
  if (ct_train_run_end_epoch(r, batch >= t->batches, status)) return 1;
  if (r->interrupted) t->stop = 1, t->interrupted = r->interrupted; /* async: during the epoch */
  if (t->interrupted) { /* at once, without evaluating */
    t->stopped_epoch = epoch;
    const int failed = t->o->train.checkpoint[0] &&
                       save_position(r, epoch, t->global_step, 1, t->test.accuracy, status);
    if (t->prog.tty) printf("\r\033[K");
    return failed;
  }
  return evaluated_epoch(t, epoch, &sums, ct_monotonic_seconds() - epoch_start, status);
}

/* CANCELLED: training stopped by the job's signal, and where its work is;
 * `complete`: the signal came after the last step, and the run finished
 * (its evaluation, checkpoint and report) before it stopped. */
static void set_stopped(training *t, int complete, ct_status *status) {
  const char *checkpoint = t->o->train.checkpoint;
  ct_interrupt_stopped_by(t->interrupted); /* every rank exits with the job's signal */
  const int sig = ct_interrupt_requested();
  char where[CT_STATUS_MESSAGE_MAX] = "nothing was saved (train.checkpoint is empty)";
  if (complete)
    snprintf(where, sizeof where,
             "it was the last: training was complete, and so are its evaluation and %s%s",
             checkpoint[0] ? "checkpoint " : "report (train.checkpoint is empty)", checkpoint);
  else if (checkpoint[0])
    snprintf(where, sizeof where,
             "checkpoint %s holds it (epoch %lld at example %lld); train again with --resume "
             "to go on",
             checkpoint, (long long)t->stopped_epoch + 1,
             (long long)ct_pipeline_position(t->r.pipeline));
  ct_status_set(status, CT_CANCELLED, "stopped by %s after step %lld; %s",
                sig == SIGTERM  ? "SIGTERM"
                : sig == SIGINT ? "SIGINT"
                                : "another rank's signal",
                (long long)t->global_step, where);
}

/* The end of a run that trained: its last lines and reports. Returns 0 or
 * fills status. */
static int finish(training *t, double start, ct_status *status) {
  const char *checkpoint = t->o->train.checkpoint;
  ct_train_run *r = &t->r;
  /* nothing left to train (a resumed run that was done): the accuracy shown
   * is still the model's */
  if (!t->evaluated && ct_trainer_evaluate(r->session, &r->tg, t->o, r->test_set, &t->test, status))
    return 1;
  printf("done: %lld steps in %.1f s; test accuracy %.4f", (long long)t->global_step,
         ct_monotonic_seconds() - start, t->test.accuracy);
  if (checkpoint[0]) printf("; checkpoint %s", checkpoint);
  printf("\n");
  const int failed =
      ct_train_run_report(r, status) || ct_train_run_finish_observing(r, t->observer, status);
  ct_trainer_print_peak_memory(r->session);
  if (t->flags->memory_stats) ct_trainer_print_memory_stats(r->session);
  return failed;
}

/* The epochs, from where the checkpoint says with --resume. Returns 0 or
 * fills status. */
static int run_epochs(training *t, double start, ct_status *status) {
  const ct_trainer_options *o = t->o;
  ct_train_position at = {0, 0, 0};
  int failed = resume(t, &at, status);
  t->global_step = at.step;
  /* every rank starts from the same variables (the same seed, or the same
   * checkpoint) */
  failed = failed || ct_train_run_check_replicas(&t->r, t->global_step, status) ||
           ct_train_log_start(&t->log, t->r.session, t->global_step, t->flags->config_text,
                              t->r.placement.text, status);
  if (o->train.max_steps > 0 && t->global_step >= o->train.max_steps) t->stop = 1; /* done */
  if (t->flags->handle_signals) ct_interrupt_training_started();
  for (int64_t epoch = at.epoch; epoch < o->train.epochs && !failed && !t->stop; ++epoch)
    failed = run_epoch(t, epoch, epoch == at.epoch ? at.example : 0, status);
  failed = ct_train_log_close(&t->log, failed ? NULL : status) || failed;
  if (!failed && t->interrupted) {
    set_stopped(t, 0, status);
    return 1;
  }
  if (failed || finish(t, start, status)) return 1;
  /* a signal after the last step (during the last evaluation, checkpoint
   * or report) let them finish, as its message said: the run stopped for
   * it all the same, and exits with its status */
  if (t->flags->handle_signals && ct_interrupt_requested()) {
    t->interrupted = ct_interrupt_requested();
    set_stopped(t, 1, status);
    return 1;
  }
  return 0;
}

static int train(const ct_trainer_options *o, const ct_tower_options *towers,
                 const ct_train_flags *flags, ct_status *status) {
  training t = {.o = o, .flags = flags};
  /* before anything else, so that an unwritable log_dir or a checkpoint
   * another run writes stops the run early */
  if (ct_train_log_open(&t.log, o->train.log_dir, o->train.log_every_n_steps, status)) return 1;
  ct_checkpoint_lock *lock;
  if (lock_checkpoint(o->train.checkpoint, &lock, status)) {
    ct_train_log_close(&t.log, NULL);
    return 1;
  }
  if (ct_train_run_setup(&t.r, o, towers, status) ||
      (t.observer = ct_train_run_observe(&t.r, &flags->observe, FIRST_OBSERVED_STEP, status)) ==
          NULL) {
    ct_train_run_free(&t.r);
    ct_train_log_close(&t.log, NULL);
    ct_checkpoint_lock_release(lock);
    return 1;
  }
  t.batches = ct_pipeline_batches_per_epoch(t.r.pipeline);
  t.prog = (ct_progress){isatty(STDOUT_FILENO) && !flags->quiet, 0, ""};
  ct_trainer_print_banner(&t.r);
  const int failed = run_epochs(&t, ct_monotonic_seconds(), status);
  ct_observer_free(t.observer);
  ct_train_run_free(&t.r);
  ct_checkpoint_lock_release(lock);
  return failed;
}
