/* Device code of Equal, Cast and the comparisons of ops/compare.h
 * (gpu_compare.c): one thread per element.
 * Dtypes are ct_dtype codes: 0 f32, 1 i32, 2 i64, 3 u8. */
#include "launch_basic.h"
#include "ops/compare.h"

enum { THREADS = 256, MAX_BLOCKS = 8192 };

static unsigned blocks_for(int64_t n) {
  int64_t blocks = (n + THREADS - 1) / THREADS;
  return (unsigned)(blocks < MAX_BLOCKS ? blocks : (int64_t)MAX_BLOCKS);
}

#define FOR_EACH(i, n)                                                              \
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n); \
       i += (int64_t)gridDim.x * blockDim.x)

template <typename T>
__global__ static void equal_kernel(const T *a, const T *b, uint8_t *out, int64_t n, int a_scalar,
                                    int b_scalar) {
  FOR_EACH(i, n) out[i] = a[a_scalar ? 0 : i] == b[b_scalar ? 0 : i];
}

/* compare<OP>::of is row OP's operator. */
template <ct_compare_op OP>
struct compare;
#define COMPARE_FORMULA(P, Name, function, op)                              \
  template <>                                                             \
  struct compare<CT_COMPARE_##Name> {                                     \
    template <typename T>                                                 \
    static __device__ __forceinline__ uint8_t of(T a, T b) { return a op b; } \
  };
CT_COMPARE(COMPARE_FORMULA, _)
#undef COMPARE_FORMULA

template <ct_compare_op OP, typename T>
__global__ static void compare_kernel(const T *a, const T *b, uint8_t *out, int64_t n,
                                      int a_scalar, int b_scalar) {
  FOR_EACH(i, n) out[i] = compare<OP>::of(a[a_scalar ? 0 : i], b[b_scalar ? 0 : i]);
}

template <ct_compare_op OP>
static cudaError_t compare_of(const void *a, const void *b, uint8_t *out, int dtype, int64_t n,
                              int a_scalar, int b_scalar, cudaStream_t stream) {
  const unsigned blocks = blocks_for(n);
  switch (dtype) {
    case 0:
      compare_kernel<OP, float><<<blocks, THREADS, 0, stream>>>(
          (const float *)a, (const float *)b, out, n, a_scalar, b_scalar);
      break;
    case 1:
      compare_kernel<OP, int32_t><<<blocks, THREADS, 0, stream>>>(
          (const int32_t *)a, (const int32_t *)b, out, n, a_scalar, b_scalar);
      break;
    case 2:
      compare_kernel<OP, int64_t><<<blocks, THREADS, 0, stream>>>(
          (const int64_t *)a, (const int64_t *)b, out, n, a_scalar, b_scalar);
      break;
    default:
      compare_kernel<OP, uint8_t><<<blocks, THREADS, 0, stream>>>(
          (const uint8_t *)a, (const uint8_t *)b, out, n, a_scalar, b_scalar);
  }
  return cudaGetLastError();
}

extern "C" cudaError_t ct_launch_compare(int op, const void *a, const void *b, uint8_t *out,
                                         int dtype, int64_t n, int a_scalar, int b_scalar,
                                         cudaStream_t stream) {
  switch ((ct_compare_op)op) {
#define COMPARE_CASE(P, Name, function, op) \
  case CT_COMPARE_##Name:                   \
    return compare_of<CT_COMPARE_##Name>(a, b, out, dtype, n, a_scalar, b_scalar, stream);
    CT_COMPARE(COMPARE_CASE, _)
#undef COMPARE_CASE
    case CT_COMPARE_COUNT:
      break;
  }
  return cudaErrorInvalidValue;
}

/* As the CPU's Cast (kernels/cpu/compare.c): to an integer dtype, a value
 * outside [lo, hi] saturates and a NaN gives 0, so a narrowed value never
 * wraps into range. Compared as doubles: exact for every pair of dtypes but
 * i64 to i64, which ct_launch_cast copies. */
template <typename X, typename Y>
__global__ static void cast_kernel(const X *x, Y *y, int64_t n, int integer, int64_t lo,
                                   int64_t hi) {
  FOR_EACH(i, n) {
    const double v = (double)x[i];
    if (!integer) y[i] = (Y)x[i];
    else if (v != v) y[i] = 0;
    else if (v <= (double)lo) y[i] = (Y)lo;
    else if (v >= (double)hi) y[i] = (Y)hi;
    else y[i] = (Y)x[i];
  }
}

template <typename T>
static void equal_of(const void *a, const void *b, uint8_t *out, int64_t n, int a_scalar,
                     int b_scalar, cudaStream_t stream) {
  equal_kernel<T><<<blocks_for(n), THREADS, 0, stream>>>((const T *)a, (const T *)b, out, n,
                                                         a_scalar, b_scalar);
}

extern "C" cudaError_t ct_launch_equal(const void *a, const void *b, uint8_t *out, int dtype,
                                       int64_t n, int a_scalar, int b_scalar,
                                       cudaStream_t stream) {
  switch (dtype) {
    case 0: equal_of<float>(a, b, out, n, a_scalar, b_scalar, stream); break;
    case 1: equal_of<int32_t>(a, b, out, n, a_scalar, b_scalar, stream); break;
    case 2: equal_of<int64_t>(a, b, out, n, a_scalar, b_scalar, stream); break;
    default: equal_of<uint8_t>(a, b, out, n, a_scalar, b_scalar, stream);
  }
  return cudaGetLastError();
}

template <typename X, typename Y>
static void cast_to(const void *x, void *y, int64_t n, int integer, int64_t lo, int64_t hi,
                    cudaStream_t stream) {
  cast_kernel<X, Y><<<blocks_for(n), THREADS, 0, stream>>>((const X *)x, (Y *)y, n, integer, lo,
                                                           hi);
}

template <typename X>
static void cast_from(const void *x, void *y, int to, int64_t n, cudaStream_t stream) {
  switch (to) {
    case 0: cast_to<X, float>(x, y, n, 0, 0, 0, stream); break;
    case 1: cast_to<X, int32_t>(x, y, n, 1, INT32_MIN, INT32_MAX, stream); break;
    case 2: cast_to<X, int64_t>(x, y, n, 1, INT64_MIN, INT64_MAX, stream); break;
    default: cast_to<X, uint8_t>(x, y, n, 1, 0, UINT8_MAX, stream);
  }
}

extern "C" cudaError_t ct_launch_cast(const void *x, void *y, int from, int to, int64_t n,
                                      cudaStream_t stream) {
  static const size_t bytes[4] = {4, 4, 8, 1};
  if (from == to && from >= 0 && from < 4)
    return cudaMemcpyAsync(y, x, (size_t)n * bytes[from], cudaMemcpyDeviceToDevice, stream);
  switch (from) {
    case 0: cast_from<float>(x, y, to, n, stream); break;
    case 1: cast_from<int32_t>(x, y, to, n, stream); break;
    case 2: cast_from<int64_t>(x, y, to, n, stream); break;
    default: cast_from<uint8_t>(x, y, to, n, stream);
  }
  return cudaGetLastError();
}
