/* Scratch memory for the running kernel, and the scratch rules of kernels
 * that ask for none or whose scratch the plan leaves out. */
#include "device/device.h"
#include "kernels/kernel.h"

void *ct_kernel_scratch(ct_kernel_ctx *ctx, size_t nbytes) {
  if (ctx->n_scratch == (int)(sizeof ctx->scratch / sizeof ctx->scratch[0])) {
    ct_status_set(ctx->status, CT_INTERNAL, "kernel for '%s' asked for too many scratch blocks",
                  ctx->node->name);
    return NULL;
  }
  void *p = ct_allocator_alloc(ctx->device->allocator, nbytes, ctx->status);
  if (p) ctx->scratch[ctx->n_scratch++] = p;
  return p;
}

int ct_kernel_no_scratch(const ct_device *device, const ct_attrs *attrs, const ct_shape *in_shapes,
                         int n_inputs, const ct_shape *out_shapes, size_t bytes[4]) {
  (void)device, (void)attrs, (void)in_shapes, (void)n_inputs, (void)out_shapes, (void)bytes;
  return 0;
}

int ct_kernel_scratch_not_estimated(const ct_device *device, const ct_attrs *attrs,
                                    const ct_shape *in_shapes, int n_inputs,
                                    const ct_shape *out_shapes, size_t bytes[4]) {
  return ct_kernel_no_scratch(device, attrs, in_shapes, n_inputs, out_shapes, bytes);
}
