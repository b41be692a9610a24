/* Optimizer updates: each writes into its variable (input 0) in place.
 * lr is an f32 scalar input so that schedules change it without rebuilding.
 *
 * ApplyGradientDescent(var, lr, grad): var -= lr * (grad + wd * var)
 * ApplyMomentum(var, accum, lr, grad): g = grad + wd * var;
 *   accum = momentum * accum + g; var -= lr * accum
 *   (Nesterov: var -= lr * (g + momentum * accum))
 * ApplyAdam(var, m, v, lr, grad): g = grad + wd * var;
 *   m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2; var -= lr * m / (sqrt(v) + eps)
 *   (lr already carries the bias correction, as TensorFlow's Adam)
 * attrs.gradient_descent, attrs.momentum, attrs.adam.
 *
 * Assign(var, value): var = value (the parameter server's variables, as
 * broadcast, on the other ranks). */
#include "ops/op_cost.h"
#include "ops/op_list.h"
#include "ops/shape_rules.h"

static int infer_apply(ct_infer_ctx *ctx) {
  const ct_shape *var = &ctx->in_shapes[0];
  const ct_shape *grad = &ctx->in_shapes[ctx->n_inputs - 1];
  const ct_shape *lr = &ctx->in_shapes[ctx->n_inputs - 2];
  if (!ct_shape_equal(var, grad)) {
    char a[96], b[96];
    return ct_infer_fail(ctx, "gradient shape %s differs from variable shape %s",
                         ct_shape_str(grad, b, sizeof b), ct_shape_str(var, a, sizeof a));
  }
  if (lr->rank != 0) return ct_infer_fail(ctx, "the learning rate must be a scalar");
  for (int k = 1; k < ctx->n_inputs - 2; ++k)
    if (!ct_shape_equal(var, &ctx->in_shapes[k]))
      return ct_infer_fail(ctx, "slot %d has another shape than the variable", k);
  return ct_infer_same_as_input0(ctx);
}

#define CT_APPLY_FLAGS \
  (CT_OP_ALIAS_INPUT0 | CT_OP_MUTATES_INPUT0 | CT_OP_STATEFUL | CT_OP_NO_GRADIENT)

/* per element of the variable: the update's arithmetic */
CT_FLOPS_PER_ELEMENT_TIMES(momentum_flops, 4)
CT_FLOPS_PER_ELEMENT_TIMES(adam_flops, 10)

const ct_op_def ct_op_apply_gradient_descent = {"ApplyGradientDescent", infer_apply, NULL,
                                                CT_APPLY_FLAGS, ct_flops_per_element};
const ct_op_def ct_op_apply_momentum = {"ApplyMomentum", infer_apply, NULL, CT_APPLY_FLAGS,
                                        momentum_flops};
const ct_op_def ct_op_apply_adam = {"ApplyAdam", infer_apply, NULL, CT_APPLY_FLAGS, adam_flops};

/* Assign writes a variable, as the updates do: nothing flows back through
 * it (a gradient would reach the value only by way of a variable's next
 * read, which gradients stop at). */
static int infer_assign(ct_infer_ctx *ctx) {
  if (!ct_shape_equal(&ctx->in_shapes[0], &ctx->in_shapes[1])) {
    char a[96], b[96];
    return ct_infer_fail(ctx, "the value's shape %s differs from the variable's %s",
                         ct_shape_str(&ctx->in_shapes[1], b, sizeof b),
                         ct_shape_str(&ctx->in_shapes[0], a, sizeof a));
  }
  return ct_require_dtype(ctx, 1, CT_F32) || ct_infer_same_as_input0(ctx);
}

const ct_op_def ct_op_assign = {"Assign", infer_assign, NULL, CT_APPLY_FLAGS, ct_flops_per_element};

ct_output ct_assign(ct_graph *g, ct_output variable, ct_output value) {
  if (g->status.code == CT_OK && (variable.node == NULL || variable.node->variable < 0)) {
    ct_graph_set_error(g, CT_INVALID_ARGUMENT,
                       "ct_assign writes a variable: input 0 must be a "
                       "read of one (ct_variable_read)");
    return ct_out(NULL, 0);
  }
  ct_output in[2] = {variable, value};
  return ct_out(ct_graph_add_node(g, &ct_op_assign, NULL, 2, in, 1, NULL), 0);
}
