/* Max and average pooling through oneDNN, with their gradients.
 *
 * Forward kernels run oneDNN's inference primitives. The gradient kernels
 * recompute the forward pass (training mode) into scratch memory when the
 * backward primitive needs its workspace (max pooling), then run
 * the backward primitive: cheaper than keeping workspaces alive between the
 * forward and backward passes, and it keeps the graph free of opaque
 * tensors. */
#include <stdlib.h>
#include <string.h>

#include "device/cpu_device.h"
#include "kernels/cpu/cpu_kernels.h"
#include "ops/conv_geometry.h"

typedef enum { WINDOW_MAX, WINDOW_AVG } window_alg;

typedef struct window_state {
  int64_t key[5];           /* x dims and whether this is a gradient kernel */
  dnnl_primitive_t forward; /* inference, or training when the backward needs a workspace */
  dnnl_primitive_t backward;
  dnnl_memory_t x, y, dx, dy, workspace;
  size_t y_bytes, workspace_bytes;
} window_state;

static void window_state_free(void *data) {
  window_state *s = data;
  if (s == NULL) return;
  if (s->forward) dnnl_primitive_destroy(s->forward);
  if (s->backward) dnnl_primitive_destroy(s->backward);
  dnnl_memory_t mems[] = {s->x, s->y, s->dx, s->dy, s->workspace};
  for (size_t i = 0; i < sizeof mems / sizeof mems[0]; ++i)
    if (mems[i]) dnnl_memory_destroy(mems[i]);
  free(s);
}

typedef dnnl_pooling_desc_t window_desc;

/* A pooling window's strides, size and padding in oneDNN's terms. */
typedef struct pool_geometry {
  dnnl_dims_t strides, kernel, pad_l, pad_r;
} pool_geometry;

static pool_geometry pool_geometry_of(const ct_pool_attrs *a, const ct_shape *x) {
  ct_window wh = ct_window_of(x->dims[1], a->window, a->stride, a->same_padding);
  ct_window ww = ct_window_of(x->dims[2], a->window, a->stride, a->same_padding);
  pool_geometry g = {{a->stride, a->stride},
                     {a->window, a->window},
                     {wh.pad_before, ww.pad_before},
                     {wh.pad_after, ww.pad_after}};
  return g;
}

static dnnl_status_t forward_desc(window_desc *d, window_alg alg, dnnl_prop_kind_t prop,
                                  const ct_pool_attrs *a, const dnnl_memory_desc_t *x_md,
                                  const dnnl_memory_desc_t *y_md, const ct_shape *x) {
  pool_geometry g = pool_geometry_of(a, x);
  return dnnl_pooling_forward_desc_init(
      d, prop, alg == WINDOW_MAX ? dnnl_pooling_max : dnnl_pooling_avg_exclude_padding, x_md, y_md,
      g.strides, g.kernel, g.pad_l, g.pad_r);
}

static dnnl_status_t backward_desc(window_desc *d, window_alg alg, const ct_pool_attrs *a,
                                   const dnnl_memory_desc_t *x_md, const dnnl_memory_desc_t *y_md,
                                   const ct_shape *x) {
  pool_geometry g = pool_geometry_of(a, x);
  return dnnl_pooling_backward_desc_init(
      d, alg == WINDOW_MAX ? dnnl_pooling_max : dnnl_pooling_avg_exclude_padding, x_md, y_md,
      g.strides, g.kernel, g.pad_l, g.pad_r);
}

/* Shapes of x and y. */
static void window_shapes(const ct_kernel_ctx *ctx, window_alg alg, int grad, ct_shape *x,
                          ct_shape *y) {
  if (!grad) {
    *x = ctx->inputs[0].shape;
    *y = ctx->outputs[0].shape;
    return;
  }
  *x = ctx->outputs[0].shape;
  *y = alg == WINDOW_MAX ? ctx->inputs[1].shape : ctx->inputs[0].shape;
}

static window_state *window_state_make(ct_kernel_ctx *ctx, window_alg alg, int grad,
                                       const int64_t *key) {
  ct_shape xs, ys;
  window_shapes(ctx, alg, grad, &xs, &ys);
  const int64_t x_dims[4] = {xs.dims[0], xs.dims[3], xs.dims[1], xs.dims[2]};
  const int64_t y_dims[4] = {ys.dims[0], ys.dims[3], ys.dims[1], ys.dims[2]};
  dnnl_memory_desc_t x_md = ct_dnnl_md(4, x_dims, dnnl_nhwc);
  dnnl_memory_desc_t y_md = ct_dnnl_md(4, y_dims, dnnl_nhwc);
  dnnl_engine_t engine = ct_cpu_of(ctx->device)->engine;
  window_state *s = calloc(1, sizeof *s);
  if (s == NULL) {
    ct_status_set(ctx->status, CT_RESOURCE_EXHAUSTED, "out of host memory in a pooling kernel");
    return NULL;
  }
  memcpy(s->key, key, sizeof s->key);
  window_desc fd, bd;
  dnnl_primitive_desc_t fwd_pd = NULL, bwd_pd = NULL;
  int failed =
      ct_dnnl_check(ctx,
                    forward_desc(&fd, alg, grad ? dnnl_forward_training : dnnl_forward_inference,
                                 &ctx->attrs->pool, &x_md, &y_md, &xs),
                    "forward descriptor") ||
      ct_dnnl_check(ctx, dnnl_primitive_desc_create(&fwd_pd, &fd, NULL, engine, NULL),
                    "forward primitive descriptor");
  if (!failed && grad) {
    failed = ct_dnnl_check(ctx, backward_desc(&bd, alg, &ctx->attrs->pool, &x_md, &y_md, &xs),
                           "backward descriptor") ||
             ct_dnnl_check(ctx, dnnl_primitive_desc_create(&bwd_pd, &bd, NULL, engine, fwd_pd),
                           "backward primitive descriptor") ||
             ct_dnnl_primitive_create(ctx, &s->backward, bwd_pd, "backward primitive");
    const dnnl_memory_desc_t *ws_md =
        failed ? NULL : dnnl_primitive_desc_query_md(fwd_pd, dnnl_query_workspace_md, 0);
    s->workspace_bytes = ws_md ? dnnl_memory_desc_get_size(ws_md) : 0;
    if (s->workspace_bytes) s->workspace = ct_dnnl_memory(ctx, ws_md, DNNL_MEMORY_NONE);
    s->y_bytes = dnnl_memory_desc_get_size(&y_md);
  }
  if (!failed && (!grad || s->workspace_bytes))
    failed = ct_dnnl_primitive_create(ctx, &s->forward, fwd_pd, "forward primitive");
  if (!failed) {
    s->x = ct_dnnl_memory(ctx, &x_md, DNNL_MEMORY_NONE);
    s->y = ct_dnnl_memory(ctx, &y_md, DNNL_MEMORY_NONE);
    s->dx = ct_dnnl_memory(ctx, &x_md, DNNL_MEMORY_NONE);
    s->dy = ct_dnnl_memory(ctx, &y_md, DNNL_MEMORY_NONE);
  }
  if (fwd_pd) dnnl_primitive_desc_destroy(fwd_pd);
  if (bwd_pd) dnnl_primitive_desc_destroy(bwd_pd);
  if (failed || ctx->status->code != CT_OK) {
    window_state_free(s);
    return NULL;
  }
  return s;
}

static window_state *window_state_get(ct_kernel_ctx *ctx, window_alg alg, int grad) {
  ct_shape xs, ys;
  window_shapes(ctx, alg, grad, &xs, &ys);
  int64_t key[5] = {xs.dims[0], xs.dims[1], xs.dims[2], xs.dims[3], grad};
  window_state *s = ctx->state->data;
  if (s && memcmp(s->key, key, sizeof key) == 0) return s;
  window_state_free(s);
  s = window_state_make(ctx, alg, grad, key);
  ctx->state->data = s;
  ctx->state->free_fn = window_state_free;
  return s;
}

static void window_forward(ct_kernel_ctx *ctx, window_alg alg) {
  window_state *s = window_state_get(ctx, alg, 0);
  if (s == NULL) return;
  dnnl_memory_set_data_handle(s->x, ctx->inputs[0].data);
  dnnl_memory_set_data_handle(s->y, ctx->outputs[0].data);
  dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, s->x}, {DNNL_ARG_DST, s->y}};
  ct_dnnl_execute(ctx, s->forward, 2, args);
}

/* x_input: index of x among the inputs (-1 for AvgPoolGrad, which has none);
 * dy_input: index of dy. */
static void window_backward(ct_kernel_ctx *ctx, window_alg alg, int x_input, int dy_input) {
  window_state *s = window_state_get(ctx, alg, 1);
  if (s == NULL) return;
  if (x_input >= 0) dnnl_memory_set_data_handle(s->x, ctx->inputs[x_input].data);
  dnnl_memory_set_data_handle(s->dy, ctx->inputs[dy_input].data);
  dnnl_memory_set_data_handle(s->dx, ctx->outputs[0].data);
  if (s->workspace_bytes) {
    void *y = ct_kernel_scratch(ctx, s->y_bytes);
    void *ws = ct_kernel_scratch(ctx, s->workspace_bytes);
    if (y == NULL || ws == NULL) return;
    dnnl_memory_set_data_handle(s->y, y);
    dnnl_memory_set_data_handle(s->workspace, ws);
    dnnl_exec_arg_t fwd[] = {
        {DNNL_ARG_SRC, s->x}, {DNNL_ARG_DST, s->y}, {DNNL_ARG_WORKSPACE, s->workspace}};
    if (ct_dnnl_execute(ctx, s->forward, 3, fwd)) return;
  }
  dnnl_exec_arg_t args[4];
  int n = 0;
  args[n++] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_DST, s->dy};
  args[n++] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_SRC, s->dx};
  if (s->workspace_bytes) args[n++] = (dnnl_exec_arg_t){DNNL_ARG_WORKSPACE, s->workspace};
  ct_dnnl_execute(ctx, s->backward, n, args);
}

void ct_cpu_max_pool(ct_kernel_ctx *ctx) { window_forward(ctx, WINDOW_MAX); }
void ct_cpu_avg_pool(ct_kernel_ctx *ctx) { window_forward(ctx, WINDOW_AVG); }
/* MaxPoolGrad(x, dy), AvgPoolGrad(dy, x_like). */
void ct_cpu_max_pool_grad(ct_kernel_ctx *ctx) { window_backward(ctx, WINDOW_MAX, 0, 1); }
void ct_cpu_avg_pool_grad(ct_kernel_ctx *ctx) { window_backward(ctx, WINDOW_AVG, -1, 0); }
