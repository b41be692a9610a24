/* Neural-network ops: ReLU, convolution, pooling, LRN, batch norm, dropout,
 * softmax cross-entropy, argmax and accuracy. */
#include "ops/conv_geometry.h"
#include "ops/op_cost.h"
#include "ops/op_list.h"
#include "ops/shape_rules.h"

static ct_node *add_with(ct_graph *g, const ct_op_def *op, int n_in, const ct_output *in,
                         int n_out, const ct_attrs *a) {
  return ct_graph_add_node(g, op, NULL, n_in, in, n_out, a);
}

/* Backward ops whose outputs take the shapes of the listed inputs. */
static int infer_like_inputs(ct_infer_ctx *ctx, const int *inputs) {
  for (int o = 0; o < ctx->n_outputs; ++o) {
    ctx->out_shapes[o] = ctx->in_shapes[inputs[o]];
    ctx->out_dtypes[o] = CT_F32;
  }
  return 0;
}

/* ---- Relu ------------------------------------------------------------------
 * max(0, x); ReluGrad(dy, y): dy where y > 0. Its gradient skips the
 * ReluGrad where a max pool's gradient has masked dy already (see MaxPool). */

static int gradient_masked_for_relu(ct_output gradient, const ct_node *relu);

/* The gradient of the input of `relu` (a Relu, or a Conv2D with its ReLU)
 * given gy, its output's. */
static ct_output relu_input_gradient(ct_graph *g, const ct_node *relu, ct_output gy) {
  if (gradient_masked_for_relu(gy, relu)) return gy;
  ct_output in[2] = {gy, ct_out((ct_node *)relu, 0)};
  return ct_out(add_with(g, &ct_op_relu_grad, 2, in, 1, NULL), 0);
}

static void grad_relu(ct_graph *g, const ct_node *n, const ct_output *gy, ct_output *gx) {
  gx[0] = relu_input_gradient(g, n, gy[0]);
}

const ct_op_def ct_op_relu = {"Relu", ct_infer_unary_f32, grad_relu, CT_OP_INPLACE,
                              ct_flops_per_element};
const ct_op_def ct_op_relu_grad = {"ReluGrad", ct_infer_same_pair, NULL, CT_OP_INPLACE,
                                   ct_flops_per_element};

ct_output ct_relu(ct_graph *g, ct_output x) {
  return ct_out(add_with(g, &ct_op_relu, 1, &x, 1, NULL), 0);
}

/* ---- Conv2D ----------------------------------------------------------------
 * x [N, H, W, C], filter [R, S, C, K] (, bias [K]) -> [N, P, Q, K]; with a
 * bias, conv + bias, and with attrs.conv2d.relu, max(0, that).
 * attrs.conv2d. */
static int infer_conv2d(ct_infer_ctx *ctx) {
  if (ct_require_rank(ctx, 0, 4) || ct_require_rank(ctx, 1, 4) ||
      ct_require_dtype(ctx, 0, CT_F32) || ct_require_dtype(ctx, 1, CT_F32))
    return 1;
  const ct_shape *x = &ctx->in_shapes[0], *f = &ctx->in_shapes[1];
  if (ctx->n_inputs == 3) {
    if (ct_require_rank(ctx, 2, 1) || ct_require_dtype(ctx, 2, CT_F32)) return 1;
    const int64_t b = ctx->in_shapes[2].dims[0];
    if (b >= 0 && f->dims[3] >= 0 && b != f->dims[3])
      return ct_infer_fail(ctx, "the bias has %lld elements but the filter %lld output channels",
                           (long long)b, (long long)f->dims[3]);
  }
  const ct_conv2d_attrs *a = &ctx->attrs->conv2d;
  if (a->strides[0] < 1 || a->strides[1] < 1) return ct_infer_fail(ctx, "strides must be >= 1");
  if (a->dilations[0] < 1 || a->dilations[1] < 1)
    return ct_infer_fail(ctx, "dilations must be >= 1");
  if (x->dims[3] >= 0 && x->dims[3] != f->dims[2]) {
    char sx[96], sf[96];
    return ct_infer_fail(ctx, "input %s has %lld channels but filter %s expects %lld",
                         ct_shape_str(x, sx, sizeof sx), (long long)x->dims[3],
                         ct_shape_str(f, sf, sizeof sf), (long long)f->dims[2]);
  }
  ct_window hw[2];
  ct_conv_windows(x->dims, f->dims, a->strides, a->dilations, a->same_padding, hw);
  if (hw[0].out == 0 || hw[1].out == 0)
    return ct_infer_fail(ctx, "the filter (%lld x %lld with its dilations) is larger than the input",
                         (long long)ct_dilated(f->dims[0], a->dilations[0]),
                         (long long)ct_dilated(f->dims[1], a->dilations[1]));
  ctx->out_shapes[0] = ct_shape_of(4, x->dims[0], hw[0].out, hw[1].out, f->dims[3]);
  ctx->out_dtypes[0] = CT_F32;
  return 0;
}

/* Conv2DBackpropInput(filter, dy, x_like) -> dx; Conv2DBackpropFilter(x, dy,
 * filter_like) -> dfilter. */
static int infer_conv_backprop_input(ct_infer_ctx *ctx) {
  static const int like[] = {2};
  return infer_like_inputs(ctx, like);
}
static int infer_conv_backprop_filter(ct_infer_ctx *ctx) {
  static const int like[] = {2};
  return infer_like_inputs(ctx, like);
}

static void grad_conv2d(ct_graph *g, const ct_node *n, const ct_output *gy, ct_output *gx) {
  ct_output x = n->inputs[0], f = n->inputs[1];
  const ct_output dy = n->attrs.conv2d.relu ? relu_input_gradient(g, n, gy[0]) : gy[0];
  ct_output in_dx[3] = {f, dy, x};
  ct_output in_df[3] = {x, dy, f};
  ct_attrs a = n->attrs;
  a.conv2d.relu = 0;
  gx[0] = ct_out(add_with(g, &ct_op_conv2d_backprop_input, 3, in_dx, 1, &a), 0);
  gx[1] = ct_out(add_with(g, &ct_op_conv2d_backprop_filter, 3, in_df, 1, &a), 0);
  if (n->n_inputs == 3) gx[2] = ct_sum_like(g, dy, n->inputs[2]);
}

/* y [N, OH, OW, OC] from x and filter [KH, KW, IC, OC]: each of the three
 * ops does one multiply-accumulate per element of y (or dy) and filter tap. */
static double conv_flops(const ct_shape *filter, const ct_shape *y) {
  if (filter->rank != 4) return 0;
  return 2.0 * ct_shape_elements_or_zero(y) *
         (double)(filter->dims[0] * filter->dims[1] * filter->dims[2]);
}

/* Conv2D(x, filter[, bias]) -> y */
static double conv2d_flops(const ct_attrs *attrs, int n_inputs, const ct_shape *in, int n_outputs,
                           const ct_shape *out) {
  (void)attrs;
  return n_inputs >= 2 && n_outputs >= 1 ? conv_flops(&in[1], &out[0]) : 0;
}

/* Conv2DBackpropInput(filter, dy) -> dx */
static double conv2d_backprop_input_flops(const ct_attrs *attrs, int n_inputs, const ct_shape *in,
                                          int n_outputs, const ct_shape *out) {
  (void)attrs, (void)out;
  return n_inputs >= 2 && n_outputs >= 1 ? conv_flops(&in[0], &in[1]) : 0;
}

/* Conv2DBackpropFilter(x, dy) -> dfilter */
static double conv2d_backprop_filter_flops(const ct_attrs *attrs, int n_inputs, const ct_shape *in,
                                           int n_outputs, const ct_shape *out) {
  (void)attrs;
  return n_inputs >= 2 && n_outputs >= 1 ? conv_flops(&out[0], &in[1]) : 0;
}

const ct_op_def ct_op_conv2d = {"Conv2D", infer_conv2d, grad_conv2d, CT_OP_DENSE, conv2d_flops};
const ct_op_def ct_op_conv2d_backprop_input = {"Conv2DBackpropInput", infer_conv_backprop_input,
                                               NULL, CT_OP_DENSE, conv2d_backprop_input_flops};
const ct_op_def ct_op_conv2d_backprop_filter = {"Conv2DBackpropFilter", infer_conv_backprop_filter,
                                                NULL, CT_OP_DENSE, conv2d_backprop_filter_flops};

static ct_output conv2d(ct_graph *g, ct_output x, ct_output filter, ct_output bias,
                        const ct_conv2d_attrs *attrs) {
  ct_attrs a = {.conv2d = *attrs};
  ct_output in[3] = {x, filter, bias};
  return ct_out(add_with(g, &ct_op_conv2d, bias.node ? 3 : 2, in, 1, &a), 0);
}

ct_output ct_conv2d(ct_graph *g, ct_output x, ct_output filter, int stride_h, int stride_w,
                    ct_padding padding) {
  return ct_conv2d_dilated(g, x, filter, stride_h, stride_w, 1, 1, padding);
}

ct_output ct_conv2d_dilated(ct_graph *g, ct_output x, ct_output filter, int stride_h,
                            int stride_w, int dilation_h, int dilation_w, ct_padding padding) {
  const ct_conv2d_attrs a = {.strides = {stride_h, stride_w},
                             .dilations = {dilation_h, dilation_w},
                             .same_padding = padding == CT_PADDING_SAME};
  return conv2d(g, x, filter, (ct_output){NULL, 0}, &a);
}

ct_output ct_conv2d_bias(ct_graph *g, ct_output x, ct_output filter, ct_output bias, int stride_h,
                         int stride_w, ct_padding padding, int relu) {
  const ct_conv2d_attrs a = {.strides = {stride_h, stride_w},
                             .dilations = {1, 1},
                             .same_padding = padding == CT_PADDING_SAME,
                             .relu = relu != 0};
  return conv2d(g, x, filter, bias, &a);
}

/* ---- pooling ------------------------------------------------------------------
 * attrs.pool. x [N, H, W, C]. */
static int infer_pool(ct_infer_ctx *ctx) {
  if (ct_require_rank(ctx, 0, 4) || ct_require_dtype(ctx, 0, CT_F32)) return 1;
  const ct_shape *x = &ctx->in_shapes[0];
  const ct_pool_attrs *a = &ctx->attrs->pool;
  if (a->window[0] < 1 || a->window[1] < 1 || a->stride[0] < 1 || a->stride[1] < 1)
    return ct_infer_fail(ctx, "windows and strides must be >= 1");
  ct_window h = ct_window_of(x->dims[1], a->window[0], a->stride[0], a->same_padding);
  ct_window w = ct_window_of(x->dims[2], a->window[1], a->stride[1], a->same_padding);
  if (h.out == 0 || w.out == 0) return ct_infer_fail(ctx, "the window is larger than the input");
  ctx->out_shapes[0] = ct_shape_of(4, x->dims[0], h.out, w.out, x->dims[3]);
  ctx->out_dtypes[0] = CT_F32;
  return 0;
}

/* MaxPoolGrad(x, dy) -> dx; AvgPoolGrad(dy, x_like) -> dx. */
static int infer_max_pool_grad(ct_infer_ctx *ctx) {
  static const int like[] = {0};
  return infer_like_inputs(ctx, like);
}
static int infer_avg_pool_grad(ct_infer_ctx *ctx) {
  static const int like[] = {1};
  return infer_like_inputs(ctx, like);
}

static int same_output(ct_output a, ct_output b) { return a.node == b.node && a.index == b.index; }

/* Whether n's output 0 is a ReLU's: a Relu, or a Conv2D with its ReLU. */
static int outputs_relu(const ct_node *n) {
  return n->op == &ct_op_relu || (n->op == &ct_op_conv2d && n->attrs.conv2d.relu);
}

/* A max pool of a ReLU's output r (every value >= 0) routes dy to each
 * window's maximum, which the ReLU lets through where it is above 0: where
 * the pool's output y is. So the pool masks dy on y, ReluGrad(dy, y), a
 * quarter of r's elements under 2x2 windows, and the ReLU's gradient takes
 * the pool's as it is (gradient_masked_for_relu) instead of a ReluGrad
 * over all of r: the same values, bit for bit. */
static void grad_max_pool(ct_graph *g, const ct_node *n, const ct_output *gy, ct_output *gx) {
  ct_output dy = gy[0];
  if (outputs_relu(n->inputs[0].node)) {
    ct_output masking[2] = {gy[0], ct_out((ct_node *)n, 0)};
    dy = ct_out(add_with(g, &ct_op_relu_grad, 2, masking, 1, NULL), 0);
  }
  ct_output in[2] = {n->inputs[0], dy};
  gx[0] = ct_out(add_with(g, &ct_op_max_pool_grad, 2, in, 1, &n->attrs), 0);
}

/* Whether `gradient`, flowing into `relu`, is a max pool's gradient that
 * already passes only where the ReLU would. */
static int gradient_masked_for_relu(ct_output gradient, const ct_node *relu) {
  const ct_output r = ct_out((ct_node *)relu, 0);
  const ct_node *pool_grad = gradient.node;
  if (pool_grad == NULL || pool_grad->op != &ct_op_max_pool_grad ||
      !same_output(pool_grad->inputs[0], r))
    return 0;
  const ct_node *mask = pool_grad->inputs[1].node;
  if (mask->op != &ct_op_relu_grad) return 0;
  const ct_node *pool = mask->inputs[1].node;
  return pool->op == &ct_op_max_pool && same_output(pool->inputs[0], r) && outputs_relu(relu);
}

static void grad_avg_pool(ct_graph *g, const ct_node *n, const ct_output *gy, ct_output *gx) {
  ct_output in[2] = {gy[0], n->inputs[0]};
  gx[0] = ct_out(add_with(g, &ct_op_avg_pool_grad, 2, in, 1, &n->attrs), 0);
}

const ct_op_def ct_op_max_pool = {"MaxPool", infer_pool, grad_max_pool, 0, ct_flops_per_element};
const ct_op_def ct_op_max_pool_grad = {"MaxPoolGrad", infer_max_pool_grad, NULL, 0,
                                       ct_flops_per_element};
const ct_op_def ct_op_avg_pool = {"AvgPool", infer_pool, grad_avg_pool, 0, ct_flops_per_element};
const ct_op_def ct_op_avg_pool_grad = {"AvgPoolGrad", infer_avg_pool_grad, NULL, 0,
                                       ct_flops_per_element};

static ct_output pool(ct_graph *g, const ct_op_def *op, ct_output x, int kh, int kw,
                      int stride_h, int stride_w, ct_padding padding) {
  ct_attrs a = {.pool = {.window = {kh, kw},
                         .stride = {stride_h, stride_w},
                         .same_padding = padding == CT_PADDING_SAME}};
  return ct_out(add_with(g, op, 1, &x, 1, &a), 0);
}
ct_output ct_max_pool(ct_graph *g, ct_output x, int ksize, int stride, ct_padding padding) {
  return pool(g, &ct_op_max_pool, x, ksize, ksize, stride, stride, padding);
}
ct_output ct_avg_pool(ct_graph *g, ct_output x, int ksize, int stride, ct_padding padding) {
  return pool(g, &ct_op_avg_pool, x, ksize, ksize, stride, stride, padding);
}
ct_output ct_max_pool_hw(ct_graph *g, ct_output x, int kh, int kw, int stride_h, int stride_w,
                         ct_padding padding) {
  return pool(g, &ct_op_max_pool, x, kh, kw, stride_h, stride_w, padding);
}
ct_output ct_avg_pool_hw(ct_graph *g, ct_output x, int kh, int kw, int stride_h, int stride_w,
                         ct_padding padding) {
  return pool(g, &ct_op_avg_pool, x, kh, kw, stride_h, stride_w, padding);
}

/* ---- LRN -----------------------------------------------------------------------
 * attrs.lrn. LRNGrad(x, dy). */
static int infer_lrn(ct_infer_ctx *ctx) {
  if (ct_require_rank(ctx, 0, 4) || ct_require_dtype(ctx, 0, CT_F32)) return 1;
  return ct_infer_same_as_input0(ctx);
}
static void grad_lrn(ct_graph *g, const ct_node *n, const ct_output *gy, ct_output *gx) {
  ct_output in[2] = {n->inputs[0], gy[0]};
  gx[0] = ct_out(add_with(g, &ct_op_lrn_grad, 2, in, 1, &n->attrs), 0);
}
/* a few operations per element: the window's sum of squares is kept running */
CT_FLOPS_PER_ELEMENT_TIMES(lrn_flops, 4)

const ct_op_def ct_op_lrn = {"LRN", infer_lrn, grad_lrn, 0, lrn_flops};
const ct_op_def ct_op_lrn_grad = {"LRNGrad", ct_infer_same_as_input0, NULL, 0, lrn_flops};

ct_output ct_lrn(ct_graph *g, ct_output x, int depth_radius, float bias, float alpha, float beta) {
  ct_attrs a = {.lrn = {.depth_radius = depth_radius, .bias = bias, .alpha = alpha, .beta = beta}};
  return ct_out(add_with(g, &ct_op_lrn, 1, &x, 1, &a), 0);
}

/* ---- batch norm -------------------------------------------------------------------
 * Channels are the last axis (C). attrs.batch_norm.
 * BatchNormTraining(x, gamma, beta) -> y, batch mean [C], unbiased batch
 *   variance [C] (for the moving average), inverse std [C] (for the gradient).
 * BatchNormInference(x, gamma, beta, mean, var) -> y.
 * BatchNormGrad(x, gamma, mean, inv_std, dy [, beta]) -> dx, dgamma, dbeta.
 * With attrs.batch_norm.relu, BatchNormTraining's y is max(0, y) and its
 * gradient takes beta, from which it recomputes where y > 0: the gradient
 * of y before the ReLU is dy there, 0 elsewhere.
 * BatchNormInferenceGrad(x, gamma, mean, var, dy) -> dx, dgamma, dbeta. */
static int check_channel_params(ct_infer_ctx *ctx, int first, int count) {
  if (ctx->in_shapes[0].rank < 1) return ct_infer_fail(ctx, "x must have rank >= 1");
  if (ct_require_dtype(ctx, 0, CT_F32)) return 1;
  int64_t c = ctx->in_shapes[0].dims[ctx->in_shapes[0].rank - 1];
  for (int k = first; k < first + count; ++k) {
    const ct_shape *s = &ctx->in_shapes[k];
    if (s->rank != 1 || (c >= 0 && s->dims[0] != c)) {
      char sx[96], sp[96];
      return ct_infer_fail(ctx, "input %d has shape %s; x %s needs [%lld]", k,
                           ct_shape_str(s, sp, sizeof sp),
                           ct_shape_str(&ctx->in_shapes[0], sx, sizeof sx), (long long)c);
    }
  }
  return 0;
}

static int infer_bn_training(ct_infer_ctx *ctx) {
  if (check_channel_params(ctx, 1, 2)) return 1;
  int64_t c = ctx->in_shapes[0].dims[ctx->in_shapes[0].rank - 1];
  ctx->out_shapes[0] = ctx->in_shapes[0];
  for (int o = 0; o < 4; ++o) ctx->out_dtypes[o] = CT_F32;
  for (int o = 1; o < 4; ++o) ctx->out_shapes[o] = ct_shape_of(1, c);
  return 0;
}
static int infer_bn_inference(ct_infer_ctx *ctx) {
  if (check_channel_params(ctx, 1, 4)) return 1;
  return ct_infer_same_as_input0(ctx);
}
static int infer_bn_grad(ct_infer_ctx *ctx) {
  static const int like[] = {0, 1, 1};
  return infer_like_inputs(ctx, like);
}

static void grad_bn_training(ct_graph *g, const ct_node *n, const ct_output *gy, ct_output *gx) {
  if (gy[0].node == NULL) return; /* only y carries a gradient */
  ct_output in[6] = {n->inputs[0], n->inputs[1], ct_out((ct_node *)n, 1),
                     ct_out((ct_node *)n, 3), gy[0], n->inputs[2]};
  ct_node *grad =
      add_with(g, &ct_op_batch_norm_grad, n->attrs.batch_norm.relu ? 6 : 5, in, 3, &n->attrs);
  for (int k = 0; k < 3; ++k) gx[k] = ct_out(grad, k);
}
static void grad_bn_inference(ct_graph *g, const ct_node *n, const ct_output *gy,
                              ct_output *gx) {
  ct_output in[5] = {n->inputs[0], n->inputs[1], n->inputs[3], n->inputs[4], gy[0]};
  ct_node *grad = add_with(g, &ct_op_batch_norm_inference_grad, 5, in, 3, &n->attrs);
  for (int k = 0; k < 3; ++k) gx[k] = ct_out(grad, k);
}

/* moments, then normalization (or their gradients): a few passes per element */
CT_FLOPS_PER_ELEMENT_TIMES(batch_norm_flops, 8)

const ct_op_def ct_op_batch_norm_training = {"FusedBatchNorm", infer_bn_training, grad_bn_training,
                                             0, batch_norm_flops};
const ct_op_def ct_op_batch_norm_inference = {"FusedBatchNormInference", infer_bn_inference,
                                              grad_bn_inference, 0, ct_flops_per_element};
const ct_op_def ct_op_batch_norm_grad = {"FusedBatchNormGrad", infer_bn_grad, NULL, 0,
                                         batch_norm_flops};
const ct_op_def ct_op_batch_norm_inference_grad = {"FusedBatchNormInferenceGrad", infer_bn_grad,
                                                   NULL, 0, ct_flops_per_element};

/* AssignMovingAverage(variable, value): variable = momentum * variable +
 * (1 - momentum) * value. attrs.moving_average. */
static int infer_assign(ct_infer_ctx *ctx) {
  if (!ct_shape_equal(&ctx->in_shapes[0], &ctx->in_shapes[1]))
    return ct_infer_fail(ctx, "value and variable shapes differ");
  return ct_infer_same_as_input0(ctx);
}
const ct_op_def ct_op_assign_moving_average = {
    "AssignMovingAvg", infer_assign, NULL,
    CT_OP_ALIAS_INPUT0 | CT_OP_MUTATES_INPUT0 | CT_OP_STATEFUL | CT_OP_NO_GRADIENT,
    ct_flops_per_element};

static ct_output batch_norm(ct_graph *g, ct_output x, ct_output gamma, ct_output beta,
                            ct_output moving_mean, ct_output moving_var, int training,
                            float momentum, float epsilon, int relu) {
  ct_attrs a = {.batch_norm = {.epsilon = epsilon, .relu = relu && training}};
  if (!training) {
    ct_output in[5] = {x, gamma, beta, moving_mean, moving_var};
    ct_output y = ct_out(add_with(g, &ct_op_batch_norm_inference, 5, in, 1, &a), 0);
    return relu ? ct_relu(g, y) : y;
  }
  ct_output in[3] = {x, gamma, beta};
  ct_node *bn = add_with(g, &ct_op_batch_norm_training, 3, in, 4, &a);
  if (bn && moving_mean.node && moving_var.node) {
    ct_attrs m = {.moving_average = {.momentum = momentum}};
    ct_output mean_in[2] = {moving_mean, ct_out(bn, 1)};
    ct_output var_in[2] = {moving_var, ct_out(bn, 2)};
    ct_graph_add_update_op(g, add_with(g, &ct_op_assign_moving_average, 2, mean_in, 1, &m));
    ct_graph_add_update_op(g, add_with(g, &ct_op_assign_moving_average, 2, var_in, 1, &m));
  }
  return ct_out(bn, 0);
}

ct_output ct_batch_norm(ct_graph *g, ct_output x, ct_output gamma, ct_output beta,
                        ct_output moving_mean, ct_output moving_var, int training,
                        float momentum, float epsilon) {
  return batch_norm(g, x, gamma, beta, moving_mean, moving_var, training, momentum, epsilon, 0);
}

ct_output ct_batch_norm_relu(ct_graph *g, ct_output x, ct_output gamma, ct_output beta,
                             ct_output moving_mean, ct_output moving_var, int training,
                             float momentum, float epsilon) {
  return batch_norm(g, x, gamma, beta, moving_mean, moving_var, training, momentum, epsilon, 1);
}

/* ---- dropout ------------------------------------------------------------------------
 * Dropout(x [, first_example] [, rate]) and DropoutGrad(dy, the same).
 * attrs.dropout: the rate (or which input gives it: an f32 scalar) and the
 * random stream (the forward node's seed),
 * shared with DropoutGrad so that both see the same mask. Element i of example e
 * of the batch keeps or drops by a hash of (stream, step, e * example size +
 * i); e counts from first_example, an i64 scalar (0 when absent), so that a
 * replica computing examples 40.. of a batch draws their masks as one
 * computing the whole batch would (ct_graph_set_replica). */
static void grad_dropout(ct_graph *g, const ct_node *n, const ct_output *gy, ct_output *gx) {
  ct_output in[3] = {gy[0]};
  for (int j = 1; j < n->n_inputs; ++j) in[j] = n->inputs[j];
  gx[0] = ct_out(add_with(g, &ct_op_dropout_grad, n->n_inputs, in, 1, &n->attrs), 0);
}
static int infer_dropout(ct_infer_ctx *ctx) {
  if (ct_require_dtype(ctx, 0, CT_F32)) return 1;
  const int rate = ctx->attrs->dropout.rate_input;
  for (int j = 1; j < ctx->n_inputs; ++j)
    if (ct_require_dtype(ctx, j, j == rate ? CT_F32 : CT_I64) || ct_require_rank(ctx, j, 0))
      return 1;
  return ct_infer_same_as_input0(ctx);
}
const ct_op_def ct_op_dropout = {"Dropout", infer_dropout, grad_dropout, CT_OP_INPLACE,
                                 ct_flops_per_element};
const ct_op_def ct_op_dropout_grad = {"DropoutGrad", infer_dropout, NULL, CT_OP_INPLACE,
                                      ct_flops_per_element};

ct_output ct_dropout(ct_graph *g, ct_output x, float rate) {
  if (!(rate >= 0.0f && rate < 1.0f)) {
    ct_graph_set_error(g, CT_INVALID_ARGUMENT, "dropout rate must be in [0, 1), got %g",
                       (double)rate);
    return ct_out(NULL, 0);
  }
  ct_attrs a = {.dropout = {.rate = rate}};
  ct_output in[2] = {x, g->replica_first_example};
  ct_node *n = add_with(g, &ct_op_dropout, in[1].node ? 2 : 1, in, 1, &a);
  if (n) n->attrs.dropout.stream = n->seed >> 1;
  return ct_out(n, 0);
}

ct_output ct_dropout_tensor(ct_graph *g, ct_output x, ct_output rate) {
  ct_output in[3] = {x, g->replica_first_example, rate};
  int k = in[1].node ? 2 : 1;
  in[k] = rate;
  ct_attrs a = {.dropout = {.rate_input = k}};
  ct_node *n = add_with(g, &ct_op_dropout, k + 1, in, 1, &a);
  if (n) n->attrs.dropout.stream = n->seed >> 1;
  return ct_out(n, 0);
}

/* ---- classification ----------------------------------------------------------------
 * SparseSoftmaxCrossEntropyWithLogits(logits [N, C], labels [N] i32) ->
 *   loss [N], backprop [N, C] (softmax - onehot). */
static int check_logits_labels(ct_infer_ctx *ctx) {
  if (ct_require_rank(ctx, 0, 2) || ct_require_dtype(ctx, 0, CT_F32) ||
      ct_require_rank(ctx, 1, 1) || ct_require_dtype(ctx, 1, CT_I32))
    return 1;
  int64_t n0 = ctx->in_shapes[0].dims[0], n1 = ctx->in_shapes[1].dims[0];
  if (n0 >= 0 && n1 >= 0 && n0 != n1)
    return ct_infer_fail(ctx, "logits have %lld rows but labels %lld", (long long)n0,
                         (long long)n1);
  return 0;
}
static int infer_xent(ct_infer_ctx *ctx) {
  if (check_logits_labels(ctx)) return 1;
  ctx->out_shapes[0] = ct_shape_of(1, ctx->in_shapes[0].dims[0]);
  ctx->out_shapes[1] = ctx->in_shapes[0];
  ctx->out_dtypes[0] = ctx->out_dtypes[1] = CT_F32;
  return 0;
}
static void grad_xent(ct_graph *g, const ct_node *n, const ct_output *gy, ct_output *gx) {
  if (gy[0].node == NULL) return;
  ct_output column = ct_reshape(g, gy[0], ct_shape_of(2, (int64_t)-1, (int64_t)1));
  gx[0] = ct_mul(g, ct_out((ct_node *)n, 1), column);
}
/* softmax (max, exp, sum, divide) and its gradient per logit */
CT_FLOPS_PER_ELEMENT_TIMES(sparse_xent_flops, 5)

const ct_op_def ct_op_sparse_softmax_xent = {"SparseSoftmaxCrossEntropyWithLogits", infer_xent,
                                             grad_xent, 0, sparse_xent_flops};

ct_output ct_sparse_softmax_cross_entropy(ct_graph *g, ct_output logits, ct_output labels) {
  ct_output in[2] = {logits, labels};
  return ct_out(add_with(g, &ct_op_sparse_softmax_xent, 2, in, 2, NULL), 0);
}

/* SoftmaxCrossEntropyWithLogits(logits [N, C], labels [N, C] f32) ->
 *   loss [N], backprop [N, C] (softmax - labels). */
static int infer_dense_xent(ct_infer_ctx *ctx) {
  if (ct_require_rank(ctx, 0, 2) || ct_require_dtype(ctx, 0, CT_F32) ||
      ct_require_rank(ctx, 1, 2) || ct_require_dtype(ctx, 1, CT_F32))
    return 1;
  const ct_shape *z = &ctx->in_shapes[0], *y = &ctx->in_shapes[1];
  for (int d = 0; d < 2; ++d)
    if (z->dims[d] >= 0 && y->dims[d] >= 0 && z->dims[d] != y->dims[d]) {
      char sz[96], sy[96];
      return ct_infer_fail(ctx, "logits %s and labels %s differ in shape",
                           ct_shape_str(z, sz, sizeof sz), ct_shape_str(y, sy, sizeof sy));
    }
  ctx->out_shapes[0] = ct_shape_of(1, z->dims[0]);
  ctx->out_shapes[1] = *z;
  ctx->out_dtypes[0] = ctx->out_dtypes[1] = CT_F32;
  return 0;
}
const ct_op_def ct_op_softmax_xent = {"SoftmaxCrossEntropyWithLogits", infer_dense_xent, grad_xent,
                                      0, ct_flops_per_element};

ct_output ct_softmax_cross_entropy(ct_graph *g, ct_output logits, ct_output labels) {
  ct_output in[2] = {logits, labels};
  return ct_out(add_with(g, &ct_op_softmax_xent, 2, in, 2, NULL), 0);
}

/* L2Loss(x) -> sum(x^2) / 2, a scalar (tf.nn.l2_loss: the weight decay of
 * TensorFlow's tutorials). Its gradient is x * dy. */
static int infer_l2_loss(ct_infer_ctx *ctx) {
  if (ct_require_dtype(ctx, 0, CT_F32)) return 1;
  ctx->out_shapes[0] = ct_shape_of(0);
  ctx->out_dtypes[0] = CT_F32;
  return 0;
}
static void grad_l2_loss(ct_graph *g, const ct_node *n, const ct_output *gy, ct_output *gx) {
  if (gy[0].node) gx[0] = ct_mul(g, n->inputs[0], gy[0]);
}
const ct_op_def ct_op_l2_loss = {"L2Loss", infer_l2_loss, grad_l2_loss, 0, ct_flops_per_element};

ct_output ct_l2_loss(ct_graph *g, ct_output x) {
  return ct_out(add_with(g, &ct_op_l2_loss, 1, &x, 1, NULL), 0);
}

/* attrs.axis (negative counts back): x without that axis, the index of
 * each maximum along it. */
static int infer_argmax(ct_infer_ctx *ctx) {
  if (ct_require_dtype(ctx, 0, CT_F32)) return 1;
  const ct_shape *x = &ctx->in_shapes[0];
  int64_t axis = ctx->attrs->axis.axis;
  if (axis < 0) axis += x->rank;
  if (axis < 0 || axis >= x->rank)
    return ct_infer_fail(ctx, "argmax axis %lld is out of range for rank %d",
                         (long long)ctx->attrs->axis.axis, x->rank);
  if (x->dims[axis] == 0) {
    char buf[96];
    return ct_infer_fail(ctx, "argmax axis %lld is empty in shape %s", (long long)axis,
                         ct_shape_str(x, buf, sizeof buf));
  }
  ct_shape out = *x;
  out.rank -= 1;
  for (int d = (int)axis; d < out.rank; ++d) out.dims[d] = x->dims[d + 1];
  ctx->out_shapes[0] = out;
  ctx->out_dtypes[0] = CT_I32;
  return 0;
}
static int infer_accuracy(ct_infer_ctx *ctx) {
  if (check_logits_labels(ctx)) return 1;
  ctx->out_shapes[0] = ct_shape_of(0);
  ctx->out_dtypes[0] = CT_F32;
  return 0;
}
const ct_op_def ct_op_argmax = {"ArgMax", infer_argmax, NULL, CT_OP_NO_GRADIENT,
                                ct_flops_per_element};
const ct_op_def ct_op_accuracy = {"Accuracy", infer_accuracy, NULL, CT_OP_NO_GRADIENT,
                                  ct_flops_per_element};

ct_output ct_argmax_axis(ct_graph *g, ct_output x, int axis) {
  ct_attrs a = {.axis = {.axis = axis}};
  return ct_out(add_with(g, &ct_op_argmax, 1, &x, 1, &a), 0);
}
ct_output ct_argmax(ct_graph *g, ct_output x) { return ct_argmax_axis(g, x, -1); }
ct_output ct_accuracy(ct_graph *g, ct_output logits, ct_output labels) {
  ct_output in[2] = {logits, labels};
  return ct_out(add_with(g, &ct_op_accuracy, 2, in, 1, NULL), 0);
}
