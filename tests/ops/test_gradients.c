/* Numerical gradient checks: for every differentiable op, the gradient built
 * by ct_gradients matches central differences of L = sum(op(inputs) * R),
 * R a fixed random tensor. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "op_cases.h"

static double run_loss(ct_session *s, ct_feed *feeds, int n, ct_output loss) {
  ct_status st = CT_STATUS_INIT;
  ct_tensor *out = NULL;
  ct_session_run(s, feeds, n, &loss, 1, NULL, 0, &out, &st);
  assert_status_ok(&st);
  double v = ct_tensor_f32(out)[0];
  ct_tensor_free(out);
  return v;
}

static void check_case(const op_case *c) {
  ct_status st = CT_STATUS_INIT;
  ct_graph *g = ct_graph_new();
  op_case_graph built; /* L = sum(y * R) with R fixed */
  ct_op_case_build(c, g, &built);
  ct_output *x = built.x, loss = built.loss;
  ct_tensor **values = built.values;
  ct_feed *feeds = built.feeds;
  ct_output grads[CT_CASE_MAX_INPUTS];
  assert_int_equal(ct_gradients(g, loss, c->n_inputs, x, grads), 0);
  assert_status_ok(ct_graph_status(g));

  ct_session *s = ct_session_new(g, NULL, &st);
  assert_status_ok(&st);
  ct_session_set_step(s, 7);
  /* An input the loss does not depend on through values (the shape-only
   * input of BroadcastLike) has no gradient: its numeric gradient must be 0. */
  ct_tensor *analytic[CT_CASE_MAX_INPUTS] = {NULL};
  for (int i = 0; i < c->n_inputs; ++i) {
    if (grads[i].node) {
      ct_session_run(s, feeds, c->n_inputs, &grads[i], 1, NULL, 0, &analytic[i], &st);
    } else {
      analytic[i] = ct_tensor_new(CT_F32, &c->shapes[i], &st);
    }
    assert_status_ok(&st);
  }

  const float eps = 1e-2f; /* f32 losses: a larger step keeps rounding noise small */
  double worst = 0;
  for (int i = 0; i < c->n_inputs; ++i) {
    float *v = ct_tensor_f32(values[i]);
    int64_t n = ct_tensor_elements(values[i]);
    int64_t stride = n > 48 ? n / 48 : 1; /* sample at most ~48 elements per input */
    for (int64_t k = 0; k < n; k += stride) {
      float saved = v[k];
      v[k] = saved + eps;
      double up = run_loss(s, feeds, c->n_inputs, loss);
      v[k] = saved - eps;
      double down = run_loss(s, feeds, c->n_inputs, loss);
      v[k] = saved;
      double numeric = (up - down) / (2.0 * eps);
      double got = ct_tensor_f32(analytic[i])[k];
      double err = fabs(got - numeric) / (1e-2 + fabs(numeric));
      if (err > worst) worst = err;
      if (err > 2e-2)
        fail_msg("%s: d/dx%d[%lld]: analytic %.6f, numeric %.6f", c->name, i, (long long)k, got,
                 numeric);
    }
  }
  printf("  %-22s max relative error %.2e\n", c->name, worst);
  for (int i = 0; i < c->n_inputs; ++i) ct_tensor_free(analytic[i]);
  ct_op_case_graph_free(&built, c->n_inputs);
  ct_session_free(s);
  ct_graph_free(g);
}

static void test_all_gradients(void **state) {
  (void)state;
  int n_cases;
  const op_case *cases = ct_op_cases(&n_cases);
  for (int i = 0; i < n_cases; ++i) check_case(&cases[i]);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_all_gradients)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
