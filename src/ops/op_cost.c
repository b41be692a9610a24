#include "ops/op_cost.h"

#include <string.h>

static double elements(const ct_shape *s) {
  const int64_t n = ct_shape_elements(s);
  return n > 0 ? (double)n : 0.0;
}

static int named(const ct_op_def *op, const char *name) { return strcmp(op->name, name) == 0; }

int ct_op_is_dense(const ct_op_def *op) {
  return named(op, "Conv2D") || named(op, "Conv2DBackpropInput") ||
         named(op, "Conv2DBackpropFilter") || named(op, "MatMul");
}

/* Conv2D: y [N, OH, OW, OC] from x and filter [KH, KW, IC, OC]; each of
 * the gradients does the same multiply-accumulates: one per element of y
 * (dy) and filter tap. */
static double conv_flops(const ct_op_def *op, const ct_shape *in, const ct_shape *out) {
  const ct_shape *filter = named(op, "Conv2D")                ? &in[1]
                           : named(op, "Conv2DBackpropInput") ? &in[0]
                                                              : &out[0];
  const ct_shape *y = named(op, "Conv2D") ? &out[0] : &in[1];
  if (filter->rank != 4) return 0;
  return 2.0 * elements(y) * (double)(filter->dims[0] * filter->dims[1] * filter->dims[2]);
}

/* MatMul: [M, K] x [K, N]: 2 M N K. */
static double matmul_flops(const ct_attrs *attrs, const ct_shape *in, const ct_shape *out) {
  if (in[0].rank != 2) return 0;
  const int64_t k = attrs->matmul.transpose_a ? in[0].dims[0] : in[0].dims[1];
  return 2.0 * elements(&out[0]) * (double)k;
}

/* Ops that only move or view data. */
static const char *const k_no_arithmetic[] = {
    "Placeholder", "Const", "Variable", "Identity",  "Reshape",  "ReshapeLike",  "ConcatV2",
    "ConcatGrad",  "Split", "NoOp",     "ZerosLike", "OnesLike", "BroadcastLike",
    "StridedSlice", "StridedSliceGrad", "StopGradient"};

/* Per element of the largest input or output: a few operations each. */
static double per_element(const ct_op_def *op) {
  if (named(op, "FusedBatchNorm") || named(op, "FusedBatchNormGrad")) return 8;
  if (named(op, "ApplyAdam")) return 10;
  if (named(op, "ApplyMomentum") || named(op, "LRN") || named(op, "LRNGrad")) return 4;
  if (named(op, "SparseSoftmaxCrossEntropyWithLogits")) return 5;
  return 1;
}

double ct_op_flops(const ct_op_def *op, const ct_attrs *attrs, int n_inputs,
                   const ct_shape *in_shapes, int n_outputs, const ct_shape *out_shapes) {
  if (named(op, "Conv2D") || named(op, "Conv2DBackpropInput") || named(op, "Conv2DBackpropFilter"))
    return n_inputs >= 2 && n_outputs >= 1 ? conv_flops(op, in_shapes, out_shapes) : 0;
  if (named(op, "MatMul"))
    return n_inputs >= 2 && n_outputs >= 1 ? matmul_flops(attrs, in_shapes, out_shapes) : 0;
  for (size_t i = 0; i < sizeof k_no_arithmetic / sizeof k_no_arithmetic[0]; ++i)
    if (named(op, k_no_arithmetic[i])) return 0;
  double largest = 0;
  for (int j = 0; j < n_inputs; ++j)
    if (elements(&in_shapes[j]) > largest) largest = elements(&in_shapes[j]);
  for (int o = 0; o < n_outputs; ++o)
    if (elements(&out_shapes[o]) > largest) largest = elements(&out_shapes[o]);
  return per_element(op) * largest;
}
