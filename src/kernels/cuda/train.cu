/* Device code of the variable updates (gpu_train.c): moving averages and
 * optimizer steps, in place. The learning rate is a device scalar, read by
 * the kernel. */
#include <math.h>

#include "grid_stride.cuh"
#include "launch_basic.h"


__global__ static void assign_moving_avg_kernel(float *v, const float *value, float momentum,
                                                int64_t n) {
  FOR_EACH(i, n) v[i] = __fmul_rn(momentum, v[i]) + __fmul_rn(1.0f - momentum, value[i]);
}

extern "C" cudaError_t ct_launch_assign_moving_avg(float *v, const float *value, float momentum,
                                                   int64_t n, cudaStream_t stream) {
  assign_moving_avg_kernel<<<blocks_for(n), THREADS, 0, stream>>>(v, value, momentum, n);
  return cudaGetLastError();
}

__global__ static void gradient_descent_kernel(float *var, const float *lr, const float *grad,
                                               float wd, int64_t n) {
  const float rate = *lr;
  FOR_EACH(i, n) {
    const float w = var[i];
    var[i] = w - __fmul_rn(rate, grad[i] + __fmul_rn(wd, w));
  }
}

extern "C" cudaError_t ct_launch_apply_gradient_descent(float *var, const float *lr,
                                                        const float *grad, float wd, int64_t n,
                                                        cudaStream_t stream) {
  gradient_descent_kernel<<<blocks_for(n), THREADS, 0, stream>>>(var, lr, grad, wd, n);
  return cudaGetLastError();
}

__global__ static void momentum_kernel(float *var, float *accum, const float *lr, const float *grad,
                                       float momentum, float wd, int nesterov, int64_t n) {
  const float rate = *lr;
  FOR_EACH(i, n) {
    const float w = var[i];
    const float g = grad[i] + __fmul_rn(wd, w);
    const float a = __fmul_rn(momentum, accum[i]) + g;
    accum[i] = a;
    var[i] = w - __fmul_rn(rate, nesterov ? g + __fmul_rn(momentum, a) : a);
  }
}

extern "C" cudaError_t ct_launch_apply_momentum(float *var, float *accum, const float *lr,
                                                const float *grad, float momentum, float wd,
                                                int nesterov, int64_t n, cudaStream_t stream) {
  momentum_kernel<<<blocks_for(n), THREADS, 0, stream>>>(var, accum, lr, grad, momentum, wd,
                                                         nesterov, n);
  return cudaGetLastError();
}

__global__ static void adam_kernel(float *var, float *m, float *v, const float *lr,
                                   const float *grad, float b1, float b2, float eps, float wd,
                                   int64_t n) {
  const float rate = *lr;
  FOR_EACH(i, n) {
    const float w = var[i];
    const float g = grad[i] + __fmul_rn(wd, w);
    const float m1 = __fmul_rn(b1, m[i]) + __fmul_rn(1.0f - b1, g);
    const float v1 = __fmul_rn(b2, v[i]) + __fmul_rn((1.0f - b2) * g, g);
    m[i] = m1;
    v[i] = v1;
    var[i] = w - rate * m1 / (sqrtf(v1) + eps);
  }
}

extern "C" cudaError_t ct_launch_apply_adam(float *var, float *m, float *v, const float *lr,
                                            const float *grad, float b1, float b2, float eps,
                                            float wd, int64_t n, cudaStream_t stream) {
  adam_kernel<<<blocks_for(n), THREADS, 0, stream>>>(var, m, v, lr, grad, b1, b2, eps, wd, n);
  return cudaGetLastError();
}
