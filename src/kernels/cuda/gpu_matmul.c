/* MatMul through cuBLAS, as ct_cpu_matmul: c [m, n] = op(a) op(b), row-major.
 * cuBLAS is column-major, where row-major c is c^T [n, m]: the call computes
 * c^T = op(b)^T op(a)^T, b first. The precision picks the compute type:
 * true fp32 (the handle keeps its default math mode), or tensor cores
 * rounding the inputs to tf32 or bf16. */
#include <limits.h>

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/nn_kernels.h"

static cublasComputeType_t compute_type(ct_precision precision) {
  switch (precision) {
    case CT_PRECISION_TF32:
      return CUBLAS_COMPUTE_32F_FAST_TF32;
    case CT_PRECISION_BF16:
      return CUBLAS_COMPUTE_32F_FAST_16BF;
    default:
      return CUBLAS_COMPUTE_32F;
  }
}

void ct_gpu_matmul(ct_kernel_ctx *ctx) {
  const ct_shape *a = &ctx->inputs[0].shape, *b = &ctx->inputs[1].shape;
  const int ta = ctx->attrs->matmul.transpose_a != 0, tb = ctx->attrs->matmul.transpose_b != 0;
  const int64_t m = a->dims[ta], k = a->dims[1 - ta], n = b->dims[1 - tb];
  ct_gpu *gpu = ct_kernel_gpu(ctx);
  float *c = ct_out_f32(ctx, 0);
  if (m == 0 || n == 0) return;
  if (k == 0) {
    ct_kernel_launch_failed(ctx,
                            cudaMemsetAsync(c, 0, (size_t)(m * n) * sizeof(float), gpu->stream));
    return;
  }
  /* the leading dimensions a->dims[1] and b->dims[1] are among m, n and k */
  if (m > INT_MAX || n > INT_MAX || k > INT_MAX) {
    ct_status_set(ctx->status, CT_UNIMPLEMENTED,
                  "%s: cuBLAS multiplies matrices of up to %d rows and columns, got [%lld, "
                  "%lld] by [%lld, %lld]",
                  ctx->node->name, INT_MAX, (long long)m, (long long)k, (long long)k, (long long)n);
    return;
  }
  cublasHandle_t cublas = ct_gpu_cublas(gpu, ctx->node->name, ctx->status);
  if (cublas == NULL) return;
  const float one = 1.0f, zero = 0.0f;
  ct_cublas_check(
      cublasGemmEx(cublas, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                   (int)n, (int)m, (int)k, &one, ct_in_f32(ctx, 1), CUDA_R_32F, (int)b->dims[1],
                   ct_in_f32(ctx, 0), CUDA_R_32F, (int)a->dims[1], &zero, c, CUDA_R_32F, (int)n,
                   compute_type(gpu->precision), CUBLAS_GEMM_DEFAULT),
      ctx->node->name, ctx->status);
}
