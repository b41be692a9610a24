/* Sources and shape ops: Placeholder, Const, Variable, Identity,
 * StopGradient, ZerosLike, OnesLike, NoOp, Reshape, Concat, Split, StridedSlice (and their backward
 * helpers), Transpose. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ops/op_cost.h"
#include "ops/op_list.h"
#include "ops/shape_rules.h"
#include "ops/slice_geometry.h"

/* ---- sources ------------------------------------------------------------ */

/* attrs.source gives the output. */
static int infer_from_attrs(ct_infer_ctx *ctx) {
  ctx->out_shapes[0] = ctx->attrs->source.shape;
  ctx->out_dtypes[0] = ctx->attrs->source.dtype;
  return 0;
}

const ct_op_def ct_op_placeholder = {"Placeholder", infer_from_attrs, NULL, CT_OP_NO_GRADIENT,
                                     ct_flops_none};
const ct_op_def ct_op_const = {"Const", infer_from_attrs, NULL, CT_OP_NO_GRADIENT, ct_flops_none};
const ct_op_def ct_op_variable = {"Variable", infer_from_attrs, NULL, CT_OP_STATEFUL,
                                  ct_flops_none};
const ct_op_def ct_op_no_op = {"NoOp", NULL, NULL, CT_OP_NO_GRADIENT, ct_flops_none};

ct_output ct_placeholder(ct_graph *g, const char *name, ct_dtype dtype, ct_shape shape) {
  ct_attrs a = {.source = {.shape = shape, .dtype = dtype}};
  return ct_out(ct_graph_add_node(g, &ct_op_placeholder, name, 0, NULL, 1, &a), 0);
}

static int node_is_read(const ct_graph *g, const ct_node *node) {
  for (int i = 0; i < g->n_nodes; ++i)
    for (int k = 0; k < g->nodes[i]->n_inputs; ++k)
      if (g->nodes[i]->inputs[k].node == node) return 1;
  return 0;
}

int ct_placeholder_set_shape(ct_graph *g, ct_output placeholder, ct_shape shape) {
  ct_node *n = placeholder.node;
  if (n == NULL || n->op != &ct_op_placeholder) {
    ct_graph_set_error(g, CT_INVALID_ARGUMENT, "'%s' is not a placeholder: only a placeholder's "
                       "shape can be set", n ? n->name : "(null)");
    return -1;
  }
  if (node_is_read(g, n)) {
    ct_graph_set_error(g, CT_INVALID_ARGUMENT, "placeholder '%s' is already read by other "
                       "nodes: its shape can only be set before its first use", n->name);
    return -1;
  }
  n->attrs.source.shape = shape;
  n->shapes[0] = shape;
  return 0;
}

ct_output ct_constant(ct_graph *g, const char *name, const ct_tensor *value) {
  ct_attrs a = {.source = {.shape = value->shape, .dtype = value->dtype}};
  ct_node *n = ct_graph_add_node(g, &ct_op_const, name ? name : "Const", 0, NULL, 1, &a);
  if (n == NULL) return ct_out(NULL, 0);
  ct_status status = CT_STATUS_INIT;
  n->constant = ct_tensor_clone(value, &status);
  if (n->constant == NULL) ct_graph_set_error(g, status.code, "%s", status.message);
  return ct_out(n, 0);
}

ct_output ct_scalar(ct_graph *g, float value) {
  ct_tensor t = {CT_F32, ct_shape_of(0), &value, 0};
  return ct_constant(g, "Const", &t);
}

ct_node *ct_group(ct_graph *g, const char *name, int n, ct_node *const *nodes) {
  ct_node *group = ct_graph_add_node(g, &ct_op_no_op, name ? name : "NoOp", 0, NULL, 0, NULL);
  for (int i = 0; group && i < n; ++i) ct_node_add_control_input(group, nodes[i]);
  return group;
}

/* ---- identity and fills ------------------------------------------------- */

static void grad_identity(ct_graph *g, const ct_node *node, const ct_output *gy, ct_output *gx) {
  (void)g;
  (void)node;
  gx[0] = gy[0];
}

const ct_op_def ct_op_identity = {"Identity", ct_infer_same_as_input0, grad_identity,
                                  CT_OP_ALIAS_INPUT0, ct_flops_none};
const ct_op_def ct_op_zeros_like = {"ZerosLike", ct_infer_same_as_input0, NULL, CT_OP_NO_GRADIENT,
                                    ct_flops_none};
const ct_op_def ct_op_ones_like = {"OnesLike", ct_infer_same_as_input0, NULL, CT_OP_NO_GRADIENT,
                                   ct_flops_none};

/* Identity whose gradient stops: tf.stop_gradient. */
const ct_op_def ct_op_stop_gradient = {"StopGradient", ct_infer_same_as_input0, NULL,
                                       CT_OP_ALIAS_INPUT0 | CT_OP_NO_GRADIENT, ct_flops_none};

ct_output ct_stop_gradient(ct_graph *g, ct_output x) {
  return ct_out(ct_graph_add_node(g, &ct_op_stop_gradient, NULL, 1, &x, 1, NULL), 0);
}
ct_output ct_identity(ct_graph *g, ct_output x) {
  return ct_out(ct_graph_add_node(g, &ct_op_identity, NULL, 1, &x, 1, NULL), 0);
}
ct_output ct_zeros_like(ct_graph *g, ct_output x) {
  return ct_out(ct_graph_add_node(g, &ct_op_zeros_like, NULL, 1, &x, 1, NULL), 0);
}
ct_output ct_ones_like(ct_graph *g, ct_output x) {
  return ct_out(ct_graph_add_node(g, &ct_op_ones_like, NULL, 1, &x, 1, NULL), 0);
}

/* ---- reshape ------------------------------------------------------------ */

/* Resolves one -1 in attrs.reshape.shape from the element count of the input. */
static int infer_reshape(ct_infer_ctx *ctx) {
  const ct_shape *in = &ctx->in_shapes[0];
  ct_shape out = ctx->attrs->reshape.shape;
  int64_t known = 1;
  int unknown_at = -1;
  for (int i = 0; i < out.rank; ++i) {
    if (out.dims[i] >= 0) {
      known *= out.dims[i];
    } else if (unknown_at >= 0) {
      return ct_infer_fail(ctx, "reshape target may have only one -1");
    } else {
      unknown_at = i;
    }
  }
  int64_t total = ct_shape_elements(in);
  char si[96], so[96];
  if (unknown_at >= 0) {
    if (total >= 0) {
      if (known == 0 || total % known != 0)
        return ct_infer_fail(ctx, "cannot reshape %s into %s", ct_shape_str(in, si, sizeof si),
                             ct_shape_str(&out, so, sizeof so));
      out.dims[unknown_at] = total / known;
    }
  } else if (total >= 0 && total != known) {
    return ct_infer_fail(ctx, "cannot reshape %s (%lld elements) into %s (%lld elements)",
                         ct_shape_str(in, si, sizeof si), (long long)total,
                         ct_shape_str(&out, so, sizeof so), (long long)known);
  }
  ctx->out_shapes[0] = out;
  ctx->out_dtypes[0] = ctx->in_dtypes[0];
  return 0;
}

/* ReshapeLike(x, like): x with the shape of `like`. */
static int infer_reshape_like(ct_infer_ctx *ctx) {
  ctx->out_shapes[0] = ctx->in_shapes[1];
  ctx->out_dtypes[0] = ctx->in_dtypes[0];
  int64_t a = ct_shape_elements(&ctx->in_shapes[0]), b = ct_shape_elements(&ctx->in_shapes[1]);
  if (a >= 0 && b >= 0 && a != b)
    return ct_infer_fail(ctx, "cannot reshape %lld elements into %lld", (long long)a,
                         (long long)b);
  return 0;
}

static void grad_reshape(ct_graph *g, const ct_node *node, const ct_output *gy, ct_output *gx) {
  ct_output in[2] = {gy[0], node->inputs[0]};
  gx[0] = ct_out(ct_graph_add_node(g, &ct_op_reshape_like, NULL, 2, in, 1, NULL), 0);
}

const ct_op_def ct_op_reshape = {"Reshape", infer_reshape, grad_reshape, CT_OP_ALIAS_INPUT0,
                                 ct_flops_none};
const ct_op_def ct_op_reshape_like = {"ReshapeLike", infer_reshape_like, grad_reshape,
                                      CT_OP_ALIAS_INPUT0, ct_flops_none};

ct_output ct_reshape(ct_graph *g, ct_output x, ct_shape shape) {
  ct_attrs a = {.reshape = {.shape = shape}};
  return ct_out(ct_graph_add_node(g, &ct_op_reshape, NULL, 1, &x, 1, &a), 0);
}

/* ---- concat and split --------------------------------------------------- */

static int normalize_axis(ct_infer_ctx *ctx, int64_t axis, int rank, int *out) {
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank)
    return ct_infer_fail(ctx, "axis %lld is out of range for rank %d", (long long)axis, rank);
  *out = (int)axis;
  return 0;
}

/* attrs.axis. All inputs agree on every other dimension. */
static int infer_concat(ct_infer_ctx *ctx) {
  int axis = 0;
  if (normalize_axis(ctx, ctx->attrs->axis.axis, ctx->in_shapes[0].rank, &axis)) return 1;
  ct_shape out = ctx->in_shapes[0];
  for (int k = 1; k < ctx->n_inputs; ++k) {
    const ct_shape *s = &ctx->in_shapes[k];
    if (s->rank != out.rank || ctx->in_dtypes[k] != ctx->in_dtypes[0])
      return ct_infer_fail(ctx, "input %d has another rank or dtype than input 0", k);
    for (int d = 0; d < out.rank; ++d) {
      if (d == axis) continue;
      if (s->dims[d] >= 0 && out.dims[d] >= 0 && s->dims[d] != out.dims[d]) {
        char a[96], b[96];
        return ct_infer_fail(ctx, "cannot concatenate %s and %s along axis %d",
                             ct_shape_str(&ctx->in_shapes[0], a, sizeof a),
                             ct_shape_str(s, b, sizeof b), axis);
      }
    }
    out.dims[axis] = (out.dims[axis] < 0 || s->dims[axis] < 0) ? -1 : out.dims[axis] + s->dims[axis];
  }
  ctx->out_shapes[0] = out;
  ctx->out_dtypes[0] = ctx->in_dtypes[0];
  return 0;
}

/* ConcatGrad(g, x_0 .. x_{n-1}): output k is the slice of g shaped like x_k. */
static int infer_concat_grad(ct_infer_ctx *ctx) {
  for (int k = 0; k < ctx->n_outputs; ++k) {
    ctx->out_shapes[k] = ctx->in_shapes[k + 1];
    ctx->out_dtypes[k] = ctx->in_dtypes[0];
  }
  return 0;
}

static void grad_concat(ct_graph *g, const ct_node *node, const ct_output *gy, ct_output *gx) {
  ct_output in[65];
  in[0] = gy[0];
  for (int k = 0; k < node->n_inputs; ++k) in[k + 1] = node->inputs[k];
  ct_node *n = ct_graph_add_node(g, &ct_op_concat_grad, NULL, node->n_inputs + 1, in,
                                 node->n_inputs, &node->attrs);
  for (int k = 0; k < node->n_inputs; ++k) gx[k] = ct_out(n, k);
}

const ct_op_def ct_op_concat = {"ConcatV2", infer_concat, grad_concat, 0, ct_flops_none};
const ct_op_def ct_op_concat_grad = {"ConcatGrad", infer_concat_grad, NULL, 0, ct_flops_none};

ct_output ct_concat(ct_graph *g, int n, const ct_output *xs, int axis) {
  if (n < 1 || n > 63) {
    ct_graph_set_error(g, CT_INVALID_ARGUMENT, "ct_concat takes 1 to 63 inputs, got %d", n);
    return ct_out(NULL, 0);
  }
  ct_attrs a = {.axis = {.axis = axis}};
  return ct_out(ct_graph_add_node(g, &ct_op_concat, NULL, n, xs, 1, &a), 0);
}

/* The sizes of attrs.split along an axis of size d (-1: unknown) into
 * parts[]: one -1 takes what the others leave. */
static int infer_sized_parts(ct_infer_ctx *ctx, int64_t d, int64_t *parts) {
  const ct_split_attrs *a = &ctx->attrs->split;
  int64_t given = 0;
  int rest = -1;
  for (int k = 0; k < a->n_sizes; ++k) {
    if (a->sizes[k] < 0)
      rest = k;
    else
      given += a->sizes[k];
    parts[k] = a->sizes[k];
  }
  if (d >= 0 && (rest < 0 ? given != d : given > d))
    return ct_infer_fail(ctx, "dimension of size %lld does not split into parts of sizes "
                         "summing to %lld%s", (long long)d, (long long)given,
                         rest < 0 ? "" : " plus the rest (-1)");
  if (rest >= 0) parts[rest] = d < 0 ? -1 : d - given;
  return 0;
}

/* attrs.split: n_sizes 0 splits into as many equal parts as the node has
 * outputs; else into parts of sizes[k]. */
static int infer_split(ct_infer_ctx *ctx) {
  int axis = 0;
  if (normalize_axis(ctx, ctx->attrs->split.axis, ctx->in_shapes[0].rank, &axis)) return 1;
  const int64_t d = ctx->in_shapes[0].dims[axis];
  int64_t parts[CT_SPLIT_MAX_PARTS];
  if (ctx->attrs->split.n_sizes > 0) {
    if (infer_sized_parts(ctx, d, parts)) return 1;
  } else {
    if (d >= 0 && d % ctx->n_outputs != 0)
      return ct_infer_fail(ctx, "dimension %d (%lld) does not split into %d equal parts", axis,
                           (long long)d, ctx->n_outputs);
    for (int k = 0; k < ctx->n_outputs; ++k) parts[k] = d < 0 ? -1 : d / ctx->n_outputs;
  }
  for (int k = 0; k < ctx->n_outputs; ++k) {
    ctx->out_shapes[k] = ctx->in_shapes[0];
    ctx->out_shapes[k].dims[axis] = parts[k];
    ctx->out_dtypes[k] = ctx->in_dtypes[0];
  }
  return 0;
}

/* The concatenation of the parts' gradients (zeros for a part without one). */
static void grad_split(ct_graph *g, const ct_node *node, const ct_output *gy, ct_output *gx) {
  ct_output parts[CT_SPLIT_MAX_PARTS];
  for (int k = 0; k < node->n_outputs; ++k)
    parts[k] = gy[k].node ? gy[k] : ct_zeros_like(g, ct_out((ct_node *)node, k));
  ct_attrs a = {.axis = {.axis = node->attrs.split.axis}};
  gx[0] = ct_out(ct_graph_add_node(g, &ct_op_concat, NULL, node->n_outputs, parts, 1, &a), 0);
}

const ct_op_def ct_op_split = {"Split", infer_split, grad_split, 0, ct_flops_none};

/* Adds the Split node of attrs `a` with n outputs into outs. */
static void add_split(ct_graph *g, ct_output x, int n, const ct_attrs *a, ct_output *outs) {
  ct_node *node = ct_graph_add_node(g, &ct_op_split, NULL, 1, &x, n, a);
  for (int k = 0; node && k < n; ++k) outs[k] = ct_out(node, k);
}

void ct_split(ct_graph *g, ct_output x, int axis, int n, ct_output *outs) {
  for (int k = 0; k < n; ++k) outs[k] = ct_out(NULL, 0);
  if (n < 1 || n > CT_SPLIT_MAX_PARTS) {
    ct_graph_set_error(g, CT_INVALID_ARGUMENT, "ct_split makes 1 to %d parts, got %d",
                       CT_SPLIT_MAX_PARTS, n);
    return;
  }
  ct_attrs a = {.split = {.axis = axis}};
  add_split(g, x, n, &a, outs);
}

void ct_split_sizes(ct_graph *g, ct_output x, int axis, int n, const int64_t *sizes,
                    ct_output *outs) {
  for (int k = 0; k < n; ++k) outs[k] = ct_out(NULL, 0);
  if (n < 1 || n > CT_SPLIT_MAX_PARTS) {
    ct_graph_set_error(g, CT_INVALID_ARGUMENT, "ct_split_sizes makes 1 to %d parts, got %d",
                       CT_SPLIT_MAX_PARTS, n);
    return;
  }
  ct_attrs a = {.split = {.axis = axis, .n_sizes = n}};
  int rest = 0;
  for (int k = 0; k < n; ++k) {
    rest += sizes[k] == -1;
    if (sizes[k] < -1 || sizes[k] > INT32_MAX || rest > 1) {
      ct_graph_set_error(g, CT_INVALID_ARGUMENT,
                         "ct_split_sizes takes sizes >= 0 and at most one -1 (the rest); "
                         "size %d is %lld", k, (long long)sizes[k]);
      return;
    }
    a.split.sizes[k] = (int32_t)sizes[k];
  }
  add_split(g, x, n, &a, outs);
}

/* ---- strided slice ------------------------------------------------------ */

/* attrs.slice on every axis of input 0; StridedSliceGrad(dy, x) is shaped
 * like x. */
static int infer_strided_slice(ct_infer_ctx *ctx) {
  const ct_slice_attrs *a = &ctx->attrs->slice;
  ct_shape out = ctx->in_shapes[0];
  for (int d = 0; d < out.rank; ++d) {
    if (a->stride[d] == 0) return ct_infer_fail(ctx, "the stride of axis %d is 0", d);
    out.dims[d] = ct_slice_range_of(out.dims[d], a->begin[d], a->end[d], a->stride[d],
                                    (a->begin_mask >> d) & 1, (a->end_mask >> d) & 1)
                      .count;
  }
  ctx->out_shapes[0] = out;
  ctx->out_dtypes[0] = ctx->in_dtypes[0];
  return 0;
}

static int infer_strided_slice_grad(ct_infer_ctx *ctx) {
  ctx->out_shapes[0] = ctx->in_shapes[1];
  ctx->out_dtypes[0] = ctx->in_dtypes[0];
  return 0;
}

/* dy where the slice took its elements, zeros elsewhere. */
static void grad_strided_slice(ct_graph *g, const ct_node *node, const ct_output *gy,
                               ct_output *gx) {
  ct_output in[2] = {gy[0], node->inputs[0]};
  gx[0] = ct_out(ct_graph_add_node(g, &ct_op_strided_slice_grad, NULL, 2, in, 1, &node->attrs), 0);
}

const ct_op_def ct_op_strided_slice = {"StridedSlice", infer_strided_slice, grad_strided_slice, 0,
                                       ct_flops_none};
const ct_op_def ct_op_strided_slice_grad = {"StridedSliceGrad", infer_strided_slice_grad, NULL, 0,
                                            ct_flops_none};

ct_output ct_strided_slice(ct_graph *g, ct_output x, const int64_t *begin, const int64_t *end,
                           const int64_t *strides, unsigned begin_mask, unsigned end_mask) {
  if (x.node == NULL) return ct_out(NULL, 0);
  const int rank = ct_output_shape(x).rank;
  ct_attrs a = {.slice = {.begin_mask = begin_mask, .end_mask = end_mask}};
  for (int d = 0; d < rank; ++d) {
    a.slice.begin[d] = begin[d];
    a.slice.end[d] = end[d];
    a.slice.stride[d] = strides[d];
  }
  return ct_out(ct_graph_add_node(g, &ct_op_strided_slice, NULL, 1, &x, 1, &a), 0);
}

/* ---- transpose ---------------------------------------------------------- */

/* Output axis d is input axis perm[d]; perm a permutation of the axes. */
static int infer_transpose(ct_infer_ctx *ctx) {
  const ct_shape *in = &ctx->in_shapes[0];
  unsigned seen = 0;
  for (int d = 0; d < in->rank; ++d) {
    const int from = ctx->attrs->transpose.perm[d];
    if (from < 0 || from >= in->rank || ((seen >> from) & 1))
      return ct_infer_fail(ctx, "perm is not a permutation of the %d axes of the input "
                           "(entry %d is %d)", in->rank, d, from);
    seen |= 1u << from;
    ctx->out_shapes[0].dims[d] = in->dims[from];
  }
  ctx->out_shapes[0].rank = in->rank;
  ctx->out_dtypes[0] = ctx->in_dtypes[0];
  return 0;
}

/* dy transposed back: by the inverse permutation. */
static void grad_transpose(ct_graph *g, const ct_node *node, const ct_output *gy, ct_output *gx) {
  ct_attrs a;
  memset(&a, 0, sizeof a);
  const int rank = ct_output_shape(gy[0]).rank;
  for (int d = 0; d < rank; ++d) a.transpose.perm[node->attrs.transpose.perm[d]] = d;
  gx[0] = ct_out(ct_graph_add_node(g, &ct_op_transpose, NULL, 1, gy, 1, &a), 0);
}

const ct_op_def ct_op_transpose = {"Transpose", infer_transpose, grad_transpose, 0,
                                   ct_flops_none};

ct_output ct_transpose(ct_graph *g, ct_output x, const int *perm) {
  if (x.node == NULL) return ct_out(NULL, 0);
  ct_attrs a;
  memset(&a, 0, sizeof a);
  const int rank = ct_output_shape(x).rank;
  for (int d = 0; d < rank; ++d) a.transpose.perm[d] = perm[d];
  return ct_out(ct_graph_add_node(g, &ct_op_transpose, NULL, 1, &x, 1, &a), 0);
}
