/* Host-side shape arithmetic that CPU and GPU kernels share: how a binary
 * op's operand broadcasts, the rows of a concat or split, the tensors of a
 * convolution and its gradients, the kept shape of a reduction. */
#ifndef CTOWER_KERNEL_SHAPES_H
#define CTOWER_KERNEL_SHAPES_H

#include "kernels/kernel.h"

/* How an operand relates to the output: same shape, a single value, a block
 * of the output's trailing dims repeated (a bias), or anything else. */
typedef enum { SAME, SCALAR, TRAILING, GENERAL } broadcast_kind;
/* *block is set to the operand's size for TRAILING. */
broadcast_kind ct_broadcast_kind_of(const ct_shape *in, const ct_shape *out, int64_t *block);

/* Output-shaped strides of `in` (0 where broadcast), right-aligned to the
 * output's rank. */
void ct_broadcast_strides(const ct_shape *in, const ct_shape *out, int64_t *strides);

/* Bytes of one "row" along `axis`: dims[axis] * (product of later dims). */
size_t ct_row_bytes(const ct_tensor *t, int axis);
/* The product of the dims before `axis`. */
int64_t ct_outer_count(const ct_shape *s, int axis);
/* The product of the dims after `axis`. */
int64_t ct_inner_count(const ct_shape *s, int axis);
/* attrs->axis as an axis of a tensor of this rank (negative counts back). */
int ct_kernel_axis(const ct_kernel_ctx *ctx, int rank);
/* attrs->split's axis, as ct_kernel_axis. */
int ct_kernel_split_axis(const ct_kernel_ctx *ctx, int rank);

/* StridedSlice of `in` (attrs.slice): output element c (coordinates) is
 * input element base + sum of c[d] * strides[d] (in elements; a stride may
 * be negative). Fills strides[0..rank-1], returns base. */
int64_t ct_slice_view(const ct_slice_attrs *a, const ct_shape *in, int64_t *strides);

/* Transpose of `in` (attrs.transpose): output element c is input element
 * sum of c[d] * strides[d]. Fills strides[0..rank-1]. */
void ct_transpose_view(const ct_transpose_attrs *a, const ct_shape *in, int64_t *strides);

/* Conv2D (x, filter -> y), Conv2DBackpropInput (filter, dy -> dx) and
 * Conv2DBackpropFilter (x, dy -> dfilter): where each tensor is. */
typedef enum { CONV_FORWARD, CONV_BACKWARD_DATA, CONV_BACKWARD_FILTER } conv_kind;
/* Shapes of x [N, H, W, C], filter [R, S, C, K] and y [N, P, Q, K] for each kind. */
void ct_conv_shapes(const ct_kernel_ctx *ctx, conv_kind kind, const ct_shape **x,
                    const ct_shape **filter, const ct_shape **y);

/* x viewed as [rows, channels], channels its last dim (0 rows when it has
 * no channels). */
void ct_rows_channels(const ct_shape *x, int64_t *rows, int64_t *channels);

/* Dropout and DropoutGrad: their first_example input (an i64 scalar),
 * or NULL when they have none. */
const ct_tensor *ct_dropout_first_example(const ct_kernel_ctx *ctx);
/* On a CPU device: the global index of element 0, first_example (in host
 * memory; 0 when absent) times the size of one example. */
int64_t ct_dropout_first_element(const ct_kernel_ctx *ctx);
/* The size of one example of input 0 (elements after the batch dim). */
int64_t ct_example_elements(const ct_kernel_ctx *ctx);

/* x's shape with the axes in `mask` set to 1; *count: how many elements
 * each output element of the reduction sums. */
ct_shape ct_reduce_kept_shape(const ct_shape *x, unsigned mask, int64_t *count);
/* Axes of x walked in row-major order: element i of them is at x offset
 * sum of coordinate[d] * strides[d]. */
typedef struct ct_axes {
  int rank; /* >= 1 */
  int64_t dims[CT_MAX_RANK];
  int64_t strides[CT_MAX_RANK];
} ct_axes;
/* x's axes split by a reduction's mask: the kept ones (output element j
 * is element j of them, as the kept shape orders it) and the reduced ones;
 * a side without axes is one axis of 1. */
void ct_reduce_axes(const ct_shape *x, unsigned mask, ct_axes *kept, ct_axes *reduced);
static inline int64_t ct_axes_offset(const ct_axes *a, int64_t i) {
  int64_t offset = 0;
  for (int d = a->rank - 1; d >= 0; --d) {
    offset += (i % a->dims[d]) * a->strides[d];
    i /= a->dims[d];
  }
  return offset;
}
static inline int64_t ct_axes_count(const ct_axes *a) {
  int64_t n = 1;
  for (int d = 0; d < a->rank; ++d) n *= a->dims[d];
  return n;
}

#endif
