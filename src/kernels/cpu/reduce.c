/* Sum and Mean over a set of axes, and their gradient. Both run as a sum
 * to (or a broadcast from) the "kept" shape: x's shape with each reduced
 * axis set to 1. */
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/kernel_shapes.h"

static void reduce(ct_kernel_ctx *ctx, int mean) {
  int64_t count;
  ct_shape kept = ct_reduce_kept_shape(&ctx->inputs[0].shape, ctx->attrs->reduce.axes_mask, &count);
  float *Y = ct_out_f32(ctx, 0);
  ct_cpu_sum_to(ctx, ct_in_f32(ctx, 0), &ctx->inputs[0].shape, Y, &kept);
  if (mean && count > 0) {
    int64_t n = ct_shape_elements(&kept);
    float scale = 1.0f / (float)count;
    for (int64_t i = 0; i < n; ++i) Y[i] *= scale;
  }
}

void ct_cpu_sum(ct_kernel_ctx *ctx) { reduce(ctx, 0); }
void ct_cpu_mean(ct_kernel_ctx *ctx) { reduce(ctx, 1); }

/* ReduceGrad(dy, x): attrs.reduce as the reduction's, with `mean` set. */
void ct_cpu_reduce_grad(ct_kernel_ctx *ctx) {
  int64_t count;
  ct_shape kept = ct_reduce_kept_shape(&ctx->inputs[1].shape, ctx->attrs->reduce.axes_mask, &count);
  float scale = ctx->attrs->reduce.mean && count > 0 ? 1.0f / (float)count : 1.0f;
  ct_cpu_broadcast_to(ctx, ct_in_f32(ctx, 0), &kept, ct_out_f32(ctx, 0), &ctx->outputs[0].shape,
                      scale);
}
