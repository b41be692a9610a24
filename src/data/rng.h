/* Small deterministic random number generators for the data module:
 * splitmix64 (seeding) and xoshiro256** (Blackman and Vigna, 2018).
 * Same output on every platform; no global state. */
#ifndef CTOWER_DATA_RNG_H
#define CTOWER_DATA_RNG_H

#include <stdint.h>

#include "core/hash.h"

/* Advances *state and returns the next splitmix64 output. */
static inline uint64_t ct_splitmix64(uint64_t *state) {
  const uint64_t z = ct_mix64(*state);
  *state += 0x9E3779B97F4A7C15ull;
  return z;
}

typedef struct ct_xoshiro {
  uint64_t s[4];
} ct_xoshiro;

/* Seeds from two words (e.g. a seed and an epoch) through splitmix64. */
static inline void ct_xoshiro_seed(ct_xoshiro *rng, uint64_t seed, uint64_t stream) {
  uint64_t sm = seed;
  uint64_t mixed = ct_splitmix64(&sm) ^ (stream * 0xD1B54A32D192ED03ull + 0x8CB92BA72F3D8DD7ull);
  for (int i = 0; i < 4; ++i) rng->s[i] = ct_splitmix64(&mixed);
}

static inline uint64_t ct_rotl64(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

/* The next xoshiro256** output. */
static inline uint64_t ct_xoshiro_next(ct_xoshiro *rng) {
  uint64_t *s = rng->s;
  const uint64_t result = ct_rotl64(s[1] * 5, 7) * 9;
  const uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = ct_rotl64(s[3], 45);
  return result;
}

/* A uniform integer in [0, bound), bound >= 1, without modulo bias. */
static inline uint64_t ct_xoshiro_below(ct_xoshiro *rng, uint64_t bound) {
  const uint64_t threshold = (0 - bound) % bound; /* 2^64 mod bound */
  for (;;) {
    uint64_t r = ct_xoshiro_next(rng);
    if (r >= threshold) return r % bound;
  }
}

#endif
