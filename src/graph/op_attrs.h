/* The attributes of a node, one typed struct per op (or family of ops that
 * share them): the op's builder fills its member of ct_attrs, and its shape
 * rule, gradient and kernels (CPU and CUDA) read that member alone, e.g.
 * ctx->attrs->conv2d.strides[0]. Ops without attributes leave ct_attrs
 * zeroed. */
#ifndef CTOWER_GRAPH_OP_ATTRS_H
#define CTOWER_GRAPH_OP_ATTRS_H

#include <stdint.h>

#include "ctower/tensor.h"

/* Placeholder, Const, Variable. */
typedef struct ct_source_attrs {
  ct_shape shape; /* the output's shape, -1 where unknown */
  ct_dtype dtype; /* the output's dtype */
} ct_source_attrs;

/* Reshape. */
typedef struct ct_reshape_attrs {
  ct_shape shape; /* the target shape; at most one -1, resolved from the input's size */
} ct_reshape_attrs;

/* ConcatV2, ConcatGrad (as its Concat's), ArgMax. */
typedef struct ct_axis_attrs {
  int64_t axis; /* the axis joined or reduced; negative counts back from the rank */
} ct_axis_attrs;

enum { CT_SPLIT_MAX_PARTS = 64 };

/* Split. */
typedef struct ct_split_attrs {
  int64_t axis; /* the axis split; negative counts back from the rank */
  int n_sizes;  /* 0: as many equal parts as the node has outputs; else its output count */
  int32_t sizes[CT_SPLIT_MAX_PARTS]; /* part k's size along axis; one may be -1: the rest */
} ct_split_attrs;

/* StridedSlice, StridedSliceGrad (as its StridedSlice's): per axis of the
 * input, elements begin, begin + stride, ... before end (ops/slice_geometry.h). */
typedef struct ct_slice_attrs {
  int64_t begin[CT_MAX_RANK];  /* negative counts back from the axis' size */
  int64_t end[CT_MAX_RANK];    /* one past the last (before, for a negative stride) */
  int64_t stride[CT_MAX_RANK]; /* not 0 */
  unsigned begin_mask;         /* bit d: axis d starts at its start (end for stride < 0) */
  unsigned end_mask;           /* bit d: axis d runs to its end (start for stride < 0) */
} ct_slice_attrs;

/* Transpose: output axis d is input axis perm[d]. */
typedef struct ct_transpose_attrs {
  int perm[CT_MAX_RANK];
} ct_transpose_attrs;

/* Sum, Mean, ReduceGrad (as its reduction's, plus `mean`). */
typedef struct ct_reduce_attrs {
  unsigned axes_mask; /* bit d set: axis d is reduced (resolved when built) */
  int keep_dims;      /* reduced axes stay, with size 1 */
  int mean;           /* ReduceGrad only: 1 when the reduction was a mean */
} ct_reduce_attrs;

/* MatMul. */
typedef struct ct_matmul_attrs {
  int transpose_a; /* a is [K, M] rather than [M, K] */
  int transpose_b; /* b is [N, K] rather than [K, N] */
} ct_matmul_attrs;

/* Conv2D, Conv2DBackpropInput, Conv2DBackpropFilter (as their Conv2D's). */
typedef struct ct_conv2d_attrs {
  int64_t strides[2];   /* along H and W */
  int64_t dilations[2]; /* along H and W: the filter's taps that far apart (1: adjacent) */
  int same_padding;     /* 1 for SAME, 0 for VALID */
  int relu;           /* Conv2D: its output max(0, y) (ct_conv2d_bias) */
} ct_conv2d_attrs;

/* MaxPool, AvgPool and their gradients. */
typedef struct ct_pool_attrs {
  int64_t window[2]; /* the window's height and width */
  int64_t stride[2]; /* along H and W */
  int same_padding;  /* 1 for SAME, 0 for VALID */
} ct_pool_attrs;

/* LRN, LRNGrad. */
typedef struct ct_lrn_attrs {
  int64_t depth_radius; /* channels on each side of the centre in the window */
  float bias, alpha, beta;
} ct_lrn_attrs;

/* FusedBatchNorm, FusedBatchNormInference and their gradients. */
typedef struct ct_batch_norm_attrs {
  float epsilon; /* added to the variance */
  int relu;      /* FusedBatchNorm and its gradient: y = max(0, batch norm of x), in one
                    pass (ct_batch_norm_relu) */
} ct_batch_norm_attrs;

/* AssignMovingAvg. */
typedef struct ct_moving_average_attrs {
  float momentum; /* the weight of the old value */
} ct_moving_average_attrs;

/* Dropout, DropoutGrad (as its Dropout's, so that both see the same mask). */
typedef struct ct_dropout_attrs {
  float rate;      /* the probability of dropping an element, when no input gives it */
  uint64_t stream; /* the random stream: the forward node's seed */
  int rate_input;  /* the input that gives the rate (an f32 scalar), or 0: `rate` */
} ct_dropout_attrs;

/* ApplyGradientDescent. */
typedef struct ct_gradient_descent_attrs {
  float weight_decay;
} ct_gradient_descent_attrs;

/* ApplyMomentum. */
typedef struct ct_momentum_attrs {
  float momentum;
  float weight_decay;
  int nesterov; /* 1 for Nesterov's update */
} ct_momentum_attrs;

/* ApplyAdam. */
typedef struct ct_adam_attrs {
  float beta1, beta2, epsilon;
  float weight_decay;
} ct_adam_attrs;

/* CollectiveReduce and CollectiveBroadcast. */
typedef struct ct_collective_attrs {
  int64_t instance_key; /* which of a step's collectives: its all-reduce bucket */
  int rooted;           /* CollectiveReduce: 1 when the sum goes to `root` only */
  int root;             /* the rank that receives the sum, or that broadcasts */
} ct_collective_attrs;

/* CompressGradient, DecompressGradient, CompressedAllReduce. */
typedef struct ct_compress_attrs {
  int compression;      /* a ct_compression */
  int64_t n;            /* the values packed (DecompressGradient, CompressedAllReduce) */
  int64_t instance_key; /* CompressedAllReduce: its bucket */
} ct_compress_attrs;

/* UnaryMathGrad: the row of ops/unary_math.h whose derivative it computes. */
typedef struct ct_unary_math_attrs {
  int op; /* a ct_unary_math_op */
} ct_unary_math_attrs;

/* BinaryMathGrad: the row of ops/binary_math.h and the input (0: a, 1: b)
 * whose partial it computes. */
typedef struct ct_binary_math_attrs {
  int op;   /* a ct_binary_math_op */
  int side; /* 0: dL/da, 1: dL/db */
} ct_binary_math_attrs;

/* A node's attributes: the member named for its op. */
typedef union ct_attrs {
  ct_source_attrs source;
  ct_reshape_attrs reshape;
  ct_axis_attrs axis;
  ct_split_attrs split;
  ct_slice_attrs slice;
  ct_transpose_attrs transpose;
  ct_reduce_attrs reduce;
  ct_matmul_attrs matmul;
  ct_conv2d_attrs conv2d;
  ct_pool_attrs pool;
  ct_lrn_attrs lrn;
  ct_batch_norm_attrs batch_norm;
  ct_moving_average_attrs moving_average;
  ct_dropout_attrs dropout;
  ct_gradient_descent_attrs gradient_descent;
  ct_momentum_attrs momentum;
  ct_adam_attrs adam;
  ct_collective_attrs collective;
  ct_compress_attrs compress;
  ct_unary_math_attrs unary_math;
  ct_binary_math_attrs binary_math;
} ct_attrs;

#endif
