/* The CPU kernels of the binary math ops (src/ops/binary_math.h) against
 * naive loops in double precision written here, apart from the table: each
 * row's forward kernel and its gradient (BinaryMathGrad, summed down to the
 * inputs' shapes) over every broadcasting layout of Add's loops (same
 * shapes, a trailing operand, a scalar, a middle run of ones, strides), over
 * enough elements that several threads share them; then TensorFlow's rules
 * at ties, NaNs and Pow's zeros, as constants. A row without a reference
 * here fails. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "op_cases.h"
#include "ops/binary_math.h"

typedef struct reference {
  const char *op;
  double (*forward)(double a, double b);
  double (*da)(double a, double b); /* the partials, times dy = 1 */
  double (*db)(double a, double b);
} reference;

static double max_d(double a, double b) { return a >= b || isnan(a) ? a : b; }
static double min_d(double a, double b) { return a <= b || isnan(a) ? a : b; }
static double ge_d(double a, double b) { return a >= b ? 1.0 : 0.0; }
static double lt_d(double a, double b) { return a >= b ? 0.0 : 1.0; }
static double le_d(double a, double b) { return a <= b ? 1.0 : 0.0; }
static double gt_d(double a, double b) { return a <= b ? 0.0 : 1.0; }
static double sqd_d(double a, double b) { return (a - b) * (a - b); }
static double sqd_da(double a, double b) { return 2.0 * (a - b); }
static double sqd_db(double a, double b) { return -2.0 * (a - b); }
static double pow_d(double a, double b) { return pow(a, b); }
static double pow_da(double a, double b) { return b * pow(a, b - 1.0); }
static double pow_db(double a, double b) { return pow(a, b) * (a > 0 ? log(a) : 0.0); }

static const reference references[] = {
    {"Maximum", max_d, ge_d, lt_d},
    {"Minimum", min_d, le_d, gt_d},
    {"SquaredDifference", sqd_d, sqd_da, sqd_db},
    {"Pow", pow_d, pow_da, pow_db},
};

static const reference *reference_of(const char *op) {
  for (size_t i = 0; i < sizeof references / sizeof references[0]; ++i)
    if (strcmp(references[i].op, op) == 0) return &references[i];
  return NULL;
}

/* Offset in x (of shape xs, broadcast to ys of the same rank) of element i of ys. */
static int64_t broadcast_offset(int64_t i, const ct_shape *xs, const ct_shape *ys) {
  int64_t offset = 0, stride = 1;
  for (int d = ys->rank - 1; d >= 0; --d) {
    const int64_t c = i % ys->dims[d];
    i /= ys->dims[d];
    const int xd = d - (ys->rank - xs->rank);
    if (xd >= 0) {
      if (xs->dims[xd] != 1) offset += c * stride;
      stride *= xs->dims[xd];
    }
  }
  return offset;
}

/* op(a, b) with a of shape as and b of bs, and its gradients of sum(y * w). */
static void check_layout(const reference *ref, value_kind domain, ct_shape as, ct_shape bs,
                         const char *layout) {
  ct_status st = CT_STATUS_INIT;
  ct_shape ys = as.rank >= bs.rank ? as : bs;
  for (int d = 0; d < ys.rank; ++d) {
    const int da = d - (ys.rank - as.rank), db = d - (ys.rank - bs.rank);
    const int64_t x = da >= 0 ? as.dims[da] : 1, y = db >= 0 ? bs.dims[db] : 1;
    ys.dims[d] = x > y ? x : y;
  }
  const int64_t na = ct_shape_elements(&as), nb = ct_shape_elements(&bs);
  const int64_t ny = ct_shape_elements(&ys);
  ct_tensor *av = ct_tensor_new(CT_F32, &as, &st), *bv = ct_tensor_new(CT_F32, &bs, &st);
  ct_tensor *wv = ct_tensor_new(CT_F32, &ys, &st);
  assert_status_ok(&st);
  float *A = ct_tensor_f32(av), *B = ct_tensor_f32(bv), *W = ct_tensor_f32(wv);
  ct_op_case_fill(A, na, domain, 5);
  ct_op_case_fill(B, nb, domain, 7);
  ct_test_fill_uniform(W, ny, 6, -1.0f, 1.0f);
  if (na == nb) /* ties, every seventh element: their gradient goes to a */
    for (int64_t i = 0; i < na; i += 7) B[i] = A[i];

  ct_graph *g = ct_graph_new();
  ct_output in[2] = {ct_placeholder(g, "a", CT_F32, as), ct_placeholder(g, "b", CT_F32, bs)};
  ct_output w = ct_placeholder(g, "w", CT_F32, ys);
  ct_output fetches[3] = {ct_binary_math(g, ref->op, in[0], in[1])};
  assert_int_equal(
      ct_gradients(g, ct_reduce_sum(g, ct_mul(g, fetches[0], w), 0, 0), 2, in, &fetches[1]), 0);
  assert_status_ok(ct_graph_status(g));
  ct_session *s = ct_test_cpu_session(g, 2);
  ct_feed feeds[3] = {{in[0], av}, {in[1], bv}, {w, wv}};
  ct_tensor *out[3] = {NULL, NULL, NULL};
  ct_session_run(s, feeds, 3, fetches, 3, NULL, 0, out, &st);
  assert_status_ok(&st);

  double *want = calloc((size_t)ny, sizeof *want), *want_da = calloc((size_t)na, sizeof *want);
  double *want_db = calloc((size_t)nb, sizeof *want);
  assert_true(want && want_da && want_db);
  for (int64_t i = 0; i < ny; ++i) {
    const int64_t ia = broadcast_offset(i, &as, &ys), ib = broadcast_offset(i, &bs, &ys);
    const double a = A[ia], b = B[ib];
    want[i] = ref->forward(a, b);
    want_da[ia] += W[i] * ref->da(a, b);
    want_db[ib] += W[i] * ref->db(a, b);
  }
  int64_t at[3] = {0, 0, 0};
  const double worst[3] = {ct_test_worst_against(ct_tensor_f32(out[0]), want, ny, &at[0]),
                           ct_test_worst_against(ct_tensor_f32(out[1]), want_da, na, &at[1]),
                           ct_test_worst_against(ct_tensor_f32(out[2]), want_db, nb, &at[2])};
  printf("  %-17s %-9s forward %.2e  da %.2e  db %.2e\n", ref->op, layout, worst[0], worst[1],
         worst[2]);
  if (!(worst[0] <= 2e-6))
    fail_msg("%s %s: y[%lld] %.9g, the naive loop %.9g", ref->op, layout, (long long)at[0],
             ct_tensor_f32(out[0])[at[0]], want[at[0]]);
  /* sums of up to a few hundred partials, in float */
  if (!(worst[1] <= 1e-4))
    fail_msg("%s %s: da[%lld] %.9g, the naive loop %.9g", ref->op, layout, (long long)at[1],
             ct_tensor_f32(out[1])[at[1]], want_da[at[1]]);
  if (!(worst[2] <= 1e-4))
    fail_msg("%s %s: db[%lld] %.9g, the naive loop %.9g", ref->op, layout, (long long)at[2],
             ct_tensor_f32(out[2])[at[2]], want_db[at[2]]);
  free(want);
  free(want_da);
  free(want_db);
  for (int i = 0; i < 3; ++i) ct_tensor_free(out[i]);
  ct_session_free(s);
  ct_graph_free(g);
  ct_tensor_free(av);
  ct_tensor_free(bv);
  ct_tensor_free(wv);
}

static void test_every_row_against_a_naive_loop(void **state) {
  (void)state;
  /* 301 x 409 elements: over CT_PARALLEL_GRAIN, so on both threads */
  const ct_shape big = ct_shape_of(2, (int64_t)301, (int64_t)409);
#define ROW(P, Name, function, forward, da, db, flops, domain)                     \
  {                                                                                \
    const reference *ref = reference_of(#Name);                                    \
    if (ref == NULL) fail_msg("%s: no reference loop in %s", #Name, __FILE__);     \
    const value_kind kind = VALUES_##domain;                                       \
    check_layout(ref, kind, big, big, "same");                                     \
    check_layout(ref, kind, big, ct_shape_of(1, (int64_t)409), "trailing");        \
    check_layout(ref, kind, ct_shape_of(0), big, "scalar");                        \
    check_layout(ref, kind, ct_shape_of(3, (int64_t)7, (int64_t)1, (int64_t)409),  \
                 ct_shape_of(3, (int64_t)7, (int64_t)53, (int64_t)409), "middle"); \
    check_layout(ref, kind, ct_shape_of(2, (int64_t)301, (int64_t)1),              \
                 ct_shape_of(2, (int64_t)1, (int64_t)409), "strided");             \
  }
  CT_BINARY_MATH(ROW, _)
#undef ROW
}

/* y, da and db of op at the n pairs (a[i], b[i]), dy = 1. */
static void run_pairs(const char *op, const float *a, const float *b, int n, float *y, float *da,
                      float *db) {
  ct_status st = CT_STATUS_INIT;
  const ct_shape shape = ct_shape_of(1, (int64_t)n);
  ct_tensor *av = ct_tensor_new(CT_F32, &shape, &st), *bv = ct_tensor_new(CT_F32, &shape, &st);
  assert_status_ok(&st);
  memcpy(ct_tensor_f32(av), a, (size_t)n * sizeof *a);
  memcpy(ct_tensor_f32(bv), b, (size_t)n * sizeof *b);
  ct_graph *g = ct_graph_new();
  ct_output in[2] = {ct_placeholder(g, "a", CT_F32, shape), ct_placeholder(g, "b", CT_F32, shape)};
  ct_output fetches[3] = {ct_binary_math(g, op, in[0], in[1])};
  assert_int_equal(ct_gradients(g, ct_reduce_sum(g, fetches[0], 0, 0), 2, in, &fetches[1]), 0);
  ct_session *s = ct_test_cpu_session(g, 2);
  ct_feed feeds[2] = {{in[0], av}, {in[1], bv}};
  ct_tensor *out[3] = {NULL, NULL, NULL};
  ct_session_run(s, feeds, 2, fetches, 3, NULL, 0, out, &st);
  assert_status_ok(&st);
  float *dst[3] = {y, da, db};
  for (int i = 0; i < 3; ++i) {
    memcpy(dst[i], ct_tensor_f32(out[i]), (size_t)n * sizeof *y);
    ct_tensor_free(out[i]);
  }
  ct_session_free(s);
  ct_graph_free(g);
  ct_tensor_free(av);
  ct_tensor_free(bv);
}

/* Within 1e-6 (relative), infinities equal, NaN matching NaN. */
static void assert_floats(const char *what, const float *got, const float *want, int n) {
  for (int i = 0; i < n; ++i)
    if (!(got[i] == want[i] || fabsf(got[i] - want[i]) <= 1e-6f * fabsf(want[i]) ||
          (isnan(got[i]) && isnan(want[i]))))
      fail_msg("%s[%d]: %.9g, TensorFlow gives %.9g", what, i, got[i], want[i]);
}

/* TensorFlow 2's values at these pairs (compat.v1 graph mode). */
static void test_tensorflow_rules_at_ties_nans_and_zeros(void **state) {
  (void)state;
  const float nan = NAN, inf = INFINITY;
  const float a[] = {1, 2, nan, 1, 0, 0, -2, 0, 2, -1};
  const float b[] = {1, 1, 1, nan, 0, 2, 2, -1, 0.5f, 3};
  enum { N = sizeof a / sizeof a[0] };
  float y[N], da[N], db[N];
  run_pairs("Maximum", a, b, N, y, da, db);
  assert_floats("Maximum", y, (const float[]){1, 2, nan, nan, 0, 2, 2, 0, 2, 3}, N);
  assert_floats("Maximum da", da, (const float[]){1, 1, 0, 0, 1, 0, 0, 1, 1, 0}, N);
  assert_floats("Maximum db", db, (const float[]){0, 0, 1, 1, 0, 1, 1, 0, 0, 1}, N);
  run_pairs("Minimum", a, b, N, y, da, db);
  assert_floats("Minimum", y, (const float[]){1, 1, nan, nan, 0, 0, -2, -1, 0.5f, -1}, N);
  assert_floats("Minimum da", da, (const float[]){1, 0, 0, 0, 1, 1, 1, 0, 0, 1}, N);
  assert_floats("Minimum db", db, (const float[]){0, 1, 1, 1, 0, 0, 0, 1, 1, 0}, N);
  run_pairs("Pow", a, b, N, y, da, db);
  /* 0^0 = 1 with da NaN (0 * 0^-1); 0^-1 = inf; no log of a <= 0 in db */
  assert_floats("Pow", y, (const float[]){1, 2, nan, 1, 1, 0, 4, inf, 1.4142135f, -1}, N);
  assert_floats("Pow da", da, (const float[]){1, 1, 1, nan, nan, 0, -4, -inf, 0.35355338f, 3}, N);
  assert_floats("Pow db", db,
                (const float[]){0, 1.3862944f, nan, 0, 0, 0, 0, nan, 0.9802581f, -0.0f}, N);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_row_against_a_naive_loop),
      cmocka_unit_test(test_tensorflow_rules_at_ties_nans_and_zeros),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
