// Host emulation of CUDA device code: force-included (-include) when the
// project's .cu files, translated by translate_cu.py, compile as host C++.
#pragma once
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdint.h>

#include <cstring>
#include <functional>
#include <tuple>
#include <type_traits>
#include <utility>

#undef __global__
#undef __device__
#undef __host__
#undef __forceinline__
#undef __shared__
#undef __restrict__
#undef __launch_bounds__
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static thread_local
#define __restrict__ __restrict
#define __launch_bounds__(...)

struct emu_thread_ctx {
  uint3 tid, bid;
  dim3 bdim, gdim;
};
extern thread_local emu_thread_ctx *emu_ctx;
#define threadIdx (emu_ctx->tid)
#define blockIdx (emu_ctx->bid)
#define blockDim (emu_ctx->bdim)
#define gridDim (emu_ctx->gdim)

void __syncthreads(void);
// Exchange within the calling thread's warp: every lane of `mask` offers
// `bits` and gets the value lane `src_lane` offered (its own when out of range).
uint64_t emu_warp_exchange(unsigned mask, uint64_t bits, int src_lane);

template <class T>
static inline T emu_shfl(unsigned mask, T v, int src_lane) {
  static_assert(sizeof(T) <= 8, "shuffle of a value over 8 bytes");
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof v);
  bits = emu_warp_exchange(mask, bits, src_lane);
  T out;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}
static inline int emu_lane(void) {
  const unsigned linear =
      threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  return (int)(linear % 32);
}
template <class T>
static inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask) {
  return emu_shfl(mask, v, emu_lane() ^ lane_mask);
}
template <class T>
static inline T __shfl_down_sync(unsigned mask, T v, unsigned delta) {
  const int src = emu_lane() + (int)delta;
  return emu_shfl(mask, v, src < 32 ? src : emu_lane());
}

// No contraction into an FMA: the volatile store forces the rounding.
static inline float __fmul_rn(float a, float b) {
  volatile float p = a * b;
  return p;
}

template <class A, class B>
static inline typename std::common_type<A, B>::type max(A a, B b) {
  typedef typename std::common_type<A, B>::type C;
  return (C)a > (C)b ? (C)a : (C)b;
}
template <class A, class B>
static inline typename std::common_type<A, B>::type min(A a, B b) {
  typedef typename std::common_type<A, B>::type C;
  return (C)a < (C)b ? (C)a : (C)b;
}

struct emu_cfg {
  dim3 grid, block;
  size_t shared;
  cudaStream_t stream;
};
static inline emu_cfg emu_config(dim3 grid, dim3 block, size_t shared = 0,
                                 cudaStream_t stream = 0) {
  return emu_cfg{grid, block, shared, stream};
}
// Validates the launch (a bad one sets the error cudaGetLastError returns)
// and queues the grid on the stream; `thread_body` runs once per thread.
void emu_launch_erased(const emu_cfg &cfg, std::function<void()> thread_body);

// kernel<<<cfg>>>(args): the arguments are converted to the parameters'
// types now, as a launch does, and kept by value until the kernel runs.
template <class... P, class... A>
static inline void emu_launch(const emu_cfg &cfg, void (*kernel)(P...), A &&...args) {
  static_assert(sizeof...(P) == sizeof...(A), "kernel argument count");
  std::tuple<typename std::decay<P>::type...> values(std::forward<A>(args)...);
  emu_launch_erased(cfg, [kernel, values]() { std::apply(kernel, values); });
}
