/* Max and average pooling through oneDNN, with their gradients.
 *
 * Forward kernels run oneDNN's inference primitives, AvgPoolGrad its
 * backward primitive. MaxPoolGrad is plain C: oneDNN's backward primitive
 * needs the forward pass's workspace (where each maximum was), which would
 * have to be recomputed (the graph keeps no opaque tensors); finding each
 * window's maximum again while adding dy is one pass instead of three. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "device/cpu_device.h"
#include "kernels/cpu/cpu_kernels.h"
#include "ops/conv_geometry.h"

typedef enum { WINDOW_MAX, WINDOW_AVG } window_alg;

typedef struct window_state {
  int64_t key[5];           /* x dims and whether this is a gradient kernel */
  dnnl_primitive_t forward; /* inference; NULL in a gradient kernel */
  dnnl_primitive_t backward;
  dnnl_memory_t x, y, dx, dy;
} window_state;

static void window_state_free(void *data) {
  window_state *s = data;
  if (s == NULL) return;
  if (s->forward) dnnl_primitive_destroy(s->forward);
  if (s->backward) dnnl_primitive_destroy(s->backward);
  dnnl_memory_t mems[] = {s->x, s->y, s->dx, s->dy};
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

/* Shapes of x and y: a forward kernel's input and output, or AvgPoolGrad's
 * output (dx) and input 0 (dy). */
static void window_shapes(const ct_kernel_ctx *ctx, int grad, ct_shape *x, ct_shape *y) {
  *x = grad ? ctx->outputs[0].shape : ctx->inputs[0].shape;
  *y = grad ? ctx->inputs[0].shape : ctx->outputs[0].shape;
}

static window_state *window_state_make(ct_kernel_ctx *ctx, window_alg alg, int grad,
                                       const int64_t *key) {
  ct_shape xs, ys;
  window_shapes(ctx, grad, &xs, &ys);
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
  }
  if (!failed && !grad)
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
  window_shapes(ctx, grad, &xs, &ys);
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

/* AvgPoolGrad(dy, x_like) through oneDNN's backward primitive. */
static void avg_pool_backward(ct_kernel_ctx *ctx) {
  window_state *s = window_state_get(ctx, WINDOW_AVG, 1);
  if (s == NULL) return;
  dnnl_memory_set_data_handle(s->dy, ctx->inputs[0].data);
  dnnl_memory_set_data_handle(s->dx, ctx->outputs[0].data);
  dnnl_exec_arg_t args[] = {{DNNL_ARG_DIFF_DST, s->dy}, {DNNL_ARG_DIFF_SRC, s->dx}};
  ct_dnnl_execute(ctx, s->backward, 2, args);
}

/* MaxPoolGrad(x, dy) -> dx: each dy goes to the first largest x of its
 * window (row by row, as oneDNN's forward picks it; padding never wins),
 * added where windows overlap. Threads take whole images, so the sums
 * are in a fixed order. */
void ct_cpu_max_pool_grad(ct_kernel_ctx *ctx) {
  const ct_shape *xs = &ctx->inputs[0].shape, *ys = &ctx->inputs[1].shape;
  const int64_t N = xs->dims[0], H = xs->dims[1], W = xs->dims[2], C = xs->dims[3];
  const int64_t P = ys->dims[1], Q = ys->dims[2];
  const pool_geometry g = pool_geometry_of(&ctx->attrs->pool, xs);
  const float *X = ct_in_f32(ctx, 0), *DY = ct_in_f32(ctx, 1);
  float *DX = ct_out_f32(ctx, 0);
  memset(DX, 0, (size_t)(N * H * W * C) * sizeof *DX);
  enum { BLOCK = 64 }; /* channels searched at once */
  const int threads = ctx->threads;
#pragma omp parallel for num_threads(threads) if (N * H * W * C > CT_PARALLEL_GRAIN)
  for (int64_t n = 0; n < N; ++n)
    for (int64_t p = 0; p < P; ++p)
      for (int64_t q = 0; q < Q; ++q)
        for (int64_t c0 = 0; c0 < C; c0 += BLOCK) {
          const int64_t nc = C - c0 < BLOCK ? C - c0 : BLOCK;
          float best[BLOCK];
          int64_t where[BLOCK];
          for (int64_t c = 0; c < nc; ++c) best[c] = -INFINITY, where[c] = -1;
          for (int64_t r = 0; r < g.kernel[0]; ++r) {
            const int64_t h = p * g.strides[0] - g.pad_l[0] + r;
            if (h < 0 || h >= H) continue;
            for (int64_t t = 0; t < g.kernel[1]; ++t) {
              const int64_t w = q * g.strides[1] - g.pad_l[1] + t;
              if (w < 0 || w >= W) continue;
              const int64_t at = ((n * H + h) * W + w) * C + c0;
              for (int64_t c = 0; c < nc; ++c)
                if (X[at + c] > best[c] || where[c] < 0) best[c] = X[at + c], where[c] = at + c;
            }
          }
          const float *dy = DY + ((n * P + p) * Q + q) * C + c0;
          for (int64_t c = 0; c < nc; ++c) DX[where[c]] += dy[c];
        }
}

void ct_cpu_max_pool(ct_kernel_ctx *ctx) { window_forward(ctx, WINDOW_MAX); }
void ct_cpu_avg_pool(ct_kernel_ctx *ctx) { window_forward(ctx, WINDOW_AVG); }
void ct_cpu_avg_pool_grad(ct_kernel_ctx *ctx) { avg_pool_backward(ctx); }
