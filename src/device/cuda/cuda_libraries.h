/* The CUDA libraries ctower loads when a GPU first needs them
 * (cuda_libraries.c; on the GPU emulator, tests/gpu/emulator/libraries.cc):
 * whether each is there, and where it came from. */
#ifndef CTOWER_CUDA_LIBRARIES_H
#define CTOWER_CUDA_LIBRARIES_H

#include <stddef.h>

#include "ctower/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ct_cuda_library {
  CT_CUDA_CUBLAS,
  CT_CUDA_CUDNN,
  CT_CUDA_NCCL,
  CT_CUDA_LIBRARY_COUNT
} ct_cuda_library;

/* Loads `library` (once per process; the search: library_search.h) and
 * returns 0, or fills status (UNAVAILABLE) with one sentence: `who` needs
 * it (an op's name), which file was not found, where the search looked,
 * and what to do. */
int ct_cuda_library_require(ct_cuda_library library, const char *who, ct_status *status);

/* One line about `library`, loading it first: "cuDNN 9.13.0 from
 * /usr/lib/x86_64-linux-gnu/libcudnn.so.9", or "cuDNN: libcudnn.so.9 was
 * not found: looked in ...". */
void ct_cuda_library_describe(ct_cuda_library library, char *text, size_t size);

#ifdef __cplusplus
}
#endif

#endif
