#include "test_support.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *ct_test_tmpdir(void) {
  char template_path[] = "/tmp/ctower_test_XXXXXX";
  char *dir = mkdtemp(template_path);
  return dir ? strdup(dir) : NULL;
}

void ct_test_remove_dir(char *dir) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
  free(dir);
}

void ct_test_descriptors_use_up(ct_test_descriptors *d) {
  assert_int_equal(getrlimit(RLIMIT_NOFILE, &d->old), 0);
  struct rlimit few = d->old;
  few.rlim_cur = 64;
  assert_int_equal(setrlimit(RLIMIT_NOFILE, &few), 0);
  d->n = 0;
  while (d->n < 64 && (d->fds[d->n] = dup(0)) >= 0) ++d->n;
  assert_int_equal(errno, EMFILE);
}

void ct_test_descriptors_free(ct_test_descriptors *d) {
  while (d->n > 0) close(d->fds[--d->n]);
  assert_int_equal(setrlimit(RLIMIT_NOFILE, &d->old), 0);
}

int ct_test_write_file(const char *path, const void *data, size_t size) {
  FILE *f = fopen(path, "wb");
  if (f == NULL) return -1;
  size_t written = fwrite(data, 1, size, f);
  return fclose(f) == 0 && written == size ? 0 : -1;
}

void ct_test_fill_uniform(float *out, int64_t n, uint64_t seed, float lo, float hi) {
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int64_t i = 0; i < n; ++i) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    out[i] = lo + (hi - lo) * (float)((state >> 40) * (1.0 / 16777216.0));
  }
}

ct_session *ct_test_session_logging(ct_graph *g, ct_session_options o, char **log_text) {
  size_t log_size = 0;
  *log_text = NULL;
  o.log_device_placement = 1;
  o.log = open_memstream(log_text, &log_size);
  assert_non_null(o.log);
  ct_status st = CT_STATUS_INIT;
  ct_session *s = ct_session_new(g, &o, &st);
  fclose(o.log);
  assert_status_ok(&st);
  return s;
}

void ct_test_expect_substrings(const char *text, const char *const *expected, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (strstr(text, expected[i]) == NULL) fail_msg("lacks: %s\nin:\n%s", expected[i], text);
}

double ct_test_max_rel_diff(const float *a, const float *b, int64_t n) {
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    double denom = fabs((double)b[i]) > 1 ? fabs((double)b[i]) : 1;
    double d = fabs((double)a[i] - (double)b[i]) / denom;
    if (d > worst || isnan(d)) worst = isnan(d) ? INFINITY : d;
  }
  return worst;
}

double ct_test_worst_against(const float *got, const double *want, int64_t n, int64_t *at) {
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double denom = fabs(want[i]) > 1 ? fabs(want[i]) : 1;
    const double d = fabs((double)got[i] - want[i]) / denom;
    if (d > worst || isnan(d)) {
      worst = isnan(d) ? INFINITY : d;
      *at = i;
    }
  }
  return worst;
}

ct_session *ct_test_cpu_session(ct_graph *g, int threads) {
  ct_status st = CT_STATUS_INIT;
  ct_session_options options;
  ct_session_options_defaults(&options);
  options.device_count_gpu = 0;
  options.intra_op_parallelism_threads = threads;
  ct_session *s = ct_session_new(g, &options, &st);
  assert_status_ok(&st);
  return s;
}

int ct_test_tower_step(ct_session *s, const ct_classifier_towers *c, int step, int64_t n,
                       const int64_t *sizes, float lr, ct_status *status) {
  ct_shape is = ct_shape_of(4, n, (int64_t)28, (int64_t)28, (int64_t)1);
  ct_shape ls = ct_shape_of(1, n);
  ct_tensor *images = ct_tensor_new(CT_F32, &is, status), *labels = ct_tensor_new(CT_I32, &ls, status);
  static ct_tower_feeds step_feeds;
  float *weights = calloc((size_t)(n + c->towers.n_towers), sizeof *weights);
  int failed = images == NULL || labels == NULL || weights == NULL;
  if (!failed) {
    ct_test_fill_uniform(ct_tensor_f32(images), ct_tensor_elements(images), 100 + (uint64_t)step,
                         0, 1);
    for (int64_t i = 0; i < n; ++i) ct_tensor_i32(labels)[i] = (int32_t)((i * 7 + step) % 10);
    int n_feeds = ct_classifier_make_feeds(c, images, labels, n, sizes, NULL, &step_feeds, weights);
    ct_tensor lrt = {CT_F32, ct_shape_of(0), &lr, 0};
    step_feeds.feeds[n_feeds++] = (ct_feed){c->update.learning_rate, &lrt};
    ct_session_set_step(s, (uint64_t)step);
    failed = ct_session_run(s, step_feeds.feeds, n_feeds, NULL, 0, &c->step, 1, NULL, status);
  }
  ct_tensor_free(images);
  ct_tensor_free(labels);
  free(weights);
  return failed;
}

int64_t ct_test_trainable_parameters(const ct_graph *g, int *batch_norms) {
  int64_t trainable = 0;
  if (batch_norms) *batch_norms = 0;
  for (int v = 0; v < ct_graph_variable_count(g); ++v) {
    ct_shape shape = ct_graph_variable_shape(g, v);
    if (ct_graph_variable_trainable(g, v)) trainable += ct_shape_elements(&shape);
    if (batch_norms) *batch_norms += strstr(ct_graph_variable_name(g, v), "/moving_mean") != NULL;
  }
  return trainable;
}
