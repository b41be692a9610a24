/* TensorBoard event files: a file of TFRecords (src/core/tfrecord.h)
 * holding TensorFlow's Event protos (src/observe/proto), as TensorFlow's
 * summary writers make them, for `tensorboard --logdir DIR`. */
#ifndef CTOWER_OBSERVE_SUMMARY_WRITER_H
#define CTOWER_OBSERVE_SUMMARY_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "ctower/status.h"

typedef struct ct_summary_writer ct_summary_writer;

/* Creates log_dir (and the folders above it that are missing) and a new
 * event file in it, events.out.tfevents.<seconds>.<hostname> (with .1,
 * .2, ... appended when that name is taken), whose first event says its
 * version, "brain.Event:2". Returns the writer (the caller frees it), or
 * NULL and UNAVAILABLE naming the folder, the system's reason and what to
 * do. */
ct_summary_writer *ct_summary_writer_new(const char *log_dir, ct_status *status);
/* Closes the file (what was written stays; ct_summary_writer_flush first to
 * hear of a failure) and frees the writer. NULL does nothing. */
void ct_summary_writer_free(ct_summary_writer *writer);

/* The event file's path. */
const char *ct_summary_writer_path(const ct_summary_writer *writer);

typedef struct ct_summary_scalar {
  const char *tag; /* "train/loss": '/' groups the charts */
  double value;    /* stored as a float, as TensorBoard's simple_value */
} ct_summary_scalar;

/* One event at `step` holding the n scalars. Returns 0, or 1 and
 * UNAVAILABLE naming the file (a full disk). */
int ct_summary_write_scalars(ct_summary_writer *writer, int64_t step,
                             const ct_summary_scalar *scalars, int n, ct_status *status);

/* One event at `step` holding `text` under `tag` for TensorBoard's text
 * plugin (a scalar DT_STRING tensor, shown as Markdown). Returns 0, or 1
 * and UNAVAILABLE naming the file. */
int ct_summary_write_text(ct_summary_writer *writer, int64_t step, const char *tag,
                          const char *text, ct_status *status);

/* One event at `step` holding a serialized Summary (as
 * src/observe/summary_values.h packs them, or TensorFlow's summary ops
 * make them), its values as they are. Returns 0, or 1 and INVALID_ARGUMENT
 * if the bytes are not a Summary, UNAVAILABLE naming the file. */
int ct_summary_write_summary(ct_summary_writer *writer, int64_t step, const uint8_t *bytes,
                             size_t size, ct_status *status);

/* Hands what was written to the system, so that a run killed later keeps
 * it. Returns 0, or 1 and UNAVAILABLE naming the file. */
int ct_summary_writer_flush(ct_summary_writer *writer, ct_status *status);

#endif
