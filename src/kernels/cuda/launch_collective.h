/* extern "C" launchers of collective.cu (C and CUDA C include this). */
#ifndef CTOWER_CUDA_LAUNCH_COLLECTIVE_H
#define CTOWER_CUDA_LAUNCH_COLLECTIVE_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* y[i] = a[i] + b[i] for i < n (y may be a). */
cudaError_t ct_cuda_launch_add_into(float *y, const float *a, const float *b, int64_t n,
                                    cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
