/* Gradient compression on CPU devices (the ops: src/ops/ops_compress.c;
 * the arithmetic, shared with the CUDA kernels: kernels/compress_math.h).
 * CompressGradient and DecompressGradient pack and unpack, over the
 * device's threads (each value, or each ONEBIT column, on its own: the
 * same bits for any thread count). CompressedAllReduce sums every rank's
 * packed values: rank j takes stripe j of them from every rank (an
 * all-to-all), unpacks and adds them in f32 in rank order, packs the sum
 * (ONEBIT: with its stripe's residual) and every rank gathers every
 * stripe, so every rank holds the same bits. */
#include <string.h>

#include "cluster/communication.h"
#include "ctower/ops.h"
#include "kernels/compress_math.h"
#include "kernels/cpu/cpu_kernels.h"

/* The values of ONEBIT column k of n values: CT_ONEBIT_COLUMN but in the
 * last column. */
static int column_values(int64_t n, int64_t k) {
  const int64_t left = n - k * CT_ONEBIT_COLUMN;
  return (int)(left < CT_ONEBIT_COLUMN ? left : CT_ONEBIT_COLUMN);
}

/* Packs n values of x (ONEBIT: plus residual r, which keeps what packing
 * lost) into out. */
static void pack(ct_compression c, const float *x, float *r, int64_t n, uint8_t *out,
                 int threads) {
  if (c == CT_COMPRESSION_ONEBIT) {
    const int64_t columns = (n + CT_ONEBIT_COLUMN - 1) / CT_ONEBIT_COLUMN;
#pragma omp parallel for num_threads(threads) if (n > CT_PARALLEL_GRAIN)
    for (int64_t k = 0; k < columns; ++k) {
      const int64_t first = k * CT_ONEBIT_COLUMN;
      ct_onebit_pack_column(x + first, r ? r + first : NULL, column_values(n, k),
                            out + k * CT_ONEBIT_COLUMN_BYTES);
    }
    return;
  }
  uint16_t *half = (uint16_t *)(void *)out;
  if (c == CT_COMPRESSION_BF16) {
#pragma omp parallel for num_threads(threads) if (n > CT_PARALLEL_GRAIN)
    for (int64_t i = 0; i < n; ++i) half[i] = ct_bf16_from_f32(x[i]);
  } else {
#pragma omp parallel for num_threads(threads) if (n > CT_PARALLEL_GRAIN)
    for (int64_t i = 0; i < n; ++i) half[i] = ct_fp16_from_f32(x[i]);
  }
}

/* The n values packed at in, into y (add: added to y's). */
static void unpack(ct_compression c, const uint8_t *in, int64_t n, float *y, int add,
                   int threads) {
  const uint16_t *half = (const uint16_t *)(const void *)in;
  if (c == CT_COMPRESSION_ONEBIT) {
    const int64_t columns = (n + CT_ONEBIT_COLUMN - 1) / CT_ONEBIT_COLUMN;
#pragma omp parallel for num_threads(threads) if (n > CT_PARALLEL_GRAIN)
    for (int64_t k = 0; k < columns; ++k)
      ct_onebit_unpack_column(in + k * CT_ONEBIT_COLUMN_BYTES, column_values(n, k),
                              y + k * CT_ONEBIT_COLUMN, add);
  } else if (c == CT_COMPRESSION_BF16) {
#pragma omp parallel for num_threads(threads) if (n > CT_PARALLEL_GRAIN)
    for (int64_t i = 0; i < n; ++i) y[i] = add ? y[i] + ct_f32_from_bf16(half[i])
                                               : ct_f32_from_bf16(half[i]);
  } else {
#pragma omp parallel for num_threads(threads) if (n > CT_PARALLEL_GRAIN)
    for (int64_t i = 0; i < n; ++i) y[i] = add ? y[i] + ct_f32_from_fp16(half[i])
                                               : ct_f32_from_fp16(half[i]);
  }
}

void ct_cpu_compress_gradient(ct_kernel_ctx *ctx) {
  const ct_compression c = (ct_compression)ctx->attrs->compress.compression;
  pack(c, ct_in_f32(ctx, 0), c == CT_COMPRESSION_ONEBIT ? ct_in_f32(ctx, 1) : NULL,
       ct_in_elements(ctx, 0), ctx->outputs[0].data, ctx->threads);
}

void ct_cpu_decompress_gradient(ct_kernel_ctx *ctx) {
  const ct_compress_attrs *a = &ctx->attrs->compress;
  unpack((ct_compression)a->compression, ctx->inputs[0].data, a->n, ct_out_f32(ctx, 0), 0,
         ctx->threads);
}

/* Where stripe j of `units` (values, or ONEBIT columns) lies among
 * `ranks`: its first unit and its end. */
static void stripe(int64_t units, int ranks, int j, int64_t *first, int64_t *end) {
  *first = units * j / ranks;
  *end = units * (j + 1) / ranks;
}

/* What CompressedAllReduce handles on this rank. */
typedef struct exchange {
  int ranks, me, onebit;
  int64_t units, unit_bytes;    /* values (2 bytes each) or ONEBIT columns (40) */
  int64_t mine_first, mine_end; /* this rank's stripe, in units */
  int64_t first, end;           /* ... in values */
  size_t scratch[3];            /* the blocks' counts and offsets, the stripes received, their
                                   sum */
} exchange;

static void exchange_of(const ct_compress_attrs *a, exchange *x) {
  x->ranks = ct_cluster_size(), x->me = ct_cluster_rank();
  x->onebit = a->compression == CT_COMPRESSION_ONEBIT;
  x->units = x->onebit ? (a->n + CT_ONEBIT_COLUMN - 1) / CT_ONEBIT_COLUMN : a->n;
  x->unit_bytes = x->onebit ? CT_ONEBIT_COLUMN_BYTES : 2;
  stripe(x->units, x->ranks, x->me, &x->mine_first, &x->mine_end);
  const int64_t column = x->onebit ? CT_ONEBIT_COLUMN : 1;
  x->first = x->mine_first * column;
  x->end = x->mine_end * column < a->n ? x->mine_end * column : a->n;
  x->scratch[0] = (size_t)x->ranks * 4 * sizeof(int64_t);
  x->scratch[1] = (size_t)(x->ranks * (x->mine_end - x->mine_first) * x->unit_bytes) + 1;
  x->scratch[2] = (size_t)(x->end - x->first) * sizeof(float) + 1;
}

CT_CPU_SCRATCH(ct_cpu_compressed_all_reduce_scratch) {
  (void)device, (void)in, (void)n_inputs, (void)out;
  exchange x;
  exchange_of(&attrs->compress, &x);
  memcpy(bytes, x.scratch, sizeof x.scratch);
  return 3;
}

void ct_cpu_compressed_all_reduce(ct_kernel_ctx *ctx) {
  const ct_compress_attrs *a = &ctx->attrs->compress;
  const ct_compression c = (ct_compression)a->compression;
  exchange x;
  exchange_of(a, &x);
  /* the blocks: this rank's stripe j to rank j, and from every rank its
   * own stripe, one after the other */
  int64_t *blocks = ct_kernel_scratch(ctx, x.scratch[0]);
  uint8_t *received = ct_kernel_scratch(ctx, x.scratch[1]);
  float *sum = ct_kernel_scratch(ctx, x.scratch[2]);
  if (blocks == NULL || received == NULL || sum == NULL) return;
  const int ranks = x.ranks;
  int64_t *counts = blocks, *offsets = blocks + ranks, *in_counts = blocks + 2 * ranks,
          *in_offsets = blocks + 3 * ranks;
  const int64_t mine_bytes = (x.mine_end - x.mine_first) * x.unit_bytes;
  for (int j = 0; j < ranks; ++j) {
    int64_t first, end;
    stripe(x.units, ranks, j, &first, &end);
    counts[j] = (end - first) * x.unit_bytes;
    offsets[j] = first * x.unit_bytes;
    in_counts[j] = mine_bytes;
    in_offsets[j] = j * mine_bytes;
  }
  ct_cluster_progress((int64_t)ctx->step, (int)a->instance_key, ctx->node->name);
  if (ct_cluster_alltoallv(ctx->inputs[0].data, counts, offsets, received, in_counts,
                           in_offsets, ctx->status))
    return;
  for (int j = 0; j < ranks; ++j)
    unpack(c, received + j * mine_bytes, x.end - x.first, sum, j > 0, ctx->threads);
  uint8_t *out = ctx->outputs[0].data;
  pack(c, sum, x.onebit ? ct_in_f32(ctx, 1) + x.first : NULL, x.end - x.first,
       out + x.mine_first * x.unit_bytes, ctx->threads);
  ct_cluster_progress((int64_t)ctx->step, (int)a->instance_key, ctx->node->name);
  ct_cluster_allgatherv(out, counts, offsets, ctx->status);
}
