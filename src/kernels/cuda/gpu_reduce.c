/* GPU Sum and Mean over a set of axes, and their gradient: as the CPU
 * kernels (reduce.c), a sum to (or a broadcast from) the "kept" shape, x's
 * shape with each reduced axis set to 1. */
#include "kernels/cuda/basic_kernels.h"
#include "kernels/kernel_shapes.h"

static void reduce(ct_kernel_ctx *ctx, int mean) {
  int64_t count;
  ct_shape kept = ct_reduce_kept_shape(&ctx->inputs[0].shape, ctx->attrs->reduce.axes_mask, &count);
  const float scale = mean && count > 0 ? 1.0f / (float)count : 1.0f;
  ct_gpu_sum_to(ctx, ct_in_f32(ctx, 0), &ctx->inputs[0].shape, ct_out_f32(ctx, 0), &kept, scale);
}

void ct_gpu_sum(ct_kernel_ctx *ctx) { reduce(ctx, 0); }
void ct_gpu_mean(ct_kernel_ctx *ctx) { reduce(ctx, 1); }

/* ReduceGrad(dy, x): attrs.reduce as the reduction's, with `mean` set. */
void ct_gpu_reduce_grad(ct_kernel_ctx *ctx) {
  int64_t count;
  ct_shape kept = ct_reduce_kept_shape(&ctx->inputs[1].shape, ctx->attrs->reduce.axes_mask, &count);
  const float scale = ctx->attrs->reduce.mean && count > 0 ? 1.0f / (float)count : 1.0f;
  ct_gpu_broadcast_to(ctx, ct_in_f32(ctx, 0), &kept, ct_out_f32(ctx, 0), &ctx->outputs[0].shape,
                      scale);
}
