/* AllReduce on CPU devices: the parts are in host memory wherever they
 * live, so output 0 is their sum in input order (AddN's loop) and the other
 * outputs copy it: bitwise the same everywhere. CollectiveReduce: the sum
 * over the job's ranks, in place in host memory (with a root: there, and
 * zeros elsewhere); CollectiveBroadcast: the root's values, in place. */
#include <string.h>

#include "cluster/communication.h"
#include "kernels/cpu/cpu_kernels.h"

void ct_cpu_all_reduce(ct_kernel_ctx *ctx) {
  ct_cpu_add_n(ctx);
  for (int j = 1; j < ctx->n_outputs; ++j)
    memcpy(ctx->outputs[j].data, ctx->outputs[0].data, ct_tensor_nbytes(&ctx->outputs[0]));
}

/* Output 0 holds input 0 (taken over in place, or copied), and the stall
 * inspector hears which collective this rank waits in next. */
static float *collective_start(ct_kernel_ctx *ctx) {
  float *out = ct_out_f32(ctx, 0);
  if (out != ct_in_f32(ctx, 0)) memcpy(out, ct_in_f32(ctx, 0), ct_tensor_nbytes(&ctx->outputs[0]));
  const int64_t key = ctx->attrs->collective.instance_key;
  ct_cluster_progress((int64_t)ctx->step, (int)key, ctx->node->name);
  return out;
}

void ct_cpu_collective_reduce(ct_kernel_ctx *ctx) {
  const ct_collective_attrs *a = &ctx->attrs->collective;
  const int64_t n = ct_in_elements(ctx, 0);
  float *out = collective_start(ctx);
  if (!a->rooted) {
    ct_cluster_allreduce_f32(out, n, ctx->status);
  } else if (ct_cluster_reduce_f32(out, n, a->root, ctx->status) == 0 &&
             ct_cluster_rank() != a->root) {
    memset(out, 0, (size_t)n * sizeof *out);
  }
}

void ct_cpu_collective_broadcast(ct_kernel_ctx *ctx) {
  float *out = collective_start(ctx);
  ct_cluster_broadcast(out, ct_tensor_nbytes(&ctx->outputs[0]), ctx->attrs->collective.root,
                       ctx->status);
}
