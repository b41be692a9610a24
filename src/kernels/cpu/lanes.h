/* A vector register of floats as wide as the build's CPU has (wider
 * vectors, split by the compiler, ran the AVX2 build's batch norms about
 * three times slower), and its comparisons: -1 (all bits) where true, 0
 * where false. GCC's vector extensions: the same code builds for AVX-512,
 * AVX2 or SSE. */
#ifndef CTOWER_KERNELS_CPU_LANES_H
#define CTOWER_KERNELS_CPU_LANES_H

#include <stdint.h>

#if defined(__AVX512F__)
enum { LANES = 16 };
#elif defined(__AVX__)
enum { LANES = 8 };
#else
enum { LANES = 4 };
#endif
typedef float lanes __attribute__((vector_size(LANES * sizeof(float))));
typedef int32_t lane_ints __attribute__((vector_size(LANES * sizeof(int32_t))));

/* Each lane of if_true where mask is true, of if_false elsewhere. */
static inline lanes lanes_select(lane_ints mask, lanes if_true, lanes if_false) {
  return (lanes)((mask & (lane_ints)if_true) | (~mask & (lane_ints)if_false));
}

#endif
