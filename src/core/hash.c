#include "core/hash.h"

#include <string.h>

uint64_t ct_fnv1a(uint64_t state, const void *data, size_t nbytes) {
  const unsigned char *bytes = data;
  for (size_t i = 0; i < nbytes; ++i) state = (state ^ bytes[i]) * 1099511628211ull;
  return state;
}

uint64_t ct_hash_string(uint64_t seed, const char *text) {
  return ct_mix64(ct_fnv1a(CT_FNV1A_START ^ seed, text, strlen(text)));
}
