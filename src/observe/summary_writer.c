/* TensorBoard event files: each event is packed by protobuf-c (the code
 * protoc-c made from src/observe/proto) and framed as a TFRecord. */
#include "observe/summary_writer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/files.h"
#include "core/tfrecord.h"
#include "event.pb-c.h"

struct ct_summary_writer {
  FILE *file;
  char *path;
  uint8_t *buffer; /* the packed event */
  size_t capacity;
};

static double wall_time(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void cannot_write(const char *log_dir, const char *doing, ct_status *status) {
  ct_status_set(status, CT_UNAVAILABLE,
                "cannot write TensorBoard event files in '%s' (%s: %s); make it a folder you "
                "can write, or set train.log_dir to another one (\"\" writes none)",
                log_dir, doing, strerror(errno));
}

/* Packs the event and writes it as one record. */
static int write_event(ct_summary_writer *w, Tensorflow__Event *event, ct_status *status) {
  const size_t size = tensorflow__event__get_packed_size(event);
  if (size > w->capacity) {
    uint8_t *buffer = realloc(w->buffer, size);
    if (buffer == NULL) {
      ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory writing '%s'", w->path);
      return 1;
    }
    w->buffer = buffer;
    w->capacity = size;
  }
  const size_t packed = tensorflow__event__pack(event, w->buffer);
  return ct_tfrecord_write(w->file, w->path, w->buffer, packed, status);
}

/* events.out.tfevents.<seconds>.<hostname>[.k]: a new file in log_dir. */
static FILE *create_event_file(const char *log_dir, char **path) {
  char host[256] = "localhost";
  if (gethostname(host, sizeof host) != 0 || host[0] == '\0')
    snprintf(host, sizeof host, "localhost");
  host[sizeof host - 1] = '\0';
  const long long seconds = (long long)time(NULL);
  for (int k = 0; k < 1000; ++k) {
    char suffix[16] = "";
    if (k) snprintf(suffix, sizeof suffix, ".%d", k);
    const size_t size = strlen(log_dir) + strlen(host) + 64;
    *path = malloc(size);
    if (*path == NULL) return NULL;
    snprintf(*path, size, "%s/events.out.tfevents.%010lld.%s%s", log_dir, seconds, host, suffix);
    FILE *file = ct_file_create_new(*path); /* never through a link or into a FIFO */
    if (file || errno != EEXIST) return file;
    free(*path);
    *path = NULL;
  }
  return NULL;
}

ct_summary_writer *ct_summary_writer_new(const char *log_dir, ct_status *status) {
  struct stat st;
  if (stat(log_dir, &st) == 0 && !S_ISDIR(st.st_mode)) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "cannot write TensorBoard event files in '%s': it is %s, not a folder; set "
                  "train.log_dir to a folder (\"\" writes none)",
                  log_dir, ct_file_kind(st.st_mode));
    return NULL;
  }
  if (ct_make_dirs(log_dir) != 0) {
    cannot_write(log_dir, "creating the folder", status);
    return NULL;
  }
  ct_summary_writer *w = calloc(1, sizeof *w);
  if (w == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory opening '%s'", log_dir);
    return NULL;
  }
  w->file = create_event_file(log_dir, &w->path);
  if (w->file == NULL) {
    cannot_write(log_dir, "creating an event file", status);
    ct_summary_writer_free(w);
    return NULL;
  }
  Tensorflow__Event event = TENSORFLOW__EVENT__INIT;
  event.wall_time = wall_time();
  event.what_case = TENSORFLOW__EVENT__WHAT_FILE_VERSION;
  event.file_version = "brain.Event:2";
  if (write_event(w, &event, status) || ct_summary_writer_flush(w, status)) {
    ct_summary_writer_free(w);
    return NULL;
  }
  return w;
}

void ct_summary_writer_free(ct_summary_writer *w) {
  if (w == NULL) return;
  if (w->file) fclose(w->file);
  free(w->path);
  free(w->buffer);
  free(w);
}

const char *ct_summary_writer_path(const ct_summary_writer *w) { return w->path; }

/* An event at step holding the summary of n values. */
static int write_summary(ct_summary_writer *w, int64_t step, Tensorflow__Summary__Value **values,
                         int n, ct_status *status) {
  Tensorflow__Summary summary = TENSORFLOW__SUMMARY__INIT;
  summary.n_value = (size_t)n;
  summary.value = values;
  Tensorflow__Event event = TENSORFLOW__EVENT__INIT;
  event.wall_time = wall_time();
  event.step = step;
  event.what_case = TENSORFLOW__EVENT__WHAT_SUMMARY;
  event.summary = &summary;
  return write_event(w, &event, status);
}

int ct_summary_write_scalars(ct_summary_writer *w, int64_t step, const ct_summary_scalar *scalars,
                             int n, ct_status *status) {
  Tensorflow__Summary__Value *values = calloc((size_t)n + 1, sizeof *values);
  Tensorflow__Summary__Value **pointers = calloc((size_t)n + 1, sizeof *pointers);
  int failed = values == NULL || pointers == NULL;
  if (failed)
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory writing '%s'", w->path);
  for (int i = 0; i < n && !failed; ++i) {
    tensorflow__summary__value__init(&values[i]);
    values[i].tag = (char *)scalars[i].tag;
    values[i].value_case = TENSORFLOW__SUMMARY__VALUE__VALUE_SIMPLE_VALUE;
    values[i].simple_value = (float)scalars[i].value;
    pointers[i] = &values[i];
  }
  failed = failed || write_summary(w, step, pointers, n, status);
  free(pointers);
  free(values);
  return failed;
}

int ct_summary_write_text(ct_summary_writer *w, int64_t step, const char *tag, const char *text,
                          ct_status *status) {
  /* as tf.summary.text writes it: a scalar string tensor for the plugin
   * "text", whose content (an empty TextPluginData) is empty */
  ProtobufCBinaryData bytes = {strlen(text), (uint8_t *)text};
  Tensorflow__TensorShapeProto scalar = TENSORFLOW__TENSOR_SHAPE_PROTO__INIT;
  Tensorflow__TensorProto tensor = TENSORFLOW__TENSOR_PROTO__INIT;
  tensor.dtype = TENSORFLOW__DATA_TYPE__DT_STRING;
  tensor.tensor_shape = &scalar;
  tensor.n_string_val = 1;
  tensor.string_val = &bytes;
  Tensorflow__SummaryMetadata__PluginData plugin = TENSORFLOW__SUMMARY_METADATA__PLUGIN_DATA__INIT;
  plugin.plugin_name = "text";
  Tensorflow__SummaryMetadata metadata = TENSORFLOW__SUMMARY_METADATA__INIT;
  metadata.plugin_data = &plugin;
  Tensorflow__Summary__Value value = TENSORFLOW__SUMMARY__VALUE__INIT;
  value.tag = (char *)tag;
  value.metadata = &metadata;
  value.value_case = TENSORFLOW__SUMMARY__VALUE__VALUE_TENSOR;
  value.tensor = &tensor;
  Tensorflow__Summary__Value *values[] = {&value};
  return write_summary(w, step, values, 1, status);
}

int ct_summary_write_summary(ct_summary_writer *w, int64_t step, const uint8_t *bytes, size_t size,
                             ct_status *status) {
  Tensorflow__Summary *summary = tensorflow__summary__unpack(NULL, size, bytes);
  if (summary == NULL) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "the %zu bytes given for '%s' are not a serialized Summary; give what a "
                  "summary op's run returned",
                  size, w->path);
    return 1;
  }
  const int failed = write_summary(w, step, summary->value, (int)summary->n_value, status);
  tensorflow__summary__free_unpacked(summary, NULL);
  return failed;
}

int ct_summary_writer_flush(ct_summary_writer *w, ct_status *status) {
  if (fflush(w->file) == 0) return 0;
  ct_status_set(status, CT_UNAVAILABLE, "cannot write to '%s' (%s); check that the disk has space",
                w->path, strerror(errno));
  return 1;
}
