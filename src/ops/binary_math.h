/* The elementwise binary math ops of two f32 tensors that broadcast as
 * NumPy does, one row each (an X-macro). Everything an op of this family is
 * made of comes from its row: its definition and builder
 * (ops/ops_binary_math.c), its CPU kernel (kernels/cpu/elementwise.c, over
 * Add's broadcasting loops), its CUDA kernel (kernels/cuda/elementwise.cu,
 * over Add's launch layouts), their kernel-table lines, its gradient check
 * and CPU-against-GPU case (tests/support/op_cases.c) and its Python
 * function (tf.<function> and tf.math.<function>).
 *
 * A row: ROW(P, Name, function, forward, da, db, flops, domain)
 *   Name      TensorFlow's op name (Maximum), also the kernels' suffix
 *   function  TensorFlow's Python function ("maximum": tf.maximum)
 *   forward   y as an expression of the floats a and b
 *   da, db    dL/da and dL/db at one element of y, as expressions of a, b
 *             and dy (dL/dy); BinaryMathGrad evaluates them over y's shape
 *             and the gradient sums them down to a's and b's shapes
 *   flops     operations per element, for `ctower plan`
 *   domain    the inputs its checks draw (op_cases.h's value kinds, without
 *             VALUES_): where the op and its partials are smooth
 * P passes through to ROW, so that a ROW can forward the row to another
 * macro (op_list.h does).
 *
 * TensorFlow's rules, which the rows keep:
 *   Maximum, Minimum  a NaN in either input gives NaN; the gradient goes to
 *                     a where a >= b (a <= b for Minimum), ties included,
 *                     and to b elsewhere (a NaN comparison sends it to b)
 *   Pow               da = dy * b * a^(b-1); db = dy * a^b * log(a) where
 *                     a > 0, else 0 (a^b's NaNs and infinities still show) */
#ifndef CTOWER_OPS_BINARY_MATH_H
#define CTOWER_OPS_BINARY_MATH_H

#include <math.h>

#define CT_BINARY_MATH(ROW, P)                                                               \
  ROW(P, Maximum, "maximum", (a >= b || a != a) ? a : b, a >= b ? dy : 0.0f,                 \
      a >= b ? 0.0f : dy, 1, UNIFORM)                                                        \
  ROW(P, Minimum, "minimum", (a <= b || a != a) ? a : b, a <= b ? dy : 0.0f,                 \
      a <= b ? 0.0f : dy, 1, UNIFORM)                                                        \
  ROW(P, SquaredDifference, "squared_difference", (a - b) * (a - b), 2.0f * dy * (a - b),    \
      -(2.0f * dy * (a - b)), 3, UNIFORM)                                                    \
  ROW(P, Pow, "pow", powf(a, b), dy * b * powf(a, b - 1.0f),                                 \
      dy * powf(a, b) * (a > 0.0f ? logf(a) : 0.0f), 10, POSITIVE)

/* The rows as an enum: CT_BINARY_MATH_Maximum, ..., and their count. */
#define CT_BINARY_MATH_ENUM(P, Name, function, forward, da, db, flops, domain) \
  CT_BINARY_MATH_##Name,
typedef enum ct_binary_math_op {
  CT_BINARY_MATH(CT_BINARY_MATH_ENUM, _) CT_BINARY_MATH_COUNT
} ct_binary_math_op;
#undef CT_BINARY_MATH_ENUM

#endif
