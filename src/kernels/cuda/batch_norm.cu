/* Batch normalization over x viewed as [rows, channels] (launch_nn.h), as
 * the CPU kernel computes it (kernels/cpu/batch_norm.c).
 *
 * Per-channel sums in two fixed-order stages: the rows are cut into a
 * number of chunks that depends on `rows` alone; a block of kCols channels
 * x kRows threads sums one chunk (thread y takes every kRows-th row, then
 * the kRows partial sums are added in order) into partial[chunk, channel];
 * then one thread per channel adds the chunks in order. No atomics, the same
 * bits on every run, and a warp reads kCols neighbouring channels of a row. */
#include <math.h>

#include "kernels/cuda/grid_stride.cuh"
#include "kernels/cuda/launch_nn.h"

namespace {

constexpr int kCols = 32;
constexpr int kRows = 8;
constexpr int64_t kMaxChunks = 512;
constexpr int64_t kMinChunkRows = 64;

int64_t chunks_for(int64_t rows) {
  const int64_t chunks = (rows + kMinChunkRows - 1) / kMinChunkRows;
  return chunks < 1 ? 1 : chunks > kMaxChunks ? kMaxChunks : chunks;
}

/* The batch norm of x at one element, gamma * (x - mean) * inv_std + beta,
 * its products unfused (__fmul_rn): the gradient with a ReLU recomputes it
 * to find where the output was positive, and must find the same bits. */
__device__ __forceinline__ float normalized(float x, float gamma, float beta, float mean,
                                            float inv_std) {
  return __fmul_rn(__fmul_rn(gamma, x - mean), inv_std) + beta;
}

/* dy where the output of a batch norm with a ReLU (beta not NULL) was
 * positive at x, else 0; dy itself without a ReLU. */
__device__ __forceinline__ float passed(float dy, float x, const float *__restrict__ gamma,
                                        const float *__restrict__ beta, float mean, float inv_std,
                                        int64_t c) {
  if (beta == nullptr) return dy;
  return normalized(x, gamma[c], beta[c], mean, inv_std) > 0.0f ? dy : 0.0f;
}

/* What the partial sums add up, per element a[r, c]. */
enum sum_kind {
  SUM_X,                 /* s1 += a */
  SUM_SQUARED_DEVIATION, /* s1 += (a - center)^2 */
  SUM_GRADS              /* s1 += a (dy), s2 += a * (b - center) * scale (dy * xhat) */
};

template <sum_kind kind>
__global__ void partial_sums_kernel(const float *__restrict__ a, const float *__restrict__ b,
                                    const float *__restrict__ center,
                                    const float *__restrict__ scale,
                                    const float *__restrict__ gamma,
                                    const float *__restrict__ beta, float *__restrict__ partial1,
                                    float *__restrict__ partial2, int64_t rows, int64_t channels,
                                    int64_t chunks) {
  __shared__ float s1[kRows][kCols + 1], s2[kRows][kCols + 1];
  const int64_t c = (int64_t)blockIdx.x * kCols + threadIdx.x, chunk = blockIdx.y;
  const int64_t r0 = rows * chunk / chunks, r1 = rows * (chunk + 1) / chunks;
  float acc1 = 0.0f, acc2 = 0.0f;
  if (c < channels) {
    const float mu = center ? center[c] : 0.0f, sc = scale ? scale[c] : 0.0f;
    for (int64_t r = r0 + threadIdx.y; r < r1; r += kRows) {
      const float v = a[r * channels + c];
      if (kind == SUM_X) {
        acc1 += v;
      } else if (kind == SUM_SQUARED_DEVIATION) {
        const float d = v - mu;
        acc1 += d * d;
      } else {
        const float xv = b[r * channels + c], g = passed(v, xv, gamma, beta, mu, sc, c);
        acc1 += g;
        acc2 += g * (xv - mu) * sc;
      }
    }
  }
  s1[threadIdx.y][threadIdx.x] = acc1;
  s2[threadIdx.y][threadIdx.x] = acc2;
  __syncthreads();
  if (threadIdx.y == 0 && c < channels) {
    float t1 = 0.0f, t2 = 0.0f;
    for (int k = 0; k < kRows; ++k) {
      t1 += s1[k][threadIdx.x];
      t2 += s2[k][threadIdx.x];
    }
    partial1[chunk * channels + c] = t1;
    if (kind == SUM_GRADS) partial2[chunk * channels + c] = t2;
  }
}

template <sum_kind kind>
void partial_sums(const float *a, const float *b, const float *center, const float *scale,
                  const float *gamma, const float *beta, float *partial1, float *partial2,
                  int64_t rows, int64_t channels, cudaStream_t stream) {
  const int64_t chunks = chunks_for(rows);
  const dim3 grid((unsigned)((channels + kCols - 1) / kCols), (unsigned)chunks);
  partial_sums_kernel<kind><<<grid, dim3(kCols, kRows), 0, stream>>>(
      a, b, center, scale, gamma, beta, partial1, partial2, rows, channels, chunks);
}

__device__ float chunk_sum(const float *__restrict__ partial, int64_t c, int64_t channels,
                           int64_t chunks) {
  float s = 0.0f;
  for (int64_t k = 0; k < chunks; ++k) s += partial[k * channels + c];
  return s;
}

__global__ void mean_kernel(const float *__restrict__ partial, float *__restrict__ mean,
                            int64_t rows, int64_t channels, int64_t chunks) {
  FOR_EACH(c, channels)
    mean[c] = chunk_sum(partial, c, channels, chunks) / (float)(rows ? rows : 1);
}

__global__ void variance_kernel(const float *__restrict__ partial, float *__restrict__ var,
                                float *__restrict__ inv_std, int64_t rows, int64_t channels,
                                int64_t chunks, float epsilon) {
  FOR_EACH(c, channels) {
    float biased = chunk_sum(partial, c, channels, chunks) / (float)(rows ? rows : 1);
    if (biased < 0.0f) biased = 0.0f;
    inv_std[c] = 1.0f / sqrtf(biased + epsilon);
    var[c] = rows > 1 ? biased * (float)rows / (float)(rows - 1) : biased;
  }
}

__global__ void param_grads_kernel(const float *__restrict__ partial1,
                                   const float *__restrict__ partial2, float *__restrict__ dbeta,
                                   float *__restrict__ dgamma, int64_t channels, int64_t chunks) {
  FOR_EACH(c, channels) {
    dbeta[c] = chunk_sum(partial1, c, channels, chunks);
    dgamma[c] = chunk_sum(partial2, c, channels, chunks);
  }
}

__global__ void inv_std_kernel(const float *__restrict__ var, float *__restrict__ inv_std,
                               int64_t channels, float epsilon) {
  FOR_EACH(c, channels)
    inv_std[c] = 1.0f / sqrtf(var[c] + epsilon);
}

__global__ void normalize_kernel(const float *__restrict__ x, const float *__restrict__ gamma,
                                 const float *__restrict__ beta, const float *__restrict__ mean,
                                 const float *__restrict__ inv_std, float *__restrict__ y,
                                 int64_t total, int64_t channels, int relu) {
  FOR_EACH(i, total) {
    const int64_t c = i % channels;
    const float z = normalized(x[i], gamma[c], beta[c], mean[c], inv_std[c]);
    y[i] = relu ? (z > 0.0f ? z : 0.0f) : z;
  }
}

__global__ void grad_x_kernel(const float *__restrict__ x, const float *__restrict__ dy,
                              const float *__restrict__ gamma, const float *__restrict__ beta,
                              const float *__restrict__ mean,
                              const float *__restrict__ inv_std, const float *__restrict__ dgamma,
                              const float *__restrict__ dbeta, float *__restrict__ dx,
                              int64_t total, int64_t channels, float rows) {
  FOR_EACH(i, total) {
    const int64_t c = i % channels;
    const float xhat = (x[i] - mean[c]) * inv_std[c];
    const float g = passed(dy[i], x[i], gamma, beta, mean[c], inv_std[c], c);
    dx[i] = gamma[c] * inv_std[c] / rows * (rows * g - dbeta[c] - xhat * dgamma[c]);
  }
}

__global__ void inference_grad_x_kernel(const float *__restrict__ dy,
                                        const float *__restrict__ gamma,
                                        const float *__restrict__ inv_std, float *__restrict__ dx,
                                        int64_t total, int64_t channels) {
  FOR_EACH(i, total) {
    const int64_t c = i % channels;
    dx[i] = dy[i] * gamma[c] * inv_std[c];
  }
}

}  // namespace

extern "C" int64_t ct_bn_scratch_floats(int64_t rows, int64_t channels) {
  return 2 * chunks_for(rows) * channels;
}

extern "C" cudaError_t ct_launch_bn_stats(const float *x, float *mean, float *var, float *inv_std,
                                          float *scratch, int64_t rows, int64_t channels,
                                          float epsilon, cudaStream_t stream) {
  const int64_t chunks = chunks_for(rows);
  const unsigned blocks = blocks_for(channels);
  /* two passes: the mean, then the squared deviations from it */
  partial_sums<SUM_X>(x, nullptr, nullptr, nullptr, nullptr, nullptr, scratch, nullptr, rows,
                      channels, stream);
  mean_kernel<<<blocks, THREADS, 0, stream>>>(scratch, mean, rows, channels, chunks);
  partial_sums<SUM_SQUARED_DEVIATION>(x, nullptr, mean, nullptr, nullptr, nullptr, scratch,
                                      nullptr, rows, channels, stream);
  variance_kernel<<<blocks, THREADS, 0, stream>>>(scratch, var, inv_std, rows, channels, chunks,
                                                   epsilon);
  return cudaGetLastError();
}

extern "C" cudaError_t ct_launch_bn_inv_std(const float *var, float *inv_std, int64_t channels,
                                            float epsilon, cudaStream_t stream) {
  inv_std_kernel<<<blocks_for(channels), THREADS, 0, stream>>>(var, inv_std, channels, epsilon);
  return cudaGetLastError();
}

extern "C" cudaError_t ct_launch_bn_normalize(const float *x, const float *gamma, const float *beta,
                                              const float *mean, const float *inv_std, float *y,
                                              int64_t rows, int64_t channels, int relu,
                                              cudaStream_t stream) {
  const int64_t total = rows * channels;
  normalize_kernel<<<blocks_for(total), THREADS, 0, stream>>>(x, gamma, beta, mean, inv_std, y,
                                                               total, channels, relu);
  return cudaGetLastError();
}

extern "C" cudaError_t ct_launch_bn_param_grads(const float *x, const float *dy, const float *mean,
                                                const float *inv_std, const float *gamma,
                                                const float *beta, float *dgamma, float *dbeta,
                                                float *scratch, int64_t rows, int64_t channels,
                                                cudaStream_t stream) {
  const int64_t chunks = chunks_for(rows);
  float *partial1 = scratch, *partial2 = scratch + chunks * channels;
  partial_sums<SUM_GRADS>(dy, x, mean, inv_std, gamma, beta, partial1, partial2, rows, channels,
                          stream);
  param_grads_kernel<<<blocks_for(channels), THREADS, 0, stream>>>(partial1, partial2, dbeta,
                                                                    dgamma, channels, chunks);
  return cudaGetLastError();
}

extern "C" cudaError_t ct_launch_bn_grad_x(const float *x, const float *dy, const float *gamma,
                                           const float *beta, const float *mean,
                                           const float *inv_std, const float *dgamma,
                                           const float *dbeta, float *dx, int64_t rows,
                                           int64_t channels, cudaStream_t stream) {
  const int64_t total = rows * channels;
  grad_x_kernel<<<blocks_for(total), THREADS, 0, stream>>>(
      x, dy, gamma, beta, mean, inv_std, dgamma, dbeta, dx, total, channels, (float)rows);
  return cudaGetLastError();
}

extern "C" cudaError_t ct_launch_bn_inference_grad_x(const float *dy, const float *gamma,
                                                     const float *inv_std, float *dx, int64_t rows,
                                                     int64_t channels, cudaStream_t stream) {
  const int64_t total = rows * channels;
  inference_grad_x_kernel<<<blocks_for(total), THREADS, 0, stream>>>(dy, gamma, inv_std, dx, total,
                                                                      channels);
  return cudaGetLastError();
}
