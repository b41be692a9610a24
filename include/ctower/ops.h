/* ctower operations: one builder per op. Each records a node in the graph
 * under the current name and device scopes and returns its output. Shapes
 * are checked here, when the node is built: an input that does not fit
 * records an INVALID_ARGUMENT naming the node and both shapes.
 *
 * Images are NHWC, convolution filters HWIO [R, S, C, K] (as TensorFlow).
 * Binary elementwise ops broadcast as NumPy does.
 */
#ifndef CTOWER_OPS_H
#define CTOWER_OPS_H

#include "ctower/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ct_padding { CT_PADDING_VALID = 0, CT_PADDING_SAME = 1 } ct_padding;

/* Variables (their scopes and table: ctower/graph.h). */
/* Gets or creates the variable "<variable scopes>/<name>" (f32). A second
 * call with the same full name returns the same variable, read here (under
 * the current name scope); a different shape is an error. Trainable
 * variables are what ct_trainable_variables lists for optimizers. */
ct_output ct_variable(ct_graph *graph, const char *name, ct_shape shape,
                      ct_initializer init, int trainable);

/* As ct_variable, for a layer's own variables: outside a reuse scope
 * (ct_graph_push_variable_reuse) a variable of that full name that exists
 * already records INVALID_ARGUMENT naming it and the name scope asking for
 * it, and returns a null output, rather than sharing it. */
ct_output ct_variable_create(ct_graph *graph, const char *name, ct_shape shape, ct_initializer init,
                             int trainable);

/* A read of variable i under the current scopes (a node of op "Variable"). */
ct_output ct_variable_read(ct_graph *graph, int index);
/* Writes `value` (of the variable's shape) into the variable that
 * `variable` reads (a node of op "Variable"): an "Assign" node, which
 * returns the variable. No gradient flows through it. */
ct_output ct_assign(ct_graph *graph, ct_output variable, ct_output value);

/* Tags the variable that `variable` reads with its own L2 weight decay, as
 * TensorFlow's tutorials add decay * l2_loss(w) = decay / 2 * sum(w^2) to the
 * loss for chosen variables: optimizers add decay * w to its gradient, on top
 * of their own weight_decay (which applies to every trainable variable). The
 * reported loss does not include the term. decay < 0 or a `variable` that is
 * not a variable read records INVALID_ARGUMENT. */
void ct_variable_set_weight_decay(ct_graph *graph, ct_output variable, float decay);

/* Gives the variable that `variable` reads an initializer seed of its own,
 * as the seed= of TensorFlow's initializers: its initial values are drawn
 * from a stream of the graph seed and `seed` rather than of the graph seed
 * and its name, so that variables of one shape, initializer and seed start
 * equal. A `variable` that is not a variable read records INVALID_ARGUMENT. */
void ct_variable_set_initializer_seed(ct_graph *graph, ct_output variable, uint64_t seed);
/* TensorFlow's (seed, seed2) of a CT_INIT_TF_* initializer, as its random op
 * takes them after tf.get_seed: the Philox key and the counter's high half.
 * Another kind, or a `variable` that is not a variable read, records
 * INVALID_ARGUMENT. */
void ct_variable_set_initializer_seeds(ct_graph *graph, ct_output variable, uint64_t seed,
                                       uint64_t seed2);
/* Centres the random initializer of the variable that `variable` reads
 * (CT_INIT_UNIFORM, CT_INIT_NORMAL, CT_INIT_RANDOM_NORMAL or a CT_INIT_TF_*
 * kind, which adds it after the scale as TensorFlow does) on `mean`:
 * each initial value is mean + what the initializer draws, so U(minval,
 * maxval) is CT_INIT_UNIFORM of scale (maxval - minval) / 2 and mean
 * (minval + maxval) / 2, and a normal one is truncated at mean +- 2 scale,
 * as TensorFlow's initializers with mean=. Another kind is an
 * INVALID_ARGUMENT error. */
void ct_variable_set_initializer_mean(ct_graph *graph, ct_output variable, float mean);

/* Sources. */
ct_output ct_placeholder(ct_graph *g, const char *name, ct_dtype dtype, ct_shape shape);
/* Gives a placeholder that no node reads yet another shape: for front ends
 * whose placeholders may be made without a rank and take the one their
 * first use needs. Returns 0, or sets the graph's error (INVALID_ARGUMENT:
 * not a placeholder, or already read) and returns -1. */
int ct_placeholder_set_shape(ct_graph *g, ct_output placeholder, ct_shape shape);
/* A constant holding a copy of `value` (the graph keeps the copy). */
ct_output ct_constant(ct_graph *g, const char *name, const ct_tensor *value);
ct_output ct_scalar(ct_graph *g, float value);
ct_output ct_zeros_like(ct_graph *g, ct_output x);
ct_output ct_ones_like(ct_graph *g, ct_output x);

/* Elementwise. */
ct_output ct_identity(ct_graph *g, ct_output x);
ct_output ct_neg(ct_graph *g, ct_output x);
ct_output ct_add(ct_graph *g, ct_output a, ct_output b);
ct_output ct_sub(ct_graph *g, ct_output a, ct_output b);
ct_output ct_mul(ct_graph *g, ct_output a, ct_output b);
ct_output ct_div(ct_graph *g, ct_output a, ct_output b);
ct_output ct_relu(ct_graph *g, ct_output x);
ct_output ct_sigmoid(ct_graph *g, ct_output x);
ct_output ct_tanh(ct_graph *g, ct_output x);
ct_output ct_add_n(ct_graph *g, int n, const ct_output *xs);
/* The elementwise unary math op named `op` by TensorFlow ("Exp", "Sqrt",
 * "Round" rounding half to even, ...: ct_unary_math_name lists them) of an
 * f32 x. Another name records INVALID_ARGUMENT in the graph and returns the
 * null output. */
ct_output ct_unary_math(ct_graph *g, const char *op, ct_output x);
/* The name of unary math op k (0, 1, ... in a fixed order), or NULL past
 * the last; *function (when not NULL) gets TensorFlow's Python function
 * for it ("exp" for "Exp"). */
const char *ct_unary_math_name(int k, const char **function);
/* The elementwise binary math op named `op` by TensorFlow ("Maximum",
 * "Pow", ...: ct_binary_math_name lists them) of f32 a and b, which
 * broadcast as NumPy's (as ct_add's do). Another name records
 * INVALID_ARGUMENT in the graph and returns the null output. */
ct_output ct_binary_math(ct_graph *g, const char *op, ct_output a, ct_output b);
/* The name of binary math op k (0, 1, ... in a fixed order), or NULL past
 * the last; *function (when not NULL) gets TensorFlow's Python function
 * for it ("maximum" for "Maximum"). */
const char *ct_binary_math_name(int k, const char **function);
/* sums[k] = parts[0] + ... + parts[n-1] (in that order), on parts[k]'s
 * device: one collective across devices (NCCL between GPUs). Returns 0, or
 * 1 with the error recorded in the graph. */
int ct_all_reduce(ct_graph *g, int n, const ct_output *parts, ct_output *sums);
/* The sum of x over every rank of the job (x itself in a process on its
 * own): every rank runs its CollectiveReduces in one order, each with its
 * own instance_key (reported by the stall inspector). */
ct_output ct_collective_reduce(ct_graph *g, ct_output x, int64_t instance_key);
/* The sum of x over every rank on rank `root`, zeros on the others (x
 * itself in a process on its own): MPI's reduce, a CollectiveReduce with a
 * root. Its gradient is the CollectiveBroadcast from root. */
ct_output ct_collective_reduce_to(ct_graph *g, ct_output x, int root, int64_t instance_key);
/* Rank root's x on every rank (x itself in a process on its own). Its
 * gradient is the CollectiveReduce of the output's gradient to root. Every
 * rank runs the collectives in one order, as for ct_collective_reduce. */
ct_output ct_collective_broadcast(ct_graph *g, ct_output x, int root, int64_t instance_key);

/* Gradients compressed for the way between ranks (the replicated update's
 * devices.compression):
 *   BF16, FP16: each value in 16 bits, rounded to nearest even (FP16:
 *     IEEE half, beyond 65504 infinite, as Horovod's fp16 compression);
 *   ONEBIT: 1-bit SGD (Seide et al., 2014): each value its sign, and each
 *     column of CT_ONEBIT_COLUMN consecutive values the means of its
 *     values >= 0 and < 0, which the signs reconstruct; what that loses
 *     (the quantization error) is kept in a residual variable and added
 *     to the next step's values before they are packed (error feedback).
 * Packed, n floats take ct_compressed_bytes(c, n) bytes: 2n for BF16 and
 * FP16; for ONEBIT 40 bytes a column (its two means, then 256 bits, bit i
 * of 32-bit word w set when value 32 w + i is >= 0), the last column
 * padded with zero bits. */
typedef enum ct_compression {
  CT_COMPRESSION_NONE = 0,
  CT_COMPRESSION_BF16,
  CT_COMPRESSION_FP16,
  CT_COMPRESSION_ONEBIT,
  CT_COMPRESSION_COUNT
} ct_compression;
enum {
  CT_ONEBIT_COLUMN = 256,
  CT_ONEBIT_COLUMN_BYTES = 2 * 4 + CT_ONEBIT_COLUMN / 8,
  CT_ONEBIT_LANES = 8 /* a column's sums: value i adds into lane i % 8, in order; then the
                         lanes ((0 + 1) + (2 + 3)) + ((4 + 5) + (6 + 7)) */
};
int64_t ct_compressed_bytes(ct_compression compression, int64_t n);
/* "none", "bf16", "fp16", "onebit" (the config's words); "?" for others. */
const char *ct_compression_name(ct_compression compression);
/* CompressGradient: x (f32, any shape, n values) packed into u8
 * [ct_compressed_bytes(c, n)]. ONEBIT reads and writes `residual`, a read
 * of an f32 variable of x's element count (ct_variable_read): x +
 * residual is packed, and residual becomes what the packing lost; other
 * compressions take none (a null output). */
ct_output ct_compress_gradient(ct_graph *g, ct_output x, ct_compression c, ct_output residual);
/* DecompressGradient: packed (u8, as CompressGradient makes it) back into
 * f32 [n]. */
ct_output ct_decompress_gradient(ct_graph *g, ct_output packed, ct_compression c, int64_t n);
/* CompressedAllReduce: the sum over every rank of the n values each rank's
 * `packed` holds, packed the same way, the same bits on every rank.
 * Rank j sums stripe j of the values (an equal share of the elements, or
 * of ONEBIT's columns) in f32 in rank order, packs its sum (ONEBIT: with
 * stripe_residual, a read of an f32 variable of n elements, as
 * CompressGradient does with its residual; else a null output) and every
 * rank gathers every stripe: 2 (p - 1) / p of the packed bytes go each way
 * per rank. Runs on CPU devices; every rank runs the same ones in one
 * order (instance_key names the bucket, as for ct_collective_reduce). */
ct_output ct_compressed_all_reduce(ct_graph *g, ct_output packed, ct_compression c, int64_t n,
                                   ct_output stripe_residual, int64_t instance_key);
/* x broadcast to the shape of `like` / summed down to the shape of `like`. */
ct_output ct_broadcast_like(ct_graph *g, ct_output x, ct_output like);
ct_output ct_sum_like(ct_graph *g, ct_output x, ct_output like);

/* Linear algebra and convolution. */
ct_output ct_matmul(ct_graph *g, ct_output a, ct_output b, int transpose_a, int transpose_b);
ct_output ct_conv2d(ct_graph *g, ct_output x, ct_output filter, int stride_h, int stride_w,
                    ct_padding padding);
/* ct_conv2d with the filter's taps dilation_h rows and dilation_w columns
 * apart (tf.nn.conv2d's dilations=[1, dilation_h, dilation_w, 1]). */
ct_output ct_conv2d_dilated(ct_graph *g, ct_output x, ct_output filter, int stride_h,
                            int stride_w, int dilation_h, int dilation_w, ct_padding padding);
/* ct_conv2d plus bias [filters] (a null output for none), then with relu
 * ct_relu, as one op (TensorFlow's _FusedConv2D): the bias and the ReLU
 * applied as the convolution's results are written, not in passes of their
 * own. The same values as the separate ops. */
ct_output ct_conv2d_bias(ct_graph *g, ct_output x, ct_output filter, ct_output bias, int stride_h,
                         int stride_w, ct_padding padding, int relu);
/* Pooling of x [N, H, W, C] over ksize x ksize windows at `stride` along H and W. */
ct_output ct_max_pool(ct_graph *g, ct_output x, int ksize, int stride, ct_padding padding);
ct_output ct_avg_pool(ct_graph *g, ct_output x, int ksize, int stride, ct_padding padding);
/* The same over windows of kh rows and kw columns, at stride_h and stride_w. */
ct_output ct_max_pool_hw(ct_graph *g, ct_output x, int kh, int kw, int stride_h, int stride_w,
                         ct_padding padding);
ct_output ct_avg_pool_hw(ct_graph *g, ct_output x, int kh, int kw, int stride_h, int stride_w,
                         ct_padding padding);
/* Local response normalization across channels, as tf.nn.lrn:
 * y = x / (bias + alpha * sum over [c - radius, c + radius] of x^2)^beta. */
ct_output ct_lrn(ct_graph *g, ct_output x, int depth_radius, float bias, float alpha,
                 float beta);

/* Batch normalization over all axes but the last (channels).
 * Training: normalizes with the batch statistics; when moving_mean and
 * moving_var are variables (not {NULL,0}) it registers update ops that move
 * them toward the batch statistics with `momentum` (TF's decay).
 * Inference: normalizes with moving_mean and moving_var. */
ct_output ct_batch_norm(ct_graph *g, ct_output x, ct_output gamma, ct_output beta,
                        ct_output moving_mean, ct_output moving_var, int training,
                        float momentum, float epsilon);
/* ct_relu of ct_batch_norm, as one op in training (FusedBatchNorm with its
 * ReLU: one pass over the activations fewer forward, two backward); in
 * inference a batch norm then a ReLU. The same values as the two ops. */
ct_output ct_batch_norm_relu(ct_graph *g, ct_output x, ct_output gamma, ct_output beta,
                             ct_output moving_mean, ct_output moving_var, int training,
                             float momentum, float epsilon);

/* Inverted dropout: zeroes each element with probability `rate` and scales
 * the rest by 1/(1-rate). The mask is a pure function of the graph seed, the
 * node's name, the session step and the element: reproducible and resumable. */
ct_output ct_dropout(ct_graph *g, ct_output x, float rate);
/* The same with the rate a tensor (an f32 scalar, e.g. a placeholder fed
 * 0.5 in training and 0 in evaluation, as TensorFlow's keep_prob is). A
 * run whose rate lies outside [0, 1) fails naming it (on a GPU, where the
 * rate is not read on the host, it is clamped into that range). */
ct_output ct_dropout_tensor(ct_graph *g, ct_output x, ct_output rate);

/* Shapes. A -1 in `shape` is inferred from the element count. */
ct_output ct_reshape(ct_graph *g, ct_output x, ct_shape shape);
ct_output ct_concat(ct_graph *g, int n, const ct_output *xs, int axis);
/* Splits x into n (1 to 64) equal parts along axis; fills outs[0..n-1]. */
void ct_split(ct_graph *g, ct_output x, int axis, int n, ct_output *outs);
/* Splits x along axis into n (1 to 64) parts of sizes[0..n-1], which sum to
 * the axis' size; one of them may be -1, the rest (tf.split with
 * size_splits). Fills outs[0..n-1]; a size below -1, or a second -1, is an
 * INVALID_ARGUMENT error. */
void ct_split_sizes(ct_graph *g, ct_output x, int axis, int n, const int64_t *sizes,
                    ct_output *outs);

/* x[begin:end:stride] on every axis of x, as Python and NumPy slice (and
 * TensorFlow's StridedSlice without its shrink, new-axis and ellipsis
 * masks): begin, end and strides have x's rank; a negative begin or end
 * counts back from the axis' size, both are clamped to the axis; bit d of
 * begin_mask starts axis d at its start (its end for a negative stride),
 * bit d of end_mask runs it to its end (its start). A stride of 0 is an
 * INVALID_ARGUMENT error. Its gradient puts dy where the elements were
 * taken and zeros elsewhere. */
ct_output ct_strided_slice(ct_graph *g, ct_output x, const int64_t *begin, const int64_t *end,
                           const int64_t *strides, unsigned begin_mask, unsigned end_mask);

/* x with its axes permuted, as tf.transpose: output axis d is axis perm[d]
 * of x (perm has x's rank and holds each of 0 .. rank - 1 once; otherwise
 * INVALID_ARGUMENT). Its gradient is the transpose by the inverse
 * permutation. */
ct_output ct_transpose(ct_graph *g, ct_output x, const int *perm);

/* Reductions over the axes whose bits are set in axes_mask (bit i = axis i;
 * 0 means all axes). keep_dims keeps reduced axes as size 1. */
ct_output ct_reduce_sum(ct_graph *g, ct_output x, unsigned axes_mask, int keep_dims);
ct_output ct_reduce_mean(ct_graph *g, ct_output x, unsigned axes_mask, int keep_dims);
/* The largest (smallest) value over the axes, as ct_reduce_sum's: NaN where
 * one of them is NaN, -inf (+inf) over none. Its gradient divides dy among
 * the positions equal to the result (TensorFlow's rule for ties). */
ct_output ct_reduce_max(ct_graph *g, ct_output x, unsigned axes_mask, int keep_dims);
ct_output ct_reduce_min(ct_graph *g, ct_output x, unsigned axes_mask, int keep_dims);

/* Classification. logits [N, C] f32, labels [N] i32 in [0, C).
 * Returns the per-example loss [N]. A label out of range fails the run with
 * INVALID_ARGUMENT naming the example. */
ct_output ct_sparse_softmax_cross_entropy(ct_graph *g, ct_output logits, ct_output labels);
/* TensorFlow's softmax_cross_entropy_with_logits: logits [N, C] f32,
 * labels [N, C] f32 (each row a distribution), the per-example loss [N] =
 * -sum over c of labels * log softmax(logits). Its gradient flows to the
 * logits only (TensorFlow 1.x's v1 op). */
ct_output ct_softmax_cross_entropy(ct_graph *g, ct_output logits, ct_output labels);
/* sum(x^2) / 2, a scalar (tf.nn.l2_loss); its gradient is x * dy. */
ct_output ct_l2_loss(ct_graph *g, ct_output x);
/* The index (i32) of the largest element along `axis` (negative counts back
 * from the rank), the first of equal ones; x without that axis, which must
 * not be empty. A NaN never wins over a number after it (as a scan that
 * keeps the first maximum). No gradient. */
ct_output ct_argmax_axis(ct_graph *g, ct_output x, int axis);
ct_output ct_argmax(ct_graph *g, ct_output x); /* ct_argmax_axis over the last axis */
/* 1 where a == b, else 0 (u8, TensorFlow's bool): a and b of one dtype and
 * one shape, or one a scalar. No gradient. */
ct_output ct_equal(ct_graph *g, ct_output a, ct_output b);
/* The comparison named `op` by TensorFlow ("Greater", "LessEqual", ...:
 * ct_compare_name lists them) of a and b, taken as ct_equal takes them: a
 * u8 of 1 where `a op b` holds, else 0; no gradient. Another name records
 * INVALID_ARGUMENT in the graph and returns the null output. */
ct_output ct_compare(ct_graph *g, const char *op, ct_output a, ct_output b);
/* The name of comparison k (0, 1, ... in a fixed order), or NULL past the
 * last; *function (when not NULL) gets TensorFlow's Python function for it
 * ("greater" for "Greater"). */
const char *ct_compare_name(int k, const char **function);
/* x converted to `dtype` element by element as C converts (floats to
 * integers truncate toward zero), except that a value outside an integer
 * dtype's range saturates at its end (a NaN gives 0): a narrowed integer
 * never wraps into range, so an int64 label of 2^32 + 1 stays an invalid
 * class. No gradient. */
ct_output ct_cast(ct_graph *g, ct_output x, ct_dtype dtype);
/* Fraction of rows whose argmax equals the label: f32 scalar. */
ct_output ct_accuracy(ct_graph *g, ct_output logits, ct_output labels);

/* A node that does nothing; run it to run its control inputs. */
ct_node *ct_group(ct_graph *g, const char *name, int n, ct_node *const *nodes);

/* Gradients: ----------------------------------------------------------- */

/* Reverse-mode differentiation: fills dxs[i] with d(sum of y)/d(xs[i]),
 * built into the graph under name scope "gradients/". A gradient that does
 * not depend on y is {NULL, 0}. Returns 0, or records and returns an error
 * (an op on the path without a gradient, a non-f32 y). */
int ct_gradients(ct_graph *graph, ct_output y, int n_xs, const ct_output *xs,
                 ct_output *dxs);
/* ct_gradients holding the n_stops tensors `stops` constant (TensorFlow's
 * stop_gradients): no gradient flows through them to what they depend on,
 * while an x among them still gets its own. */
int ct_gradients_stopping(ct_graph *graph, ct_output y, int n_xs, const ct_output *xs,
                          int n_stops, const ct_output *stops, ct_output *dxs);
/* x, through which no gradient flows (tf.stop_gradient). */
ct_output ct_stop_gradient(ct_graph *graph, ct_output x);

/* The gradient of the scalar `loss` with respect to every trainable
 * variable it depends on, as TensorFlow's compute_gradients: each sums the
 * gradients of the variable's reads (one per tower that reads it) beside
 * the variable. Fills variables[i] (graph variable indices) and grads[i],
 * *n of them; the arrays hold at least ct_graph_variable_count entries.
 * Returns 0 or records an error in the graph. */
int ct_variable_gradients(ct_graph *graph, ct_output loss, int *variables, ct_output *grads,
                          int *n);

#ifdef __cplusplus
}
#endif
#endif
