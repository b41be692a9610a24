/* Every op definition, listed once (an X-macro): the registry's table and
 * the declarations both come from this list. */
#ifndef CTOWER_OP_LIST_H
#define CTOWER_OP_LIST_H

#include "ops/op_registry.h"
#include "ops/binary_math.h"
#include "ops/compare.h"
#include "ops/unary_math.h"

#define CT_OP_LIST(X)                                                                    \
  X(ct_op_placeholder) X(ct_op_const) X(ct_op_variable) X(ct_op_identity)                \
  X(ct_op_zeros_like) X(ct_op_ones_like) X(ct_op_no_op) X(ct_op_reshape)                 \
  X(ct_op_reshape_like) X(ct_op_concat) X(ct_op_concat_grad) X(ct_op_split)              \
  X(ct_op_neg) X(ct_op_add) X(ct_op_sub) X(ct_op_mul) X(ct_op_div)                       \
  X(ct_op_broadcast_like) X(ct_op_sum_like) X(ct_op_add_n) X(ct_op_relu)                 \
  X(ct_op_relu_grad) X(ct_op_sigmoid) X(ct_op_sigmoid_grad) X(ct_op_tanh)                \
  X(ct_op_tanh_grad) X(ct_op_sum) X(ct_op_mean) X(ct_op_reduce_grad) X(ct_op_matmul)     \
  X(ct_op_conv2d) X(ct_op_conv2d_backprop_input) X(ct_op_conv2d_backprop_filter)         \
  X(ct_op_max_pool) X(ct_op_max_pool_grad) X(ct_op_avg_pool) X(ct_op_avg_pool_grad)      \
  X(ct_op_lrn) X(ct_op_lrn_grad) X(ct_op_batch_norm_training)                            \
  X(ct_op_batch_norm_inference) X(ct_op_batch_norm_grad)                                 \
  X(ct_op_batch_norm_inference_grad) X(ct_op_dropout) X(ct_op_dropout_grad)             \
  X(ct_op_sparse_softmax_xent) X(ct_op_argmax) X(ct_op_accuracy)                         \
  X(ct_op_apply_gradient_descent) X(ct_op_apply_momentum) X(ct_op_apply_adam)            \
  X(ct_op_assign_moving_average) X(ct_op_all_reduce) X(ct_op_collective_reduce)         \
  X(ct_op_collective_broadcast) X(ct_op_assign) X(ct_op_equal) X(ct_op_cast)                \
  X(ct_op_softmax_xent) X(ct_op_l2_loss) X(ct_op_strided_slice) X(ct_op_strided_slice_grad)   \
  X(ct_op_transpose)                                                                        \
  X(ct_op_stop_gradient) X(ct_op_compress_gradient) X(ct_op_decompress_gradient)            \
  X(ct_op_compressed_all_reduce)                                                            \
  CT_UNARY_MATH(CT_UNARY_MATH_OP, X) X(ct_op_unary_math_grad)                               \
  CT_BINARY_MATH(CT_BINARY_MATH_OP, X) X(ct_op_binary_math_grad)                             \
  CT_COMPARE(CT_COMPARE_OP, X) X(ct_op_max) X(ct_op_min) X(ct_op_max_min_grad)

/* A row of ops/unary_math.h as its definition, ct_op_<Name>. */
#define CT_UNARY_MATH_OP(X, Name, function, forward, derivative, gradient, flops, domain) \
  X(ct_op_##Name)
/* A row of ops/binary_math.h as its definition, ct_op_<Name>. */
#define CT_BINARY_MATH_OP(X, Name, function, forward, da, db, flops, domain) X(ct_op_##Name)

/* A row of ops/compare.h as its definition, ct_op_<Name>. */
#define CT_COMPARE_OP(X, Name, function, op) X(ct_op_##Name)

#define CT_OP_ADDRESS(var) &var,
#define CT_OP_EXTERN(var) extern const ct_op_def var;
CT_OP_LIST(CT_OP_EXTERN)

#endif
