/* AllReduce(parts[0..n-1]) -> sums[0..n-1]: every output is the sum of all
 * inputs, added in input order, and output k lives on input k's device (a
 * multi-device op: the executor copies nothing in or out). The replicated
 * towers all-reduce their gradients with it. Its kernel on CPU devices adds
 * in host memory; on GPUs it adds the parts of one physical GPU there and
 * joins the physical GPUs through NCCL. The gradient of an all-reduce is
 * the all-reduce of the output gradients. */
#include "ops/op_cost.h"
#include "ops/op_list.h"
#include "ops/shape_rules.h"

/* CollectiveReduce(x) -> the sum of x over every rank of the job (x itself
 * in a process on its own), as TensorFlow's op of that name between
 * workers. Every rank must run the same CollectiveReduces in the same order
 * (the towers chain them). Its gradient is the CollectiveReduce of the
 * output's gradient.
 *
 * With a root (attrs.collective.rooted, .root) the sum goes to that rank
 * only, and every other rank's output is zeros: MPI's reduce, what a
 * parameter server receives. CollectiveBroadcast(x) -> the root's x on
 * every rank: what the parameter server sends back. Each is the other's
 * adjoint, so each one's gradient is the other of the output's gradient. */

static int infer_all_reduce(ct_infer_ctx *ctx) {
  if (ctx->n_outputs != ctx->n_inputs)
    return ct_infer_fail(ctx, "AllReduce has %d inputs but %d outputs", ctx->n_inputs,
                         ctx->n_outputs);
  for (int k = 0; k < ctx->n_inputs; ++k) {
    if (ct_require_dtype(ctx, k, CT_F32)) return 1;
    if (!ct_shape_equal(&ctx->in_shapes[k], &ctx->in_shapes[0])) {
      char a[96], b[96];
      return ct_infer_fail(ctx, "AllReduce parts must have one shape: part 0 is %s, part %d is %s",
                           ct_shape_str(&ctx->in_shapes[0], a, sizeof a), k,
                           ct_shape_str(&ctx->in_shapes[k], b, sizeof b));
    }
    ctx->out_shapes[k] = ctx->in_shapes[0];
    ctx->out_dtypes[k] = CT_F32;
  }
  return 0;
}

static void grad_all_reduce(ct_graph *g, const ct_node *n, const ct_output *gy, ct_output *gx) {
  ct_output parts[64];
  for (int k = 0; k < n->n_outputs; ++k)
    parts[k] = gy[k].node ? gy[k] : ct_zeros_like(g, ct_out((ct_node *)n, k));
  ct_all_reduce(g, n->n_inputs, parts, gx);
}

const ct_op_def ct_op_all_reduce = {"AllReduce", infer_all_reduce, grad_all_reduce,
                                    CT_OP_MULTI_DEVICE, ct_flops_per_element};

int ct_all_reduce(ct_graph *g, int n, const ct_output *parts, ct_output *sums) {
  if (n < 1 || n > 64) {
    ct_graph_set_error(g, CT_INVALID_ARGUMENT, "ct_all_reduce takes 1 to 64 parts, got %d", n);
    return 1;
  }
  ct_node *node = ct_graph_add_node(g, &ct_op_all_reduce, NULL, n, parts, n, NULL);
  for (int k = 0; k < n; ++k) sums[k] = ct_out(node, k);
  return node == NULL;
}

static void grad_collective_reduce(ct_graph *g, const ct_node *n, const ct_output *gy,
                                   ct_output *gx) {
  const ct_collective_attrs *a = &n->attrs.collective;
  gx[0] = a->rooted ? ct_collective_broadcast(g, gy[0], a->root, a->instance_key)
                    : ct_collective_reduce(g, gy[0], a->instance_key);
}

static void grad_collective_broadcast(ct_graph *g, const ct_node *n, const ct_output *gy,
                                      ct_output *gx) {
  const ct_collective_attrs *a = &n->attrs.collective;
  gx[0] = ct_collective_reduce_to(g, gy[0], a->root, a->instance_key);
}

static int infer_collective(ct_infer_ctx *ctx) {
  if (ctx->attrs->collective.root < 0)
    return ct_infer_fail(ctx, "the root rank must be 0 or more, got %d",
                         ctx->attrs->collective.root);
  return ct_require_dtype(ctx, 0, CT_F32) || ct_infer_same_as_input0(ctx);
}

#define CT_COLLECTIVE_FLAGS (CT_OP_STATEFUL | CT_OP_INPLACE | CT_OP_WAITS_FOR_PEERS)

const ct_op_def ct_op_collective_reduce = {"CollectiveReduce", infer_collective,
                                           grad_collective_reduce, CT_COLLECTIVE_FLAGS,
                                           ct_flops_per_element};
const ct_op_def ct_op_collective_broadcast = {"CollectiveBroadcast", infer_collective,
                                              grad_collective_broadcast, CT_COLLECTIVE_FLAGS,
                                              ct_flops_per_element};

static ct_output add_collective(ct_graph *g, const ct_op_def *op, ct_output x,
                                ct_collective_attrs a) {
  const ct_attrs attrs = {.collective = a};
  return ct_out(ct_graph_add_node(g, op, NULL, 1, &x, 1, &attrs), 0);
}

ct_output ct_collective_reduce(ct_graph *g, ct_output x, int64_t instance_key) {
  return add_collective(g, &ct_op_collective_reduce, x,
                        (ct_collective_attrs){.instance_key = instance_key});
}

ct_output ct_collective_reduce_to(ct_graph *g, ct_output x, int root, int64_t instance_key) {
  return add_collective(
      g, &ct_op_collective_reduce, x,
      (ct_collective_attrs){.instance_key = instance_key, .rooted = 1, .root = root});
}

ct_output ct_collective_broadcast(ct_graph *g, ct_output x, int root, int64_t instance_key) {
  return add_collective(g, &ct_op_collective_broadcast, x,
                        (ct_collective_attrs){.instance_key = instance_key, .root = root});
}
