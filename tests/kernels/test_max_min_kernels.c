/* The CPU kernels of Max and Min over axes (tf.reduce_max, tf.reduce_min)
 * and their gradient against naive loops written here: every set of axes of
 * a rank-3 x, keep_dims or not, values on a coarse grid so that ties are
 * common (TensorFlow divides dy among them), over enough elements for both
 * threads; then NaN and no values at all. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "op_cases.h"

enum { D0 = 37, D1 = 29, D2 = 41 };

/* y (and dx for dy = w) of Max (is_max) or Min over the axes of mask. */
static void run(int is_max, unsigned mask, int keep, const ct_tensor *xv, const ct_tensor *wv,
                ct_tensor **y, ct_tensor **dx) {
  ct_status st = CT_STATUS_INIT;
  ct_graph *g = ct_graph_new();
  ct_output x = ct_placeholder(g, "x", CT_F32, xv->shape);
  ct_output r = is_max ? ct_reduce_max(g, x, mask, keep) : ct_reduce_min(g, x, mask, keep);
  ct_output w = ct_placeholder(g, "w", CT_F32, ct_output_shape(r));
  ct_output fetches[2] = {r};
  assert_int_equal(ct_gradients(g, ct_reduce_sum(g, ct_mul(g, r, w), 0, 0), 1, &x, &fetches[1]), 0);
  assert_status_ok(ct_graph_status(g));
  ct_session *s = ct_test_cpu_session(g, 2);
  ct_feed feeds[2] = {{x, (ct_tensor *)xv}, {w, (ct_tensor *)wv}};
  ct_tensor *out[2] = {NULL, NULL};
  ct_session_run(s, feeds, wv ? 2 : 1, fetches, wv ? 2 : 1, NULL, 0, out, &st);
  assert_status_ok(&st);
  *y = out[0];
  if (dx) *dx = out[1];
  ct_session_free(s);
  ct_graph_free(g);
}

static void test_every_set_of_axes_against_a_naive_loop(void **state) {
  (void)state;
  ct_status st = CT_STATUS_INIT;
  const ct_shape xs = ct_shape_of(3, (int64_t)D0, (int64_t)D1, (int64_t)D2);
  const int64_t n = ct_shape_elements(&xs);
  ct_tensor *xv = ct_tensor_new(CT_F32, &xs, &st);
  assert_status_ok(&st);
  float *X = ct_tensor_f32(xv);
  ct_test_fill_uniform(X, n, 3, -4.0f, 4.0f);
  for (int64_t i = 0; i < n; ++i) X[i] = floorf(X[i]); /* 8 values: ties everywhere */
  for (unsigned mask = 1; mask < 8; ++mask)
    for (int keep = 0; keep < 2; ++keep)
      for (int is_max = 0; is_max < 2; ++is_max) {
        const int64_t dims[3] = {D0, D1, D2};
        int64_t kept[3], m = 1;
        for (int d = 0; d < 3; ++d) m *= kept[d] = mask & (1u << d) ? 1 : dims[d];
        double *want = malloc((size_t)m * sizeof *want), *ties = calloc((size_t)m, sizeof *ties);
        double *want_dx = malloc((size_t)n * sizeof *want_dx);
        assert_true(want && ties && want_dx);
        for (int64_t j = 0; j < m; ++j) want[j] = is_max ? -INFINITY : INFINITY;
          /* output j of element (a, b, c): its kept coordinates, row-major */
#define OUT_OF(a, b, c) \
  ((((mask & 1) ? 0 : (a)) * kept[1] + ((mask & 2) ? 0 : (b))) * kept[2] + ((mask & 4) ? 0 : (c)))
        for (int64_t a = 0; a < D0; ++a)
          for (int64_t b = 0; b < D1; ++b)
            for (int64_t c = 0; c < D2; ++c) {
              const double v = X[(a * D1 + b) * D2 + c];
              const int64_t j = OUT_OF(a, b, c);
              if (is_max ? v > want[j] : v < want[j]) want[j] = v;
            }
        for (int64_t a = 0; a < D0; ++a)
          for (int64_t b = 0; b < D1; ++b)
            for (int64_t c = 0; c < D2; ++c)
              ties[OUT_OF(a, b, c)] += X[(a * D1 + b) * D2 + c] == want[OUT_OF(a, b, c)];
        ct_shape ws = ct_shape_of(0);
        for (int d = 0; d < 3; ++d)
          if (keep || !(mask & (1u << d))) ws.dims[ws.rank++] = kept[d];
        ct_tensor *wv = ct_tensor_new(CT_F32, &ws, &st);
        assert_status_ok(&st);
        float *W = ct_tensor_f32(wv);
        ct_test_fill_uniform(W, m, 4, -1.0f, 1.0f);
        for (int64_t a = 0; a < D0; ++a)
          for (int64_t b = 0; b < D1; ++b)
            for (int64_t c = 0; c < D2; ++c) {
              const int64_t i = (a * D1 + b) * D2 + c, j = OUT_OF(a, b, c);
              want_dx[i] = X[i] == want[j] ? W[j] / ties[j] : 0.0;
            }
#undef OUT_OF
        ct_tensor *y = NULL, *dx = NULL;
        run(is_max, mask, keep, xv, wv, &y, &dx);
        assert_int_equal(ct_tensor_elements(y), m);
        assert_int_equal(y->shape.rank, ws.rank);
        int64_t at = 0;
        const double worst = ct_test_worst_against(ct_tensor_f32(y), want, m, &at);
        if (!(worst == 0))
          fail_msg("%s over mask 0x%x: y[%lld] %.9g, the naive loop %.9g", is_max ? "Max" : "Min",
                   mask, (long long)at, ct_tensor_f32(y)[at], want[at]);
        const double worst_dx = ct_test_worst_against(ct_tensor_f32(dx), want_dx, n, &at);
        if (!(worst_dx <= 1e-6))
          fail_msg("%s over mask 0x%x: dx[%lld] %.9g, the naive loop %.9g (ties shared)",
                   is_max ? "Max" : "Min", mask, (long long)at, ct_tensor_f32(dx)[at], want_dx[at]);
        ct_tensor_free(y);
        ct_tensor_free(dx);
        ct_tensor_free(wv);
        free(want);
        free(ties);
        free(want_dx);
      }
  printf("  Max and Min over every set of axes of [%d, %d, %d]: as the naive loops\n", D0, D1, D2);
  ct_tensor_free(xv);
}

static void test_nans_and_no_values(void **state) {
  (void)state;
  ct_status st = CT_STATUS_INIT;
  const ct_shape xs = ct_shape_of(2, (int64_t)2, (int64_t)3),
                 empty = ct_shape_of(2, (int64_t)2, (int64_t)0);
  ct_tensor *xv = ct_tensor_new(CT_F32, &xs, &st), *ev = ct_tensor_new(CT_F32, &empty, &st);
  assert_status_ok(&st);
  const float x[6] = {1, NAN, 3, 2, 2, 1};
  memcpy(ct_tensor_f32(xv), x, sizeof x);
  for (int is_max = 0; is_max < 2; ++is_max) {
    ct_tensor *y = NULL;
    run(is_max, 1u << 1, 0, xv, NULL, &y, NULL);
    assert_true(isnan(ct_tensor_f32(y)[0])); /* TensorFlow's: a NaN wins */
    assert_true(ct_tensor_f32(y)[1] == (is_max ? 2.0f : 1.0f));
    ct_tensor_free(y);
    run(is_max, 1u << 1, 0, ev, NULL, &y, NULL);
    assert_true(ct_tensor_f32(y)[0] == (is_max ? -INFINITY : INFINITY));
    ct_tensor_free(y);
  }
  ct_tensor_free(xv);
  ct_tensor_free(ev);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_set_of_axes_against_a_naive_loop),
      cmocka_unit_test(test_nans_and_no_values),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
