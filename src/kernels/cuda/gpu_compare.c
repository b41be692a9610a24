/* GPU Equal, Cast and the comparisons of ops/compare.h (the CPU's compare.c). */
#include "kernels/cuda/basic_kernels.h"
#include "kernels/cuda/launch_basic.h"

void ct_gpu_equal(ct_kernel_ctx *ctx) {
  const ct_tensor *a = &ctx->inputs[0], *b = &ctx->inputs[1];
  const int64_t n = ct_tensor_elements(&ctx->outputs[0]);
  if (n == 0) return;
  cudaError_t err = ct_launch_equal(a->data, b->data, ctx->outputs[0].data, (int)a->dtype, n,
                                    ct_tensor_elements(a) == 1, ct_tensor_elements(b) == 1,
                                    ct_kernel_gpu(ctx)->stream);
  ct_kernel_launch_failed(ctx, err);
}

static void compare(ct_kernel_ctx *ctx, ct_compare_op op) {
  const ct_tensor *a = &ctx->inputs[0], *b = &ctx->inputs[1];
  const int64_t n = ct_tensor_elements(&ctx->outputs[0]);
  if (n == 0) return;
  cudaError_t err = ct_launch_compare((int)op, a->data, b->data, ctx->outputs[0].data,
                                      (int)a->dtype, n, ct_tensor_elements(a) == 1,
                                      ct_tensor_elements(b) == 1, ct_kernel_gpu(ctx)->stream);
  ct_kernel_launch_failed(ctx, err);
}

#define KERNEL(P, Name, function, op) \
  void ct_gpu_##Name(ct_kernel_ctx *ctx) { compare(ctx, CT_COMPARE_##Name); }
CT_COMPARE(KERNEL, _)
#undef KERNEL

void ct_gpu_cast(ct_kernel_ctx *ctx) {
  const int64_t n = ct_tensor_elements(&ctx->outputs[0]);
  if (n == 0) return;
  cudaError_t err = ct_launch_cast(ctx->inputs[0].data, ctx->outputs[0].data,
                                   (int)ctx->inputs[0].dtype, (int)ctx->outputs[0].dtype, n,
                                   ct_kernel_gpu(ctx)->stream);
  ct_kernel_launch_failed(ctx, err);
}
