/* Elementwise math, reductions and matmul: shape rules, gradients, builders. */
#include "ops/op_cost.h"
#include "ops/op_list.h"
#include "ops/shape_rules.h"

static ct_node *add1(ct_graph *g, const ct_op_def *op, ct_output x) {
  return ct_graph_add_node(g, op, NULL, 1, &x, 1, NULL);
}
static ct_node *add2(ct_graph *g, const ct_op_def *op, ct_output a, ct_output b) {
  ct_output in[2] = {a, b};
  return ct_graph_add_node(g, op, NULL, 2, in, 1, NULL);
}

/* ---- binary elementwise with broadcasting ------------------------------- */

ct_output ct_sum_to_shape_of(ct_graph *g, ct_output grad, ct_output x) {
  ct_shape gs = ct_output_shape(grad), xs = ct_output_shape(x);
  if (ct_shape_equal(&gs, &xs)) return grad;
  return ct_sum_like(g, grad, x);
}

static void grad_add(ct_graph *g, const ct_node *n, const ct_output *gy, ct_output *gx) {
  gx[0] = ct_sum_to_shape_of(g, gy[0], n->inputs[0]);
  gx[1] = ct_sum_to_shape_of(g, gy[0], n->inputs[1]);
}
static void grad_sub(ct_graph *g, const ct_node *n, const ct_output *gy, ct_output *gx) {
  gx[0] = ct_sum_to_shape_of(g, gy[0], n->inputs[0]);
  gx[1] = ct_sum_to_shape_of(g, ct_neg(g, gy[0]), n->inputs[1]);
}
static void grad_mul(ct_graph *g, const ct_node *n, const ct_output *gy, ct_output *gx) {
  gx[0] = ct_sum_to_shape_of(g, ct_mul(g, gy[0], n->inputs[1]), n->inputs[0]);
  gx[1] = ct_sum_to_shape_of(g, ct_mul(g, gy[0], n->inputs[0]), n->inputs[1]);
}
/* y = a / b: dy/da = 1/b, dy/db = -y/b. */
static void grad_div(ct_graph *g, const ct_node *n, const ct_output *gy, ct_output *gx) {
  ct_output b = n->inputs[1], y = ct_out((ct_node *)n, 0);
  gx[0] = ct_sum_to_shape_of(g, ct_div(g, gy[0], b), n->inputs[0]);
  gx[1] = ct_sum_to_shape_of(g, ct_neg(g, ct_div(g, ct_mul(g, gy[0], y), b)), b);
}

const ct_op_def ct_op_add = {"Add", ct_infer_broadcast_f32, grad_add, CT_OP_INPLACE,
                             ct_flops_per_element};
const ct_op_def ct_op_sub = {"Sub", ct_infer_broadcast_f32, grad_sub, CT_OP_INPLACE,
                             ct_flops_per_element};
const ct_op_def ct_op_mul = {"Mul", ct_infer_broadcast_f32, grad_mul, CT_OP_INPLACE,
                             ct_flops_per_element};
const ct_op_def ct_op_div = {"RealDiv", ct_infer_broadcast_f32, grad_div, CT_OP_INPLACE,
                             ct_flops_per_element};

ct_output ct_add(ct_graph *g, ct_output a, ct_output b) { return ct_out(add2(g, &ct_op_add, a, b), 0); }
ct_output ct_sub(ct_graph *g, ct_output a, ct_output b) { return ct_out(add2(g, &ct_op_sub, a, b), 0); }
ct_output ct_mul(ct_graph *g, ct_output a, ct_output b) { return ct_out(add2(g, &ct_op_mul, a, b), 0); }
ct_output ct_div(ct_graph *g, ct_output a, ct_output b) { return ct_out(add2(g, &ct_op_div, a, b), 0); }

/* BroadcastLike(x, like): x broadcast to like's shape. SumLike(x, like): x
 * summed over the broadcast dimensions down to like's shape. */
static int infer_broadcast_like(ct_infer_ctx *ctx) {
  ct_shape out;
  if (ct_broadcast_shapes(ctx, &ctx->in_shapes[0], &ctx->in_shapes[1], &out)) return 1;
  ctx->out_shapes[0] = ctx->in_shapes[1];
  ctx->out_dtypes[0] = ctx->in_dtypes[0];
  return 0;
}
static int infer_sum_like(ct_infer_ctx *ctx) { return infer_broadcast_like(ctx); }

static void grad_broadcast_like(ct_graph *g, const ct_node *n, const ct_output *gy,
                                ct_output *gx) {
  gx[0] = ct_sum_like(g, gy[0], n->inputs[0]);
}
static void grad_sum_like(ct_graph *g, const ct_node *n, const ct_output *gy, ct_output *gx) {
  gx[0] = ct_broadcast_like(g, gy[0], n->inputs[0]);
}

const ct_op_def ct_op_broadcast_like = {"BroadcastLike", infer_broadcast_like, grad_broadcast_like,
                                        0, ct_flops_none};
const ct_op_def ct_op_sum_like = {"SumLike", infer_sum_like, grad_sum_like, 0,
                                  ct_flops_per_element};

ct_output ct_broadcast_like(ct_graph *g, ct_output x, ct_output like) {
  return ct_out(add2(g, &ct_op_broadcast_like, x, like), 0);
}
ct_output ct_sum_like(ct_graph *g, ct_output x, ct_output like) {
  return ct_out(add2(g, &ct_op_sum_like, x, like), 0);
}

/* ---- unary elementwise --------------------------------------------------- */

static void grad_neg(ct_graph *g, const ct_node *n, const ct_output *gy, ct_output *gx) {
  (void)n;
  gx[0] = ct_neg(g, gy[0]);
}
static void grad_sigmoid(ct_graph *g, const ct_node *n, const ct_output *gy, ct_output *gx) {
  gx[0] = ct_out(add2(g, &ct_op_sigmoid_grad, ct_out((ct_node *)n, 0), gy[0]), 0);
}
static void grad_tanh(ct_graph *g, const ct_node *n, const ct_output *gy, ct_output *gx) {
  gx[0] = ct_out(add2(g, &ct_op_tanh_grad, ct_out((ct_node *)n, 0), gy[0]), 0);
}

const ct_op_def ct_op_neg = {"Neg", ct_infer_unary_f32, grad_neg, CT_OP_INPLACE, ct_flops_per_element};
const ct_op_def ct_op_sigmoid = {"Sigmoid", ct_infer_unary_f32, grad_sigmoid, CT_OP_INPLACE,
                                 ct_flops_per_element};
const ct_op_def ct_op_sigmoid_grad = {"SigmoidGrad", ct_infer_same_pair, NULL, CT_OP_INPLACE,
                                      ct_flops_per_element};
const ct_op_def ct_op_tanh = {"Tanh", ct_infer_unary_f32, grad_tanh, CT_OP_INPLACE,
                              ct_flops_per_element};
const ct_op_def ct_op_tanh_grad = {"TanhGrad", ct_infer_same_pair, NULL, CT_OP_INPLACE,
                                   ct_flops_per_element};

ct_output ct_neg(ct_graph *g, ct_output x) { return ct_out(add1(g, &ct_op_neg, x), 0); }
ct_output ct_sigmoid(ct_graph *g, ct_output x) { return ct_out(add1(g, &ct_op_sigmoid, x), 0); }
ct_output ct_tanh(ct_graph *g, ct_output x) { return ct_out(add1(g, &ct_op_tanh, x), 0); }

/* ---- AddN ----------------------------------------------------------------- */

/* TensorFlow's rule: every input has one shape (no broadcasting) and one
 * dtype. A dimension still unknown when the graph is built matches any; the
 * run checks again with the fed shapes. */
static int infer_add_n(ct_infer_ctx *ctx) {
  ct_shape out = ctx->in_shapes[0];
  for (int k = 1; k < ctx->n_inputs; ++k) {
    const ct_shape *s = &ctx->in_shapes[k];
    int same = s->rank == out.rank && ctx->in_dtypes[k] == ctx->in_dtypes[0];
    for (int d = 0; same && d < out.rank; ++d) {
      if (out.dims[d] < 0) out.dims[d] = s->dims[d];
      else if (s->dims[d] >= 0 && s->dims[d] != out.dims[d]) same = 0;
    }
    if (!same) {
      char a[96], b[96];
      return ct_infer_fail(ctx,
                           "AddN inputs must have one shape and dtype: input 0 is %s %s, input "
                           "%d is %s %s; reshape or broadcast them first (tf.add_n does not "
                           "broadcast)",
                           ct_dtype_name(ctx->in_dtypes[0]),
                           ct_shape_str(&ctx->in_shapes[0], a, sizeof a), k,
                           ct_dtype_name(ctx->in_dtypes[k]), ct_shape_str(s, b, sizeof b));
    }
  }
  if (ct_infer_unary_f32(ctx)) return 1;
  ctx->out_shapes[0] = out;
  return 0;
}

static void grad_add_n(ct_graph *g, const ct_node *n, const ct_output *gy, ct_output *gx) {
  (void)g;
  for (int k = 0; k < n->n_inputs; ++k) gx[k] = gy[0];
}

const ct_op_def ct_op_add_n = {"AddN", infer_add_n, grad_add_n, CT_OP_INPLACE,
                               ct_flops_per_element};

ct_output ct_add_n(ct_graph *g, int n, const ct_output *xs) {
  if (n < 1 || n > 64) {
    ct_graph_set_error(g, CT_INVALID_ARGUMENT, "ct_add_n takes 1 to 64 inputs, got %d", n);
    return ct_out(NULL, 0);
  }
  return ct_out(ct_graph_add_node(g, &ct_op_add_n, NULL, n, xs, 1, NULL), 0);
}

/* ---- reductions ------------------------------------------------------------ */

/* attrs.reduce: the reduced axes and keep_dims. */
static int infer_reduce(ct_infer_ctx *ctx) {
  if (ct_require_dtype(ctx, 0, CT_F32)) return 1;
  const ct_shape *in = &ctx->in_shapes[0];
  unsigned mask = ctx->attrs->reduce.axes_mask;
  if (mask >> in->rank)
    return ct_infer_fail(ctx, "reduction axes mask 0x%x names axes past rank %d", mask, in->rank);
  ct_shape out;
  out.rank = 0;
  for (int d = 0; d < in->rank; ++d) {
    if (mask & (1u << d)) {
      if (ctx->attrs->reduce.keep_dims) out.dims[out.rank++] = 1;
    } else {
      out.dims[out.rank++] = in->dims[d];
    }
  }
  ctx->out_shapes[0] = out;
  ctx->out_dtypes[0] = CT_F32;
  return 0;
}

/* ReduceGrad(dy, x): dy broadcast back over the reduced axes (divided by
 * their size for a mean). attrs.reduce as the reduction's, with `mean` set. */
static int infer_reduce_grad(ct_infer_ctx *ctx) {
  ctx->out_shapes[0] = ctx->in_shapes[1];
  ctx->out_dtypes[0] = CT_F32;
  return 0;
}

static void grad_reduce(ct_graph *g, const ct_node *n, const ct_output *gy, ct_output *gx,
                        int mean) {
  ct_attrs a = n->attrs;
  a.reduce.mean = mean;
  ct_output in[2] = {gy[0], n->inputs[0]};
  gx[0] = ct_out(ct_graph_add_node(g, &ct_op_reduce_grad, NULL, 2, in, 1, &a), 0);
}
static void grad_sum(ct_graph *g, const ct_node *n, const ct_output *gy, ct_output *gx) {
  grad_reduce(g, n, gy, gx, 0);
}
static void grad_mean(ct_graph *g, const ct_node *n, const ct_output *gy, ct_output *gx) {
  grad_reduce(g, n, gy, gx, 1);
}

const ct_op_def ct_op_sum = {"Sum", infer_reduce, grad_sum, 0, ct_flops_per_element};
const ct_op_def ct_op_mean = {"Mean", infer_reduce, grad_mean, 0, ct_flops_per_element};
const ct_op_def ct_op_reduce_grad = {"ReduceGrad", infer_reduce_grad, NULL, 0,
                                     ct_flops_per_element};

/* Max and Min (TensorFlow's reduce_max, reduce_min): a NaN among the
 * reduced values gives NaN; no values give -inf (Max) or +inf (Min). The
 * gradient, as TensorFlow's: dy divided among the positions equal to the
 * result, MaxMinGrad(x, y, dy) with the reduction's attrs. */
static void grad_max_min(ct_graph *g, const ct_node *n, const ct_output *gy, ct_output *gx) {
  ct_output in[3] = {n->inputs[0], ct_out((ct_node *)n, 0), gy[0]};
  gx[0] = ct_out(ct_graph_add_node(g, &ct_op_max_min_grad, NULL, 3, in, 1, &n->attrs), 0);
}

/* MaxMinGrad(x, y, dy): dx of x's shape. */
static int infer_max_min_grad(ct_infer_ctx *ctx) {
  for (int i = 0; i < 3; ++i)
    if (ct_require_dtype(ctx, i, CT_F32)) return 1;
  return ct_infer_same_as_input0(ctx);
}

/* the count of ties, then the share of each */
CT_FLOPS_PER_ELEMENT_TIMES(max_min_grad_flops, 3)

const ct_op_def ct_op_max = {"Max", infer_reduce, grad_max_min, 0, ct_flops_per_element};
const ct_op_def ct_op_min = {"Min", infer_reduce, grad_max_min, 0, ct_flops_per_element};
const ct_op_def ct_op_max_min_grad = {"MaxMinGrad", infer_max_min_grad, NULL, 0,
                                      max_min_grad_flops};

static ct_output reduce(ct_graph *g, const ct_op_def *op, ct_output x, unsigned mask,
                        int keep_dims) {
  int rank = ct_output_shape(x).rank;
  ct_attrs a = {.reduce = {.axes_mask = mask ? mask : (rank ? (1u << rank) - 1 : 0),
                           .keep_dims = keep_dims}};
  return ct_out(ct_graph_add_node(g, op, NULL, 1, &x, 1, &a), 0);
}
ct_output ct_reduce_sum(ct_graph *g, ct_output x, unsigned mask, int keep_dims) {
  return reduce(g, &ct_op_sum, x, mask, keep_dims);
}
ct_output ct_reduce_mean(ct_graph *g, ct_output x, unsigned mask, int keep_dims) {
  return reduce(g, &ct_op_mean, x, mask, keep_dims);
}
ct_output ct_reduce_max(ct_graph *g, ct_output x, unsigned mask, int keep_dims) {
  return reduce(g, &ct_op_max, x, mask, keep_dims);
}
ct_output ct_reduce_min(ct_graph *g, ct_output x, unsigned mask, int keep_dims) {
  return reduce(g, &ct_op_min, x, mask, keep_dims);
}

/* ---- matmul ---------------------------------------------------------------- */

/* attrs.matmul. a [M, K] (or [K, M]), b [K, N] (or [N, K]). */
static int infer_matmul(ct_infer_ctx *ctx) {
  if (ct_require_rank(ctx, 0, 2) || ct_require_rank(ctx, 1, 2) ||
      ct_require_dtype(ctx, 0, CT_F32) || ct_require_dtype(ctx, 1, CT_F32))
    return 1;
  const ct_shape *a = &ctx->in_shapes[0], *b = &ctx->in_shapes[1];
  int ta = ctx->attrs->matmul.transpose_a != 0, tb = ctx->attrs->matmul.transpose_b != 0;
  int64_t m = a->dims[ta], ka = a->dims[1 - ta], kb = b->dims[tb], n = b->dims[1 - tb];
  if (ka >= 0 && kb >= 0 && ka != kb) {
    char sa[96], sb[96];
    return ct_infer_fail(ctx, "cannot multiply %s%s by %s%s: inner dimensions %lld and %lld differ",
                         ct_shape_str(a, sa, sizeof sa), ta ? "^T" : "",
                         ct_shape_str(b, sb, sizeof sb), tb ? "^T" : "", (long long)ka,
                         (long long)kb);
  }
  ctx->out_shapes[0] = ct_shape_of(2, m, n);
  ctx->out_dtypes[0] = CT_F32;
  return 0;
}

static void grad_matmul(ct_graph *g, const ct_node *n, const ct_output *gy, ct_output *gx) {
  ct_output a = n->inputs[0], b = n->inputs[1], dy = gy[0];
  int ta = n->attrs.matmul.transpose_a != 0, tb = n->attrs.matmul.transpose_b != 0;
  if (!ta && !tb) {
    gx[0] = ct_matmul(g, dy, b, 0, 1);
    gx[1] = ct_matmul(g, a, dy, 1, 0);
  } else if (!ta && tb) {
    gx[0] = ct_matmul(g, dy, b, 0, 0);
    gx[1] = ct_matmul(g, dy, a, 1, 0);
  } else if (ta && !tb) {
    gx[0] = ct_matmul(g, b, dy, 0, 1);
    gx[1] = ct_matmul(g, a, dy, 0, 0);
  } else {
    gx[0] = ct_matmul(g, b, dy, 1, 1);
    gx[1] = ct_matmul(g, dy, a, 1, 1);
  }
}

/* [M, K] x [K, N]: 2 M N K. */
static double matmul_flops(const ct_attrs *attrs, int n_inputs, const ct_shape *in, int n_outputs,
                           const ct_shape *out) {
  if (n_inputs < 2 || n_outputs < 1 || in[0].rank != 2) return 0;
  const int64_t k = attrs->matmul.transpose_a ? in[0].dims[0] : in[0].dims[1];
  return 2.0 * ct_shape_elements_or_zero(&out[0]) * (double)k;
}

const ct_op_def ct_op_matmul = {"MatMul", infer_matmul, grad_matmul, CT_OP_DENSE, matmul_flops};

ct_output ct_matmul(ct_graph *g, ct_output a, ct_output b, int transpose_a, int transpose_b) {
  ct_attrs attrs = {.matmul = {.transpose_a = transpose_a, .transpose_b = transpose_b}};
  ct_output in[2] = {a, b};
  return ct_out(ct_graph_add_node(g, &ct_op_matmul, NULL, 2, in, 1, &attrs), 0);
}
