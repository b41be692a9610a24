/* Comparison and dtype conversion: Equal and Cast, TensorFlow's ops for
 * counting correct predictions (tf.equal of two argmaxes, cast to float and
 * averaged), and the comparisons of ops/compare.h (Greater, Less, ...).
 * None has a gradient. Booleans are u8 0 or 1.
 *
 * Equal(a, b) -> u8: 1 where a == b, elementwise; a and b of one dtype and
 * one shape, or one of them a scalar. The comparisons take them so too.
 * Cast(x) -> attrs.source.dtype: each element converted as C converts
 * (floats to integers truncate toward zero). */
#include "ops/op_cost.h"
#include "ops/op_list.h"
#include "ops/shape_rules.h"

#include <string.h>

static int infer_compare(ct_infer_ctx *ctx) {
  const ct_shape *a = &ctx->in_shapes[0], *b = &ctx->in_shapes[1];
  if (ctx->in_dtypes[0] != ctx->in_dtypes[1])
    return ct_infer_fail(ctx, "a comparison takes values of one dtype, got %s and %s",
                         ct_dtype_name(ctx->in_dtypes[0]), ct_dtype_name(ctx->in_dtypes[1]));
  int same = a->rank == b->rank;
  for (int d = 0; same && d < a->rank; ++d)
    same = a->dims[d] == b->dims[d] || a->dims[d] < 0 || b->dims[d] < 0;
  if (!same && a->rank != 0 && b->rank != 0) {
    char sa[96], sb[96];
    return ct_infer_fail(ctx, "a comparison takes one shape (or a scalar), got %s and %s",
                         ct_shape_str(a, sa, sizeof sa), ct_shape_str(b, sb, sizeof sb));
  }
  ctx->out_shapes[0] = a->rank ? *a : *b;
  ctx->out_dtypes[0] = CT_U8;
  return 0;
}
const ct_op_def ct_op_equal = {"Equal", infer_compare, NULL, CT_OP_NO_GRADIENT,
                               ct_flops_per_element};

ct_output ct_equal(ct_graph *g, ct_output a, ct_output b) {
  ct_output in[2] = {a, b};
  return ct_out(ct_graph_add_node(g, &ct_op_equal, NULL, 2, in, 1, NULL), 0);
}

#define DEFINE(P, Name, function, op)                                                \
  const ct_op_def ct_op_##Name = {#Name, infer_compare, NULL, CT_OP_NO_GRADIENT, \
                                  ct_flops_per_element};
CT_COMPARE(DEFINE, _)
#undef DEFINE

#define ROW_OF(P, Name, function, op) {&ct_op_##Name, function},
static const struct {
  const ct_op_def *def;
  const char *function;
} rows[] = {CT_COMPARE(ROW_OF, _)};
#undef ROW_OF

const char *ct_compare_name(int k, const char **function) {
  if (k < 0 || k >= CT_COMPARE_COUNT) return NULL;
  if (function) *function = rows[k].function;
  return rows[k].def->name;
}

ct_output ct_compare(ct_graph *g, const char *op, ct_output a, ct_output b) {
  ct_output in[2] = {a, b};
  for (int k = 0; k < CT_COMPARE_COUNT; ++k)
    if (strcmp(rows[k].def->name, op) == 0)
      return ct_out(ct_graph_add_node(g, rows[k].def, NULL, 2, in, 1, NULL), 0);
  ct_graph_set_error(g, CT_INVALID_ARGUMENT,
                     "'%s' is not a comparison (ct_compare_name lists them: Greater, Less, ...)",
                     op);
  return ct_out(NULL, 0);
}

static int infer_cast(ct_infer_ctx *ctx) {
  const ct_dtype to = ctx->attrs->source.dtype;
  if ((int)to < 0 || to >= CT_DTYPE_COUNT) return ct_infer_fail(ctx, "Cast to an unknown dtype");
  ctx->out_shapes[0] = ctx->in_shapes[0];
  ctx->out_dtypes[0] = to;
  return 0;
}
const ct_op_def ct_op_cast = {"Cast", infer_cast, NULL, CT_OP_NO_GRADIENT, ct_flops_per_element};

ct_output ct_cast(ct_graph *g, ct_output x, ct_dtype dtype) {
  ct_attrs a = {.source = {.dtype = dtype}};
  return ct_out(ct_graph_add_node(g, &ct_op_cast, NULL, 1, &x, 1, &a), 0);
}
