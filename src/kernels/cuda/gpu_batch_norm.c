/* Batch normalization on the GPU over all axes but the last (channels), as
 * the CPU kernels compute it (kernels/cpu/batch_norm.c), with our own
 * fixed-order reductions (batch_norm.cu). x is viewed as [rows, C]; rows
 * may be 0, and then the per-channel outputs still get their values. */
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/kernel_shapes.h"
#include "kernels/cuda/launch_nn.h"
#include "kernels/cuda/nn_kernels.h"

/* BatchNormTraining(x, gamma, beta) -> y, mean, unbiased var, inv_std;
 * with attrs relu, y = max(0, y). */
void ct_gpu_batch_norm_training(ct_kernel_ctx *ctx) {
  int64_t rows, C;
  ct_rows_channels(&ctx->inputs[0].shape, &rows, &C);
  if (C == 0) return;
  float *scratch = ct_kernel_scratch(ctx, (size_t)ct_bn_scratch_floats(rows, C) * sizeof(float));
  if (scratch == NULL) return;
  cudaStream_t stream = ct_kernel_gpu(ctx)->stream;
  const float *x = ct_in_f32(ctx, 0);
  float *mean = ct_out_f32(ctx, 1), *inv_std = ct_out_f32(ctx, 3);
  if (ct_kernel_launch_failed(
          ctx, ct_launch_bn_stats(x, mean, ct_out_f32(ctx, 2), inv_std, scratch, rows, C,
                                  ctx->attrs->batch_norm.epsilon, stream)) ||
      rows == 0)
    return;
  ct_kernel_launch_failed(
      ctx, ct_launch_bn_normalize(x, ct_in_f32(ctx, 1), ct_in_f32(ctx, 2), mean, inv_std,
                                  ct_out_f32(ctx, 0), rows, C, ctx->attrs->batch_norm.relu,
                                  stream));
}

/* BatchNormInference(x, gamma, beta, mean, var) -> y. */
void ct_gpu_batch_norm_inference(ct_kernel_ctx *ctx) {
  int64_t rows, C;
  ct_rows_channels(&ctx->inputs[0].shape, &rows, &C);
  if (rows == 0 || C == 0) return;
  float *inv_std = ct_kernel_scratch(ctx, (size_t)C * sizeof(float));
  if (inv_std == NULL) return;
  cudaStream_t stream = ct_kernel_gpu(ctx)->stream;
  if (ct_kernel_launch_failed(ctx, ct_launch_bn_inv_std(ct_in_f32(ctx, 4), inv_std, C,
                                                        ctx->attrs->batch_norm.epsilon, stream)))
    return;
  ct_kernel_launch_failed(
      ctx, ct_launch_bn_normalize(ct_in_f32(ctx, 0), ct_in_f32(ctx, 1), ct_in_f32(ctx, 2),
                                  ct_in_f32(ctx, 3), inv_std, ct_out_f32(ctx, 0), rows, C, 0,
                                  stream));
}

/* BatchNormGrad(x, gamma, mean, inv_std, dy [, beta]) -> dx, dgamma, dbeta;
 * with attrs relu, dy counts only where the forward output was positive. */
void ct_gpu_batch_norm_grad(ct_kernel_ctx *ctx) {
  int64_t rows, C;
  ct_rows_channels(&ctx->inputs[0].shape, &rows, &C);
  if (C == 0) return;
  float *scratch = ct_kernel_scratch(ctx, (size_t)ct_bn_scratch_floats(rows, C) * sizeof(float));
  if (scratch == NULL) return;
  cudaStream_t stream = ct_kernel_gpu(ctx)->stream;
  const float *x = ct_in_f32(ctx, 0), *gamma = ct_in_f32(ctx, 1), *mean = ct_in_f32(ctx, 2);
  const float *inv_std = ct_in_f32(ctx, 3), *dy = ct_in_f32(ctx, 4);
  const float *beta = ctx->attrs->batch_norm.relu ? ct_in_f32(ctx, 5) : NULL;
  float *dgamma = ct_out_f32(ctx, 1), *dbeta = ct_out_f32(ctx, 2);
  if (ct_kernel_launch_failed(ctx, ct_launch_bn_param_grads(x, dy, mean, inv_std, gamma, beta,
                                                            dgamma, dbeta, scratch, rows, C,
                                                            stream)) ||
      rows == 0)
    return;
  ct_kernel_launch_failed(ctx, ct_launch_bn_grad_x(x, dy, gamma, beta, mean, inv_std, dgamma,
                                                   dbeta, ct_out_f32(ctx, 0), rows, C, stream));
}

/* BatchNormInferenceGrad(x, gamma, mean, var, dy) -> dx, dgamma, dbeta. */
void ct_gpu_batch_norm_inference_grad(ct_kernel_ctx *ctx) {
  int64_t rows, C;
  ct_rows_channels(&ctx->inputs[0].shape, &rows, &C);
  if (C == 0) return;
  /* the partial sums, then inv_std */
  const int64_t partial = ct_bn_scratch_floats(rows, C);
  float *scratch = ct_kernel_scratch(ctx, (size_t)(partial + C) * sizeof(float));
  if (scratch == NULL) return;
  float *inv_std = scratch + partial;
  cudaStream_t stream = ct_kernel_gpu(ctx)->stream;
  const float *x = ct_in_f32(ctx, 0), *gamma = ct_in_f32(ctx, 1), *mean = ct_in_f32(ctx, 2);
  const float *dy = ct_in_f32(ctx, 4);
  if (ct_kernel_launch_failed(ctx, ct_launch_bn_inv_std(ct_in_f32(ctx, 3), inv_std, C,
                                                        ctx->attrs->batch_norm.epsilon, stream)) ||
      ct_kernel_launch_failed(
          ctx, ct_launch_bn_param_grads(x, dy, mean, inv_std, NULL, NULL, ct_out_f32(ctx, 1),
                                        ct_out_f32(ctx, 2), scratch, rows, C, stream)) ||
      rows == 0)
    return;
  ct_kernel_launch_failed(
      ctx, ct_launch_bn_inference_grad_x(dy, gamma, inv_std, ct_out_f32(ctx, 0), rows, C, stream));
}
