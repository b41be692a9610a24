/* Launchers of the CUDA code behind the basic GPU kernels (elementwise,
 * reductions, classification, dropout, optimizer updates). Plain pointers to
 * device memory, sizes in elements; each queues its work on `stream` without
 * waiting and returns cudaGetLastError(). Callers do not launch for empty
 * tensors. Elementwise launchers allow y == x (in place).
 *
 * Products that feed a sum go through __fmul_rn, so that nvcc does not fuse
 * them into FMAs: the arithmetic is the CPU kernels', operation for
 * operation (those are built as ISO C, without contraction), and so are the
 * bits, except where CUDA's expf, logf and tanhf differ from the C library's
 * (by an ulp or two) and in sums, which add in another (fixed) order. */
#ifndef CTOWER_LAUNCH_BASIC_H
#define CTOWER_LAUNCH_BASIC_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "ops/binary_math.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
  CT_LAUNCH_MAX_RANK = 5,  /* CT_MAX_RANK */
  CT_LAUNCH_ADD_N_MAX = 64 /* inputs of one ct_launch_add_n */
};

/* An index space of `rank` (>= 1) row-major dims mapped to memory: element i,
 * with coordinates c[d], is at offset sum c[d] * strides[d]. */
typedef struct ct_strided {
  int rank;
  int64_t dims[CT_LAUNCH_MAX_RANK];
  int64_t strides[CT_LAUNCH_MAX_RANK];
} ct_strided;

/* ---- copies and fills (elementwise.cu) ---- */

/* n elements of element_size (1, 2, 4 or 8) bytes: gather, y[i] =
 * x[offset(i, map)]; else scatter, y[offset(i, map)] = x[i]. */
cudaError_t ct_launch_strided_copy(const void *x, void *y, size_t element_size, int64_t n,
                                   const ct_strided *map, int gather, cudaStream_t stream);

cudaError_t ct_launch_zero_bytes(void *y, size_t nbytes, cudaStream_t stream);
cudaError_t ct_launch_fill_f32(float *y, int64_t n, float value, cudaStream_t stream);
cudaError_t ct_launch_copy_bytes(void *dst, const void *src, size_t nbytes, cudaStream_t stream);
/* `rows` rows of row_bytes each, from src (rows src_pitch bytes apart) to
 * dst (rows dst_pitch bytes apart). */
cudaError_t ct_launch_copy_rows(void *dst, size_t dst_pitch, const void *src, size_t src_pitch,
                                size_t row_bytes, int64_t rows, cudaStream_t stream);

/* ---- elementwise (elementwise.cu) ---- */

typedef enum ct_unary_op {
  CT_UNARY_NEG,
  CT_UNARY_RELU,
  CT_UNARY_SIGMOID,
  CT_UNARY_TANH
} ct_unary_op;

/* y = op(x) over n elements. */
cudaError_t ct_launch_unary(ct_unary_op op, const float *x, float *y, int64_t n,
                            cudaStream_t stream);

/* ---- unary math (unary_math.cu) ---- */

/* y = the forward expression of row op (a ct_unary_math_op of
 * ops/unary_math.h) of x, over n elements. */
cudaError_t ct_launch_unary_math(int op, const float *x, float *y, int64_t n,
                                 cudaStream_t stream);
/* dx = row op's derivative of (x, y, dy), over n elements (dx may be x). */
cudaError_t ct_launch_unary_math_grad(int op, const float *x, const float *y, const float *dy,
                                      float *dx, int64_t n, cudaStream_t stream);

/* y = op(a, b); the gradient helpers take (dy, y) for ReluGrad and (y, dy)
 * for SigmoidGrad and TanhGrad; then a row's forward expression for each
 * row of ops/binary_math.h (CT_BINARY_Maximum, ...). */
#define CT_BINARY_MATH_LAUNCH_OP(P, Name, function, forward, da, db, flops, domain) \
  CT_BINARY_##Name,
typedef enum ct_binary_op {
  CT_BINARY_ADD,
  CT_BINARY_SUB,
  CT_BINARY_MUL,
  CT_BINARY_DIV,
  CT_BINARY_RELU_GRAD,
  CT_BINARY_SIGMOID_GRAD,
  CT_BINARY_TANH_GRAD,
  CT_BINARY_MATH(CT_BINARY_MATH_LAUNCH_OP, _)
} ct_binary_op;
#undef CT_BINARY_MATH_LAUNCH_OP

/* Where the operands of y[i] (i < n) are:
 *   CT_OPERANDS_SAME:    a[i], b[i]
 *   CT_OPERANDS_REPEAT_B: a[i], b[i % block] (b a scalar or a bias)
 *   CT_OPERANDS_REPEAT_A: a[i % block], b[i]
 *   CT_OPERANDS_STRIDED: a[offset(i, a_map)], b[offset(i, b_map)], the maps
 *                        sharing y's dims with 0 strides where broadcast. */
typedef enum ct_operands {
  CT_OPERANDS_SAME,
  CT_OPERANDS_REPEAT_B,
  CT_OPERANDS_REPEAT_A,
  CT_OPERANDS_STRIDED
} ct_operands;

typedef struct ct_binary_layout {
  ct_operands kind;
  int64_t block;    /* REPEAT_A, REPEAT_B */
  ct_strided a_map; /* STRIDED */
  ct_strided b_map;
} ct_binary_layout;

cudaError_t ct_launch_binary(ct_binary_op op, const float *a, const float *b, float *y, int64_t n,
                             const ct_binary_layout *layout, cudaStream_t stream);

/* dx[i] = the partial of row op of ops/binary_math.h (a ct_binary_math_op)
 * with respect to input `side` (0: a, 1: b) at a[oa], b[ob] and dy[i], for
 * i < n: oa = i, ob = i when `strided` is 0, else the offsets of a_map and
 * b_map, which share dy's dims with 0 strides where broadcast. */
cudaError_t ct_launch_binary_math_grad(int op, int side, const float *a, const float *b,
                                       const float *dy, float *dx, int64_t n, int strided,
                                       const ct_strided *a_map, const ct_strided *b_map,
                                       cudaStream_t stream);

/* y[i] = x[offset(i, x_map)] * scale for i < n (a broadcast). */
cudaError_t ct_launch_broadcast(const float *x, float *y, int64_t n, const ct_strided *x_map,
                                float scale, cudaStream_t stream);

/* y[i] = x_0[i] + x_1[i] + ... + x_{k-1}[i], added in that order
 * (1 <= k <= CT_LAUNCH_ADD_N_MAX; y may be x_0). */
cudaError_t ct_launch_add_n(const float *const *x, int k, float *y, int64_t n, cudaStream_t stream);

/* Inverted dropout at rate r = *rate_input (a device pointer; NULL: `rate`),
 * clamped into [0, 1): y[i] = keep(i) ? x[i] / (1 - r) : 0, where keep(i) is
 * (hash(seed_stream, step, g) >> 32) >= r * 2^32, the CPU kernel's hash of
 * the global index g = i + *first_example * example_size (first_example is
 * a device pointer to an int64, or NULL for 0). */
cudaError_t ct_launch_dropout(const float *x, float *y, int64_t n, uint64_t seed_stream,
                              uint64_t step, const int64_t *first_example, int64_t example_size,
                              const float *rate_input, float rate, cudaStream_t stream);

/* ---- reductions (elementwise.cu) ---- */

/* A sum of x into y: y element j (j < m) sums the k elements at
 * x[offset(j, kept_x) + offset(r, reduced)] (r < k) and is stored at
 * y[offset(j, kept_y)]; kept_x and kept_y share their dims. */
typedef struct ct_reduce_map {
  int64_t m, k;
  ct_strided kept_x, kept_y, reduced;
} ct_reduce_map;

/* Floats of scratch ct_launch_reduce needs (0: none). */
int64_t ct_reduce_scratch_floats(const ct_reduce_map *map);

/* y = sum * scale, with k >= 1. Each output is summed in a fixed order (a
 * fixed split into chunks, fixed trees), the same bits on every run. */
cudaError_t ct_launch_reduce(const float *x, float *y, const ct_reduce_map *map, float scale,
                             float *scratch, cudaStream_t stream);

/* y[j] = the largest (is_max) or smallest x[offset(j, kept) + offset(r,
 * reduced)] over r < k, for j < m: NaN where one is NaN, +-inf over none. */
cudaError_t ct_launch_max_min(const float *x, float *y, int64_t m, int64_t k,
                              const ct_strided *kept, const ct_strided *reduced, int is_max,
                              cudaStream_t stream);
/* MaxMinGrad: dx at those offsets = (x == y[j]) / (the count of such x) * dy[j]. */
cudaError_t ct_launch_max_min_grad(const float *x, const float *y, const float *dy, float *dx,
                                   int64_t m, int64_t k, const ct_strided *kept,
                                   const ct_strided *reduced, cudaStream_t stream);

/* ---- classification (classification.cu), logits [rows, classes] ---- */

/* loss[n] = logsumexp(logits[n]) - logits[n, labels[n]], backprop = softmax -
 * onehot. A label outside [0, classes) gives a NaN loss and NaN backprop row
 * (the CPU kernel fails instead; the GPU cannot report without waiting). */
cudaError_t ct_launch_softmax_xent(const float *logits, const int32_t *labels, float *loss,
                                   float *backprop, int64_t rows, int64_t classes,
                                   cudaStream_t stream);

/* loss[n] = sum over c of labels * (logsumexp(logits[n]) - logits[n, c]),
 * backprop = softmax - labels (labels [rows, classes]). */
cudaError_t ct_launch_dense_softmax_xent(const float *logits, const float *labels, float *loss,
                                         float *backprop, int64_t rows, int64_t classes,
                                         cudaStream_t stream);

/* out[0] = sum(x^2) / 2 over n >= 0 elements. */
cudaError_t ct_launch_l2_loss(const float *x, float *out, int64_t n, cudaStream_t stream);

/* ---- comparison and conversion (compare.cu); dtypes are ct_dtype codes ---- */

/* out[i] = a[i] == b[i] (1 or 0); a_scalar or b_scalar: that one's element 0 everywhere. */
cudaError_t ct_launch_equal(const void *a, const void *b, uint8_t *out, int dtype, int64_t n,
                            int a_scalar, int b_scalar, cudaStream_t stream);
/* out[i] = a[i] op b[i] (1 or 0) for row op of ops/compare.h (a
 * ct_compare_op), scalars as ct_launch_equal's. */
cudaError_t ct_launch_compare(int op, const void *a, const void *b, uint8_t *out, int dtype,
                              int64_t n, int a_scalar, int b_scalar, cudaStream_t stream);
/* y[i] = x[i] converted from dtype `from` to `to` as C converts. */
cudaError_t ct_launch_cast(const void *x, void *y, int from, int to, int64_t n,
                           cudaStream_t stream);

/* ---- gradient compression (compress.cu) ---- */

/* n values of x packed with `compression` (a ct_compression: bf16, fp16
 * or onebit, whose residual, n floats, is added and rewritten) into out. */
cudaError_t ct_launch_compress(int compression, const float *x, float *residual, uint8_t *out,
                               int64_t n, cudaStream_t stream);
/* The n values packed at in, into y. */
cudaError_t ct_launch_decompress(int compression, const uint8_t *in, float *y, int64_t n,
                                 cudaStream_t stream);

/* x viewed as [outer, classes, inner]: out[o * inner + i] = the first index
 * c of the maximum of x[o, c, i] (0 without classes). */
cudaError_t ct_launch_argmax(const float *x, int32_t *out, int64_t outer, int64_t classes,
                             int64_t inner, cudaStream_t stream);

/* out[0] = the fraction of rows whose argmax equals the label (0 without
 * rows); scratch: `rows` int32. rows may be 0. */
cudaError_t ct_launch_accuracy(const float *logits, const int32_t *labels, float *out,
                               int32_t *scratch, int64_t rows, int64_t classes,
                               cudaStream_t stream);

/* ---- variable updates (train.cu), in place; lr points to a device scalar ---- */

/* v = momentum * v + (1 - momentum) * value */
cudaError_t ct_launch_assign_moving_avg(float *v, const float *value, float momentum, int64_t n,
                                        cudaStream_t stream);
/* var -= lr * (grad + wd * var) */
cudaError_t ct_launch_apply_gradient_descent(float *var, const float *lr, const float *grad,
                                             float wd, int64_t n, cudaStream_t stream);
/* g = grad + wd * var; accum = momentum * accum + g;
 * var -= lr * (nesterov ? g + momentum * accum : accum) */
cudaError_t ct_launch_apply_momentum(float *var, float *accum, const float *lr, const float *grad,
                                     float momentum, float wd, int nesterov, int64_t n,
                                     cudaStream_t stream);
/* g = grad + wd * var; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g g;
 * var -= lr * m / (sqrt(v) + eps) */
cudaError_t ct_launch_apply_adam(float *var, float *m, float *v, const float *lr, const float *grad,
                                 float b1, float b2, float eps, float wd, int64_t n,
                                 cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
