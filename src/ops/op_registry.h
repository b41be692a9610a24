/* The ops ctower defines (listed once in op_list.h), found by name, and
 * the helpers their shape rules share. */
#ifndef CTOWER_OPS_OP_REGISTRY_H
#define CTOWER_OPS_OP_REGISTRY_H

#include "ctower/ops.h"
#include "graph/op_def.h"

/* The op named `name` (TensorFlow's name: "Conv2D"), or NULL. */
const ct_op_def *ct_op_find(const char *name);

/* Shape-rule helpers used by many ops. */
int ct_infer_fail(ct_infer_ctx *ctx, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
int ct_infer_same_as_input0(ct_infer_ctx *ctx);
/* NumPy broadcasting of two shapes; -1 stays unknown. Returns 0 or fails. */
int ct_broadcast_shapes(ct_infer_ctx *ctx, const ct_shape *a, const ct_shape *b, ct_shape *out);
int ct_require_dtype(ct_infer_ctx *ctx, int input, ct_dtype dtype);
int ct_require_rank(ct_infer_ctx *ctx, int input, int rank);

/* Whether `gradient`, flowing into `relu` (a Relu, or a Conv2D with its
 * ReLU), is a max pool's gradient that already passes only where the ReLU
 * would (ops_nn.c). */
int ct_gradient_masked_for_relu(ct_output gradient, const ct_node *relu);
/* The gradient of the input of that ReLU given gy, its output's: gy masked
 * where the output is 0, or gy itself where a max pool masked it (ops_math.c). */
ct_output ct_relu_input_gradient(ct_graph *g, const ct_node *relu, ct_output gy);

#endif
