/* Shape-rule helpers that many ops share (ct_op_def.infer). */
#ifndef CTOWER_OPS_SHAPE_RULES_H
#define CTOWER_OPS_SHAPE_RULES_H

#include "graph/op_def.h"

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

/* An f32 input, an output like it. */
int ct_infer_unary_f32(ct_infer_ctx *ctx);
/* Two f32 inputs, an f32 output of their NumPy broadcast shape (Add). */
int ct_infer_broadcast_f32(ct_infer_ctx *ctx);
/* Backward helpers that take (a, b) of equal shapes: ReluGrad(dy, y),
 * SigmoidGrad(y, dy), TanhGrad(y, dy) as TensorFlow orders them. */
int ct_infer_same_pair(ct_infer_ctx *ctx);

/* A gradient g of a broadcast result summed down to the shape of input x
 * (g itself when their static shapes agree): Add's rule, which every
 * broadcasting op's gradient follows. */
ct_output ct_sum_to_shape_of(ct_graph *g, ct_output grad, ct_output x);

/* A gradient g of a broadcast result summed down to the shape of input x
 * (g itself when their static shapes agree): Add's rule, which every
 * broadcasting op's gradient follows. */
ct_output ct_sum_to_shape_of(ct_graph *g, ct_output grad, ct_output x);

#endif
