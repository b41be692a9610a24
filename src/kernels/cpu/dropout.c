/* Inverted dropout. The keep decision of element i is a hash of (the node's
 * stream, the session step, the element's index in the global batch: i plus
 * first_example times the example size): the gradient recomputes the same
 * mask, and the result does not depend on threads, on what ran before, or
 * on how the batch is split across towers (src/ops/ops_nn.c). */
#include "core/hash.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/kernel_shapes.h"

static inline int keep(uint64_t stream, uint64_t step, int64_t i, uint32_t threshold) {
  uint64_t h = ct_mix64(stream ^ ct_mix64(step ^ ct_mix64((uint64_t)i)));
  return (uint32_t)(h >> 32) >= threshold;
}

static void dropout(ct_kernel_ctx *ctx) {
  const float rate = ctx->attrs->dropout.rate;
  const float scale = 1.0f / (1.0f - rate);
  const uint32_t threshold = (uint32_t)((double)rate * 4294967296.0);
  const uint64_t stream = ctx->attrs->dropout.stream, step = ctx->step;
  const float *x = ct_in_f32(ctx, 0);
  float *y = ct_out_f32(ctx, 0);
  const int64_t n = ct_in_elements(ctx, 0);
  const int64_t first = ct_dropout_first_element(ctx);
  const int threads = ctx->threads;
#pragma omp parallel for num_threads(threads) if (n > CT_PARALLEL_GRAIN)
  for (int64_t i = 0; i < n; ++i)
    y[i] = keep(stream, step, first + i, threshold) ? x[i] * scale : 0.0f;
}

void ct_cpu_dropout(ct_kernel_ctx *ctx) { dropout(ctx); }
/* The gradient is the same masked scaling of dy. */
void ct_cpu_dropout_grad(ct_kernel_ctx *ctx) { dropout(ctx); }
