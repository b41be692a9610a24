#include "compress_reference.h"
#include "graph/graph_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The value of 16-bit code h: bf16 (the high half of an f32) or IEEE half. */
static double value_of(ct_compression c, uint16_t h) {
  if (c == CT_COMPRESSION_BF16) {
    const uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
  }
  const int sign = h >> 15, e = (h >> 10) & 31, m = h & 1023;
  const double magnitude = e == 31 ? INFINITY
                           : e == 0 ? ldexp(m, -24)
                                    : ldexp(1024 + m, e - 25);
  return sign ? -magnitude : magnitude;
}

/* The values of the positive codes, in order: the finite code nearest to
 * x is found by bisection among them (ties to the even code). */
typedef struct code_table {
  double value[32768];
} code_table;

static uint16_t nearest_fast(ct_compression c, const code_table *t, float x) {
  const uint16_t sign = signbit(x) ? 0x8000 : 0;
  const double a = fabs((double)x);
  int lo = 0, hi = c == CT_COMPRESSION_BF16 ? 0x7f7f : 0x7bff; /* the largest finite code */
  if (a >= t->value[hi]) return (uint16_t)(sign | hi);
  while (hi - lo > 1) { /* t->value[lo] <= a < t->value[hi] */
    const int mid = (lo + hi) / 2;
    if (t->value[mid] <= a) lo = mid; else hi = mid;
  }
  const double below = a - t->value[lo], above = t->value[hi] - a;
  const int code = below < above ? lo : above < below ? hi : (lo & 1 ? hi : lo);
  return (uint16_t)(sign | code);
}

void ct_naive_compress(ct_compression c, const float *x, float *residual, int64_t n,
                       uint8_t *out) {
  if (c == CT_COMPRESSION_ONEBIT) {
    for (int64_t first = 0; first < n; first += CT_ONEBIT_COLUMN) {
      const int64_t count = n - first < CT_ONEBIT_COLUMN ? n - first : CT_ONEBIT_COLUMN;
      uint8_t *column = out + first / CT_ONEBIT_COLUMN * CT_ONEBIT_COLUMN_BYTES;
      memset(column, 0, CT_ONEBIT_COLUMN_BYTES);
      float v[CT_ONEBIT_COLUMN], lane[2][8] = {{0}};
      int count_of[2] = {0, 0};
      for (int64_t i = 0; i < count; ++i) {
        v[i] = x[first + i] + residual[first + i];
        const int positive = v[i] >= 0;
        lane[positive][i % 8] += v[i]; /* the format's lanes */
        count_of[positive]++;
        if (positive) column[8 + i / 8] |= (uint8_t)(1u << (i % 8)); /* little-endian words */
      }
      float mean[2];
      for (int k = 0; k < 2; ++k) {
        const float *l = lane[k];
        const float sum = ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
        mean[k] = count_of[k] ? sum / (float)count_of[k] : 0.0f;
      }
      memcpy(column, &mean[1], 4);
      memcpy(column + 4, &mean[0], 4);
      for (int64_t i = 0; i < count; ++i) residual[first + i] = v[i] - mean[v[i] >= 0];
    }
    return;
  }
  static code_table table;
  for (int h = 0; h < 32768; ++h) table.value[h] = value_of(c, (uint16_t)h);
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t code = nearest_fast(c, &table, x[i]);
    memcpy(out + 2 * i, &code, 2);
  }
}

void ct_naive_decompress(ct_compression c, const uint8_t *in, int64_t n, float *y) {
  for (int64_t i = 0; i < n; ++i) {
    if (c == CT_COMPRESSION_ONEBIT) {
      const uint8_t *column = in + i / CT_ONEBIT_COLUMN * CT_ONEBIT_COLUMN_BYTES;
      const int k = (int)(i % CT_ONEBIT_COLUMN);
      memcpy(&y[i], column + ((column[8 + k / 8] >> (k % 8)) & 1 ? 0 : 4), 4);
    } else {
      uint16_t code;
      memcpy(&code, in + 2 * i, 2);
      y[i] = (float)value_of(c, code);
    }
  }
}

void ct_test_compression_inputs(float *x, int64_t n, int step) {
  uint64_t s = 0x9e3779b97f4a7c15ull * (uint64_t)(step + 1);
  for (int64_t i = 0; i < n; ++i) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    const double u = (double)(s >> 11) / 9007199254740992.0; /* [0, 1) */
    const double magnitude = pow(10.0, -9.0 + 13.8 * u);       /* 1e-9 .. 6.3e4 */
    x[i] = (float)((s & 3) == 0 ? -magnitude : magnitude);
  }
  /* ties of fp16 (1 + 2^-11, 1 + 3 2^-11) and bf16 (1 + 2^-8, 1 + 3 2^-8),
   * zeros of both signs */
  const float special[] = {1.0f + 0x1p-11f, 1.0f + 0x3p-11f, 1.0f + 0x1p-8f, 1.0f + 0x3p-8f,
                           -(1.0f + 0x1p-11f), 0.0f, -0.0f, 0x1p-25f, 0x3p-26f};
  for (size_t k = 0; k < sizeof special / sizeof *special && (int64_t)k < n; ++k) x[k] = special[k];
  /* a column of each sign only, and one of zeros */
  for (int64_t i = CT_ONEBIT_COLUMN; i < 4 * CT_ONEBIT_COLUMN && i < n; ++i) {
    const int64_t column = i / CT_ONEBIT_COLUMN;
    x[i] = column == 1 ? fabsf(x[i]) : column == 2 ? -fabsf(x[i]) - 1e-3f : 0.0f;
  }
}

void ct_test_compression_matches_naive(const char *device, ct_compression c, int64_t n,
                                       int steps) {
  ct_graph *g = ct_graph_new();
  ct_graph_push_device(g, device);
  const ct_output x = ct_placeholder(g, "x", CT_F32, ct_shape_of(1, n));
  const int onebit = c == CT_COMPRESSION_ONEBIT;
  const ct_initializer zeros = {CT_INIT_ZEROS, 0.0f};
  const ct_output residual = onebit ? ct_variable(g, "residual", ct_shape_of(1, n), zeros, 0)
                                    : ct_out(NULL, 0);
  const ct_output packed = ct_compress_gradient(g, x, c, residual);
  const ct_output unpacked = ct_decompress_gradient(g, packed, c, n);
  ct_graph_pop_device(g);
  assert_status_ok(ct_graph_status(g));
  ct_session_options so;
  ct_session_options_defaults(&so);
  so.allow_soft_placement = 0; /* every node where asked */
  so.gpu_options.allow_growth = 1;
  ct_status st = CT_STATUS_INIT;
  ct_session *s = ct_session_new(g, &so, &st);
  assert_status_ok(&st);
  const int64_t bytes = ct_compressed_bytes(c, n);
  float *values = malloc((size_t)n * sizeof *values), *r = calloc((size_t)n, sizeof *r);
  float *want_y = malloc((size_t)n * sizeof *want_y);
  uint8_t *want = malloc((size_t)bytes);
  assert_true(values && r && want_y && want);
  for (int step = 0; step < steps; ++step) {
    ct_test_compression_inputs(values, n, step);
    ct_naive_compress(c, values, r, n, want);
    ct_naive_decompress(c, want, n, want_y);
    ct_tensor fed = {CT_F32, ct_shape_of(1, n), values, 0};
    const ct_feed feed = {x, &fed};
    const ct_output fetches[2] = {packed, unpacked};
    ct_tensor *got[2] = {NULL, NULL};
    ct_session_run(s, &feed, 1, fetches, 2, NULL, 0, got, &st);
    assert_status_ok(&st);
    assert_int_equal(ct_tensor_elements(got[0]), bytes);
    const uint8_t *have = got[0]->data;
    for (int64_t b = 0; b < bytes; ++b)
      if (have[b] != want[b])
        fail_msg("%s on %s, step %d: packed byte %lld is %02x, not %02x", ct_compression_name(c),
                 device, step, (long long)b, have[b], want[b]);
    for (int64_t i = 0; i < n; ++i)
      if (memcmp(&ct_tensor_f32(got[1])[i], &want_y[i], 4) != 0)
        fail_msg("%s on %s, step %d: value %lld unpacks to %a, not %a (from %a)",
                 ct_compression_name(c), device, step, (long long)i, ct_tensor_f32(got[1])[i],
                 want_y[i], values[i]);
    if (onebit) {
      ct_tensor *kept = ct_session_read_variable(s, residual.node->variable, &st);
      assert_status_ok(&st);
      for (int64_t i = 0; i < n; ++i)
        if (memcmp(&ct_tensor_f32(kept)[i], &r[i], 4) != 0)
          fail_msg("onebit on %s, step %d: residual %lld is %a, not %a", device, step,
                   (long long)i, ct_tensor_f32(kept)[i], r[i]);
      ct_tensor_free(kept);
    }
    ct_tensor_free(got[0]);
    ct_tensor_free(got[1]);
  }
  printf("  %s on %s: %d steps of %lld values (%lld bytes packed) as the naive loops, bit for bit\n",
         ct_compression_name(c), device, steps, (long long)n, (long long)bytes);
  free(values), free(r), free(want_y), free(want);
  ct_session_free(s);
  ct_graph_free(g);
}
