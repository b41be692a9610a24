/* Max and average pooling over NHWC with TensorFlow's windows (launch_nn.h).
 *
 * Own kernels rather than cuDNN's: cuDNN pads symmetrically, TensorFlow's
 * SAME padding may put one more row after than before. Each thread owns one
 * output element (forward) or one input element (gradient: it gathers from
 * the windows that cover it, in a fixed order), so no atomics are needed and
 * every run gives the same bits. Channels are the fastest index: neighbouring
 * threads touch neighbouring addresses. */
#include "kernels/cuda/grid_stride.cuh"
#include "kernels/cuda/launch_nn.h"

namespace {

__device__ int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
__device__ int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* The part of an output's window inside the image, along one axis:
 * [lo, hi) for the window starting at `start`. */
struct span {
  int64_t lo, hi;
};
__device__ span clip(int64_t start, int64_t window, int64_t size) {
  return {max64(start, 0), min64(start + window, size)};
}

/* The outputs whose windows cover input position `pos` along one axis:
 * out * stride - pad <= pos < out * stride - pad + window. */
__device__ span covering(int64_t pos, int64_t pad, int64_t window, int64_t stride,
                         int64_t out_size) {
  const int64_t first = pos + pad - window + 1;
  return {first <= 0 ? 0 : (first + stride - 1) / stride,
          min64((pos + pad) / stride + 1, out_size)};
}

/* y (when not NULL) = the window's maximum; argmax (when not NULL) = its
 * position in the window, row * window_w + col, the first one in row-major
 * order on ties. Every window holds at least one pixel of the image. */
__global__ void max_pool_kernel(const float *__restrict__ x, float *__restrict__ y,
                                int32_t *__restrict__ argmax, ct_pool_geometry g, int64_t total) {
  FOR_EACH(i, total) {
    const int64_t ch = i % g.c, t = i / g.c;
    const int64_t ox = t % g.out_w, t2 = t / g.out_w;
    const int64_t oy = t2 % g.out_h, n = t2 / g.out_h;
    const int64_t y0 = oy * g.stride_h - g.pad_top, x0 = ox * g.stride_w - g.pad_left;
    const span rows = clip(y0, g.window_h, g.h), cols = clip(x0, g.window_w, g.w);
    const float *xn = x + n * g.h * g.w * g.c + ch;
    float best = 0.0f;
    int32_t best_at = -1;
    for (int64_t r = rows.lo; r < rows.hi; ++r)
      for (int64_t c = cols.lo; c < cols.hi; ++c) {
        const float v = xn[(r * g.w + c) * g.c];
        if (best_at < 0 || v > best) {
          best = v;
          best_at = (int32_t)((r - y0) * g.window_w + (c - x0));
        }
      }
    if (y) y[i] = best;
    if (argmax) argmax[i] = best_at;
  }
}

/* dx[i] = the sum of the dy whose window's maximum is at i. */
__global__ void max_pool_grad_kernel(const float *__restrict__ dy,
                                     const int32_t *__restrict__ argmax, float *__restrict__ dx,
                                     ct_pool_geometry g, int64_t total) {
  FOR_EACH(i, total) {
    const int64_t ch = i % g.c, t = i / g.c;
    const int64_t col = t % g.w, t2 = t / g.w;
    const int64_t row = t2 % g.h, n = t2 / g.h;
    const span oys = covering(row, g.pad_top, g.window_h, g.stride_h, g.out_h);
    const span oxs = covering(col, g.pad_left, g.window_w, g.stride_w, g.out_w);
    float sum = 0.0f;
    for (int64_t oy = oys.lo; oy < oys.hi; ++oy)
      for (int64_t ox = oxs.lo; ox < oxs.hi; ++ox) {
        const int64_t o = ((n * g.out_h + oy) * g.out_w + ox) * g.c + ch;
        const int64_t at = (row - (oy * g.stride_h - g.pad_top)) * g.window_w +
                           (col - (ox * g.stride_w - g.pad_left));
        if (argmax[o] == at) sum += dy[o];
      }
    dx[i] = sum;
  }
}

/* The number of image pixels in output (oy, ox)'s window. */
__device__ int64_t window_count(const ct_pool_geometry &g, int64_t oy, int64_t ox) {
  const span rows = clip(oy * g.stride_h - g.pad_top, g.window_h, g.h);
  const span cols = clip(ox * g.stride_w - g.pad_left, g.window_w, g.w);
  return (rows.hi - rows.lo) * (cols.hi - cols.lo);
}

__global__ void avg_pool_kernel(const float *__restrict__ x, float *__restrict__ y,
                                ct_pool_geometry g, int64_t total) {
  FOR_EACH(i, total) {
    const int64_t ch = i % g.c, t = i / g.c;
    const int64_t ox = t % g.out_w, t2 = t / g.out_w;
    const int64_t oy = t2 % g.out_h, n = t2 / g.out_h;
    const span rows = clip(oy * g.stride_h - g.pad_top, g.window_h, g.h);
    const span cols = clip(ox * g.stride_w - g.pad_left, g.window_w, g.w);
    const float *xn = x + n * g.h * g.w * g.c + ch;
    float sum = 0.0f;
    for (int64_t r = rows.lo; r < rows.hi; ++r)
      for (int64_t c = cols.lo; c < cols.hi; ++c) sum += xn[(r * g.w + c) * g.c];
    y[i] = sum / (float)((rows.hi - rows.lo) * (cols.hi - cols.lo));
  }
}

__global__ void avg_pool_grad_kernel(const float *__restrict__ dy, float *__restrict__ dx,
                                     ct_pool_geometry g, int64_t total) {
  FOR_EACH(i, total) {
    const int64_t ch = i % g.c, t = i / g.c;
    const int64_t col = t % g.w, t2 = t / g.w;
    const int64_t row = t2 % g.h, n = t2 / g.h;
    const span oys = covering(row, g.pad_top, g.window_h, g.stride_h, g.out_h);
    const span oxs = covering(col, g.pad_left, g.window_w, g.stride_w, g.out_w);
    float sum = 0.0f;
    for (int64_t oy = oys.lo; oy < oys.hi; ++oy)
      for (int64_t ox = oxs.lo; ox < oxs.hi; ++ox) {
        const int64_t o = ((n * g.out_h + oy) * g.out_w + ox) * g.c + ch;
        sum += dy[o] / (float)window_count(g, oy, ox);
      }
    dx[i] = sum;
  }
}

}  // namespace

extern "C" cudaError_t ct_launch_max_pool(const float *x, float *y, ct_pool_geometry g,
                                          cudaStream_t stream) {
  const int64_t total = g.n * g.out_h * g.out_w * g.c;
  max_pool_kernel<<<blocks_for(total), THREADS, 0, stream>>>(x, y, nullptr, g, total);
  return cudaGetLastError();
}

extern "C" cudaError_t ct_launch_max_pool_grad(const float *x, const float *dy, float *dx,
                                               int32_t *argmax, ct_pool_geometry g,
                                               cudaStream_t stream) {
  const int64_t y_total = g.n * g.out_h * g.out_w * g.c, x_total = g.n * g.h * g.w * g.c;
  max_pool_kernel<<<blocks_for(y_total), THREADS, 0, stream>>>(x, nullptr, argmax, g, y_total);
  max_pool_grad_kernel<<<blocks_for(x_total), THREADS, 0, stream>>>(dy, argmax, dx, g, x_total);
  return cudaGetLastError();
}

extern "C" cudaError_t ct_launch_avg_pool(const float *x, float *y, ct_pool_geometry g,
                                          cudaStream_t stream) {
  const int64_t total = g.n * g.out_h * g.out_w * g.c;
  avg_pool_kernel<<<blocks_for(total), THREADS, 0, stream>>>(x, y, g, total);
  return cudaGetLastError();
}

extern "C" cudaError_t ct_launch_avg_pool_grad(const float *dy, float *dx, ct_pool_geometry g,
                                               cudaStream_t stream) {
  const int64_t total = g.n * g.h * g.w * g.c;
  avg_pool_grad_kernel<<<blocks_for(total), THREADS, 0, stream>>>(dy, dx, g, total);
  return cudaGetLastError();
}
