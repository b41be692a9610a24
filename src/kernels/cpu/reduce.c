/* Sum and Mean over a set of axes, and their gradient. Both run as a sum
 * to (or a broadcast from) the "kept" shape: x's shape with each reduced
 * axis set to 1. Max and Min, and their gradient, walk each output's
 * reduced elements in order (ct_reduce_axes), outputs over the threads. */
#include <math.h>

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

/* Max (is_max) or Min: NaN wins (once v is NaN no comparison replaces it). */
static void max_min(ct_kernel_ctx *ctx, int is_max) {
  ct_axes kept, reduced;
  ct_reduce_axes(&ctx->inputs[0].shape, ctx->attrs->reduce.axes_mask, &kept, &reduced);
  const float *X = ct_in_f32(ctx, 0);
  float *Y = ct_out_f32(ctx, 0);
  const int64_t m = ct_axes_count(&kept), k = ct_axes_count(&reduced);
  const int threads = ctx->threads;
#pragma omp parallel for num_threads(threads) if (m * k > CT_PARALLEL_GRAIN)
  for (int64_t j = 0; j < m; ++j) {
    const float *x = X + ct_axes_offset(&kept, j);
    float v = is_max ? -INFINITY : INFINITY;
    for (int64_t r = 0; r < k; ++r) {
      const float e = x[ct_axes_offset(&reduced, r)];
      if ((is_max ? e > v : e < v) || e != e) v = e;
    }
    Y[j] = v;
  }
}

void ct_cpu_max(ct_kernel_ctx *ctx) { max_min(ctx, 1); }
void ct_cpu_min(ct_kernel_ctx *ctx) { max_min(ctx, 0); }

/* MaxMinGrad(x, y, dy), attrs.reduce as the reduction's: as TensorFlow's,
 * dx = (x == y) / (the count of such x) * dy, so ties share dy and a NaN
 * result (no x equals it) gives NaN everywhere. */
void ct_cpu_max_min_grad(ct_kernel_ctx *ctx) {
  ct_axes kept, reduced;
  ct_reduce_axes(&ctx->inputs[0].shape, ctx->attrs->reduce.axes_mask, &kept, &reduced);
  const float *X = ct_in_f32(ctx, 0), *Y = ct_in_f32(ctx, 1), *DY = ct_in_f32(ctx, 2);
  float *DX = ct_out_f32(ctx, 0);
  const int64_t m = ct_axes_count(&kept), k = ct_axes_count(&reduced);
  const int threads = ctx->threads;
#pragma omp parallel for num_threads(threads) if (m * k > CT_PARALLEL_GRAIN)
  for (int64_t j = 0; j < m; ++j) {
    const int64_t base = ct_axes_offset(&kept, j);
    int64_t ties = 0;
    for (int64_t r = 0; r < k; ++r) ties += X[base + ct_axes_offset(&reduced, r)] == Y[j];
    for (int64_t r = 0; r < k; ++r) {
      const int64_t i = base + ct_axes_offset(&reduced, r);
      DX[i] = (X[i] == Y[j] ? 1.0f : 0.0f) / (float)ties * DY[j];
    }
  }
}
