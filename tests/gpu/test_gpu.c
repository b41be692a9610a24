/* GPU tests (ctest -L gpu), run on a machine with a CUDA GPU; without one
 * the program exits 77 and CTest reports it skipped, unless
 * CTOWER_EXPECT_GPU=1 says there must be one (then it fails), and a driver
 * that is there but fails is a failure either way.
 *   - default placement on the GPU, soft placement and the placement log;
 *   - every op case of the gradient check (tests/support/op_cases.c) on
 *     /gpu:0 against /cpu:0, forward and gradient, with no soft placement
 *     (so every op must have a GPU kernel);
 *   - a training step of fmnist_cnn with each optimizer, GPU against CPU,
 *     and with TF32 and bf16 arithmetic against fp32;
 *   - the allocator's limit on a real GPU, out of memory and recovery;
 *   - two sessions at per_process_gpu_memory_fraction 0.4 both run and a
 *     third fails clearly;
 *   - visible_device_list "1,0" swaps two GPUs, and a bad list is an error;
 *   - a run stages the next run's input on the GPU under its own kernels;
 *     a feed in the session's pinned memory is copied in from where it is;
 *   - towers on 2 virtual GPUs split from one (replicated with the
 *     collective all-reduce, and parameter server on /cpu:0) against one
 *     device, and on 2 physical GPUs when the machine has them;
 *   - gradient compression's packing and unpacking (bf16, fp16, onebit
 *     with its residual) against the naive loops, bit for bit.
 * tests/gpu/emulator runs them without a GPU as test_gpu_emulated.
 * CTOWER_TEST_FILTER=PATTERN runs only the tests whose names match it
 * (cmocka's wildcards: "test_towers_*"). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compress_reference.h"
#include "op_cases.h"
#ifdef CT_GPU_EMULATED
#include "emulator_counts.h"
#include "emulator_faults.h"
#endif

/* Differences of fp32 results computed by other kernels in another order. */
static const double TOLERANCE = 1e-4;

typedef struct case_values {
  ct_tensor *y;
  ct_tensor *grads[CT_CASE_MAX_INPUTS];
} case_values;

/* Runs op case c with every node under `device`; fetches y and the
 * gradient of sum(y * R) with respect to each input. */
static void run_case(const op_case *c, const char *device, case_values *out) {
  ct_status st = CT_STATUS_INIT;
  ct_graph *g = ct_graph_new();
  ct_graph_push_device(g, device);
  op_case_graph built;
  ct_op_case_build(c, g, &built);
  ct_output y = built.y;
  ct_output grads[CT_CASE_MAX_INPUTS];
  assert_int_equal(ct_gradients(g, built.loss, c->n_inputs, built.x, grads), 0);
  ct_graph_pop_device(g);
  assert_status_ok(ct_graph_status(g));

  ct_session_options so;
  ct_session_options_defaults(&so);
  so.allow_soft_placement = 0; /* every op of the case must run on `device` */
  /* without growth each of these ~70 sessions would reserve (cudaMalloc) and
   * free nearly the whole GPU; the memory test covers that path */
  so.gpu_options.allow_growth = 1;
  ct_session *s = ct_session_new(g, &so, &st);
  assert_status_ok(&st);
  ct_session_set_step(s, 7);
  ct_output fetches[1 + CT_CASE_MAX_INPUTS] = {y};
  int n_fetches = 1;
  for (int i = 0; i < c->n_inputs; ++i)
    if (grads[i].node) fetches[n_fetches++] = grads[i];
  ct_tensor *results[1 + CT_CASE_MAX_INPUTS] = {NULL};
  ct_session_run(s, built.feeds, c->n_inputs, fetches, n_fetches, NULL, 0, results, &st);
  if (st.code != CT_OK) fail_msg("%s on %s: %s", c->name, device, st.message);
  out->y = results[0];
  for (int i = 0, f = 1; i < c->n_inputs; ++i) out->grads[i] = grads[i].node ? results[f++] : NULL;
  ct_op_case_graph_free(&built, c->n_inputs);
  ct_session_free(s);
  ct_graph_free(g);
}

static double max_diff(const ct_tensor *a, const ct_tensor *b) {
  assert_int_equal(ct_tensor_elements(a), ct_tensor_elements(b));
  return ct_test_max_rel_diff(ct_tensor_f32(a), ct_tensor_f32(b), ct_tensor_elements(a));
}

static void test_every_op_matches_the_cpu(void **state) {
  (void)state;
  int n_cases;
  const op_case *cases = ct_op_cases(&n_cases);
  for (int k = 0; k < n_cases; ++k) {
    const op_case *c = &cases[k];
    case_values cpu, gpu;
    run_case(c, "/cpu:0", &cpu);
    run_case(c, "/gpu:0", &gpu);
    double forward = max_diff(gpu.y, cpu.y), backward = 0;
    for (int i = 0; i < c->n_inputs; ++i) {
      if (!cpu.grads[i]) continue;
      double d = max_diff(gpu.grads[i], cpu.grads[i]);
      if (d > backward) backward = d;
    }
    printf("  %-22s forward %.2e  gradient %.2e\n", c->name, forward, backward);
    if (forward > TOLERANCE || backward > TOLERANCE)
      fail_msg("%s: the GPU differs from the CPU by %.2e (forward) / %.2e (gradient)", c->name,
               forward, backward);
    ct_tensor_free(cpu.y);
    ct_tensor_free(gpu.y);
    for (int i = 0; i < c->n_inputs; ++i) {
      ct_tensor_free(cpu.grads[i]);
      ct_tensor_free(gpu.grads[i]);
    }
  }
}

#ifdef CT_GPU_EMULATED
/* Without cuDNN, ops that need none (matmul: cuBLAS) run on the GPU, and a
 * convolution fails saying that it needs cuDNN and where it was looked for. */
static void test_without_cudnn_only_convolutions_fail(void **state) {
  (void)state;
  emu_library_missing("cudnn", 1);
  ct_graph *g = ct_graph_new();
  ct_graph_push_device(g, "/gpu:0");
  ct_output a = ct_placeholder(g, "a", CT_F32, ct_shape_of(2, (int64_t)2, (int64_t)2));
  ct_output product = ct_matmul(g, a, a, 0, 0);
  ct_output x = ct_placeholder(g, "x", CT_F32,
                               ct_shape_of(4, (int64_t)1, (int64_t)2, (int64_t)2, (int64_t)1));
  ct_output conv = ct_conv2d(g, x, ct_reshape(g, a, ct_shape_of(4, (int64_t)2, (int64_t)2,
                                                                (int64_t)1, (int64_t)1)),
                             1, 1, CT_PADDING_SAME);
  ct_graph_pop_device(g);
  assert_status_ok(ct_graph_status(g));
  ct_session_options so;
  ct_session_options_defaults(&so);
  so.allow_soft_placement = 0;
  so.gpu_options.allow_growth = 1;
  ct_status st = CT_STATUS_INIT;
  ct_session *s = ct_session_new(g, &so, &st); /* no cuDNN needed to start */
  assert_status_ok(&st);
  float values[4] = {1, 2, 3, 4};
  ct_tensor at = {CT_F32, ct_shape_of(2, (int64_t)2, (int64_t)2), values, 0};
  ct_tensor xt = {CT_F32, ct_shape_of(4, (int64_t)1, (int64_t)2, (int64_t)2, (int64_t)1), values, 0};
  ct_feed feeds[2] = {{a, &at}, {x, &xt}};
  ct_tensor *out = NULL;
  assert_int_equal(ct_session_run(s, feeds, 1, &product, 1, NULL, 0, &out, &st), 0);
  assert_true(ct_tensor_f32(out)[0] == 7 && ct_tensor_f32(out)[3] == 22);
  ct_tensor_free(out);
  out = NULL;
  assert_int_not_equal(ct_session_run(s, feeds, 2, &conv, 1, NULL, 0, &out, &st), 0);
  emu_library_missing("cudnn", 0);
  printf("  %s\n", st.message);
  assert_int_equal(st.code, CT_UNAVAILABLE);
  assert_non_null(strstr(st.message, "Conv2D needs cuDNN, but libcudnn.so.9 was not found: looked in"));
  assert_non_null(strstr(st.message, "CTOWER_CUDA_LIBRARY_PATH"));
  ct_session_free(s);
  ct_graph_free(g);
}

#endif

/* ---- training steps ------------------------------------------------------------ */

enum { BATCH = 24, STEPS = 3, MAX_FLOATS = 4 << 20 };

typedef struct train_setup {
  const char *model;
  int n_towers;
  const char *devices[4];
  ct_variable_update update;
  ct_all_reduce_algorithm reduce;
  ct_optimizer_kind optimizer;
  int virtual_gpus;        /* split /gpu:0 into this many logical GPUs (0: none) */
  ct_precision precision;  /* of the GPUs' matmuls and convolutions */
  ct_compression compression; /* with resolve */
  int resolve;             /* towers from ct_towers_resolve: devices as listed, the
                              all-reduce as requested, the compression; else update and
                              reduce as given */
  ct_all_reduce_request request; /* with resolve */
} train_setup;

/* The towers t asks for, as ct_towers_resolve makes them on a session of
 * options so. */
static void resolve_towers(const train_setup *t, const ct_session_options *so,
                           ct_tower_options *o) {
  ct_tower_request r;
  ct_tower_request_defaults(&r);
  r.n_listed = t->n_towers;
  for (int k = 0; k < t->n_towers; ++k) snprintf(r.listed[k], sizeof r.listed[k], "%s", t->devices[k]);
  r.compression = t->compression;
  r.all_reduce = t->request;
  ct_status st = CT_STATUS_INIT;
  assert_int_equal(ct_towers_resolve(&r, so, o, &st), 0);
}

/* Every replicated copy (tower_k/<name>) of every variable equals its
 * original bitwise. */
static void assert_copies_equal(ct_session *s, const ct_graph *g) {
  ct_status st = CT_STATUS_INIT;
  for (int v = 0; v < ct_graph_variable_count(g); ++v) {
    const char *name = ct_graph_variable_name(g, v);
    if (strncmp(name, "tower_", 6) != 0 || ct_variable_is_original(g, v)) continue;
    const char *original_name = strchr(name, '/') + 1;
    int original = -1;
    for (int u = 0; u < ct_graph_variable_count(g); ++u)
      if (strcmp(ct_graph_variable_name(g, u), original_name) == 0) original = u;
    assert_true(original >= 0);
    ct_tensor *a = ct_session_read_variable(s, v, &st), *b = ct_session_read_variable(s, original, &st);
    assert_status_ok(&st);
    if (memcmp(a->data, b->data, (size_t)ct_tensor_elements(a) * sizeof(float)) != 0)
      fail_msg("%s differs from %s", name, original_name);
    ct_tensor_free(a);
    ct_tensor_free(b);
  }
}

/* Trains STEPS steps on fixed batches; returns the trainable originals'
 * values, concatenated (the caller frees), and their count. On the
 * emulator, hot_path_counts (when not NULL) receives its counts over the
 * steps after the first. */
static float *train(const train_setup *t, int64_t *n_out, long *hot_path_counts) {
  ct_session_options so;
  ct_session_options_defaults(&so);
  so.allow_soft_placement = 0;
  so.precision = t->precision;
  if (t->virtual_gpus) {
    so.gpu_options.n_virtual_devices = t->virtual_gpus;
    for (int v = 0; v < t->virtual_gpus; ++v) so.gpu_options.virtual_devices_mb[v] = 2048;
  }
  ct_graph *g = ct_graph_new();
  ct_graph_set_seed(g, 5);
  ct_tower_options o;
  memset(&o, 0, sizeof o);
  if (t->resolve) {
    resolve_towers(t, &so, &o);
  } else {
    o.n_towers = t->n_towers;
    for (int k = 0; k < t->n_towers; ++k) snprintf(o.devices[k], sizeof o.devices[k], "%s", t->devices[k]);
    o.variable_update = t->update;
    snprintf(o.ps_device, sizeof o.ps_device, "/cpu:0");
    o.all_reduce = t->reduce;
  }
  ct_optimizer_config oc;
  ct_optimizer_config_defaults(&oc, t->optimizer);
  /* With the default epsilon (1e-8), Adam's first steps move a weight by a
   * few lr whatever its gradient's size, so a near-0 gradient whose sign
   * differs with the kernels' rounding sets the runs lr apart (1 vs 2 CPU
   * towers already differ by 5e-4). This epsilon keeps tiny gradients'
   * steps tiny, and the comparison meaningful. */
  if (t->optimizer == CT_OPTIMIZER_ADAM) oc.epsilon = 1e-3f;
  ct_classifier_towers towers;
  ct_classifier_towers_build(g, ct_model_find(t->model), 28, 28, 1, 10, &o, &oc, &towers);
  assert_status_ok(ct_graph_status(g));
  ct_status st = CT_STATUS_INIT;
  ct_session *s = ct_session_new(g, &so, &st);
  assert_status_ok(&st);
#ifdef CT_GPU_EMULATED
  long hot_path_start[EMU_COUNT_KINDS];
#else
  (void)hot_path_counts;
#endif
  for (int step = 0; step < STEPS; ++step) {
    if (ct_test_tower_step(s, &towers, step, BATCH, NULL, 0.01f, &st))
      fail_msg("%s step %d: %s", t->model, step, st.message);
#ifdef CT_GPU_EMULATED
    /* the first step sets up (variables, buffers, algorithms); the later
     * ones are the hot path */
    for (int k = 0; k < EMU_COUNT_KINDS && hot_path_counts; ++k) {
      if (step == 0) hot_path_start[k] = emu_count((emu_count_kind)k);
      if (step == STEPS - 1) hot_path_counts[k] = emu_count((emu_count_kind)k) - hot_path_start[k];
    }
#endif
  }
  assert_copies_equal(s, g);
  float *out = malloc(MAX_FLOATS * sizeof *out);
  int64_t offset = 0;
  for (int v = 0; v < ct_graph_variable_count(g); ++v) {
    if (!ct_graph_variable_trainable(g, v) || !ct_variable_is_original(g, v)) continue;
    ct_tensor *value = ct_session_read_variable(s, v, &st);
    assert_status_ok(&st);
    int64_t n = ct_tensor_elements(value);
    assert_true(offset + n <= MAX_FLOATS);
    memcpy(out + offset, value->data, (size_t)n * sizeof(float));
    offset += n;
    ct_tensor_free(value);
  }
  *n_out = offset;
  ct_session_free(s);
  ct_classifier_towers_free(&towers);
  ct_graph_free(g);
  return out;
}

static double compare_runs(const train_setup *a, const train_setup *b) {
  int64_t na, nb;
  float *wa = train(a, &na, NULL), *wb = train(b, &nb, NULL);
  assert_int_equal(na, nb);
  double d = ct_test_max_rel_diff(wa, wb, na);
  free(wa);
  free(wb);
  return d;
}

static void test_training_steps_match_the_cpu(void **state) {
  (void)state;
  const ct_optimizer_kind kinds[] = {CT_OPTIMIZER_SGD, CT_OPTIMIZER_MOMENTUM, CT_OPTIMIZER_ADAM};
  const char *names[] = {"sgd", "momentum", "adam"};
  for (int k = 0; k < 3; ++k) {
    train_setup cpu = {"fmnist_cnn", 1, {"/cpu:0"}, CT_VARIABLE_UPDATE_REPLICATED,
                       CT_ALL_REDUCE_RING, kinds[k], 0, CT_PRECISION_FP32, CT_COMPRESSION_NONE, 0, CT_ALL_REDUCE_REQUEST_AUTO};
    train_setup gpu = cpu;
    gpu.devices[0] = "/gpu:0";
    double d = compare_runs(&gpu, &cpu);
    printf("  fmnist_cnn, %-8s %d steps: GPU vs CPU weights differ by %.2e\n", names[k], STEPS, d);
    assert_true(d <= TOLERANCE);
  }
}

/* TF32 and bf16 arithmetic in matmuls and convolutions: the weights move
 * off the fp32 run's (so the precision is in effect), but stay close. */
static void test_reduced_precision_tracks_fp32(void **state) {
  (void)state;
  const ct_precision precisions[] = {CT_PRECISION_TF32, CT_PRECISION_BF16};
  const char *names[] = {"tf32", "bf16"};
  train_setup fp32 = {"fmnist_cnn", 1, {"/gpu:0"}, CT_VARIABLE_UPDATE_REPLICATED,
                      CT_ALL_REDUCE_RING, CT_OPTIMIZER_MOMENTUM, 0, CT_PRECISION_FP32, CT_COMPRESSION_NONE, 0, CT_ALL_REDUCE_REQUEST_AUTO};
  for (int k = 0; k < 2; ++k) {
    train_setup reduced = fp32;
    reduced.precision = precisions[k];
    double d = compare_runs(&reduced, &fp32);
    printf("  fmnist_cnn, %s %d steps: weights differ from fp32 by %.2e\n", names[k], STEPS, d);
    assert_true(d > 0);
    assert_true(d <= 1e-3);
  }
}

static void test_towers_on_two_virtual_gpus(void **state) {
  (void)state;
  train_setup one = {"fmnist_cnn", 1, {"/gpu:0"}, CT_VARIABLE_UPDATE_REPLICATED,
                     CT_ALL_REDUCE_RING, CT_OPTIMIZER_MOMENTUM, 2, CT_PRECISION_FP32, CT_COMPRESSION_NONE, 0, CT_ALL_REDUCE_REQUEST_AUTO};
  train_setup collective = one, ps = one;
  collective.n_towers = ps.n_towers = 2;
  collective.devices[1] = ps.devices[1] = "/gpu:1";
  collective.reduce = CT_ALL_REDUCE_COLLECTIVE;
  ps.update = CT_VARIABLE_UPDATE_PARAMETER_SERVER;
  double dc = compare_runs(&collective, &one), dp = compare_runs(&ps, &one);
  printf("  2 virtual GPUs, replicated (collective): %.2e from 1 device\n", dc);
  printf("  2 virtual GPUs, parameter server on /cpu:0: %.2e from 1 device\n", dp);
  assert_true(dc <= 1e-5);
  assert_true(dp <= 1e-5);
}

#ifdef CT_GPU_EMULATED
/* An NCCL call that fails says what NCCL itself said (ncclGetLastError). */
static void test_nccl_errors_carry_nccls_text(void **state) {
  (void)state;
  ct_graph *g = ct_graph_new();
  ct_graph_set_seed(g, 5);
  ct_tower_options o;
  memset(&o, 0, sizeof o);
  o.n_towers = 2;
  snprintf(o.devices[0], sizeof o.devices[0], "/gpu:0");
  snprintf(o.devices[1], sizeof o.devices[1], "/gpu:1");
  o.variable_update = CT_VARIABLE_UPDATE_REPLICATED;
  o.all_reduce = CT_ALL_REDUCE_COLLECTIVE;
  ct_optimizer_config oc;
  ct_optimizer_config_defaults(&oc, CT_OPTIMIZER_SGD);
  ct_classifier_towers towers;
  ct_classifier_towers_build(g, ct_model_find("mlp"), 28, 28, 1, 10, &o, &oc, &towers);
  assert_status_ok(ct_graph_status(g));
  ct_session_options so;
  ct_session_options_defaults(&so);
  so.allow_soft_placement = 0;
  so.gpu_options.n_virtual_devices = 2;
  so.gpu_options.virtual_devices_mb[0] = so.gpu_options.virtual_devices_mb[1] = 1024;
  ct_status st = CT_STATUS_INIT;
  ct_session *s = ct_session_new(g, &so, &st);
  assert_status_ok(&st);
  emu_nccl_fail_next_init("socket.cc:45 connect to 10.0.0.2<4242> failed: Connection refused");
  assert_int_not_equal(ct_test_tower_step(s, &towers, 0, 8, NULL, 0.01f, &st), 0);
  printf("  %s\n", st.message);
  assert_non_null(strstr(st.message, ": NCCL error unhandled system error"));
  assert_non_null(strstr(st.message, "connect to 10.0.0.2<4242> failed: Connection refused"));
  ct_session_free(s);
  ct_classifier_towers_free(&towers);
  ct_graph_free(g);
}
#endif

#ifdef CT_GPU_EMULATED
/* "No host syncs on the hot path": after its first step, a training step of
 * 2 towers on 2 virtual GPUs (collective all-reduce) queues its work on the
 * GPUs' streams and waits for it only at the run's end (each GPU's compute,
 * copy and communication stream); it takes no GPU memory from CUDA, and
 * creates no event (the ordering events are reused). Only a pinned staging
 * buffer may still be added, with its event, when the GPU lags behind the
 * host so that every buffer is still being read (staging.c). */
static void test_training_steps_wait_only_at_the_end(void **state) {
  (void)state;
  long counts[EMU_COUNT_KINDS] = {0};
  train_setup towers = {"fmnist_cnn", 2, {"/gpu:0", "/gpu:1"}, CT_VARIABLE_UPDATE_REPLICATED,
                        CT_ALL_REDUCE_COLLECTIVE, CT_OPTIMIZER_MOMENTUM, 2, CT_PRECISION_FP32, CT_COMPRESSION_NONE, 0, CT_ALL_REDUCE_REQUEST_AUTO};
  int64_t n;
  free(train(&towers, &n, counts));
  const int steps = STEPS - 1, gpus = 2;
  printf("  a step on 2 virtual GPUs: %.1f host waits, %.1f cudaMalloc, %.1f cudaHostAlloc, "
         "%.1f events created, %.1f stream tasks\n",
         (double)counts[EMU_HOST_WAITS] / steps, (double)counts[EMU_DEVICE_ALLOCATIONS] / steps,
         (double)counts[EMU_PINNED_ALLOCATIONS] / steps,
         (double)counts[EMU_EVENTS_CREATED] / steps, (double)counts[EMU_STREAM_TASKS] / steps);
  assert_true(counts[EMU_HOST_WAITS] <= 3L * gpus * steps);
  assert_int_equal(counts[EMU_DEVICE_ALLOCATIONS], 0);
  assert_int_equal(counts[EMU_EVENTS_CREATED], counts[EMU_PINNED_ALLOCATIONS]);
}
#endif

/* ---- inputs staged one run ahead ------------------------------------------------- */

enum { STAGED_ROWS = 128, STAGED_COLS = 256, STAGED_LAYERS = 8, STAGED_RUNS = 4 };

/* A chain of dense layers on /gpu:0 over an input fed from host memory:
 * enough kernels that a run's compute outlasts its input's copy. */
typedef struct staged_graph {
  ct_graph *graph;
  ct_output x, loss;
  ct_tensor *weights;
} staged_graph;

static staged_graph staged_graph_build(void) {
  staged_graph sg;
  sg.graph = ct_graph_new();
  const ct_shape square = ct_shape_of(2, (int64_t)STAGED_COLS, (int64_t)STAGED_COLS);
  sg.weights = ct_tensor_new(CT_F32, &square, NULL);
  float *w = ct_tensor_f32(sg.weights);
  for (int i = 0; i < STAGED_COLS * STAGED_COLS; ++i) w[i] = (float)((i * 7919) % 61 - 30) / 1000.0f;
  ct_graph_push_device(sg.graph, "/gpu:0");
  sg.x = ct_placeholder(sg.graph, "x", CT_F32, ct_shape_of(2, (int64_t)STAGED_ROWS, (int64_t)STAGED_COLS));
  ct_output h = sg.x, wc = ct_constant(sg.graph, "w", sg.weights);
  for (int l = 0; l < STAGED_LAYERS; ++l) h = ct_tanh(sg.graph, ct_matmul(sg.graph, h, wc, 0, 0));
  sg.loss = ct_reduce_sum(sg.graph, h, 3u, 0);
  ct_graph_pop_device(sg.graph);
  assert_status_ok(ct_graph_status(sg.graph));
  return sg;
}

static void staged_graph_free(staged_graph *sg) {
  ct_tensor_free(sg->weights);
  ct_graph_free(sg->graph);
}

/* The timeline's events named `name` on device `device`: how many, and
 * the earliest start. */
static int timeline_find(const ct_run_metadata *m, const char *name, double *start) {
  int found = 0;
  for (int i = 0; i < ct_run_metadata_event_count(m); ++i) {
    ct_timeline_event e = ct_run_metadata_event(m, i);
    if (strcmp(e.node, name) != 0) continue;
    if (!found || e.start_us < *start) *start = e.start_us;
    ++found;
  }
  return found;
}

/* The latest end of the timeline's compute events. */
static double timeline_compute_end(const ct_run_metadata *m) {
  double end = 0;
  for (int i = 0; i < ct_run_metadata_event_count(m); ++i) {
    ct_timeline_event e = ct_run_metadata_event(m, i);
    if (e.kind == CT_TIMELINE_COMPUTE && e.end_us > end) end = e.end_us;
  }
  return end;
}

/* TensorFlow's StagingArea (ct_session_run_staged): each run copies the
 * next run's input onto the GPU beside its own kernels (its "_Stage/x"
 * event starts before the run's last kernel ends); the next run takes the staged value instead of
 * copying ("_Unstage/x", no "_Copy/x"); each run computes exactly what a run without
 * staging computes. A run whose feed is other memory, and a run after
 * another plan's, drop what was staged and copy. */
static void test_staged_inputs_copy_under_the_last_run(void **state) {
  (void)state;
  staged_graph sg = staged_graph_build();
  ct_session_options so;
  ct_session_options_defaults(&so);
  so.allow_soft_placement = 0;
  so.gpu_options.allow_growth = 1;
  ct_status st = CT_STATUS_INIT;
  ct_session *s = ct_session_new(sg.graph, &so, &st);
  assert_status_ok(&st);
  ct_tensor *batches[STAGED_RUNS + 1];
  float expected[STAGED_RUNS + 1];
  for (int b = 0; b <= STAGED_RUNS; ++b) {
    const ct_shape rows = ct_shape_of(2, (int64_t)STAGED_ROWS, (int64_t)STAGED_COLS);
    batches[b] = ct_tensor_new(CT_F32, &rows, NULL);
    float *x = ct_tensor_f32(batches[b]);
    for (int i = 0; i < STAGED_ROWS * STAGED_COLS; ++i) x[i] = (float)((i + 31 * b) % 17) / 17.0f;
    ct_feed feed = {sg.x, batches[b]};
    ct_tensor *out = NULL;
    assert_int_equal(ct_session_run(s, &feed, 1, &sg.loss, 1, NULL, 0, &out, &st), 0);
    expected[b] = ct_tensor_f32(out)[0];
    ct_tensor_free(out);
  }
  ct_run_metadata *m = ct_run_metadata_new();
  for (int b = 0; b < STAGED_RUNS; ++b) {
    ct_feed feed = {sg.x, batches[b]}, next = {sg.x, batches[b + 1]};
    ct_tensor *out = NULL;
    /* the last one runs without a next: it takes what its predecessor staged */
    const int last = b == STAGED_RUNS - 1;
    assert_int_equal(ct_session_run_staged(s, &feed, last ? NULL : &next, 1, &sg.loss, 1, NULL, 0,
                                           &out, m, &st), 0);
    assert_status_ok(&st);
    assert_true(ct_tensor_f32(out)[0] == expected[b]);
    ct_tensor_free(out);
    double stage_start = 0, copy_start = 0;
    const int staged = timeline_find(m, "_Stage/x", &stage_start);
    const int copied = timeline_find(m, "_Copy/x", &copy_start);
    const int unstaged = timeline_find(m, "_Unstage/x", &copy_start);
    const double compute_end = timeline_compute_end(m);
    printf("  run %d: %d copy ahead (at %.0f us; the last kernel ends at %.0f us), %d copy, %d "
           "taken from the last run\n",
           b, staged, stage_start, compute_end, copied, unstaged);
    assert_int_equal(staged, last ? 0 : 1);
    assert_int_equal(copied, b == 0 ? 1 : 0); /* the first run has nothing staged */
    assert_int_equal(unstaged, b == 0 ? 0 : 1);
    /* it waits for the run's first kernel, not for its last */
    if (!last) assert_true(stage_start < compute_end);
  }
  /* staged for batch 1, then fed batch 0: other memory, so it copies */
  ct_feed feed0 = {sg.x, batches[0]}, next1 = {sg.x, batches[1]};
  ct_tensor *out = NULL;
  assert_int_equal(
      ct_session_run_staged(s, &feed0, &next1, 1, &sg.loss, 1, NULL, 0, &out, NULL, &st), 0);
  ct_tensor_free(out);
  assert_int_equal(ct_session_run_traced(s, &feed0, 1, &sg.loss, 1, NULL, 0, &out, m, &st), 0);
  double start = 0;
  assert_int_equal(timeline_find(m, "_Copy/x", &start), 1);
  assert_true(ct_tensor_f32(out)[0] == expected[0]);
  ct_tensor_free(out);
  /* next feeds for other outputs than the feeds' are refused, named */
  ct_feed wrong = {sg.loss, batches[1]};
  assert_int_equal(
      ct_session_run_staged(s, &feed0, &wrong, 1, &sg.loss, 1, NULL, 0, &out, NULL, &st), 1);
  assert_int_equal(st.code, CT_INVALID_ARGUMENT);
  printf("  %s\n", st.message);
  ct_run_metadata_free(m);
  for (int b = 0; b <= STAGED_RUNS; ++b) ct_tensor_free(batches[b]);
  ct_session_free(s);
  staged_graph_free(&sg);
}

/* tanh(x) summed on /gpu:0, x fed from `memory` (NULL: a tensor of its own),
 * in a session of its own; counts the pinned allocations the run made. */
static float sum_tanh_fed_from(int use_session_memory, long *pinned_allocations) {
  ct_graph *g = ct_graph_new();
  ct_graph_push_device(g, "/gpu:0");
  const ct_shape shape = ct_shape_of(2, (int64_t)STAGED_ROWS, (int64_t)STAGED_COLS);
  ct_output x = ct_placeholder(g, "x", CT_F32, shape);
  ct_output loss = ct_reduce_sum(g, ct_tanh(g, x), 3u, 0);
  ct_graph_pop_device(g);
  ct_session_options so;
  ct_session_options_defaults(&so);
  so.gpu_options.allow_growth = 1;
  ct_status st = CT_STATUS_INIT;
  ct_session *s = ct_session_new(g, &so, &st);
  assert_status_ok(&st);
  ct_host_memory memory = {NULL, NULL, NULL};
  assert_int_equal(ct_session_host_memory(s, &memory), 1);
  ct_tensor value = {CT_F32, shape, NULL, 0};
  const size_t nbytes = ct_tensor_nbytes(&value);
  value.data = use_session_memory ? memory.alloc(nbytes, memory.context) : malloc(nbytes);
  assert_non_null(value.data);
  for (int i = 0; i < STAGED_ROWS * STAGED_COLS; ++i) ((float *)value.data)[i] = (float)(i % 13) / 13.0f;
  ct_feed feed = {x, &value};
  ct_tensor *out = NULL;
#ifdef CT_GPU_EMULATED
  const long before = emu_count(EMU_PINNED_ALLOCATIONS);
#endif
  assert_int_equal(ct_session_run(s, &feed, 1, &loss, 1, NULL, 0, &out, &st), 0);
#ifdef CT_GPU_EMULATED
  *pinned_allocations = emu_count(EMU_PINNED_ALLOCATIONS) - before;
#else
  *pinned_allocations = -1;
#endif
  const float sum = ct_tensor_f32(out)[0];
  ct_tensor_free(out);
  if (use_session_memory)
    memory.free(value.data, nbytes, memory.context);
  else
    free(value.data);
  ct_session_free(s);
  ct_graph_free(g);
  return sum;
}

/* A session with a GPU offers pinned host memory (ct_session_host_memory,
 * where the trainer's input pipeline keeps its batches): a feed that lives
 * there goes to the GPU from where it is, with no staging buffer of its
 * own (on the emulator, which counts them), and the same result. */
static void test_feeds_in_pinned_memory_copy_in_place(void **state) {
  (void)state;
  long pageable_allocations, pinned_allocations;
  const float pageable = sum_tanh_fed_from(0, &pageable_allocations);
  const float pinned = sum_tanh_fed_from(1, &pinned_allocations);
  printf("  pinned allocations in a run fed from malloc: %ld, from the session's memory: %ld\n",
         pageable_allocations, pinned_allocations);
  assert_true(pageable == pinned);
#ifdef CT_GPU_EMULATED
  assert_int_equal(pageable_allocations, 1); /* the feed's staging buffer */
  assert_int_equal(pinned_allocations, 0);
#endif
}

/* ---- memory ------------------------------------------------------------------- */

/* y = x + x on /gpu:0 for an x of n floats. */
/* Skips the calling test on a machine with fewer than two GPUs. */
static void skip_unless_two_gpus(void) {
  ct_session_options so;
  ct_session_options_defaults(&so);
  if (ct_device_count(&so, CT_DEVICE_KIND_GPU) < 2) {
    printf("  one GPU: nothing to test\n");
    skip();
  }
}

/* Towers on two physical GPUs (NCCL between them), alone and split into
 * 2 virtual GPUs each (sums on each GPU, then NCCL), when there are two. */
static void test_towers_on_two_physical_gpus(void **state) {
  (void)state;
  skip_unless_two_gpus();
  train_setup one = {"fmnist_cnn", 1, {"/gpu:0"}, CT_VARIABLE_UPDATE_REPLICATED,
                     CT_ALL_REDUCE_RING, CT_OPTIMIZER_MOMENTUM, 0, CT_PRECISION_FP32, CT_COMPRESSION_NONE, 0, CT_ALL_REDUCE_REQUEST_AUTO};
  train_setup two = one;
  two.n_towers = 2;
  two.devices[1] = "/gpu:1";
  two.reduce = CT_ALL_REDUCE_COLLECTIVE;
  train_setup four = two; /* /gpu:0 and /gpu:1 on the first GPU, 2 and 3 on the second */
  four.n_towers = 4;
  four.devices[2] = "/gpu:2";
  four.devices[3] = "/gpu:3";
  four.virtual_gpus = 2;
  double d2 = compare_runs(&two, &one), d4 = compare_runs(&four, &one);
  printf("  2 GPUs, replicated (collective): %.2e from 1 device\n", d2);
  printf("  2 GPUs x 2 virtual, replicated (collective): %.2e from 1 device\n", d4);
  assert_true(d2 <= 1e-5);
  assert_true(d4 <= 1e-5);
}

/* The nodes of op `op` in a graph, those asked of `device` (a prefix of
 * their requested device; NULL: all of them). */
static int nodes_of(const ct_graph *g, const char *op, const char *device) {
  int count = 0;
  for (int i = 0; i < ct_graph_node_count(g); ++i) {
    const ct_node *node = ct_graph_node(g, i);
    count += strcmp(ct_node_op(node), op) == 0 &&
             (device == NULL || strncmp(ct_node_requested_device(node), device, strlen(device)) == 0);
  }
  return count;
}

/* The graph of mlp's towers on t's devices, resolved with t's compression
 * and all-reduce: the nodes of `op` asked of `device` (nodes_of), and the
 * all-reduce it took. */
static int towers_nodes_of(const train_setup *t, const char *op, const char *device,
                           ct_all_reduce_algorithm *reduce) {
  ct_session_options so;
  ct_session_options_defaults(&so);
  so.gpu_options.n_virtual_devices = t->virtual_gpus;
  so.device_count_cpu = 2; /* room for towers on /cpu:0 and /cpu:1 */
  ct_tower_options o;
  resolve_towers(t, &so, &o);
  *reduce = o.all_reduce;
  ct_graph *g = ct_graph_new();
  ct_optimizer_config oc;
  ct_optimizer_config_defaults(&oc, CT_OPTIMIZER_SGD);
  ct_classifier_towers towers;
  ct_classifier_towers_build(g, ct_model_find("mlp"), 28, 28, 1, 10, &o, &oc, &towers);
  assert_status_ok(ct_graph_status(g));
  const int count = nodes_of(g, op, device);
  ct_classifier_towers_free(&towers);
  ct_graph_free(g);
  return count;
}

/* The packings of the all-reduce of t's towers (CompressGradient nodes),
 * each on a GPU. */
static int packings_of(const train_setup *t, ct_all_reduce_algorithm *reduce) {
  const int packings = towers_nodes_of(t, "CompressGradient", NULL, reduce);
  assert_int_equal(towers_nodes_of(t, "CompressGradient", "/gpu:", reduce), packings);
  return packings;
}

/* devices.compression between the towers of one process: the ring packs
 * the sums that leave a GPU for another memory (the partial sum from
 * /gpu:0 to /gpu:1, the sum back; onebit with a residual for each), and
 * every tower reads one unpacked sum, so the copies stay bitwise equal
 * (train checks). Virtual GPUs of one card share its memory, and a GPU
 * beside a CPU packs only what leaves the GPU. */
static void test_compression_between_gpus(void **state) {
  (void)state;
  skip_unless_two_gpus();
  train_setup exact = {"fmnist_cnn", 2, {"/gpu:0", "/gpu:1"}, CT_VARIABLE_UPDATE_REPLICATED,
                       CT_ALL_REDUCE_RING, CT_OPTIMIZER_MOMENTUM, 0, CT_PRECISION_FP32,
                       CT_COMPRESSION_NONE, 1, CT_ALL_REDUCE_REQUEST_AUTO};
  const ct_compression kinds[] = {CT_COMPRESSION_BF16, CT_COMPRESSION_FP16, CT_COMPRESSION_ONEBIT};
  int packings_two_gpus = 0;
  for (int k = 0; k < 3; ++k) {
    train_setup packed = exact;
    packed.compression = kinds[k];
    ct_all_reduce_algorithm reduce;
    const int packings = packings_of(&packed, &reduce);
    assert_int_equal(reduce, CT_ALL_REDUCE_RING); /* auto: a ring, so that it applies */
    assert_true(packings > 0);
    packings_two_gpus = packings;
    const double d = compare_runs(&packed, &exact);
    printf("  2 GPUs, %-6s: %d packings, weights %.2e from exact\n",
           ct_compression_name(kinds[k]), packings, d);
    assert_true(d > 0);
    assert_true(d <= (kinds[k] == CT_COMPRESSION_ONEBIT ? 1.0 : 1e-2));
  }
  /* two virtual GPUs on one card: nothing leaves it, nothing is packed */
  train_setup one_card = exact;
  one_card.virtual_gpus = 2;
  one_card.compression = CT_COMPRESSION_BF16;
  ct_all_reduce_algorithm reduce;
  assert_int_equal(packings_of(&one_card, &reduce), 0);
  assert_int_equal(reduce, CT_ALL_REDUCE_COLLECTIVE);
  /* a GPU and the host: a bucket's partial sum is packed on the GPU, but
   * the sum ends on the CPU, which sends it back exact: half the packings */
  train_setup beside_cpu = exact;
  beside_cpu.devices[1] = "/cpu:0";
  beside_cpu.compression = CT_COMPRESSION_FP16;
  assert_int_equal(packings_of(&beside_cpu, &reduce), packings_two_gpus / 2);
}

/* An exact ring between two GPUs, or a GPU and the host: each tower unpacks
 * the sum into its gradients itself (ConcatGrad beside it), so that they
 * do not cross again as slices of the first tower's; towers on CPU devices
 * share one unpack. The weights are those of one device. */
static void test_ring_sums_unpack_beside_each_tower(void **state) {
  (void)state;
  skip_unless_two_gpus();
  train_setup ring = {"fmnist_cnn", 2, {"/gpu:0", "/gpu:1"}, CT_VARIABLE_UPDATE_REPLICATED,
                      CT_ALL_REDUCE_RING, CT_OPTIMIZER_MOMENTUM, 0, CT_PRECISION_FP32,
                      CT_COMPRESSION_NONE, 1, CT_ALL_REDUCE_REQUEST_RING};
  ct_all_reduce_algorithm reduce;
  const char *const pairs[][2] = {{"/gpu:0", "/gpu:1"}, {"/gpu:0", "/cpu:0"}, {"/cpu:0", "/cpu:1"}};
  for (int p = 0; p < 3; ++p) {
    train_setup t = ring;
    t.devices[0] = pairs[p][0], t.devices[1] = pairs[p][1];
    const int first = towers_nodes_of(&t, "ConcatGrad", pairs[p][0], &reduce);
    const int second = towers_nodes_of(&t, "ConcatGrad", pairs[p][1], &reduce);
    printf("  %s and %s: %d unpacks beside the first tower, %d beside the second\n",
           pairs[p][0], pairs[p][1], first, second);
    assert_true(first > 0);
    assert_int_equal(second, p < 2 ? first : 0);
  }
  train_setup one = ring;
  one.n_towers = 1;
  one.resolve = 0;
  const double d = compare_runs(&ring, &one);
  printf("  2 GPUs, replicated (ring): %.2e from 1 device\n", d);
  assert_true(d <= 1e-5);
}

/* With a GPU, default placement puts ops on /gpu:0 (GPU before CPU), soft
 * placement sends an op asked of a missing GPU there too, and the placement
 * log says so. */
static void test_placement_prefers_the_gpu(void **state) {
  (void)state;
  ct_graph *g = ct_graph_new();
  ct_output x = ct_placeholder(g, "x", CT_F32, ct_shape_of(1, (int64_t)4));
  ct_graph_push_device(g, "/gpu:7");
  ct_output a = ct_neg(g, x);
  ct_graph_pop_device(g);
  ct_output b = ct_relu(g, a);
  ct_session_options so;
  ct_session_options_defaults(&so);
  so.gpu_options.allow_growth = 1;
  char *log_text = NULL;
  ct_session *s = ct_test_session_logging(g, so, &log_text);
  ct_status st = CT_STATUS_INIT;
  const char *gpu0 = "/job:localhost/replica:0/task:0/device:GPU:0";
  assert_string_equal(ct_session_node_device(s, a.node, &st), gpu0);
  assert_string_equal(ct_session_node_device(s, b.node, &st), gpu0);
  const char *expected[] = {
      "\nRelu: (Relu): /job:localhost/replica:0/task:0/device:GPU:0\n",
      "\nNeg: requested /device:GPU:7, which does not exist; placed on "
      "/job:localhost/replica:0/task:0/device:GPU:0 by allow_soft_placement\n",
  };
  ct_test_expect_substrings(log_text, expected, sizeof expected / sizeof expected[0]);
  float in[4] = {1, -2, 3, -4};
  ct_tensor xt = {CT_F32, ct_shape_of(1, (int64_t)4), in, 0};
  ct_feed feed = {x, &xt};
  ct_tensor *y = NULL;
  assert_int_equal(ct_session_run(s, &feed, 1, &b, 1, NULL, 0, &y, &st), 0);
  const float *v = ct_tensor_f32(y);
  assert_true(v[0] == 0 && v[1] == 2 && v[2] == 0 && v[3] == 4);
  free(log_text);
  ct_tensor_free(y);
  ct_session_free(s);
  ct_graph_free(g);
}

static int run_add(ct_session *s, ct_output x, ct_output y, int64_t n, ct_status *st) {
  ct_shape shape = ct_shape_of(1, n);
  ct_tensor *value = ct_tensor_new(CT_F32, &shape, st);
  ct_feed feed = {x, value};
  ct_tensor *out = NULL;
  int failed = ct_session_run(s, &feed, 1, &y, 1, NULL, 0, &out, st);
  ct_tensor_free(out);
  ct_tensor_free(value);
  return failed;
}

static void test_gpu_memory_limit_and_recovery(void **state) {
  (void)state;
  ct_graph *g = ct_graph_new();
  ct_graph_push_device(g, "/gpu:0");
  ct_output x = ct_placeholder(g, "x", CT_F32, ct_shape_of(1, (int64_t)-1));
  ct_output y = ct_add(g, ct_relu(g, x), x);
  ct_graph_pop_device(g);
  ct_session_options so;
  ct_session_options_defaults(&so);
  so.gpu_memory_limit = 64 << 20;
  ct_status st = CT_STATUS_INIT;
  ct_session *s = ct_session_new(g, &so, &st);
  assert_status_ok(&st);
  int gpu = ct_session_device_count(s) - 1;
  ct_memory_stats stats;
  ct_session_memory_stats(s, gpu, &stats);
  assert_int_equal(stats.limit, 64 << 20);
  assert_int_equal(stats.bytes_reserved, 64 << 20); /* no growth: reserved at the start */
  /* x's copy and relu(x) (the Add then runs in place on relu's buffer): two
   * buffers of just over 32 MiB do not fit in 64 MiB (two of exactly 32 MiB
   * would) */
  assert_int_not_equal(run_add(s, x, y, (8 << 20) + 1024, &st), 0);
  printf("  out of memory: %s\n", st.message);
  assert_int_equal(st.code, CT_RESOURCE_EXHAUSTED);
  assert_non_null(strstr(st.message, "GPU:0"));
  st = (ct_status)CT_STATUS_INIT;
  assert_int_equal(run_add(s, x, y, 1 << 20, &st), 0); /* the session goes on */
  ct_session_memory_stats(s, gpu, &stats);
  assert_true(stats.peak_bytes_in_use <= (size_t)64 << 20);
  ct_session_free(s);
  ct_graph_free(g);
}

static void test_two_sessions_at_fraction_0_4(void **state) {
  (void)state;
  ct_graph *g = ct_graph_new();
  ct_graph_push_device(g, "/gpu:0");
  ct_output x = ct_placeholder(g, "x", CT_F32, ct_shape_of(1, (int64_t)-1));
  ct_output y = ct_add(g, x, x);
  ct_graph_pop_device(g);
  ct_session_options so;
  ct_session_options_defaults(&so);
  so.gpu_options.per_process_gpu_memory_fraction = 0.4;
  ct_status st = CT_STATUS_INIT;
  ct_session *a = ct_session_new(g, &so, &st);
  assert_status_ok(&st);
  ct_session *b = ct_session_new(g, &so, &st);
  assert_status_ok(&st);
  assert_int_equal(run_add(a, x, y, 1 << 20, &st), 0);
  assert_int_equal(run_add(b, x, y, 1 << 20, &st), 0);
  ct_session *c = ct_session_new(g, &so, &st);
  printf("  a third session at 0.4: %s\n", st.message);
  assert_null(c);
  assert_int_equal(st.code, CT_RESOURCE_EXHAUSTED);
  assert_non_null(strstr(st.message, "per_process_gpu_memory_fraction"));
  ct_session_free(b);
  ct_session_free(a);
  ct_graph_free(g);
}

/* visible_device_list "1,0" makes CUDA device 1 /gpu:0 (when there are two):
 * the device mapping of the placement log says which CUDA device each is. */
static void test_visible_device_list_orders_the_gpus(void **state) {
  (void)state;
  skip_unless_two_gpus();
  ct_session_options so;
  ct_session_options_defaults(&so);
  snprintf(so.gpu_options.visible_device_list, sizeof so.gpu_options.visible_device_list, "1,0");
  so.gpu_options.allow_growth = 1;
  ct_graph *g = ct_graph_new();
  char *log_text = NULL;
  ct_session *s = ct_test_session_logging(g, so, &log_text);
  const char *gpu0 = strstr(log_text, "/device:GPU:0 -> device: 0, name: ");
  const char *gpu1 = strstr(log_text, "/device:GPU:1 -> device: 1, name: ");
  assert_non_null(gpu0);
  assert_non_null(gpu1);
  const char *end0 = strchr(gpu0, '\n'), *cuda0 = strstr(gpu0, "CUDA device 1,");
  const char *end1 = strchr(gpu1, '\n'), *cuda1 = strstr(gpu1, "CUDA device 0,");
  if (!cuda0 || cuda0 > end0 || !cuda1 || cuda1 > end1)
    fail_msg("visible_device_list 1,0 did not swap the GPUs:\n%s", log_text);
  free(log_text);
  ct_session_free(s);
  ct_graph_free(g);
}

static void test_bad_visible_device_list(void **state) {
  (void)state;
  ct_graph *g = ct_graph_new();
  ct_session_options so;
  ct_session_options_defaults(&so);
  snprintf(so.gpu_options.visible_device_list, sizeof so.gpu_options.visible_device_list, "0,99");
  ct_status st = CT_STATUS_INIT;
  assert_null(ct_session_new(g, &so, &st));
  printf("  %s\n", st.message);
  assert_int_equal(st.code, CT_INVALID_ARGUMENT);
  assert_non_null(strstr(st.message, "names GPU 99"));
  ct_graph_free(g);
}

#ifdef CT_GPU_EMULATED
/* ---- a kernel that faults (planted: emulator_faults.h) ---- */

/* y = relu(neg(x)) on /gpu:0 for x of 4 floats: two kernels, Neg's first. */
static int run_neg_relu(ct_status *st) {
  ct_graph *g = ct_graph_new();
  ct_graph_push_device(g, "/gpu:0");
  ct_output x = ct_placeholder(g, "x", CT_F32, ct_shape_of(1, (int64_t)4));
  ct_output y = ct_relu(g, ct_neg(g, x));
  ct_graph_pop_device(g);
  ct_session_options so;
  ct_session_options_defaults(&so);
  so.gpu_options.allow_growth = 1;
  ct_session *s = ct_session_new(g, &so, st);
  assert_non_null(s);
  float in[4] = {1, -2, 3, -4};
  ct_tensor xt = {CT_F32, ct_shape_of(1, (int64_t)4), in, 0};
  ct_feed feed = {x, &xt};
  ct_tensor *out = NULL;
  const int failed = ct_session_run(s, &feed, 1, &y, 1, NULL, 0, &out, st);
  ct_tensor_free(out);
  ct_session_free(s);
  ct_graph_free(g);
  return failed;
}

/* A kernel that faults on the GPU: CTOWER_GPU_SYNC=1 names its op (Relu,
 * the second kernel); without it the error shows at a later call, which
 * says how to find the op, and is no "out of memory". */
static void test_a_kernel_fault_names_its_op(void **state) {
  (void)state;
  ct_status st = CT_STATUS_INIT;
  setenv("CTOWER_GPU_SYNC", "1", 1);
  emu_fault_after_launches(2);
  assert_int_not_equal(run_neg_relu(&st), 0);
  unsetenv("CTOWER_GPU_SYNC");
  emu_fault_clear();
  printf("  with CTOWER_GPU_SYNC=1: %s\n", st.message);
  assert_int_equal(st.code, CT_INTERNAL);
  assert_non_null(strstr(st.message, "Relu (Relu) on /job:localhost/replica:0/task:0/device:GPU:0 "
                                     "failed on the GPU: CUDA error"));
  ct_status_clear(&st);
  emu_fault_after_launches(2);
  assert_int_not_equal(run_neg_relu(&st), 0);
  emu_fault_clear();
  printf("  without: %s\n", st.message);
  assert_int_equal(st.code, CT_INTERNAL);
  assert_non_null(strstr(st.message, "run again with CTOWER_GPU_SYNC=1 to name its op"));
  ct_status_clear(&st);
  assert_int_equal(run_neg_relu(&st), 0); /* a GPU without a fault runs it */
}

#endif

/* CompressGradient and DecompressGradient on the GPU pack and unpack as
 * the naive loops do, and so as the CPU kernels do (the same arithmetic:
 * kernels/compress_math.h), with onebit's residual carried on the GPU. */
static void test_compression_matches_the_naive_loops(void **state) {
  (void)state;
  for (int c = CT_COMPRESSION_BF16; c < CT_COMPRESSION_COUNT; ++c) {
    ct_test_compression_matches_naive("/gpu:0", (ct_compression)c, 1000, 3);
    ct_test_compression_matches_naive("/gpu:0", (ct_compression)c, 70000, 1);
  }
}

/* 0 when the tests can run; else the exit status: 77 (skipped) without a
 * GPU, 1 when the driver fails or CTOWER_EXPECT_GPU=1 wants a GPU. */
static int gpu_missing(void) {
  ct_session_options so;
  ct_session_options_defaults(&so);
  ct_graph *g = ct_graph_new();
  ct_status st = CT_STATUS_INIT;
  ct_session *s = ct_session_new(g, &so, &st); /* reports a failing driver */
  ct_session_free(s);
  ct_graph_free(g);
  if (s == NULL) {
    printf("the GPUs cannot be used: %s\n", st.message);
    return 1;
  }
  if (ct_device_count(&so, CT_DEVICE_KIND_GPU) > 0) return 0;
  const char *expect = getenv("CTOWER_EXPECT_GPU");
  if (expect && strcmp(expect, "1") == 0) {
    printf("CTOWER_EXPECT_GPU=1, but CUDA sees no GPU (or this build has no CUDA): check "
           "nvidia-smi and CUDA_VISIBLE_DEVICES\n");
    return 1;
  }
  printf("no GPU (or a build without CUDA): the GPU tests are skipped\n");
  return 77;
}

int main(void) {
  const int missing = gpu_missing();
  if (missing) return missing;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_placement_prefers_the_gpu),
      cmocka_unit_test(test_every_op_matches_the_cpu),
      cmocka_unit_test(test_compression_matches_the_naive_loops),
#ifdef CT_GPU_EMULATED
      cmocka_unit_test(test_without_cudnn_only_convolutions_fail),
#endif
      cmocka_unit_test(test_training_steps_match_the_cpu),
      cmocka_unit_test(test_reduced_precision_tracks_fp32),
      cmocka_unit_test(test_towers_on_two_virtual_gpus),
#ifdef CT_GPU_EMULATED
      cmocka_unit_test(test_nccl_errors_carry_nccls_text),
#endif
      cmocka_unit_test(test_towers_on_two_physical_gpus),
      cmocka_unit_test(test_compression_between_gpus),
      cmocka_unit_test(test_ring_sums_unpack_beside_each_tower),
      cmocka_unit_test(test_staged_inputs_copy_under_the_last_run),
      cmocka_unit_test(test_feeds_in_pinned_memory_copy_in_place),
#ifdef CT_GPU_EMULATED
      cmocka_unit_test(test_training_steps_wait_only_at_the_end),
#endif
      cmocka_unit_test(test_gpu_memory_limit_and_recovery),
      cmocka_unit_test(test_two_sessions_at_fraction_0_4),
      cmocka_unit_test(test_visible_device_list_orders_the_gpus),
      cmocka_unit_test(test_bad_visible_device_list),
#ifdef CT_GPU_EMULATED
      cmocka_unit_test(test_a_kernel_fault_names_its_op),
#endif
  };
  const char *only = getenv("CTOWER_TEST_FILTER");
  if (only && only[0]) cmocka_set_test_filter(only);
  return cmocka_run_group_tests(tests, NULL, NULL);
}
