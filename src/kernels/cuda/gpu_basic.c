/* GPU kernels of sources and shape ops. Variables, constants and views need
 * no work: the executor binds their outputs to existing storage. */
#include "kernels/cuda/basic_kernels.h"
#include "kernels/cuda/launch_basic.h"
#include "kernels/kernel_shapes.h"

void ct_gpu_nothing(ct_kernel_ctx *ctx) { (void)ctx; }

/* As the CPU kernel: `value` for f32 outputs, zero bytes for the others. */
static void fill(ct_kernel_ctx *ctx, float value) {
  ct_tensor *y = &ctx->outputs[0];
  const int64_t n = ct_shape_elements(&y->shape);
  if (n == 0) return;
  cudaStream_t stream = ct_kernel_gpu(ctx)->stream;
  cudaError_t err =
      y->dtype == CT_F32 && value != 0.0f
          ? ct_launch_fill_f32((float *)y->data, n, value, stream)
          : ct_launch_zero_bytes(y->data, (size_t)n * ct_dtype_size(y->dtype), stream);
  ct_kernel_launch_failed(ctx, err);
}

void ct_gpu_zeros_like(ct_kernel_ctx *ctx) { fill(ctx, 0.0f); }
void ct_gpu_ones_like(ct_kernel_ctx *ctx) { fill(ctx, 1.0f); }

/* Copies whole parts side by side along an axis (concat) or back (split),
 * one strided copy per part. `whole` is the joined tensor, parts[k] its
 * pieces in order. */
static void join_or_split(ct_kernel_ctx *ctx, ct_tensor *whole, ct_tensor *parts, int n_parts,
                          int axis, int join) {
  const int64_t outer = ct_outer_count(&whole->shape, axis);
  const size_t whole_row = ct_row_bytes(whole, axis);
  cudaStream_t stream = ct_kernel_gpu(ctx)->stream;
  size_t offset = 0;
  for (int k = 0; k < n_parts && outer > 0; ++k) {
    const size_t row = ct_row_bytes(&parts[k], axis);
    if (row == 0) continue;
    char *w = (char *)whole->data + offset;
    char *p = (char *)parts[k].data;
    cudaError_t err = join ? ct_launch_copy_rows(w, whole_row, p, row, row, outer, stream)
                           : ct_launch_copy_rows(p, row, w, whole_row, row, outer, stream);
    if (ct_kernel_launch_failed(ctx, err)) return;
    offset += row;
  }
}

void ct_gpu_concat(ct_kernel_ctx *ctx) {
  join_or_split(ctx, &ctx->outputs[0], ctx->inputs, ctx->n_inputs,
                ct_kernel_axis(ctx, ctx->outputs[0].shape.rank), 1);
}

void ct_gpu_concat_grad(ct_kernel_ctx *ctx) {
  join_or_split(ctx, &ctx->inputs[0], ctx->outputs, ctx->n_outputs,
                ct_kernel_axis(ctx, ctx->inputs[0].shape.rank), 0);
}

void ct_gpu_split(ct_kernel_ctx *ctx) {
  join_or_split(ctx, &ctx->inputs[0], ctx->outputs, ctx->n_outputs,
                ct_kernel_split_axis(ctx, ctx->inputs[0].shape.rank), 0);
}
