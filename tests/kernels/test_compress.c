/* Gradient compression on CPU devices: CompressGradient and
 * DecompressGradient pack and unpack bf16, fp16 and onebit as the naive
 * loops of tests/support/compress_reference.c do, bit for bit, on one
 * thread and on several (past the parallel grain); onebit's error feedback
 * carries what packing lost into the next step, so that the mean of many
 * steps' reconstructions is the mean of their values; CompressedAllReduce
 * in a process on its own packs its sum again (its stripe's residual
 * carried); and the builders refuse what cannot be packed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compress_reference.h"

static void test_kernels_match_the_naive_loops(void **state) {
  (void)state;
  for (int c = CT_COMPRESSION_BF16; c < CT_COMPRESSION_COUNT; ++c) {
    ct_test_compression_matches_naive("/cpu:0", (ct_compression)c, 1000, 3);
    ct_test_compression_matches_naive("/cpu:0", (ct_compression)c, 3 * 32768 + 77, 2);
  }
}

/* A run of CompressGradient, CompressedAllReduce and DecompressGradient of
 * n values, fed x; fetches the result, packed and unpacked. */
typedef struct exchange_graph {
  ct_graph *g;
  ct_session *s;
  ct_output x, residual, stripe_residual, packed, summed, y;
} exchange_graph;

static void exchange_graph_new(exchange_graph *e, ct_compression c, int64_t n) {
  e->g = ct_graph_new();
  const ct_initializer zeros = {CT_INIT_ZEROS, 0.0f};
  const int onebit = c == CT_COMPRESSION_ONEBIT;
  e->x = ct_placeholder(e->g, "x", CT_F32, ct_shape_of(1, n));
  e->residual = onebit ? ct_variable(e->g, "r", ct_shape_of(1, n), zeros, 0) : (ct_output){NULL, 0};
  e->stripe_residual =
      onebit ? ct_variable(e->g, "stripe_r", ct_shape_of(1, n), zeros, 0) : (ct_output){NULL, 0};
  e->packed = ct_compress_gradient(e->g, e->x, c, e->residual);
  e->summed = ct_compressed_all_reduce(e->g, e->packed, c, n, e->stripe_residual, 0);
  e->y = ct_decompress_gradient(e->g, e->summed, c, n);
  assert_status_ok(ct_graph_status(e->g));
  ct_status st = CT_STATUS_INIT;
  e->s = ct_session_new(e->g, NULL, &st);
  assert_status_ok(&st);
}

static void exchange_graph_free(exchange_graph *e) {
  ct_session_free(e->s);
  ct_graph_free(e->g);
}

/* One step: x (n values) through the exchange; the unpacked sum (the
 * caller frees it). */
static ct_tensor *exchange_step(const exchange_graph *e, float *x, int64_t n) {
  ct_tensor fed = {CT_F32, ct_shape_of(1, n), x, 0};
  const ct_feed feed = {e->x, &fed};
  ct_tensor *y = NULL;
  ct_status st = CT_STATUS_INIT;
  ct_session_run(e->s, &feed, 1, &e->y, 1, NULL, 0, &y, &st);
  assert_status_ok(&st);
  return y;
}

/* A job of one rank: the sum is this rank's values, unpacked and packed
 * again (onebit: with the stripe's residual), as the naive loops do it. */
static void test_exchange_alone_packs_the_sum_again(void **state) {
  (void)state;
  enum { N = 700, STEPS = 3 };
  for (int c = CT_COMPRESSION_BF16; c < CT_COMPRESSION_COUNT; ++c) {
    exchange_graph e;
    exchange_graph_new(&e, (ct_compression)c, N);
    static float x[N], r[N], stripe_r[N], sum[N], want[N];
    static uint8_t packed[N * 2];
    memset(r, 0, sizeof r), memset(stripe_r, 0, sizeof stripe_r);
    for (int step = 0; step < STEPS; ++step) {
      ct_test_compression_inputs(x, N, step);
      ct_naive_compress((ct_compression)c, x, r, N, packed);
      ct_naive_decompress((ct_compression)c, packed, N, sum);
      ct_naive_compress((ct_compression)c, sum, stripe_r, N, packed);
      ct_naive_decompress((ct_compression)c, packed, N, want);
      ct_tensor *y = exchange_step(&e, x, N);
      assert_memory_equal(ct_tensor_f32(y), want, sizeof want);
      ct_tensor_free(y);
    }
    printf("  %s: %d steps of the exchange alone as the naive loops\n",
           ct_compression_name((ct_compression)c), STEPS);
    exchange_graph_free(&e);
  }
}

/* The largest distance of the mean of `steps` reconstructions (sum) from x. */
static double mean_error(const float *sum, const float *x, int n, int steps) {
  double worst = 0;
  for (int i = 0; i < n; ++i) worst = fmax(worst, fabs(sum[i] / steps - x[i]));
  return worst;
}

/* Error feedback: the same values packed step after step reconstruct, on
 * average, the values themselves: what a step loses comes back in later
 * ones, so the mean's error shrinks as steps are added (as 1/sqrt(steps):
 * a value that keeps its sign carries its error until the sign flips),
 * where packing without feedback keeps the same error every step. */
static void test_onebit_error_feedback(void **state) {
  (void)state;
  enum { N = 512, EARLY = 50, STEPS = 800 };
  exchange_graph e;
  exchange_graph_new(&e, CT_COMPRESSION_ONEBIT, N);
  static float x[N], sum[N];
  ct_test_compression_inputs(x, N, 9);
  for (int i = 0; i < N; ++i) x[i] = (float)fmod(x[i], 1.0); /* one scale: |x| < 1 */
  double early = 0;
  for (int step = 0; step < STEPS; ++step) {
    ct_tensor *y = exchange_step(&e, x, N);
    for (int i = 0; i < N; ++i) sum[i] += ct_tensor_f32(y)[i];
    ct_tensor_free(y);
    if (step + 1 == EARLY) early = mean_error(sum, x, N, EARLY);
  }
  const double late = mean_error(sum, x, N, STEPS);
  double once = 0;
  static float unfed[N], r[N];
  static uint8_t packed_once[N * 2];
  ct_naive_compress(CT_COMPRESSION_ONEBIT, x, r, N, packed_once);
  ct_naive_decompress(CT_COMPRESSION_ONEBIT, packed_once, N, unfed);
  for (int i = 0; i < N; ++i) once = fmax(once, fabs(unfed[i] - x[i]));
  printf("  onebit, the same %d values again and again: the mean reconstruction is within "
         "%.2e of them after %d steps, %.2e after %d (one packing alone: %.2e)\n",
         N, early, EARLY, late, STEPS, once);
  assert_true(late < early / 2); /* 16 times the steps: a quarter of the error, give or take */
  assert_true(late < once / 10);
  exchange_graph_free(&e);
}

static void test_builders_refuse_what_cannot_be_packed(void **state) {
  (void)state;
  ct_graph *g = ct_graph_new();
  const ct_output x = ct_placeholder(g, "x", CT_F32, ct_shape_of(1, (int64_t)10));
  ct_compress_gradient(g, x, CT_COMPRESSION_ONEBIT, (ct_output){NULL, 0});
  assert_non_null(strstr(ct_graph_status(g)->message,
                         "ct_compress_gradient with onebit compression needs its residual"));
  ct_graph_free(g);

  g = ct_graph_new();
  const ct_output y = ct_placeholder(g, "y", CT_F32, ct_shape_of(1, (int64_t)10));
  const ct_initializer zeros = {CT_INIT_ZEROS, 0.0f};
  const ct_output r = ct_variable(g, "r", ct_shape_of(1, (int64_t)11), zeros, 0);
  ct_compress_gradient(g, y, CT_COMPRESSION_ONEBIT, r);
  assert_non_null(strstr(ct_graph_status(g)->message, "the residual holds 11 values for 10"));
  ct_graph_free(g);

  g = ct_graph_new();
  const ct_output z = ct_placeholder(g, "z", CT_F32, ct_shape_of(1, (int64_t)10));
  const ct_output packed = ct_compress_gradient(g, z, CT_COMPRESSION_BF16, (ct_output){NULL, 0});
  ct_decompress_gradient(g, packed, CT_COMPRESSION_BF16, 11);
  assert_non_null(strstr(ct_graph_status(g)->message, "11 values packed with bf16 take 22 bytes, got 20"));
  ct_graph_free(g);

  g = ct_graph_new();
  const ct_output w = ct_placeholder(g, "w", CT_F32, ct_shape_of(1, (int64_t)10));
  ct_compress_gradient(g, w, CT_COMPRESSION_NONE, (ct_output){NULL, 0});
  assert_non_null(strstr(ct_graph_status(g)->message, "compression 0 is not bf16, fp16 or onebit"));
  ct_graph_free(g);
  assert_int_equal(ct_compressed_bytes(CT_COMPRESSION_ONEBIT, 257), 2 * CT_ONEBIT_COLUMN_BYTES);
  assert_int_equal(ct_compressed_bytes(CT_COMPRESSION_FP16, 257), 514);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kernels_match_the_naive_loops),
      cmocka_unit_test(test_exchange_alone_packs_the_sum_again),
      cmocka_unit_test(test_onebit_error_feedback),
      cmocka_unit_test(test_builders_refuse_what_cannot_be_packed),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
