/* Placement and multi-device execution: every placement rule, the log, the
 * error text, concurrency of two CPU devices, and equal results whatever
 * the placement. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "graph/graph_internal.h"
#include "test_support.h"

static const char *CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0";
static const char *CPU1 = "/job:localhost/replica:0/task:0/device:CPU:1";

/* n CPU devices and no GPU, whatever the machine has (tests/gpu places on
 * GPUs). */
static ct_session_options cpus(int n, int soft) {
  ct_session_options o;
  ct_session_options_defaults(&o);
  o.device_count_cpu = n;
  o.device_count_gpu = 0;
  o.intra_op_parallelism_threads = n; /* one worker thread each */
  o.allow_soft_placement = soft;
  return o;
}

static const char *device_of(ct_session *s, ct_output o) {
  ct_status st = CT_STATUS_INIT;
  const char *d = ct_session_node_device(s, o.node, &st);
  assert_status_ok(&st);
  return d;
}

static ct_output scalar_input(ct_graph *g) {
  return ct_placeholder(g, "x", CT_F32, ct_shape_of(1, (int64_t)4));
}

static void test_explicit_nested_and_cleared_scopes(void **state) {
  (void)state;
  ct_graph *g = ct_graph_new();
  ct_output x = scalar_input(g);
  ct_graph_push_device(g, "/cpu:1");
  ct_output a = ct_neg(g, x);
  ct_graph_push_device(g, "/device:CPU:0");
  ct_output b = ct_neg(g, a); /* innermost wins */
  ct_graph_push_device(g, "");
  ct_output c = ct_neg(g, b); /* cleared: default */
  ct_graph_pop_device(g);
  ct_graph_pop_device(g);
  ct_output d = ct_neg(g, c); /* back under /cpu:1 */
  ct_graph_pop_device(g);
  ct_graph_push_device(g, "/job:localhost/replica:0/task:0/device:cpu:1");
  ct_output e = ct_neg(g, d);
  ct_graph_pop_device(g);
  ct_status st = CT_STATUS_INIT;
  ct_session_options o = cpus(2, 0);
  ct_session *s = ct_session_new(g, &o, &st);
  assert_status_ok(&st);
  assert_string_equal(device_of(s, a), CPU1);
  assert_string_equal(device_of(s, b), CPU0);
  assert_string_equal(device_of(s, c), CPU0);
  assert_string_equal(device_of(s, d), CPU1);
  assert_string_equal(device_of(s, e), CPU1);
  ct_session_free(s);
  ct_graph_free(g);
}

static void test_variables_and_their_updates_are_colocated(void **state) {
  (void)state;
  ct_graph *g = ct_graph_new();
  ct_initializer ones = {CT_INIT_ONES, 0};
  ct_graph_push_device(g, "/cpu:1");
  ct_output w = ct_variable(g, "w", ct_shape_of(1, (int64_t)4), ones, 1);
  ct_graph_pop_device(g);
  ct_graph_push_device(g, "/cpu:0"); /* a tower on /cpu:0 reads it */
  ct_output w_read = ct_variable(g, "w", ct_shape_of(1, (int64_t)4), ones, 1);
  ct_output loss = ct_reduce_sum(g, ct_mul(g, w_read, w_read), 0, 0);
  ct_graph_pop_device(g);
  ct_optimizer_config oc;
  ct_optimizer_config_defaults(&oc, CT_OPTIMIZER_MOMENTUM);
  ct_train_op train;
  assert_int_equal(ct_optimizer_minimize(g, &oc, loss, &train), 0);
  ct_status st = CT_STATUS_INIT;
  ct_session_options o = cpus(2, 0);
  ct_session *s = ct_session_new(g, &o, &st);
  assert_status_ok(&st);
  assert_string_equal(device_of(s, w), CPU1);
  assert_string_equal(device_of(s, w_read), CPU1); /* colocated with the variable */
  assert_string_equal(device_of(s, loss), CPU0);
  assert_string_equal(device_of(s, ct_out(train.op->control[0], 0)), CPU1); /* ApplyMomentum */
  /* the slot variable "w/Momentum" too */
  ct_node *slot = ct_graph_find(g, "train/Momentum");
  assert_non_null(slot);
  assert_string_equal(device_of(s, ct_out(slot, 0)), CPU1);
  /* and it trains: w -= lr * 2w twice */
  float lr = 0.1f;
  ct_tensor lrt = {CT_F32, ct_shape_of(0), &lr, 0};
  ct_feed feed = {train.learning_rate, &lrt};
  for (int i = 0; i < 2; ++i) assert_int_equal(ct_session_run(s, &feed, 1, NULL, 0, &train.op, 1, NULL, &st), 0);
  /* step 1: accum = 2, w = 0.8; step 2: accum = 0.9*2 + 1.6 = 3.4, w = 0.46 */
  assert_float_equal(ct_tensor_f32(ct_session_variable(s, 0, &st))[0], 0.46f, 1e-6);
  ct_session_free(s);
  ct_graph_free(g);
}

static void test_default_and_soft_placement_with_log(void **state) {
  (void)state;
  ct_graph *g = ct_graph_new();
  ct_output x = scalar_input(g);
  ct_graph_push_device(g, "/gpu:2");
  ct_output a = ct_neg(g, x);
  ct_graph_pop_device(g);
  ct_graph_push_device(g, "/cpu:5");
  ct_output b = ct_neg(g, a);
  ct_graph_pop_device(g);
  ct_output c = ct_relu(g, b);
  char *log_text = NULL;
  ct_session *s = ct_test_session_logging(g, cpus(2, 1), &log_text);
  assert_string_equal(device_of(s, a), CPU0); /* no GPU: the default device */
  assert_string_equal(device_of(s, b), CPU0); /* /cpu:5 missing: another CPU */
  assert_string_equal(device_of(s, c), CPU0); /* no request: CPU:0 first */
  printf("%s", log_text);
  const char *expected[] = {
      "Device mapping:\n/job:localhost/replica:0/task:0/device:CPU:0 -> device: 0, name: cpu, cores: 1\n"
      "/job:localhost/replica:0/task:0/device:CPU:1 -> device: 1, name: cpu, cores: 1\n",
      "\nx: (Placeholder): /job:localhost/replica:0/task:0/device:CPU:0\n",
      "\nNeg: (Neg): /job:localhost/replica:0/task:0/device:CPU:0\n"
      "Neg: requested /device:GPU:2, which does not exist; placed on "
      "/job:localhost/replica:0/task:0/device:CPU:0 by allow_soft_placement\n",
      "\nNeg_1: requested /device:CPU:5, which does not exist;",
      "\nRelu: (Relu): /job:localhost/replica:0/task:0/device:CPU:0\n",
  };
  ct_test_expect_substrings(log_text, expected, sizeof expected / sizeof expected[0]);
  free(log_text);
  ct_session_free(s);
  ct_graph_free(g);
}

static ct_placement_reason reason_of(ct_session *s, ct_output o, int *device) {
  ct_status st = CT_STATUS_INIT;
  ct_placement_reason reason = CT_PLACED_DEFAULT;
  assert_int_equal(ct_session_node_placement(s, o.node, device, &reason, &st), 0);
  return reason;
}

/* Each node's reason: the pass that chose its device. */
static void test_placement_reasons(void **state) {
  (void)state;
  ct_graph *g = ct_graph_new();
  ct_output x = scalar_input(g);
  ct_graph_push_device(g, "/cpu:1");
  ct_output a = ct_neg(g, x);
  ct_output w =
      ct_variable(g, "w", ct_shape_of(1, (int64_t)4), (ct_initializer){CT_INIT_ZEROS, 0}, 1);
  ct_graph_pop_device(g);
  ct_graph_push_device(g, "/gpu:3");
  ct_output b = ct_neg(g, a);
  ct_graph_pop_device(g);
  ct_graph_push_device(g, "/cpu:0");
  ct_output w_here =
      ct_variable(g, "w", ct_shape_of(1, (int64_t)4), (ct_initializer){CT_INIT_ZEROS, 0}, 1);
  ct_graph_pop_device(g);
  ct_status st = CT_STATUS_INIT;
  ct_session_options o = cpus(2, 1);
  ct_session *s = ct_session_new(g, &o, &st);
  assert_status_ok(&st);
  int device = -1;
  assert_int_equal(reason_of(s, x, &device), CT_PLACED_DEFAULT);
  assert_int_equal(device, 0);
  assert_int_equal(reason_of(s, a, &device), CT_PLACED_EXPLICIT);
  assert_int_equal(device, 1);
  assert_int_equal(reason_of(s, b, &device), CT_PLACED_SOFT);
  assert_int_equal(device, 0);
  assert_int_equal(reason_of(s, w, &device), CT_PLACED_COLOCATED);
  assert_int_equal(reason_of(s, w_here, &device), CT_PLACED_COLOCATED);
  assert_int_equal(device, 1); /* beside w, not in its own /cpu:0 scope */
  assert_string_equal(ct_placement_reason_name(CT_PLACED_SOFT), "soft");
  assert_string_equal(ct_placement_reason_name(CT_PLACED_COLOCATED), "colocated");
  ct_graph *other = ct_graph_new();
  ct_output stranger = scalar_input(other);
  assert_int_not_equal(ct_session_node_placement(s, stranger.node, NULL, NULL, &st), 0);
  assert_int_equal(st.code, CT_INVALID_ARGUMENT);
  ct_graph_free(other);
  ct_session_free(s);
  ct_graph_free(g);
}

static void test_missing_device_without_soft_placement_fails_as_tensorflow(void **state) {
  (void)state;
  ct_graph *g = ct_graph_new();
  ct_output x = scalar_input(g);
  ct_graph_push_device(g, "/device:GPU:2");
  ct_graph_push_name_scope(g, "tower_2");
  ct_neg(g, x);
  ct_graph_pop_name_scope(g);
  ct_graph_pop_device(g);
  ct_status st = CT_STATUS_INIT;
  ct_session_options o = cpus(2, 0);
  assert_null(ct_session_new(g, &o, &st));
  assert_int_equal(st.code, CT_INVALID_ARGUMENT);
  assert_string_equal(st.message,
                      "Cannot assign a device for operation 'tower_2/Neg': Operation was "
                      "explicitly assigned to /device:GPU:2 but available devices are [ "
                      "/job:localhost/replica:0/task:0/device:CPU:0, "
                      "/job:localhost/replica:0/task:0/device:CPU:1 ]. Make sure the device "
                      "specification refers to a valid device.");
  ct_graph_free(g);

  g = ct_graph_new();
  x = scalar_input(g);
  ct_graph_push_device(g, "/gpu:x");
  ct_neg(g, x);
  ct_graph_pop_device(g);
  ct_status_clear(&st);
  assert_null(ct_session_new(g, &o, &st));
  assert_int_equal(st.code, CT_INVALID_ARGUMENT);
  assert_non_null(strstr(st.message, "'/gpu:x'"));
  ct_graph_free(g);
}

/* Rank 1 of an MPI job: its devices are /job:worker/replica:0/task:1/...;
 * specs without job and task, or naming that task, place on them; a spec
 * naming another task is another process's device, missing here. */
static void test_devices_of_a_task(void **state) {
  (void)state;
  ct_graph *g = ct_graph_new();
  ct_output x = scalar_input(g);
  ct_graph_push_device(g, "/cpu:1");
  ct_output a = ct_neg(g, x);
  ct_graph_pop_device(g);
  ct_graph_push_device(g, "/job:worker/replica:0/task:1/device:CPU:0");
  ct_output b = ct_neg(g, a);
  ct_graph_pop_device(g);
  ct_status st = CT_STATUS_INIT;
  ct_session_options o = cpus(2, 0);
  snprintf(o.job, sizeof o.job, "worker");
  o.task = 1;
  ct_session *s = ct_session_new(g, &o, &st);
  assert_status_ok(&st);
  assert_string_equal(device_of(s, x), "/job:worker/replica:0/task:1/device:CPU:0");
  assert_string_equal(device_of(s, a), "/job:worker/replica:0/task:1/device:CPU:1");
  assert_string_equal(device_of(s, b), "/job:worker/replica:0/task:1/device:CPU:0");
  ct_session_free(s);

  ct_graph_push_device(g, "/job:worker/task:0/cpu:0");
  ct_neg(g, b);
  ct_graph_pop_device(g);
  s = ct_session_new(g, &o, &st);
  assert_null(s);
  assert_int_equal(st.code, CT_INVALID_ARGUMENT);
  assert_non_null(strstr(st.message, "explicitly assigned to /job:worker/task:0/device:CPU:0"));
  assert_non_null(strstr(st.message, "/job:worker/replica:0/task:1/device:CPU:1 ]"));
  ct_graph_free(g);
}

/* Nodes added after the session exists are placed on first use. */
static void test_nodes_added_later_are_placed(void **state) {
  (void)state;
  ct_graph *g = ct_graph_new();
  ct_output x = scalar_input(g);
  ct_status st = CT_STATUS_INIT;
  ct_session_options o = cpus(2, 0);
  ct_session *s = ct_session_new(g, &o, &st);
  ct_graph_push_device(g, "/cpu:1");
  ct_output y = ct_neg(g, x);
  ct_graph_pop_device(g);
  assert_string_equal(device_of(s, y), CPU1);
  ct_session_free(s);
  ct_graph_free(g);
}

/* Two chains of matmuls, one per device: with each device's own worker the
 * timeline must show them running at the same time. Run one after the
 * other, their intervals could not overlap. The best of 6 runs counts:
 * beside another test's threads on the same two cores (ctest -j2), the best
 * of 3 came out anywhere from 42% to 100%. */
static void test_two_devices_run_concurrently(void **state) {
  (void)state;
  const int64_t n = 384;
  ct_graph *g = ct_graph_new();
  ct_output x = ct_placeholder(g, "x", CT_F32, ct_shape_of(2, n, n));
  ct_output ends[2];
  for (int d = 0; d < 2; ++d) {
    char device[16];
    snprintf(device, sizeof device, "/cpu:%d", d);
    ct_graph_push_device(g, device);
    ct_output y = x;
    for (int k = 0; k < 6; ++k) y = ct_tanh(g, ct_matmul(g, y, x, 0, 0));
    ends[d] = y;
    ct_graph_pop_device(g);
  }
  ct_status st = CT_STATUS_INIT;
  ct_session_options o = cpus(2, 0);
  ct_session *s = ct_session_new(g, &o, &st);
  ct_shape xs = ct_shape_of(2, n, n);
  ct_tensor *xv = ct_tensor_new(CT_F32, &xs, &st);
  ct_test_fill_uniform(ct_tensor_f32(xv), n * n, 3, -0.05f, 0.05f);
  ct_feed feed = {x, xv};
  ct_run_metadata *md = ct_run_metadata_new();
  ct_tensor *out[2];
  double best_overlap = 0;
  for (int attempt = 0; attempt < 6; ++attempt) {
    assert_int_equal(ct_session_run_traced(s, &feed, 1, ends, 2, NULL, 0, out, md, &st), 0);
    /* the two devices' busy spans: [first start, last end] of their matmuls */
    double span[2][2] = {{1e18, 0}, {1e18, 0}};
    for (int i = 0; i < ct_run_metadata_event_count(md); ++i) {
      ct_timeline_event e = ct_run_metadata_event(md, i);
      if (strcmp(e.op, "MatMul") != 0) continue;
      if (e.start_us < span[e.device][0]) span[e.device][0] = e.start_us;
      if (e.end_us > span[e.device][1]) span[e.device][1] = e.end_us;
    }
    double lo = span[0][0] > span[1][0] ? span[0][0] : span[1][0];
    double hi = span[0][1] < span[1][1] ? span[0][1] : span[1][1];
    double overlap = (hi - lo) / (span[0][1] - span[0][0]);
    if (overlap > best_overlap) best_overlap = overlap;
    /* identical chains on identical devices give identical results */
    assert_memory_equal(out[0]->data, out[1]->data, ct_tensor_nbytes(out[0]));
    ct_tensor_free(out[0]);
    ct_tensor_free(out[1]);
  }
  /* each device's busy time: the sum of its compute events, no copy */
  double busy[2] = {0, 0};
  for (int i = 0; i < ct_run_metadata_event_count(md); ++i) {
    const ct_timeline_event e = ct_run_metadata_event(md, i);
    if (e.kind == CT_TIMELINE_COMPUTE) busy[e.device] += e.end_us - e.start_us;
  }
  for (int d = 0; d < 2; ++d) {
    assert_true(busy[d] > 0);
    assert_true(fabs(ct_run_metadata_device_busy_us(md, d) - busy[d]) <= 1e-9 * busy[d]);
  }
  assert_true(ct_run_metadata_device_busy_us(md, 2) == 0.0);
  printf("  /cpu:0 and /cpu:1 busy at the same time for %.0f%% of /cpu:0's span\n",
         100 * best_overlap);
  assert_true(best_overlap > 0.5);
  char *dir = ct_test_tmpdir();
  char path[512];
  snprintf(path, sizeof path, "%s/trace.json", dir);
  assert_int_equal(ct_run_metadata_write_chrome_trace(md, s, path, &st), 0);
  FILE *f = fopen(path, "rb");
  char text[1 << 16];
  size_t len = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[len] = '\0';
  assert_non_null(strstr(text, "\"traceEvents\""));
  assert_non_null(strstr(text, "device:CPU:1"));
  char error[256];
  ct_json *doc = ct_json_parse(text, len, error, sizeof error);
  if (doc == NULL) fail_msg("the trace is not JSON: %s", error);
  assert_non_null(ct_json_get(doc, "traceEvents"));
  ct_json_free(doc);
  remove(path);
  free(dir);
  ct_run_metadata_free(md);
  ct_tensor_free(xv);
  ct_session_free(s);
  ct_graph_free(g);
}

/* Trains a few steps of a small network with its layers on /cpu:0 and
 * /cpu:1 (values copied between them) and with everything on one device:
 * the weights are bitwise equal. */
static void train_mlp(int split, float *weights, int n_weights) {
  ct_graph *g = ct_graph_new();
  ct_graph_set_seed(g, 5);
  ct_output x = ct_placeholder(g, "x", CT_F32, ct_shape_of(2, (int64_t)-1, (int64_t)16));
  ct_output y = ct_placeholder(g, "y", CT_I32, ct_shape_of(1, (int64_t)-1));
  ct_graph_push_device(g, "/cpu:0");
  ct_output h = ct_layer_dense(g, x, 32, CT_ACTIVATION_TANH, "fc1");
  ct_graph_pop_device(g);
  ct_graph_push_device(g, split ? "/cpu:1" : "/cpu:0");
  ct_output logits = ct_layer_dense(g, h, 4, CT_ACTIVATION_NONE, "fc2");
  ct_output loss = ct_reduce_mean(g, ct_sparse_softmax_cross_entropy(g, logits, y), 0, 0);
  ct_graph_pop_device(g);
  ct_optimizer_config oc;
  ct_optimizer_config_defaults(&oc, CT_OPTIMIZER_ADAM);
  ct_train_op train;
  assert_int_equal(ct_optimizer_minimize(g, &oc, loss, &train), 0);
  ct_status st = CT_STATUS_INIT;
  ct_session_options o = cpus(2, 0);
  ct_session *s = ct_session_new(g, &o, &st);
  assert_status_ok(&st);
  float xv[8 * 16];
  int32_t yv[8];
  ct_test_fill_uniform(xv, 8 * 16, 9, -1, 1);
  for (int i = 0; i < 8; ++i) yv[i] = i % 4;
  ct_tensor xt = {CT_F32, ct_shape_of(2, (int64_t)8, (int64_t)16), xv, 0};
  ct_tensor yt = {CT_I32, ct_shape_of(1, (int64_t)8), yv, 0};
  ct_run_metadata *md = ct_run_metadata_new();
  for (int step = 1; step <= 5; ++step) {
    float lr = ct_optimizer_learning_rate(&oc, 0.01, step);
    ct_tensor lrt = {CT_F32, ct_shape_of(0), &lr, 0};
    ct_feed feeds[3] = {{x, &xt}, {y, &yt}, {train.learning_rate, &lrt}};
    assert_int_equal(ct_session_run_traced(s, feeds, 3, NULL, 0, &train.op, 1, NULL, md, &st), 0);
  }
  /* activations cross from /cpu:0 to /cpu:1 in place (CPU devices share the
   * host's memory); only variables would be copied, and none is read across */
  int copies = 0, on_cpu1 = 0;
  for (int i = 0; i < ct_run_metadata_event_count(md); ++i) {
    copies += strcmp(ct_run_metadata_event(md, i).op, "_Copy") == 0;
    on_cpu1 += ct_run_metadata_event(md, i).device == 1;
  }
  assert_int_equal(copies, 0);
  if (split)
    assert_true(on_cpu1 > 0);
  else
    assert_int_equal(on_cpu1, 0);
  int offset = 0;
  for (int v = 0; v < ct_graph_variable_count(g); ++v) {
    if (!ct_graph_variable_trainable(g, v)) continue;
    ct_tensor *t = ct_session_variable(s, v, &st);
    int64_t n = ct_tensor_elements(t);
    assert_true(offset + n <= n_weights);
    memcpy(weights + offset, t->data, (size_t)n * sizeof(float));
    offset += (int)n;
  }
  ct_run_metadata_free(md);
  ct_session_free(s);
  ct_graph_free(g);
}

static void test_results_do_not_depend_on_placement(void **state) {
  (void)state;
  enum { N = 16 * 32 + 32 + 32 * 4 + 4 };
  static float one[N], two[N];
  train_mlp(0, one, N);
  train_mlp(1, two, N);
  assert_memory_equal(one, two, sizeof one);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_explicit_nested_and_cleared_scopes),
      cmocka_unit_test(test_variables_and_their_updates_are_colocated),
      cmocka_unit_test(test_default_and_soft_placement_with_log),
      cmocka_unit_test(test_placement_reasons),
      cmocka_unit_test(test_missing_device_without_soft_placement_fails_as_tensorflow),
      cmocka_unit_test(test_devices_of_a_task),
      cmocka_unit_test(test_nodes_added_later_are_placed),
      cmocka_unit_test(test_two_devices_run_concurrently),
      cmocka_unit_test(test_results_do_not_depend_on_placement),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
