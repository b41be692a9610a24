/* MatMul through oneDNN's sgemm (row-major, uses the device's OpenMP team). */
#include "kernels/cpu/cpu_kernels.h"

void ct_cpu_matmul(ct_kernel_ctx *ctx) {
  const ct_shape *a = &ctx->inputs[0].shape, *b = &ctx->inputs[1].shape;
  const int ta = ctx->attrs->matmul.transpose_a != 0, tb = ctx->attrs->matmul.transpose_b != 0;
  const int64_t m = a->dims[ta], k = a->dims[1 - ta], n = b->dims[1 - tb];
  float *c = ct_out_f32(ctx, 0);
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (int64_t i = 0; i < m * n; ++i) c[i] = 0.0f;
    return;
  }
  dnnl_status_t st = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.0f, ct_in_f32(ctx, 0),
                                a->dims[1], ct_in_f32(ctx, 1), b->dims[1], 0.0f, c, n);
  ct_dnnl_check(ctx, st, "sgemm");
}
