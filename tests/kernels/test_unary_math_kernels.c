/* The CPU kernels of the unary math ops (src/ops/unary_math.h) against
 * naive loops in double precision written here, apart from the table: each
 * row's forward kernel, and UnaryMathGrad with its derivative, over enough
 * elements that the blocks go to several threads and the last one is
 * short. A row without a reference here fails. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "op_cases.h"
#include "ops/unary_math.h"

typedef struct reference {
  const char *op;
  double (*forward)(double x);
  double (*derivative)(double x); /* NULL: no gradient (TensorFlow's None) */
} reference;

static double exp_d(double x) { return exp(x); }
static double log_d(double x) { return log(x); }
static double log1p_d(double x) { return log1p(x); }
static double sqrt_d(double x) { return sqrt(x); }
static double rsqrt_d(double x) { return 1.0 / sqrt(x); }
static double square_d(double x) { return x * x; }
static double abs_d(double x) { return fabs(x); }
static double sign_d(double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0; }
static double reciprocal_d(double x) { return 1.0 / x; }
static double floor_d(double x) { return floor(x); }
static double ceil_d(double x) { return ceil(x); }
static double round_half_even_d(double x) { /* TensorFlow's Round */
  double r = floor(x), frac = x - r;
  if (frac > 0.5 || (frac == 0.5 && fmod(r, 2.0) != 0.0)) r += 1.0;
  return r;
}
static double d_log(double x) { return 1.0 / x; }
static double d_log1p(double x) { return 1.0 / (1.0 + x); }
static double d_sqrt(double x) { return 0.5 / sqrt(x); }
static double d_rsqrt(double x) { return -0.5 * pow(x, -1.5); }
static double d_square(double x) { return 2.0 * x; }
static double d_zero(double x) { return 0.0 * x; }
static double d_reciprocal(double x) { return -1.0 / (x * x); }

static const reference references[] = {
    {"Exp", exp_d, exp_d},
    {"Log", log_d, d_log},
    {"Log1p", log1p_d, d_log1p},
    {"Sqrt", sqrt_d, d_sqrt},
    {"Rsqrt", rsqrt_d, d_rsqrt},
    {"Square", square_d, d_square},
    {"Abs", abs_d, sign_d},
    {"Sign", sign_d, d_zero},
    {"Reciprocal", reciprocal_d, d_reciprocal},
    {"Floor", floor_d, NULL},
    {"Ceil", ceil_d, NULL},
    {"Round", round_half_even_d, NULL},
};

static const reference *reference_of(const char *op) {
  for (size_t i = 0; i < sizeof references / sizeof references[0]; ++i)
    if (strcmp(references[i].op, op) == 0) return &references[i];
  return NULL;
}

/* op on x (values of the row's domain, then `extra`), and its gradient of
 * sum(y * w): UnaryMathGrad with dy = w. */
static void check_row(const char *op, value_kind domain, const float *extra, int n_extra) {
  const reference *ref = reference_of(op);
  if (ref == NULL) fail_msg("%s: no reference loop in %s", op, __FILE__);
  const int64_t n = 3 * 32768 + 1234 + n_extra; /* over CT_PARALLEL_GRAIN, a short last block */
  ct_status st = CT_STATUS_INIT;
  const ct_shape shape = ct_shape_of(1, n);
  ct_tensor *xv = ct_tensor_new(CT_F32, &shape, &st), *wv = ct_tensor_new(CT_F32, &shape, &st);
  assert_status_ok(&st);
  float *X = ct_tensor_f32(xv), *W = ct_tensor_f32(wv);
  ct_op_case_fill(X, n - n_extra, domain, 5);
  memcpy(X + n - n_extra, extra, (size_t)n_extra * sizeof *X);
  ct_test_fill_uniform(W, n, 6, -1.0f, 1.0f);

  ct_graph *g = ct_graph_new();
  ct_output x = ct_placeholder(g, "x", CT_F32, shape), w = ct_placeholder(g, "w", CT_F32, shape);
  ct_output fetches[2] = {ct_unary_math(g, op, x)};
  int n_fetches = 1;
  if (ref->derivative) {
    assert_int_equal(
        ct_gradients(g, ct_reduce_sum(g, ct_mul(g, fetches[0], w), 0, 0), 1, &x, &fetches[1]),
        0);
    n_fetches = 2;
  }
  assert_status_ok(ct_graph_status(g));
  ct_session *s = ct_test_cpu_session(g, 2);
  ct_feed feeds[2] = {{x, xv}, {w, wv}};
  ct_tensor *out[2] = {NULL, NULL};
  ct_session_run(s, feeds, 2, fetches, n_fetches, NULL, 0, out, &st);
  assert_status_ok(&st);

  double *want = malloc((size_t)n * sizeof *want), *want_dx = malloc((size_t)n * sizeof *want);
  assert_non_null(want);
  assert_non_null(want_dx);
  for (int64_t i = 0; i < n; ++i) {
    want[i] = ref->forward((double)X[i]);
    want_dx[i] = ref->derivative ? (double)W[i] * ref->derivative((double)X[i]) : 0;
  }
  int64_t at = 0, at_dx = 0;
  const double forward = ct_test_worst_against(ct_tensor_f32(out[0]), want, n, &at);
  const double backward =
      ref->derivative ? ct_test_worst_against(ct_tensor_f32(out[1]), want_dx, n, &at_dx) : 0;
  printf("  %-10s forward %.2e  gradient %s%.2e\n", op, forward, ref->derivative ? "" : "none ",
         backward);
  if (!(forward <= 2e-6))
    fail_msg("%s(%.9g): %.9g, the naive loop %.9g", op, X[at], ct_tensor_f32(out[0])[at], want[at]);
  if (!(backward <= 2e-6))
    fail_msg("%s's gradient at %.9g (dy %.9g): %.9g, the naive loop %.9g", op, X[at_dx],
             W[at_dx], ct_tensor_f32(out[1])[at_dx], want_dx[at_dx]);
  free(want);
  free(want_dx);
  for (int i = 0; i < n_fetches; ++i) ct_tensor_free(out[i]);
  ct_session_free(s);
  ct_graph_free(g);
  ct_tensor_free(xv);
  ct_tensor_free(wv);
}

static void test_every_row_against_a_naive_loop(void **state) {
  (void)state;
  /* halves (Round's ties go to even), negatives and signed zeros */
  static const float steps[] = {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 0.0f, -0.0f,
                                -1.0f, 3.0f, -2.75f, 2.25f, 1e-3f, -7.5f};
  static const float positive[] = {1.0f, 4.0f, 1e-3f, 100.0f, 0.25f};
  static const float nonzero[] = {-3.0f, 3.0f, -0.25f, 0.25f, 1e3f};
#define ROW(P, Name, function, forward, derivative, gradient, flops, domain)                    \
  {                                                                                             \
    const value_kind kind = VALUES_##domain;                                                    \
    const float *extra = kind == VALUES_POSITIVE ? positive                                     \
                         : kind == VALUES_AWAY_FROM_ZERO ? nonzero                              \
                         : steps;                                                               \
    const int n_extra = kind == VALUES_POSITIVE ? 5 : kind == VALUES_AWAY_FROM_ZERO ? 5 : 14;   \
    check_row(#Name, kind == VALUES_OFF_GRID ? VALUES_UNIFORM : kind, extra, n_extra);          \
  }
  CT_UNARY_MATH(ROW, _)
#undef ROW
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_row_against_a_naive_loop),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
