/* Local response normalization across channels, as TensorFlow defines it
 * (launch_nn.h), over x viewed as [rows, channels]:
 *   norm[c] = bias + alpha * sum over j in [c - radius, c + radius] of x[j]^2
 *   y[c] = x[c] * norm[c]^-beta
 *   dx[c] = dy[c] * norm[c]^-beta
 *           - 2 alpha beta x[c] * sum over j in [c - radius, c + radius] of
 *             dy[j] x[j] norm[j]^(-beta - 1)
 * (the window is symmetric, so j's window holds c exactly when c's holds j).
 * One thread per element; sums run in channel order. */
#include <math.h>

#include "kernels/cuda/grid_stride.cuh"
#include "kernels/cuda/launch_nn.h"

namespace {

/* bias + alpha * the sum of squares in element i's window. */
__device__ float lrn_norm(const float *__restrict__ x, int64_t i, int64_t channels, int64_t radius,
                          float bias, float alpha) {
  const int64_t c = i % channels, row = i - c;
  const int64_t lo = c - radius > 0 ? c - radius : 0;
  const int64_t hi = c + radius < channels - 1 ? c + radius : channels - 1;
  float sum = 0.0f;
  for (int64_t j = lo; j <= hi; ++j) sum += x[row + j] * x[row + j];
  return bias + alpha * sum;
}

__global__ void lrn_kernel(const float *__restrict__ x, float *__restrict__ y, int64_t total,
                           int64_t channels, int64_t radius, float bias, float alpha, float beta) {
  FOR_EACH(i, total)
    y[i] = x[i] * powf(lrn_norm(x, i, channels, radius, bias, alpha), -beta);
}

/* scale[i] = norm[i]^-beta, term[i] = dy[i] x[i] norm[i]^(-beta - 1). */
__global__ void lrn_grad_terms_kernel(const float *__restrict__ x, const float *__restrict__ dy,
                                      float *__restrict__ scale, float *__restrict__ term,
                                      int64_t total, int64_t channels, int64_t radius, float bias,
                                      float alpha, float beta) {
  FOR_EACH(i, total) {
    const float norm = lrn_norm(x, i, channels, radius, bias, alpha);
    const float s = powf(norm, -beta);
    scale[i] = s;
    term[i] = dy[i] * x[i] * s / norm;
  }
}

__global__ void lrn_grad_kernel(const float *__restrict__ x, const float *__restrict__ dy,
                                const float *__restrict__ scale, const float *__restrict__ term,
                                float *__restrict__ dx, int64_t total, int64_t channels,
                                int64_t radius, float alpha, float beta) {
  FOR_EACH(i, total) {
    const int64_t c = i % channels, row = i - c;
    const int64_t lo = c - radius > 0 ? c - radius : 0;
    const int64_t hi = c + radius < channels - 1 ? c + radius : channels - 1;
    float sum = 0.0f;
    for (int64_t j = lo; j <= hi; ++j) sum += term[row + j];
    dx[i] = dy[i] * scale[i] - 2.0f * alpha * beta * x[i] * sum;
  }
}

}  // namespace

extern "C" cudaError_t ct_launch_lrn(const float *x, float *y, int64_t rows, int64_t channels,
                                     int64_t radius, float bias, float alpha, float beta,
                                     cudaStream_t stream) {
  const int64_t total = rows * channels;
  lrn_kernel<<<blocks_for(total), THREADS, 0, stream>>>(x, y, total, channels, radius, bias, alpha,
                                                         beta);
  return cudaGetLastError();
}

extern "C" cudaError_t ct_launch_lrn_grad(const float *x, const float *dy, float *dx,
                                          float *scratch, int64_t rows, int64_t channels,
                                          int64_t radius, float bias, float alpha, float beta,
                                          cudaStream_t stream) {
  const int64_t total = rows * channels;
  float *scale = scratch, *term = scratch + total;
  lrn_grad_terms_kernel<<<blocks_for(total), THREADS, 0, stream>>>(
      x, dy, scale, term, total, channels, radius, bias, alpha, beta);
  lrn_grad_kernel<<<blocks_for(total), THREADS, 0, stream>>>(x, dy, scale, term, dx, total,
                                                              channels, radius, alpha, beta);
  return cudaGetLastError();
}
