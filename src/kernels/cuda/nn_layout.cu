/* Layout changes around cuDNN's convolutions (launch_nn.h): filter
 * transposes between HWIO and KRSC, and the extra zero rows and columns of
 * TensorFlow's asymmetric SAME padding. */
#include "kernels/cuda/grid_stride.cuh"
#include "kernels/cuda/launch_nn.h"

namespace {

constexpr int kTile = 32;    /* transpose tile: kTile x kTile elements */
constexpr int kTileRows = 8; /* threadIdx.y extent of a transpose block */

/* Through shared memory, so that both the reads and the writes are coalesced. */
__global__ void transpose_kernel(const float *__restrict__ src, float *__restrict__ dst,
                                 int64_t rows, int64_t cols) {
  __shared__ float tile[kTile][kTile + 1];
  const int64_t tiles_y = (rows + kTile - 1) / kTile, tiles_x = (cols + kTile - 1) / kTile;
  for (int64_t by = blockIdx.y; by < tiles_y; by += gridDim.y)
    for (int64_t bx = blockIdx.x; bx < tiles_x; bx += gridDim.x) {
      const int64_t r0 = by * kTile, c0 = bx * kTile;
      for (int i = threadIdx.y; i < kTile; i += kTileRows) {
        const int64_t r = r0 + i, c = c0 + threadIdx.x;
        if (r < rows && c < cols) tile[i][threadIdx.x] = src[r * cols + c];
      }
      __syncthreads();
      for (int i = threadIdx.y; i < kTile; i += kTileRows) {
        const int64_t c = c0 + i, r = r0 + threadIdx.x; /* dst[c, r] */
        if (c < cols && r < rows) dst[c * rows + r] = tile[threadIdx.x][i];
      }
      __syncthreads();
    }
}

/* dst [n, ph, pw, c] from x [n, h, w, c], zeros where row >= h or col >= w. */
__global__ void pad_after_kernel(const float *__restrict__ x, float *__restrict__ dst, int64_t h,
                                 int64_t w, int64_t c, int64_t ph, int64_t pw, int64_t total) {
  FOR_EACH(i, total) {
    const int64_t ch = i % c, t = i / c;
    const int64_t col = t % pw, t2 = t / pw;
    const int64_t row = t2 % ph, n = t2 / ph;
    dst[i] = row < h && col < w ? x[((n * h + row) * w + col) * c + ch] : 0.0f;
  }
}

/* dst [n, h, w, c] from the top-left of src [n, ph, pw, c]. */
__global__ void crop_after_kernel(const float *__restrict__ src, float *__restrict__ dst, int64_t h,
                                  int64_t w, int64_t c, int64_t ph, int64_t pw, int64_t total) {
  FOR_EACH(i, total) {
    const int64_t ch = i % c, t = i / c;
    const int64_t col = t % w, t2 = t / w;
    const int64_t row = t2 % h, n = t2 / h;
    dst[i] = src[((n * ph + row) * pw + col) * c + ch];
  }
}

}  // namespace

extern "C" cudaError_t ct_launch_transpose(const float *src, float *dst, int64_t rows, int64_t cols,
                                           cudaStream_t stream) {
  const int64_t tiles_y = (rows + kTile - 1) / kTile, tiles_x = (cols + kTile - 1) / kTile;
  const dim3 grid((unsigned)(tiles_x < (1 << 20) ? tiles_x : (1 << 20)),
                  (unsigned)(tiles_y < 65535 ? tiles_y : 65535));
  transpose_kernel<<<grid, dim3(kTile, kTileRows), 0, stream>>>(src, dst, rows, cols);
  return cudaGetLastError();
}

extern "C" cudaError_t ct_launch_pad_after(const float *x, float *dst, int64_t n, int64_t h,
                                           int64_t w, int64_t c, int64_t extra_h, int64_t extra_w,
                                           cudaStream_t stream) {
  const int64_t ph = h + extra_h, pw = w + extra_w, total = n * ph * pw * c;
  pad_after_kernel<<<blocks_for(total), THREADS, 0, stream>>>(x, dst, h, w, c, ph, pw, total);
  return cudaGetLastError();
}

extern "C" cudaError_t ct_launch_crop_after(const float *src, float *dst, int64_t n, int64_t h,
                                            int64_t w, int64_t c, int64_t extra_h, int64_t extra_w,
                                            cudaStream_t stream) {
  const int64_t total = n * h * w * c;
  crop_after_kernel<<<blocks_for(total), THREADS, 0, stream>>>(src, dst, h, w, c, h + extra_h,
                                                                w + extra_w, total);
  return cudaGetLastError();
}
