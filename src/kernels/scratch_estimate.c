/* What the kernels take from ct_kernel_scratch, predicted from shapes, so
 * that `ctower plan` can add it to a step's memory. It follows the CPU
 * kernels (src/kernels/cpu): keep the two in step. Convolutions and the
 * matmuls run as primitives (bf16, or B transposed) ask oneDNN, as their
 * kernels do, how their primitive wants its arguments and how much working
 * memory it needs. */
#include <string.h>

#include "device/device.h"
#include "kernels/cpu/cpu_kernels.h"

static size_t f32_bytes(const ct_shape *s) {
  const int64_t n = ct_shape_elements(s);
  return n > 0 ? (size_t)n * sizeof(float) : 0;
}

/* The channels of an NHWC (or [rows, C]) shape. */
static size_t channels(const ct_shape *s) { return s->rank > 0 ? (size_t)s->dims[s->rank - 1] : 0; }

enum { CHUNKS = 16 }; /* batch_norm.c's and elementwise.c's partial sums */

int ct_kernel_scratch_estimate(const char *op, const ct_device *device, const ct_attrs *attrs,
                               const ct_shape *in, int n_inputs, const ct_shape *out,
                               size_t bytes[4]) {
  if (device->ops->kind != CT_DEVICE_KIND_CPU || n_inputs < 1) return 0;
  if (strcmp(op, "Conv2D") == 0 && n_inputs >= 2)
    return ct_cpu_conv_scratch(device, CONV_FORWARD, &in[0], &in[1], &out[0], &attrs->conv2d,
                               n_inputs > 2, bytes);
  if (strcmp(op, "Conv2DBackpropInput") == 0 && n_inputs >= 2)
    return ct_cpu_conv_scratch(device, CONV_BACKWARD_DATA, &out[0], &in[0], &in[1],
                               &attrs->conv2d, 0, bytes);
  if (strcmp(op, "Conv2DBackpropFilter") == 0 && n_inputs >= 2)
    return ct_cpu_conv_scratch(device, CONV_BACKWARD_FILTER, &in[0], &out[0], &in[1],
                               &attrs->conv2d, 0, bytes);
  if (strcmp(op, "MatMul") == 0 && n_inputs >= 2)
    return ct_cpu_matmul_scratch(device, &in[0], &in[1], &attrs->matmul, bytes);
  /* windows that overlap (pool.c): the forward output again, and a byte of
   * workspace per output element */
  if (strcmp(op, "MaxPoolGrad") == 0 && n_inputs >= 2 &&
      (attrs->pool.stride[0] < attrs->pool.window[0] ||
       attrs->pool.stride[1] < attrs->pool.window[1])) {
    const ct_shape *dy = &in[n_inputs - 1];
    bytes[0] = f32_bytes(dy);
    bytes[1] = f32_bytes(dy) / sizeof(float);
    return 2;
  }
  if (strcmp(op, "FusedBatchNorm") == 0)
    return bytes[0] = 2 * CHUNKS * channels(&in[0]) * sizeof(float), 1;
  if (strcmp(op, "FusedBatchNormGrad") == 0 || strcmp(op, "FusedBatchNormInferenceGrad") == 0)
    return bytes[0] = (2 * CHUNKS + 1) * channels(&in[0]) * sizeof(float), 1;
  if (strcmp(op, "CompressedAllReduce") == 0)
    return ct_cpu_compressed_all_reduce_scratch(attrs, bytes);
  /* a bias gradient: partial sums of each chunk of rows */
  if (strcmp(op, "SumLike") == 0 && f32_bytes(&out[0]) < f32_bytes(&in[0]))
    return bytes[0] = CHUNKS * f32_bytes(&out[0]), 1;
  return 0;
}
