/* The elementwise binary math ops of ops/binary_math.h: one definition per
 * row (two f32 inputs broadcast as Add's, an output of the broadcast shape)
 * and one backward op for them all, BinaryMathGrad(a, b, dy), which
 * evaluates the partial of row attrs.binary_math.op with respect to input
 * attrs.binary_math.side over dy's shape. The gradient sums that partial
 * down to the input's shape as Add's does (ct_sum_to_shape_of). */
#include <string.h>

#include "ops/op_cost.h"
#include "ops/op_list.h"
#include "ops/shape_rules.h"

/* BinaryMathGrad(a, b, dy): f32 a and b that broadcast to dy's shape; the
 * partial has dy's shape. */
static int infer_binary_math_grad(ct_infer_ctx *ctx) {
  for (int i = 0; i < 3; ++i)
    if (ct_require_dtype(ctx, i, CT_F32)) return 1;
  ct_shape ab, out;
  if (ct_broadcast_shapes(ctx, &ctx->in_shapes[0], &ctx->in_shapes[1], &ab) ||
      ct_broadcast_shapes(ctx, &ab, &ctx->in_shapes[2], &out))
    return 1;
  ctx->out_shapes[0] = ctx->in_shapes[2];
  ctx->out_dtypes[0] = CT_F32;
  return 0;
}

/* The partial's expression and its product with dy. */
CT_FLOPS_PER_ELEMENT_TIMES(binary_math_grad_flops, 2)

const ct_op_def ct_op_binary_math_grad = {"BinaryMathGrad", infer_binary_math_grad, NULL, 0,
                                          binary_math_grad_flops};

static ct_output partial(ct_graph *g, const ct_node *n, ct_output dy, ct_binary_math_op op,
                         int side) {
  ct_attrs a;
  memset(&a, 0, sizeof a);
  a.binary_math.op = (int)op;
  a.binary_math.side = side;
  ct_output in[3] = {n->inputs[0], n->inputs[1], dy};
  ct_output d = ct_out(ct_graph_add_node(g, &ct_op_binary_math_grad, NULL, 3, in, 1, &a), 0);
  return ct_sum_to_shape_of(g, d, n->inputs[side]);
}

#define DEFINE(P, Name, function, forward, da, db, flops, domain)                              \
  static void grad_##Name(ct_graph *g, const ct_node *n, const ct_output *gy, ct_output *gx) { \
    gx[0] = partial(g, n, gy[0], CT_BINARY_MATH_##Name, 0);                                    \
    gx[1] = partial(g, n, gy[0], CT_BINARY_MATH_##Name, 1);                                    \
  }                                                                                            \
  CT_FLOPS_PER_ELEMENT_TIMES(flops_##Name, flops)                                              \
  const ct_op_def ct_op_##Name = {#Name, ct_infer_broadcast_f32, grad_##Name, CT_OP_INPLACE,   \
                                  flops_##Name};
CT_BINARY_MATH(DEFINE, _)
#undef DEFINE

#define ROW_OF(P, Name, function, forward, da, db, flops, domain) {&ct_op_##Name, function},
static const struct {
  const ct_op_def *def;
  const char *function;
} rows[] = {CT_BINARY_MATH(ROW_OF, _)};
#undef ROW_OF

const char *ct_binary_math_name(int k, const char **function) {
  if (k < 0 || k >= CT_BINARY_MATH_COUNT) return NULL;
  if (function) *function = rows[k].function;
  return rows[k].def->name;
}

ct_output ct_binary_math(ct_graph *g, const char *op, ct_output a, ct_output b) {
  ct_output in[2] = {a, b};
  for (int k = 0; k < CT_BINARY_MATH_COUNT; ++k)
    if (strcmp(rows[k].def->name, op) == 0)
      return ct_out(ct_graph_add_node(g, rows[k].def, NULL, 2, in, 1, NULL), 0);
  ct_graph_set_error(g, CT_INVALID_ARGUMENT,
                     "'%s' is not an elementwise binary math op (ct_binary_math_name lists them: "
                     "Maximum, Minimum, Pow, ...)",
                     op);
  return ct_out(NULL, 0);
}
