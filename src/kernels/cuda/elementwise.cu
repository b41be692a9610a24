/* Device code of the elementwise GPU kernels, the broadcasts and the sums
 * that undo them (gpu_elementwise.c, gpu_reduce.c): they share the strided
 * index maps of launch_basic.h. */
#include <limits.h>
#include <math.h>

#include "grid_stride.cuh"
#include "launch_basic.h"


/* i / d, with the remainder in *rem (i >= 0, d > 0); in 32 bits when both
 * fit, which is much cheaper than a 64-bit division. */
static __device__ __forceinline__ int64_t div_rem(int64_t i, int64_t d, int64_t *rem) {
  if ((((uint64_t)i | (uint64_t)d) >> 32) == 0) {
    uint32_t q = (uint32_t)i / (uint32_t)d;
    *rem = (int64_t)((uint32_t)i - q * (uint32_t)d);
    return q;
  }
  int64_t q = i / d;
  *rem = i - q * d;
  return q;
}

static __device__ __forceinline__ int64_t offset_of(int64_t i, ct_strided map) {
  int64_t offset = 0;
#pragma unroll
  for (int d = CT_LAUNCH_MAX_RANK - 1; d > 0; --d) {
    if (d < map.rank) {
      int64_t coord;
      i = div_rem(i, map.dims[d], &coord);
      offset += coord * map.strides[d];
    }
  }
  return offset + i * map.strides[0];
}

/* Offsets in a and b of element i; the maps share their dims. */
static __device__ __forceinline__ void offsets_of(int64_t i, ct_strided a, ct_strided b,
                                                  int64_t *oa, int64_t *ob) {
  int64_t offset_a = 0, offset_b = 0;
#pragma unroll
  for (int d = CT_LAUNCH_MAX_RANK - 1; d > 0; --d) {
    if (d < a.rank) {
      int64_t coord;
      i = div_rem(i, a.dims[d], &coord);
      offset_a += coord * a.strides[d];
      offset_b += coord * b.strides[d];
    }
  }
  *oa = offset_a + i * a.strides[0];
  *ob = offset_b + i * b.strides[0];
}

/* ---- copies and fills ---- */

extern "C" cudaError_t ct_launch_zero_bytes(void *y, size_t nbytes, cudaStream_t stream) {
  return cudaMemsetAsync(y, 0, nbytes, stream);
}

__global__ static void fill_kernel(float *y, int64_t n, float value) {
  FOR_EACH(i, n) y[i] = value;
}

extern "C" cudaError_t ct_launch_fill_f32(float *y, int64_t n, float value, cudaStream_t stream) {
  fill_kernel<<<blocks_for(n), THREADS, 0, stream>>>(y, n, value);
  return cudaGetLastError();
}

extern "C" cudaError_t ct_launch_copy_bytes(void *dst, const void *src, size_t nbytes,
                                            cudaStream_t stream) {
  return cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToDevice, stream);
}

extern "C" cudaError_t ct_launch_copy_rows(void *dst, size_t dst_pitch, const void *src,
                                           size_t src_pitch, size_t row_bytes, int64_t rows,
                                           cudaStream_t stream) {
  if (rows == 1 || (dst_pitch == row_bytes && src_pitch == row_bytes))
    return ct_launch_copy_bytes(dst, src, (size_t)rows * row_bytes, stream);
  /* 2D copies take pitches up to cudaDevAttrMaxPitch (2^31 - 1); longer rows
   * go one by one, and are few. */
  if (dst_pitch <= INT_MAX && src_pitch <= INT_MAX)
    return cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, row_bytes, (size_t)rows,
                             cudaMemcpyDeviceToDevice, stream);
  for (int64_t r = 0; r < rows; ++r) {
    cudaError_t err =
        ct_launch_copy_bytes((char *)dst + (size_t)r * dst_pitch,
                             (const char *)src + (size_t)r * src_pitch, row_bytes, stream);
    if (err != cudaSuccess) return err;
  }
  return cudaSuccess;
}

/* ---- unary ----
 * Each op's formula is a specialization of unary_formula: an op launched
 * without one is an incomplete type, so it does not compile. */

template <ct_unary_op OP>
struct unary_formula;
template <>
struct unary_formula<CT_UNARY_NEG> {
  static __device__ __forceinline__ float of(float x) { return -x; }
};
template <>
struct unary_formula<CT_UNARY_RELU> {
  static __device__ __forceinline__ float of(float x) { return x > 0.0f ? x : 0.0f; }
};
template <>
struct unary_formula<CT_UNARY_SIGMOID> {
  static __device__ __forceinline__ float of(float x) { return 1.0f / (1.0f + expf(-x)); }
};
template <>
struct unary_formula<CT_UNARY_TANH> {
  static __device__ __forceinline__ float of(float x) { return tanhf(x); }
};

template <ct_unary_op OP>
__global__ static void unary_kernel(const float *x, float *y, int64_t n) {
  FOR_EACH(i, n) y[i] = unary_formula<OP>::of(x[i]);
}

extern "C" cudaError_t ct_launch_unary(ct_unary_op op, const float *x, float *y, int64_t n,
                                       cudaStream_t stream) {
  const unsigned blocks = blocks_for(n);
  switch (op) {
    case CT_UNARY_NEG:
      unary_kernel<CT_UNARY_NEG><<<blocks, THREADS, 0, stream>>>(x, y, n);
      return cudaGetLastError();
    case CT_UNARY_RELU:
      unary_kernel<CT_UNARY_RELU><<<blocks, THREADS, 0, stream>>>(x, y, n);
      return cudaGetLastError();
    case CT_UNARY_SIGMOID:
      unary_kernel<CT_UNARY_SIGMOID><<<blocks, THREADS, 0, stream>>>(x, y, n);
      return cudaGetLastError();
    case CT_UNARY_TANH:
      unary_kernel<CT_UNARY_TANH><<<blocks, THREADS, 0, stream>>>(x, y, n);
      return cudaGetLastError();
  }
  /* not a ct_unary_op (a listed op without its case fails -Wswitch) */
  return cudaErrorInvalidValue;
}

/* ---- binary ----
 * As for unary ops: an op without its binary_formula does not compile. */

template <ct_binary_op OP>
struct binary_formula;
template <>
struct binary_formula<CT_BINARY_ADD> {
  static __device__ __forceinline__ float of(float a, float b) { return a + b; }
};
template <>
struct binary_formula<CT_BINARY_SUB> {
  static __device__ __forceinline__ float of(float a, float b) { return a - b; }
};
template <>
struct binary_formula<CT_BINARY_MUL> {
  static __device__ __forceinline__ float of(float a, float b) { return a * b; }
};
template <>
struct binary_formula<CT_BINARY_DIV> {
  static __device__ __forceinline__ float of(float a, float b) { return a / b; }
};
template <>
struct binary_formula<CT_BINARY_RELU_GRAD> {
  static __device__ __forceinline__ float of(float a, float b) { return b > 0.0f ? a : 0.0f; }
};
template <>
struct binary_formula<CT_BINARY_SIGMOID_GRAD> {
  static __device__ __forceinline__ float of(float a, float b) { return b * a * (1.0f - a); }
};
template <>
struct binary_formula<CT_BINARY_TANH_GRAD> {
  static __device__ __forceinline__ float of(float a, float b) {
    return b * (1.0f - __fmul_rn(a, a));
  }
};

/* The rows of ops/binary_math.h: their forward expressions, and partials. */
#define BINARY_MATH_FORMULA(P, Name, function, forward, da, db, flops, domain) \
  template <>                                                                 \
  struct binary_formula<CT_BINARY_##Name> {                                   \
    static __device__ __forceinline__ float of(float a, float b) { return (forward); } \
  };
CT_BINARY_MATH(BINARY_MATH_FORMULA, _)
#undef BINARY_MATH_FORMULA

/* Each y[i] reads its operands before writing: y may be a or b. */
template <ct_binary_op OP>
__global__ static void binary_same(const float *a, const float *b, float *y, int64_t n) {
  FOR_EACH(i, n) y[i] = binary_formula<OP>::of(a[i], b[i]);
}

template <ct_binary_op OP>
__global__ static void binary_repeat_b(const float *a, const float *b, float *y, int64_t n,
                                       int64_t block) {
  FOR_EACH(i, n) {
    int64_t j = 0;
    if (block > 1) div_rem(i, block, &j);
    y[i] = binary_formula<OP>::of(a[i], b[j]);
  }
}

template <ct_binary_op OP>
__global__ static void binary_repeat_a(const float *a, const float *b, float *y, int64_t n,
                                       int64_t block) {
  FOR_EACH(i, n) {
    int64_t j = 0;
    if (block > 1) div_rem(i, block, &j);
    y[i] = binary_formula<OP>::of(a[j], b[i]);
  }
}

template <ct_binary_op OP>
__global__ static void binary_strided(const float *a, const float *b, float *y, int64_t n,
                                      ct_strided a_map, ct_strided b_map) {
  FOR_EACH(i, n) {
    int64_t oa, ob;
    offsets_of(i, a_map, b_map, &oa, &ob);
    y[i] = binary_formula<OP>::of(a[oa], b[ob]);
  }
}

template <ct_binary_op OP>
static cudaError_t launch_binary(const float *a, const float *b, float *y, int64_t n,
                                 const ct_binary_layout *layout, cudaStream_t stream) {
  const unsigned blocks = blocks_for(n);
  switch (layout->kind) {
    case CT_OPERANDS_SAME:
      binary_same<OP><<<blocks, THREADS, 0, stream>>>(a, b, y, n);
      break;
    case CT_OPERANDS_REPEAT_B:
      binary_repeat_b<OP><<<blocks, THREADS, 0, stream>>>(a, b, y, n, layout->block);
      break;
    case CT_OPERANDS_REPEAT_A:
      binary_repeat_a<OP><<<blocks, THREADS, 0, stream>>>(a, b, y, n, layout->block);
      break;
    case CT_OPERANDS_STRIDED:
      binary_strided<OP><<<blocks, THREADS, 0, stream>>>(a, b, y, n, layout->a_map, layout->b_map);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

extern "C" cudaError_t ct_launch_binary(ct_binary_op op, const float *a, const float *b, float *y,
                                        int64_t n, const ct_binary_layout *layout,
                                        cudaStream_t stream) {
  switch (op) {
    case CT_BINARY_ADD:
      return launch_binary<CT_BINARY_ADD>(a, b, y, n, layout, stream);
    case CT_BINARY_SUB:
      return launch_binary<CT_BINARY_SUB>(a, b, y, n, layout, stream);
    case CT_BINARY_MUL:
      return launch_binary<CT_BINARY_MUL>(a, b, y, n, layout, stream);
    case CT_BINARY_DIV:
      return launch_binary<CT_BINARY_DIV>(a, b, y, n, layout, stream);
    case CT_BINARY_RELU_GRAD:
      return launch_binary<CT_BINARY_RELU_GRAD>(a, b, y, n, layout, stream);
    case CT_BINARY_SIGMOID_GRAD:
      return launch_binary<CT_BINARY_SIGMOID_GRAD>(a, b, y, n, layout, stream);
    case CT_BINARY_TANH_GRAD:
      return launch_binary<CT_BINARY_TANH_GRAD>(a, b, y, n, layout, stream);
#define BINARY_MATH_CASE(P, Name, function, forward, da, db, flops, domain) \
  case CT_BINARY_##Name:                                                    \
    return launch_binary<CT_BINARY_##Name>(a, b, y, n, layout, stream);
    CT_BINARY_MATH(BINARY_MATH_CASE, _)
#undef BINARY_MATH_CASE
  }
  /* not a ct_binary_op (a listed op without its case fails -Wswitch) */
  return cudaErrorInvalidValue;
}

/* ---- the partials of the binary math ops (BinaryMathGrad) ----
 * partial<OP, SIDE>::of is row OP's da (SIDE 0) or db (SIDE 1). */

template <ct_binary_math_op OP, int SIDE>
struct partial;
#define PARTIAL_FORMULAS(P, Name, function, forward, da, db, flops, domain)           \
  template <>                                                                     \
  struct partial<CT_BINARY_MATH_##Name, 0> {                                      \
    static __device__ __forceinline__ float of(float a, float b, float dy) { return (da); } \
  };                                                                              \
  template <>                                                                     \
  struct partial<CT_BINARY_MATH_##Name, 1> {                                      \
    static __device__ __forceinline__ float of(float a, float b, float dy) { return (db); } \
  };
CT_BINARY_MATH(PARTIAL_FORMULAS, _)
#undef PARTIAL_FORMULAS

template <ct_binary_math_op OP, int SIDE>
__global__ static void partial_same(const float *a, const float *b, const float *dy, float *dx,
                                    int64_t n) {
  FOR_EACH(i, n) dx[i] = partial<OP, SIDE>::of(a[i], b[i], dy[i]);
}

template <ct_binary_math_op OP, int SIDE>
__global__ static void partial_strided(const float *a, const float *b, const float *dy, float *dx,
                                       int64_t n, ct_strided a_map, ct_strided b_map) {
  FOR_EACH(i, n) {
    int64_t oa, ob;
    offsets_of(i, a_map, b_map, &oa, &ob);
    dx[i] = partial<OP, SIDE>::of(a[oa], b[ob], dy[i]);
  }
}

template <ct_binary_math_op OP, int SIDE>
static cudaError_t launch_partial(const float *a, const float *b, const float *dy, float *dx,
                                  int64_t n, int strided, const ct_strided *a_map,
                                  const ct_strided *b_map, cudaStream_t stream) {
  if (strided)
    partial_strided<OP, SIDE><<<blocks_for(n), THREADS, 0, stream>>>(a, b, dy, dx, n, *a_map,
                                                                     *b_map);
  else
    partial_same<OP, SIDE><<<blocks_for(n), THREADS, 0, stream>>>(a, b, dy, dx, n);
  return cudaGetLastError();
}

extern "C" cudaError_t ct_launch_binary_math_grad(int op, int side, const float *a,
                                                  const float *b, const float *dy, float *dx,
                                                  int64_t n, int strided,
                                                  const ct_strided *a_map,
                                                  const ct_strided *b_map, cudaStream_t stream) {
  switch ((ct_binary_math_op)op) {
#define PARTIAL_CASE(P, Name, function, forward, da, db, flops, domain)                        \
  case CT_BINARY_MATH_##Name:                                                                \
    return side == 0 ? launch_partial<CT_BINARY_MATH_##Name, 0>(a, b, dy, dx, n, strided,     \
                                                                 a_map, b_map, stream)       \
                     : launch_partial<CT_BINARY_MATH_##Name, 1>(a, b, dy, dx, n, strided,     \
                                                                 a_map, b_map, stream);
    CT_BINARY_MATH(PARTIAL_CASE, _)
#undef PARTIAL_CASE
    case CT_BINARY_MATH_COUNT:
      break;
  }
  return cudaErrorInvalidValue;
}

/* ---- strided gathers and scatters (a slice and its gradient) ---- */

template <typename T>
__global__ static void gather_kernel(const T *x, T *y, int64_t n, ct_strided map) {
  FOR_EACH(i, n) y[i] = x[offset_of(i, map)];
}

template <typename T>
__global__ static void scatter_kernel(const T *x, T *y, int64_t n, ct_strided map) {
  FOR_EACH(i, n) y[offset_of(i, map)] = x[i];
}

template <typename T>
static cudaError_t launch_strided_copy(const void *x, void *y, int64_t n, const ct_strided *map,
                                       int gather, cudaStream_t stream) {
  if (gather)
    gather_kernel<T><<<blocks_for(n), THREADS, 0, stream>>>((const T *)x, (T *)y, n, *map);
  else
    scatter_kernel<T><<<blocks_for(n), THREADS, 0, stream>>>((const T *)x, (T *)y, n, *map);
  return cudaGetLastError();
}

extern "C" cudaError_t ct_launch_strided_copy(const void *x, void *y, size_t element_size,
                                              int64_t n, const ct_strided *map, int gather,
                                              cudaStream_t stream) {
  switch (element_size) {
    case 1: return launch_strided_copy<uint8_t>(x, y, n, map, gather, stream);
    case 2: return launch_strided_copy<uint16_t>(x, y, n, map, gather, stream);
    case 4: return launch_strided_copy<uint32_t>(x, y, n, map, gather, stream);
    case 8: return launch_strided_copy<uint64_t>(x, y, n, map, gather, stream);
  }
  return cudaErrorInvalidValue;
}

/* ---- broadcast, AddN, dropout ---- */

__global__ static void broadcast_kernel(const float *x, float *y, int64_t n, ct_strided x_map,
                                        float scale) {
  FOR_EACH(i, n) y[i] = x[offset_of(i, x_map)] * scale;
}

extern "C" cudaError_t ct_launch_broadcast(const float *x, float *y, int64_t n,
                                           const ct_strided *x_map, float scale,
                                           cudaStream_t stream) {
  broadcast_kernel<<<blocks_for(n), THREADS, 0, stream>>>(x, y, n, *x_map, scale);
  return cudaGetLastError();
}

typedef struct add_n_inputs {
  const float *x[CT_LAUNCH_ADD_N_MAX];
} add_n_inputs;

__global__ static void add_n_kernel(add_n_inputs in, int k, float *y, int64_t n) {
  FOR_EACH(i, n) {
    float sum = in.x[0][i];
    for (int j = 1; j < k; ++j) sum += in.x[j][i];
    y[i] = sum;
  }
}

extern "C" cudaError_t ct_launch_add_n(const float *const *x, int k, float *y, int64_t n,
                                       cudaStream_t stream) {
  if (k < 1 || k > CT_LAUNCH_ADD_N_MAX) return cudaErrorInvalidValue;
  add_n_inputs in;
  for (int j = 0; j < k; ++j) in.x[j] = x[j];
  add_n_kernel<<<blocks_for(n), THREADS, 0, stream>>>(in, k, y, n);
  return cudaGetLastError();
}

/* ct_mix64 (graph_internal.h): the splitmix64 finalizer. */
static __device__ __forceinline__ uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

__global__ static void dropout_kernel(const float *x, float *y, int64_t n, uint64_t seed_stream,
                                      uint64_t step, const int64_t *first_example,
                                      int64_t example_size, const float *rate_input, float rate) {
  const int64_t first = first_example ? *first_example * example_size : 0;
  float r = rate_input ? *rate_input : rate;
  if (!(r >= 0.0f)) r = 0.0f;
  if (r >= 1.0f) r = 0x1.fffffep-1f; /* the largest float below 1 */
  /* as the CPU kernel computes them (dropout.c) */
  const uint32_t threshold = (uint32_t)((double)r * 4294967296.0);
  const float scale = 1.0f / (1.0f - r);
  FOR_EACH(i, n) {
    const uint64_t h = mix64(seed_stream ^ mix64(step ^ mix64((uint64_t)(first + i))));
    const float v = x[i];
    y[i] = (uint32_t)(h >> 32) >= threshold ? v * scale : 0.0f;
  }
}

extern "C" cudaError_t ct_launch_dropout(const float *x, float *y, int64_t n, uint64_t seed_stream,
                                         uint64_t step, const int64_t *first_example,
                                         int64_t example_size, const float *rate_input, float rate,
                                         cudaStream_t stream) {
  dropout_kernel<<<blocks_for(n), THREADS, 0, stream>>>(x, y, n, seed_stream, step, first_example,
                                                        example_size, rate_input, rate);
  return cudaGetLastError();
}

/* ---- reductions ----
 * Output j's k inputs are split into `chunks` consecutive runs of `chunk`
 * (the last one shorter). With one chunk the sum goes straight to y; else
 * each chunk's sum goes to scratch[j * chunks + c] and a second pass adds
 * those. The split depends on the shapes alone, and every sum runs in a
 * fixed order (sequential loops, fixed warp trees), so the bits are the
 * same on every run.
 *
 * Two layouts: when x is contiguous along the outputs (a bias gradient:
 * [rows, m] -> [m]), one thread per (output, chunk), consecutive threads on
 * consecutive outputs so that loads coalesce; else (the reduced axis is the
 * innermost: a row sum) one warp per (output, chunk), lanes on consecutive
 * elements. */

enum {
  COLUMN_THREADS = 1 << 18, /* threads the column layout aims for */
  COLUMN_MIN_CHUNK = 32,
  ROW_WARPS = 1 << 13, /* warps the row layout aims for */
  ROW_MIN_CHUNK = 1024,
  WARPS_PER_BLOCK = THREADS / WARP
};

typedef struct reduce_plan {
  int columns;
  int64_t chunks, chunk;
} reduce_plan;

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

static reduce_plan plan_of(const ct_reduce_map *map) {
  reduce_plan p;
  p.columns = map->m > 1 && map->kept_x.strides[map->kept_x.rank - 1] == 1;
  int64_t chunks = p.columns ? ceil_div(COLUMN_THREADS, map->m) : ceil_div(ROW_WARPS, map->m);
  const int64_t most = ceil_div(map->k, p.columns ? COLUMN_MIN_CHUNK : ROW_MIN_CHUNK);
  if (chunks > most) chunks = most;
  if (chunks < 1) chunks = 1;
  p.chunk = ceil_div(map->k, chunks);
  p.chunks = ceil_div(map->k, p.chunk);
  return p;
}

static unsigned warp_blocks(int64_t warps) {
  int64_t blocks = ceil_div(warps, WARPS_PER_BLOCK);
  return (unsigned)(blocks < MAX_BLOCKS ? blocks : (int64_t)MAX_BLOCKS);
}

/* Lane 0 gets the warp's sum, added in a fixed tree. */
static __device__ __forceinline__ float warp_sum(float v) {
  for (int offset = WARP / 2; offset > 0; offset /= 2)
    v += __shfl_down_sync(0xffffffffu, v, offset);
  return v;
}

__global__ static void reduce_columns(const float *x, float *y, float *partial, ct_reduce_map map,
                                      int64_t chunks, int64_t chunk, float scale) {
  FOR_EACH(t, map.m * chunks) {
    int64_t j;
    const int64_t c = div_rem(t, map.m, &j);
    const float *base = x + offset_of(j, map.kept_x);
    const int64_t r0 = c * chunk, r1 = r0 + chunk < map.k ? r0 + chunk : map.k;
    float sum = 0.0f;
    for (int64_t r = r0; r < r1; ++r) sum += base[offset_of(r, map.reduced)];
    if (chunks == 1)
      y[offset_of(j, map.kept_y)] = sum * scale;
    else
      partial[j * chunks + c] = sum;
  }
}

__global__ static void reduce_rows(const float *x, float *y, float *partial, ct_reduce_map map,
                                   int64_t chunks, int64_t chunk, float scale) {
  const int lane = threadIdx.x % WARP;
  const int64_t first = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / WARP;
  const int64_t warps = (int64_t)gridDim.x * blockDim.x / WARP;
  /* s is the same in every lane of a warp: all lanes reach the shuffles */
  for (int64_t s = first; s < map.m * chunks; s += warps) {
    int64_t c;
    const int64_t j = div_rem(s, chunks, &c);
    const float *base = x + offset_of(j, map.kept_x);
    const int64_t r0 = c * chunk, r1 = r0 + chunk < map.k ? r0 + chunk : map.k;
    float sum = 0.0f;
    for (int64_t r = r0 + lane; r < r1; r += WARP) sum += base[offset_of(r, map.reduced)];
    sum = warp_sum(sum);
    if (lane == 0) {
      if (chunks == 1)
        y[offset_of(j, map.kept_y)] = sum * scale;
      else
        partial[s] = sum;
    }
  }
}

__global__ static void reduce_partials(const float *partial, float *y, int64_t m, int64_t chunks,
                                       ct_strided kept_y, float scale) {
  const int lane = threadIdx.x % WARP;
  const int64_t first = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / WARP;
  const int64_t warps = (int64_t)gridDim.x * blockDim.x / WARP;
  for (int64_t j = first; j < m; j += warps) {
    float sum = 0.0f;
    for (int64_t c = lane; c < chunks; c += WARP) sum += partial[j * chunks + c];
    sum = warp_sum(sum);
    if (lane == 0) y[offset_of(j, kept_y)] = sum * scale;
  }
}

extern "C" int64_t ct_reduce_scratch_floats(const ct_reduce_map *map) {
  const reduce_plan p = plan_of(map);
  return p.chunks > 1 ? map->m * p.chunks : 0;
}

extern "C" cudaError_t ct_launch_reduce(const float *x, float *y, const ct_reduce_map *map,
                                        float scale, float *scratch, cudaStream_t stream) {
  const reduce_plan p = plan_of(map);
  const int64_t segments = map->m * p.chunks;
  if (p.columns)
    reduce_columns<<<blocks_for(segments), THREADS, 0, stream>>>(x, y, scratch, *map, p.chunks,
                                                                 p.chunk, scale);
  else
    reduce_rows<<<warp_blocks(segments), THREADS, 0, stream>>>(x, y, scratch, *map, p.chunks,
                                                               p.chunk, scale);
  if (p.chunks > 1) {
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) return err;
    reduce_partials<<<warp_blocks(map->m), THREADS, 0, stream>>>(scratch, y, map->m, p.chunks,
                                                                 map->kept_y, scale);
  }
  return cudaGetLastError();
}

/* ---- Max and Min over axes, and their gradient: one thread per output,
 * its reduced elements in order, as the CPU walks them (reduce.c) ---- */

__global__ static void max_min_kernel(const float *x, float *y, int64_t m, int64_t k,
                                      ct_strided kept, ct_strided reduced, int is_max) {
  FOR_EACH(j, m) {
    const float *base = x + offset_of(j, kept);
    float v = is_max ? -INFINITY : INFINITY;
    for (int64_t r = 0; r < k; ++r) {
      const float e = base[offset_of(r, reduced)];
      if ((is_max ? e > v : e < v) || e != e) v = e;
    }
    y[j] = v;
  }
}

extern "C" cudaError_t ct_launch_max_min(const float *x, float *y, int64_t m, int64_t k,
                                         const ct_strided *kept, const ct_strided *reduced,
                                         int is_max, cudaStream_t stream) {
  max_min_kernel<<<blocks_for(m), THREADS, 0, stream>>>(x, y, m, k, *kept, *reduced, is_max);
  return cudaGetLastError();
}

__global__ static void max_min_grad_kernel(const float *x, const float *y, const float *dy,
                                           float *dx, int64_t m, int64_t k, ct_strided kept,
                                           ct_strided reduced) {
  FOR_EACH(j, m) {
    const int64_t base = offset_of(j, kept);
    int64_t ties = 0;
    for (int64_t r = 0; r < k; ++r) ties += x[base + offset_of(r, reduced)] == y[j];
    for (int64_t r = 0; r < k; ++r) {
      const int64_t i = base + offset_of(r, reduced);
      dx[i] = __fmul_rn((x[i] == y[j] ? 1.0f : 0.0f) / (float)ties, dy[j]);
    }
  }
}

extern "C" cudaError_t ct_launch_max_min_grad(const float *x, const float *y, const float *dy,
                                              float *dx, int64_t m, int64_t k,
                                              const ct_strided *kept, const ct_strided *reduced,
                                              cudaStream_t stream) {
  max_min_grad_kernel<<<blocks_for(m), THREADS, 0, stream>>>(x, y, dy, dx, m, k, *kept,
                                                             *reduced);
  return cudaGetLastError();
}
