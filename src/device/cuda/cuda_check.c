/* CUDA, cuBLAS and cuDNN errors as statuses. */
#include "device/cuda/cuda_device.h"

/* Errors a failed kernel leaves behind: the GPU's context is lost, and
 * every later call returns the error, wherever it is made. */
static int is_fault(cudaError_t err) {
  switch (err) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorMisalignedAddress:
    case cudaErrorIllegalInstruction:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorHardwareStackError:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
      return 1;
    default:
      return 0;
  }
}

/* The fault a failed kernel left on the current GPU, or cudaSuccess. */
static cudaError_t current_fault(void) {
  size_t free_bytes = 0, total = 0;
  const cudaError_t err = cudaMemGetInfo(&free_bytes, &total);
  cudaGetLastError();
  return is_fault(err) ? err : cudaSuccess;
}

int ct_cuda_check(cudaError_t err, const char *what, ct_status *status) {
  if (err == cudaSuccess) return 0;
  if (is_fault(err)) {
    ct_status_set(status, CT_INTERNAL,
                  "%s: CUDA error %s (%s), left by a kernel that failed earlier on the GPU; run "
                  "again with CTOWER_GPU_SYNC=1 to name its op",
                  what, cudaGetErrorName(err), cudaGetErrorString(err));
    return 1;
  }
  ct_code code = err == cudaErrorMemoryAllocation ? CT_RESOURCE_EXHAUSTED : CT_INTERNAL;
  ct_status_set(status, code, "%s: CUDA error %s (%s)", what, cudaGetErrorName(err),
                cudaGetErrorString(err));
  return 1;
}

int ct_cublas_check(cublasStatus_t err, const char *what, ct_status *status) {
  if (err == CUBLAS_STATUS_SUCCESS) return 0;
  /* a GPU whose context a failed kernel lost refuses memory and work alike */
  const cudaError_t fault = err == CUBLAS_STATUS_ALLOC_FAILED ||
                                    err == CUBLAS_STATUS_EXECUTION_FAILED ||
                                    err == CUBLAS_STATUS_INTERNAL_ERROR
                                ? current_fault()
                                : cudaSuccess;
  if (fault != cudaSuccess) return ct_cuda_check(fault, what, status);
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
  const cudaError_t fault = out_of_memory || err == CUDNN_STATUS_EXECUTION_FAILED ||
                                    err == CUDNN_STATUS_INTERNAL_ERROR
                                ? current_fault()
                                : cudaSuccess;
  if (fault != cudaSuccess) return ct_cuda_check(fault, what, status);
  ct_code code = out_of_memory ? CT_RESOURCE_EXHAUSTED : CT_INTERNAL;
  ct_status_set(status, code, "%s: cuDNN error %s", what, cudnnGetErrorString(err));
  return 1;
}
