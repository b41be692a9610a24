/* The kernel registry: (op, device type) -> kernel and its scratch rule.
 * The placer's only source of truth about which devices can run an op. */
#include <string.h>

#include "device/device.h"
#include "kernels/cpu/cpu_kernels.h"
#ifdef CTOWER_HAVE_CUDA
#include "kernels/cuda/cuda_kernels.h"
#endif

static const ct_kernel_def *const kernel_tables[] = {
    ct_cpu_kernels,
#ifdef CTOWER_HAVE_CUDA
    ct_cuda_basic_kernels,
    ct_cuda_nn_kernels,
    ct_cuda_collective_kernels,
#endif
};

const ct_kernel_def *ct_kernel_lookup(const char *op, ct_device_kind device_kind) {
  for (size_t t = 0; t < sizeof kernel_tables / sizeof kernel_tables[0]; ++t)
    for (const ct_kernel_def *k = kernel_tables[t]; k->op; ++k)
      if (k->device_kind == device_kind && strcmp(k->op, op) == 0) return k;
  return NULL;
}

ct_kernel_fn ct_kernel_find(const char *op, ct_device_kind device_kind) {
  const ct_kernel_def *k = ct_kernel_lookup(op, device_kind);
  return k ? k->fn : NULL;
}

int ct_kernel_scratch_estimate(const char *op, const ct_device *device, const ct_attrs *attrs,
                               const ct_shape *in_shapes, int n_inputs, const ct_shape *out_shapes,
                               size_t bytes[4]) {
  const ct_kernel_def *k = ct_kernel_lookup(op, device->ops->kind);
  if (k == NULL || n_inputs < 1) return 0;
  return k->scratch(device, attrs, in_shapes, n_inputs, out_shapes, bytes);
}
