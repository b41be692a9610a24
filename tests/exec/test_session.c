/* Sessions: feeds and fetches, errors, buffer reuse across steps, how a
 * step's outputs get their memory (as the estimate predicts it),
 * deterministic initialization, a run's end waited for. */
#include <math.h>
#include <string.h>

#include "device/device.h"
#include "exec/estimate.h"
#include "exec/exec_internal.h"
#include "test_support.h"
#include "trainer/training_graph.h"

static void test_missing_and_misshaped_feeds(void **state) {
  (void)state;
  ct_graph *g = ct_graph_new();
  ct_output x = ct_placeholder(g, "images", CT_F32, ct_shape_of(2, (int64_t)-1, (int64_t)4));
  ct_output y = ct_relu(g, x);
  ct_status st = CT_STATUS_INIT;
  ct_session *s = ct_session_new(g, NULL, &st);
  ct_tensor *out = NULL;
  assert_int_not_equal(ct_session_run(s, NULL, 0, &y, 1, NULL, 0, &out, &st), 0);
  assert_int_equal(st.code, CT_INVALID_ARGUMENT);
  assert_non_null(strstr(st.message, "feed a value for placeholder 'images'"));
  ct_status_clear(&st);
  float data[6] = {0};
  ct_tensor wrong = {CT_F32, ct_shape_of(2, (int64_t)2, (int64_t)3), data, 0};
  ct_feed feed = {x, &wrong};
  assert_int_not_equal(ct_session_run(s, &feed, 1, &y, 1, NULL, 0, &out, &st), 0);
  assert_non_null(strstr(st.message, "[2, 3] but the node expects f32 [?, 4]"));
  /* the session stays usable */
  ct_status_clear(&st);
  float good_data[8] = {-1, 2, -3, 4, 5, -6, 7, -8};
  ct_tensor good = {CT_F32, ct_shape_of(2, (int64_t)2, (int64_t)4), good_data, 0};
  feed.value = &good;
  assert_int_equal(ct_session_run(s, &feed, 1, &y, 1, NULL, 0, &out, &st), 0);
  assert_float_equal(ct_tensor_f32(out)[1], 2.0f, 0);
  assert_float_equal(ct_tensor_f32(out)[0], 0.0f, 0);
  ct_tensor_free(out);
  /* a feed nothing reads is allowed and changes nothing */
  ct_output unused = ct_placeholder(g, "unused", CT_F32, ct_shape_of(1, (int64_t)3));
  float unused_data[3] = {7, 7, 7};
  ct_tensor unused_value = {CT_F32, ct_shape_of(1, (int64_t)3), unused_data, 0};
  ct_feed both[2] = {{x, &good}, {unused, &unused_value}};
  assert_int_equal(ct_session_run(s, both, 2, &y, 1, NULL, 0, &out, &st), 0);
  assert_float_equal(ct_tensor_f32(out)[1], 2.0f, 0);
  assert_float_equal(ct_tensor_f32(out)[3], 4.0f, 0);
  ct_tensor_free(out);
  ct_session_free(s);
  ct_graph_free(g);
}

/* After the first step, steps take every buffer from the allocator's cache:
 * no new memory is reserved, and between steps only the variables (and
 * optimizer slots) stay in use. */
static void test_buffers_are_reused_between_steps(void **state) {
  (void)state;
  ct_status st = CT_STATUS_INIT;
  ct_optimizer_config oc;
  ct_optimizer_config_defaults(&oc, CT_OPTIMIZER_MOMENTUM);
  ct_training_graph tg;
  assert_int_equal(ct_training_graph_build(&tg, ct_model_find("fmnist_cnn"), 28, 28, 1, 10, 1,
                                           NULL, &oc, &st), 0);
  ct_session_options options;
  ct_session_options_defaults(&options);
  options.intra_op_parallelism_threads = 1;
  ct_session *s = ct_session_new(tg.graph, &options, &st);
  ct_shape is = ct_shape_of(4, (int64_t)16, (int64_t)28, (int64_t)28, (int64_t)1);
  ct_shape ls = ct_shape_of(1, (int64_t)16);
  ct_tensor *images = ct_tensor_new(CT_F32, &is, &st), *labels = ct_tensor_new(CT_I32, &ls, &st);
  ct_test_fill_uniform(ct_tensor_f32(images), ct_tensor_elements(images), 1, 0, 1);
  float lr = 0.01f;
  ct_tensor lrt = {CT_F32, ct_shape_of(0), &lr, 0};
  static ct_tower_feeds step_feeds;
  float weights[17];
  int n_feeds = ct_classifier_make_feeds(&tg.train, images, labels, 16, NULL, NULL, &step_feeds, weights);
  ct_feed *feeds = step_feeds.feeds;
  feeds[n_feeds++] = (ct_feed){tg.train.update.learning_rate, &lrt};
  ct_allocator_stats after_first = {0};
  for (int step = 0; step < 4; ++step) {
    ct_session_set_step(s, (uint64_t)step);
    assert_int_equal(ct_session_run(s, feeds, n_feeds, NULL, 0, &tg.train.step, 1, NULL, &st), 0);
    ct_allocator_stats stats = ct_allocator_get_stats(s->devices[0]->allocator);
    if (step == 0) after_first = stats;
    size_t variable_bytes = 0;
    for (int v = 0; v < ct_graph_variable_count(tg.graph); ++v)
      variable_bytes += (size_t)ct_tensor_nbytes(ct_session_variable(s, v, &st));
    assert_true(stats.bytes_in_use >= variable_bytes);
    assert_true(stats.bytes_in_use < variable_bytes + 256 * 64); /* rounding of each block */
    assert_int_equal(stats.bytes_in_use, after_first.bytes_in_use);
    assert_int_equal(stats.bytes_reserved, after_first.bytes_reserved);
    assert_int_equal(stats.peak_bytes_in_use, after_first.peak_bytes_in_use);
  }
  printf("  fmnist_cnn step at batch 16: peak %zu bytes, reserved %zu bytes\n",
         after_first.peak_bytes_in_use, after_first.bytes_reserved);
  ct_tensor_free(images);
  ct_tensor_free(labels);
  ct_session_free(s);
  ct_training_graph_free(&tg);
}

/* One buffer serves a chain: relu(x) gets a fresh one, a Reshape views it,
 * and relu of that view takes it over in place (the view was its last
 * reader). The run's measured peak is that one buffer, and the estimate,
 * which follows the executor's binding rule, predicts exactly that. */
static void test_views_and_in_place_outputs_share_one_buffer(void **state) {
  (void)state;
  enum { N = 1024 };
  ct_graph *g = ct_graph_new();
  ct_output x = ct_placeholder(g, "x", CT_F32, ct_shape_of(1, (int64_t)N));
  ct_output viewed = ct_reshape(g, ct_relu(g, x), ct_shape_of(2, (int64_t)32, (int64_t)32));
  ct_output y = ct_relu(g, viewed);
  ct_status st = CT_STATUS_INIT;
  ct_session *s = ct_session_new(g, NULL, &st);
  float data[N];
  for (int i = 0; i < N; ++i) data[i] = (float)(i % 7) - 3.0f;
  ct_tensor value = {CT_F32, ct_shape_of(1, (int64_t)N), data, 0};
  ct_feed feed = {x, &value};
  ct_run_estimate e;
  assert_int_equal(ct_session_estimate_run(s, &feed, 1, &y, 1, NULL, 0, &e, &st), 0);
  ct_tensor *out = NULL;
  assert_int_equal(ct_session_run(s, &feed, 1, &y, 1, NULL, 0, &out, &st), 0);
  ct_memory_stats m;
  assert_int_equal(ct_session_memory_stats(s, 0, &m), 0);
  const size_t one_buffer = ct_allocator_chunk_bytes(N * sizeof(float));
  print_message("one buffer %zu bytes: measured peak %zu, predicted %zu\n", one_buffer,
                m.peak_bytes_in_use, e.devices[0].peak_bytes);
  assert_int_equal(m.peak_bytes_in_use, one_buffer);
  assert_int_equal(e.devices[0].peak_bytes, one_buffer);
  for (int i = 0; i < N; ++i) assert_float_equal(ct_tensor_f32(out)[i], data[i] > 0 ? data[i] : 0, 0);
  ct_tensor_free(out);
  ct_run_estimate_free(&e);
  ct_session_free(s);
  ct_graph_free(g);
}

static void test_initialization_depends_on_seed_and_name_only(void **state) {
  (void)state;
  ct_status st = CT_STATUS_INIT;
  float first[12];
  for (int round = 0; round < 2; ++round) {
    ct_graph *g = ct_graph_new();
    ct_graph_set_seed(g, 42);
    ct_initializer glorot = {CT_INIT_GLOROT_UNIFORM, 0};
    if (round == 1) /* another variable created first must not change w's values */
      ct_variable(g, "other", ct_shape_of(1, (int64_t)5), glorot, 1);
    ct_variable(g, "w", ct_shape_of(2, (int64_t)3, (int64_t)4), glorot, 1);
    ct_session *s = ct_session_new(g, NULL, &st);
    /* read, not borrowed: on a GPU machine the variable lives on the GPU */
    ct_tensor *w = ct_session_read_variable(s, round == 1 ? 1 : 0, &st);
    assert_status_ok(&st);
    float limit = 0.9258201f; /* sqrt(6 / (3 + 4)) */
    for (int i = 0; i < 12; ++i) assert_true(ct_tensor_f32(w)[i] >= -limit && ct_tensor_f32(w)[i] <= limit);
    if (round == 0)
      memcpy(first, w->data, sizeof first);
    else
      assert_memory_equal(first, w->data, sizeof first);
    ct_tensor_free(w);
    ct_session_free(s);
    ct_graph_free(g);
  }
}

static void test_memory_limit_gives_resource_exhausted(void **state) {
  (void)state;
  ct_graph *g = ct_graph_new();
  ct_output x = ct_placeholder(g, "x", CT_F32, ct_shape_of(1, (int64_t)-1));
  ct_output y = ct_relu(g, ct_neg(g, x));
  ct_session_options options;
  ct_session_options_defaults(&options);
  options.cpu_memory_limit = 1 << 20;
  options.device_count_gpu = 0; /* the limit is the CPU's */
  ct_status st = CT_STATUS_INIT;
  ct_session *s = ct_session_new(g, &options, &st);
  ct_shape big = ct_shape_of(1, (int64_t)(1 << 20));
  ct_tensor *t = ct_tensor_new(CT_F32, &big, &st);
  ct_feed feed = {x, t};
  ct_tensor *out = NULL;
  assert_int_not_equal(ct_session_run(s, &feed, 1, &y, 1, NULL, 0, &out, &st), 0);
  assert_int_equal(st.code, CT_RESOURCE_EXHAUSTED);
  assert_non_null(strstr(st.message, "device:CPU:0"));
  assert_non_null(strstr(st.message, "lower the batch size"));
  /* a smaller run still works on the same session */
  ct_status_clear(&st);
  ct_tensor small = *t;
  small.shape.dims[0] = 1000;
  feed.value = &small;
  assert_int_equal(ct_session_run(s, &feed, 1, &y, 1, NULL, 0, &out, &st), 0);
  ct_tensor_free(out);
  ct_tensor_free(t);
  ct_session_free(s);
  ct_graph_free(g);
}

/* A run much longer than the one before: on a device that leaves its
 * session's thread a core, that thread sleeps until shortly before the end
 * the last run suggests, then watches for the end for a moment, then sleeps
 * again; it must still return only once the run is done. x [m, 512] by
 * half the identity three times: exactly x / 8, for m = 1 (about 100 us)
 * then 2048 (tens of ms), twice. */
static void test_run_longer_than_the_last(void **state) {
  (void)state;
  enum { N = 512 };
  ct_graph *g = ct_graph_new();
  ct_output x = ct_placeholder(g, "x", CT_F32, ct_shape_of(2, (int64_t)-1, (int64_t)N));
  ct_output w = ct_placeholder(g, "w", CT_F32, ct_shape_of(2, (int64_t)N, (int64_t)N));
  ct_output y = ct_matmul(g, ct_matmul(g, ct_matmul(g, x, w, 0, 0), w, 0, 0), w, 0, 0);
  ct_session_options options;
  ct_session_options_defaults(&options);
  options.intra_op_parallelism_threads = 1;
  options.device_count_gpu = 0;
  ct_status st = CT_STATUS_INIT;
  ct_session *s = ct_session_new(g, &options, &st);
  assert_non_null(s);
  ct_shape ws = ct_shape_of(2, (int64_t)N, (int64_t)N);
  ct_tensor *half = ct_tensor_new(CT_F32, &ws, &st);
  memset(ct_tensor_f32(half), 0, (size_t)N * N * sizeof(float));
  for (int i = 0; i < N; ++i) ct_tensor_f32(half)[i * N + i] = 0.5f;
  for (int round = 0; round < 4; ++round) {
    const int64_t m = round % 2 ? 2048 : 1;
    ct_shape xs = ct_shape_of(2, m, (int64_t)N);
    ct_tensor *in = ct_tensor_new(CT_F32, &xs, &st);
    for (int64_t i = 0; i < m * N; ++i) ct_tensor_f32(in)[i] = (float)(i % 1000 - 500);
    ct_feed feeds[2] = {{x, in}, {w, half}};
    ct_tensor *out = NULL;
    assert_int_equal(ct_session_run(s, feeds, 2, &y, 1, NULL, 0, &out, &st), 0);
    for (int64_t i = 0; i < m * N; ++i)
      if (ct_tensor_f32(out)[i] != ct_tensor_f32(in)[i] / 8)
        fail_msg("m %lld: element %lld is %g, not %g", (long long)m, (long long)i,
                 (double)ct_tensor_f32(out)[i], (double)ct_tensor_f32(in)[i] / 8);
    ct_tensor_free(out);
    ct_tensor_free(in);
  }
  ct_tensor_free(half);
  ct_session_free(s);
  ct_graph_free(g);
}

/* Variables of one initializer seed start equal whatever their names;
 * random_normal is not truncated; ct_session_initialize_variable sets a
 * variable to its first value again. */
static void test_initializer_seeds_and_reinitializing(void **state) {
  (void)state;
  ct_graph *g = ct_graph_new();
  ct_graph_set_seed(g, 7);
  const ct_shape s = ct_shape_of(1, (int64_t)4000);
  ct_output a = ct_variable(g, "a", s, (ct_initializer){CT_INIT_NORMAL, 1.0f}, 1);
  ct_output b = ct_variable(g, "b", s, (ct_initializer){CT_INIT_NORMAL, 1.0f}, 1);
  ct_output c = ct_variable(g, "c", s, (ct_initializer){CT_INIT_NORMAL, 1.0f}, 1);
  ct_output n = ct_variable(g, "n", s, (ct_initializer){CT_INIT_RANDOM_NORMAL, 1.0f}, 1);
  ct_variable_set_initializer_seed(g, a, 3);
  ct_variable_set_initializer_seed(g, b, 3);
  assert_status_ok(ct_graph_status(g));
  ct_status st = CT_STATUS_INIT;
  ct_session *sess = ct_session_new(g, NULL, &st);
  assert_status_ok(&st);
  ct_tensor *va = ct_session_read_variable(sess, 0, &st), *vb = ct_session_read_variable(sess, 1, &st);
  ct_tensor *vc = ct_session_read_variable(sess, 2, &st), *vn = ct_session_read_variable(sess, 3, &st);
  assert_status_ok(&st);
  assert_memory_equal(va->data, vb->data, ct_tensor_nbytes(va));
  assert_memory_not_equal(va->data, vc->data, ct_tensor_nbytes(va));
  float largest = 0;
  for (int i = 0; i < 4000; ++i) largest = fmaxf(largest, fabsf(ct_tensor_f32(vn)[i]));
  assert_true(largest > 2.5f); /* a truncated normal stays within 2 */
  ct_tensor *zeros = ct_tensor_new(CT_F32, &s, &st);
  assert_int_equal(ct_session_assign_variable(sess, 2, zeros, &st), 0);
  assert_int_equal(ct_session_initialize_variable(sess, 2, &st), 0);
  ct_tensor *again = ct_session_read_variable(sess, 2, &st);
  assert_status_ok(&st);
  assert_memory_equal(again->data, vc->data, ct_tensor_nbytes(vc));
  assert_int_equal(ct_session_initialize_variable(sess, 9, &st), 1);
  assert_int_equal(st.code, CT_INVALID_ARGUMENT);
  (void)c, (void)n;
  ct_tensor_free(va), ct_tensor_free(vb), ct_tensor_free(vc), ct_tensor_free(vn);
  ct_tensor_free(zeros), ct_tensor_free(again);
  ct_session_free(sess);
  ct_graph_free(g);
}

/* Each random kind centred on a mean (seeded alike, so each is mean + the
 * centred variable's values, against a loop here), a truncated normal
 * within mean +- 2 scale; a mean for a constant initializer is refused. */
static void test_initializer_means(void **state) {
  (void)state;
  ct_graph *g = ct_graph_new();
  const ct_shape s = ct_shape_of(1, (int64_t)3000);
  const ct_init_kind kinds[3] = {CT_INIT_UNIFORM, CT_INIT_NORMAL, CT_INIT_RANDOM_NORMAL};
  const float means[3] = {3.5f, -3.0f, 4.0f};
  for (int k = 0; k < 3; ++k) {
    ct_output centred = ct_variable(g, k == 0 ? "u0" : k == 1 ? "t0" : "n0", s,
                                    (ct_initializer){kinds[k], 1.5f}, 1);
    ct_output moved = ct_variable(g, k == 0 ? "u" : k == 1 ? "t" : "n", s,
                                  (ct_initializer){kinds[k], 1.5f}, 1);
    ct_variable_set_initializer_seed(g, centred, 5);
    ct_variable_set_initializer_seed(g, moved, 5);
    ct_variable_set_initializer_mean(g, moved, means[k]);
  }
  assert_status_ok(ct_graph_status(g));
  ct_status st = CT_STATUS_INIT;
  ct_session *sess = ct_session_new(g, NULL, &st);
  assert_status_ok(&st);
  for (int k = 0; k < 3; ++k) {
    ct_tensor *c = ct_session_read_variable(sess, 2 * k, &st);
    ct_tensor *m = ct_session_read_variable(sess, 2 * k + 1, &st);
    assert_status_ok(&st);
    double worst = 0, sum = 0;
    for (int i = 0; i < 3000; ++i) {
      const float got = ct_tensor_f32(m)[i], want = means[k] + ct_tensor_f32(c)[i];
      worst = fmax(worst, fabs(got - want));
      sum += got;
      if (kinds[k] != CT_INIT_RANDOM_NORMAL) assert_true(fabsf(got - means[k]) <= 2 * 1.5f + 1e-5f);
    }
    printf("  kind %d mean %g: drawn mean %.3f, max difference to mean + centred %.1e\n",
           kinds[k], (double)means[k], sum / 3000, worst);
    assert_true(worst <= 1e-6);
    assert_true(fabs(sum / 3000 - means[k]) < 0.1);
    ct_tensor_free(c), ct_tensor_free(m);
  }
  ct_session_free(sess);
  ct_output one = ct_variable(g, "one", s, (ct_initializer){CT_INIT_CONSTANT, 1.0f}, 1);
  ct_variable_set_initializer_mean(g, one, 2.0f);
  assert_int_equal(ct_graph_status(g)->code, CT_INVALID_ARGUMENT);
  ct_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_missing_and_misshaped_feeds),
      cmocka_unit_test(test_buffers_are_reused_between_steps),
      cmocka_unit_test(test_initialization_depends_on_seed_and_name_only),
      cmocka_unit_test(test_memory_limit_gives_resource_exhausted),
      cmocka_unit_test(test_views_and_in_place_outputs_share_one_buffer),
      cmocka_unit_test(test_run_longer_than_the_last),
      cmocka_unit_test(test_initializer_seeds_and_reinitializing),
      cmocka_unit_test(test_initializer_means),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
