/* Launchers of the CUDA code behind the neural-network GPU kernels (layout
 * changes for cuDNN, pooling, LRN, batch norm). Plain pointers to device
 * memory, sizes in elements; each queues its work on `stream` and returns
 * cudaGetLastError(). Callers do not launch for empty tensors. */
#ifndef CTOWER_LAUNCH_NN_H
#define CTOWER_LAUNCH_NN_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- layouts (nn_layout.cu) ---- */

/* dst [cols, rows] = the transpose of src [rows, cols] (row-major): HWIO
 * filters are [R*S*C, K] and cuDNN's KRSC ones [K, R*S*C]. */
cudaError_t ct_launch_transpose(const float *src, float *dst, int64_t rows, int64_t cols,
                                cudaStream_t stream);

/* NHWC x [n, h, w, c] into dst [n, h + extra_h, w + extra_w, c], zeros in the
 * extra rows at the bottom and columns at the right. */
cudaError_t ct_launch_pad_after(const float *x, float *dst, int64_t n, int64_t h, int64_t w,
                                int64_t c, int64_t extra_h, int64_t extra_w, cudaStream_t stream);

/* The inverse: dst [n, h, w, c] = the top-left of src [n, h + extra_h, w + extra_w, c]. */
cudaError_t ct_launch_crop_after(const float *src, float *dst, int64_t n, int64_t h, int64_t w,
                                 int64_t c, int64_t extra_h, int64_t extra_w, cudaStream_t stream);

/* ---- pooling (pool.cu) ---- */

/* A window of window_h x window_w pixels over NHWC x [n, h, w, c] giving
 * y [n, out_h, out_w, c]; window (out_y, out_x) starts at (out_y * stride_h -
 * pad_top, out_x * stride_w - pad_left), and only its part inside the image
 * counts. */
typedef struct ct_pool_geometry {
  int64_t n, h, w, c;
  int64_t out_h, out_w;
  int64_t window_h, window_w, stride_h, stride_w, pad_top, pad_left;
} ct_pool_geometry;

/* y = the window's maximum. */
cudaError_t ct_launch_max_pool(const float *x, float *y, ct_pool_geometry g, cudaStream_t stream);
/* dx: each dy goes to its window's first maximum (row-major order);
 * argmax: scratch of one int32 per y element. */
cudaError_t ct_launch_max_pool_grad(const float *x, const float *dy, float *dx, int32_t *argmax,
                                    ct_pool_geometry g, cudaStream_t stream);
/* y = the mean over the window's part inside the image. */
cudaError_t ct_launch_avg_pool(const float *x, float *y, ct_pool_geometry g, cudaStream_t stream);
cudaError_t ct_launch_avg_pool_grad(const float *dy, float *dx, ct_pool_geometry g,
                                    cudaStream_t stream);

/* ---- LRN (lrn.cu), over the last axis of x viewed as [rows, channels] ----
 * y = x * (bias + alpha * sum of x^2 over channels c - radius .. c + radius)^-beta */
cudaError_t ct_launch_lrn(const float *x, float *y, int64_t rows, int64_t channels, int64_t radius,
                          float bias, float alpha, float beta, cudaStream_t stream);
/* scratch: 2 * rows * channels floats. */
cudaError_t ct_launch_lrn_grad(const float *x, const float *dy, float *dx, float *scratch,
                               int64_t rows, int64_t channels, int64_t radius, float bias,
                               float alpha, float beta, cudaStream_t stream);

/* ---- batch norm (batch_norm.cu), x viewed as [rows, channels] ----
 * Per-channel sums go through a fixed number of row chunks, added in chunk
 * order: the same bits on every run. rows may be 0 (the sums are 0). */

/* Floats of scratch the statistics and gradient launchers need. */
int64_t ct_bn_scratch_floats(int64_t rows, int64_t channels);

/* mean, unbiased var and inv_std = 1 / sqrt(biased var + epsilon) [channels]. */
cudaError_t ct_launch_bn_stats(const float *x, float *mean, float *var, float *inv_std,
                               float *scratch, int64_t rows, int64_t channels, float epsilon,
                               cudaStream_t stream);
/* inv_std = 1 / sqrt(var + epsilon) [channels]. */
cudaError_t ct_launch_bn_inv_std(const float *var, float *inv_std, int64_t channels, float epsilon,
                                 cudaStream_t stream);
/* y = gamma * (x - mean) * inv_std + beta; with relu, max(0, y). */
cudaError_t ct_launch_bn_normalize(const float *x, const float *gamma, const float *beta,
                                   const float *mean, const float *inv_std, float *y, int64_t rows,
                                   int64_t channels, int relu, cudaStream_t stream);
/* dbeta = sum dy, dgamma = sum dy * (x - mean) * inv_std [channels]; where
 * beta is not NULL the batch norm had a ReLU, and dy counts only where
 * gamma * (x - mean) * inv_std + beta > 0. */
cudaError_t ct_launch_bn_param_grads(const float *x, const float *dy, const float *mean,
                                     const float *inv_std, const float *gamma, const float *beta,
                                     float *dgamma, float *dbeta, float *scratch, int64_t rows,
                                     int64_t channels, cudaStream_t stream);
/* Training: dx = gamma * inv_std / rows * (rows * dy - dbeta - xhat * dgamma),
 * dy masked as ct_launch_bn_param_grads masks it where beta is not NULL. */
cudaError_t ct_launch_bn_grad_x(const float *x, const float *dy, const float *gamma,
                                const float *beta, const float *mean, const float *inv_std,
                                const float *dgamma, const float *dbeta, float *dx, int64_t rows,
                                int64_t channels, cudaStream_t stream);
/* Inference (constant statistics): dx = dy * gamma * inv_std. */
cudaError_t ct_launch_bn_inference_grad_x(const float *dy, const float *gamma, const float *inv_std,
                                          float *dx, int64_t rows, int64_t channels,
                                          cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
