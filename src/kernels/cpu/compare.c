/* Equal and Cast (src/ops/ops_compare.c). */
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
      if (y->dtype == CT_I32) ((int32_t *)y->data)[i] = (int32_t)v;
      else ((uint8_t *)y->data)[i] = (uint8_t)v;
      continue;
    }
    const double v = element(x, i);
    switch (y->dtype) {
      case CT_F32: ((float *)y->data)[i] = (float)v; break;
      case CT_I32: ((int32_t *)y->data)[i] = (int32_t)v; break;
      case CT_I64: ((int64_t *)y->data)[i] = (int64_t)v; break;
      case CT_U8: ((uint8_t *)y->data)[i] = (uint8_t)v; break;
      default: break;
    }
  }
}
