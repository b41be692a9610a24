/* GPU CompressGradient and DecompressGradient (the CPU's compress.c): the
 * packing runs where the gradients are, so that only the packed bytes
 * travel to the host for the ranks' exchange (CompressedAllReduce, a CPU
 * op) and back. */
#include "ctower/ops.h"
#include "kernels/cuda/basic_kernels.h"
#include "kernels/cuda/launch_basic.h"

void ct_gpu_compress_gradient(ct_kernel_ctx *ctx) {
  const int c = ctx->attrs->compress.compression;
  const int64_t n = ct_in_elements(ctx, 0);
  if (n == 0) return;
  cudaError_t err = ct_launch_compress(c, ct_in_f32(ctx, 0),
                                       c == CT_COMPRESSION_ONEBIT ? ct_in_f32(ctx, 1) : NULL,
                                       ctx->outputs[0].data, n, ct_kernel_gpu(ctx)->stream);
  ct_kernel_launch_failed(ctx, err);
}

void ct_gpu_decompress_gradient(ct_kernel_ctx *ctx) {
  const ct_compress_attrs *a = &ctx->attrs->compress;
  if (a->n == 0) return;
  cudaError_t err = ct_launch_decompress(a->compression, ctx->inputs[0].data, ct_out_f32(ctx, 0),
                                         a->n, ct_kernel_gpu(ctx)->stream);
  ct_kernel_launch_failed(ctx, err);
}
