/* Device code of the classification GPU kernels (gpu_classification.c):
 * softmax cross-entropy, argmax and accuracy, one warp per row (an argmax
 * along an axis that is not the last: one thread per output). */
#include <math.h>

#include "launch_basic.h"

enum { THREADS = 256, MAX_BLOCKS = 8192, WARP = 32, WARPS_PER_BLOCK = THREADS / WARP };

static unsigned warp_blocks(int64_t warps) {
  int64_t blocks = (warps + WARPS_PER_BLOCK - 1) / WARPS_PER_BLOCK;
  return (unsigned)(blocks < MAX_BLOCKS ? blocks : (int64_t)MAX_BLOCKS);
}

/* Rows over the grid's warps. The row is the same in every lane of a warp,
 * so all lanes reach the shuffles. */
#define FOR_EACH_ROW(row, rows)                                                             \
  for (int64_t row = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / WARP; row < (rows); \
       row += (int64_t)gridDim.x * blockDim.x / WARP)

/* Butterflies: every lane ends with the same value (adding is commutative,
 * so the lanes' sums agree bit for bit). */
static __device__ __forceinline__ float warp_max(float v) {
  for (int offset = WARP / 2; offset > 0; offset /= 2)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}
static __device__ __forceinline__ float warp_sum(float v) {
  for (int offset = WARP / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__global__ static void softmax_xent_kernel(const float *logits, const int32_t *labels, float *loss,
                                           float *backprop, int64_t rows, int64_t classes) {
  const int lane = threadIdx.x % WARP;
  FOR_EACH_ROW(n, rows) {
    const float *z = logits + n * classes;
    float *p = backprop + n * classes;
    const int32_t label = labels[n];
    if (label < 0 || label >= classes) {
      for (int64_t c = lane; c < classes; c += WARP) p[c] = NAN;
      if (lane == 0) loss[n] = NAN;
      continue;
    }
    float max = -INFINITY;
    for (int64_t c = lane; c < classes; c += WARP) max = fmaxf(max, z[c]);
    max = warp_max(max);
    float sum = 0.0f;
    for (int64_t c = lane; c < classes; c += WARP) {
      const float e = expf(z[c] - max);
      p[c] = e;
      sum += e;
    }
    sum = warp_sum(sum);
    const float inv = 1.0f / sum;
    for (int64_t c = lane; c < classes; c += WARP) {
      float q = __fmul_rn(p[c], inv);
      if (c == label) q -= 1.0f;
      p[c] = q;
    }
    if (lane == 0) loss[n] = logf(sum) + max - z[label];
  }
}

extern "C" cudaError_t ct_launch_softmax_xent(const float *logits, const int32_t *labels,
                                              float *loss, float *backprop, int64_t rows,
                                              int64_t classes, cudaStream_t stream) {
  softmax_xent_kernel<<<warp_blocks(rows), THREADS, 0, stream>>>(logits, labels, loss, backprop,
                                                                 rows, classes);
  return cudaGetLastError();
}

/* The dense labels' loss, one warp per row: loss = sum of labels *
 * (logsumexp - z), backprop = softmax - labels. */
__global__ static void dense_xent_kernel(const float *logits, const float *labels, float *loss,
                                         float *backprop, int64_t rows, int64_t classes) {
  const int lane = threadIdx.x % WARP;
  FOR_EACH_ROW(n, rows) {
    const float *z = logits + n * classes, *y = labels + n * classes;
    float *p = backprop + n * classes;
    float max = -INFINITY;
    for (int64_t c = lane; c < classes; c += WARP) max = fmaxf(max, z[c]);
    max = warp_max(max);
    float sum = 0.0f;
    for (int64_t c = lane; c < classes; c += WARP) {
      const float e = expf(z[c] - max);
      p[c] = e;
      sum += e;
    }
    sum = warp_sum(sum);
    const float inv = 1.0f / sum, log_sum = logf(sum) + max;
    float l = 0.0f;
    for (int64_t c = lane; c < classes; c += WARP) {
      l += __fmul_rn(y[c], log_sum - z[c]);
      p[c] = __fmul_rn(p[c], inv) - y[c];
    }
    l = warp_sum(l);
    if (lane == 0) loss[n] = l;
  }
}

extern "C" cudaError_t ct_launch_dense_softmax_xent(const float *logits, const float *labels,
                                                    float *loss, float *backprop, int64_t rows,
                                                    int64_t classes, cudaStream_t stream) {
  dense_xent_kernel<<<warp_blocks(rows), THREADS, 0, stream>>>(logits, labels, loss, backprop,
                                                               rows, classes);
  return cudaGetLastError();
}

/* out[0] = sum(x^2) / 2: one block, each thread a strided partial sum in
 * double, then a tree (a fixed order). */
__global__ static void l2_loss_kernel(const float *x, float *out, int64_t n) {
  __shared__ double partial[THREADS];
  double sum = 0;
  for (int64_t i = threadIdx.x; i < n; i += THREADS) sum += (double)x[i] * (double)x[i];
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int half = THREADS / 2; half > 0; half /= 2) {
    if ((int)threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[0] = (float)(0.5 * partial[0]);
}

extern "C" cudaError_t ct_launch_l2_loss(const float *x, float *out, int64_t n,
                                         cudaStream_t stream) {
  l2_loss_kernel<<<1, THREADS, 0, stream>>>(x, out, n);
  return cudaGetLastError();
}

/* The CPU's scan (best = c when z[c] > z[best], from best = 0) as a
 * reduction: with z[0] a number, the first index of the largest number
 * (NaNs never win); with z[0] NaN, 0. (v, i) beats (best_v, best_i) when
 * larger, or equal at a lower index; best_i = classes stands for none. */
static __device__ __forceinline__ void take_better(float v, int64_t i, float *best_v,
                                                   int64_t *best_i) {
  if (v > *best_v || (v == *best_v && i < *best_i)) {
    *best_v = v;
    *best_i = i;
  }
}

static __device__ int64_t warp_argmax(const float *z, int64_t classes, int lane) {
  if (classes == 0 || isnan(z[0])) return 0;
  float best_v = -INFINITY;
  int64_t best_i = classes;
  for (int64_t c = lane; c < classes; c += WARP) take_better(z[c], c, &best_v, &best_i);
  for (int offset = WARP / 2; offset > 0; offset /= 2) {
    const float v = __shfl_xor_sync(0xffffffffu, best_v, offset);
    const int64_t i = __shfl_xor_sync(0xffffffffu, (long long)best_i, offset);
    take_better(v, i, &best_v, &best_i);
  }
  return best_i;
}

__global__ static void argmax_kernel(const float *x, int32_t *out, int64_t rows, int64_t classes) {
  const int lane = threadIdx.x % WARP;
  FOR_EACH_ROW(r, rows) {
    const int64_t best = warp_argmax(x + r * classes, classes, lane);
    if (lane == 0) out[r] = (int32_t)best;
  }
}

/* x viewed as [outer, classes, inner] with inner > 1: out[j] is the CPU's
 * scan down column j % inner of block j / inner, one thread per output
 * (neighbouring threads read neighbouring columns). */
__global__ static void column_argmax_kernel(const float *x, int32_t *out, int64_t outer,
                                            int64_t classes, int64_t inner) {
  const int64_t n = outer * inner;
  for (int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; j < n;
       j += (int64_t)gridDim.x * blockDim.x) {
    const float *z = x + (j / inner) * classes * inner + j % inner;
    int64_t best = 0;
    for (int64_t c = 1; c < classes; ++c)
      if (z[c * inner] > z[best * inner]) best = c;
    out[j] = (int32_t)best;
  }
}

extern "C" cudaError_t ct_launch_argmax(const float *x, int32_t *out, int64_t outer,
                                        int64_t classes, int64_t inner, cudaStream_t stream) {
  if (inner == 1) {
    argmax_kernel<<<warp_blocks(outer), THREADS, 0, stream>>>(x, out, outer, classes);
  } else {
    const int64_t blocks = (outer * inner + THREADS - 1) / THREADS;
    column_argmax_kernel<<<(unsigned)(blocks < MAX_BLOCKS ? blocks : (int64_t)MAX_BLOCKS), THREADS, 0,
                           stream>>>(x, out, outer, classes, inner);
  }
  return cudaGetLastError();
}

/* One block counts the matches (integers: exact in any order). */
__global__ static void accuracy_kernel(const int32_t *predicted, const int32_t *labels, float *out,
                                       int64_t rows) {
  __shared__ long long counts[THREADS];
  long long count = 0;
  for (int64_t r = threadIdx.x; r < rows; r += THREADS) count += predicted[r] == labels[r];
  counts[threadIdx.x] = count;
  __syncthreads();
  for (int half = THREADS / 2; half > 0; half /= 2) {
    if ((int)threadIdx.x < half) counts[threadIdx.x] += counts[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[0] = rows ? (float)counts[0] / (float)rows : 0.0f;
}

extern "C" cudaError_t ct_launch_accuracy(const float *logits, const int32_t *labels, float *out,
                                          int32_t *scratch, int64_t rows, int64_t classes,
                                          cudaStream_t stream) {
  if (rows > 0) {
    cudaError_t err = ct_launch_argmax(logits, scratch, rows, classes, 1, stream);
    if (err != cudaSuccess) return err;
  }
  accuracy_kernel<<<1, THREADS, 0, stream>>>(scratch, labels, out, rows);
  return cudaGetLastError();
}
