/* Device code of gradient compression (gpu_compress.c): the arithmetic of
 * kernels/compress_math.h, which the CPU kernels run too, so the packed
 * bits are the CPU's. 16 bits: one thread per value; ONEBIT: one thread
 * per column to pack (its sums in the CPU's order), one per value to
 * unpack. */
#include "grid_stride.cuh"
#include "kernels/compress_math.h"
#include "launch_basic.h"

__global__ static void pack_bf16_kernel(const float *x, uint16_t *out, int64_t n) {
  FOR_EACH(i, n) out[i] = ct_bf16_from_f32(x[i]);
}

__global__ static void pack_fp16_kernel(const float *x, uint16_t *out, int64_t n) {
  FOR_EACH(i, n) out[i] = ct_fp16_from_f32(x[i]);
}

__global__ static void pack_onebit_kernel(const float *x, float *r, uint8_t *out, int64_t n,
                                          int64_t columns) {
  FOR_EACH(k, columns) {
    const int64_t first = k * CT_ONEBIT_COLUMN;
    const int64_t column = CT_ONEBIT_COLUMN;
    const int count = (int)(n - first < column ? n - first : column);
    ct_onebit_pack_column(x + first, r ? r + first : NULL, count,
                          out + k * CT_ONEBIT_COLUMN_BYTES);
  }
}

__global__ static void unpack_bf16_kernel(const uint16_t *in, float *y, int64_t n) {
  FOR_EACH(i, n) y[i] = ct_f32_from_bf16(in[i]);
}

__global__ static void unpack_fp16_kernel(const uint16_t *in, float *y, int64_t n) {
  FOR_EACH(i, n) y[i] = ct_f32_from_fp16(in[i]);
}

__global__ static void unpack_onebit_kernel(const uint8_t *in, float *y, int64_t n) {
  FOR_EACH(i, n) {
    y[i] = ct_onebit_value(in + i / CT_ONEBIT_COLUMN * CT_ONEBIT_COLUMN_BYTES,
                           (int)(i % CT_ONEBIT_COLUMN));
  }
}

extern "C" cudaError_t ct_launch_compress(int compression, const float *x, float *residual,
                                          uint8_t *out, int64_t n, cudaStream_t stream) {
  uint16_t *half = (uint16_t *)out;
  if (compression == CT_COMPRESSION_ONEBIT) {
    const int64_t columns = (n + CT_ONEBIT_COLUMN - 1) / CT_ONEBIT_COLUMN;
    pack_onebit_kernel<<<blocks_for(columns), THREADS, 0, stream>>>(x, residual, out, n, columns);
  } else if (compression == CT_COMPRESSION_BF16) {
    pack_bf16_kernel<<<blocks_for(n), THREADS, 0, stream>>>(x, half, n);
  } else {
    pack_fp16_kernel<<<blocks_for(n), THREADS, 0, stream>>>(x, half, n);
  }
  return cudaGetLastError();
}

extern "C" cudaError_t ct_launch_decompress(int compression, const uint8_t *in, float *y,
                                            int64_t n, cudaStream_t stream) {
  const uint16_t *half = (const uint16_t *)in;
  if (compression == CT_COMPRESSION_ONEBIT)
    unpack_onebit_kernel<<<blocks_for(n), THREADS, 0, stream>>>(in, y, n);
  else if (compression == CT_COMPRESSION_BF16)
    unpack_bf16_kernel<<<blocks_for(n), THREADS, 0, stream>>>(half, y, n);
  else
    unpack_fp16_kernel<<<blocks_for(n), THREADS, 0, stream>>>(half, y, n);
  return cudaGetLastError();
}
