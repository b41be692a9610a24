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

/* The gradient of x through MaxPool(Relu(x)), k x k windows at `stride`
 * on x of [2, 7, 6, 5] holding -1, 0 and 1 (ties and zeros after the ReLU);
 * with identity_between an Identity between the two, which keeps ops_nn.c's
 * masking out. *relu_grads: the ReluGrads over as many elements as x. */
static ct_tensor *relu_pool_gradient(int identity_between, int k, int stride, ct_padding padding,
                                     int *relu_grads) {
  ct_status st = CT_STATUS_INIT;
  ct_graph *g = ct_graph_new();
  const ct_shape xs = ct_shape_of(4, (int64_t)2, (int64_t)7, (int64_t)6, (int64_t)5);
  ct_output x = ct_placeholder(g, "x", CT_F32, xs);
  ct_output r = ct_relu(g, x);
  if (identity_between) r = ct_identity(g, r);
  ct_output y = ct_max_pool(g, r, k, stride, padding);
  const ct_shape ys = ct_output_shape(y);
  ct_output w = ct_placeholder(g, "w", CT_F32, ys);
  ct_output dx;
  assert_int_equal(ct_gradients(g, ct_reduce_sum(g, ct_mul(g, y, w), 0, 0), 1, &x, &dx), 0);
  assert_status_ok(ct_graph_status(g));
  *relu_grads = 0;
  for (int i = 0; i < ct_graph_node_count(g); ++i) {
    ct_node *n = ct_graph_node(g, i);
    if (strcmp(ct_node_op(n), "ReluGrad") != 0) continue;
    const ct_shape shape = ct_output_shape(ct_node_input(n, 0));
    *relu_grads += ct_shape_elements(&shape) == ct_shape_elements(&xs);
  }
  ct_tensor *xv = ct_tensor_new(CT_F32, &xs, &st), *wv = ct_tensor_new(CT_F32, &ys, &st);
  assert_status_ok(&st);
  float *xf = ct_tensor_f32(xv);
  ct_test_fill_uniform(xf, ct_tensor_elements(xv), 3, 0.0f, 3.0f);
  for (int64_t i = 0; i < ct_tensor_elements(xv); ++i) xf[i] = floorf(xf[i]) - 1.0f;
  ct_test_fill_uniform(ct_tensor_f32(wv), ct_tensor_elements(wv), 4, -1.0f, 1.0f);
  ct_feed feeds[2] = {{x, xv}, {w, wv}};
  ct_session *s = ct_session_new(g, NULL, &st);
  assert_status_ok(&st);
  ct_tensor *grad = NULL;
  ct_session_run(s, feeds, 2, &dx, 1, NULL, 0, &grad, &st);
  assert_status_ok(&st);
  ct_session_free(s);
  ct_tensor_free(xv);
  ct_tensor_free(wv);
  ct_graph_free(g);
  return grad;
}

/* A max pool of a ReLU masks its gradient on the pool's output instead of
 * a ReluGrad over all of the ReLU's (ops_nn.c): bit for bit the gradient of
 * the plain chain, with one large ReluGrad fewer. */
static void test_max_pool_of_relu(void **state) {
  (void)state;
  const struct {
    int k, stride;
    ct_padding padding;
  } pools[2] = {{2, 2, CT_PADDING_VALID}, {3, 2, CT_PADDING_SAME}};
  for (int i = 0; i < 2; ++i) {
    int masked_relu_grads, plain_relu_grads;
    ct_tensor *masked = relu_pool_gradient(0, pools[i].k, pools[i].stride, pools[i].padding,
                                           &masked_relu_grads);
    ct_tensor *plain = relu_pool_gradient(1, pools[i].k, pools[i].stride, pools[i].padding,
                                          &plain_relu_grads);
    printf("  %dx%d windows: ReluGrads over x's size %d masked, %d plain\n", pools[i].k,
           pools[i].k, masked_relu_grads, plain_relu_grads);
    assert_int_equal(masked_relu_grads, 0);
    assert_int_equal(plain_relu_grads, 1);
    assert_memory_equal(ct_tensor_f32(masked), ct_tensor_f32(plain),
                        (size_t)ct_tensor_elements(plain) * sizeof(float));
    ct_tensor_free(masked);
    ct_tensor_free(plain);
  }
}

/* A convolution's bias and ReLU, fused into its op or as ops of their own,
 * and with `pooled` a 2x2 max pool of that: y, and the gradients of
 * sum(y * w) for x, the filter and the bias. *relu_grads: the ReluGrads
 * over as many elements as the convolution's output. */
typedef struct conv_layer {
  int64_t height, width, in, out, ksize, stride;
  ct_padding padding;
} conv_layer;

static void conv_bias_relu_run(const conv_layer *l, int fused, int pooled, ct_tensor **out,
                               int *relu_grads) {
  ct_status st = CT_STATUS_INIT;
  ct_graph *g = ct_graph_new();
  const ct_shape shapes[3] = {ct_shape_of(4, (int64_t)2, l->height, l->width, l->in),
                              ct_shape_of(4, l->ksize, l->ksize, l->in, l->out),
                              ct_shape_of(1, l->out)};
  ct_output in[3];
  ct_tensor *values[4];
  for (int i = 0; i < 3; ++i) {
    in[i] = ct_placeholder(g, i == 0 ? "x" : i == 1 ? "filter" : "bias", CT_F32, shapes[i]);
    values[i] = ct_tensor_new(CT_F32, &shapes[i], &st);
    ct_test_fill_uniform(ct_tensor_f32(values[i]), ct_tensor_elements(values[i]), 7 + (uint64_t)i,
                         -1.0f, 1.0f);
  }
  const int s = (int)l->stride;
  ct_output y = fused ? ct_conv2d_bias(g, in[0], in[1], in[2], s, s, l->padding, 1)
                      : ct_relu(g, ct_add(g, ct_conv2d(g, in[0], in[1], s, s, l->padding), in[2]));
  const ct_shape conv_shape = ct_output_shape(y);
  if (pooled) y = ct_max_pool(g, y, 2, 2, CT_PADDING_VALID);
  const ct_shape ys = ct_output_shape(y);
  ct_output w = ct_placeholder(g, "w", CT_F32, ys);
  values[3] = ct_tensor_new(CT_F32, &ys, &st);
  ct_test_fill_uniform(ct_tensor_f32(values[3]), ct_tensor_elements(values[3]), 11, -1.0f, 1.0f);
  ct_output fetches[4];
  fetches[0] = y;
  assert_int_equal(ct_gradients(g, ct_reduce_sum(g, ct_mul(g, y, w), 0, 0), 3, in, fetches + 1), 0);
  assert_status_ok(ct_graph_status(g));
  *relu_grads = 0;
  for (int i = 0; i < ct_graph_node_count(g); ++i) {
    ct_node *n = ct_graph_node(g, i);
    if (strcmp(ct_node_op(n), "ReluGrad") != 0) continue;
    const ct_shape shape = ct_output_shape(ct_node_input(n, 0));
    *relu_grads += ct_shape_elements(&shape) == ct_shape_elements(&conv_shape);
  }
  ct_feed feeds[4] = {{in[0], values[0]}, {in[1], values[1]}, {in[2], values[2]}, {w, values[3]}};
  ct_session *session = ct_session_new(g, NULL, &st);
  assert_status_ok(&st);
  ct_session_run(session, feeds, 4, fetches, 4, NULL, 0, out, &st);
  assert_status_ok(&st);
  ct_session_free(session);
  for (int i = 0; i < 4; ++i) ct_tensor_free(values[i]);
  ct_graph_free(g);
}

/* ct_conv2d_bias with its ReLU gives the bits of the separate Conv2D, Add
 * and Relu (the contract in kernels/cpu/conv.c), forward and backward, on
 * every CPU (scripts/test.sh runs it held to AVX2 too, where oneDNN's
 * kernels differ) and on each path of the CPU convolution: a
 * direct primitive doing the bias and ReLU itself, a forward convolution
 * run transposed (16 output channels or fewer) followed by a pass of its
 * own, ones by Winograd (32 and 64 channels, 3x3 and 5x5: oneDNN's followed by a
 * pass, ctower's own adding them in its output transform), a strided one;
 * and so
 * under a max pool, whose gradient is then masked for the fused ReLU as
 * for a Relu (no ReluGrad over the convolution's output). */
static void test_conv_bias_relu_fused(void **state) {
  (void)state;
  enum { LAYERS = 5 };
  const conv_layer layers[LAYERS] = {{9, 8, 3, 32, 5, 1, CT_PADDING_SAME},
                                     {7, 6, 5, 8, 3, 1, CT_PADDING_SAME},
                                     {8, 8, 32, 32, 3, 1, CT_PADDING_SAME},
                                     {8, 7, 32, 64, 5, 1, CT_PADDING_SAME},
                                     {9, 9, 4, 24, 3, 2, CT_PADDING_VALID}};
  static const char *const what[4] = {"y", "dx", "dfilter", "dbias"};
  for (int i = 0; i < 2 * LAYERS; ++i) {
    ct_tensor *fused[4], *separate[4];
    const int pooled = i >= LAYERS;
    int fused_relu_grads, separate_relu_grads;
    conv_bias_relu_run(&layers[i % LAYERS], 1, pooled, fused, &fused_relu_grads);
    conv_bias_relu_run(&layers[i % LAYERS], 0, pooled, separate, &separate_relu_grads);
    assert_int_equal(fused_relu_grads, !pooled);
    assert_int_equal(separate_relu_grads, !pooled);
    for (int k = 0; k < 4; ++k) {
      const size_t bytes = (size_t)ct_tensor_elements(separate[k]) * sizeof(float);
      assert_int_equal(ct_tensor_elements(fused[k]), ct_tensor_elements(separate[k]));
      if (memcmp(ct_tensor_f32(fused[k]), ct_tensor_f32(separate[k]), bytes) != 0)
        fail_msg("layer %d%s: %s differs between the fused and the separate ops", i % LAYERS,
                 pooled ? " pooled" : "", what[k]);
      ct_tensor_free(fused[k]);
      ct_tensor_free(separate[k]);
    }
    const conv_layer *l = &layers[i % LAYERS];
    printf("  %lld to %lld channels, %lldx%lld /%lld%s: the same bits\n", (long long)l->in,
           (long long)l->out, (long long)l->ksize, (long long)l->ksize, (long long)l->stride,
           pooled ? ", max pooled" : "");
  }
}

/* Gradients held back: of y = sum(x * StopGradient(x)) x gets x (not 2 x);
 * of y = sum(a * b) with b = 2 a held constant, a gets b (not b + 2 a) and
 * b, an x itself, gets a. */
static void test_stopped_gradients(void **state) {
  (void)state;
  ct_status st = CT_STATUS_INIT;
  ct_graph *g = ct_graph_new();
  const ct_shape s = ct_shape_of(1, (int64_t)3);
  ct_output x = ct_placeholder(g, "x", CT_F32, s);
  ct_output b = ct_mul(g, x, ct_scalar(g, 2.0f));
  ct_output dx[1], dab[2];
  assert_int_equal(ct_gradients(g, ct_reduce_sum(g, ct_mul(g, x, ct_stop_gradient(g, x)), 0, 0),
                                1, &x, dx), 0);
  assert_int_equal(ct_gradients_stopping(g, ct_reduce_sum(g, ct_mul(g, x, b), 0, 0), 2,
                                         (ct_output[]){x, b}, 1, &b, dab), 0);
  assert_status_ok(ct_graph_status(g));
  float xv[3] = {1.0f, -2.0f, 0.5f};
  ct_tensor xt = {CT_F32, s, xv, 0};
  ct_feed feed = {x, &xt};
  ct_session *sess = ct_session_new(g, NULL, &st);
  assert_status_ok(&st);
  ct_output fetches[3] = {dx[0], dab[0], dab[1]};
  ct_tensor *out[3];
  ct_session_run(sess, &feed, 1, fetches, 3, NULL, 0, out, &st);
  assert_status_ok(&st);
  for (int i = 0; i < 3; ++i) {
    assert_float_equal(ct_tensor_f32(out[0])[i], xv[i], 0);
    assert_float_equal(ct_tensor_f32(out[1])[i], 2.0f * xv[i], 0);
    assert_float_equal(ct_tensor_f32(out[2])[i], xv[i], 0);
  }
  printf("  StopGradient and stop_gradients hold their tensors constant\n");
  for (int i = 0; i < 3; ++i) ct_tensor_free(out[i]);
  ct_session_free(sess);
  ct_graph_free(g);
}

/* More than one AddN's worth of gradients (100) reaching one output, or
 * one variable through 100 reads, are summed whole: d/dx sum_k k x = 5050. */
static void test_many_gradients_are_summed_whole(void **state) {
  (void)state;
  enum { USES = 100 };
  ct_status st = CT_STATUS_INIT;
  ct_graph *g = ct_graph_new();
  const ct_shape s = ct_shape_of(1, (int64_t)2);
  ct_output x = ct_placeholder(g, "x", CT_F32, s);
  ct_initializer ones = {CT_INIT_ONES, 0};
  ct_output x_terms[USES], w_terms[USES];
  for (int k = 0; k < USES; ++k) {
    if (k == 1) ct_graph_push_variable_reuse(g);
    ct_output w = ct_variable(g, "w", s, ones, 1);
    ct_output times = ct_scalar(g, (float)(k + 1));
    x_terms[k] = ct_reduce_sum(g, ct_mul(g, x, times), 0, 0);
    w_terms[k] = ct_reduce_sum(g, ct_mul(g, w, times), 0, 0);
  }
  ct_graph_pop_variable_reuse(g);
  ct_output dx, dw;
  ct_output x_loss = ct_add(g, ct_add_n(g, 50, x_terms), ct_add_n(g, 50, x_terms + 50));
  assert_int_equal(ct_gradients(g, x_loss, 1, &x, &dx), 0);
  int variable, n = 0;
  ct_output w_loss = ct_add(g, ct_add_n(g, 50, w_terms), ct_add_n(g, 50, w_terms + 50));
  assert_int_equal(ct_variable_gradients(g, w_loss, &variable, &dw, &n), 0);
  assert_int_equal(n, 1);
  assert_status_ok(ct_graph_status(g));
  float xv[2] = {1.0f, -2.0f};
  ct_tensor xt = {CT_F32, s, xv, 0};
  ct_feed feed = {x, &xt};
  ct_session *sess = ct_session_new(g, NULL, &st);
  assert_status_ok(&st);
  ct_output fetches[2] = {dx, dw};
  ct_tensor *out[2];
  ct_session_run(sess, &feed, 1, fetches, 2, NULL, 0, out, &st);
  assert_status_ok(&st);
  for (int i = 0; i < 2; ++i) {
    assert_float_equal(ct_tensor_f32(out[0])[i], 5050.0f, 0);
    assert_float_equal(ct_tensor_f32(out[1])[i], 5050.0f, 0);
  }
  printf("  %d gradients of one tensor, and of one variable's %d reads: summed whole\n", USES, USES);
  for (int i = 0; i < 2; ++i) ct_tensor_free(out[i]);
  ct_session_free(sess);
  ct_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_all_gradients),
                                     cmocka_unit_test(test_max_pool_of_relu),
                                     cmocka_unit_test(test_conv_bias_relu_fused),
                                     cmocka_unit_test(test_stopped_gradients),
                                     cmocka_unit_test(test_many_gradients_are_summed_whole)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
