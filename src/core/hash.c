#include "core/hash.h"

uint64_t ct_hash_string(uint64_t seed, const char *text) {
  uint64_t h = 1469598103934665603ull ^ seed;
  for (const unsigned char *p = (const unsigned char *)text; *p; ++p) {
    h ^= *p;
    h *= 1099511628211ull;
  }
  return ct_mix64(h);
}
