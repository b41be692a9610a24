/* Naive loops of the gradient compressions of ctower/ops.h, written from
 * the format alone (the kernels share kernels/compress_math.h; these share
 * nothing with it), and the check of the kernels of a device against them,
 * which tests/kernels (CPU) and tests/gpu (CUDA, and its emulator) run. */
#ifndef CTOWER_TEST_COMPRESS_REFERENCE_H
#define CTOWER_TEST_COMPRESS_REFERENCE_H

#include "test_support.h"

/* Packs n values x (onebit: x + residual, and residual becomes what the
 * packing lost) as `c` packs them, into out (ct_compressed_bytes). 16
 * bits: the nearest of the 65536 values (ties to the even code). */
void ct_naive_compress(ct_compression c, const float *x, float *residual, int64_t n,
                       uint8_t *out);
void ct_naive_decompress(ct_compression c, const uint8_t *in, int64_t n, float *y);

/* Values for step `step` of the check: every magnitude 16 bits hold (and
 * zeros, both signs, ties of bf16 and fp16 at the start), a third of them
 * negative, and a column of each sign only and one of zeros. */
void ct_test_compression_inputs(float *x, int64_t n, int step);

/* Runs `steps` steps of CompressGradient then DecompressGradient with every
 * node on `device`, x drawn anew each step and onebit's residual variable
 * carried from step to step, against the naive loops: fails the test at
 * the first packed byte, unpacked value or residual that differs. */
void ct_test_compression_matches_naive(const char *device, ct_compression c, int64_t n,
                                       int steps);

#endif
