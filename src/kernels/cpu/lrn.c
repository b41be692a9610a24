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
 * kernels (kernels/cuda/lrn.cu) compute the same sums in the same order.
 * Each row's window sums are taken for all its channels at once, so that
 * they vectorize. The row pointers are restrict (LRN's output never takes
 * its input's buffer): without it every row's loops checked their
 * pointers' overlap first, a fifth of cifar10_cnn's LRN time. */
#include <math.h>
#include <omp.h>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/kernel_shapes.h"

/* Each thread of a kernel's parallel region takes its own copy: read through
 * the region's shared variables, the compiler kept the loops over a row's
 * channels scalar, and beta's test in lrn_power inside them, several times
 * slower (bench/RESULTS.md, "Behind the code's choices"). */
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

/* norm^-beta; TensorFlow's CIFAR-10 beta of 0.75 through square roots,
 * many times cheaper than powf. */
static inline float lrn_power(float norm, float beta) {
  if (beta == 0.75f) {
    const float root = sqrtf(norm);
    return 1.0f / (root * sqrtf(root));
  }
  return powf(norm, -beta);
}

/* out[c] = the sum of v over channel c's window [c - radius, c + radius]
 * (v zero outside [0, channels)), added in ascending order as over the
 * clipped window (the zeros change nothing), for every c at once: the
 * loop over c vectorizes. padded holds channels + 2 radius floats. */
static void window_sums(const float *restrict v, const lrn_params *p, float *restrict padded,
                        float *restrict out) {
  const int64_t r = p->radius, n = p->channels;
  for (int64_t j = 0; j < r; ++j) padded[j] = padded[r + n + j] = 0.0f;
  for (int64_t c = 0; c < n; ++c) padded[r + c] = v[c];
  for (int64_t c = 0; c < n; ++c) out[c] = 0.0f;
  for (int64_t j = 0; j <= 2 * r; ++j)
    for (int64_t c = 0; c < n; ++c) out[c] += padded[c + j];
}

/* Floats from one thread's room for window_sums (a padded row and two
 * rows) to the next's: a whole number of 64-byte cache lines, so that no
 * line is written by two threads (one shared line, written at every row by
 * both, made cifar10_cnn's LRN and LRNGrad on two threads barely faster
 * than on one). */
static int64_t thread_stride(const lrn_params *p) {
  enum { LINE_FLOATS = 64 / sizeof(float) };
  return (3 * p->channels + 2 * p->radius + LINE_FLOATS - 1) / LINE_FLOATS * LINE_FLOATS;
}

/* Every thread's room, from a cache line's start (scratch is). */
static float *thread_rows(ct_kernel_ctx *ctx, const lrn_params *p) {
  return ct_kernel_scratch(ctx, (size_t)ctx->threads * (size_t)thread_stride(p) * sizeof(float));
}

void ct_cpu_lrn(ct_kernel_ctx *ctx) {
  const lrn_params shared = lrn_params_of(ctx, &ctx->inputs[0].shape);
  const float *X = ct_in_f32(ctx, 0);
  float *Y = ct_out_f32(ctx, 0);
  float *rows = thread_rows(ctx, &shared);
  if (rows == NULL) return;
  const int threads = ctx->threads;
#pragma omp parallel num_threads(threads) if (shared.rows * shared.channels > CT_PARALLEL_GRAIN)
  {
    const lrn_params p = shared; /* see lrn_params */
    float *restrict padded = rows + (int64_t)omp_get_thread_num() * thread_stride(&p);
    float *restrict squares = padded + p.channels + 2 * p.radius;
    float *restrict sums = squares + p.channels;
#pragma omp for
    for (int64_t r = 0; r < p.rows; ++r) {
      const float *restrict x = X + r * p.channels;
      float *restrict y = Y + r * p.channels;
      for (int64_t c = 0; c < p.channels; ++c) squares[c] = x[c] * x[c];
      window_sums(squares, &p, padded, sums);
      for (int64_t c = 0; c < p.channels; ++c)
        y[c] = x[c] * lrn_power(p.bias + p.alpha * sums[c], p.beta);
    }
  }
}

/* LRNGrad(x, dy) -> dx. */
void ct_cpu_lrn_grad(ct_kernel_ctx *ctx) {
  const lrn_params shared = lrn_params_of(ctx, &ctx->inputs[0].shape);
  const float *X = ct_in_f32(ctx, 0), *DY = ct_in_f32(ctx, 1);
  float *DX = ct_out_f32(ctx, 0);
  float *rows = thread_rows(ctx, &shared);
  if (rows == NULL) return;
  const int threads = ctx->threads;
#pragma omp parallel num_threads(threads) if (shared.rows * shared.channels > CT_PARALLEL_GRAIN)
  {
    const lrn_params p = shared; /* see lrn_params */
    float *restrict padded = rows + (int64_t)omp_get_thread_num() * thread_stride(&p);
    float *restrict work = padded + p.channels + 2 * p.radius;
    float *restrict sums = work + p.channels;
#pragma omp for
    for (int64_t r = 0; r < p.rows; ++r) {
      const int64_t base = r * p.channels;
      const float *restrict x = X + base, *restrict dy = DY + base;
      float *restrict dx = DX + base;
      for (int64_t c = 0; c < p.channels; ++c) work[c] = x[c] * x[c];
      window_sums(work, &p, padded, sums);
      /* dx holds norm^-beta meanwhile; work, dy x norm^(-beta - 1) */
      for (int64_t c = 0; c < p.channels; ++c) {
        const float norm = p.bias + p.alpha * sums[c], s = lrn_power(norm, p.beta);
        dx[c] = s;
        work[c] = dy[c] * x[c] * s / norm;
      }
      window_sums(work, &p, padded, sums);
      for (int64_t c = 0; c < p.channels; ++c)
        dx[c] = dy[c] * dx[c] - 2.0f * p.alpha * p.beta * x[c] * sums[c];
    }
  }
}
