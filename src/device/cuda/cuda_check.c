/* CUDA, cuBLAS and cuDNN errors as statuses. */
#include "device/cuda/cuda_device.h"

int ct_cuda_check(cudaError_t err, const char *what, ct_status *status) {
  if (err == cudaSuccess) return 0;
  ct_code code = err == cudaErrorMemoryAllocation ? CT_RESOURCE_EXHAUSTED : CT_INTERNAL;
  ct_status_set(status, code, "%s: CUDA error %s (%s)", what, cudaGetErrorName(err),
                cudaGetErrorString(err));
  return 1;
}

int ct_cublas_check(cublasStatus_t err, const char *what, ct_status *status) {
  if (err == CUBLAS_STATUS_SUCCESS) return 0;
  ct_code code = err == CUBLAS_STATUS_ALLOC_FAILED ? CT_RESOURCE_EXHAUSTED : CT_INTERNAL;
  ct_status_set(status, code, "%s: cuBLAS error %s (%s)", what, cublasGetStatusName(err),
                cublasGetStatusString(err));
  return 1;
}

int ct_cudnn_check(cudnnStatus_t err, const char *what, ct_status *status) {
  if (err == CUDNN_STATUS_SUCCESS) return 0;
  /* out of GPU memory (a workspace, a kernel's buffers) or of host memory */
  const int out_of_memory = err == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED ||
                            err == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
  ct_code code = out_of_memory ? CT_RESOURCE_EXHAUSTED : CT_INTERNAL;
  ct_status_set(status, code, "%s: cuDNN error %s", what, cudnnGetErrorString(err));
  return 1;
}
