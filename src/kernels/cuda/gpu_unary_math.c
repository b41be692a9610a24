/* GPU kernels of the unary math ops (ops/unary_math.h): a kernel per row,
 * and UnaryMathGrad's, each one launch of unary_math.cu's code on the
 * device's stream. */
#include "kernels/cuda/basic_kernels.h"
#include "kernels/cuda/launch_basic.h"

static void forward(ct_kernel_ctx *ctx, ct_unary_math_op op) {
  const int64_t n = ct_in_elements(ctx, 0);
  if (n == 0) return;
  cudaError_t err = ct_launch_unary_math((int)op, ct_in_f32(ctx, 0), ct_out_f32(ctx, 0), n,
                                         ct_kernel_gpu(ctx)->stream);
  ct_kernel_launch_failed(ctx, err);
}

#define KERNEL(P, Name, function, forward_expr, derivative, gradient, flops, domain) \
  void ct_gpu_##Name(ct_kernel_ctx *ctx) { forward(ctx, CT_UNARY_MATH_##Name); }
CT_UNARY_MATH(KERNEL, _)
#undef KERNEL

/* UnaryMathGrad(x, y, dy) of row attrs.unary_math.op. */
void ct_gpu_unary_math_grad(ct_kernel_ctx *ctx) {
  const int op = ctx->attrs->unary_math.op;
  if (op < 0 || op >= CT_UNARY_MATH_COUNT) {
    ct_status_set(ctx->status, CT_INTERNAL, "UnaryMathGrad of no unary math op (%d)", op);
    return;
  }
  const int64_t n = ct_in_elements(ctx, 2);
  if (n == 0) return;
  cudaError_t err =
      ct_launch_unary_math_grad(op, ct_in_f32(ctx, 0), ct_in_f32(ctx, 1), ct_in_f32(ctx, 2),
                                ct_out_f32(ctx, 0), n, ct_kernel_gpu(ctx)->stream);
  ct_kernel_launch_failed(ctx, err);
}
