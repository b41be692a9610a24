/* cuBLAS, cuDNN and NCCL, loaded when a GPU first needs them, as TensorFlow
 * loads them: the command does not link them, so it starts (and runs on its
 * CPUs) on a machine where they are missing, and a CPU-only run does not map
 * their hundreds of megabytes. The CUDA runtime itself is linked statically
 * (it loads the driver, libcuda, only when asked for devices). Each library
 * is looked for where machines have it (library_search.h): a folder the
 * user names, the system's library path, the CUDA toolkits, and the NVIDIA
 * wheels of Python environments.
 *
 * Each function the GPU code calls is defined here with the library's own
 * prototype (the headers are included, so a mismatch does not compile) and
 * calls the library's function, looked up once. When the library cannot be
 * loaded, it returns the library's "not initialized" status and the
 * library's error-string function says which file could not be loaded and
 * where the search looked; ct_cuda_library_require says the same as a
 * status. */
#include <cublas_v2.h>
#include <cudnn.h>
#include <dlfcn.h>
#include <limits.h>
#include <nccl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "device/cuda/cuda_libraries.h"
#include "device/cuda/library_search.h"

#define STRINGIFY_VALUE(x) #x
#define STRINGIFY(x) STRINGIFY_VALUE(x)

/* One library: its file name, and the functions of it that ctower calls
 * (X(return type, name, (parameters), (arguments))). */
#define CUBLAS_FUNCTIONS(X)                                                                     \
  X(cublasStatus_t, cublasGetProperty, (libraryPropertyType type, int *value), (type, value))    \
  X(cublasStatus_t, cublasCreate_v2, (cublasHandle_t * handle), (handle))                       \
  X(cublasStatus_t, cublasDestroy_v2, (cublasHandle_t handle), (handle))                        \
  X(cublasStatus_t, cublasSetStream_v2, (cublasHandle_t handle, cudaStream_t stream),           \
    (handle, stream))                                                                           \
  X(cublasStatus_t, cublasGemmEx,                                                               \
    (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,    \
     int k, const void *alpha, const void *A, cudaDataType Atype, int lda, const void *B,       \
     cudaDataType Btype, int ldb, const void *beta, void *C, cudaDataType Ctype, int ldc,       \
     cublasComputeType_t computeType, cublasGemmAlgo_t algo),                                   \
    (handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc, \
     computeType, algo))

#define CUDNN_FUNCTIONS(X)                                                                        \
  X(size_t, cudnnGetVersion, (void), ())                                                          \
  X(cudnnStatus_t, cudnnCreate, (cudnnHandle_t * handle), (handle))                               \
  X(cudnnStatus_t, cudnnDestroy, (cudnnHandle_t handle), (handle))                                \
  X(cudnnStatus_t, cudnnSetStream, (cudnnHandle_t handle, cudaStream_t stream), (handle, stream)) \
  X(cudnnStatus_t, cudnnCreateTensorDescriptor, (cudnnTensorDescriptor_t * d), (d))               \
  X(cudnnStatus_t, cudnnDestroyTensorDescriptor, (cudnnTensorDescriptor_t d), (d))                \
  X(cudnnStatus_t, cudnnSetTensor4dDescriptor,                                                    \
    (cudnnTensorDescriptor_t d, cudnnTensorFormat_t format, cudnnDataType_t type, int n, int c,   \
     int h, int w),                                                                               \
    (d, format, type, n, c, h, w))                                                                \
  X(cudnnStatus_t, cudnnCreateFilterDescriptor, (cudnnFilterDescriptor_t * d), (d))               \
  X(cudnnStatus_t, cudnnDestroyFilterDescriptor, (cudnnFilterDescriptor_t d), (d))                \
  X(cudnnStatus_t, cudnnSetFilter4dDescriptor,                                                    \
    (cudnnFilterDescriptor_t d, cudnnDataType_t type, cudnnTensorFormat_t format, int k, int c,   \
     int h, int w),                                                                               \
    (d, type, format, k, c, h, w))                                                                \
  X(cudnnStatus_t, cudnnCreateConvolutionDescriptor, (cudnnConvolutionDescriptor_t * d), (d))     \
  X(cudnnStatus_t, cudnnDestroyConvolutionDescriptor, (cudnnConvolutionDescriptor_t d), (d))      \
  X(cudnnStatus_t, cudnnSetConvolutionMathType,                                                   \
    (cudnnConvolutionDescriptor_t d, cudnnMathType_t math), (d, math))                            \
  X(cudnnStatus_t, cudnnSetConvolution2dDescriptor,                                               \
    (cudnnConvolutionDescriptor_t d, int pad_h, int pad_w, int u, int v, int dilation_h,          \
     int dilation_w, cudnnConvolutionMode_t mode, cudnnDataType_t compute),                       \
    (d, pad_h, pad_w, u, v, dilation_h, dilation_w, mode, compute))                               \
  X(cudnnStatus_t, cudnnGetConvolution2dForwardOutputDim,                                         \
    (const cudnnConvolutionDescriptor_t conv, const cudnnTensorDescriptor_t x,                    \
     const cudnnFilterDescriptor_t w, int *n, int *c, int *h, int *wd),                           \
    (conv, x, w, n, c, h, wd))                                                                    \
  X(cudnnStatus_t, cudnnGetConvolutionForwardAlgorithm_v7,                                        \
    (cudnnHandle_t handle, const cudnnTensorDescriptor_t x, const cudnnFilterDescriptor_t w,      \
     const cudnnConvolutionDescriptor_t conv, const cudnnTensorDescriptor_t y, const int asked,   \
     int *returned, cudnnConvolutionFwdAlgoPerf_t *perf),                                         \
    (handle, x, w, conv, y, asked, returned, perf))                                               \
  X(cudnnStatus_t, cudnnGetConvolutionForwardWorkspaceSize,                                       \
    (cudnnHandle_t handle, const cudnnTensorDescriptor_t x, const cudnnFilterDescriptor_t w,      \
     const cudnnConvolutionDescriptor_t conv, const cudnnTensorDescriptor_t y,                    \
     cudnnConvolutionFwdAlgo_t algo, size_t *bytes),                                              \
    (handle, x, w, conv, y, algo, bytes))                                                         \
  X(cudnnStatus_t, cudnnConvolutionForward,                                                       \
    (cudnnHandle_t handle, const void *alpha, const cudnnTensorDescriptor_t xd, const void *x,    \
     const cudnnFilterDescriptor_t wd, const void *w, const cudnnConvolutionDescriptor_t conv,    \
     cudnnConvolutionFwdAlgo_t algo, void *work, size_t work_bytes, const void *beta,             \
     const cudnnTensorDescriptor_t yd, void *y),                                                  \
    (handle, alpha, xd, x, wd, w, conv, algo, work, work_bytes, beta, yd, y))                     \
  X(cudnnStatus_t, cudnnGetConvolutionBackwardDataAlgorithm_v7,                                   \
    (cudnnHandle_t handle, const cudnnFilterDescriptor_t w, const cudnnTensorDescriptor_t dy,     \
     const cudnnConvolutionDescriptor_t conv, const cudnnTensorDescriptor_t dx, const int asked,  \
     int *returned, cudnnConvolutionBwdDataAlgoPerf_t *perf),                                     \
    (handle, w, dy, conv, dx, asked, returned, perf))                                             \
  X(cudnnStatus_t, cudnnGetConvolutionBackwardDataWorkspaceSize,                                  \
    (cudnnHandle_t handle, const cudnnFilterDescriptor_t w, const cudnnTensorDescriptor_t dy,     \
     const cudnnConvolutionDescriptor_t conv, const cudnnTensorDescriptor_t dx,                   \
     cudnnConvolutionBwdDataAlgo_t algo, size_t *bytes),                                          \
    (handle, w, dy, conv, dx, algo, bytes))                                                       \
  X(cudnnStatus_t, cudnnConvolutionBackwardData,                                                  \
    (cudnnHandle_t handle, const void *alpha, const cudnnFilterDescriptor_t wd, const void *w,    \
     const cudnnTensorDescriptor_t dyd, const void *dy, const cudnnConvolutionDescriptor_t conv,  \
     cudnnConvolutionBwdDataAlgo_t algo, void *work, size_t work_bytes, const void *beta,         \
     const cudnnTensorDescriptor_t dxd, void *dx),                                                \
    (handle, alpha, wd, w, dyd, dy, conv, algo, work, work_bytes, beta, dxd, dx))                 \
  X(cudnnStatus_t, cudnnGetConvolutionBackwardFilterAlgorithm_v7,                                 \
    (cudnnHandle_t handle, const cudnnTensorDescriptor_t x, const cudnnTensorDescriptor_t dy,     \
     const cudnnConvolutionDescriptor_t conv, const cudnnFilterDescriptor_t dw, const int asked,  \
     int *returned, cudnnConvolutionBwdFilterAlgoPerf_t *perf),                                   \
    (handle, x, dy, conv, dw, asked, returned, perf))                                             \
  X(cudnnStatus_t, cudnnGetConvolutionBackwardFilterWorkspaceSize,                                \
    (cudnnHandle_t handle, const cudnnTensorDescriptor_t x, const cudnnTensorDescriptor_t dy,     \
     const cudnnConvolutionDescriptor_t conv, const cudnnFilterDescriptor_t dw,                   \
     cudnnConvolutionBwdFilterAlgo_t algo, size_t *bytes),                                        \
    (handle, x, dy, conv, dw, algo, bytes))                                                       \
  X(cudnnStatus_t, cudnnConvolutionBackwardFilter,                                                \
    (cudnnHandle_t handle, const void *alpha, const cudnnTensorDescriptor_t xd, const void *x,    \
     const cudnnTensorDescriptor_t dyd, const void *dy, const cudnnConvolutionDescriptor_t conv,  \
     cudnnConvolutionBwdFilterAlgo_t algo, void *work, size_t work_bytes, const void *beta,       \
     const cudnnFilterDescriptor_t dwd, void *dw),                                                \
    (handle, alpha, xd, x, dyd, dy, conv, algo, work, work_bytes, beta, dwd, dw))

#define NCCL_FUNCTIONS(X)                                                                     \
  X(ncclResult_t, ncclGetVersion, (int *version), (version))                                  \
  X(ncclResult_t, ncclCommInitAll, (ncclComm_t * comms, int ndev, const int *devices),        \
    (comms, ndev, devices))                                                                   \
  X(ncclResult_t, ncclCommDestroy, (ncclComm_t comm), (comm))                                 \
  X(ncclResult_t, ncclAllReduce,                                                              \
    (const void *send, void *recv, size_t count, ncclDataType_t type, ncclRedOp_t op,         \
     ncclComm_t comm, cudaStream_t stream),                                                   \
    (send, recv, count, type, op, comm, stream))                                              \
  X(ncclResult_t, ncclGroupStart, (void), ())                                                 \
  X(ncclResult_t, ncclGroupEnd, (void), ())

/* A library loaded on first use: dlopen's handle and where it came from,
 * or why there is none. */
typedef struct loaded_library {
  const char *name; /* "cuDNN" */
  const char *file; /* "libcudnn.so.9" */
  pthread_once_t once;
  void *handle;
  char path[PATH_MAX];
  char error[1024];
} loaded_library;

static loaded_library cublas = {.name = "cuBLAS",
                                .file = "libcublas.so." STRINGIFY(CUBLAS_VER_MAJOR),
                                .once = PTHREAD_ONCE_INIT};
static loaded_library cudnn = {.name = "cuDNN",
                               .file = "libcudnn.so." STRINGIFY(CUDNN_MAJOR),
                               .once = PTHREAD_ONCE_INIT};
static loaded_library nccl = {.name = "NCCL",
                              .file = "libnccl.so." STRINGIFY(NCCL_MAJOR),
                              .once = PTHREAD_ONCE_INIT};

static void open_library(loaded_library *lib) {
  ct_library_places places;
  char storage[PATH_MAX * 4];
  ct_library_places_from_environment(&places, storage, sizeof storage);
  lib->handle = ct_library_open(lib->file, &places, lib->path, sizeof lib->path, lib->error,
                                sizeof lib->error);
}

#define DEFINE_OPEN(lib) \
  static void open_##lib(void) { open_library(&lib); }
DEFINE_OPEN(cublas)
DEFINE_OPEN(nccl)

/* cuDNN loads cuBLASLt by its bare name for some of its engines; where
 * both come from Python wheels, no system path leads there, but a library
 * already loaded answers to its name: cuBLAS (which loads cuBLASLt beside
 * it) is loaded first, when it can be. */
static void open_cudnn(void) {
  pthread_once(&cublas.once, open_cublas);
  open_library(&cudnn);
}

/* The address of `name` in lib, loading lib first; NULL when either fails
 * (lib->error says why). */
static void *lookup(loaded_library *lib, void (*open)(void), const char *name) {
  pthread_once(&lib->once, open);
  if (lib->handle == NULL) return NULL;
  void *fn = dlsym(lib->handle, name);
  if (fn == NULL && lib->error[0] == '\0')
    snprintf(lib->error, sizeof lib->error, "%s has no function %s: a version ctower does not know",
             lib->file, name);
  return fn;
}

/* Each function: its pointer, looked up once (the lookups of two threads at
 * once find the same address), then called. */
#define FORWARD(lib, failure, ret, name, params, args)                          \
  ret name params {                                                             \
    static void *_Atomic address;                                               \
    void *fn = address;                                                         \
    if (fn == NULL) address = fn = lookup(&lib, open_##lib, #name);             \
    if (fn == NULL) return failure;                                             \
    ret(*call) params;                                                          \
    memcpy(&call, &fn, sizeof call); /* a data pointer to a function pointer */ \
    return call args;                                                           \
  }
#define FORWARD_CUBLAS(ret, name, params, args) \
  FORWARD(cublas, CUBLAS_STATUS_NOT_INITIALIZED, ret, name, params, args)
#define FORWARD_CUDNN(ret, name, params, args) \
  FORWARD(cudnn, CUDNN_STATUS_NOT_INITIALIZED, ret, name, params, args)
#define FORWARD_NCCL(ret, name, params, args) \
  FORWARD(nccl, ncclSystemError, ret, name, params, args)
CUBLAS_FUNCTIONS(FORWARD_CUBLAS)
CUDNN_FUNCTIONS(FORWARD_CUDNN)
NCCL_FUNCTIONS(FORWARD_NCCL)

/* The error strings: the library's own, or why it is not there. */
#define FORWARD_STRING(lib, name, status_type)                 \
  const char *name(status_type status) {                       \
    void *fn = lookup(&lib, open_##lib, #name);                \
    if (fn == NULL) return lib.error;                          \
    const char *(*call)(status_type);                          \
    memcpy(&call, &fn, sizeof call);                           \
    return call(status);                                       \
  }
FORWARD_STRING(cublas, cublasGetStatusName, cublasStatus_t)
FORWARD_STRING(cublas, cublasGetStatusString, cublasStatus_t)
FORWARD_STRING(cudnn, cudnnGetErrorString, cudnnStatus_t)
FORWARD_STRING(nccl, ncclGetErrorString, ncclResult_t)
FORWARD_STRING(nccl, ncclGetLastError, ncclComm_t)

/* ---- what ctower needs to know ------------------------------------------ */

static loaded_library *const libraries[CT_CUDA_LIBRARY_COUNT] = {&cublas, &cudnn, &nccl};
static void (*const openers[CT_CUDA_LIBRARY_COUNT])(void) = {open_cublas, open_cudnn,
                                                              open_nccl};
static const char *const installs[CT_CUDA_LIBRARY_COUNT] = {
    "install the CUDA toolkit's cuBLAS (or PyTorch's nvidia-cublas wheel)",
    "install cuDNN " STRINGIFY(CUDNN_MAJOR) " (or PyTorch's nvidia-cudnn wheel)",
    "install NCCL " STRINGIFY(NCCL_MAJOR) " (or PyTorch's nvidia-nccl wheel)"};

static loaded_library *load(ct_cuda_library library) {
  pthread_once(&libraries[library]->once, openers[library]);
  return libraries[library];
}

int ct_cuda_library_require(ct_cuda_library library, const char *who, ct_status *status) {
  const loaded_library *lib = load(library);
  if (lib->handle) return 0;
  ct_status_set(status, CT_UNAVAILABLE, "%s needs %s, but %s; %s, or name its folder in "
                "CTOWER_CUDA_LIBRARY_PATH", who, lib->name, lib->error, installs[library]);
  return 1;
}

void ct_cuda_library_describe(ct_cuda_library library, char *text, size_t size) {
  const loaded_library *lib = load(library);
  if (lib->handle == NULL) {
    snprintf(text, size, "%s: %s", lib->name, lib->error);
    return;
  }
  char version[64] = "";
  if (library == CT_CUDA_CUBLAS) {
    int major = 0, minor = 0, patch = 0;
    if (cublasGetProperty(MAJOR_VERSION, &major) == CUBLAS_STATUS_SUCCESS &&
        cublasGetProperty(MINOR_VERSION, &minor) == CUBLAS_STATUS_SUCCESS &&
        cublasGetProperty(PATCH_LEVEL, &patch) == CUBLAS_STATUS_SUCCESS)
      snprintf(version, sizeof version, " %d.%d.%d", major, minor, patch);
  } else if (library == CT_CUDA_CUDNN) {
    const size_t v = cudnnGetVersion(); /* major * 10000 + minor * 100 + patch */
    snprintf(version, sizeof version, " %zu.%zu.%zu", v / 10000, v / 100 % 100, v % 100);
  } else {
    int v = 0; /* major * 10000 + minor * 100 + patch */
    if (ncclGetVersion(&v) == ncclSuccess)
      snprintf(version, sizeof version, " %d.%d.%d", v / 10000, v / 100 % 100, v % 100);
  }
  snprintf(text, size, "%s%s from %s", lib->name, version, lib->path);
}
