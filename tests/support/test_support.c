#include "test_support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

char *ct_test_tmpdir(void) {
  char template_path[] = "/tmp/ctower_test_XXXXXX";
  char *dir = mkdtemp(template_path);
  return dir ? strdup(dir) : NULL;
}

int ct_test_write_file(const char *path, const void *data, size_t size) {
  FILE *f = fopen(path, "wb");
  if (f == NULL) return -1;
  size_t written = fwrite(data, 1, size, f);
  return fclose(f) == 0 && written == size ? 0 : -1;
}

void ct_test_fill_uniform(float *out, int64_t n, uint64_t seed, float lo, float hi) {
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int64_t i = 0; i < n; ++i) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    out[i] = lo + (hi - lo) * (float)((state >> 40) * (1.0 / 16777216.0));
  }
}

double ct_test_max_rel_diff(const float *a, const float *b, int64_t n) {
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    double denom = fabs((double)b[i]) > 1 ? fabs((double)b[i]) : 1;
    double d = fabs((double)a[i] - (double)b[i]) / denom;
    if (d > worst || isnan(d)) worst = isnan(d) ? INFINITY : d;
  }
  return worst;
}
