/* CPU kernels of the unary math ops (ops/unary_math.h): each row's forward
 * expression, and its derivative for UnaryMathGrad, as a loop over blocks
 * of elements, the blocks spread over the device's threads and each block's
 * loop vectorized (`omp simd`: AVX2 or AVX-512 as -march gives). Element i
 * of the output depends on element i of the inputs alone, so the bits do
 * not depend on the thread count. */
#include "kernels/cpu/cpu_kernels.h"
#include "ops/unary_math.h"

/* glibc's libmvec (which -lm brings in) has vector expf, logf and log1pf
 * for AVX2 and AVX-512, within an ulp or two of the scalar ones; math.h
 * declares them only under -ffast-math, so that the loops below call them
 * they are declared here (gcc's attribute: clang, which builds the fuzz
 * targets, has none). Elsewhere those loops call the scalar functions. */
#if defined(__x86_64__) && defined(__GLIBC_PREREQ) && !defined(__FAST_MATH__) && \
    !defined(__clang__)
#if __GLIBC_PREREQ(2, 35)
__attribute__((__simd__("notinbranch"))) float expf(float);
__attribute__((__simd__("notinbranch"))) float logf(float);
__attribute__((__simd__("notinbranch"))) float log1pf(float);
#endif
#endif

enum { BLOCK = 4096 }; /* elements a thread takes at a time */

/* A kernel's arrays: x, and for UnaryMathGrad y and dy; out is y or dx. */
typedef struct operands {
  const float *x, *y, *dy;
  float *out;
} operands;

/* The loop over elements [i0, i0 + m) of a row's forward expression or
 * derivative. An output in place of its input (CT_OP_INPLACE) reads each
 * element before it writes it. */
typedef void (*block_loop)(const operands *a, int64_t i0, int64_t m);

#define FORWARD(P, Name, function, forward, derivative, gradient, flops, domain) \
  static void forward_##Name(const operands *a, int64_t i0, int64_t m) {       \
    const float *X = a->x + i0;                                                \
    float *Y = a->out + i0;                                                    \
    _Pragma("omp simd") for (int64_t i = 0; i < m; ++i) {                      \
      const float x = X[i];                                                    \
      Y[i] = (forward);                                                        \
    }                                                                          \
  }
CT_UNARY_MATH(FORWARD, _)
#undef FORWARD

/* x, y and dy: a row's derivative reads those it needs. */
#define BACKWARD(P, Name, function, forward, derivative, gradient, flops, domain) \
  static void backward_##Name(const operands *a, int64_t i0, int64_t m) {       \
    const float *X = a->x + i0, *Y = a->y + i0, *DY = a->dy + i0;               \
    float *DX = a->out + i0;                                                    \
    _Pragma("omp simd") for (int64_t i = 0; i < m; ++i) {                       \
      const float x = X[i], y = Y[i], dy = DY[i];                               \
      (void)x, (void)y, (void)dy;                                               \
      DX[i] = (derivative);                                                     \
    }                                                                           \
  }
CT_UNARY_MATH(BACKWARD, _)
#undef BACKWARD

/* loop over the n elements, a block at a time, the blocks over the threads. */
static void run_blocks(const ct_kernel_ctx *ctx, int64_t n, block_loop loop, const operands *a) {
  const int64_t blocks = (n + BLOCK - 1) / BLOCK;
  const int threads = ctx->threads;
#pragma omp parallel for num_threads(threads) if (n > CT_PARALLEL_GRAIN)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t i0 = b * BLOCK;
    loop(a, i0, n - i0 < BLOCK ? n - i0 : BLOCK);
  }
}

#define KERNEL(P, Name, function, forward, derivative, gradient, flops, domain)     \
  void ct_cpu_##Name(ct_kernel_ctx *ctx) {                                         \
    const operands a = {ct_in_f32(ctx, 0), NULL, NULL, ct_out_f32(ctx, 0)};        \
    run_blocks(ctx, ct_in_elements(ctx, 0), forward_##Name, &a);                   \
  }
CT_UNARY_MATH(KERNEL, _)
#undef KERNEL

#define BACKWARD_OF(P, Name, function, forward, derivative, gradient, flops, domain) \
  backward_##Name,
static const block_loop backward_loops[] = {CT_UNARY_MATH(BACKWARD_OF, _)};
#undef BACKWARD_OF

/* UnaryMathGrad(x, y, dy) of row attrs.unary_math.op. */
void ct_cpu_unary_math_grad(ct_kernel_ctx *ctx) {
  const int op = ctx->attrs->unary_math.op;
  if (op < 0 || op >= CT_UNARY_MATH_COUNT) {
    ct_status_set(ctx->status, CT_INTERNAL, "UnaryMathGrad of no unary math op (%d)", op);
    return;
  }
  const operands a = {ct_in_f32(ctx, 0), ct_in_f32(ctx, 1), ct_in_f32(ctx, 2),
                      ct_out_f32(ctx, 0)};
  run_blocks(ctx, ct_in_elements(ctx, 2), backward_loops[op], &a);
}
