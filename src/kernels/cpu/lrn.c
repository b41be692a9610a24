/* Local response normalization across channels, as TensorFlow defines it,
 * over x viewed as [rows, channels] (NHWC: channels are contiguous):
 *   norm[c] = bias + alpha * sum over j in [c - radius, c + radius] of x[j]^2
 *   y[c] = x[c] * norm[c]^-beta
 *   dx[c] = dy[c] * norm[c]^-beta
 *           - 2 alpha beta x[c] * sum over j in [c - radius, c + radius] of
 *             dy[j] x[j] norm[j]^(-beta - 1)
 * (the window is symmetric, so j's window holds c exactly when c's holds j).
 * Plain C rather than oneDNN: oneDNN 2.6's LRN backward crashes for a radius
 * of 0 and is wrong for a radius of 3 with more than 16 channels. The GPU
 * kernels (kernels/cuda/lrn.cu) compute the same sums in the same order. */
#include <math.h>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/kernel_shapes.h"

typedef struct lrn_params {
  int64_t rows, channels, radius;
  float bias, alpha, beta;
} lrn_params;

/* attrs.lrn; x is input 0. */
static lrn_params lrn_params_of(const ct_kernel_ctx *ctx, const ct_shape *x) {
  const ct_lrn_attrs *a = &ctx->attrs->lrn;
  lrn_params p = {0, 0, a->depth_radius, a->bias, a->alpha, a->beta};
  ct_rows_channels(x, &p.rows, &p.channels);
  return p;
}

/* bias + alpha * the sum of squares in channel c's window of one row. */
static inline float lrn_norm(const float *x, int64_t c, const lrn_params *p) {
  const int64_t lo = c - p->radius > 0 ? c - p->radius : 0;
  const int64_t hi = c + p->radius < p->channels - 1 ? c + p->radius : p->channels - 1;
  float sum = 0.0f;
  for (int64_t j = lo; j <= hi; ++j) sum += x[j] * x[j];
  return p->bias + p->alpha * sum;
}

void ct_cpu_lrn(ct_kernel_ctx *ctx) {
  const lrn_params p = lrn_params_of(ctx, &ctx->inputs[0].shape);
  const float *X = ct_in_f32(ctx, 0);
  float *Y = ct_out_f32(ctx, 0);
  const int threads = ctx->threads;
#pragma omp parallel for num_threads(threads) if (p.rows * p.channels > CT_PARALLEL_GRAIN)
  for (int64_t r = 0; r < p.rows; ++r) {
    const float *x = X + r * p.channels;
    float *y = Y + r * p.channels;
    for (int64_t c = 0; c < p.channels; ++c) y[c] = x[c] * powf(lrn_norm(x, c, &p), -p.beta);
  }
}

/* LRNGrad(x, dy) -> dx. */
void ct_cpu_lrn_grad(ct_kernel_ctx *ctx) {
  const lrn_params p = lrn_params_of(ctx, &ctx->inputs[0].shape);
  const float *X = ct_in_f32(ctx, 0), *DY = ct_in_f32(ctx, 1);
  float *DX = ct_out_f32(ctx, 0);
  /* per element: scale = norm^-beta and term = dy x norm^(-beta - 1) */
  float *scale = ct_kernel_scratch(ctx, (size_t)(p.rows * p.channels) * sizeof(float));
  float *term = ct_kernel_scratch(ctx, (size_t)(p.rows * p.channels) * sizeof(float));
  if (scale == NULL || term == NULL) return;
  const int threads = ctx->threads;
#pragma omp parallel for num_threads(threads) if (p.rows * p.channels > CT_PARALLEL_GRAIN)
  for (int64_t r = 0; r < p.rows; ++r) {
    const int64_t base = r * p.channels;
    const float *x = X + base, *dy = DY + base;
    for (int64_t c = 0; c < p.channels; ++c) {
      const float norm = lrn_norm(x, c, &p);
      const float s = powf(norm, -p.beta);
      scale[base + c] = s;
      term[base + c] = dy[c] * x[c] * s / norm;
    }
    for (int64_t c = 0; c < p.channels; ++c) {
      const int64_t lo = c - p.radius > 0 ? c - p.radius : 0;
      const int64_t hi = c + p.radius < p.channels - 1 ? c + p.radius : p.channels - 1;
      float sum = 0.0f;
      for (int64_t j = lo; j <= hi; ++j) sum += term[base + j];
      DX[base + c] = dy[c] * scale[base + c] - 2.0f * p.alpha * p.beta * x[c] * sum;
    }
  }
}
