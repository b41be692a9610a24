/* The CPU kernels of the comparisons (src/ops/compare.h) against naive
 * loops written here, apart from the table: each row over f32 (with ties,
 * signed zeros, infinities and NaNs), i32 and i64 (with values past 2^53,
 * which a double would round together) values, alike in shape or one of
 * them a scalar. A row without a reference here fails. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "op_cases.h"
#include "ops/compare.h"

/* The reference of comparison `op` at a, b compared as long doubles are not
 * enough for i64: each dtype has its own. */
#define REFERENCE(T)                                                           \
  static int reference_##T(const char *op, T a, T b) {                         \
    if (strcmp(op, "Greater") == 0) return a > b;                              \
    if (strcmp(op, "Less") == 0) return a < b;                                 \
    if (strcmp(op, "GreaterEqual") == 0) return !(a < b) && (a == b || a > b); \
    if (strcmp(op, "LessEqual") == 0) return !(a > b) && (a == b || a < b);    \
    if (strcmp(op, "NotEqual") == 0) return !(a == b);                         \
    fail_msg("%s: no reference in %s", op, __FILE__);                          \
    return -1;                                                                 \
  }
REFERENCE(float)
REFERENCE(int32_t)
REFERENCE(int64_t)
#undef REFERENCE

enum { N = 16 };

static const float F_A[N] = {1, 2,  -0.0f, NAN, 1,  NAN, INFINITY, -INFINITY,
                             3, -3, 0.5f,  7,   -1, 2,   1e-30f,   5};
static const float F_B[N] = {1, 1,  0.0f, 1,  NAN, NAN, INFINITY, 1,
                             4, -4, 0.5f, -7, 1,   2,   0,        5.000001f};
static const int32_t I_A[N] = {1, 2, 0, -1, INT32_MAX, INT32_MIN, 5, 5, 3, -3, 7, 8, 9, 10, 0, 0};
static const int32_t I_B[N] = {1, 1, 0, 1, INT32_MIN, INT32_MAX, 5, 6, 4, -4, 7, 7, 10, 9, 1, -1};
#define BIG (INT64_C(1) << 60)
static const int64_t L_A[N] = {BIG + 1,   BIG, BIG, -BIG - 1, 1, 2, 0,  INT64_MAX,
                               INT64_MIN, 5,   6,   7,        8, 9, 10, 11};
static const int64_t L_B[N] = {BIG,           BIG + 1, BIG, -BIG, 1, 1,  0, INT64_MAX - 1,
                               INT64_MIN + 1, 5,       7,   6,    8, 10, 9, 11};

/* op of a (n_a elements) and b (n_b: n or a scalar), against the reference. */
static void check(const char *op, ct_dtype dtype, const void *a, int64_t n_a, const void *b,
                  int64_t n_b) {
  ct_status st = CT_STATUS_INIT;
  const ct_shape sa = n_a == 1 ? ct_shape_of(0) : ct_shape_of(1, n_a);
  const ct_shape sb = n_b == 1 ? ct_shape_of(0) : ct_shape_of(1, n_b);
  ct_tensor *av = ct_tensor_new(dtype, &sa, &st), *bv = ct_tensor_new(dtype, &sb, &st);
  assert_status_ok(&st);
  memcpy(av->data, a, ct_tensor_nbytes(av));
  memcpy(bv->data, b, ct_tensor_nbytes(bv));
  ct_graph *g = ct_graph_new();
  ct_output x = ct_placeholder(g, "a", dtype, sa), y = ct_placeholder(g, "b", dtype, sb);
  ct_output z = ct_compare(g, op, x, y);
  assert_status_ok(ct_graph_status(g));
  ct_session *s = ct_test_cpu_session(g, 2);
  ct_feed feeds[2] = {{x, av}, {y, bv}};
  ct_tensor *out = NULL;
  ct_session_run(s, feeds, 2, &z, 1, NULL, 0, &out, &st);
  assert_status_ok(&st);
  assert_int_equal(out->dtype, CT_U8);
  const int64_t n = n_a > n_b ? n_a : n_b;
  assert_int_equal(ct_tensor_elements(out), n);
  const uint8_t *got = out->data;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t ia = n_a == 1 ? 0 : i, ib = n_b == 1 ? 0 : i;
    int want = 0;
    if (dtype == CT_F32) want = reference_float(op, ((const float *)a)[ia], ((const float *)b)[ib]);
    if (dtype == CT_I32)
      want = reference_int32_t(op, ((const int32_t *)a)[ia], ((const int32_t *)b)[ib]);
    if (dtype == CT_I64)
      want = reference_int64_t(op, ((const int64_t *)a)[ia], ((const int64_t *)b)[ib]);
    if (got[i] != want)
      fail_msg("%s of %s, element %lld (scalars: %d, %d): %d, the naive loop %d", op,
               ct_dtype_name(dtype), (long long)i, n_a == 1, n_b == 1, got[i], want);
  }
  ct_tensor_free(out);
  ct_session_free(s);
  ct_graph_free(g);
  ct_tensor_free(av);
  ct_tensor_free(bv);
}

static void test_every_row_against_a_naive_loop(void **state) {
  (void)state;
#define ROW(P, Name, function, op)          \
  check(#Name, CT_F32, F_A, N, F_B, N);     \
  check(#Name, CT_F32, F_A, N, &F_B[1], 1); \
  check(#Name, CT_F32, &F_A[3], 1, F_B, N); \
  check(#Name, CT_I32, I_A, N, I_B, N);     \
  check(#Name, CT_I32, &I_A[0], 1, I_B, N); \
  check(#Name, CT_I64, L_A, N, L_B, N);     \
  check(#Name, CT_I64, L_A, N, &L_B[0], 1); \
  printf("  %-12s f32, i32, i64, scalars: as the naive loop\n", #Name);
  CT_COMPARE(ROW, _)
#undef ROW
}

static void test_dtypes_and_shapes_must_agree(void **state) {
  (void)state;
  ct_graph *g = ct_graph_new();
  ct_output f = ct_placeholder(g, "f", CT_F32, ct_shape_of(1, (int64_t)3));
  ct_output i = ct_placeholder(g, "i", CT_I32, ct_shape_of(1, (int64_t)3));
  assert_null(ct_compare(g, "Greater", f, i).node);
  assert_int_equal(ct_graph_status(g)->code, CT_INVALID_ARGUMENT);
  ct_graph_free(g);
  g = ct_graph_new();
  f = ct_placeholder(g, "f", CT_F32, ct_shape_of(1, (int64_t)3));
  ct_output h = ct_placeholder(g, "h", CT_F32, ct_shape_of(1, (int64_t)4));
  assert_null(ct_compare(g, "Less", f, h).node);
  assert_int_equal(ct_graph_status(g)->code, CT_INVALID_ARGUMENT);
  ct_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_row_against_a_naive_loop),
      cmocka_unit_test(test_dtypes_and_shapes_must_agree),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
