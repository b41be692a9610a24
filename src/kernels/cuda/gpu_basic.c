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

/* As the CPU's: the slice's elements of `whole` (attrs.slice), as a strided
 * view shaped like `part`, gathered into part or scattered from it. */
static void copy_slice(ct_kernel_ctx *ctx, const ct_tensor *whole, const ct_tensor *part,
                       int gather) {
  const int64_t n = ct_shape_elements(&part->shape);
  if (n == 0) return;
  ct_strided view = {part->shape.rank > 0 ? part->shape.rank : 1, {1}, {1}};
  const int64_t base = ct_slice_view(&ctx->attrs->slice, &whole->shape, view.strides);
  for (int d = 0; d < part->shape.rank; ++d) view.dims[d] = part->shape.dims[d];
  const size_t size = ct_dtype_size(whole->dtype);
  char *at = (char *)whole->data + base * (int64_t)size;
  cudaError_t err = gather ? ct_launch_strided_copy(at, part->data, size, n, &view, 1,
                                                    ct_kernel_gpu(ctx)->stream)
                           : ct_launch_strided_copy(part->data, at, size, n, &view, 0,
                                                    ct_kernel_gpu(ctx)->stream);
  ct_kernel_launch_failed(ctx, err);
}

void ct_gpu_strided_slice(ct_kernel_ctx *ctx) {
  copy_slice(ctx, &ctx->inputs[0], &ctx->outputs[0], 1);
}

/* StridedSliceGrad(dy, x): zeros shaped like x, dy where the slice took. */
void ct_gpu_strided_slice_grad(ct_kernel_ctx *ctx) {
  const ct_tensor *dx = &ctx->outputs[0];
  const size_t bytes = (size_t)ct_shape_elements(&dx->shape) * ct_dtype_size(dx->dtype);
  if (bytes == 0) return;
  cudaError_t err = ct_launch_zero_bytes(dx->data, bytes, ct_kernel_gpu(ctx)->stream);
  if (ct_kernel_launch_failed(ctx, err)) return;
  copy_slice(ctx, dx, &ctx->inputs[0], 0);
}

/* As the CPU's: x's elements gathered through the permuted strides. */
void ct_gpu_transpose(ct_kernel_ctx *ctx) {
  const ct_tensor *x = &ctx->inputs[0], *y = &ctx->outputs[0];
  const int64_t n = ct_shape_elements(&y->shape);
  if (n == 0) return;
  ct_strided view = {y->shape.rank > 0 ? y->shape.rank : 1, {1}, {1}};
  ct_transpose_view(&ctx->attrs->transpose, &x->shape, view.strides);
  for (int d = 0; d < y->shape.rank; ++d) view.dims[d] = y->shape.dims[d];
  cudaError_t err = ct_launch_strided_copy(x->data, y->data, ct_dtype_size(x->dtype), n, &view,
                                           1, ct_kernel_gpu(ctx)->stream);
  ct_kernel_launch_failed(ctx, err);
}
