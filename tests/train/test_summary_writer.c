/* src/observe/summary_writer.c: an event file read back record by record
 * (ct_tfrecord_read checks both CRCs) and unpacked with the protos of
 * src/observe/proto: the file's name, its version event first, scalars,
 * text as TensorBoard's text plugin reads it; a folder it cannot write is a
 * status naming it. tests/cli/tensorboard.sh reads a trained run's files
 * with TensorBoard itself. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/tfrecord.h"
#include "event.pb-c.h"
#include "test_support.h"
#include "observe/summary_writer.h"

/* Every event of the file at path, unpacked (the caller frees them with
 * tensorflow__event__free_unpacked); returns how many, at most max. */
static int read_events(const char *path, Tensorflow__Event **events, int max) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  ct_tfrecord_reader r = {.file = f, .path = path};
  ct_status st = CT_STATUS_INIT;
  int n = 0;
  while (n < max && ct_tfrecord_read(&r, &st) == 0) {
    events[n] = tensorflow__event__unpack(NULL, r.length, r.data);
    assert_non_null(events[n]);
    ++n;
  }
  assert_int_equal(st.code, CT_OUT_OF_RANGE); /* the file ends after its last record */
  ct_tfrecord_reader_free(&r);
  fclose(f);
  return n;
}

static void test_events_read_back(void **state) {
  (void)state;
  char *dir = ct_test_tmpdir();
  char log_dir[512];
  snprintf(log_dir, sizeof log_dir, "%s/runs/a", dir); /* folders made as needed */
  ct_status st = CT_STATUS_INIT;
  ct_summary_writer *w = ct_summary_writer_new(log_dir, &st);
  assert_status_ok(&st);
  char host[256] = "";
  gethostname(host, sizeof host);
  const char *path = ct_summary_writer_path(w);
  char prefix[600];
  snprintf(prefix, sizeof prefix, "%s/events.out.tfevents.", log_dir);
  assert_memory_equal(path, prefix, strlen(prefix));
  const char *seconds = path + strlen(prefix);
  assert_int_equal(strspn(seconds, "0123456789"), 10);
  assert_string_equal(seconds + 10 + 1, host);

  const ct_summary_scalar scalars[] = {
      {"train/loss", 0.25}, {"memory/CPU:0/peak_bytes", 4096}, {"zero", 0}};
  assert_int_equal(ct_summary_write_scalars(w, 7, scalars, 3, &st), 0);
  assert_int_equal(ct_summary_write_text(w, 0, "config", "model:\n  name: mlp\n", &st), 0);
  assert_int_equal(ct_summary_writer_flush(w, &st), 0);
  /* a second writer in the same second gets a file of its own */
  ct_summary_writer *w2 = ct_summary_writer_new(log_dir, &st);
  assert_status_ok(&st);
  assert_string_not_equal(ct_summary_writer_path(w2), path);
  ct_summary_writer_free(w2);

  Tensorflow__Event *events[8];
  assert_int_equal(read_events(path, events, 8), 3);
  assert_int_equal(events[0]->what_case, TENSORFLOW__EVENT__WHAT_FILE_VERSION);
  assert_string_equal(events[0]->file_version, "brain.Event:2");
  assert_true(events[0]->wall_time > 1.6e9); /* seconds since 1970, not a monotonic clock */

  const Tensorflow__Event *e = events[1];
  assert_int_equal(e->step, 7);
  assert_true(e->wall_time >= events[0]->wall_time);
  assert_int_equal(e->what_case, TENSORFLOW__EVENT__WHAT_SUMMARY);
  assert_int_equal(e->summary->n_value, 3);
  for (int i = 0; i < 3; ++i) {
    const Tensorflow__Summary__Value *v = e->summary->value[i];
    assert_string_equal(v->tag, scalars[i].tag);
    /* a zero too is written: simple_value is in a oneof */
    assert_int_equal(v->value_case, TENSORFLOW__SUMMARY__VALUE__VALUE_SIMPLE_VALUE);
    assert_true(v->simple_value == (float)scalars[i].value);
  }

  e = events[2];
  assert_int_equal(e->step, 0);
  assert_int_equal(e->summary->n_value, 1);
  const Tensorflow__Summary__Value *v = e->summary->value[0];
  assert_string_equal(v->tag, "config");
  assert_non_null(v->metadata);
  assert_string_equal(v->metadata->plugin_data->plugin_name, "text");
  assert_int_equal(v->value_case, TENSORFLOW__SUMMARY__VALUE__VALUE_TENSOR);
  assert_int_equal(v->tensor->dtype, 7);               /* DT_STRING */
  assert_int_equal(v->tensor->tensor_shape->n_dim, 0); /* a scalar */
  assert_int_equal(v->tensor->n_string_val, 1);
  const char text[] = "model:\n  name: mlp\n";
  assert_int_equal(v->tensor->string_val[0].len, strlen(text));
  assert_memory_equal(v->tensor->string_val[0].data, text, strlen(text));
  for (int i = 0; i < 3; ++i) tensorflow__event__free_unpacked(events[i], NULL);
  ct_summary_writer_free(w);
  ct_test_remove_dir(dir);
}

static void test_unwritable_folder_is_named(void **state) {
  (void)state;
  char *dir = ct_test_tmpdir();
  char file[512], log_dir[600];
  snprintf(file, sizeof file, "%s/a_file", dir);
  assert_int_equal(ct_test_write_file(file, "x", 1), 0);
  snprintf(log_dir, sizeof log_dir, "%s/logs", file); /* a file in the way */
  ct_status st = CT_STATUS_INIT;
  assert_null(ct_summary_writer_new(log_dir, &st));
  assert_int_equal(st.code, CT_UNAVAILABLE);
  char expected[800];
  snprintf(expected, sizeof expected,
           "cannot write TensorBoard event files in '%s' (creating the folder: Not a directory)",
           log_dir);
  assert_non_null(strstr(st.message, expected));
  assert_non_null(strstr(st.message, "train.log_dir"));
  ct_test_remove_dir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_events_read_back),
      cmocka_unit_test(test_unwritable_folder_is_named),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
