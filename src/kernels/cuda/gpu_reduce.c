/* GPU Sum and Mean over a set of axes, and their gradient: as the CPU
 * kernels (reduce.c), a sum to (or a broadcast from) the "kept" shape, x's
 * shape with each reduced axis set to 1. Max and Min, and their gradient,
 * walk each output's reduced elements as the CPU does. */
#include <string.h>

#include "kernels/cuda/basic_kernels.h"
#include "kernels/cuda/launch_basic.h"
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

/* ct_reduce_axes's split of x by attrs.reduce, as launch maps. */
static void max_min_maps(ct_kernel_ctx *ctx, ct_strided *kept, ct_strided *reduced, int64_t *m,
                         int64_t *k) {
  ct_axes axes[2];
  ct_reduce_axes(&ctx->inputs[0].shape, ctx->attrs->reduce.axes_mask, &axes[0], &axes[1]);
  ct_strided *maps[2] = {kept, reduced};
  for (int s = 0; s < 2; ++s) {
    memset(maps[s], 0, sizeof *maps[s]);
    maps[s]->rank = axes[s].rank;
    memcpy(maps[s]->dims, axes[s].dims, (size_t)axes[s].rank * sizeof axes[s].dims[0]);
    memcpy(maps[s]->strides, axes[s].strides, (size_t)axes[s].rank * sizeof axes[s].strides[0]);
  }
  *m = ct_axes_count(&axes[0]);
  *k = ct_axes_count(&axes[1]);
}

static void max_min(ct_kernel_ctx *ctx, int is_max) {
  ct_strided kept, reduced;
  int64_t m, k;
  max_min_maps(ctx, &kept, &reduced, &m, &k);
  if (m == 0) return;
  cudaError_t err = ct_launch_max_min(ct_in_f32(ctx, 0), ct_out_f32(ctx, 0), m, k, &kept,
                                      &reduced, is_max, ct_kernel_gpu(ctx)->stream);
  ct_kernel_launch_failed(ctx, err);
}

void ct_gpu_max(ct_kernel_ctx *ctx) { max_min(ctx, 1); }
void ct_gpu_min(ct_kernel_ctx *ctx) { max_min(ctx, 0); }

/* MaxMinGrad(x, y, dy): as the CPU's, ties sharing dy. */
void ct_gpu_max_min_grad(ct_kernel_ctx *ctx) {
  ct_strided kept, reduced;
  int64_t m, k;
  max_min_maps(ctx, &kept, &reduced, &m, &k);
  if (m == 0 || k == 0) return;
  cudaError_t err = ct_launch_max_min_grad(ct_in_f32(ctx, 0), ct_in_f32(ctx, 1),
                                           ct_in_f32(ctx, 2), ct_out_f32(ctx, 0), m, k, &kept,
                                           &reduced, ct_kernel_gpu(ctx)->stream);
  ct_kernel_launch_failed(ctx, err);
}
