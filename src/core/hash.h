/* Hashes that seed ctower's random streams: the same output on every
 * platform, so that a seed names the same weights, masks and shuffles
 * everywhere. */
#ifndef CTOWER_CORE_HASH_H
#define CTOWER_CORE_HASH_H

#include <stddef.h>
#include <stdint.h>

/* splitmix64's step and finalizer: a good 64-bit mix of x. */
static inline uint64_t ct_mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/* FNV-1a: CT_FNV1A_START, then one step per piece of data (feed each
 * step's result to the next); finish with ct_mix64. */
#define CT_FNV1A_START 1469598103934665603ull
uint64_t ct_fnv1a(uint64_t state, const void *data, size_t nbytes);

/* 64-bit hash of a string mixed with a seed (FNV-1a, then ct_mix64). */
uint64_t ct_hash_string(uint64_t seed, const char *text);

#endif
