/* The trainer's TensorBoard log: see train_log.h. */
#include "observe/train_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/communication.h"
#include "core/clock.h"
#include "observe/observer.h"

enum { MAX_SCALARS = 6 + CT_MAX_DEVICES, TAG_SIZE = 96 };
static const double k_flush_every_s = 30;

int ct_train_log_open(ct_train_log *log, const char *log_dir, int64_t every, ct_status *status) {
  memset(log, 0, sizeof *log);
  log->every = every;
  if (log_dir[0] == '\0' || ct_cluster_rank() != 0) return 0;
  log->writer = ct_summary_writer_new(log_dir, status);
  log->last_flush = ct_monotonic_seconds();
  return log->writer == NULL;
}

/* text as a Markdown code block: each line indented by four spaces, so
 * that TensorBoard shows it as it is. The caller frees it. */
static char *code_block(const char *text) {
  size_t lines = 1;
  for (const char *p = text; *p; ++p) lines += *p == '\n';
  char *block = malloc(strlen(text) + 4 * lines + 1), *out = block;
  if (block == NULL) return NULL;
  for (const char *p = text; *p;) {
    const size_t len = strcspn(p, "\n");
    memcpy(out, "    ", 4);
    memcpy(out + 4, p, len);
    out += 4 + len;
    p += len;
    if (*p == '\n') *out++ = *p++;
  }
  *out = '\0';
  return block;
}

static int write_text(ct_train_log *log, int64_t step, const char *tag, const char *text,
                      ct_status *status) {
  char *block = code_block(text);
  if (block == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory logging the %s", tag);
    return 1;
  }
  const int failed = ct_summary_write_text(log->writer, step, tag, block, status);
  free(block);
  return failed;
}

int ct_train_log_start(ct_train_log *log, ct_session *session, int64_t step,
                       const char *config_text, const char *placement, ct_status *status) {
  log->session = session;
  if (log->writer == NULL) return 0;
  return (config_text && write_text(log, step, "config", config_text, status)) ||
         (placement && write_text(log, step, "placement", placement, status)) ||
         ct_summary_writer_flush(log->writer, status);
}

void ct_train_log_epoch_start(ct_train_log *log) {
  log->loss_sum = log->accuracy_sum = 0;
  log->examples = 0;
  log->since = ct_monotonic_seconds();
}

/* The window's scalars and every device's peak memory into scalars (tags
 * in tags); returns how many. */
static int train_scalars(ct_train_log *log, double learning_rate, ct_summary_scalar *scalars,
                         char tags[][TAG_SIZE]) {
  const double examples = (double)log->examples, elapsed = ct_monotonic_seconds() - log->since;
  int n = 0;
  scalars[n++] = (ct_summary_scalar){"train/loss", log->loss_sum / examples};
  scalars[n++] = (ct_summary_scalar){"train/accuracy", log->accuracy_sum / examples};
  scalars[n++] = (ct_summary_scalar){"train/learning_rate", learning_rate};
  scalars[n++] =
      (ct_summary_scalar){"train/images_per_sec", examples / (elapsed > 0 ? elapsed : 1e-9)};
  for (int d = 0; d < ct_session_device_count(log->session) && n < MAX_SCALARS - 2; ++d) {
    ct_memory_stats m;
    ct_session_memory_stats(log->session, d, &m);
    if (m.peak_bytes_in_use == 0) continue;
    snprintf(tags[d], TAG_SIZE, "memory/%s/peak_bytes",
             ct_device_short_name(ct_session_device_name(log->session, d)));
    scalars[n++] = (ct_summary_scalar){tags[d], (double)m.peak_bytes_in_use};
  }
  log->loss_sum = log->accuracy_sum = 0;
  log->examples = 0;
  log->since = ct_monotonic_seconds();
  return n;
}

static int maybe_flush(ct_train_log *log, ct_status *status) {
  const double now = ct_monotonic_seconds();
  if (now - log->last_flush < k_flush_every_s) return 0;
  log->last_flush = now;
  return ct_summary_writer_flush(log->writer, status);
}

int ct_train_log_step(ct_train_log *log, int64_t step, int64_t n, double loss, double accuracy,
                      double learning_rate, ct_status *status) {
  if (log->writer == NULL) return 0;
  log->loss_sum += loss * (double)n;
  log->accuracy_sum += accuracy * (double)n;
  log->examples += n;
  if (step % log->every != 0) return 0;
  ct_summary_scalar scalars[MAX_SCALARS];
  char tags[CT_MAX_DEVICES][TAG_SIZE];
  const int count = train_scalars(log, learning_rate, scalars, tags);
  return ct_summary_write_scalars(log->writer, step, scalars, count, status) ||
         maybe_flush(log, status);
}

int ct_train_log_epoch_end(ct_train_log *log, int64_t step, double learning_rate,
                           double test_loss, double test_accuracy, ct_status *status) {
  if (log->writer == NULL) return 0;
  ct_summary_scalar scalars[MAX_SCALARS];
  char tags[CT_MAX_DEVICES][TAG_SIZE];
  const int count = log->examples > 0 ? train_scalars(log, learning_rate, scalars, tags) : 0;
  scalars[count] = (ct_summary_scalar){"test/loss", test_loss};
  scalars[count + 1] = (ct_summary_scalar){"test/accuracy", test_accuracy};
  log->last_flush = ct_monotonic_seconds();
  return ct_summary_write_scalars(log->writer, step, scalars, count + 2, status) ||
         ct_summary_writer_flush(log->writer, status);
}

int ct_train_log_close(ct_train_log *log, ct_status *status) {
  const int failed = log->writer && ct_summary_writer_flush(log->writer, status);
  ct_summary_writer_free(log->writer);
  log->writer = NULL;
  return failed;
}
