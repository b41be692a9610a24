/* Philox-4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
 * 3") and TensorFlow's float32 distributions over it (its
 * lib/random/philox_random.h and random_distributions.h). Every float
 * operation is written as TensorFlow's code does it: the build does not
 * contract a * b + c (ISO C mode), and logf, sinf and cosf are the C
 * library's, as TensorFlow's. */
#include "core/philox.h"

#include <math.h>

enum {
  PHILOX_W32A = 0x9E3779B9u,
  PHILOX_W32B = 0xBB67AE85u,
  PHILOX_M4X32A = 0xD2511F53u,
  PHILOX_M4X32B = 0xCD9E8D57u,
  /* counters a truncated normal group of four may use (TensorFlow's
     kReservedSamplesPerOutput times 4 values over 4 words a block) */
  TRUNCATED_GROUP_SKIP = 256
};

void ct_philox_init(ct_philox *p, uint64_t seed, uint64_t seed2) {
  p->key[0] = (uint32_t)seed;
  p->key[1] = (uint32_t)(seed >> 32);
  p->counter[0] = 0;
  p->counter[1] = 0;
  p->counter[2] = (uint32_t)seed2;
  p->counter[3] = (uint32_t)(seed2 >> 32);
}

static void philox_round(uint32_t c[4], const uint32_t k[2]) {
  const uint64_t p0 = (uint64_t)PHILOX_M4X32A * c[0];
  const uint64_t p1 = (uint64_t)PHILOX_M4X32B * c[2];
  const uint32_t r0 = (uint32_t)(p1 >> 32) ^ c[1] ^ k[0];
  const uint32_t r2 = (uint32_t)(p0 >> 32) ^ c[3] ^ k[1];
  c[0] = r0;
  c[1] = (uint32_t)p1;
  c[2] = r2;
  c[3] = (uint32_t)p0;
}

void ct_philox_next(ct_philox *p, uint32_t out[4]) {
  uint32_t c[4] = {p->counter[0], p->counter[1], p->counter[2], p->counter[3]};
  uint32_t k[2] = {p->key[0], p->key[1]};
  for (int round = 0; round < 10; ++round) {
    if (round) {
      k[0] += PHILOX_W32A;
      k[1] += PHILOX_W32B;
    }
    philox_round(c, k);
  }
  for (int i = 0; i < 4; ++i) out[i] = c[i];
  ct_philox_skip(p, 1);
}

void ct_philox_skip(ct_philox *p, uint64_t count) {
  const uint32_t lo = (uint32_t)count;
  uint32_t hi = (uint32_t)(count >> 32);
  p->counter[0] += lo;
  if (p->counter[0] < lo) ++hi;
  p->counter[1] += hi;
  if (p->counter[1] < hi && ++p->counter[2] == 0) ++p->counter[3];
}

float ct_philox_uint32_to_float(uint32_t x) {
  union {
    uint32_t u;
    float f;
  } v = {(127u << 23) | (x & 0x7FFFFFu)};
  return v.f - 1.0f;
}

void ct_philox_box_muller(uint32_t x0, uint32_t x1, float *f0, float *f1) {
  const float epsilon = 1.0e-7f;
  float u1 = ct_philox_uint32_to_float(x0);
  if (u1 < epsilon) u1 = epsilon;
  /* 2.0f * M_PI is a double in TensorFlow's code: the product is rounded once */
  const float v1 = (float)(2.0 * 3.14159265358979323846 * (double)ct_philox_uint32_to_float(x1));
  const float u2 = sqrtf(-2.0f * logf(u1));
  *f0 = sinf(v1) * u2;
  *f1 = cosf(v1) * u2;
}

void ct_philox_fill_uniform(uint64_t seed, uint64_t seed2, float *out, int64_t n) {
  ct_philox p;
  ct_philox_init(&p, seed, seed2);
  uint32_t block[4];
  for (int64_t i = 0; i < n; ++i) {
    if (i % 4 == 0) ct_philox_next(&p, block);
    out[i] = ct_philox_uint32_to_float(block[i % 4]);
  }
}

void ct_philox_fill_normal(uint64_t seed, uint64_t seed2, float *out, int64_t n) {
  ct_philox p;
  ct_philox_init(&p, seed, seed2);
  uint32_t block[4];
  float f[4];
  for (int64_t i = 0; i < n; ++i) {
    if (i % 4 == 0) {
      ct_philox_next(&p, block);
      ct_philox_box_muller(block[0], block[1], &f[0], &f[1]);
      ct_philox_box_muller(block[2], block[3], &f[2], &f[3]);
    }
    out[i] = f[i % 4];
  }
}

/* One group of four: pairs of uint32s, one at a time from the group's own
 * stream, through Box-Muller; a value is kept while |x| < 2, the first
 * of a pair before the second. */
static void truncated_group(const ct_philox *base, int64_t group, float out[4]) {
  ct_philox p = *base;
  ct_philox_skip(&p, (uint64_t)group * TRUNCATED_GROUP_SKIP);
  uint32_t block[4];
  int used = 4, kept = 0;
  for (;;) {
    uint32_t x[2];
    for (int j = 0; j < 2; ++j) {
      if (used == 4) {
        ct_philox_next(&p, block);
        used = 0;
      }
      x[j] = block[used++];
    }
    float f[2];
    ct_philox_box_muller(x[0], x[1], &f[0], &f[1]);
    for (int j = 0; j < 2; ++j) {
      if (fabsf(f[j]) < 2.0f) {
        out[kept++] = f[j];
        if (kept == 4) return;
      }
    }
  }
}

void ct_philox_fill_truncated_normal(uint64_t seed, uint64_t seed2, float *out, int64_t n) {
  ct_philox base;
  ct_philox_init(&base, seed, seed2);
  for (int64_t g = 0; g * 4 < n; ++g) {
    float f[4];
    truncated_group(&base, g, f);
    for (int64_t i = g * 4; i < n && i < g * 4 + 4; ++i) out[i] = f[i - g * 4];
  }
}
