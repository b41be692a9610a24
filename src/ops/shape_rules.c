/* Shape-rule helpers that many ops share. */
#include "ops/shape_rules.h"

#include <stdarg.h>
#include <stdio.h>

int ct_infer_fail(ct_infer_ctx *ctx, const char *fmt, ...) {
  char detail[768];
  va_list args;
  va_start(args, fmt);
  vsnprintf(detail, sizeof detail, fmt, args);
  va_end(args);
  ct_status_set(ctx->status, CT_INVALID_ARGUMENT, "node '%s': %s", ctx->node_name, detail);
  return 1;
}

int ct_infer_same_as_input0(ct_infer_ctx *ctx) {
  for (int o = 0; o < ctx->n_outputs; ++o) {
    ctx->out_shapes[o] = ctx->in_shapes[0];
    ctx->out_dtypes[o] = ctx->in_dtypes[0];
  }
  return 0;
}

int ct_broadcast_shapes(ct_infer_ctx *ctx, const ct_shape *a, const ct_shape *b, ct_shape *out) {
  int rank = a->rank > b->rank ? a->rank : b->rank;
  out->rank = rank;
  for (int i = 0; i < rank; ++i) {
    int ia = i - (rank - a->rank), ib = i - (rank - b->rank);
    int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
    if (da == db || db == 1)
      out->dims[i] = da;
    else if (da == 1)
      out->dims[i] = db;
    else if (da < 0 || db < 0)
      out->dims[i] = da < 0 ? db : da; /* unknown against known: take the known */
    else {
      char sa[96], sb[96];
      return ct_infer_fail(ctx, "shapes %s and %s do not broadcast (dimension %d: %lld vs %lld)",
                           ct_shape_str(a, sa, sizeof sa), ct_shape_str(b, sb, sizeof sb), i,
                           (long long)da, (long long)db);
    }
  }
  return 0;
}

int ct_require_dtype(ct_infer_ctx *ctx, int input, ct_dtype dtype) {
  if (ctx->in_dtypes[input] == dtype) return 0;
  return ct_infer_fail(ctx, "input %d must be %s, got %s", input, ct_dtype_name(dtype),
                       ct_dtype_name(ctx->in_dtypes[input]));
}

int ct_require_rank(ct_infer_ctx *ctx, int input, int rank) {
  if (ctx->in_shapes[input].rank == rank) return 0;
  char buf[96];
  return ct_infer_fail(ctx, "input %d must have rank %d, got shape %s", input, rank,
                       ct_shape_str(&ctx->in_shapes[input], buf, sizeof buf));
}

int ct_infer_unary_f32(ct_infer_ctx *ctx) {
  if (ct_require_dtype(ctx, 0, CT_F32)) return 1;
  return ct_infer_same_as_input0(ctx);
}

int ct_infer_broadcast_f32(ct_infer_ctx *ctx) {
  if (ctx->in_dtypes[0] != CT_F32 || ctx->in_dtypes[1] != CT_F32)
    return ct_infer_fail(ctx, "inputs must be f32, got %s and %s",
                         ct_dtype_name(ctx->in_dtypes[0]), ct_dtype_name(ctx->in_dtypes[1]));
  ctx->out_dtypes[0] = CT_F32;
  return ct_broadcast_shapes(ctx, &ctx->in_shapes[0], &ctx->in_shapes[1], &ctx->out_shapes[0]);
}

int ct_infer_same_pair(ct_infer_ctx *ctx) {
  ct_shape out;
  if (ct_broadcast_shapes(ctx, &ctx->in_shapes[0], &ctx->in_shapes[1], &out)) return 1;
  return ct_infer_same_as_input0(ctx);
}
