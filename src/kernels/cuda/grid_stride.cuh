/* Launch geometry of the grid-stride kernels of the .cu files: 256-thread
 * blocks, at most MAX_BLOCKS of them, each thread looping over the elements
 * i, i + the grid's size, ... */
#ifndef CTOWER_CUDA_GRID_STRIDE_CUH
#define CTOWER_CUDA_GRID_STRIDE_CUH

#include <stdint.h>

enum { THREADS = 256, MAX_BLOCKS = 8192, WARP = 32 };

static inline unsigned blocks_for(int64_t threads) {
  int64_t blocks = (threads + THREADS - 1) / THREADS;
  return (unsigned)(blocks < MAX_BLOCKS ? blocks : (int64_t)MAX_BLOCKS);
}

#define FOR_EACH(i, n)                                                      \
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n); \
       i += (int64_t)gridDim.x * blockDim.x)

#endif
