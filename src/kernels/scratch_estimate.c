/* What the kernels take from ct_kernel_scratch, predicted from shapes, so
 * that `ctower plan` can add it to a step's memory. It follows the CPU
 * kernels (src/kernels/cpu): keep the two in step. */
#include <string.h>

#include "kernels/kernel.h"

static size_t f32_bytes(const ct_shape *s) {
  const int64_t n = ct_shape_elements(s);
  return n > 0 ? (size_t)n * sizeof(float) : 0;
}

/* The channels of an NHWC (or [rows, C]) shape. */
static size_t channels(const ct_shape *s) { return s->rank > 0 ? (size_t)s->dims[s->rank - 1] : 0; }

enum { CHUNKS = 16 }; /* batch_norm.c's and elementwise.c's partial sums */

int ct_kernel_scratch_estimate(const char *op, ct_device_kind kind, const ct_shape *in,
                               int n_inputs, const ct_shape *out, size_t bytes[4]) {
  if (kind != CT_DEVICE_KIND_CPU || n_inputs < 1) return 0;
  /* oneDNN's preferred filter layout: the filter, reordered */
  if (strcmp(op, "Conv2D") == 0 && n_inputs >= 2) return bytes[0] = f32_bytes(&in[1]), 1;
  if (strcmp(op, "Conv2DBackpropInput") == 0) return bytes[0] = f32_bytes(&in[0]), 1;
  if (strcmp(op, "Conv2DBackpropFilter") == 0) return bytes[0] = f32_bytes(&out[0]), 1;
  if (strcmp(op, "FusedBatchNorm") == 0)
    return bytes[0] = CHUNKS * channels(&in[0]) * sizeof(float), 1;
  if (strcmp(op, "FusedBatchNormGrad") == 0)
    return bytes[0] = 2 * CHUNKS * channels(&in[0]) * sizeof(float), 1;
  if (strcmp(op, "FusedBatchNormInferenceGrad") == 0)
    return bytes[0] = (2 * CHUNKS + 1) * channels(&in[0]) * sizeof(float), 1;
  /* a bias gradient: partial sums of each chunk of rows */
  if (strcmp(op, "SumLike") == 0 && f32_bytes(&out[0]) < f32_bytes(&in[0]))
    return bytes[0] = CHUNKS * f32_bytes(&out[0]), 1;
  return 0;
}
