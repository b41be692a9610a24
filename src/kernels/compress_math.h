/* The arithmetic of gradient compression (ctower/ops.h, ct_compression),
 * one definition for the CPU kernels (kernels/cpu/compress.c) and the CUDA
 * ones (kernels/cuda/compress.cu), so that both pack the same bits: f32 to
 * bf16 and fp16 and back, in integer arithmetic (rounded to nearest even,
 * whatever the FPU's denormal modes), and 1-bit SGD's packing of one
 * column, whose sums run in one order, value by value. */
#ifndef CTOWER_KERNELS_COMPRESS_MATH_H
#define CTOWER_KERNELS_COMPRESS_MATH_H

#include <stdint.h>
#include <string.h>

#include "ctower/ops.h"

#if defined(__CUDACC__)
#define CT_HOST_DEVICE __host__ __device__
#else
#define CT_HOST_DEVICE
#endif

static inline CT_HOST_DEVICE uint32_t ct_f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static inline CT_HOST_DEVICE float ct_f32_of_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* bfloat16: the high half of the f32, rounded to nearest even; NaN stays a
 * (quiet) NaN. */
static inline CT_HOST_DEVICE uint16_t ct_bf16_from_f32(float f) {
  const uint32_t x = ct_f32_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
  return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

static inline CT_HOST_DEVICE float ct_f32_from_bf16(uint16_t h) {
  return ct_f32_of_bits((uint32_t)h << 16);
}

/* IEEE half, rounded to nearest even: past 65504 (from 65520 on) infinite,
 * below 2^-14 subnormal, below 2^-25 zero. Every case is computed and one
 * chosen, without a branch on the value. */
static inline CT_HOST_DEVICE uint16_t ct_fp16_from_f32(float f) {
  const uint32_t x = ct_f32_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000u, a = x & 0x7fffffffu;
  /* a normal half: round at bit 13, rebias 127 to 15 (wraps, unused, below) */
  const uint32_t normal = (a + 0x0fffu + ((a >> 13) & 1u) - 0x38000000u) >> 13;
  /* a subnormal half: m 2^(e - 150) in units of 2^-24, shifted right by
   * 126 - e (kept in 1 .. 31 where it is unused) */
  const int e = (int)(a >> 23), wanted = 126 - e;
  const uint32_t shift = (uint32_t)(wanted < 1 ? 1 : wanted > 31 ? 31 : wanted);
  const uint32_t m = (a & 0x7fffffu) | 0x800000u;
  const uint32_t rest = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
  const uint32_t kept = m >> shift;
  const uint32_t subnormal = kept + ((uint32_t)(rest > half) | ((uint32_t)(rest == half) & kept & 1u));
  const uint32_t h = a > 0x7f800000u    ? 0x7e00u /* NaN */
                     : a >= 0x477ff000u ? 0x7c00u /* infinite, or rounds to it */
                     : a >= 0x38800000u ? normal
                     : a >= 0x33000000u ? subnormal
                                        : 0u;
  return (uint16_t)(sign | h);
}

/* The position of x's highest set bit (x > 0). */
static inline CT_HOST_DEVICE int ct_top_bit(uint32_t x) {
#if defined(__CUDA_ARCH__)
  return 31 - __clz((int)x);
#else
  return 31 - __builtin_clz(x);
#endif
}

/* Every case computed and one chosen, without a branch on the value (a
 * gradient's halves are often subnormal): a subnormal m 2^-24 with its
 * highest bit at k is 1.f 2^(k - 24). */
static inline CT_HOST_DEVICE float ct_f32_from_fp16(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  const uint32_t k = (uint32_t)ct_top_bit(m | 1u);
  const uint32_t special = sign | 0x7f800000u | (m << 13);
  const uint32_t normal = sign | ((e + 112u) << 23) | (m << 13);
  const uint32_t subnormal = sign | ((k + 103u) << 23) | ((m << (23u - k)) & 0x7fffffu);
  return ct_f32_of_bits(e == 0x1fu ? special : e != 0 ? normal : m != 0 ? subnormal : sign);
}

/* 1-bit SGD's packing of one column of `count` (1 .. CT_ONEBIT_COLUMN)
 * values v = x + r (r: the residual, NULL for none): into out
 * (CT_ONEBIT_COLUMN_BYTES)
 * the mean of the values >= 0, the mean of those < 0 (0 for none), and a
 * bit per value, set for >= 0, 32 to a word; r (when not NULL) becomes
 * v less its reconstruction. Each sum runs in CT_ONEBIT_LANES lanes (lane
 * l: the values i with i % CT_ONEBIT_LANES == l, in order), which
 * ct_onebit_lanes_sum then adds pairwise, so that the CPU sums a column
 * in vector lanes and a GPU thread in the same order. Each value adds
 * itself to its sign's lane and +0 to the other's (which leaves that
 * lane's bits as they are: it never is -0), through masks, so that no
 * branch depends on a sign. */
static inline CT_HOST_DEVICE float ct_onebit_lanes_sum(const float *lane) {
  return ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
}

/* Adds v[0 .. CT_ONEBIT_LANES) (lane l: v[l]; `in` of them are values,
 * the rest add nothing) to the lanes of their signs; their bits, set for
 * >= 0, returned. */
static inline CT_HOST_DEVICE uint32_t ct_onebit_add_lanes(const float *v, int in, float *positive,
                                                          float *negative, uint32_t *n_positive) {
  uint32_t bits = 0;
  for (int l = 0; l < CT_ONEBIT_LANES; ++l) {
    const uint32_t bit = (v[l] >= 0.0f) & (l < in), mask = 0u - bit;
    const uint32_t value = l < in ? ct_f32_bits(v[l]) : 0u;
    positive[l] += ct_f32_of_bits(value & mask);
    negative[l] += ct_f32_of_bits(value & ~mask);
    n_positive[l] += bit;
    bits |= bit << l;
  }
  return bits;
}

#if defined(__GNUC__) && !defined(__CUDACC__)
typedef float ct_onebit_f32x8 __attribute__((vector_size(32)));
typedef uint32_t ct_onebit_u32x8 __attribute__((vector_size(32)));
/* ct_onebit_add_lanes over a whole column of x + r, in vector registers:
 * the same lanes and order, so the same bits. */
static inline void ct_onebit_add_column(const float *x, const float *r, float *positive,
                                        float *negative, uint32_t *n_positive, uint32_t *words) {
  ct_onebit_f32x8 pos = {0}, neg = {0};
  ct_onebit_u32x8 count = {0};
  const ct_onebit_u32x8 shifts = {0, 1, 2, 3, 4, 5, 6, 7};
  for (int first = 0; first < CT_ONEBIT_COLUMN; first += CT_ONEBIT_LANES) {
    ct_onebit_f32x8 a, b;
    memcpy(&a, x + first, sizeof a);
    memcpy(&b, r + first, sizeof b);
    const ct_onebit_f32x8 v = a + b;
    const ct_onebit_u32x8 mask = (ct_onebit_u32x8)(v >= 0.0f), value = (ct_onebit_u32x8)v;
    pos += (ct_onebit_f32x8)(value & mask);
    neg += (ct_onebit_f32x8)(value & ~mask);
    count -= mask;
    const ct_onebit_u32x8 set = (mask & 1u) << shifts;
    uint32_t bits = 0;
    for (int l = 0; l < CT_ONEBIT_LANES; ++l) bits |= set[l];
    words[first >> 5] |= bits << (first & 31);
  }
  memcpy(positive, &pos, sizeof pos);
  memcpy(negative, &neg, sizeof neg);
  memcpy(n_positive, &count, sizeof count);
}
#endif

static inline CT_HOST_DEVICE void ct_onebit_pack_column(const float *x, float *r, int count,
                                                        uint8_t *out) {
  float positive[CT_ONEBIT_LANES], negative[CT_ONEBIT_LANES], v[CT_ONEBIT_LANES];
  uint32_t n_positive[CT_ONEBIT_LANES], words[CT_ONEBIT_COLUMN / 32];
  for (int l = 0; l < CT_ONEBIT_LANES; ++l) positive[l] = negative[l] = 0.0f, n_positive[l] = 0;
  for (int w = 0; w < CT_ONEBIT_COLUMN / 32; ++w) words[w] = 0;
#if defined(__GNUC__) && !defined(__CUDACC__)
  if (count == CT_ONEBIT_COLUMN && r) {
    ct_onebit_add_column(x, r, positive, negative, n_positive, words);
  } else
#endif
  for (int first = 0; first < count; first += CT_ONEBIT_LANES) {
    const int in = count - first < CT_ONEBIT_LANES ? count - first : CT_ONEBIT_LANES;
    for (int l = 0; l < CT_ONEBIT_LANES; ++l)
      v[l] = l >= in ? 0.0f : r ? x[first + l] + r[first + l] : x[first + l];
    words[first >> 5] |= ct_onebit_add_lanes(v, in, positive, negative, n_positive)
                         << (first & 31);
  }
  int n_pos = 0;
  for (int l = 0; l < CT_ONEBIT_LANES; ++l) n_pos += (int)n_positive[l];
  const int n_negative = count - n_pos;
  const float sum_positive = ct_onebit_lanes_sum(positive);
  const float sum_negative = ct_onebit_lanes_sum(negative);
  const float mean_positive = n_pos ? sum_positive / (float)n_pos : 0.0f;
  const float mean_negative = n_negative ? sum_negative / (float)n_negative : 0.0f;
  for (int i = 0; r && i < count; ++i) {
    const float v = x[i] + r[i];
    r[i] = v - ((words[i >> 5] >> (i & 31)) & 1u ? mean_positive : mean_negative);
  }
  memcpy(out, &mean_positive, 4);
  memcpy(out + 4, &mean_negative, 4);
  memcpy(out + 8, words, sizeof words);
}

/* The first `count` values of a packed column into y (add: added to y's);
 * a whole column on the CPU in vector registers. */
static inline CT_HOST_DEVICE void ct_onebit_unpack_column(const uint8_t *column, int count,
                                                          float *y, int add) {
  float means[2]; /* [1]: the positive part's, [0]: the negative's */
  uint32_t words[CT_ONEBIT_COLUMN / 32];
  memcpy(&means[1], column, 4);
  memcpy(&means[0], column + 4, 4);
  memcpy(words, column + 8, sizeof words);
#if defined(__GNUC__) && !defined(__CUDACC__)
  if (count == CT_ONEBIT_COLUMN) {
    const ct_onebit_u32x8 shifts = {0, 1, 2, 3, 4, 5, 6, 7};
    const uint32_t positive = ct_f32_bits(means[1]), negative = ct_f32_bits(means[0]);
    for (int first = 0; first < CT_ONEBIT_COLUMN; first += CT_ONEBIT_LANES) {
      const uint32_t byte = (words[first >> 5] >> (first & 31)) & 0xffu;
      const ct_onebit_u32x8 mask = 0u - (((ct_onebit_u32x8){0} + byte) >> shifts & 1u);
      const ct_onebit_f32x8 v = (ct_onebit_f32x8)((mask & positive) | (~mask & negative));
      ct_onebit_f32x8 out = v;
      if (add) {
        memcpy(&out, y + first, sizeof out);
        out += v;
      }
      memcpy(y + first, &out, sizeof out);
    }
    return;
  }
#endif
  for (int i = 0; i < count; ++i) {
    const float v = means[(words[i >> 5] >> (i & 31)) & 1u];
    y[i] = add ? y[i] + v : v;
  }
}

/* Value i (0 .. CT_ONEBIT_COLUMN - 1) of a packed column. */
static inline CT_HOST_DEVICE float ct_onebit_value(const uint8_t *column, int i) {
  uint32_t word;
  float mean;
  memcpy(&word, column + 8 + 4 * (i >> 5), 4);
  memcpy(&mean, column + ((word >> (i & 31)) & 1u ? 0 : 4), 4);
  return mean;
}

#endif
