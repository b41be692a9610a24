// Host-only emulation of the parts of cuBLAS, cuDNN (legacy API, v9) and
// NCCL that the project uses, on top of the emulator's CUDA runtime (emulator.h).
//
// All GPU work is queued with emu_enqueue on the handle's (or the call's)
// stream and runs asynchronously on that stream's worker. Arguments are
// validated the way the libraries document; every error status returned
// also prints "EMU: <function>: <why>" on stderr. Device pointers must lie
// inside live cudaMalloc allocations of the right device (else emu_fail).
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <nccl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include <strings.h>

#include "ctower/status.h"
#include "device/cuda/cuda_libraries.h"
#include "emulator.h"
#include "emulator_faults.h"

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace {

// ---- common helpers ---------------------------------------------------------

void emu_msg(const char *fn, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void emu_msg(const char *fn, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  fprintf(stderr, "EMU: %s: %s\n", fn, buf);
}

// [p, p+bytes) must be device memory of `device` (or of any device when
// device < 0). Returns the allocation's device.
int check_device_mem(const char *fn, const char *what, const void *p, size_t bytes, int device) {
  int dev = -1;
  if (bytes == 0) bytes = 1;  // a pointer must at least point into an allocation
  if (p == nullptr) emu_fail("%s: %s is NULL (a device buffer of %zu bytes is needed)", fn, what, bytes);
  if (!emu_device_range(p, bytes, &dev))
    emu_fail("%s: %s = %p .. +%zu bytes is not inside one live cudaMalloc allocation (host memory "
             "handed to the GPU, a freed buffer, or a buffer overrun)",
             fn, what, p, bytes);
  if (device >= 0 && dev != device)
    emu_fail("%s: %s = %p lies in memory of device %d but the work runs on device %d (no peer "
             "access)",
             fn, what, p, dev, device);
  return dev;
}

// A host scalar (pointer mode host): must not be device memory.
float read_host_float(const char *fn, const char *what, const void *p) {
  int dev = -1;
  if (emu_device_range(p, sizeof(float), &dev))
    emu_fail("%s: %s = %p is device memory (device %d) but is read as a host pointer (pointer "
             "mode host)",
             fn, what, p, dev);
  float v;
  memcpy(&v, p, sizeof v);
  return v;
}

bool ranges_overlap(const void *a, size_t na, const void *b, size_t nb) {
  const char *pa = static_cast<const char *>(a), *pb = static_cast<const char *>(b);
  return na && nb && pa < pb + nb && pb < pa + na;
}

float round_tf32(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7f800000u) == 0x7f800000u) return f;  // inf, nan
  u += 0x0fffu + ((u >> 13) & 1u);
  u &= ~0x1fffu;
  memcpy(&f, &u, 4);
  return f;
}

float round_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7f800000u) == 0x7f800000u) {
    if (u & 0x007fffffu) u |= 0x00400000u;  // keep a nan a (quiet) nan
    u &= 0xffff0000u;
  } else {
    u += 0x7fffu + ((u >> 16) & 1u);
    u &= 0xffff0000u;
  }
  memcpy(&f, &u, 4);
  return f;
}

enum class Rounding { none, tf32, bf16 };

inline float rnd(float f, Rounding r) {
  switch (r) {
    case Rounding::tf32:
      return round_tf32(f);
    case Rounding::bf16:
      return round_bf16(f);
    default:
      return f;
  }
}

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
  return n;
}

// The libraries a test made missing (emulator_faults.h), by ct_cuda_library.
std::atomic<bool> library_missing[CT_CUDA_LIBRARY_COUNT];
const char *const library_names[CT_CUDA_LIBRARY_COUNT] = {"cuBLAS", "cuDNN", "NCCL"};
const char *const library_files[CT_CUDA_LIBRARY_COUNT] = {"libcublas.so.13", "libcudnn.so.9",
                                                          "libnccl.so.2"};

}  // namespace

// ---- the libraries' presence (device/cuda/cuda_libraries.h) ---------------------

extern "C" void emu_library_missing(const char *library, int missing) {
  for (int i = 0; i < CT_CUDA_LIBRARY_COUNT; ++i)
    if (strcasecmp(library, library_names[i]) == 0) {
      library_missing[i] = missing != 0;
      return;
    }
  emu_fail("emu_library_missing: no library '%s' (cublas, cudnn, nccl)", library);
}

// EMU_MISSING_LIBRARIES=cudnn,nccl: missing from the start.
static const int missing_from_the_environment = [] {
  const char *e = getenv("EMU_MISSING_LIBRARIES");
  for (const char *p = e; p && *p;) {
    const char *end = strchr(p, ',');
    const std::string name(p, end ? (size_t)(end - p) : strlen(p));
    if (!name.empty()) emu_library_missing(name.c_str(), 1);
    p = end ? end + 1 : p + strlen(p);
  }
  return 0;
}();

extern "C" int ct_cuda_library_require(ct_cuda_library library, const char *who,
                                       ct_status *status) {
  if (!library_missing[library]) return 0;
  ct_status_set(status, CT_UNAVAILABLE,
                "%s needs %s, but %s was not found: looked in the emulator's missing libraries; "
                "name its folder in CTOWER_CUDA_LIBRARY_PATH",
                who, library_names[library], library_files[library]);
  return 1;
}

extern "C" void ct_cuda_library_describe(ct_cuda_library library, char *text, size_t size) {
  if (library_missing[library])
    snprintf(text, size, "%s: %s was not found (emulated)", library_names[library],
             library_files[library]);
  else
    snprintf(text, size, "%s (emulated)", library_names[library]);
}

// =============================================================================
// cuBLAS
// =============================================================================

struct cublasContext {
  uint32_t magic;
  int device;
  cudaStream_t stream;
};

namespace {
constexpr uint32_t kCublasMagic = 0xc0b1a5u, kDead = 0xdeadu;

const char *cublas_name(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "CUBLAS_STATUS_UNKNOWN";
}

// A live handle, or NOT_INITIALIZED (a destroyed one: emu_fail).
bool cublas_handle_ok(const char *fn, cublasHandle_t h) {
  if (h == nullptr) {
    emu_msg(fn, "handle is NULL");
    return false;
  }
  if (h->magic == kDead) emu_fail("%s: cuBLAS handle %p used after cublasDestroy", fn, (void *)h);
  if (h->magic != kCublasMagic) emu_fail("%s: %p is not a cuBLAS handle", fn, (void *)h);
  return true;
}
}  // namespace

extern "C" {

cublasStatus_t CUBLASWINAPI cublasGetProperty(libraryPropertyType type, int *value) {
  *value = type == MAJOR_VERSION ? CUBLAS_VER_MAJOR : type == MINOR_VERSION ? CUBLAS_VER_MINOR
                                                                              : CUBLAS_VER_PATCH;
  return library_missing[CT_CUDA_CUBLAS] ? CUBLAS_STATUS_NOT_INITIALIZED : CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasCreate_v2(cublasHandle_t *handle) {
  if (library_missing[CT_CUDA_CUBLAS]) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (handle == nullptr) {
    emu_msg("cublasCreate", "handle pointer is NULL");
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  cublasContext *h = new cublasContext;
  h->magic = kCublasMagic;
  h->device = emu_current_device();  // the handle is tied to the current device
  h->stream = nullptr;
  *handle = h;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasDestroy_v2(cublasHandle_t handle) {
  if (!cublas_handle_ok("cublasDestroy", handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  // cublasDestroy synchronizes implicitly; kept (poisoned) to catch a later use
  cudaDeviceSynchronize();
  handle->magic = kDead;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasSetStream_v2(cublasHandle_t handle, cudaStream_t streamId) {
  if (!cublas_handle_ok("cublasSetStream", handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->stream = streamId;
  return CUBLAS_STATUS_SUCCESS;
}

const char *CUBLASWINAPI cublasGetStatusName(cublasStatus_t status) { return cublas_name(status); }

const char *CUBLASWINAPI cublasGetStatusString(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "the library was not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED: return "the resource allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE: return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "an absent device architectural feature is required";
    case CUBLAS_STATUS_MAPPING_ERROR: return "an access to GPU memory space failed";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "the GPU program failed to execute";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "an internal operation failed";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "the functionality requested is not supported";
    case CUBLAS_STATUS_LICENSE_ERROR: return "error detected trying to check the license";
  }
  return "unknown error";
}

cublasStatus_t CUBLASWINAPI cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                                         cublasOperation_t transb, int m, int n, int k,
                                         const void *alpha, const void *A, cudaDataType Atype,
                                         int lda, const void *B, cudaDataType Btype, int ldb,
                                         const void *beta, void *C, cudaDataType Ctype, int ldc,
                                         cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  const char *fn = "cublasGemmEx";
  if (!cublas_handle_ok(fn, handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  auto bad = [&](cublasStatus_t st, const char *fmt, auto... args) {
    char buf[512];
    snprintf(buf, sizeof buf, fmt, args...);
    emu_msg(fn, "%s (returning %s)", buf, cublas_name(st));
    return st;
  };
  auto op_ok = [](cublasOperation_t op) {
    return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C;
  };
  if (!op_ok(transa)) return bad(CUBLAS_STATUS_INVALID_VALUE, "transa = %d is not N, T or C", (int)transa);
  if (!op_ok(transb)) return bad(CUBLAS_STATUS_INVALID_VALUE, "transb = %d is not N, T or C", (int)transb);
  if (m < 0 || n < 0 || k < 0)
    return bad(CUBLAS_STATUS_INVALID_VALUE, "negative size m=%d n=%d k=%d", m, n, k);
  const bool ta = transa != CUBLAS_OP_N, tb = transb != CUBLAS_OP_N;
  // A is stored as (ta ? k x m : m x k), B as (tb ? n x k : k x n), column-major
  const int a_rows = ta ? k : m, a_cols = ta ? m : k;
  const int b_rows = tb ? n : k, b_cols = tb ? k : n;
  if (lda < std::max(1, a_rows))
    return bad(CUBLAS_STATUS_INVALID_VALUE,
               "lda = %d < max(1, %d): A is stored %d x %d (transa %s, m=%d k=%d)", lda, a_rows,
               a_rows, a_cols, ta ? "T" : "N", m, k);
  if (ldb < std::max(1, b_rows))
    return bad(CUBLAS_STATUS_INVALID_VALUE,
               "ldb = %d < max(1, %d): B is stored %d x %d (transb %s, k=%d n=%d)", ldb, b_rows,
               b_rows, b_cols, tb ? "T" : "N", k, n);
  if (ldc < std::max(1, m))
    return bad(CUBLAS_STATUS_INVALID_VALUE, "ldc = %d < max(1, m = %d)", ldc, m);
  if (!((algo >= CUBLAS_GEMM_DEFAULT && algo <= CUBLAS_GEMM_ALGO23) ||
        (algo >= CUBLAS_GEMM_DEFAULT_TENSOR_OP && algo <= CUBLAS_GEMM_ALGO15_TENSOR_OP)))
    return bad(CUBLAS_STATUS_INVALID_VALUE, "algo = %d is not a cublasGemmAlgo_t", (int)algo);
  Rounding rounding;
  switch (computeType) {
    case CUBLAS_COMPUTE_32F:
    case CUBLAS_COMPUTE_32F_PEDANTIC:
      rounding = Rounding::none;
      break;
    case CUBLAS_COMPUTE_32F_FAST_TF32:
      rounding = Rounding::tf32;
      break;
    case CUBLAS_COMPUTE_32F_FAST_16BF:
      rounding = Rounding::bf16;
      break;
    default:
      return bad(CUBLAS_STATUS_NOT_SUPPORTED,
                 "computeType %d is not emulated (only CUBLAS_COMPUTE_32F[_PEDANTIC|_FAST_TF32|"
                 "_FAST_16BF] with CUDA_R_32F A, B, C)",
                 (int)computeType);
  }
  if (Atype != CUDA_R_32F || Btype != CUDA_R_32F || Ctype != CUDA_R_32F)
    return bad(CUBLAS_STATUS_NOT_SUPPORTED,
               "Atype %d, Btype %d, Ctype %d with computeType %d: only CUDA_R_32F (%d) for all "
               "three is emulated with a 32F compute type",
               (int)Atype, (int)Btype, (int)Ctype, (int)computeType, (int)CUDA_R_32F);
  if (alpha == nullptr || beta == nullptr)
    return bad(CUBLAS_STATUS_INVALID_VALUE, "alpha or beta is NULL");
  // the GPU work runs on the handle's device: the current device must be it
  const int dev = handle->device;
  const int cur = emu_current_device();
  const int sdev = emu_stream_device(handle->stream);
  if (sdev != dev)
    return bad(CUBLAS_STATUS_EXECUTION_FAILED,
               "the handle's stream belongs to device %d but the handle was created on device %d",
               sdev, dev);
  if (cur != dev)
    return bad(CUBLAS_STATUS_EXECUTION_FAILED,
               "current device is %d but the handle was created on device %d (cudaSetDevice "
               "before using a handle of another device)",
               cur, dev);
  const float a = read_host_float(fn, "alpha", alpha), bt = read_host_float(fn, "beta", beta);
  if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;  // quick return: nothing touched
  const bool read_ab = k > 0 && a != 0.0f;
  const bool read_c = bt != 0.0f;
  const size_t a_bytes = ((size_t)(a_cols - 1) * lda + a_rows) * sizeof(float);
  const size_t b_bytes = ((size_t)(b_cols - 1) * ldb + b_rows) * sizeof(float);
  const size_t c_bytes = ((size_t)(n - 1) * ldc + m) * sizeof(float);
  if (read_ab) {
    check_device_mem(fn, "A", A, a_bytes, dev);
    check_device_mem(fn, "B", B, b_bytes, dev);
  }
  check_device_mem(fn, "C", C, c_bytes, dev);
  if (read_ab && (ranges_overlap(A, a_bytes, C, c_bytes) || ranges_overlap(B, b_bytes, C, c_bytes)))
    emu_fail("%s: C [%p, +%zu) overlaps A [%p, +%zu) or B [%p, +%zu): the output may not alias an "
             "input",
             fn, C, c_bytes, A, a_bytes, B, b_bytes);
  const float *pa = static_cast<const float *>(A), *pb = static_cast<const float *>(B);
  float *pc = static_cast<float *>(C);
  emu_enqueue(handle->stream, [=] {
    std::vector<float> ra, rb;  // op(A) as m x k row by row, op(B) as n x k
    if (read_ab) {
      ra.resize((size_t)m * k);
      rb.resize((size_t)n * k);
      for (int i = 0; i < m; ++i)
        for (int l = 0; l < k; ++l)
          ra[(size_t)i * k + l] = rnd(ta ? pa[i * (size_t)lda + l] : pa[l * (size_t)lda + i], rounding);
      for (int j = 0; j < n; ++j)
        for (int l = 0; l < k; ++l)
          rb[(size_t)j * k + l] = rnd(tb ? pb[l * (size_t)ldb + j] : pb[j * (size_t)ldb + l], rounding);
    }
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i) {
        double acc = 0.0;
        if (read_ab) {
          const float *x = &ra[(size_t)i * k], *y = &rb[(size_t)j * k];
          for (int l = 0; l < k; ++l) acc += (double)x[l] * (double)y[l];
          acc *= a;
        }
        float *out = &pc[(size_t)j * ldc + i];
        *out = (float)(read_c ? acc + (double)bt * (double)*out : acc);
      }
  });
  return CUBLAS_STATUS_SUCCESS;
}

}  // extern "C"

// =============================================================================
// cuDNN
// =============================================================================

struct cudnnContext {
  uint32_t magic;
  int device;
  cudaStream_t stream;
};
struct cudnnTensorStruct {
  uint32_t magic;
  bool set;
  cudnnTensorFormat_t format;
  cudnnDataType_t dtype;
  int n, c, h, w;
};
struct cudnnFilterStruct {
  uint32_t magic;
  bool set;
  cudnnTensorFormat_t format;
  cudnnDataType_t dtype;
  int k, c, h, w;
};
struct cudnnConvolutionStruct {
  uint32_t magic;
  bool set;
  int pad_h, pad_w, u, v, dil_h, dil_w;
  cudnnConvolutionMode_t mode;
  cudnnDataType_t compute;
  cudnnMathType_t math;
};

namespace {
constexpr uint32_t kCudnnMagic = 0xc0d11u, kTensorMagic = 0x7e5u, kFilterMagic = 0xf11u,
                   kConvMagic = 0xc0fu;

const char *cudnn_name(cudnnStatus_t s) {
  switch ((int)s) {
    case CUDNN_STATUS_SUCCESS: return "CUDNN_STATUS_SUCCESS";
    case CUDNN_STATUS_NOT_INITIALIZED: return "CUDNN_STATUS_NOT_INITIALIZED";
    case CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH: return "CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH";
    case CUDNN_STATUS_SERIALIZATION_VERSION_MISMATCH: return "CUDNN_STATUS_SERIALIZATION_VERSION_MISMATCH";
    case CUDNN_STATUS_DEPRECATED: return "CUDNN_STATUS_DEPRECATED";
    case CUDNN_STATUS_LICENSE_ERROR: return "CUDNN_STATUS_LICENSE_ERROR";
    case CUDNN_STATUS_RUNTIME_IN_PROGRESS: return "CUDNN_STATUS_RUNTIME_IN_PROGRESS";
    case CUDNN_STATUS_RUNTIME_FP_OVERFLOW: return "CUDNN_STATUS_RUNTIME_FP_OVERFLOW";
    case CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED: return "CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED";
    case CUDNN_STATUS_BAD_PARAM: return "CUDNN_STATUS_BAD_PARAM";
    case 2001: return "CUDNN_STATUS_INVALID_VALUE";
    case CUDNN_STATUS_BAD_PARAM_NULL_POINTER: return "CUDNN_STATUS_BAD_PARAM_NULL_POINTER";
    case CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER: return "CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER";
    case CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED: return "CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED";
    case CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND: return "CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND";
    case CUDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT: return "CUDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT";
    case CUDNN_STATUS_BAD_PARAM_STREAM_MISMATCH: return "CUDNN_STATUS_BAD_PARAM_STREAM_MISMATCH";
    case CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH: return "CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH";
    case CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES: return "CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES";
    case CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE: return "CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE";
    case CUDNN_STATUS_BAD_PARAM_CUDA_GRAPH_MISMATCH: return "CUDNN_STATUS_BAD_PARAM_CUDA_GRAPH_MISMATCH";
    case CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE: return "CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE";
    case CUDNN_STATUS_NOT_SUPPORTED: return "CUDNN_STATUS_NOT_SUPPORTED";
    case CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN: return "CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN";
    case CUDNN_STATUS_NOT_SUPPORTED_SHAPE: return "CUDNN_STATUS_NOT_SUPPORTED_SHAPE";
    case CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE: return "CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE";
    case CUDNN_STATUS_NOT_SUPPORTED_LAYOUT: return "CUDNN_STATUS_NOT_SUPPORTED_LAYOUT";
    case CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER: return "CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER";
    case CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDART: return "CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDART";
    case CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH: return "CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH";
    case CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING: return "CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING";
    case CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE: return "CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE";
    case CUDNN_STATUS_NOT_SUPPORTED_SHARED_MEMORY_INSUFFICIENT: return "CUDNN_STATUS_NOT_SUPPORTED_SHARED_MEMORY_INSUFFICIENT";
    case CUDNN_STATUS_NOT_SUPPORTED_PADDING: return "CUDNN_STATUS_NOT_SUPPORTED_PADDING";
    case CUDNN_STATUS_NOT_SUPPORTED_BAD_LAUNCH_PARAM: return "CUDNN_STATUS_NOT_SUPPORTED_BAD_LAUNCH_PARAM";
    case CUDNN_STATUS_NOT_SUPPORTED_CUDA_GRAPH_NATIVE_API: return "CUDNN_STATUS_NOT_SUPPORTED_CUDA_GRAPH_NATIVE_API";
    case CUDNN_STATUS_NOT_SUPPORTED_INVALID_DYNAMIC_SHAPE: return "CUDNN_STATUS_NOT_SUPPORTED_INVALID_DYNAMIC_SHAPE";
    case CUDNN_STATUS_INTERNAL_ERROR: return "CUDNN_STATUS_INTERNAL_ERROR";
    case CUDNN_STATUS_INTERNAL_ERROR_COMPILATION_FAILED: return "CUDNN_STATUS_INTERNAL_ERROR_COMPILATION_FAILED";
    case CUDNN_STATUS_INTERNAL_ERROR_UNEXPECTED_VALUE: return "CUDNN_STATUS_INTERNAL_ERROR_UNEXPECTED_VALUE";
    case CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED: return "CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED";
    case CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED: return "CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED";
    case CUDNN_STATUS_INTERNAL_ERROR_BAD_LAUNCH_PARAM: return "CUDNN_STATUS_INTERNAL_ERROR_BAD_LAUNCH_PARAM";
    case CUDNN_STATUS_INTERNAL_ERROR_TEXTURE_CREATION_FAILED: return "CUDNN_STATUS_INTERNAL_ERROR_TEXTURE_CREATION_FAILED";
    case CUDNN_STATUS_EXECUTION_FAILED: return "CUDNN_STATUS_EXECUTION_FAILED";
    case CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER: return "CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER";
    case CUDNN_STATUS_EXECUTION_FAILED_CUBLAS: return "CUDNN_STATUS_EXECUTION_FAILED_CUBLAS";
    case CUDNN_STATUS_EXECUTION_FAILED_CUDART: return "CUDNN_STATUS_EXECUTION_FAILED_CUDART";
    case CUDNN_STATUS_EXECUTION_FAILED_CURAND: return "CUDNN_STATUS_EXECUTION_FAILED_CURAND";
  }
  return "CUDNN_STATUS_UNKNOWN";
}

// Error return with its message.
cudnnStatus_t dnn_err(const char *fn, cudnnStatus_t st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
cudnnStatus_t dnn_err(const char *fn, cudnnStatus_t st, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  fprintf(stderr, "EMU: %s: %s (returning %s)\n", fn, buf, cudnn_name(st));
  return st;
}

template <typename T>
void check_magic(const char *fn, const char *what, const T *p, uint32_t magic) {
  if (p->magic == kDead) emu_fail("%s: %s %p used after it was destroyed", fn, what, (const void *)p);
  if (p->magic != magic) emu_fail("%s: %p is not a %s", fn, (const void *)p, what);
}

bool dtype_valid(cudnnDataType_t t) { return (int)t >= 0 && (int)t <= 21; }
size_t dtype_size(cudnnDataType_t t) {
  switch (t) {
    case CUDNN_DATA_FLOAT: case CUDNN_DATA_INT32: case CUDNN_DATA_UINT32: return 4;
    case CUDNN_DATA_DOUBLE: case CUDNN_DATA_INT64: case CUDNN_DATA_COMPLEX_FP32: return 8;
    case CUDNN_DATA_HALF: case CUDNN_DATA_BFLOAT16: return 2;
    case CUDNN_DATA_COMPLEX_FP64: return 16;
    default: return 1;
  }
}
const char *fmt_name(cudnnTensorFormat_t f) {
  return f == CUDNN_TENSOR_NCHW ? "NCHW" : f == CUDNN_TENSOR_NHWC ? "NHWC" : "NCHW_VECT_C";
}

// Element offsets of a 4-d tensor (n, c, h, w) in its format (packed).
struct Layout {
  size_t sn, sc, sh, sw;
};
Layout layout_of(cudnnTensorFormat_t f, int c, int h, int w) {
  if (f == CUDNN_TENSOR_NHWC) return {(size_t)h * w * c, 1, (size_t)w * c, (size_t)c};
  return {(size_t)c * h * w, (size_t)h * w, (size_t)w, 1};
}

// The shapes of one convolution, validated.
struct ConvGeom {
  int N, C, H, W, K, R, S, P, Q;
  int pad_h, pad_w, u, v, dh, dw;
  bool flip;  // CUDNN_CONVOLUTION
  cudnnTensorFormat_t xf, wf, yf;
  cudnnMathType_t math;
  Layout lx, lw, ly;  // lw: (k, c, r, s)
  size_t x_elems() const { return (size_t)N * C * H * W; }
  size_t w_elems() const { return (size_t)K * C * R * S; }
  size_t y_elems() const { return (size_t)N * K * P * Q; }
  double flops() const { return 2.0 * N * K * P * Q * (double)C * R * S; }
};

bool handle_ok(const char *fn, cudnnHandle_t h) {
  if (h == nullptr) return false;
  check_magic(fn, "cudnnHandle_t", h, kCudnnMagic);
  return true;
}

// Output spatial size per cuDNN's documented formula.
int out_dim(int in, int pad, int filt, int dil, int stride) {
  return 1 + (in + 2 * pad - ((filt - 1) * dil + 1)) / stride;
}

// Consistency checks shared by the output-dim query, the heuristics, the
// workspace queries and the convolutions. y may be NULL (output-dim query).
cudnnStatus_t make_geom(const char *fn, cudnnTensorDescriptor_t x, cudnnFilterDescriptor_t w,
                        cudnnConvolutionDescriptor_t conv, cudnnTensorDescriptor_t y,
                        bool need_y, ConvGeom *g) {
  if (x == nullptr || w == nullptr || conv == nullptr || (need_y && y == nullptr))
    return dnn_err(fn, CUDNN_STATUS_BAD_PARAM, "a descriptor is NULL");
  check_magic(fn, "tensor descriptor", x, kTensorMagic);
  check_magic(fn, "filter descriptor", w, kFilterMagic);
  check_magic(fn, "convolution descriptor", conv, kConvMagic);
  if (y) check_magic(fn, "tensor descriptor", y, kTensorMagic);
  if (!x->set || !w->set || !conv->set || (y && !y->set))
    return dnn_err(fn, CUDNN_STATUS_BAD_PARAM,
                   "a descriptor was created but never set (x %d, w %d, conv %d, y %d)", x->set,
                   w->set, conv->set, y ? y->set : -1);
  if (w->c != x->c)
    return dnn_err(fn, CUDNN_STATUS_BAD_PARAM,
                   "the filter's input channels (c = %d) differ from the input tensor's (c = %d)",
                   w->c, x->c);
  const int eff_r = (w->h - 1) * conv->dil_h + 1, eff_s = (w->w - 1) * conv->dil_w + 1;
  if (eff_r > x->h + 2 * conv->pad_h || eff_s > x->w + 2 * conv->pad_w)
    return dnn_err(fn, CUDNN_STATUS_BAD_PARAM,
                   "the dilated filter (%d x %d) is larger than the padded input (%d x %d)", eff_r,
                   eff_s, x->h + 2 * conv->pad_h, x->w + 2 * conv->pad_w);
  g->N = x->n, g->C = x->c, g->H = x->h, g->W = x->w;
  g->K = w->k, g->R = w->h, g->S = w->w;
  g->pad_h = conv->pad_h, g->pad_w = conv->pad_w, g->u = conv->u, g->v = conv->v;
  g->dh = conv->dil_h, g->dw = conv->dil_w;
  g->flip = conv->mode == CUDNN_CONVOLUTION;
  g->math = conv->math;
  g->P = out_dim(x->h, conv->pad_h, w->h, conv->dil_h, conv->u);
  g->Q = out_dim(x->w, conv->pad_w, w->w, conv->dil_w, conv->v);
  g->xf = x->format, g->wf = w->format;
  g->lx = layout_of(x->format, x->c, x->h, x->w);
  g->lw = layout_of(w->format, w->c, w->h, w->w);
  if (!need_y && y == nullptr) return CUDNN_STATUS_SUCCESS;
  g->yf = y->format;
  g->ly = layout_of(y->format, y->c, y->h, y->w);
  if (x->dtype != w->dtype || x->dtype != y->dtype)
    return dnn_err(fn, CUDNN_STATUS_BAD_PARAM,
                   "data types differ: x %d, w %d, y %d (cudnnDataType_t)", (int)x->dtype,
                   (int)w->dtype, (int)y->dtype);
  if (y->n != x->n || y->c != w->k || y->h != g->P || y->w != g->Q)
    return dnn_err(fn, CUDNN_STATUS_BAD_PARAM,
                   "the output tensor is (n %d, c %d, h %d, w %d) but the convolution of x (n %d, "
                   "c %d, h %d, w %d) by the filter (k %d, c %d, r %d, s %d) with pad %d,%d "
                   "stride %d,%d dilation %d,%d gives (n %d, c %d, h %d, w %d) "
                   "(cudnnGetConvolution2dForwardOutputDim)",
                   y->n, y->c, y->h, y->w, x->n, x->c, x->h, x->w, w->k, w->c, w->h, w->w,
                   conv->pad_h, conv->pad_w, conv->u, conv->v, conv->dil_h, conv->dil_w, x->n,
                   w->k, g->P, g->Q);
  if (x->dtype != CUDNN_DATA_FLOAT)
    return dnn_err(fn, CUDNN_STATUS_NOT_SUPPORTED,
                   "data type %d: only CUDNN_DATA_FLOAT convolutions are emulated", (int)x->dtype);
  if (conv->compute != CUDNN_DATA_FLOAT)
    return dnn_err(fn, CUDNN_STATUS_NOT_SUPPORTED,
                   "FLOAT data needs computeType CUDNN_DATA_FLOAT in the convolution descriptor "
                   "(FLOAT_CONFIG), got %d",
                   (int)conv->compute);
  if (x->format != w->format)
    return dnn_err(fn, CUDNN_STATUS_NOT_SUPPORTED,
                   "the input tensor is %s but the filter is %s (%s); the emulator, like cuDNN's "
                   "FLOAT_CONFIG algorithms, wants the filter in the activation's layout",
                   fmt_name(x->format), fmt_name(w->format),
                   w->format == CUDNN_TENSOR_NHWC ? "KRSC" : "KCRS");
  return CUDNN_STATUS_SUCCESS;
}

// ---- algorithms: support, workspace, ratings --------------------------------

enum class Kind { fwd, bwd_data, bwd_filter };
const char *kind_name(Kind k) {
  return k == Kind::fwd ? "forward" : k == Kind::bwd_data ? "backward-data" : "backward-filter";
}
int algo_count(Kind k) {
  return k == Kind::fwd ? (int)CUDNN_CONVOLUTION_FWD_ALGO_COUNT
         : k == Kind::bwd_data ? (int)CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT
                               : (int)CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;
}

// Whether `algo` supports these shapes; else a reason.
const char *algo_unsupported(Kind kind, int algo, const ConvGeom &g) {
  const bool nchw = g.xf == CUDNN_TENSOR_NCHW;
  const bool unit_stride = g.u == 1 && g.v == 1, no_dil = g.dh == 1 && g.dw == 1;
  const bool f3 = g.R == 3 && g.S == 3, f5 = g.R == 5 && g.S == 5;
  auto fft_ok = [&]() -> const char * {
    if (!nchw) return "FFT algorithms take NCHW tensors only";
    if (!unit_stride || !no_dil) return "FFT algorithms need stride 1 and dilation 1";
    if (g.pad_h >= g.R || g.pad_w >= g.S) return "FFT algorithms need padding smaller than the filter";
    return nullptr;
  };
  auto wino = [&](bool fused) -> const char * {
    if (!nchw) return "Winograd algorithms take NCHW tensors only";
    if (!unit_stride || !no_dil) return "Winograd algorithms need stride 1 and dilation 1";
    if (fused ? !f3 : !(f3 || f5)) return fused ? "Winograd needs a 3x3 filter" : "Winograd (nonfused) needs a 3x3 or 5x5 filter";
    return nullptr;
  };
  switch (kind) {
    case Kind::fwd:
      switch (algo) {
        case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM:
        case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM:
          return nullptr;
        case CUDNN_CONVOLUTION_FWD_ALGO_GEMM:
          return nchw ? nullptr : "GEMM takes NCHW tensors only";
        case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT:
          return "DIRECT is not implemented in cuDNN";
        case CUDNN_CONVOLUTION_FWD_ALGO_FFT:
        case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING:
          return fft_ok();
        case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD:
          return wino(true);
        case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED:
          return wino(false);
      }
      break;
    case Kind::bwd_data:
      switch (algo) {
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_0:
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_1:
          return nullptr;
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT:
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING:
          return fft_ok();
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD:
          return wino(true);
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED:
          return wino(false);
      }
      break;
    case Kind::bwd_filter:
      switch (algo) {
        case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0:
        case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1:
        case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3:
          return nullptr;
        case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT:
        case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING:
          return fft_ok();
        case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD:
          return "BWD_FILTER_ALGO_WINOGRAD is not implemented in cuDNN";
        case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED:
          return wino(false);
      }
      break;
  }
  return "unknown algorithm";
}

bool algo_deterministic(Kind kind, int algo) {
  if (kind == Kind::bwd_data) return algo != CUDNN_CONVOLUTION_BWD_DATA_ALGO_0;
  if (kind == Kind::bwd_filter)
    return algo != CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0 && algo != CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3;
  return true;
}

size_t round256(size_t b) { return (b + 255) & ~(size_t)255; }

// Workspace bytes of a supported algorithm (plausible sizes; several nonzero).
size_t algo_workspace(Kind kind, int algo, const ConvGeom &g) {
  const size_t f = sizeof(float);
  const size_t crs = (size_t)g.C * g.R * g.S, pq = (size_t)g.P * g.Q, hw = (size_t)g.H * g.W;
  auto fft_bytes = [&] {
    size_t fh = 1, fw = 1;
    while (fh < (size_t)g.H + 2 * g.pad_h) fh <<= 1;
    while (fw < (size_t)g.W + 2 * g.pad_w) fw <<= 1;
    return round256(((size_t)g.N * g.C + (size_t)g.K * g.C + (size_t)g.N * g.K) * fh * (fw / 2 + 1) * 2 * f);
  };
  auto wino_bytes = [&] {
    const size_t tiles = (size_t)g.N * ((g.P + 3) / 4) * ((g.Q + 3) / 4);
    return round256(36 * (tiles * (g.C + g.K) + (size_t)g.C * g.K) * f);
  };
  switch (kind) {
    case Kind::fwd:
      switch (algo) {
        case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM: return 0;
        case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM: return round256(crs * sizeof(int) + 64);
        case CUDNN_CONVOLUTION_FWD_ALGO_GEMM: return round256(crs * pq * f);
        case CUDNN_CONVOLUTION_FWD_ALGO_FFT: return fft_bytes();
        case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING: return round256(fft_bytes() / 4 + 4096);
        case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD: return 0;
        case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED: return wino_bytes();
      }
      return 0;
    case Kind::bwd_data:
      switch (algo) {
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_0: return 0;
        // the deterministic one keeps partial sums when the stride scatters
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_1:
          return round256((size_t)g.K * crs * f + (g.u * g.v > 1 ? (size_t)g.N * g.C * hw * f : 0));
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT: return fft_bytes();
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING: return round256(fft_bytes() / 4 + 4096);
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD: return 0;
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED: return wino_bytes();
      }
      return 0;
    case Kind::bwd_filter:
      switch (algo) {
        case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0: return 0;
        // split-K partial filters, reduced deterministically
        case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1:
          return round256((size_t)std::min(g.N, 8) * g.K * crs * f);
        case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3: return round256((size_t)g.K * crs * f);
        case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT: return fft_bytes();
        case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING: return round256(fft_bytes() / 4 + 4096);
        case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED: return wino_bytes();
      }
      return 0;
  }
  return 0;
}

// Whether an algorithm has tensor-core (TF32 for FLOAT data) kernels on sm_90.
bool algo_has_tensor_op(Kind kind, int algo) {
  switch (kind) {
    case Kind::fwd:
      return algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM ||
             algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM ||
             algo == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
    case Kind::bwd_data:
      return algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_1 ||
             algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED;
    case Kind::bwd_filter:
      return algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1 ||
             algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED;
  }
  return false;
}

struct Rating {
  int algo;
  cudnnStatus_t status;
  float time;
  size_t memory;
  cudnnDeterminism_t det;
  cudnnMathType_t math;
};

// Heuristic ratings as cuDNN 9 on an H100 would plausibly give for FLOAT
// data: every algorithm once, the supported ones first, fastest first.
std::vector<Rating> rate(Kind kind, const ConvGeom &g) {
  // per-algorithm efficiency relative to peak
  auto eff = [&](int algo) -> double {
    switch (kind) {
      case Kind::fwd: {
        static const double e[] = {0.30, 0.55, 0.35, 0.1, 0.40, 0.45, 0.60, 0.50};
        return e[algo];
      }
      case Kind::bwd_data: {
        static const double e[] = {0.50, 0.45, 0.35, 0.40, 0.55, 0.45};
        return e[algo];
      }
      case Kind::bwd_filter: {
        static const double e[] = {0.50, 0.40, 0.30, 0.45, 0.1, 0.40, 0.35};
        return e[algo];
      }
    }
    return 0.3;
  };
  const double fma_peak = 51e12, tf32_peak = 378e12;  // H100 SXM dense fp32 / tf32
  std::vector<Rating> out;
  for (int a = 0; a < algo_count(kind); ++a) {
    Rating r{};
    r.algo = a;
    r.det = algo_deterministic(kind, a) ? CUDNN_DETERMINISTIC : CUDNN_NON_DETERMINISTIC;
    const char *why = algo_unsupported(kind, a, g);
    // the descriptor's math type decides what may be offered: FMA_MATH only
    // FMA kernels; DEFAULT / TENSOR_OP let FLOAT data run TF32 tensor cores
    const bool tensor = g.math != CUDNN_FMA_MATH && algo_has_tensor_op(kind, a);
    if (why) {
      r.status = CUDNN_STATUS_NOT_SUPPORTED;
      r.time = -1.0f;
      r.memory = 0;
      r.math = g.math == CUDNN_FMA_MATH ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH;
    } else {
      r.status = CUDNN_STATUS_SUCCESS;
      r.memory = algo_workspace(kind, a, g);
      if (tensor)
        // (fwd IMPLICIT_PRECOMP_GEMM, bwd ALGO_1 may convert to fp16 when allowed)
        r.math = g.math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION && a == 1
                     ? CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION
                     : CUDNN_TENSOR_OP_MATH;
      else
        r.math = g.math == CUDNN_FMA_MATH ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH;
      const double peak = tensor ? tf32_peak : fma_peak;
      r.time = (float)(1e3 * g.flops() / (peak * eff(a)) + 0.004 + 1e-9 * r.memory);
    }
    out.push_back(r);
  }
  std::stable_sort(out.begin(), out.end(), [](const Rating &x, const Rating &y) {
    if ((x.status == CUDNN_STATUS_SUCCESS) != (y.status == CUDNN_STATUS_SUCCESS))
      return x.status == CUDNN_STATUS_SUCCESS;
    if (x.status != CUDNN_STATUS_SUCCESS) return false;
    return x.time < y.time;
  });
  return out;
}

// ---- the convolutions ------------------------------------------------------

Rounding math_rounding(cudnnMathType_t m) {
  // FLOAT data: FMA_MATH computes in fp32; DEFAULT and TENSOR_OP math let
  // sm_80+ use TF32 tensor cores (ALLOW_CONVERSION: fp16 there; tf32 here)
  return m == CUDNN_FMA_MATH ? Rounding::none : Rounding::tf32;
}

// Tasks: naive loops in double. Non-deterministic algorithms (atomics on a
// GPU) get a random last-bit change in about a quarter of the results, so
// that run-to-run differences show.
// A non-deterministic algorithm's result: the last bit of about a quarter of
// the sums changes at random, as atomics reordering them would.
void perturb_last_bits(std::vector<double> &acc) {
  thread_local std::mt19937 gen{std::random_device{}()};
  for (double &a : acc) {
    float f = (float)a;
    if (f != 0.0f && (gen() & 3) == 0) f = std::nextafter(f, (gen() & 1) ? INFINITY : -INFINITY);
    a = f;
  }
}

// out = alpha * value + beta * out, without reading out when beta is 0.
void store_scaled(float *out, double value, float alpha, float beta) {
  *out = (float)(beta != 0.0f ? alpha * value + (double)beta * *out : alpha * value);
}

void run_forward(const ConvGeom g, const float *x, const float *w, float *y, float alpha,
                 float beta) {
  const Rounding rr = math_rounding(g.math);
  std::vector<float> xr(g.x_elems()), wr(g.w_elems());
  for (size_t i = 0; i < xr.size(); ++i) xr[i] = rnd(x[i], rr);
  for (size_t i = 0; i < wr.size(); ++i) wr[i] = rnd(w[i], rr);
  for (int n = 0; n < g.N; ++n)
    for (int k = 0; k < g.K; ++k)
      for (int p = 0; p < g.P; ++p)
        for (int q = 0; q < g.Q; ++q) {
          double acc = 0;
          for (int r = 0; r < g.R; ++r) {
            const int h = p * g.u - g.pad_h + r * g.dh;
            if (h < 0 || h >= g.H) continue;
            for (int s = 0; s < g.S; ++s) {
              const int ww = q * g.v - g.pad_w + s * g.dw;
              if (ww < 0 || ww >= g.W) continue;
              const int fr = g.flip ? g.R - 1 - r : r, fs = g.flip ? g.S - 1 - s : s;
              for (int c = 0; c < g.C; ++c)
                acc += (double)xr[n * g.lx.sn + c * g.lx.sc + h * g.lx.sh + ww * g.lx.sw] *
                       (double)wr[k * g.lw.sn + c * g.lw.sc + fr * g.lw.sh + fs * g.lw.sw];
            }
          }
          float *out = &y[n * g.ly.sn + k * g.ly.sc + p * g.ly.sh + q * g.ly.sw];
          store_scaled(out, acc, alpha, beta);
        }
}

void run_backward_data(const ConvGeom g, const float *w, const float *dy, float *dx, float alpha,
                       float beta, bool nondet) {
  const Rounding rr = math_rounding(g.math);
  std::vector<float> wr(g.w_elems()), dyr(g.y_elems());
  for (size_t i = 0; i < wr.size(); ++i) wr[i] = rnd(w[i], rr);
  for (size_t i = 0; i < dyr.size(); ++i) dyr[i] = rnd(dy[i], rr);
  // acc[n][c][h][w] (NCHW order, independent of the formats)
  std::vector<double> acc((size_t)g.N * g.C * g.H * g.W, 0.0);
  std::vector<float> part;  // non-deterministic: per-(k) partials in float
  for (int n = 0; n < g.N; ++n)
    for (int k = 0; k < g.K; ++k)
      for (int p = 0; p < g.P; ++p)
        for (int q = 0; q < g.Q; ++q) {
          const double d = dyr[n * g.ly.sn + k * g.ly.sc + p * g.ly.sh + q * g.ly.sw];
          for (int r = 0; r < g.R; ++r) {
            const int h = p * g.u - g.pad_h + r * g.dh;
            if (h < 0 || h >= g.H) continue;
            for (int s = 0; s < g.S; ++s) {
              const int ww = q * g.v - g.pad_w + s * g.dw;
              if (ww < 0 || ww >= g.W) continue;
              const int fr = g.flip ? g.R - 1 - r : r, fs = g.flip ? g.S - 1 - s : s;
              for (int c = 0; c < g.C; ++c)
                acc[(((size_t)n * g.C + c) * g.H + h) * g.W + ww] +=
                    d * (double)wr[k * g.lw.sn + c * g.lw.sc + fr * g.lw.sh + fs * g.lw.sw];
            }
          }
        }
  if (nondet) perturb_last_bits(acc);
  for (int n = 0; n < g.N; ++n)
    for (int c = 0; c < g.C; ++c)
      for (int h = 0; h < g.H; ++h)
        for (int ww = 0; ww < g.W; ++ww) {
          const double a = acc[(((size_t)n * g.C + c) * g.H + h) * g.W + ww];
          float *out = &dx[n * g.lx.sn + c * g.lx.sc + h * g.lx.sh + ww * g.lx.sw];
          store_scaled(out, a, alpha, beta);
        }
}

void run_backward_filter(const ConvGeom g, const float *x, const float *dy, float *dw, float alpha,
                         float beta, bool nondet) {
  const Rounding rr = math_rounding(g.math);
  std::vector<float> xr(g.x_elems()), dyr(g.y_elems());
  for (size_t i = 0; i < xr.size(); ++i) xr[i] = rnd(x[i], rr);
  for (size_t i = 0; i < dyr.size(); ++i) dyr[i] = rnd(dy[i], rr);
  std::vector<double> acc(g.w_elems(), 0.0);  // [k][c][r][s] in the (unflipped) filter's order
  for (int k = 0; k < g.K; ++k)
    for (int c = 0; c < g.C; ++c)
      for (int r = 0; r < g.R; ++r)
        for (int s = 0; s < g.S; ++s) {
          double sum = 0;
          for (int n = 0; n < g.N; ++n)
            for (int p = 0; p < g.P; ++p) {
              const int h = p * g.u - g.pad_h + r * g.dh;
              if (h < 0 || h >= g.H) continue;
              for (int q = 0; q < g.Q; ++q) {
                const int ww = q * g.v - g.pad_w + s * g.dw;
                if (ww < 0 || ww >= g.W) continue;
                sum += (double)xr[n * g.lx.sn + c * g.lx.sc + h * g.lx.sh + ww * g.lx.sw] *
                       (double)dyr[n * g.ly.sn + k * g.ly.sc + p * g.ly.sh + q * g.ly.sw];
              }
            }
          const int fr = g.flip ? g.R - 1 - r : r, fs = g.flip ? g.S - 1 - s : s;
          acc[(((size_t)k * g.C + c) * g.R + fr) * g.S + fs] = sum;
        }
  if (nondet) perturb_last_bits(acc);
  for (int k = 0; k < g.K; ++k)
    for (int c = 0; c < g.C; ++c)
      for (int r = 0; r < g.R; ++r)
        for (int s = 0; s < g.S; ++s) {
          const double a = acc[(((size_t)k * g.C + c) * g.R + r) * g.S + s];
          float *out = &dw[k * g.lw.sn + c * g.lw.sc + r * g.lw.sh + s * g.lw.sw];
          store_scaled(out, a, alpha, beta);
        }
}

// The handle's device must be current and its stream on it.
cudnnStatus_t check_handle_device(const char *fn, cudnnHandle_t h) {
  const int cur = emu_current_device();
  if (cur != h->device)
    return dnn_err(fn, CUDNN_STATUS_EXECUTION_FAILED,
                   "current device is %d but the handle was created on device %d", cur, h->device);
  return CUDNN_STATUS_SUCCESS;
}

// Shared argument checks of the three convolutions, then the task.
cudnnStatus_t conv_common(const char *fn, Kind kind, cudnnHandle_t handle, const void *alpha,
                          cudnnTensorDescriptor_t xDesc, const void *x,
                          cudnnFilterDescriptor_t wDesc, const void *w,
                          cudnnConvolutionDescriptor_t convDesc, cudnnTensorDescriptor_t yDesc,
                          const void *y, int algo, void *workSpace, size_t wsBytes,
                          const void *beta) {
  if (!handle_ok(fn, handle)) return dnn_err(fn, CUDNN_STATUS_BAD_PARAM, "handle is NULL");
  if (alpha == nullptr || beta == nullptr)
    return dnn_err(fn, CUDNN_STATUS_BAD_PARAM, "alpha or beta is NULL");
  ConvGeom g;
  cudnnStatus_t st = make_geom(fn, xDesc, wDesc, convDesc, yDesc, true, &g);
  if (st != CUDNN_STATUS_SUCCESS) return st;
  if (algo < 0 || algo >= algo_count(kind))
    return dnn_err(fn, CUDNN_STATUS_BAD_PARAM, "algo %d is not a %s algorithm", algo, kind_name(kind));
  if (const char *why = algo_unsupported(kind, algo, g))
    return dnn_err(fn, CUDNN_STATUS_NOT_SUPPORTED, "%s algo %d: %s", kind_name(kind), algo, why);
  const size_t need = algo_workspace(kind, algo, g);
  if (wsBytes < need)
    return dnn_err(fn, CUDNN_STATUS_BAD_PARAM,
                   "workSpaceSizeInBytes %zu is less than the %zu bytes %s algo %d needs for these "
                   "descriptors (math type %d)",
                   wsBytes, need, kind_name(kind), algo, (int)g.math);
  if (need > 0 && workSpace == nullptr)
    return dnn_err(fn, CUDNN_STATUS_BAD_PARAM, "workSpace is NULL but %zu bytes are needed", need);
  st = check_handle_device(fn, handle);
  if (st != CUDNN_STATUS_SUCCESS) return st;
  const int dev = handle->device;
  const float a = read_host_float(fn, "alpha", alpha), b = read_host_float(fn, "beta", beta);
  const size_t xb = g.x_elems() * 4, wb = g.w_elems() * 4, yb = g.y_elems() * 4;
  // inputs and output per direction
  const void *in1, *in2;
  void *out;
  size_t in1b, in2b, outb;
  const char *n1, *n2, *no;
  switch (kind) {
    case Kind::fwd:
      in1 = x, in1b = xb, n1 = "x", in2 = w, in2b = wb, n2 = "w", out = (void *)y, outb = yb, no = "y";
      break;
    case Kind::bwd_data:
      in1 = w, in1b = wb, n1 = "w", in2 = y, in2b = yb, n2 = "dy", out = (void *)x, outb = xb, no = "dx";
      break;
    default:
      in1 = x, in1b = xb, n1 = "x", in2 = y, in2b = yb, n2 = "dy", out = (void *)w, outb = wb, no = "dw";
      break;
  }
  check_device_mem(fn, n1, in1, in1b, dev);
  check_device_mem(fn, n2, in2, in2b, dev);
  check_device_mem(fn, no, out, outb, dev);
  if (wsBytes > 0 && workSpace != nullptr) check_device_mem(fn, "workSpace", workSpace, wsBytes, dev);
  if (ranges_overlap(out, outb, in1, in1b) || ranges_overlap(out, outb, in2, in2b))
    emu_fail("%s: the output %s [%p, +%zu) overlaps input %s [%p, +%zu) or %s [%p, +%zu)", fn, no,
             out, outb, n1, in1, in1b, n2, in2, in2b);
  if (need > 0 && (ranges_overlap(workSpace, need, in1, in1b) ||
                   ranges_overlap(workSpace, need, in2, in2b) ||
                   ranges_overlap(workSpace, need, out, outb)))
    emu_fail("%s: the workspace [%p, +%zu) overlaps a tensor of the call", fn, workSpace, need);
  const bool nondet = !algo_deterministic(kind, algo);
  const float *f1 = static_cast<const float *>(in1), *f2 = static_cast<const float *>(in2);
  float *fo = static_cast<float *>(out);
  unsigned char *ws = static_cast<unsigned char *>(workSpace);
  emu_enqueue(handle->stream, [=] {
    // the algorithm writes its workspace: scribble over what it needs
    if (need) memset(ws, 0xa5, need);
    switch (kind) {
      case Kind::fwd: run_forward(g, f1, f2, fo, a, b); break;
      case Kind::bwd_data: run_backward_data(g, f1, f2, fo, a, b, nondet); break;
      case Kind::bwd_filter: run_backward_filter(g, f1, f2, fo, a, b, nondet); break;
    }
  });
  return CUDNN_STATUS_SUCCESS;
}

template <typename Perf>
cudnnStatus_t get_algos(const char *fn, Kind kind, cudnnHandle_t handle,
                        cudnnTensorDescriptor_t x, cudnnFilterDescriptor_t w,
                        cudnnConvolutionDescriptor_t conv, cudnnTensorDescriptor_t y,
                        int requested, int *returned, Perf *perf) {
  if (!handle_ok(fn, handle)) return dnn_err(fn, CUDNN_STATUS_BAD_PARAM, "handle is NULL");
  if (returned == nullptr || perf == nullptr)
    return dnn_err(fn, CUDNN_STATUS_BAD_PARAM, "returnedAlgoCount or perfResults is NULL");
  if (requested <= 0)
    return dnn_err(fn, CUDNN_STATUS_BAD_PARAM, "requestedAlgoCount = %d is not positive", requested);
  ConvGeom g;
  cudnnStatus_t st = make_geom(fn, x, w, conv, y, true, &g);
  if (st != CUDNN_STATUS_SUCCESS) return st;
  std::vector<Rating> r = rate(kind, g);
  const int n = std::min<int>(requested, (int)r.size());
  for (int i = 0; i < n; ++i) {
    Perf p;
    memset(&p, 0, sizeof p);
    p.algo = static_cast<decltype(p.algo)>(r[i].algo);
    p.status = r[i].status;
    p.time = r[i].time;
    p.memory = r[i].memory;
    p.determinism = r[i].det;
    p.mathType = r[i].math;
    perf[i] = p;
  }
  *returned = n;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t get_ws(const char *fn, Kind kind, cudnnHandle_t handle, cudnnTensorDescriptor_t x,
                     cudnnFilterDescriptor_t w, cudnnConvolutionDescriptor_t conv,
                     cudnnTensorDescriptor_t y, int algo, size_t *size) {
  if (!handle_ok(fn, handle)) return dnn_err(fn, CUDNN_STATUS_BAD_PARAM, "handle is NULL");
  if (size == nullptr) return dnn_err(fn, CUDNN_STATUS_BAD_PARAM, "sizeInBytes is NULL");
  ConvGeom g;
  cudnnStatus_t st = make_geom(fn, x, w, conv, y, true, &g);
  if (st != CUDNN_STATUS_SUCCESS) return st;
  if (algo < 0 || algo >= algo_count(kind))
    return dnn_err(fn, CUDNN_STATUS_BAD_PARAM, "algo %d is not a %s algorithm", algo, kind_name(kind));
  if (const char *why = algo_unsupported(kind, algo, g))
    return dnn_err(fn, CUDNN_STATUS_NOT_SUPPORTED, "%s algo %d: %s", kind_name(kind), algo, why);
  *size = algo_workspace(kind, algo, g);
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace

extern "C" {

const char *CUDNNWINAPI cudnnGetErrorString(cudnnStatus_t status) { return cudnn_name(status); }

size_t CUDNNWINAPI cudnnGetVersion(void) { return CUDNN_VERSION; }

cudnnStatus_t CUDNNWINAPI cudnnCreate(cudnnHandle_t *handle) {
  if (library_missing[CT_CUDA_CUDNN]) return CUDNN_STATUS_NOT_INITIALIZED;
  if (handle == nullptr) return dnn_err("cudnnCreate", CUDNN_STATUS_BAD_PARAM, "handle is NULL");
  cudnnContext *h = new cudnnContext;
  h->magic = kCudnnMagic;
  h->device = emu_current_device();
  h->stream = nullptr;
  *handle = h;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnDestroy(cudnnHandle_t handle) {
  if (handle == nullptr) return dnn_err("cudnnDestroy", CUDNN_STATUS_BAD_PARAM, "handle is NULL");
  check_magic("cudnnDestroy", "cudnnHandle_t", handle, kCudnnMagic);
  cudaDeviceSynchronize();  // cudnnDestroy synchronizes implicitly
  handle->magic = kDead;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnSetStream(cudnnHandle_t handle, cudaStream_t streamId) {
  const char *fn = "cudnnSetStream";
  if (!handle_ok(fn, handle)) return dnn_err(fn, CUDNN_STATUS_BAD_PARAM, "handle is NULL");
  const int sdev = emu_stream_device(streamId);
  if (sdev != handle->device)
    return dnn_err(fn, CUDNN_STATUS_BAD_PARAM_STREAM_MISMATCH,
                   "the stream belongs to device %d but the handle to device %d", sdev,
                   handle->device);
  handle->stream = streamId;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t *d) {
  if (d == nullptr) return dnn_err("cudnnCreateTensorDescriptor", CUDNN_STATUS_BAD_PARAM, "NULL");
  *d = new cudnnTensorStruct{kTensorMagic, false, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 0, 0, 0, 0};
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t d) {
  if (d == nullptr) return CUDNN_STATUS_SUCCESS;
  check_magic("cudnnDestroyTensorDescriptor", "tensor descriptor", d, kTensorMagic);
  d->magic = kDead;  // kept, poisoned, to catch a use after destruction
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t d,
                                                     cudnnTensorFormat_t format,
                                                     cudnnDataType_t dataType, int n, int c, int h,
                                                     int w) {
  const char *fn = "cudnnSetTensor4dDescriptor";
  if (d == nullptr) return dnn_err(fn, CUDNN_STATUS_BAD_PARAM, "tensorDesc is NULL");
  check_magic(fn, "tensor descriptor", d, kTensorMagic);
  if (format != CUDNN_TENSOR_NCHW && format != CUDNN_TENSOR_NHWC && format != CUDNN_TENSOR_NCHW_VECT_C)
    return dnn_err(fn, CUDNN_STATUS_BAD_PARAM, "format %d is not a cudnnTensorFormat_t", (int)format);
  if (!dtype_valid(dataType))
    return dnn_err(fn, CUDNN_STATUS_BAD_PARAM, "dataType %d is not a cudnnDataType_t", (int)dataType);
  if (n <= 0 || c <= 0 || h <= 0 || w <= 0)
    return dnn_err(fn, CUDNN_STATUS_BAD_PARAM, "dimensions n %d c %d h %d w %d must be positive", n,
                   c, h, w);
  if (format == CUDNN_TENSOR_NCHW_VECT_C)
    return dnn_err(fn, CUDNN_STATUS_NOT_SUPPORTED, "NCHW_VECT_C is not emulated");
  if ((double)n * c * h * w > (double)INT_MAX)
    return dnn_err(fn, CUDNN_STATUS_NOT_SUPPORTED,
                   "%d x %d x %d x %d elements exceed the 2 Giga-element limit", n, c, h, w);
  d->set = true, d->format = format, d->dtype = dataType;
  d->n = n, d->c = c, d->h = h, d->w = w;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t *d) {
  if (d == nullptr) return dnn_err("cudnnCreateFilterDescriptor", CUDNN_STATUS_BAD_PARAM, "NULL");
  *d = new cudnnFilterStruct{kFilterMagic, false, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 0, 0, 0, 0};
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t d) {
  if (d == nullptr) return CUDNN_STATUS_SUCCESS;
  check_magic("cudnnDestroyFilterDescriptor", "filter descriptor", d, kFilterMagic);
  d->magic = kDead;
  return CUDNN_STATUS_SUCCESS;
}

// format NCHW: the filter is KCRS; NHWC: KRSC (k, c, h, w are its sizes).
cudnnStatus_t CUDNNWINAPI cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t d,
                                                     cudnnDataType_t dataType,
                                                     cudnnTensorFormat_t format, int k, int c,
                                                     int h, int w) {
  const char *fn = "cudnnSetFilter4dDescriptor";
  if (d == nullptr) return dnn_err(fn, CUDNN_STATUS_BAD_PARAM, "filterDesc is NULL");
  check_magic(fn, "filter descriptor", d, kFilterMagic);
  if (format != CUDNN_TENSOR_NCHW && format != CUDNN_TENSOR_NHWC && format != CUDNN_TENSOR_NCHW_VECT_C)
    return dnn_err(fn, CUDNN_STATUS_BAD_PARAM, "format %d is not a cudnnTensorFormat_t", (int)format);
  if (!dtype_valid(dataType))
    return dnn_err(fn, CUDNN_STATUS_BAD_PARAM, "dataType %d is not a cudnnDataType_t", (int)dataType);
  if (k <= 0 || c <= 0 || h <= 0 || w <= 0)
    return dnn_err(fn, CUDNN_STATUS_BAD_PARAM, "dimensions k %d c %d h %d w %d must be positive", k,
                   c, h, w);
  if (format == CUDNN_TENSOR_NCHW_VECT_C)
    return dnn_err(fn, CUDNN_STATUS_NOT_SUPPORTED, "NCHW_VECT_C is not emulated");
  d->set = true, d->format = format, d->dtype = dataType;
  d->k = k, d->c = c, d->h = h, d->w = w;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t *d) {
  if (d == nullptr) return dnn_err("cudnnCreateConvolutionDescriptor", CUDNN_STATUS_BAD_PARAM, "NULL");
  *d = new cudnnConvolutionStruct{kConvMagic, false, 0, 0, 1, 1, 1, 1, CUDNN_CONVOLUTION,
                                  CUDNN_DATA_FLOAT, CUDNN_DEFAULT_MATH};
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t d) {
  if (d == nullptr) return CUDNN_STATUS_SUCCESS;
  check_magic("cudnnDestroyConvolutionDescriptor", "convolution descriptor", d, kConvMagic);
  d->magic = kDead;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t d, int pad_h,
                                                          int pad_w, int u, int v, int dilation_h,
                                                          int dilation_w,
                                                          cudnnConvolutionMode_t mode,
                                                          cudnnDataType_t computeType) {
  const char *fn = "cudnnSetConvolution2dDescriptor";
  if (d == nullptr) return dnn_err(fn, CUDNN_STATUS_BAD_PARAM, "convDesc is NULL");
  check_magic(fn, "convolution descriptor", d, kConvMagic);
  if (pad_h < 0 || pad_w < 0)
    return dnn_err(fn, CUDNN_STATUS_BAD_PARAM, "negative padding %d, %d", pad_h, pad_w);
  if (u <= 0 || v <= 0)
    return dnn_err(fn, CUDNN_STATUS_BAD_PARAM, "strides %d, %d must be positive", u, v);
  if (dilation_h <= 0 || dilation_w <= 0)
    return dnn_err(fn, CUDNN_STATUS_BAD_PARAM, "dilations %d, %d must be positive", dilation_h,
                   dilation_w);
  if (mode != CUDNN_CONVOLUTION && mode != CUDNN_CROSS_CORRELATION)
    return dnn_err(fn, CUDNN_STATUS_BAD_PARAM, "mode %d is not a cudnnConvolutionMode_t", (int)mode);
  if (!dtype_valid(computeType))
    return dnn_err(fn, CUDNN_STATUS_BAD_PARAM, "computeType %d is not a cudnnDataType_t", (int)computeType);
  d->set = true;
  d->pad_h = pad_h, d->pad_w = pad_w, d->u = u, d->v = v, d->dil_h = dilation_h,
  d->dil_w = dilation_w, d->mode = mode, d->compute = computeType;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t d,
                                                      cudnnMathType_t mathType) {
  const char *fn = "cudnnSetConvolutionMathType";
  if (d == nullptr) return dnn_err(fn, CUDNN_STATUS_BAD_PARAM, "convDesc is NULL");
  check_magic(fn, "convolution descriptor", d, kConvMagic);
  if (mathType != CUDNN_DEFAULT_MATH && mathType != CUDNN_TENSOR_OP_MATH &&
      mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION && mathType != CUDNN_FMA_MATH)
    return dnn_err(fn, CUDNN_STATUS_BAD_PARAM, "mathType %d is not a cudnnMathType_t", (int)mathType);
  d->math = mathType;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnGetConvolution2dForwardOutputDim(
    const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t inputTensorDesc,
    const cudnnFilterDescriptor_t filterDesc, int *n, int *c, int *h, int *w) {
  const char *fn = "cudnnGetConvolution2dForwardOutputDim";
  if (n == nullptr || c == nullptr || h == nullptr || w == nullptr)
    return dnn_err(fn, CUDNN_STATUS_BAD_PARAM, "an output pointer is NULL");
  ConvGeom g;
  cudnnStatus_t st = make_geom(fn, inputTensorDesc, filterDesc, convDesc, nullptr, false, &g);
  if (st != CUDNN_STATUS_SUCCESS) return st;
  *n = g.N, *c = g.K, *h = g.P, *w = g.Q;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnGetConvolutionForwardAlgorithm_v7(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t srcDesc,
    const cudnnFilterDescriptor_t filterDesc, const cudnnConvolutionDescriptor_t convDesc,
    const cudnnTensorDescriptor_t destDesc, const int requestedAlgoCount, int *returnedAlgoCount,
    cudnnConvolutionFwdAlgoPerf_t *perfResults) {
  return get_algos("cudnnGetConvolutionForwardAlgorithm_v7", Kind::fwd, handle, srcDesc,
                   filterDesc, convDesc, destDesc, requestedAlgoCount, returnedAlgoCount,
                   perfResults);
}

cudnnStatus_t CUDNNWINAPI cudnnGetConvolutionBackwardDataAlgorithm_v7(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t filterDesc,
    const cudnnTensorDescriptor_t diffDesc, const cudnnConvolutionDescriptor_t convDesc,
    const cudnnTensorDescriptor_t gradDesc, const int requestedAlgoCount, int *returnedAlgoCount,
    cudnnConvolutionBwdDataAlgoPerf_t *perfResults) {
  return get_algos("cudnnGetConvolutionBackwardDataAlgorithm_v7", Kind::bwd_data, handle, gradDesc,
                   filterDesc, convDesc, diffDesc, requestedAlgoCount, returnedAlgoCount,
                   perfResults);
}

cudnnStatus_t CUDNNWINAPI cudnnGetConvolutionBackwardFilterAlgorithm_v7(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t srcDesc,
    const cudnnTensorDescriptor_t diffDesc, const cudnnConvolutionDescriptor_t convDesc,
    const cudnnFilterDescriptor_t gradDesc, const int requestedAlgoCount, int *returnedAlgoCount,
    cudnnConvolutionBwdFilterAlgoPerf_t *perfResults) {
  return get_algos("cudnnGetConvolutionBackwardFilterAlgorithm_v7", Kind::bwd_filter, handle,
                   srcDesc, gradDesc, convDesc, diffDesc, requestedAlgoCount, returnedAlgoCount,
                   perfResults);
}

cudnnStatus_t CUDNNWINAPI cudnnGetConvolutionForwardWorkspaceSize(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc, const cudnnFilterDescriptor_t wDesc,
    const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t yDesc,
    cudnnConvolutionFwdAlgo_t algo, size_t *sizeInBytes) {
  return get_ws("cudnnGetConvolutionForwardWorkspaceSize", Kind::fwd, handle, xDesc, wDesc,
                convDesc, yDesc, (int)algo, sizeInBytes);
}

cudnnStatus_t CUDNNWINAPI cudnnGetConvolutionBackwardDataWorkspaceSize(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t wDesc, const cudnnTensorDescriptor_t dyDesc,
    const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t dxDesc,
    cudnnConvolutionBwdDataAlgo_t algo, size_t *sizeInBytes) {
  return get_ws("cudnnGetConvolutionBackwardDataWorkspaceSize", Kind::bwd_data, handle, dxDesc,
                wDesc, convDesc, dyDesc, (int)algo, sizeInBytes);
}

cudnnStatus_t CUDNNWINAPI cudnnGetConvolutionBackwardFilterWorkspaceSize(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc, const cudnnTensorDescriptor_t dyDesc,
    const cudnnConvolutionDescriptor_t convDesc, const cudnnFilterDescriptor_t gradDesc,
    cudnnConvolutionBwdFilterAlgo_t algo, size_t *sizeInBytes) {
  return get_ws("cudnnGetConvolutionBackwardFilterWorkspaceSize", Kind::bwd_filter, handle, xDesc,
                gradDesc, convDesc, dyDesc, (int)algo, sizeInBytes);
}

cudnnStatus_t CUDNNWINAPI cudnnConvolutionForward(
    cudnnHandle_t handle, const void *alpha, const cudnnTensorDescriptor_t xDesc, const void *x,
    const cudnnFilterDescriptor_t wDesc, const void *w, const cudnnConvolutionDescriptor_t convDesc,
    cudnnConvolutionFwdAlgo_t algo, void *workSpace, size_t workSpaceSizeInBytes, const void *beta,
    const cudnnTensorDescriptor_t yDesc, void *y) {
  return conv_common("cudnnConvolutionForward", Kind::fwd, handle, alpha, xDesc, x, wDesc, w,
                     convDesc, yDesc, y, (int)algo, workSpace, workSpaceSizeInBytes, beta);
}

cudnnStatus_t CUDNNWINAPI cudnnConvolutionBackwardData(
    cudnnHandle_t handle, const void *alpha, const cudnnFilterDescriptor_t wDesc, const void *w,
    const cudnnTensorDescriptor_t dyDesc, const void *dy,
    const cudnnConvolutionDescriptor_t convDesc, cudnnConvolutionBwdDataAlgo_t algo,
    void *workSpace, size_t workSpaceSizeInBytes, const void *beta,
    const cudnnTensorDescriptor_t dxDesc, void *dx) {
  return conv_common("cudnnConvolutionBackwardData", Kind::bwd_data, handle, alpha, dxDesc, dx,
                     wDesc, w, convDesc, dyDesc, dy, (int)algo, workSpace, workSpaceSizeInBytes,
                     beta);
}

cudnnStatus_t CUDNNWINAPI cudnnConvolutionBackwardFilter(
    cudnnHandle_t handle, const void *alpha, const cudnnTensorDescriptor_t xDesc, const void *x,
    const cudnnTensorDescriptor_t dyDesc, const void *dy,
    const cudnnConvolutionDescriptor_t convDesc, cudnnConvolutionBwdFilterAlgo_t algo,
    void *workSpace, size_t workSpaceSizeInBytes, const void *beta,
    const cudnnFilterDescriptor_t dwDesc, void *dw) {
  return conv_common("cudnnConvolutionBackwardFilter", Kind::bwd_filter, handle, alpha, xDesc, x,
                     dwDesc, dw, convDesc, dyDesc, dy, (int)algo, workSpace, workSpaceSizeInBytes,
                     beta);
}

}  // extern "C"

// =============================================================================
// NCCL
// =============================================================================

namespace {

// One collective of a clique, matched across ranks by sequence number.
struct CollOp {
  int arrived = 0, departed = 0;
  bool done = false;
  std::vector<bool> here;
  std::vector<const float *> send;
  std::vector<float *> recv;
  std::vector<size_t> count;
};

// The ranks made by one ncclCommInitAll.
struct Clique {
  int nranks;
  std::vector<int> devs;
  std::mutex mu;
  std::condition_variable cv;
  std::map<uint64_t, CollOp> ops;
  std::map<uint64_t, int> ungrouped_issuer;  // host thread (serial) -> rank it issued for
  bool warned = false;
};

}  // namespace

struct ncclComm {
  uint32_t magic;
  std::shared_ptr<Clique> clique;
  int rank, dev;
  uint64_t seq;  // collectives issued by this rank
  std::mutex mu;
  std::condition_variable cv;
  int pending;  // issued, not yet completed on the stream
};

namespace {
constexpr uint32_t kNcclMagic = 0x9cc1u;

// An AllReduce recorded between ncclGroupStart and ncclGroupEnd.
struct PendingColl {
  const float *send;
  float *recv;
  size_t count;
  ncclComm *comm;
  cudaStream_t stream;
};
thread_local int group_depth = 0;
thread_local std::vector<PendingColl> group_ops;
thread_local ncclResult_t group_error = ncclSuccess;  // first error inside the group
thread_local char last_error[1200];                   // ncclGetLastError's text
std::mutex init_failure_lock;
std::string init_failure; // the next ncclCommInitAll's error text (emulator_faults.h)

ncclResult_t nccl_err(const char *fn, ncclResult_t r, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
ncclResult_t nccl_err(const char *fn, ncclResult_t r, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  snprintf(last_error, sizeof last_error, "%s: %s", fn, buf);
  fprintf(stderr, "EMU: %s: %s (returning %s)\n", fn, buf, ncclGetErrorString(r));
  return r;
}

// Queue one rank's part of an all-reduce on its stream.
void launch_allreduce(const PendingColl &pc) {
  ncclComm *comm = pc.comm;
  std::shared_ptr<Clique> cl = comm->clique;
  const int rank = comm->rank;
  const uint64_t seq = comm->seq++;
  {
    std::lock_guard<std::mutex> lk(comm->mu);
    ++comm->pending;
  }
  const float *send = pc.send;
  float *recv = pc.recv;
  const size_t count = pc.count;
  emu_enqueue(pc.stream, [cl, comm, rank, seq, send, recv, count] {
    std::unique_lock<std::mutex> lk(cl->mu);
    CollOp &op = cl->ops[seq];
    if (op.here.empty()) {
      op.here.assign(cl->nranks, false);
      op.send.assign(cl->nranks, nullptr);
      op.recv.assign(cl->nranks, nullptr);
      op.count.assign(cl->nranks, 0);
    }
    op.here[rank] = true;
    op.send[rank] = send;
    op.recv[rank] = recv;
    op.count[rank] = count;
    ++op.arrived;
    if (op.arrived == cl->nranks) {
      for (int r = 1; r < cl->nranks; ++r)
        if (op.count[r] != op.count[0])
          emu_fail("NCCL collective #%llu: rank %d passes count %zu but rank 0 passes %zu "
                   "(mismatched collectives: a real GPU would hang or corrupt memory)",
                   (unsigned long long)seq, r, op.count[r], op.count[0]);
      // the sum in rank order, in float, then written to every rank
      std::vector<float> sum(op.send[0], op.send[0] + count);
      for (int r = 1; r < cl->nranks; ++r) {
        const float *s = op.send[r];
        for (size_t i = 0; i < count; ++i) sum[i] += s[i];
      }
      for (int r = 0; r < cl->nranks; ++r) memcpy(op.recv[r], sum.data(), count * sizeof(float));
      op.done = true;
      cl->cv.notify_all();
    } else {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kWatchdogSeconds);
      while (!op.done) {
        if (cl->cv.wait_until(lk, deadline) == std::cv_status::timeout && !op.done) {
          std::string missing;
          for (int r = 0; r < cl->nranks; ++r)
            if (!op.here[r]) missing += (missing.empty() ? "" : ", ") + std::to_string(r) +
                                        " (device " + std::to_string(cl->devs[r]) + ")";
          emu_fail("NCCL collective #%llu: rank %d (device %d) waited %d s for ranks %s, whose "
                   "streams never reached it (deadlock)",
                   (unsigned long long)seq, rank, cl->devs[rank], kWatchdogSeconds,
                   missing.c_str());
        }
      }
    }
    if (++op.departed == cl->nranks) cl->ops.erase(seq);
    lk.unlock();
    std::lock_guard<std::mutex> clk(comm->mu);
    --comm->pending;
    comm->cv.notify_all();
  });
}

}  // namespace

extern "C" {

const char *ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

void emu_nccl_fail_next_init(const char *text) {
  std::lock_guard<std::mutex> lk(init_failure_lock);
  init_failure = text;
}

const char *ncclGetLastError(ncclComm_t comm) {
  (void)comm;
  return last_error;
}

ncclResult_t ncclGetVersion(int *version) {
  *version = NCCL_VERSION_CODE;
  return library_missing[CT_CUDA_NCCL] ? ncclSystemError : ncclSuccess;
}

ncclResult_t ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist) {
  const char *fn = "ncclCommInitAll";
  if (library_missing[CT_CUDA_NCCL]) return nccl_err(fn, ncclSystemError, "NCCL is missing");
  {
    std::lock_guard<std::mutex> lk(init_failure_lock);
    if (!init_failure.empty()) {
      const std::string text = init_failure;
      init_failure.clear();
      return nccl_err(fn, ncclSystemError, "%s", text.c_str());
    }
  }
  if (group_depth > 0)
    return nccl_err(fn, ncclInvalidUsage, "called inside ncclGroupStart/ncclGroupEnd");
  if (comms == nullptr) return nccl_err(fn, ncclInvalidArgument, "comms is NULL");
  if (ndev < 1) return nccl_err(fn, ncclInvalidArgument, "ndev = %d must be positive", ndev);
  const int ndevices = device_count();
  std::vector<int> devs(ndev);
  for (int r = 0; r < ndev; ++r) {
    devs[r] = devlist ? devlist[r] : r;
    if (devs[r] < 0 || devs[r] >= ndevices)
      return nccl_err(fn, ncclInvalidArgument, "devlist[%d] = %d is not a device (there are %d)", r,
                      devs[r], ndevices);
    for (int q = 0; q < r; ++q)
      if (devs[q] == devs[r])
        return nccl_err(fn, ncclInvalidUsage,
                        "device %d is listed twice (ranks %d and %d): NCCL takes one rank per GPU",
                        devs[r], q, r);
  }
  auto cl = std::make_shared<Clique>();
  cl->nranks = ndev;
  cl->devs = devs;
  for (int r = 0; r < ndev; ++r) {
    ncclComm *c = new ncclComm;
    c->magic = kNcclMagic;
    c->clique = cl;
    c->rank = r;
    c->dev = devs[r];
    c->seq = 0;
    c->pending = 0;
    comms[r] = c;
  }
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  const char *fn = "ncclCommDestroy";
  if (comm == nullptr) return ncclSuccess;
  if (comm->magic == kDead) emu_fail("%s: communicator %p destroyed twice", fn, (void *)comm);
  if (comm->magic != kNcclMagic) emu_fail("%s: %p is not a communicator", fn, (void *)comm);
  // destroy finalizes first: the rank's issued collectives complete
  std::unique_lock<std::mutex> lk(comm->mu);
  if (!comm->cv.wait_for(lk, std::chrono::seconds(kWatchdogSeconds + 5),
                         [&] { return comm->pending == 0; }))
    emu_fail("%s: rank %d (device %d) still has %d collectives in flight after %d s", fn,
             comm->rank, comm->dev, comm->pending, kWatchdogSeconds + 5);
  comm->magic = kDead;  // kept, poisoned, to catch a use after destruction
  return ncclSuccess;
}

ncclResult_t ncclGroupStart(void) {
  ++group_depth;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd(void) {
  if (group_depth == 0)
    return nccl_err("ncclGroupEnd", ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
  if (--group_depth > 0) return ncclSuccess;
  std::vector<PendingColl> ops;
  ops.swap(group_ops);
  const ncclResult_t err = group_error;
  group_error = ncclSuccess;
  // a call of the group failed: NCCL launches none of the group's operations
  if (err != ncclSuccess)
    return nccl_err("ncclGroupEnd", err,
                    "an operation of the group failed; none of its %zu other operations is launched",
                    ops.size());
  // the group's operations are launched now, on their streams
  for (const PendingColl &pc : ops) launch_allreduce(pc);
  return ncclSuccess;
}

static ncclResult_t all_reduce(const void *sendbuff, void *recvbuff, size_t count,
                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream) {
  const char *fn = "ncclAllReduce";
  if (comm == nullptr) return nccl_err(fn, ncclInvalidArgument, "comm is NULL");
  if (comm->magic == kDead) emu_fail("%s: communicator %p used after ncclCommDestroy", fn, (void *)comm);
  if (comm->magic != kNcclMagic) emu_fail("%s: %p is not a communicator", fn, (void *)comm);
  if ((int)datatype < 0 || (int)datatype >= (int)ncclNumTypes)
    return nccl_err(fn, ncclInvalidArgument, "datatype %d is not an ncclDataType_t", (int)datatype);
  if ((int)op < 0 || (int)op >= (int)ncclNumOps)
    return nccl_err(fn, ncclInvalidArgument, "op %d is not an ncclRedOp_t", (int)op);
  if (datatype != ncclFloat || op != ncclSum)
    return nccl_err(fn, ncclInvalidArgument,
                    "datatype %d / op %d: only ncclFloat with ncclSum is emulated", (int)datatype,
                    (int)op);
  const int sdev = emu_stream_device(stream);
  if (sdev != comm->dev)
    return nccl_err(fn, ncclInvalidArgument,
                    "rank %d's communicator is on device %d but the stream belongs to device %d",
                    comm->rank, comm->dev, sdev);
  if (count > 0 && (sendbuff == nullptr || recvbuff == nullptr))
    return nccl_err(fn, ncclInvalidArgument, "sendbuff or recvbuff is NULL");
  const size_t bytes = count * sizeof(float);
  if (count > 0) {
    int d1 = check_device_mem(fn, "sendbuff", sendbuff, bytes, -1);
    int d2 = check_device_mem(fn, "recvbuff", recvbuff, bytes, -1);
    if (d1 != comm->dev || d2 != comm->dev)
      return nccl_err(fn, ncclInvalidArgument,
                      "rank %d (device %d): sendbuff is on device %d, recvbuff on device %d",
                      comm->rank, comm->dev, d1, d2);
    if (sendbuff != recvbuff && ranges_overlap(sendbuff, bytes, recvbuff, bytes))
      emu_fail("%s: sendbuff %p and recvbuff %p overlap without being equal (in place needs the "
               "same pointer)",
               fn, sendbuff, recvbuff);
  }
  PendingColl pc{static_cast<const float *>(sendbuff), static_cast<float *>(recvbuff), count, comm,
                 stream};
  if (group_depth > 0) {
    group_ops.push_back(pc);
    return ncclSuccess;
  }
  // NCCL's docs (group calls): a thread that drives several ranks must group
  // their calls, as each call may block until the other ranks arrive. The
  // emulator does not block the host; it says so once per communicator.
  {
    Clique &cl = *comm->clique;
    std::lock_guard<std::mutex> lk(cl.mu);
    static std::atomic<uint64_t> next_thread{1};
    thread_local const uint64_t me = next_thread++;  // unlike thread ids, never reused
    auto it = cl.ungrouped_issuer.find(me);
    if (it == cl.ungrouped_issuer.end())
      cl.ungrouped_issuer[me] = comm->rank;
    else if (it->second != comm->rank && !cl.warned) {
      cl.warned = true;
      fprintf(stderr,
              "EMU: ncclAllReduce: warning: one host thread issues collectives for ranks %d and %d "
              "of one communicator outside ncclGroupStart/End; real NCCL may block that thread "
              "in the first call\n",
              it->second, comm->rank);
    }
  }
  launch_allreduce(pc);
  return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream) {
  ncclResult_t r = all_reduce(sendbuff, recvbuff, count, datatype, op, comm, stream);
  if (r != ncclSuccess && group_depth > 0 && group_error == ncclSuccess) group_error = r;
  return r;
}

}  // extern "C"
