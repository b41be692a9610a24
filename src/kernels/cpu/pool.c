/* Max and average pooling through oneDNN, with their gradients.
 *
 * Forward kernels run oneDNN's inference primitives. The gradient of max
 * pooling with windows that do not overlap (stride at least the window, as in
 * every model of the zoo) is a loop of ctower's own: each window's first
 * largest x, found again, takes dy, the rest of dx is 0, in one pass, faster
 * than oneDNN's forward and backward primitives (bench/RESULTS.md, "Behind
 * the code's choices"). Other gradient kernels recompute the forward pass
 * (training mode) into scratch memory when the backward primitive needs its
 * workspace (max pooling), then run the backward primitive: cheaper than
 * keeping workspaces alive between the forward and backward passes, and it
 * keeps the graph free of opaque tensors. */
#include <stdlib.h>
#include <string.h>

#include "device/cpu_device.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/lanes.h"
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
  ct_window wh = ct_window_of(x->dims[1], a->window[0], a->stride[0], a->same_padding);
  ct_window ww = ct_window_of(x->dims[2], a->window[1], a->stride[1], a->same_padding);
  pool_geometry g = {{a->stride[0], a->stride[1]},
                     {a->window[0], a->window[1]},
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

/* One window of a max pooling gradient: x and dx at its top left corner
 * (rows row_stride floats apart, pixels C), g its dy. Every dx of the
 * window is written: dy where x is the window's first largest (rows, then
 * columns, as oneDNN's forward picks it), 0 elsewhere. dy + 0 makes -0
 * into +0, as oneDNN's backward pass (dy added to a zeroed dx) does. */
static inline __attribute__((always_inline)) void window_max_grad(const float *x, const float *g,
                                                                  float *dx, int64_t row_stride,
                                                                  int64_t C, int64_t rows,
                                                                  int64_t cols) {
  int64_t c = 0;
  for (; c + LANES <= C; c += LANES) {
    lanes largest, v, dy;
    lane_ints winner = {0};
    memcpy(&largest, x + c, sizeof largest);
    for (int64_t r = 0, tap = 0; r < rows; ++r)
      for (int64_t k = 0; k < cols; ++k, ++tap) {
        if (tap == 0) continue;
        memcpy(&v, x + r * row_stride + k * C + c, sizeof v);
        const lane_ints larger = v > largest;
        largest = lanes_select(larger, v, largest);
        winner = (larger & (int32_t)tap) | (~larger & winner);
      }
    memcpy(&dy, g + c, sizeof dy);
    dy += 0.0f;
    for (int64_t r = 0, tap = 0; r < rows; ++r)
      for (int64_t k = 0; k < cols; ++k, ++tap) {
        const lanes out = (lanes)((winner == (int32_t)tap) & (lane_ints)dy);
        memcpy(dx + r * row_stride + k * C + c, &out, sizeof out);
      }
  }
  for (; c < C; ++c) {
    int64_t winner = 0;
    float largest = x[c];
    for (int64_t r = 0, tap = 0; r < rows; ++r)
      for (int64_t k = 0; k < cols; ++k, ++tap) {
        const float value = x[r * row_stride + k * C + c];
        if (value > largest) largest = value, winner = tap;
      }
    const float dy = g[c] + 0.0f;
    for (int64_t r = 0, tap = 0; r < rows; ++r)
      for (int64_t k = 0; k < cols; ++k, ++tap)
        dx[r * row_stride + k * C + c] = tap == winner ? dy : 0.0f;
  }
}

/* The rows or columns [*first, *last) of input `in` that output position i
 * owns: from its window's start up to the next window's (the last takes
 * the rest), clipped to the input; *window_end: where its window ends. */
static void owned_span(int64_t i, int64_t outputs, int64_t in, int64_t window, int64_t stride,
                       int64_t pad_before, int64_t *first, int64_t *window_end, int64_t *last) {
  const int64_t start = i * stride - pad_before;
  *first = start < 0 ? 0 : start;
  *window_end = start + window < in ? start + window : in;
  *last = i == outputs - 1 || start + stride > in ? in : start + stride;
}

/* MaxPoolGrad(x, dy) where windows do not overlap: every dx written once,
 * so threads may take any rows. */
static void max_pool_grad_apart(ct_kernel_ctx *ctx, const pool_geometry *g) {
  const ct_shape *xs = &ctx->inputs[0].shape, *ys = &ctx->inputs[1].shape;
  const int64_t N = xs->dims[0], H = xs->dims[1], W = xs->dims[2], C = xs->dims[3];
  const int64_t P = ys->dims[1], Q = ys->dims[2];
  const float *x = ct_in_f32(ctx, 0), *dy = ct_in_f32(ctx, 1);
  float *dx = ct_out_f32(ctx, 0);
  if (N * H * W * C == 0) return;
  if (P == 0 || Q == 0) { /* no window: no gradient */
    memset(dx, 0, (size_t)(N * H * W * C) * sizeof *dx);
    return;
  }
  const int64_t row = W * C;
  const int threads = ctx->threads;
#pragma omp parallel for num_threads(threads) schedule(static) if (N * H * row > CT_PARALLEL_GRAIN)
  for (int64_t np = 0; np < N * P; ++np) {
    const int64_t n = np / P, p = np % P;
    int64_t y0, y1, y_end;
    owned_span(p, P, H, g->kernel[0], g->strides[0], g->pad_l[0], &y0, &y1, &y_end);
    const float *xn = x + n * H * row;
    float *dxn = dx + n * H * row;
    for (int64_t q = 0; q < Q; ++q) {
      int64_t x0, x1, x_end;
      owned_span(q, Q, W, g->kernel[1], g->strides[1], g->pad_l[1], &x0, &x1, &x_end);
      const float *gq = dy + ((n * P + p) * Q + q) * C;
      const int64_t at = y0 * row + x0 * C;
      if (y1 - y0 == 2 && x1 - x0 == 2) /* the common 2x2 window, unrolled */
        window_max_grad(xn + at, gq, dxn + at, row, C, 2, 2);
      else if (y1 > y0 && x1 > x0)
        window_max_grad(xn + at, gq, dxn + at, row, C, y1 - y0, x1 - x0);
      for (int64_t y = y0; y < y1 && x_end > x1; ++y) /* columns no window covers */
        memset(dxn + y * row + x1 * C, 0, (size_t)((x_end - x1) * C) * sizeof *dx);
    }
    for (int64_t y = y1; y < y_end; ++y) memset(dxn + y * row, 0, (size_t)row * sizeof *dx);
  }
}

void ct_cpu_max_pool(ct_kernel_ctx *ctx) { window_forward(ctx, WINDOW_MAX); }
void ct_cpu_avg_pool(ct_kernel_ctx *ctx) { window_forward(ctx, WINDOW_AVG); }
/* MaxPoolGrad(x, dy), AvgPoolGrad(dy, x_like). */
void ct_cpu_max_pool_grad(ct_kernel_ctx *ctx) {
  const pool_geometry g = pool_geometry_of(&ctx->attrs->pool, &ctx->inputs[0].shape);
  if (g.strides[0] >= g.kernel[0] && g.strides[1] >= g.kernel[1])
    max_pool_grad_apart(ctx, &g);
  else
    window_backward(ctx, WINDOW_MAX, 0, 1);
}
void ct_cpu_avg_pool_grad(ct_kernel_ctx *ctx) { window_backward(ctx, WINDOW_AVG, -1, 0); }

/* Windows that overlap (window_backward): the forward output again, and a
 * byte of workspace per output element. */
CT_CPU_SCRATCH(ct_cpu_max_pool_grad_scratch) {
  (void)device, (void)out;
  const ct_pool_attrs *pool = &attrs->pool;
  if (n_inputs < 2 || (pool->stride[0] >= pool->window[0] && pool->stride[1] >= pool->window[1]))
    return 0;
  const int64_t dy_elements = ct_shape_elements(&in[n_inputs - 1]);
  const size_t dy_floats = dy_elements > 0 ? (size_t)dy_elements : 0;
  bytes[0] = dy_floats * sizeof(float);
  bytes[1] = dy_floats;
  return 2;
}
