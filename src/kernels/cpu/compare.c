/* Equal, Cast and the comparisons of ops/compare.h (src/ops/ops_compare.c). */
#include <stdint.h>
#include <string.h>

#include "kernels/cpu/cpu_kernels.h"

/* Element i of a value of n elements, widened: scalars repeat. */
static double element(const ct_tensor *t, int64_t i) {
  if (ct_tensor_elements(t) == 1) i = 0;
  switch (t->dtype) {
    case CT_F32: return (double)((const float *)t->data)[i];
    case CT_I32: return (double)((const int32_t *)t->data)[i];
    case CT_I64: return (double)((const int64_t *)t->data)[i];
    case CT_U8: return (double)((const uint8_t *)t->data)[i];
    default: return 0;
  }
}

void ct_cpu_equal(ct_kernel_ctx *ctx) {
  const ct_tensor *a = &ctx->inputs[0], *b = &ctx->inputs[1];
  uint8_t *out = ctx->outputs[0].data;
  const int64_t n = ct_tensor_elements(&ctx->outputs[0]);
  if (a->dtype == CT_I64) { /* wider than a double holds exactly */
    const int64_t *x = a->data, *y = b->data;
    const int sx = ct_tensor_elements(a) > 1, sy = ct_tensor_elements(b) > 1;
    for (int64_t i = 0; i < n; ++i) out[i] = x[sx ? i : 0] == y[sy ? i : 0];
    return;
  }
  for (int64_t i = 0; i < n; ++i) out[i] = element(a, i) == element(b, i);
}

/* out[i] = x[i] OP y[i] over n elements of type T, a scalar repeating. */
#define COMPARE_LOOP(T, OP)                                                          \
  {                                                                                  \
    const T *x = a->data, *y = b->data;                                              \
    for (int64_t i = 0; i < n; ++i) out[i] = x[sx ? i : 0] OP y[sy ? i : 0];         \
  }

/* Each row's kernel, a loop per dtype: the values compared as they are (no
 * widening, so i64 compares exactly). */
#define COMPARE_KERNEL(P, Name, function, OP)                                        \
  void ct_cpu_##Name(ct_kernel_ctx *ctx) {                                           \
    const ct_tensor *a = &ctx->inputs[0], *b = &ctx->inputs[1];                      \
    uint8_t *out = ctx->outputs[0].data;                                             \
    const int64_t n = ct_tensor_elements(&ctx->outputs[0]);                          \
    const int sx = ct_tensor_elements(a) > 1, sy = ct_tensor_elements(b) > 1;        \
    switch (a->dtype) {                                                              \
      case CT_F32: COMPARE_LOOP(float, OP) break;                                    \
      case CT_I32: COMPARE_LOOP(int32_t, OP) break;                                  \
      case CT_I64: COMPARE_LOOP(int64_t, OP) break;                                  \
      case CT_U8: COMPARE_LOOP(uint8_t, OP) break;                                   \
      default:                                                                       \
        ct_status_set(ctx->status, CT_UNIMPLEMENTED, "%s of %s", #Name,              \
                      ct_dtype_name(a->dtype));                                      \
    }                                                                                \
  }
CT_COMPARE(COMPARE_KERNEL, _)
#undef COMPARE_KERNEL

/* v within [lo, hi], saturating (ct_cast: a narrowed value never wraps). */
static int64_t clamped(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* v truncated toward zero within [lo, hi], saturating; a NaN gives 0.
 * (double)INT64_MAX is 2^63: a v below it converts exactly. */
static int64_t truncated(double v, int64_t lo, int64_t hi) {
  if (v != v) return 0;
  if (v <= (double)lo) return lo;
  return v >= (double)hi ? hi : (int64_t)v;
}

void ct_cpu_cast(ct_kernel_ctx *ctx) {
  const ct_tensor *x = &ctx->inputs[0];
  ct_tensor *y = &ctx->outputs[0];
  const int64_t n = ct_tensor_elements(y);
  if (x->dtype == y->dtype) {
    memcpy(y->data, x->data, ct_tensor_nbytes(y));
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    if (x->dtype == CT_I64 && y->dtype != CT_F32) { /* exactly, not through a double */
      const int64_t v = ((const int64_t *)x->data)[i];
      if (y->dtype == CT_I32) ((int32_t *)y->data)[i] = (int32_t)clamped(v, INT32_MIN, INT32_MAX);
      else ((uint8_t *)y->data)[i] = (uint8_t)clamped(v, 0, UINT8_MAX);
      continue;
    }
    const double v = element(x, i);
    switch (y->dtype) {
      case CT_F32: ((float *)y->data)[i] = (float)v; break;
      case CT_I32: ((int32_t *)y->data)[i] = (int32_t)truncated(v, INT32_MIN, INT32_MAX); break;
      case CT_I64: ((int64_t *)y->data)[i] = truncated(v, INT64_MIN, INT64_MAX); break;
      case CT_U8: ((uint8_t *)y->data)[i] = (uint8_t)truncated(v, 0, UINT8_MAX); break;
      default: break;
    }
  }
}
