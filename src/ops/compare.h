/* The elementwise comparisons beside Equal, one row each (an X-macro): of
 * two values of one dtype (f32, i32, i64 or u8) and one shape, or one of
 * them a scalar, as Equal takes them; a bool (u8 0 or 1) of the other's
 * shape; no gradient (TensorFlow registers none). Each row gives the op's
 * definition and builder (ops/ops_compare.c), its CPU kernel
 * (kernels/cpu/compare.c), its CUDA kernel (kernels/cuda/compare.cu), their
 * kernel-table lines, its CPU-against-GPU case (tests/support/op_cases.c)
 * and its Python function (tf.<function>, tf.math.<function>).
 *
 * A row: ROW(P, Name, function, op)
 *   Name      TensorFlow's op name (Greater), also the kernels' suffix
 *   function  TensorFlow's Python function ("greater": tf.greater)
 *   op        C's operator: out = a op b (a NaN compares false but with !=)
 * P passes through to ROW (op_list.h forwards the row with it). */
#ifndef CTOWER_OPS_COMPARE_H
#define CTOWER_OPS_COMPARE_H

#define CT_COMPARE(ROW, P)                    \
  ROW(P, Greater, "greater", >)               \
  ROW(P, Less, "less", <)                     \
  ROW(P, GreaterEqual, "greater_equal", >=)   \
  ROW(P, LessEqual, "less_equal", <=)         \
  ROW(P, NotEqual, "not_equal", !=)

/* The rows as an enum: CT_COMPARE_Greater, ..., and their count. */
#define CT_COMPARE_ENUM(P, Name, function, op) CT_COMPARE_##Name,
typedef enum ct_compare_op { CT_COMPARE(CT_COMPARE_ENUM, _) CT_COMPARE_COUNT } ct_compare_op;
#undef CT_COMPARE_ENUM

#endif
