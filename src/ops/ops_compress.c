/* Gradients compressed for the way between ranks (ctower/ops.h,
 * ct_compression): CompressGradient packs f32 values into bytes (ONEBIT:
 * with error feedback through a residual variable it writes, input 1),
 * CompressedAllReduce sums the packed values of every rank and packs the
 * sum again (ONEBIT: its stripe's residual, input 1), DecompressGradient
 * unpacks. None has a gradient: they carry gradients, after the backward
 * pass. Kernels: src/kernels/cpu/compress.c, src/kernels/cuda/compress.cu
 * (packing and unpacking; the exchange runs on CPU devices, over MPI). */
#include "ops/op_cost.h"
#include "ops/op_list.h"
#include "ops/shape_rules.h"

int64_t ct_compressed_bytes(ct_compression c, int64_t n) {
  if (n < 0) return -1;
  if (c == CT_COMPRESSION_ONEBIT)
    return (n + CT_ONEBIT_COLUMN - 1) / CT_ONEBIT_COLUMN * CT_ONEBIT_COLUMN_BYTES;
  if (c == CT_COMPRESSION_BF16 || c == CT_COMPRESSION_FP16) return 2 * n;
  return 4 * n;
}

const char *ct_compression_name(ct_compression c) {
  static const char *const names[CT_COMPRESSION_COUNT] = {"none", "bf16", "fp16", "onebit"};
  return (int)c >= 0 && c < CT_COMPRESSION_COUNT ? names[c] : "?";
}

/* Fails unless attrs.compress names a compression that packs. */
static int check_compression(ct_infer_ctx *ctx) {
  const int c = ctx->attrs->compress.compression;
  if (c <= CT_COMPRESSION_NONE || c >= CT_COMPRESSION_COUNT)
    return ct_infer_fail(ctx, "compression %d is not bf16, fp16 or onebit", c);
  return 0;
}

/* ONEBIT's residual, input `input`: f32 of n values (n < 0: unknown).
 * Others take none. */
static int check_residual(ct_infer_ctx *ctx, int input, int64_t n) {
  const int onebit = ctx->attrs->compress.compression == CT_COMPRESSION_ONEBIT;
  if (ctx->n_inputs != input + onebit)
    return ct_infer_fail(ctx, "%s takes %d inputs with compression %s, got %d",
                         ctx->node_name, input + onebit,
                         ct_compression_name((ct_compression)ctx->attrs->compress.compression),
                         ctx->n_inputs);
  if (!onebit) return 0;
  if (ct_require_dtype(ctx, input, CT_F32)) return 1;
  const int64_t r = ct_shape_elements(&ctx->in_shapes[input]);
  if (n >= 0 && r >= 0 && r != n)
    return ct_infer_fail(ctx, "the residual holds %lld values for %lld", (long long)r,
                         (long long)n);
  return 0;
}

static int infer_compress(ct_infer_ctx *ctx) {
  if (check_compression(ctx) || ct_require_dtype(ctx, 0, CT_F32)) return 1;
  int64_t n = 1;
  for (int d = 0; d < ctx->in_shapes[0].rank; ++d)
    n = ctx->in_shapes[0].dims[d] < 0 || n < 0 ? -1 : n * ctx->in_shapes[0].dims[d];
  if (check_residual(ctx, 1, n)) return 1;
  const ct_compression c = (ct_compression)ctx->attrs->compress.compression;
  ctx->out_shapes[0] = ct_shape_of(1, ct_compressed_bytes(c, n));
  ctx->out_dtypes[0] = CT_U8;
  return 0;
}

/* Input 0 holds the packed bytes of attrs.compress.n values. */
static int check_packed(ct_infer_ctx *ctx) {
  const ct_compress_attrs *a = &ctx->attrs->compress;
  if (check_compression(ctx) || ct_require_dtype(ctx, 0, CT_U8) || ct_require_rank(ctx, 0, 1))
    return 1;
  if (a->n < 0) return ct_infer_fail(ctx, "the value count must be 0 or more, got %lld",
                                     (long long)a->n);
  const int64_t want = ct_compressed_bytes((ct_compression)a->compression, a->n);
  const int64_t have = ctx->in_shapes[0].dims[0];
  if (have >= 0 && have != want)
    return ct_infer_fail(ctx, "%lld values packed with %s take %lld bytes, got %lld",
                         (long long)a->n, ct_compression_name((ct_compression)a->compression),
                         (long long)want, (long long)have);
  return 0;
}

static int infer_decompress(ct_infer_ctx *ctx) {
  if (check_packed(ctx)) return 1;
  ctx->out_shapes[0] = ct_shape_of(1, ctx->attrs->compress.n);
  ctx->out_dtypes[0] = CT_F32;
  return 0;
}

static int infer_compressed_all_reduce(ct_infer_ctx *ctx) {
  return check_packed(ctx) || check_residual(ctx, 1, ctx->attrs->compress.n) ||
         ct_infer_same_as_input0(ctx);
}

const ct_op_def ct_op_compress_gradient = {"CompressGradient", infer_compress, NULL,
                                           CT_OP_STATEFUL | CT_OP_NO_GRADIENT,
                                           ct_flops_per_element};
const ct_op_def ct_op_decompress_gradient = {"DecompressGradient", infer_decompress, NULL,
                                             CT_OP_NO_GRADIENT, ct_flops_per_element};
const ct_op_def ct_op_compressed_all_reduce = {
    "CompressedAllReduce", infer_compressed_all_reduce, NULL,
    CT_OP_STATEFUL | CT_OP_NO_GRADIENT | CT_OP_WAITS_FOR_PEERS, ct_flops_per_element};

/* ONEBIT's residual: a read of a variable, or an error in g. */
static int residual_ok(ct_graph *g, ct_compression c, ct_output residual, const char *what) {
  if (c != CT_COMPRESSION_ONEBIT) return 1;
  if (residual.node && residual.node->variable >= 0) return 1;
  ct_graph_set_error(g, CT_INVALID_ARGUMENT,
                     "%s with onebit compression needs its residual, a read of an f32 variable "
                     "(ct_variable_read)",
                     what);
  return 0;
}

ct_output ct_compress_gradient(ct_graph *g, ct_output x, ct_compression c, ct_output residual) {
  if (!residual_ok(g, c, residual, "ct_compress_gradient")) return ct_out(NULL, 0);
  const ct_output in[2] = {x, residual};
  const ct_attrs attrs = {.compress = {.compression = c}};
  return ct_out(ct_graph_add_node(g, &ct_op_compress_gradient, NULL,
                                  1 + (c == CT_COMPRESSION_ONEBIT), in, 1, &attrs),
                0);
}

ct_output ct_decompress_gradient(ct_graph *g, ct_output packed, ct_compression c, int64_t n) {
  const ct_attrs attrs = {.compress = {.compression = c, .n = n}};
  return ct_out(ct_graph_add_node(g, &ct_op_decompress_gradient, NULL, 1, &packed, 1, &attrs), 0);
}

ct_output ct_compressed_all_reduce(ct_graph *g, ct_output packed, ct_compression c, int64_t n,
                                   ct_output stripe_residual, int64_t instance_key) {
  if (!residual_ok(g, c, stripe_residual, "ct_compressed_all_reduce")) return ct_out(NULL, 0);
  const ct_output in[2] = {packed, stripe_residual};
  const ct_attrs attrs = {.compress = {.compression = c, .n = n, .instance_key = instance_key}};
  return ct_out(ct_graph_add_node(g, &ct_op_compressed_all_reduce, NULL,
                                  1 + (c == CT_COMPRESSION_ONEBIT), in, 1, &attrs),
                0);
}
