/* What `ctower train` writes for TensorBoard in train.log_dir (rank 0 of a
 * job only; nothing when log_dir is ""):
 *   - at the start, text: "config" (the effective config, as YAML) and
 *     "placement" (the device mapping and each node's device, as the
 *     placement log prints them), each shown as a code block;
 *   - every train.log_every_n_steps steps and at the end of each epoch,
 *     the scalars train/loss, train/accuracy and train/images_per_sec (over
 *     the steps since the previous point of the epoch), train/learning_rate
 *     (the schedule's, of the last step) and memory/<device>/peak_bytes for
 *     every device that held anything ("CPU:0", as "peak memory:" names it);
 *   - at the end of each epoch, test/loss and test/accuracy, at the
 *     epoch's last step;
 * and flushes the file after each epoch and at least every 30 s. Steps
 * count the steps done, as "done: N steps" does. */
#ifndef CTOWER_OBSERVE_TRAIN_LOG_H
#define CTOWER_OBSERVE_TRAIN_LOG_H

#include <stdint.h>

#include "ctower/session.h"
#include "observe/summary_writer.h"

typedef struct ct_train_log {
  ct_summary_writer *writer; /* NULL: nothing is logged */
  ct_session *session;       /* whose devices' memory is logged (ct_train_log_start's) */
  int64_t every;             /* steps between points */
  /* the steps since the last point: their loss and accuracy summed over
   * examples, and when the first of them started */
  double loss_sum, accuracy_sum, since;
  int64_t examples;
  double last_flush;
} ct_train_log;

/* Opens the event file in log_dir (train.log_dir; "": no log) on rank 0
 * (else leaves the log off), a point every `every` steps. Returns 0, or 1
 * and status (UNAVAILABLE naming a folder it cannot write); the log is off
 * then. */
int ct_train_log_open(ct_train_log *log, const char *log_dir, int64_t every, ct_status *status);

/* The text summaries at `step`: config_text and placement (the session's
 * placement log), each NULL for none; the session's devices are logged
 * from now on. Returns 0 or fills status. */
int ct_train_log_start(ct_train_log *log, ct_session *session, int64_t step,
                       const char *config_text, const char *placement, ct_status *status);

/* An epoch starts: its first window of steps starts now. */
void ct_train_log_epoch_start(ct_train_log *log);

/* The step that made `step` steps done, over n examples: adds it to the
 * window and writes the point every `every` steps. Returns 0 or fills
 * status. */
int ct_train_log_step(ct_train_log *log, int64_t step, int64_t n, double loss, double accuracy,
                      double learning_rate, ct_status *status);

/* The epoch ended at `step` and was evaluated: the window's point (when it
 * holds steps) with the test loss and accuracy, then a flush. Returns 0 or
 * fills status. */
int ct_train_log_epoch_end(ct_train_log *log, int64_t step, double learning_rate,
                           double test_loss, double test_accuracy, ct_status *status);

/* Flushes and closes the file; the log is off after. Returns 0, or 1 and
 * status when the flush failed. */
int ct_train_log_close(ct_train_log *log, ct_status *status);

#endif
