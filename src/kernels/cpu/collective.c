/* AllReduce on CPU devices: the parts are in host memory wherever they
 * live, so output 0 is their sum in input order (AddN's loop) and the other
 * outputs copy it: bitwise the same everywhere. */
#include <string.h>

#include "kernels/cpu/cpu_kernels.h"

void ct_cpu_all_reduce(ct_kernel_ctx *ctx) {
  ct_cpu_add_n(ctx);
  for (int j = 1; j < ctx->n_outputs; ++j)
    memcpy(ctx->outputs[j].data, ctx->outputs[0].data, ct_tensor_nbytes(&ctx->outputs[0]));
}
