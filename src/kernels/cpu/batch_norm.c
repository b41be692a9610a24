/* Batch normalization over all axes but the last (channels), in plain C.
 * x is viewed as [R, C] with R = N*H*W rows. Per-channel sums are taken
 * over a fixed number of row chunks and added in chunk order, so the result
 * does not depend on the thread count. */
#include <math.h>
#include <string.h>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/lanes.h"
#include "kernels/kernel_shapes.h"

enum { CHUNKS = 16 };

/* Each chunk's per-channel sums run over its rows one at a time, channel
 * blocks of up to 64 outermost so that a block's sums stay in registers
 * across the rows (summed through memory row by row, the sums of 16 or 32
 * channels were bound by the latency of each addition: 3-4 times slower);
 * each sum is still added in row order. WIDTH is a constant where the
 * block functions are inlined. */
enum { WIDE = 64, NARROW = 16 };

/* Two sets of per-channel sums from the partial sums of the chunks, in
 * chunk order: partial holds CHUNKS rows of C for sum1, then CHUNKS for sum2. */
static void add_chunks(const float *partial, int64_t C, float *sum1, float *sum2) {
  const float *partial2 = partial + (int64_t)CHUNKS * C;
  for (int64_t c = 0; c < C; ++c) {
    float s1 = 0.0f, s2 = 0.0f;
    for (int k = 0; k < CHUNKS; ++k) {
      s1 += partial[(int64_t)k * C + c];
      s2 += partial2[(int64_t)k * C + c];
    }
    sum1[c] = s1;
    sum2[c] = s2;
  }
}

/* Blocks of channels are multiples of 16 floats, so of LANES (lanes.h). */

/* The width of the block of channels that starts at c0 of C: 64, 32 or 16,
 * the widest that fits, or 0 where fewer than 16 are left (those take the
 * loops over single channels). Each block's loop over rows keeps the
 * block's per-channel terms in registers and handles each row's part as
 * one to four vectors: a loop over the channels inside each row, written
 * plainly, was vectorized with its pointers' overlap checked anew for every
 * row, which for 16 or 32 channels took longer than the arithmetic. */
static int channel_block(int64_t C, int64_t c0) {
  for (int width = WIDE; width >= NARROW; width /= 2)
    if (c0 + width <= C) return width;
  return 0;
}

/* The moments a batch norm's statistics come from, in one pass over x: the
 * sums of d and of d^2 over rows, d = x - shift, shift a row of x (a sample
 * of each channel's values, so that the sum of squares loses few bits when
 * the mean is far from 0). p1[c0 + j], p2[c0 + j], j < width (a multiple of
 * 16): those sums over rows r0..r1. In explicit vectors: the compiler's own
 * vectorization of this loop kept neither sum in registers, and one pass ran
 * slower than two (bench/RESULTS.md, "Behind the code's choices"). */
static inline __attribute__((always_inline)) void block_moments(const float *x, const float *shift,
                                                                int64_t r0, int64_t r1, int64_t C,
                                                                int64_t c0, int width, float *p1,
                                                                float *p2) {
  enum { MAX_VECTORS = WIDE / LANES };
  const int n = width / LANES;
  lanes s1[MAX_VECTORS] = {0}, s2[MAX_VECTORS] = {0}, sh[MAX_VECTORS];
  for (int v = 0; v < n; ++v) memcpy(&sh[v], shift + c0 + LANES * v, sizeof sh[v]);
  for (int64_t r = r0; r < r1; ++r) {
    const float *xr = x + r * C + c0;
    for (int v = 0; v < n; ++v) {
      lanes d;
      memcpy(&d, xr + LANES * v, sizeof d);
      d -= sh[v];
      s1[v] += d;
      s2[v] += d * d;
    }
  }
  for (int v = 0; v < n; ++v) {
    memcpy(p1 + c0 + LANES * v, &s1[v], sizeof s1[v]);
    memcpy(p2 + c0 + LANES * v, &s2[v], sizeof s2[v]);
  }
}

/* As block_moments for the channels from c0 to C, fewer than NARROW: row
 * by row, the sums in p1 and p2. */
static void rest_moments(const float *x, const float *shift, int64_t r0, int64_t r1, int64_t C,
                         int64_t c0, float *p1, float *p2) {
  for (int64_t c = c0; c < C; ++c) p1[c] = p2[c] = 0.0f;
  for (int64_t r = r0; r < r1; ++r) {
    const float *xr = x + r * C;
    for (int64_t c = c0; c < C; ++c) {
      const float d = xr[c] - shift[c];
      p1[c] += d;
      p2[c] += d * d;
    }
  }
}

/* sum1[c], sum2[c]: the sums over rows of d and d^2, d = x[r, c] -
 * shift[c]. Partial sums use `partial` (2 * CHUNKS * C floats). */
static void column_moments(const ct_kernel_ctx *ctx, const float *x, const float *shift,
                           int64_t rows, int64_t C, float *partial, float *sum1, float *sum2) {
  float *partial2 = partial + (int64_t)CHUNKS * C;
  const int threads = ctx->threads;
#pragma omp parallel for num_threads(threads) if (rows * C > CT_PARALLEL_GRAIN)
  for (int k = 0; k < CHUNKS; ++k) {
    float *p1 = partial + (int64_t)k * C, *p2 = partial2 + (int64_t)k * C;
    const int64_t r0 = rows * k / CHUNKS, r1 = rows * (k + 1) / CHUNKS;
    for (int64_t c0 = 0, width; c0 < C; c0 += width) {
      switch (width = channel_block(C, c0)) {
      case WIDE: block_moments(x, shift, r0, r1, C, c0, WIDE, p1, p2); break;
      case WIDE / 2: block_moments(x, shift, r0, r1, C, c0, WIDE / 2, p1, p2); break;
      case NARROW: block_moments(x, shift, r0, r1, C, c0, NARROW, p1, p2); break;
      default:
        rest_moments(x, shift, r0, r1, C, c0, p1, p2);
        width = C - c0;
      }
    }
  }
  add_chunks(partial, C, sum1, sum2);
}

/* The batch norm of x at one element: gamma * (x - mean) * inv_std + beta,
 * evaluated in that order wherever it is (the gradient with a ReLU
 * recomputes it to find where y > 0). */
static inline float normalized(float x, float gamma, float beta, float mean, float inv_std) {
  return gamma * (x - mean) * inv_std + beta;
}

/* A batch norm's terms per channel. In a gradient, gamma and beta are only
 * read where the batch norm had a ReLU (beta not NULL), whose output says
 * where the gradient passes. */
typedef struct bn_stats {
  const float *mean, *inv_std, *gamma, *beta;
} bn_stats;

/* y[r, c0 + j] = normalized(x[r, c0 + j]) for rows r0..r1, j < width (a
 * multiple of 16); with relu, +0 where that is not > 0 (as ReLU takes it). */
static inline __attribute__((always_inline)) void block_normalize(const float *x,
                                                                  const bn_stats *a, int64_t r0,
                                                                  int64_t r1, int64_t C,
                                                                  int64_t c0, int width, int relu,
                                                                  float *y) {
  enum { MAX_VECTORS = WIDE / LANES };
  const int n = width / LANES;
  lanes gm[MAX_VECTORS], bt[MAX_VECTORS], m[MAX_VECTORS], is[MAX_VECTORS];
  const lanes zero = {0};
  for (int v = 0; v < n; ++v) {
    const int64_t c = c0 + LANES * v;
    memcpy(&gm[v], a->gamma + c, sizeof gm[v]);
    memcpy(&bt[v], a->beta + c, sizeof bt[v]);
    memcpy(&m[v], a->mean + c, sizeof m[v]);
    memcpy(&is[v], a->inv_std + c, sizeof is[v]);
  }
  for (int64_t r = r0; r < r1; ++r)
    for (int v = 0; v < n; ++v) {
      lanes xv;
      memcpy(&xv, x + r * C + c0 + LANES * v, sizeof xv);
      lanes z = gm[v] * (xv - m[v]) * is[v] + bt[v]; /* normalized() */
      if (relu) z = (lanes)((lane_ints)z & (z > zero));
      memcpy(y + r * C + c0 + LANES * v, &z, sizeof z);
    }
}

/* y = normalized(x), or with relu max(0, normalized(x)) as ReLU takes it:
 * over CHUNKS chunks of rows, in blocks of channels. */
static void normalize(const ct_kernel_ctx *ctx, const float *x, const bn_stats *a, int64_t rows,
                      int64_t C, int relu, float *y) {
  const int threads = ctx->threads;
#pragma omp parallel for num_threads(threads) if (rows * C > CT_PARALLEL_GRAIN)
  for (int k = 0; k < CHUNKS; ++k) {
    const int64_t r0 = rows * k / CHUNKS, r1 = rows * (k + 1) / CHUNKS;
    for (int64_t c0 = 0, width; c0 < C; c0 += width) {
      switch (width = channel_block(C, c0)) {
      case WIDE: block_normalize(x, a, r0, r1, C, c0, WIDE, relu, y); break;
      case WIDE / 2: block_normalize(x, a, r0, r1, C, c0, WIDE / 2, relu, y); break;
      case NARROW: block_normalize(x, a, r0, r1, C, c0, NARROW, relu, y); break;
      default:
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t c = c0; c < C; ++c) {
            const float z = normalized(x[r * C + c], a->gamma[c], a->beta[c], a->mean[c],
                                       a->inv_std[c]);
            y[r * C + c] = relu ? (z > 0.0f ? z : 0.0f) : z;
          }
        width = C - c0;
      }
    }
  }
}

/* BatchNormTraining(x, gamma, beta) -> y, mean, unbiased var, inv_std;
 * with attrs relu, y = max(0, y). Two passes over x: the moments, then y. */
void ct_cpu_batch_norm_training(ct_kernel_ctx *ctx) {
  int64_t rows, C;
  ct_rows_channels(&ctx->inputs[0].shape, &rows, &C);
  const float *x = ct_in_f32(ctx, 0);
  float *mean = ct_out_f32(ctx, 1), *var = ct_out_f32(ctx, 2), *inv_std = ct_out_f32(ctx, 3);
  float *partial = ct_kernel_scratch(ctx, (size_t)(2 * CHUNKS) * (size_t)C * sizeof(float));
  if (partial == NULL) return;
  /* the shift: x's first row, kept in inv_std until each channel's is known */
  float *shift = inv_std;
  for (int64_t c = 0; c < C; ++c) shift[c] = rows ? x[c] : 0.0f;
  column_moments(ctx, x, shift, rows, C, partial, mean, var);
  const float R = (float)(rows ? rows : 1), eps = ctx->attrs->batch_norm.epsilon;
  for (int64_t c = 0; c < C; ++c) {
    const float mean_d = mean[c] / R; /* the mean of x - shift */
    float biased = (var[c] - mean[c] * mean_d) / R;
    if (biased < 0) biased = 0;
    mean[c] = shift[c] + mean_d;
    inv_std[c] = 1.0f / sqrtf(biased + eps);
    var[c] = rows > 1 ? biased * (float)rows / (float)(rows - 1) : biased;
  }
  const bn_stats st = {mean, inv_std, ct_in_f32(ctx, 1), ct_in_f32(ctx, 2)};
  normalize(ctx, x, &st, rows, C, ctx->attrs->batch_norm.relu, ct_out_f32(ctx, 0));
}

/* The channels of x (NHWC, or [rows, C]). */
static size_t channels(const ct_shape *x) { return x->rank > 0 ? (size_t)x->dims[x->rank - 1] : 0; }

CT_CPU_SCRATCH(ct_cpu_batch_norm_training_scratch) {
  (void)device, (void)attrs, (void)n_inputs, (void)out;
  bytes[0] = 2 * CHUNKS * channels(&in[0]) * sizeof(float);
  return 1;
}

/* BatchNormInference(x, gamma, beta, mean, var) -> y. */
void ct_cpu_batch_norm_inference(ct_kernel_ctx *ctx) {
  int64_t rows, C;
  ct_rows_channels(&ctx->inputs[0].shape, &rows, &C);
  float *inv_std = ct_kernel_scratch(ctx, (size_t)C * sizeof(float));
  if (inv_std == NULL) return;
  const float *var = ct_in_f32(ctx, 4);
  const float eps = ctx->attrs->batch_norm.epsilon;
  for (int64_t c = 0; c < C; ++c) inv_std[c] = 1.0f / sqrtf(var[c] + eps);
  const bn_stats st = {ct_in_f32(ctx, 3), inv_std, ct_in_f32(ctx, 1), ct_in_f32(ctx, 2)};
  normalize(ctx, ct_in_f32(ctx, 0), &st, rows, C, 0, ct_out_f32(ctx, 0));
}

/* dy where normalized(x) > 0, else 0: the gradient through the ReLU that
 * followed the batch norm (a select, not a branch: the test goes either
 * way about half the time). */
static inline float passed(float dy, float x, float gamma, float beta, float mean, float inv_std) {
  return normalized(x, gamma, beta, mean, inv_std) > 0.0f ? dy : 0.0f;
}

/* passed() on LANES lanes, in place: each of *dy kept, or made +0 (its bits
 * cleared). (Pointers: a 64-byte vector passed by value has no ABI on CPUs
 * without AVX-512.) */
static inline __attribute__((always_inline)) void pass_lanes(lanes *dy, const lanes *x,
                                                         const lanes *gamma, const lanes *beta,
                                                         const lanes *mean,
                                                         const lanes *inv_std) {
  const lanes zero = {0};
  lanes g = *dy;
#if defined(__x86_64__)
  /* dy loaded whatever the test gives: GCC made the AND a load of dy under
   * the test's mask, a load that waited for x to arrive from memory before
   * asking for dy, and the ReLU made the gradient half as slow again
   * (bench/RESULTS.md, "Behind the code's choices") */
  __asm__("" : "+v"(g));
#endif
  *dy = (lanes)((lane_ints)g & (*gamma * (*x - *mean) * *inv_std + *beta > zero));
}

/* pb[c0 + j], pg[c0 + j], j < width (a multiple of 16): the sums over
 * rows r0..r1 of dy and of dy * xhat, as block_moments takes them, dy
 * through the ReLU with relu (as passed() takes it: dy or +0). */
static inline __attribute__((always_inline)) void block_param_sums(
    const float *x, const float *dy, const bn_stats *st, int64_t r0, int64_t r1, int64_t C,
    int64_t c0, int width, int relu, float *pb, float *pg) {
  enum { MAX_VECTORS = WIDE / LANES };
  const int n = width / LANES;
  lanes sb[MAX_VECTORS] = {0}, sg[MAX_VECTORS] = {0}, m[MAX_VECTORS], is[MAX_VECTORS],
          gm[MAX_VECTORS], bt[MAX_VECTORS];
  for (int v = 0; v < n; ++v) {
    const int64_t c = c0 + LANES * v;
    memcpy(&m[v], st->mean + c, sizeof m[v]);
    memcpy(&is[v], st->inv_std + c, sizeof is[v]);
    if (relu) {
      memcpy(&gm[v], st->gamma + c, sizeof gm[v]);
      memcpy(&bt[v], st->beta + c, sizeof bt[v]);
    }
  }
  for (int64_t r = r0; r < r1; ++r) {
    const float *xr = x + r * C + c0, *dyr = dy + r * C + c0;
    for (int v = 0; v < n; ++v) {
      lanes xv, g;
      memcpy(&xv, xr + LANES * v, sizeof xv);
      memcpy(&g, dyr + LANES * v, sizeof g);
      if (relu) pass_lanes(&g, &xv, &gm[v], &bt[v], &m[v], &is[v]);
      sb[v] += g;
      sg[v] += g * (xv - m[v]) * is[v];
    }
  }
  for (int v = 0; v < n; ++v) {
    memcpy(pb + c0 + LANES * v, &sb[v], sizeof sb[v]);
    memcpy(pg + c0 + LANES * v, &sg[v], sizeof sg[v]);
  }
}

/* The sums of one chunk of rows for the channels from c0 to C, fewer than
 * NARROW: row by row, into pb and pg. */
static void rest_param_sums(const float *x, const float *dy, const bn_stats *st, int64_t r0,
                            int64_t r1, int64_t C, int64_t c0, float *pb, float *pg) {
  const float *m = st->mean, *is = st->inv_std, *gm = st->gamma, *bt = st->beta;
  for (int64_t c = c0; c < C; ++c) pb[c] = pg[c] = 0.0f;
  for (int64_t r = r0; r < r1; ++r) {
    const float *dyr = dy + r * C, *xr = x + r * C;
    for (int64_t c = c0; c < C; ++c) {
      const float g = bt ? passed(dyr[c], xr[c], gm[c], bt[c], m[c], is[c]) : dyr[c];
      pb[c] += g;
      pg[c] += g * (xr[c] - m[c]) * is[c];
    }
  }
}

/* The sums of one chunk of rows, in blocks of channels. */
static void chunk_param_sums(const float *x, const float *dy, const bn_stats *st, int64_t r0,
                             int64_t r1, int64_t C, float *pb, float *pg) {
  const int relu = st->beta != NULL;
  for (int64_t c0 = 0, width; c0 < C; c0 += width) {
    switch (width = channel_block(C, c0)) {
    case WIDE: block_param_sums(x, dy, st, r0, r1, C, c0, WIDE, relu, pb, pg); break;
    case WIDE / 2: block_param_sums(x, dy, st, r0, r1, C, c0, WIDE / 2, relu, pb, pg); break;
    case NARROW: block_param_sums(x, dy, st, r0, r1, C, c0, NARROW, relu, pb, pg); break;
    default:
      rest_param_sums(x, dy, st, r0, r1, C, c0, pb, pg);
      width = C - c0;
    }
  }
}

/* Shared by both gradients: dbeta = sum dy, dgamma = sum dy * xhat, where
 * xhat = (x - mean) * inv_std, both in one pass over dy and x (each sum in
 * the order column_moments adds its sums). partial holds 2 * CHUNKS * C floats. */
static void param_grads(ct_kernel_ctx *ctx, const float *x, const float *dy, const bn_stats *st,
                        int64_t rows, int64_t C, float *dgamma, float *dbeta, float *partial) {
  float *partial_gamma = partial + (int64_t)CHUNKS * C;
  const int threads = ctx->threads;
#pragma omp parallel for num_threads(threads) if (rows * C > CT_PARALLEL_GRAIN)
  for (int k = 0; k < CHUNKS; ++k) {
    const int64_t r0 = rows * k / CHUNKS, r1 = rows * (k + 1) / CHUNKS;
    chunk_param_sums(x, dy, st, r0, r1, C, partial + (int64_t)k * C,
                     partial_gamma + (int64_t)k * C);
  }
  add_chunks(partial, C, dbeta, dgamma);
}

/* What dx takes besides x and dy, per channel: the statistics, the
 * parameter gradients and scale = gamma * inv_std / R. */
typedef struct bn_dx_terms {
  bn_stats st;
  const float *scale, *dbeta, *dgamma;
  float R;
} bn_dx_terms;

/* dx[r, c0 + j] for rows r0..r1, j < width (a multiple of 16): each
 * element by the same operations in the same order as in rest_dx. */
static inline __attribute__((always_inline)) void block_dx(const float *x, const float *dy,
                                                           const bn_dx_terms *t, int64_t r0,
                                                           int64_t r1, int64_t C, int64_t c0,
                                                           int width, int relu, float *dx) {
  enum { MAX_VECTORS = WIDE / LANES };
  const int n = width / LANES;
  lanes m[MAX_VECTORS], is[MAX_VECTORS], sc[MAX_VECTORS], db[MAX_VECTORS], dg[MAX_VECTORS],
      gm[MAX_VECTORS], bt[MAX_VECTORS];
  const lanes zero = {0}, R = zero + t->R; /* t->R in every lane */
  for (int v = 0; v < n; ++v) {
    const int64_t c = c0 + LANES * v;
    memcpy(&m[v], t->st.mean + c, sizeof m[v]);
    memcpy(&is[v], t->st.inv_std + c, sizeof is[v]);
    memcpy(&sc[v], t->scale + c, sizeof sc[v]);
    memcpy(&db[v], t->dbeta + c, sizeof db[v]);
    memcpy(&dg[v], t->dgamma + c, sizeof dg[v]);
    if (relu) {
      memcpy(&gm[v], t->st.gamma + c, sizeof gm[v]);
      memcpy(&bt[v], t->st.beta + c, sizeof bt[v]);
    }
  }
  for (int64_t r = r0; r < r1; ++r) {
    const float *xr = x + r * C + c0, *dyr = dy + r * C + c0;
    float *dxr = dx + r * C + c0;
    for (int v = 0; v < n; ++v) {
      lanes xv, g;
      memcpy(&xv, xr + LANES * v, sizeof xv);
      memcpy(&g, dyr + LANES * v, sizeof g);
      const lanes xhat = (xv - m[v]) * is[v];
      if (relu) pass_lanes(&g, &xv, &gm[v], &bt[v], &m[v], &is[v]);
      const lanes d = sc[v] * (R * g - db[v] - xhat * dg[v]);
      memcpy(dxr + LANES * v, &d, sizeof d);
    }
  }
}

/* As block_dx for the channels from c0 to C, fewer than NARROW. */
static void rest_dx(const float *x, const float *dy, const bn_dx_terms *t, int64_t r0, int64_t r1,
                    int64_t C, int64_t c0, float *dx) {
  const bn_stats *st = &t->st;
  for (int64_t r = r0; r < r1; ++r)
    for (int64_t c = c0; c < C; ++c) {
      const float xr = x[r * C + c], xhat = (xr - st->mean[c]) * st->inv_std[c];
      const float g = st->beta ? passed(dy[r * C + c], xr, st->gamma[c], st->beta[c], st->mean[c],
                                        st->inv_std[c])
                               : dy[r * C + c];
      dx[r * C + c] = t->scale[c] * (t->R * g - t->dbeta[c] - xhat * t->dgamma[c]);
    }
}

/* dx over the rows of CHUNKS chunks, in blocks of channels. */
static void batch_norm_dx(const ct_kernel_ctx *ctx, const float *x, const float *dy,
                          const bn_dx_terms *t, int64_t rows, int64_t C, float *dx) {
  const int relu = t->st.beta != NULL, threads = ctx->threads;
#pragma omp parallel for num_threads(threads) if (rows * C > CT_PARALLEL_GRAIN)
  for (int k = 0; k < CHUNKS; ++k) {
    const int64_t r0 = rows * k / CHUNKS, r1 = rows * (k + 1) / CHUNKS;
    for (int64_t c0 = 0, width; c0 < C; c0 += width) {
      switch (width = channel_block(C, c0)) {
      case WIDE: block_dx(x, dy, t, r0, r1, C, c0, WIDE, relu, dx); break;
      case WIDE / 2: block_dx(x, dy, t, r0, r1, C, c0, WIDE / 2, relu, dx); break;
      case NARROW: block_dx(x, dy, t, r0, r1, C, c0, NARROW, relu, dx); break;
      default:
        rest_dx(x, dy, t, r0, r1, C, c0, dx);
        width = C - c0;
      }
    }
  }
}

/* BatchNormGrad(x, gamma, mean, inv_std, dy [, beta]) -> dx, dgamma, dbeta:
 * dx = gamma * inv_std / R * (R * dy - dbeta - xhat * dgamma), the first
 * factor taken once per channel (the same bits); with attrs relu, dy is 0
 * where the forward output was. */
void ct_cpu_batch_norm_grad(ct_kernel_ctx *ctx) {
  int64_t rows, C;
  ct_rows_channels(&ctx->inputs[0].shape, &rows, &C);
  const float *x = ct_in_f32(ctx, 0), *gamma = ct_in_f32(ctx, 1), *mean = ct_in_f32(ctx, 2);
  const float *inv_std = ct_in_f32(ctx, 3), *dy = ct_in_f32(ctx, 4);
  const bn_stats st = {mean, inv_std, gamma,
                       ctx->attrs->batch_norm.relu ? ct_in_f32(ctx, 5) : NULL};
  float *dx = ct_out_f32(ctx, 0), *dgamma = ct_out_f32(ctx, 1), *dbeta = ct_out_f32(ctx, 2);
  float *partial = ct_kernel_scratch(ctx, (size_t)(2 * CHUNKS + 1) * (size_t)C * sizeof(float));
  if (partial == NULL) return;
  param_grads(ctx, x, dy, &st, rows, C, dgamma, dbeta, partial);
  const float R = (float)rows;
  float *scale = partial + (int64_t)(2 * CHUNKS) * C;
  for (int64_t c = 0; c < C; ++c) scale[c] = gamma[c] * inv_std[c] / R;
  const bn_dx_terms terms = {st, scale, dbeta, dgamma, R};
  batch_norm_dx(ctx, x, dy, &terms, rows, C, dx);
}

/* BatchNormInferenceGrad(x, gamma, mean, var, dy) -> dx, dgamma, dbeta:
 * the statistics are constants, so dx = dy * gamma * inv_std. */
void ct_cpu_batch_norm_inference_grad(ct_kernel_ctx *ctx) {
  int64_t rows, C;
  ct_rows_channels(&ctx->inputs[0].shape, &rows, &C);
  const float *x = ct_in_f32(ctx, 0), *gamma = ct_in_f32(ctx, 1), *mean = ct_in_f32(ctx, 2);
  const float *var = ct_in_f32(ctx, 3), *dy = ct_in_f32(ctx, 4);
  float *dx = ct_out_f32(ctx, 0);
  float *partial = ct_kernel_scratch(ctx, (size_t)(2 * CHUNKS + 1) * (size_t)C * sizeof(float));
  if (partial == NULL) return;
  float *inv_std = partial + (int64_t)(2 * CHUNKS) * C;
  const float eps = ctx->attrs->batch_norm.epsilon;
  for (int64_t c = 0; c < C; ++c) inv_std[c] = 1.0f / sqrtf(var[c] + eps);
  const bn_stats st = {mean, inv_std, NULL, NULL};
  param_grads(ctx, x, dy, &st, rows, C, ct_out_f32(ctx, 1), ct_out_f32(ctx, 2), partial);
  const int threads = ctx->threads;
#pragma omp parallel for num_threads(threads) if (rows * C > CT_PARALLEL_GRAIN)
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < C; ++c) dx[r * C + c] = dy[r * C + c] * gamma[c] * inv_std[c];
}

/* AssignMovingAvg(variable, value): variable = m * variable + (1 - m) * value,
 * in place (the output is the variable). */
void ct_cpu_assign_moving_average(ct_kernel_ctx *ctx) {
  float *v = ct_in_f32(ctx, 0);
  const float *value = ct_in_f32(ctx, 1);
  const float m = ctx->attrs->moving_average.momentum;
  const int64_t n = ct_in_elements(ctx, 0);
  for (int64_t i = 0; i < n; ++i) v[i] = m * v[i] + (1.0f - m) * value[i];
}

CT_CPU_SCRATCH(ct_cpu_batch_norm_grad_scratch) {
  (void)device, (void)attrs, (void)n_inputs, (void)out;
  bytes[0] = (2 * CHUNKS + 1) * channels(&in[0]) * sizeof(float);
  return 1;
}
