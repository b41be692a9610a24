/* Max and average pooling and LRN on the GPU, with their gradients, as the
 * CPU kernels compute them (kernels/cpu/pool.c): windows with
 * TensorFlow's SAME or VALID padding, averages over the part of the window
 * inside the image, and TensorFlow's LRN. The kernels are our own (pool.cu,
 * lrn.cu): cuDNN pads symmetrically, SAME may not. */
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/launch_nn.h"
#include "kernels/cuda/nn_kernels.h"
#include "ops/conv_geometry.h"

/* x [N, H, W, C]. */
static ct_pool_geometry pool_geometry_of(const ct_pool_attrs *a, const ct_shape *x) {
  const ct_window wh = ct_window_of(x->dims[1], a->window[0], a->stride[0], a->same_padding);
  const ct_window ww = ct_window_of(x->dims[2], a->window[1], a->stride[1], a->same_padding);
  ct_pool_geometry g = {.n = x->dims[0],
                        .h = x->dims[1],
                        .w = x->dims[2],
                        .c = x->dims[3],
                        .out_h = wh.out,
                        .out_w = ww.out,
                        .window_h = a->window[0],
                        .window_w = a->window[1],
                        .stride_h = a->stride[0],
                        .stride_w = a->stride[1],
                        .pad_top = wh.pad_before,
                        .pad_left = ww.pad_before};
  return g;
}

void ct_gpu_max_pool(ct_kernel_ctx *ctx) {
  if (ct_shape_elements(&ctx->outputs[0].shape) == 0) return;
  ct_pool_geometry g = pool_geometry_of(&ctx->attrs->pool, &ctx->inputs[0].shape);
  ct_kernel_launch_failed(ctx, ct_launch_max_pool(ct_in_f32(ctx, 0), ct_out_f32(ctx, 0), g,
                                                  ct_kernel_gpu(ctx)->stream));
}

void ct_gpu_avg_pool(ct_kernel_ctx *ctx) {
  if (ct_shape_elements(&ctx->outputs[0].shape) == 0) return;
  ct_pool_geometry g = pool_geometry_of(&ctx->attrs->pool, &ctx->inputs[0].shape);
  ct_kernel_launch_failed(ctx, ct_launch_avg_pool(ct_in_f32(ctx, 0), ct_out_f32(ctx, 0), g,
                                                  ct_kernel_gpu(ctx)->stream));
}

/* MaxPoolGrad(x, dy): the forward pass is recomputed to find each window's
 * maximum, as on the CPU. */
void ct_gpu_max_pool_grad(ct_kernel_ctx *ctx) {
  if (ct_shape_elements(&ctx->outputs[0].shape) == 0) return;
  ct_pool_geometry g = pool_geometry_of(&ctx->attrs->pool, &ctx->inputs[0].shape);
  int32_t *argmax = ct_kernel_scratch(ctx, (size_t)ct_in_elements(ctx, 1) * sizeof(int32_t));
  if (argmax == NULL) return;
  ct_kernel_launch_failed(
      ctx, ct_launch_max_pool_grad(ct_in_f32(ctx, 0), ct_in_f32(ctx, 1), ct_out_f32(ctx, 0), argmax,
                                   g, ct_kernel_gpu(ctx)->stream));
}

/* AvgPoolGrad(dy, x_like): only x's shape matters. */
void ct_gpu_avg_pool_grad(ct_kernel_ctx *ctx) {
  if (ct_shape_elements(&ctx->outputs[0].shape) == 0) return;
  ct_pool_geometry g = pool_geometry_of(&ctx->attrs->pool, &ctx->outputs[0].shape);
  ct_kernel_launch_failed(ctx, ct_launch_avg_pool_grad(ct_in_f32(ctx, 0), ct_out_f32(ctx, 0), g,
                                                       ct_kernel_gpu(ctx)->stream));
}

/* LRN over the channels (the last axis): attrs.lrn. */
void ct_gpu_lrn(ct_kernel_ctx *ctx) {
  const int64_t elements = ct_in_elements(ctx, 0);
  if (elements == 0) return;
  const ct_shape *x = &ctx->inputs[0].shape;
  const int64_t channels = x->dims[x->rank - 1];
  const ct_lrn_attrs *a = &ctx->attrs->lrn;
  ct_kernel_launch_failed(
      ctx, ct_launch_lrn(ct_in_f32(ctx, 0), ct_out_f32(ctx, 0), elements / channels, channels,
                         a->depth_radius, a->bias, a->alpha, a->beta, ct_kernel_gpu(ctx)->stream));
}

/* LRNGrad(x, dy). */
void ct_gpu_lrn_grad(ct_kernel_ctx *ctx) {
  const int64_t elements = ct_in_elements(ctx, 0);
  if (elements == 0) return;
  const ct_shape *x = &ctx->inputs[0].shape;
  const int64_t channels = x->dims[x->rank - 1];
  const ct_lrn_attrs *a = &ctx->attrs->lrn;
  float *scratch = ct_kernel_scratch(ctx, 2 * (size_t)elements * sizeof(float));
  if (scratch == NULL) return;
  ct_kernel_launch_failed(
      ctx, ct_launch_lrn_grad(ct_in_f32(ctx, 0), ct_in_f32(ctx, 1), ct_out_f32(ctx, 0), scratch,
                              elements / channels, channels, a->depth_radius, a->bias, a->alpha,
                              a->beta, ct_kernel_gpu(ctx)->stream));
}
