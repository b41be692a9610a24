/* CPU kernels: one function per op, listed in ct_cpu_kernels (cpu_kernels.c).
 * Heavy ops use oneDNN; the rest is plain C parallelized with OpenMP over the
 * device's threads (the executor sets the thread count per device). */
#ifndef CTOWER_CPU_KERNELS_H
#define CTOWER_CPU_KERNELS_H

#include <dnnl.h>

#include "kernels/kernel.h"
#include "kernels/kernel_shapes.h"
#include "ops/binary_math.h"
#include "ops/compare.h"
#include "ops/unary_math.h"

extern const ct_kernel_def ct_cpu_kernels[];

#define CT_CPU_KERNEL(name) void name(ct_kernel_ctx *ctx)
/* A kernel's scratch rule (ct_kernel_scratch_fn), beside its kernel. */
#define CT_CPU_SCRATCH(name)                                                          \
  int name(const struct ct_device *device, const ct_attrs *attrs, const ct_shape *in, \
           int n_inputs, const ct_shape *out, size_t bytes[4])

/* basic_kernels.c */
CT_CPU_KERNEL(ct_cpu_nothing);
CT_CPU_KERNEL(ct_cpu_zeros_like);
CT_CPU_KERNEL(ct_cpu_ones_like);
CT_CPU_KERNEL(ct_cpu_concat);
CT_CPU_KERNEL(ct_cpu_concat_grad);
CT_CPU_KERNEL(ct_cpu_split);
CT_CPU_KERNEL(ct_cpu_strided_slice);
CT_CPU_KERNEL(ct_cpu_strided_slice_grad);
CT_CPU_KERNEL(ct_cpu_transpose);
/* elementwise.c */
CT_CPU_KERNEL(ct_cpu_neg);
CT_CPU_KERNEL(ct_cpu_add);
CT_CPU_KERNEL(ct_cpu_sub);
CT_CPU_KERNEL(ct_cpu_mul);
CT_CPU_KERNEL(ct_cpu_div);
CT_CPU_KERNEL(ct_cpu_broadcast_like);
CT_CPU_KERNEL(ct_cpu_sum_like);
CT_CPU_SCRATCH(ct_cpu_sum_like_scratch);
CT_CPU_KERNEL(ct_cpu_add_n);
CT_CPU_KERNEL(ct_cpu_relu);
CT_CPU_KERNEL(ct_cpu_relu_grad);
CT_CPU_KERNEL(ct_cpu_sigmoid);
CT_CPU_KERNEL(ct_cpu_sigmoid_grad);
CT_CPU_KERNEL(ct_cpu_tanh);
CT_CPU_KERNEL(ct_cpu_tanh_grad);
/* unary_math.c: ct_cpu_Exp, ct_cpu_Log, ... (a kernel per row of
 * ops/unary_math.h) and UnaryMathGrad's */
#define CT_CPU_UNARY_MATH_KERNEL(P, Name, function, forward, derivative, gradient, flops, \
                                 domain)                                               \
  CT_CPU_KERNEL(ct_cpu_##Name);
CT_UNARY_MATH(CT_CPU_UNARY_MATH_KERNEL, _)
CT_CPU_KERNEL(ct_cpu_unary_math_grad);
/* elementwise.c: ct_cpu_Maximum, ct_cpu_Pow, ... (a kernel per row of
 * ops/binary_math.h) and BinaryMathGrad's */
#define CT_CPU_BINARY_MATH_KERNEL(P, Name, function, forward, da, db, flops, domain) \
  CT_CPU_KERNEL(ct_cpu_##Name);
CT_BINARY_MATH(CT_CPU_BINARY_MATH_KERNEL, _)
CT_CPU_KERNEL(ct_cpu_binary_math_grad);
/* compare.c: ct_cpu_Greater, ... (a kernel per row of ops/compare.h) */
#define CT_CPU_COMPARE_KERNEL(P, Name, function, op) CT_CPU_KERNEL(ct_cpu_##Name);
CT_COMPARE(CT_CPU_COMPARE_KERNEL, _)
/* collective.c */
CT_CPU_KERNEL(ct_cpu_all_reduce);
CT_CPU_KERNEL(ct_cpu_collective_reduce);
CT_CPU_KERNEL(ct_cpu_collective_broadcast);
/* compress.c */
CT_CPU_KERNEL(ct_cpu_compress_gradient);
CT_CPU_KERNEL(ct_cpu_decompress_gradient);
CT_CPU_KERNEL(ct_cpu_compressed_all_reduce);
/* on this rank of the job */
CT_CPU_SCRATCH(ct_cpu_compressed_all_reduce_scratch);
/* reduce.c */
CT_CPU_KERNEL(ct_cpu_max);
CT_CPU_KERNEL(ct_cpu_min);
CT_CPU_KERNEL(ct_cpu_max_min_grad);
CT_CPU_KERNEL(ct_cpu_sum);
CT_CPU_KERNEL(ct_cpu_mean);
CT_CPU_KERNEL(ct_cpu_reduce_grad);
/* matmul.c */
CT_CPU_KERNEL(ct_cpu_matmul);
/* A primitive's arguments in its layouts and its working memory, found as
 * the kernel makes it (conv.c alike), or sgemm's padded copy of B. */
CT_CPU_SCRATCH(ct_cpu_matmul_scratch);
/* conv.c */
CT_CPU_KERNEL(ct_cpu_conv2d);
CT_CPU_KERNEL(ct_cpu_conv2d_backprop_input);
CT_CPU_KERNEL(ct_cpu_conv2d_backprop_filter);
CT_CPU_SCRATCH(ct_cpu_conv2d_scratch);
CT_CPU_SCRATCH(ct_cpu_conv2d_backprop_input_scratch);
CT_CPU_SCRATCH(ct_cpu_conv2d_backprop_filter_scratch);
/* pool.c */
CT_CPU_KERNEL(ct_cpu_max_pool);
CT_CPU_KERNEL(ct_cpu_max_pool_grad);
CT_CPU_SCRATCH(ct_cpu_max_pool_grad_scratch);
CT_CPU_KERNEL(ct_cpu_avg_pool);
CT_CPU_KERNEL(ct_cpu_avg_pool_grad);
/* lrn.c */
CT_CPU_KERNEL(ct_cpu_lrn);
CT_CPU_KERNEL(ct_cpu_lrn_grad);
/* batch_norm.c */
CT_CPU_KERNEL(ct_cpu_batch_norm_training);
CT_CPU_KERNEL(ct_cpu_batch_norm_inference);
CT_CPU_KERNEL(ct_cpu_batch_norm_grad);
CT_CPU_KERNEL(ct_cpu_batch_norm_inference_grad);
CT_CPU_SCRATCH(ct_cpu_batch_norm_training_scratch);
CT_CPU_SCRATCH(ct_cpu_batch_norm_grad_scratch); /* either gradient */
CT_CPU_KERNEL(ct_cpu_assign_moving_average);
/* dropout.c */
CT_CPU_KERNEL(ct_cpu_dropout);
CT_CPU_KERNEL(ct_cpu_dropout_grad);
/* classification.c */
CT_CPU_KERNEL(ct_cpu_sparse_softmax_xent);
CT_CPU_KERNEL(ct_cpu_softmax_xent);
CT_CPU_KERNEL(ct_cpu_l2_loss);
CT_CPU_KERNEL(ct_cpu_argmax);
/* compare.c */
CT_CPU_KERNEL(ct_cpu_equal);
CT_CPU_KERNEL(ct_cpu_cast);
CT_CPU_KERNEL(ct_cpu_accuracy);
/* optimizers.c */
CT_CPU_KERNEL(ct_cpu_apply_gradient_descent);
CT_CPU_KERNEL(ct_cpu_apply_momentum);
CT_CPU_KERNEL(ct_cpu_apply_adam);
CT_CPU_KERNEL(ct_cpu_assign);

/* Sums X (shape in) down to out, broadcast as NumPy; Y = broadcast of X
 * (shape in) to out, times scale. (elementwise.c) */
void ct_cpu_sum_to(ct_kernel_ctx *ctx, const float *X, const ct_shape *in, float *Y,
                   const ct_shape *out);
void ct_cpu_broadcast_to(ct_kernel_ctx *ctx, const float *X, const ct_shape *in, float *Y,
                         const ct_shape *out, float scale);

/* oneDNN helpers (onednn.c) */
/* A plain memory descriptor: dims in oneDNN's logical order with a tag. */
dnnl_memory_desc_t ct_dnnl_md(int ndims, const int64_t *dims, dnnl_format_tag_t tag);
/* Reports a failed oneDNN call into ctx->status; returns 1 when it failed. */
int ct_dnnl_check(ct_kernel_ctx *ctx, dnnl_status_t st, const char *what);
/* dnnl_primitive_create, failing with RESOURCE_EXHAUSTED (not a crash in
 * oneDNN) when there is no memory left for the primitive's code. */
int ct_dnnl_primitive_create(ct_kernel_ctx *ctx, dnnl_primitive_t *primitive,
                             const_dnnl_primitive_desc_t desc, const char *what);
/* Runs a primitive with (arg, memory) pairs on the device's stream and waits. */
int ct_dnnl_execute(ct_kernel_ctx *ctx, dnnl_primitive_t prim, int n_args, const dnnl_exec_arg_t *args);
/* A memory object over `data` (not owned). */
dnnl_memory_t ct_dnnl_memory(ct_kernel_ctx *ctx, const dnnl_memory_desc_t *md, void *data);

/* An argument of a primitive that may want it in another layout or data
 * type than the graph's fp32 tensor: the tensor's memory, and where they
 * differ the primitive's (in scratch memory) and the conversion between
 * them: an input in the same layout, rounded to bf16, by a plain loop on
 * the device's threads (oneDNN's reorder wakes its thread team for each,
 * which costs more than small tensors' conversions); anything else by a
 * oneDNN reorder. */
typedef struct ct_dnnl_arg {
  dnnl_memory_t user;       /* the tensor as the graph has it */
  dnnl_memory_t prim;       /* as the primitive takes it; NULL: the user's */
  dnnl_primitive_t reorder; /* user -> prim for an input, prim -> user for an output;
                               NULL for a plain bf16 rounding */
  size_t prim_bytes;
  int64_t elements;
  int is_output;
} ct_dnnl_arg;

/* out = in rounded to bfloat16 on `threads` threads: to nearest even as
 * oneDNN's reorders round, a NaN stays a (quiet) NaN, and a subnormal
 * becomes a zero of its sign (as AVX512_BF16's conversion makes it). */
void ct_round_to_bf16(const float *in, uint16_t *out, int64_t n, int threads);

/* Sets up arg for a primitive that takes the tensor described by user_md
 * as prim_md. Returns nonzero on failure (status set). */
int ct_dnnl_arg_make(ct_kernel_ctx *ctx, ct_dnnl_arg *arg, const dnnl_memory_desc_t *user_md,
                     const dnnl_memory_desc_t *prim_md, int is_output);
void ct_dnnl_arg_free(ct_dnnl_arg *arg);
/* Binds the n args to the tensors' data[i], giving those that need one
 * memory from one scratch block, and converts the inputs among them; the
 * memory each primitive argument reads or writes goes to mems[i]. Returns
 * nonzero on failure (status set). */
int ct_dnnl_args_bind(ct_kernel_ctx *ctx, ct_dnnl_arg *args, int n, void *const *data,
                      dnnl_memory_t *mems);
/* After the primitive ran: converts the outputs among the n args back into
 * their tensors. */
int ct_dnnl_args_finish(ct_kernel_ctx *ctx, const ct_dnnl_arg *args, int n);

/* The scratch blocks (at most 2, into bytes[]) each call of a primitive of
 * pd takes: its n arguments converted from user_md[i] to prim_md[i] where
 * they differ (one block, as ct_dnnl_args_bind takes it), then its
 * scratchpad. Returns how many. */
int ct_dnnl_scratch_blocks(const dnnl_memory_desc_t *user_md,
                           const dnnl_memory_desc_t *const *prim_md, int n,
                           const_dnnl_primitive_desc_t pd, size_t bytes[2]);

/* A primitive's own working memory (oneDNN's scratchpad), taken from the
 * device's allocator on each call rather than kept by oneDNN: primitives
 * are made with ct_dnnl_user_scratchpad() as their attributes. */
typedef struct ct_dnnl_scratchpad {
  dnnl_memory_t memory; /* NULL when the primitive needs none */
  size_t bytes;
} ct_dnnl_scratchpad;

/* Attributes asking for a user-provided scratchpad; NULL when out of memory. */
dnnl_primitive_attr_t ct_dnnl_user_scratchpad(void);
/* The scratchpad pd's primitive needs; nonzero on failure (status set). */
int ct_dnnl_scratchpad_make(ct_kernel_ctx *ctx, ct_dnnl_scratchpad *sp,
                            const_dnnl_primitive_desc_t pd);
void ct_dnnl_scratchpad_free(ct_dnnl_scratchpad *sp);
/* Binds sp to fresh scratch memory as args[*n] (when it needs any), adding
 * one to *n; nonzero on failure (status set). */
int ct_dnnl_scratchpad_bind(ct_kernel_ctx *ctx, const ct_dnnl_scratchpad *sp,
                            dnnl_exec_arg_t *args, int *n);

#endif
