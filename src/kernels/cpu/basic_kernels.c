/* Kernels of sources and shape ops. Variables, constants and views need no
 * work: the executor binds their outputs to existing storage. */
#include <string.h>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/kernel_shapes.h"

void ct_cpu_nothing(ct_kernel_ctx *ctx) { (void)ctx; }

static void fill(ct_kernel_ctx *ctx, float value) {
  float *y = ct_out_f32(ctx, 0);
  int64_t n = ct_shape_elements(&ctx->outputs[0].shape);
  if (ctx->outputs[0].dtype != CT_F32) {
    memset(y, 0, (size_t)n * ct_dtype_size(ctx->outputs[0].dtype));
    return;
  }
  for (int64_t i = 0; i < n; ++i) y[i] = value;
}

void ct_cpu_zeros_like(ct_kernel_ctx *ctx) { fill(ctx, 0.0f); }
void ct_cpu_ones_like(ct_kernel_ctx *ctx) { fill(ctx, 1.0f); }

/* Copies whole parts side by side along an axis (concat) or back (split).
 * `whole` is the joined tensor, parts[k] its pieces in order. */
static void join_or_split(ct_tensor *whole, ct_tensor *parts, int n_parts, int axis, int join) {
  int64_t outer = ct_outer_count(&whole->shape, axis);
  size_t whole_row = ct_row_bytes(whole, axis);
  for (int64_t o = 0; o < outer; ++o) {
    size_t offset = 0;
    for (int k = 0; k < n_parts; ++k) {
      size_t row = ct_row_bytes(&parts[k], axis);
      char *w = (char *)whole->data + (size_t)o * whole_row + offset;
      char *p = (char *)parts[k].data + (size_t)o * row;
      if (join)
        memcpy(w, p, row);
      else
        memcpy(p, w, row);
      offset += row;
    }
  }
}

void ct_cpu_concat(ct_kernel_ctx *ctx) {
  join_or_split(&ctx->outputs[0], ctx->inputs, ctx->n_inputs,
                ct_kernel_axis(ctx, ctx->outputs[0].shape.rank), 1);
}

void ct_cpu_concat_grad(ct_kernel_ctx *ctx) {
  join_or_split(&ctx->inputs[0], ctx->outputs, ctx->n_outputs,
                ct_kernel_axis(ctx, ctx->inputs[0].shape.rank), 0);
}

void ct_cpu_split(ct_kernel_ctx *ctx) {
  join_or_split(&ctx->inputs[0], ctx->outputs, ctx->n_outputs,
                ct_kernel_split_axis(ctx, ctx->inputs[0].shape.rank), 0);
}
