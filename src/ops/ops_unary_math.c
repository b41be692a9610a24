/* The elementwise unary math ops of ops/unary_math.h: one definition per
 * row (an f32 input, an output of its shape), and one backward op for them
 * all, UnaryMathGrad(x, y, dy), which evaluates the row's derivative named
 * by attrs.unary_math.op. One backward op rather than one per row: the
 * kernels of every row's derivative come from the table as its forward ones
 * do, and the op list, the kernel tables and the registry's checks grow by
 * one line, not by one per row. */
#include <string.h>

#include "ops/op_cost.h"
#include "ops/op_list.h"
#include "ops/shape_rules.h"

/* UnaryMathGrad(x, y, dy): three f32 inputs of one shape, dx like them. */
static int infer_unary_math_grad(ct_infer_ctx *ctx) {
  for (int i = 0; i < 3; ++i)
    if (ct_require_dtype(ctx, i, CT_F32)) return 1;
  ct_shape xy, out;
  if (ct_broadcast_shapes(ctx, &ctx->in_shapes[0], &ctx->in_shapes[1], &xy) ||
      ct_broadcast_shapes(ctx, &xy, &ctx->in_shapes[2], &out))
    return 1;
  return ct_infer_same_as_input0(ctx);
}

/* The derivative's product with dy, and the derivative. */
CT_FLOPS_PER_ELEMENT_TIMES(unary_math_grad_flops, 2)

const ct_op_def ct_op_unary_math_grad = {"UnaryMathGrad", infer_unary_math_grad, NULL,
                                         CT_OP_INPLACE, unary_math_grad_flops};

enum { GRADIENT_GRAD, GRADIENT_NONE };

/* dx = UnaryMathGrad(x, y, dy) of row `op`; nothing for a row without one
 * (TensorFlow's None: the input gets no gradient from this path). */
static void unary_math_gradient(ct_graph *g, const ct_node *n, const ct_output *gy, ct_output *gx,
                                ct_unary_math_op op, int gradient) {
  if (gradient == GRADIENT_NONE) return;
  ct_attrs a;
  memset(&a, 0, sizeof a);
  a.unary_math.op = (int)op;
  ct_output in[3] = {n->inputs[0], ct_out((ct_node *)n, 0), gy[0]};
  gx[0] = ct_out(ct_graph_add_node(g, &ct_op_unary_math_grad, NULL, 3, in, 1, &a), 0);
}

#define DEFINE(P, Name, function, forward, derivative, gradient, flops, domain)             \
  static void grad_##Name(ct_graph *g, const ct_node *n, const ct_output *gy,             \
                          ct_output *gx) {                                                \
    unary_math_gradient(g, n, gy, gx, CT_UNARY_MATH_##Name, GRADIENT_##gradient);         \
  }                                                                                       \
  CT_FLOPS_PER_ELEMENT_TIMES(flops_##Name, flops)                                         \
  const ct_op_def ct_op_##Name = {#Name, ct_infer_unary_f32, grad_##Name, CT_OP_INPLACE,  \
                                  flops_##Name};
CT_UNARY_MATH(DEFINE, _)
#undef DEFINE

#define ROW_OF(P, Name, function, forward, derivative, gradient, flops, domain) \
  {&ct_op_##Name, function},
static const struct {
  const ct_op_def *def;
  const char *function;
} rows[] = {CT_UNARY_MATH(ROW_OF, _)};
#undef ROW_OF

const char *ct_unary_math_name(int k, const char **function) {
  if (k < 0 || k >= CT_UNARY_MATH_COUNT) return NULL;
  if (function) *function = rows[k].function;
  return rows[k].def->name;
}

ct_output ct_unary_math(ct_graph *g, const char *op, ct_output x) {
  for (int k = 0; k < CT_UNARY_MATH_COUNT; ++k)
    if (strcmp(rows[k].def->name, op) == 0)
      return ct_out(ct_graph_add_node(g, rows[k].def, NULL, 1, &x, 1, NULL), 0);
  ct_graph_set_error(g, CT_INVALID_ARGUMENT,
                     "'%s' is not an elementwise unary math op (ct_unary_math_name lists them: "
                     "Exp, Log, Sqrt, ...)",
                     op);
  return ct_out(NULL, 0);
}
