/* Kernels of sources and shape ops. Variables, constants and views need no
 * work: the executor binds their outputs to existing storage. */
#include <string.h>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/kernel_shapes.h"

void ct_cpu_nothing(ct_kernel_ctx *ctx) { (void)ctx; }

static void fill(ct_kernel_ctx *ctx, float value) {
  float *y = ct_out_f32(ctx, 0);
  int64_t n = ct_shape_elements(&ctx->outputs[0].shape);
  if (ctx->outputs[0].dtype != CT_F32) {
    memset(y, 0, (size_t)n * ct_dtype_size(ctx->outputs[0].dtype));
    return;
  }
  for (int64_t i = 0; i < n; ++i) y[i] = value;
}

void ct_cpu_zeros_like(ct_kernel_ctx *ctx) { fill(ctx, 0.0f); }
void ct_cpu_ones_like(ct_kernel_ctx *ctx) { fill(ctx, 1.0f); }

/* Copies whole parts side by side along an axis (concat) or back (split).
 * `whole` is the joined tensor, parts[k] its pieces in order. */
static void join_or_split(ct_tensor *whole, ct_tensor *parts, int n_parts, int axis, int join) {
  int64_t outer = ct_outer_count(&whole->shape, axis);
  size_t whole_row = ct_row_bytes(whole, axis);
  for (int64_t o = 0; o < outer; ++o) {
    size_t offset = 0;
    for (int k = 0; k < n_parts; ++k) {
      size_t row = ct_row_bytes(&parts[k], axis);
      char *w = (char *)whole->data + (size_t)o * whole_row + offset;
      char *p = (char *)parts[k].data + (size_t)o * row;
      if (join)
        memcpy(w, p, row);
      else
        memcpy(p, w, row);
      offset += row;
    }
  }
}

void ct_cpu_concat(ct_kernel_ctx *ctx) {
  join_or_split(&ctx->outputs[0], ctx->inputs, ctx->n_inputs,
                ct_kernel_axis(ctx, ctx->outputs[0].shape.rank), 1);
}

void ct_cpu_concat_grad(ct_kernel_ctx *ctx) {
  join_or_split(&ctx->inputs[0], ctx->outputs, ctx->n_outputs,
                ct_kernel_axis(ctx, ctx->inputs[0].shape.rank), 0);
}

void ct_cpu_split(ct_kernel_ctx *ctx) {
  join_or_split(&ctx->inputs[0], ctx->outputs, ctx->n_outputs,
                ct_kernel_split_axis(ctx, ctx->inputs[0].shape.rank), 0);
}

/* A strided view of `rank` dims (ct_slice_view). */
typedef struct strided_walk {
  int rank;
  const int64_t *dims, *strides;
} strided_walk;

/* Copies the view's elements in row-major order of size bytes each: from
 * the view into the dense `to` (gather), or from the dense `from` into the
 * view (scatter). */
static void copy_strided(const strided_walk *w, const char *from, char *to, size_t size,
                         int gather) {
  int64_t coord[CT_MAX_RANK] = {0}, offset = 0, n = 1;
  for (int d = 0; d < w->rank; ++d) n *= w->dims[d];
  for (int64_t i = 0; i < n; ++i) {
    if (gather)
      memcpy(to + (size_t)i * size, from + offset * (int64_t)size, size);
    else
      memcpy(to + offset * (int64_t)size, from + (size_t)i * size, size);
    for (int d = w->rank - 1; d >= 0; --d) { /* the next coordinates, the last fastest */
      offset += w->strides[d];
      if (++coord[d] < w->dims[d]) break;
      offset -= w->strides[d] * w->dims[d];
      coord[d] = 0;
    }
  }
}

/* y = the elements of x that the slice takes, in order, of any dtype. */
void ct_cpu_strided_slice(ct_kernel_ctx *ctx) {
  const ct_tensor *x = &ctx->inputs[0], *y = &ctx->outputs[0];
  int64_t strides[CT_MAX_RANK];
  const int64_t base = ct_slice_view(&ctx->attrs->slice, &x->shape, strides);
  const size_t size = ct_dtype_size(x->dtype);
  const strided_walk w = {y->shape.rank, y->shape.dims, strides};
  copy_strided(&w, (const char *)x->data + base * (int64_t)size, y->data, size, 1);
}

/* y = x with its axes permuted (attrs.transpose), of any dtype. */
void ct_cpu_transpose(ct_kernel_ctx *ctx) {
  const ct_tensor *x = &ctx->inputs[0], *y = &ctx->outputs[0];
  int64_t strides[CT_MAX_RANK];
  ct_transpose_view(&ctx->attrs->transpose, &x->shape, strides);
  const strided_walk w = {y->shape.rank, y->shape.dims, strides};
  copy_strided(&w, x->data, y->data, ct_dtype_size(x->dtype), 1);
}

/* StridedSliceGrad(dy, x): zeros shaped like x, dy where the slice took. */
void ct_cpu_strided_slice_grad(ct_kernel_ctx *ctx) {
  const ct_tensor *dy = &ctx->inputs[0], *dx = &ctx->outputs[0];
  int64_t strides[CT_MAX_RANK];
  const int64_t base = ct_slice_view(&ctx->attrs->slice, &dx->shape, strides);
  const size_t size = ct_dtype_size(dx->dtype);
  memset(dx->data, 0, (size_t)ct_shape_elements(&dx->shape) * size);
  const strided_walk w = {dy->shape.rank, dy->shape.dims, strides};
  copy_strided(&w, dy->data, (char *)dx->data + base * (int64_t)size, size, 0);
}
