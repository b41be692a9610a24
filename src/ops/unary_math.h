/* The elementwise unary math ops, one row each (an X-macro). Everything an
 * op of this family is made of comes from its row: its definition and
 * builder (ops/ops_unary_math.c), its CPU kernel (kernels/cpu/unary_math.c),
 * its CUDA kernel (kernels/cuda/unary_math.cu), their kernel-table lines,
 * its gradient check and CPU-against-GPU case (tests/support/op_cases.c)
 * and its Python function (tf.<function> and tf.math.<function>).
 *
 * A row: ROW(P, Name, function, forward, derivative, gradient, flops, domain)
 *   Name        TensorFlow's op name (Exp), also the kernels' suffix
 *   function    TensorFlow's Python function ("exp": tf.exp, tf.math.exp)
 *   forward     y as an expression of the float x
 *   derivative  dL/dx as an expression of x, y and dy (dL/dy)
 *   gradient    GRAD: the backward op UnaryMathGrad evaluates `derivative`;
 *               NONE: no gradient flows (TensorFlow registers None for it)
 *   flops       operations per element, for `ctower plan`
 *   domain      the inputs its checks draw (op_cases.h's value kinds, without
 *               VALUES_): where the op and its derivative are smooth
 * P passes through to ROW, so that a ROW can forward the row to another
 * macro (op_list.h does).
 *
 * The expressions are C and CUDA alike (float functions of math.h, and the
 * helpers below); TensorFlow's Round rounds half to even, as rintf does in
 * the default rounding mode. */
#ifndef CTOWER_OPS_UNARY_MATH_H
#define CTOWER_OPS_UNARY_MATH_H

#include <math.h>

#define CT_UNARY_MATH(ROW, P)                                                                  \
  ROW(P, Exp, "exp", expf(x), dy * y, GRAD, 1, UNIFORM)                                        \
  ROW(P, Log, "log", logf(x), dy / x, GRAD, 1, POSITIVE)                                       \
  ROW(P, Log1p, "log1p", log1pf(x), dy / (1.0f + x), GRAD, 2, POSITIVE)                        \
  ROW(P, Sqrt, "sqrt", sqrtf(x), dy * 0.5f / y, GRAD, 1, POSITIVE)                             \
  ROW(P, Rsqrt, "rsqrt", 1.0f / sqrtf(x), -0.5f * dy * y * y * y, GRAD, 2, POSITIVE)           \
  ROW(P, Square, "square", x * x, 2.0f * x * dy, GRAD, 1, UNIFORM)                             \
  ROW(P, Abs, "abs", fabsf(x), dy * ct_unary_sign(x), GRAD, 1, AWAY_FROM_ZERO)                 \
  ROW(P, Sign, "sign", ct_unary_sign(x), 0.0f, GRAD, 1, AWAY_FROM_ZERO)                        \
  ROW(P, Reciprocal, "reciprocal", 1.0f / x, -dy * y * y, GRAD, 1, AWAY_FROM_ZERO)             \
  ROW(P, Floor, "floor", floorf(x), 0.0f, NONE, 1, OFF_GRID)                                   \
  ROW(P, Ceil, "ceil", ceilf(x), 0.0f, NONE, 1, OFF_GRID)                                      \
  ROW(P, Round, "round", rintf(x), 0.0f, NONE, 1, OFF_GRID)

/* The rows as an enum: CT_UNARY_MATH_Exp, ..., and their count. */
#define CT_UNARY_MATH_ENUM(P, Name, function, forward, derivative, gradient, flops, domain) \
  CT_UNARY_MATH_##Name,
typedef enum ct_unary_math_op {
  CT_UNARY_MATH(CT_UNARY_MATH_ENUM, _) CT_UNARY_MATH_COUNT
} ct_unary_math_op;
#undef CT_UNARY_MATH_ENUM

#if defined(__CUDACC__)
#define CT_UNARY_MATH_HELPER static __host__ __device__ __forceinline__
#else
#define CT_UNARY_MATH_HELPER static inline
#endif

/* TensorFlow's sign: -1, 0 or 1 (a zero or a NaN comes back as it is). */
CT_UNARY_MATH_HELPER float ct_unary_sign(float x) {
  return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : x);
}

#endif
