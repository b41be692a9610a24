/* The basic GPU kernels, listed in ct_cuda_basic_kernels (basic_table.c).
 * Each computes what the op's CPU kernel computes, with the same attributes,
 * shapes and broadcasting, queued on the device's stream (cuda_kernels.h). */
#ifndef CTOWER_BASIC_KERNELS_H
#define CTOWER_BASIC_KERNELS_H

#include "kernels/cuda/cuda_kernels.h"
#include "ops/binary_math.h"
#include "ops/compare.h"
#include "ops/unary_math.h"

#define CT_GPU_KERNEL(name) void name(ct_kernel_ctx *ctx)

/* gpu_basic.c */
CT_GPU_KERNEL(ct_gpu_nothing);
CT_GPU_KERNEL(ct_gpu_zeros_like);
CT_GPU_KERNEL(ct_gpu_ones_like);
CT_GPU_KERNEL(ct_gpu_concat);
CT_GPU_KERNEL(ct_gpu_concat_grad);
CT_GPU_KERNEL(ct_gpu_split);
CT_GPU_KERNEL(ct_gpu_strided_slice);
CT_GPU_KERNEL(ct_gpu_strided_slice_grad);
CT_GPU_KERNEL(ct_gpu_transpose);
/* gpu_elementwise.c */
CT_GPU_KERNEL(ct_gpu_neg);
CT_GPU_KERNEL(ct_gpu_add);
CT_GPU_KERNEL(ct_gpu_sub);
CT_GPU_KERNEL(ct_gpu_mul);
CT_GPU_KERNEL(ct_gpu_div);
CT_GPU_KERNEL(ct_gpu_broadcast_like);
CT_GPU_KERNEL(ct_gpu_sum_like);
CT_GPU_KERNEL(ct_gpu_add_n);
CT_GPU_KERNEL(ct_gpu_relu);
CT_GPU_KERNEL(ct_gpu_relu_grad);
CT_GPU_KERNEL(ct_gpu_sigmoid);
CT_GPU_KERNEL(ct_gpu_sigmoid_grad);
CT_GPU_KERNEL(ct_gpu_tanh);
CT_GPU_KERNEL(ct_gpu_tanh_grad);
CT_GPU_KERNEL(ct_gpu_dropout);
CT_GPU_KERNEL(ct_gpu_dropout_grad);
/* gpu_unary_math.c: ct_gpu_Exp, ct_gpu_Log, ... (a kernel per row of
 * ops/unary_math.h) and UnaryMathGrad's */
#define CT_GPU_UNARY_MATH_KERNEL(P, Name, function, forward, derivative, gradient, flops, \
                                 domain)                                               \
  CT_GPU_KERNEL(ct_gpu_##Name);
CT_UNARY_MATH(CT_GPU_UNARY_MATH_KERNEL, _)
CT_GPU_KERNEL(ct_gpu_unary_math_grad);
/* gpu_elementwise.c: ct_gpu_Maximum, ct_gpu_Pow, ... (a kernel per row of
 * ops/binary_math.h) and BinaryMathGrad's */
#define CT_GPU_BINARY_MATH_KERNEL(P, Name, function, forward, da, db, flops, domain) \
  CT_GPU_KERNEL(ct_gpu_##Name);
CT_BINARY_MATH(CT_GPU_BINARY_MATH_KERNEL, _)
CT_GPU_KERNEL(ct_gpu_binary_math_grad);
/* gpu_compare.c: ct_gpu_Greater, ... (a kernel per row of ops/compare.h) */
#define CT_GPU_COMPARE_KERNEL(P, Name, function, op) CT_GPU_KERNEL(ct_gpu_##Name);
CT_COMPARE(CT_GPU_COMPARE_KERNEL, _)
/* gpu_compress.c */
CT_GPU_KERNEL(ct_gpu_compress_gradient);
CT_GPU_KERNEL(ct_gpu_decompress_gradient);
/* gpu_reduce.c */
CT_GPU_KERNEL(ct_gpu_sum);
CT_GPU_KERNEL(ct_gpu_max);
CT_GPU_KERNEL(ct_gpu_min);
CT_GPU_KERNEL(ct_gpu_max_min_grad);
CT_GPU_KERNEL(ct_gpu_mean);
CT_GPU_KERNEL(ct_gpu_reduce_grad);
/* gpu_classification.c */
CT_GPU_KERNEL(ct_gpu_sparse_softmax_xent);
CT_GPU_KERNEL(ct_gpu_softmax_xent);
CT_GPU_KERNEL(ct_gpu_l2_loss);
CT_GPU_KERNEL(ct_gpu_argmax);
/* gpu_compare.c */
CT_GPU_KERNEL(ct_gpu_equal);
CT_GPU_KERNEL(ct_gpu_cast);
CT_GPU_KERNEL(ct_gpu_accuracy);
/* gpu_train.c */
CT_GPU_KERNEL(ct_gpu_assign_moving_average);
CT_GPU_KERNEL(ct_gpu_apply_gradient_descent);
CT_GPU_KERNEL(ct_gpu_apply_momentum);
CT_GPU_KERNEL(ct_gpu_apply_adam);
CT_GPU_KERNEL(ct_gpu_assign);

/* Y (shape out) = X (shape in) summed down to out as NumPy broadcasting
 * undoes, times scale: the CPU's ct_cpu_sum_to. (gpu_elementwise.c) */
void ct_gpu_sum_to(ct_kernel_ctx *ctx, const float *X, const ct_shape *in, float *Y,
                   const ct_shape *out, float scale);
/* Y = X (shape in) broadcast to out, times scale: ct_cpu_broadcast_to. */
void ct_gpu_broadcast_to(ct_kernel_ctx *ctx, const float *X, const ct_shape *in, float *Y,
                         const ct_shape *out, float scale);

#endif
