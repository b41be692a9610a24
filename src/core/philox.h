/* TensorFlow's random streams: the Philox-4x32-10 counter generator, keyed
 * from an op's (seed, seed2) as TensorFlow's GuardedPhiloxRandom keys it, and
 * the three float32 distributions its CPU kernels draw from it (RandomUniform,
 * RandomStandardNormal, TruncatedNormal), with TensorFlow's float math, so that
 * the same seeds give TensorFlow's values bit for bit.
 *
 * A fill writes what TensorFlow's kernel writes on its first run for those
 * seeds, whatever the number of shards TensorFlow splits it into: uniform and
 * normal values are one sequential stream (value i from the i-th uint32);
 * truncated normal values come in groups of four, group g drawing from the
 * stream skipped by 256 g counters (TensorFlow reserves 256 draws per value,
 * so that a shard's output does not depend on the shards before it). */
#ifndef CTOWER_CORE_PHILOX_H
#define CTOWER_CORE_PHILOX_H

#include <stdint.h>

typedef struct ct_philox {
  uint32_t counter[4]; /* 128-bit block counter, word 0 lowest */
  uint32_t key[2];     /* 64-bit key */
} ct_philox;

/* Key = seed (low word first), counter = seed2 << 64: TensorFlow's
 * PhiloxRandom(seed, seed2). */
void ct_philox_init(ct_philox *p, uint64_t seed, uint64_t seed2);
/* The next block of four uint32s; advances the counter by one. */
void ct_philox_next(ct_philox *p, uint32_t out[4]);
/* Advances the counter by count blocks. */
void ct_philox_skip(ct_philox *p, uint64_t count);

/* x's low 23 bits as the mantissa of a float in [1, 2), minus 1: [0, 1). */
float ct_philox_uint32_to_float(uint32_t x);
/* TensorFlow's BoxMullerFloat: two uint32s to two standard normal floats. */
void ct_philox_box_muller(uint32_t x0, uint32_t x1, float *f0, float *f1);

/* n values of U[0, 1), N(0, 1), or N(0, 1) redrawn until |x| < 2, as
 * TensorFlow's kernels give them for (seed, seed2). */
void ct_philox_fill_uniform(uint64_t seed, uint64_t seed2, float *out, int64_t n);
void ct_philox_fill_normal(uint64_t seed, uint64_t seed2, float *out, int64_t n);
void ct_philox_fill_truncated_normal(uint64_t seed, uint64_t seed2, float *out, int64_t n);

#endif
