/* GPU softmax cross-entropy with integer labels, argmax and accuracy (the
 * CPU's classification.c). Labels are device data: a label out of range
 * cannot fail the step as on the CPU, and gives a NaN loss instead (the
 * trainer stops on a NaN loss). */
#include "kernels/cuda/basic_kernels.h"
#include "kernels/cuda/launch_basic.h"
#include "kernels/kernel_shapes.h"

void ct_gpu_sparse_softmax_xent(ct_kernel_ctx *ctx) {
  const int64_t N = ctx->inputs[0].shape.dims[0], C = ctx->inputs[0].shape.dims[1];
  if (N == 0) return;
  cudaError_t err =
      ct_launch_softmax_xent(ct_in_f32(ctx, 0), ct_tensor_i32(&ctx->inputs[1]), ct_out_f32(ctx, 0),
                             ct_out_f32(ctx, 1), N, C, ct_kernel_gpu(ctx)->stream);
  ct_kernel_launch_failed(ctx, err);
}

void ct_gpu_softmax_xent(ct_kernel_ctx *ctx) {
  const int64_t N = ctx->inputs[0].shape.dims[0], C = ctx->inputs[0].shape.dims[1];
  if (N == 0) return;
  cudaError_t err =
      ct_launch_dense_softmax_xent(ct_in_f32(ctx, 0), ct_in_f32(ctx, 1), ct_out_f32(ctx, 0),
                                   ct_out_f32(ctx, 1), N, C, ct_kernel_gpu(ctx)->stream);
  ct_kernel_launch_failed(ctx, err);
}

void ct_gpu_l2_loss(ct_kernel_ctx *ctx) {
  cudaError_t err = ct_launch_l2_loss(ct_in_f32(ctx, 0), ct_out_f32(ctx, 0), ct_in_elements(ctx, 0),
                                      ct_kernel_gpu(ctx)->stream);
  ct_kernel_launch_failed(ctx, err);
}

/* As the CPU's: x viewed as [outer, C, inner] around the axis. */
void ct_gpu_argmax(ct_kernel_ctx *ctx) {
  const ct_shape *s = &ctx->inputs[0].shape;
  const int axis = ct_kernel_axis(ctx, s->rank);
  const int64_t outer = ct_outer_count(s, axis), inner = ct_inner_count(s, axis);
  if (outer * inner == 0) return;
  cudaError_t err = ct_launch_argmax(ct_in_f32(ctx, 0), ct_tensor_i32(&ctx->outputs[0]), outer,
                                     s->dims[axis], inner, ct_kernel_gpu(ctx)->stream);
  ct_kernel_launch_failed(ctx, err);
}

void ct_gpu_accuracy(ct_kernel_ctx *ctx) {
  const int64_t N = ctx->inputs[0].shape.dims[0], C = ctx->inputs[0].shape.dims[1];
  int32_t *predicted = NULL;
  if (N > 0) {
    predicted = ct_kernel_scratch(ctx, (size_t)N * sizeof *predicted);
    if (predicted == NULL) return;
  }
  cudaError_t err =
      ct_launch_accuracy(ct_in_f32(ctx, 0), ct_tensor_i32(&ctx->inputs[1]), ct_out_f32(ctx, 0),
                         predicted, N, C, ct_kernel_gpu(ctx)->stream);
  ct_kernel_launch_failed(ctx, err);
}
