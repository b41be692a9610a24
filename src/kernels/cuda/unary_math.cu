/* Device code of the unary math ops (ops/unary_math.h): each row's forward
 * expression and derivative as a __device__ function, instantiated in a
 * grid-stride kernel per row (gpu_unary_math.c launches them). The same
 * expressions as the CPU kernels; CUDA's expf, logf, log1pf may differ from
 * the C library's by an ulp or two. */
#include "grid_stride.cuh"
#include "launch_basic.h"
#include "ops/unary_math.h"

template <ct_unary_math_op OP>
struct unary_math;

#define FORMULA(P, Name, function, forward, derivative, gradient, flops, domain)      \
  template <>                                                                      \
  struct unary_math<CT_UNARY_MATH_##Name> {                                        \
    static __device__ __forceinline__ float forward_of(float x) { return (forward); } \
    static __device__ __forceinline__ float derivative_of(float x, float y, float dy) { \
      (void)x, (void)y, (void)dy;                                                  \
      return (derivative);                                                         \
    }                                                                              \
  };
CT_UNARY_MATH(FORMULA, _)
#undef FORMULA

template <ct_unary_math_op OP>
__global__ static void forward_kernel(const float *x, float *y, int64_t n) {
  FOR_EACH(i, n) y[i] = unary_math<OP>::forward_of(x[i]);
}

template <ct_unary_math_op OP>
__global__ static void backward_kernel(const float *x, const float *y, const float *dy, float *dx,
                                       int64_t n) {
  FOR_EACH(i, n) dx[i] = unary_math<OP>::derivative_of(x[i], y[i], dy[i]);
}

template <ct_unary_math_op OP>
static cudaError_t launch_forward(const float *x, float *y, int64_t n, cudaStream_t stream) {
  forward_kernel<OP><<<blocks_for(n), THREADS, 0, stream>>>(x, y, n);
  return cudaGetLastError();
}

template <ct_unary_math_op OP>
static cudaError_t launch_backward(const float *x, const float *y, const float *dy, float *dx,
                                   int64_t n, cudaStream_t stream) {
  backward_kernel<OP><<<blocks_for(n), THREADS, 0, stream>>>(x, y, dy, dx, n);
  return cudaGetLastError();
}

extern "C" cudaError_t ct_launch_unary_math(int op, const float *x, float *y, int64_t n,
                                            cudaStream_t stream) {
  switch ((ct_unary_math_op)op) {
#define CASE(P, Name, function, forward, derivative, gradient, flops, domain) \
  case CT_UNARY_MATH_##Name:                                                \
    return launch_forward<CT_UNARY_MATH_##Name>(x, y, n, stream);
    CT_UNARY_MATH(CASE, _)
#undef CASE
    case CT_UNARY_MATH_COUNT:
      break;
  }
  return cudaErrorInvalidValue;
}

extern "C" cudaError_t ct_launch_unary_math_grad(int op, const float *x, const float *y,
                                                 const float *dy, float *dx, int64_t n,
                                                 cudaStream_t stream) {
  switch ((ct_unary_math_op)op) {
#define CASE(P, Name, function, forward, derivative, gradient, flops, domain) \
  case CT_UNARY_MATH_##Name:                                                \
    return launch_backward<CT_UNARY_MATH_##Name>(x, y, dy, dx, n, stream);
    CT_UNARY_MATH(CASE, _)
#undef CASE
    case CT_UNARY_MATH_COUNT:
      break;
  }
  return cudaErrorInvalidValue;
}
