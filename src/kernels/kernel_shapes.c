/* Shape arithmetic shared by CPU and GPU kernels (kernel_shapes.h). */
#include "kernels/kernel_shapes.h"
#include "ops/slice_geometry.h"

broadcast_kind ct_broadcast_kind_of(const ct_shape *in, const ct_shape *out, int64_t *block) {
  int64_t n = ct_shape_elements(in);
  if (ct_shape_elements(out) == n) return SAME;
  if (n == 1) return SCALAR;
  /* in == trailing dims of out (leading 1s ignored) */
  int lead = 0;
  while (lead < in->rank && in->dims[lead] == 1) ++lead;
  int k = in->rank - lead;
  for (int d = 0; d < k; ++d)
    if (in->dims[lead + d] != out->dims[out->rank - k + d]) return GENERAL;
  *block = n;
  return TRAILING;
}

void ct_broadcast_strides(const ct_shape *in, const ct_shape *out, int64_t *strides) {
  int64_t stride = 1;
  for (int d = out->rank - 1; d >= 0; --d) {
    int di = d - (out->rank - in->rank);
    strides[d] = di < 0 || in->dims[di] == 1 ? 0 : stride;
    if (di >= 0) stride *= in->dims[di];
  }
}

size_t ct_row_bytes(const ct_tensor *t, int axis) {
  size_t n = ct_dtype_size(t->dtype);
  for (int d = axis; d < t->shape.rank; ++d) n *= (size_t)t->shape.dims[d];
  return n;
}

int64_t ct_outer_count(const ct_shape *s, int axis) {
  int64_t n = 1;
  for (int d = 0; d < axis; ++d) n *= s->dims[d];
  return n;
}

int64_t ct_inner_count(const ct_shape *s, int axis) {
  int64_t n = 1;
  for (int d = axis + 1; d < s->rank; ++d) n *= s->dims[d];
  return n;
}

static int resolve_axis(int64_t axis, int rank) { return (int)(axis < 0 ? axis + rank : axis); }

int ct_kernel_axis(const ct_kernel_ctx *ctx, int rank) {
  return resolve_axis(ctx->attrs->axis.axis, rank);
}

int ct_kernel_split_axis(const ct_kernel_ctx *ctx, int rank) {
  return resolve_axis(ctx->attrs->split.axis, rank);
}

int64_t ct_slice_view(const ct_slice_attrs *a, const ct_shape *in, int64_t *strides) {
  int64_t base = 0, element = 1;
  for (int d = in->rank - 1; d >= 0; --d) {
    const ct_slice_range r =
        ct_slice_range_of(in->dims[d], a->begin[d], a->end[d], a->stride[d],
                          (a->begin_mask >> d) & 1, (a->end_mask >> d) & 1);
    base += r.first * element;
    strides[d] = a->stride[d] * element;
    element *= in->dims[d];
  }
  return base;
}

void ct_transpose_view(const ct_transpose_attrs *a, const ct_shape *in, int64_t *strides) {
  int64_t in_strides[CT_MAX_RANK], element = 1;
  for (int d = in->rank - 1; d >= 0; --d) {
    in_strides[d] = element;
    element *= in->dims[d];
  }
  for (int d = 0; d < in->rank; ++d) strides[d] = in_strides[a->perm[d]];
}

void ct_conv_shapes(const ct_kernel_ctx *ctx, conv_kind kind, const ct_shape **x,
                    const ct_shape **filter, const ct_shape **y) {
  switch (kind) {
    case CONV_FORWARD:
      *x = &ctx->inputs[0].shape, *filter = &ctx->inputs[1].shape, *y = &ctx->outputs[0].shape;
      break;
    case CONV_BACKWARD_DATA:
      *filter = &ctx->inputs[0].shape, *y = &ctx->inputs[1].shape, *x = &ctx->outputs[0].shape;
      break;
    case CONV_BACKWARD_FILTER:
      *x = &ctx->inputs[0].shape, *y = &ctx->inputs[1].shape, *filter = &ctx->outputs[0].shape;
      break;
  }
}

ct_shape ct_reduce_kept_shape(const ct_shape *x, unsigned mask, int64_t *count) {
  ct_shape kept = *x;
  *count = 1;
  for (int d = 0; d < x->rank; ++d)
    if (mask & (1u << d)) {
      *count *= x->dims[d];
      kept.dims[d] = 1;
    }
  return kept;
}

void ct_reduce_axes(const ct_shape *x, unsigned mask, ct_axes *kept, ct_axes *reduced) {
  int64_t stride = 1;
  kept->rank = reduced->rank = 0;
  for (int d = x->rank - 1; d >= 0; --d) { /* innermost first, then reversed */
    ct_axes *side = mask & (1u << d) ? reduced : kept;
    side->dims[side->rank] = x->dims[d];
    side->strides[side->rank++] = stride;
    stride *= x->dims[d];
  }
  ct_axes *sides[2] = {kept, reduced};
  for (int s = 0; s < 2; ++s) {
    ct_axes *a = sides[s];
    for (int lo = 0, hi = a->rank - 1; lo < hi; ++lo, --hi) {
      int64_t t = a->dims[lo];
      a->dims[lo] = a->dims[hi], a->dims[hi] = t;
      t = a->strides[lo];
      a->strides[lo] = a->strides[hi], a->strides[hi] = t;
    }
    if (a->rank == 0) {
      a->rank = 1;
      a->dims[0] = 1;
      a->strides[0] = 0;
    }
  }
}

void ct_rows_channels(const ct_shape *x, int64_t *rows, int64_t *channels) {
  *channels = x->dims[x->rank - 1];
  *rows = *channels ? ct_shape_elements(x) / *channels : 0;
}

int64_t ct_example_elements(const ct_kernel_ctx *ctx) {
  const ct_shape *x = &ctx->inputs[0].shape;
  int64_t per = 1;
  for (int d = 1; d < x->rank; ++d) per *= x->dims[d];
  return per;
}

const ct_tensor *ct_dropout_first_example(const ct_kernel_ctx *ctx) {
  return ctx->n_inputs > 1 && ctx->attrs->dropout.rate_input != 1 ? &ctx->inputs[1] : NULL;
}

int64_t ct_dropout_first_element(const ct_kernel_ctx *ctx) {
  const ct_tensor *first = ct_dropout_first_example(ctx);
  return first ? *(const int64_t *)first->data * ct_example_elements(ctx) : 0;
}
