/* Inverted dropout. The keep decision of element i is a hash of (the node's
 * stream, the session step, the element's index in the global batch: i plus
 * first_example times the example size): the gradient recomputes the same
 * mask, and the result does not depend on threads, on what ran before, or
 * on how the batch is split across towers (src/ops/ops_nn.c).
 *
 * The hash is computed 8 elements at a time in explicit vectors: the compiler
 * vectorizes the plain loop only where the CPU multiplies 64-bit lanes
 * (AVX-512); on AVX2 it stayed scalar, an order of magnitude slower
 * (bench/RESULTS.md, "Behind the code's choices"). */
#include <string.h>

#include "core/hash.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/kernel_shapes.h"

typedef uint64_t u64x8 __attribute__((vector_size(64)));
typedef int64_t i64x8 __attribute__((vector_size(64)));
typedef int32_t i32x8 __attribute__((vector_size(32)));
typedef float f32x8 __attribute__((vector_size(32)));

enum { LANES = 8 };

static inline int keep(uint64_t stream, uint64_t step, int64_t i, uint32_t threshold) {
  uint64_t h = ct_mix64(stream ^ ct_mix64(step ^ ct_mix64((uint64_t)i)));
  return (uint32_t)(h >> 32) >= threshold;
}

/* *x = ct_mix64 of each lane (through a pointer: a vector of 64 bytes is
 * returned differently with AVX-512 and without). */
static inline void mix64x8(u64x8 *x) {
  u64x8 v = *x + 0x9E3779B97F4A7C15ull;
  v = (v ^ (v >> 30)) * 0xBF58476D1CE4E5B9ull;
  v = (v ^ (v >> 27)) * 0x94D049BB133111EBull;
  *x = v ^ (v >> 31);
}

/* y[0..8) = x[0..8) * scale where keep() of elements i..i+7, else 0. */
static inline void dropout8(uint64_t stream, uint64_t step, int64_t i, uint32_t threshold,
                            float scale, const float *x, float *y) {
  u64x8 h = (u64x8){0, 1, 2, 3, 4, 5, 6, 7} + (uint64_t)i;
  mix64x8(&h);
  h ^= step;
  mix64x8(&h);
  h ^= stream;
  mix64x8(&h);
  const i64x8 kept = (i64x8)(h >> 32) >= (int64_t)threshold; /* -1 where kept */
  f32x8 v;
  memcpy(&v, x, sizeof v);
  v *= scale;
  v = (f32x8)((i32x8)v & __builtin_convertvector(kept, i32x8));
  memcpy(y, &v, sizeof v);
}

/* The node's rate: its attribute, or its rate input, which must lie in
 * [0, 1). Returns 0, or 1 with the run's status set. */
static int dropout_rate(ct_kernel_ctx *ctx, float *rate) {
  const int input = ctx->attrs->dropout.rate_input;
  *rate = input ? *(const float *)ctx->inputs[input].data : ctx->attrs->dropout.rate;
  if (*rate >= 0.0f && *rate < 1.0f) return 0;
  ct_status_set(ctx->status, CT_INVALID_ARGUMENT,
                "dropout '%s' got rate %g (keep probability %g); the rate must lie in [0, 1), "
                "the keep probability in (0, 1]",
                ctx->node->name, (double)*rate, 1.0 - (double)*rate);
  return 1;
}

static void dropout(ct_kernel_ctx *ctx) {
  float rate;
  if (dropout_rate(ctx, &rate)) return;
  const float scale = 1.0f / (1.0f - rate);
  const uint32_t threshold = (uint32_t)((double)rate * 4294967296.0);
  const uint64_t stream = ctx->attrs->dropout.stream, step = ctx->step;
  const float *x = ct_in_f32(ctx, 0);
  float *y = ct_out_f32(ctx, 0);
  const int64_t n = ct_in_elements(ctx, 0);
  const int64_t first = ct_dropout_first_element(ctx);
  const int64_t vectors = n / LANES;
  const int threads = ctx->threads;
#pragma omp parallel for num_threads(threads) if (n > CT_PARALLEL_GRAIN)
  for (int64_t v = 0; v < vectors; ++v)
    dropout8(stream, step, first + v * LANES, threshold, scale, x + v * LANES, y + v * LANES);
  for (int64_t i = vectors * LANES; i < n; ++i)
    y[i] = keep(stream, step, first + i, threshold) ? x[i] * scale : 0.0f;
}

void ct_cpu_dropout(ct_kernel_ctx *ctx) { dropout(ctx); }
/* The gradient is the same masked scaling of dy. */
void ct_cpu_dropout_grad(ct_kernel_ctx *ctx) { dropout(ctx); }
