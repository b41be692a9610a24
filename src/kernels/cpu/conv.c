/* Conv2D and its two gradients through oneDNN.
 *
 * Activations stay NHWC and filters HWIO, in fp32, for the rest of the
 * graph. Each primitive may want its arguments otherwise: filters in a
 * blocked layout of its own (format "any"); on a device that computes in
 * bfloat16 (ct_cpu) its inputs rounded to bfloat16; with Winograd's
 * algorithm every argument in a layout of its own. A reorder converts each such
 * argument on the way in (the op's inputs) or on the way out (its output),
 * through scratch memory. Primitives are made for the shapes of the first
 * run and kept in the node's kernel state until the shapes change (a short
 * last batch).
 *
 * oneDNN's forward kernels run layers of at most 16 output channels slower
 * than its backward-data kernels doing the same arithmetic, with AVX2 and
 * with AVX-512 (bench/RESULTS.md, "Behind the code's choices"). A stride-1,
 * undilated convolution y = conv(x, W) is the backward data of another: the one whose
 * output gradient is x, under the filter turned half a turn with input and
 * output channels swapped, W'[h][w][o][i] = W[R-1-h][S-1-w][i][o], padded
 * R-1-p where y was padded p. Such forward convolutions run "transposed" so.
 *
 * A forward convolution with a bias (a third input) and a ReLU
 * (attrs.relu: ct_conv2d_bias) adds them as its primitive writes y (oneDNN's
 * post-ops; ctower's own Winograd in its output transform) where the
 * primitive takes them, else in one pass over y after it (transposed). Its
 * contract, on every path and
 * every CPU: the bits of the separate Conv2D, Add and Relu. Both ways add
 * the bias to the finished sum of products in one fp32 addition and then
 * clamp, as Add and Relu do, so fusing never changes a result
 * (tests/ops/test_gradients.c checks each path).
 *
 * Winograd's algorithm, where asked for, is oneDNN's for 3x3 layers where
 * oneDNN has it (CPUs with AVX-512: its F(4x4, 3x3) does fewer products
 * than ctower's own F(2x2, 3x3)), else ctower's own (winograd.c) on the
 * layers it takes; 5x5 layers, which oneDNN's Winograd does not take, on
 * ctower's own everywhere. */
#include <stdlib.h>
#include <string.h>

#include "device/cpu_device.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/winograd.h"
#include "ops/conv_geometry.h"
#include "kernels/kernel_shapes.h"

/* The three arguments of every convolution primitive, whichever is its output. */
enum { ARG_X, ARG_FILTER, ARG_Y, N_ARGS };

/* The most output channels of a forward convolution run transposed. */
enum { TRANSPOSED_MAX_CHANNELS = 16 };

typedef struct conv_state {
  int64_t key[11]; /* x dims, filter dims, strides and padding */
  dnnl_primitive_t prim;
  ct_dnnl_arg args[N_ARGS];
  ct_dnnl_scratchpad scratchpad;
  int transposed; /* a forward convolution run as a backward-data one (above) */
  int own_winograd; /* run by winograd.c, not by a primitive */
  ct_winograd_shape winograd_shape;
  int fused;          /* the primitive (or own Winograd) adds the bias and ReLU itself */
  dnnl_memory_t bias; /* its bias post-op's operand, when fused with a bias */
} conv_state;

static void conv_state_free(void *data) {
  conv_state *s = data;
  if (s == NULL) return;
  if (s->prim) dnnl_primitive_destroy(s->prim);
  if (s->bias) dnnl_memory_destroy(s->bias);
  for (int i = 0; i < N_ARGS; ++i) ct_dnnl_arg_free(&s->args[i]);
  ct_dnnl_scratchpad_free(&s->scratchpad);
  free(s);
}

/* Which argument a kind of convolution writes. */
static int output_arg(conv_kind kind) {
  return kind == CONV_FORWARD ? ARG_Y : kind == CONV_BACKWARD_DATA ? ARG_X : ARG_FILTER;
}

/* The query of the primitive's layout of argument `arg`; transposed, the
 * primitive is a backward-data one whose x is our y and whose y our x. */
static dnnl_query_t arg_query(conv_kind kind, int transposed, int arg) {
  if (transposed) {
    kind = CONV_BACKWARD_DATA;
    arg = arg == ARG_X ? ARG_Y : arg == ARG_Y ? ARG_X : arg;
  }
  if (arg == ARG_FILTER)
    return kind == CONV_BACKWARD_FILTER ? dnnl_query_diff_weights_md : dnnl_query_weights_md;
  if (arg == ARG_X) return kind == CONV_BACKWARD_DATA ? dnnl_query_diff_src_md : dnnl_query_src_md;
  return kind == CONV_FORWARD ? dnnl_query_dst_md : dnnl_query_diff_dst_md;
}

/* What a forward convolution adds to y as it writes it: a bias, a ReLU. */
typedef struct conv_epilogue {
  int bias, relu;
} conv_epilogue;

static int epilogue_any(const conv_epilogue *e) { return e && (e->bias || e->relu); }

/* The layout of a bias as a post-op's second operand: one value per
 * output channel, broadcast over images and pixels. */
static dnnl_memory_desc_t bias_operand_md(int64_t channels) {
  const int64_t dims[4] = {1, channels, 1, 1};
  return ct_dnnl_md(4, dims, dnnl_nchw);
}

/* Attributes asking for a user scratchpad and, for epilogue e of a
 * convolution of `channels` outputs, its post-ops: the bias added, then the
 * ReLU. The bias is a binary post-op, not the convolution's bias argument:
 * a post-op applies to the finished sum of products, as the separate Add
 * does, whereas a kernel taking the bias argument may start its sums from
 * the bias (oneDNN's AVX2 direct kernel does), which rounds otherwise. */
static dnnl_primitive_attr_t conv_attr(const conv_epilogue *e, int64_t channels) {
  dnnl_primitive_attr_t attr = ct_dnnl_user_scratchpad();
  if (attr == NULL || !epilogue_any(e)) return attr;
  const dnnl_memory_desc_t bias_md = bias_operand_md(channels);
  dnnl_post_ops_t ops = NULL;
  int failed = dnnl_post_ops_create(&ops) != dnnl_success;
  if (!failed && e->bias)
    failed = dnnl_post_ops_append_binary(ops, dnnl_binary_add, &bias_md) != dnnl_success;
  if (!failed && e->relu)
    failed = dnnl_post_ops_append_eltwise(ops, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f) != dnnl_success;
  if (failed || dnnl_primitive_attr_set_post_ops(attr, ops) != dnnl_success) {
    dnnl_primitive_attr_destroy(attr);
    attr = NULL;
  }
  if (ops) dnnl_post_ops_destroy(ops);
  return attr;
}

/* The most input channels of a forward convolution that takes oneDNN's
 * direct kernel before its brgemm one (below). */
enum { FEW_CHANNELS = 4 };

/* The primitive descriptor of a forward convolution: oneDNN's first choice,
 * except that on fp32 images of few channels (a first layer, grayscale or
 * RGB) its direct kernel is taken before its brgemm one, which handles so
 * short a reduction (channels times filter width) poorly; the direct kernel
 * gives the same bits (bench/RESULTS.md, "Behind the code's choices"). */
static dnnl_status_t forward_pd_create(dnnl_primitive_desc_t *pd,
                                       const dnnl_convolution_desc_t *desc,
                                       const_dnnl_primitive_attr_t attr, dnnl_engine_t engine) {
  const dnnl_memory_desc_t *x = &desc->src_desc;
  if (x->dims[1] > FEW_CHANNELS || x->data_type != dnnl_f32)
    return dnnl_primitive_desc_create(pd, desc, attr, engine, NULL);
  dnnl_primitive_desc_iterator_t it = NULL;
  dnnl_status_t st = dnnl_primitive_desc_iterator_create(&it, desc, attr, engine, NULL);
  if (st != dnnl_success) return st;
  *pd = NULL;
  do {
    dnnl_primitive_desc_t candidate = dnnl_primitive_desc_iterator_fetch(it);
    const char *impl = NULL;
    if (candidate &&
        dnnl_primitive_desc_query(candidate, dnnl_query_impl_info_str, 0, &impl) == dnnl_success &&
        impl && strncmp(impl, "brgconv", 7) != 0) {
      *pd = candidate;
      break;
    }
    if (candidate) dnnl_primitive_desc_destroy(candidate);
  } while (dnnl_primitive_desc_iterator_next(it) == dnnl_success);
  dnnl_primitive_desc_iterator_destroy(it);
  return *pd ? dnnl_success : dnnl_primitive_desc_create(pd, desc, attr, engine, NULL);
}

/* Creates the primitive descriptor of a `kind` convolution computed with
 * `alg`; md[i] are the layouts the primitive is asked to take, hint[i] those
 * of the forward convolution a gradient's primitive is made to match; a
 * forward convolution adds epilogue e (NULL: none) itself.
 * Returns the oneDNN status: dnnl_unimplemented when no implementation fits. */
static dnnl_status_t conv_pd_create(dnnl_primitive_desc_t *pd, conv_kind kind,
                                    dnnl_alg_kind_t alg, const dnnl_memory_desc_t *md,
                                    const dnnl_memory_desc_t *hint,
                                    const ct_conv2d_attrs *a, const ct_window *wh,
                                    const ct_window *ww, dnnl_engine_t engine,
                                    const conv_epilogue *e) {
  dnnl_dims_t strides = {a->strides[0], a->strides[1]};
  /* oneDNN counts the rows and columns skipped between taps */
  dnnl_dims_t dilates = {a->dilations[0] - 1, a->dilations[1] - 1};
  dnnl_dims_t pad_l = {wh->pad_before, ww->pad_before}, pad_r = {wh->pad_after, ww->pad_after};
  dnnl_convolution_desc_t fwd_desc, bwd_desc;
  dnnl_primitive_desc_t fwd_pd = NULL;
  *pd = NULL;
  if (kind != CONV_FORWARD) e = NULL;
  dnnl_primitive_attr_t attr = conv_attr(e, hint[ARG_Y].dims[1]);
  if (attr == NULL) return dnnl_out_of_memory;
  dnnl_status_t st = dnnl_dilated_convolution_forward_desc_init(
      &fwd_desc, dnnl_forward_training, alg, &hint[ARG_X], &hint[ARG_FILTER], NULL, &hint[ARG_Y],
      strides, dilates, pad_l, pad_r);
  if (st == dnnl_success)
    st = kind == CONV_FORWARD ? forward_pd_create(&fwd_pd, &fwd_desc, attr, engine)
                              : dnnl_primitive_desc_create(&fwd_pd, &fwd_desc, attr, engine, NULL);
  if (st != dnnl_success || kind == CONV_FORWARD) {
    dnnl_primitive_attr_destroy(attr);
    *pd = fwd_pd;
    return st;
  }
  if (kind == CONV_BACKWARD_DATA)
    st = dnnl_dilated_convolution_backward_data_desc_init(&bwd_desc, alg, &md[ARG_X],
                                                          &md[ARG_FILTER], &md[ARG_Y], strides,
                                                          dilates, pad_l, pad_r);
  else
    st = dnnl_dilated_convolution_backward_weights_desc_init(&bwd_desc, alg, &md[ARG_X],
                                                             &md[ARG_FILTER], NULL, &md[ARG_Y],
                                                             strides, dilates, pad_l, pad_r);
  if (st == dnnl_success) st = dnnl_primitive_desc_create(pd, &bwd_desc, attr, engine, fwd_pd);
  dnnl_primitive_desc_destroy(fwd_pd);
  dnnl_primitive_attr_destroy(attr);
  return st;
}

/* A convolution's primitive descriptor on a CPU device, and the layouts of
 * its arguments as the graph has them. */
typedef struct conv_desc {
  dnnl_primitive_desc_t pd;
  dnnl_memory_desc_t user_md[N_ARGS];
  int transposed; /* a forward convolution run as a backward-data one */
  int fused;      /* the primitive adds the epilogue asked for */
} conv_desc;

/* The descriptor of the forward convolution of x by a filter of R x S
 * taps run transposed (the comment at the top): user_md[ARG_FILTER] is
 * the turned filter, HWIO with input and output channels swapped. */
static dnnl_status_t transposed_desc_make(const ct_cpu *cpu, const int64_t dims[N_ARGS][4],
                                          const ct_conv2d_attrs *a, const ct_window *wh,
                                          const ct_window *ww, conv_desc *d) {
  const int64_t R = dims[ARG_FILTER][2], S = dims[ARG_FILTER][3];
  const int64_t turned[4] = {dims[ARG_FILTER][1], dims[ARG_FILTER][0], R, S};
  d->user_md[ARG_X] = ct_dnnl_md(4, dims[ARG_X], dnnl_nhwc);
  d->user_md[ARG_FILTER] = ct_dnnl_md(4, turned, dnnl_hwio);
  d->user_md[ARG_Y] = ct_dnnl_md(4, dims[ARG_Y], dnnl_nhwc);
  /* in the backward convolution's roles: its x is our y, its y our x */
  dnnl_memory_desc_t md[N_ARGS] = {d->user_md[ARG_Y], d->user_md[ARG_FILTER], d->user_md[ARG_X]};
  dnnl_dims_t filter_dims = {turned[0], turned[1], R, S};
  dnnl_memory_desc_init_by_tag(&md[ARG_FILTER], 4, filter_dims, dnnl_f32, dnnl_format_tag_any);
  /* in bf16 the inputs (x and the filter) bf16, the output fp32; the
   * forward convolution matched, all bf16 */
  dnnl_memory_desc_t hint[N_ARGS];
  for (int i = 0; i < N_ARGS; ++i) {
    if (cpu->bf16 && i != ARG_X) md[i].data_type = dnnl_bf16;
    hint[i] = md[i];
    if (cpu->bf16) hint[i].data_type = dnnl_bf16;
  }
  const ct_window th = {dims[ARG_X][2], R - 1 - wh->pad_before, R - 1 - wh->pad_after};
  const ct_window tw = {dims[ARG_X][3], S - 1 - ww->pad_before, S - 1 - ww->pad_after};
  return conv_pd_create(&d->pd, CONV_BACKWARD_DATA, dnnl_convolution_direct, md, hint, a, &th,
                        &tw, cpu->engine, NULL);
}

/* Whether a's filter taps are adjacent (no dilation). */
static int undilated(const ct_conv2d_attrs *a) {
  return a->dilations[0] == 1 && a->dilations[1] == 1;
}

/* Whether the device computes a stride-1, undilated layer of square filter
 * fs by Winograd's algorithm, where an implementation takes its taps:
 * oneDNN's 3x3 where oneDNN has AVX-512, else ctower's own 3x3
 * (winograd.c); ctower's own 5x5 everywhere. */
static int winograd_wanted(const ct_cpu *cpu, const ct_shape *fs, const ct_conv2d_attrs *a) {
  return cpu->winograd && !cpu->bf16 && fs->dims[0] == fs->dims[1] && a->strides[0] == 1 &&
         a->strides[1] == 1 && undilated(a) && fs->dims[2] >= cpu->winograd_min_channels &&
         fs->dims[3] >= cpu->winograd_min_channels;
}

/* Whether oneDNN's Winograd is asked for the layer of filter fs: where
 * oneDNN has one (no own_winograd), for 3x3 layers. Elsewhere a layer
 * ctower's own does not take is the direct convolution's, bit for bit. */
static int onednn_winograd_wanted(const ct_cpu *cpu, const ct_shape *fs,
                                  const ct_conv2d_attrs *a) {
  return !cpu->own_winograd && winograd_wanted(cpu, fs, a) && fs->dims[0] == 3;
}

/* Whether ctower's own Winograd (winograd.c) runs the convolution of x by
 * filter fs into y on device, and if so its shape in *s. */
static int own_winograd(const ct_device *device, const ct_shape *xs, const ct_shape *fs,
                        const ct_shape *ys, const ct_conv2d_attrs *a, ct_winograd_shape *s) {
  const ct_cpu *cpu = ct_cpu_of(device);
  const int64_t taps = fs->dims[0];
  if (!(cpu->own_winograd || taps == 5) || !winograd_wanted(cpu, fs, a) ||
      !ct_winograd_supports(taps, fs->dims[2], fs->dims[3]))
    return 0;
  const ct_window wh = ct_window_of(xs->dims[1], taps, 1, a->same_padding);
  const ct_window ww = ct_window_of(xs->dims[2], taps, 1, a->same_padding);
  const ct_winograd_shape shape = {.taps = taps,
                                   .batch = xs->dims[0],
                                   .in_h = xs->dims[1],
                                   .in_w = xs->dims[2],
                                   .in_c = xs->dims[3],
                                   .out_h = ys->dims[1],
                                   .out_w = ys->dims[2],
                                   .out_c = ys->dims[3],
                                   .pad_top = wh.pad_before,
                                   .pad_left = ww.pad_before};
  *s = shape;
  return 1;
}

/* The scratch bytes ctower's own Winograd takes for a `kind` convolution. */
static size_t own_winograd_scratch(conv_kind kind, const ct_winograd_shape *s, int threads) {
  return kind == CONV_FORWARD         ? ct_winograd_forward_scratch(s, threads)
         : kind == CONV_BACKWARD_DATA ? ct_winograd_backward_data_scratch(s, threads)
                                      : ct_winograd_backward_filter_scratch(s, threads);
}

/* conv_pd_create into d, with epilogue e where the primitive takes it
 * (d->fused), else without. */
static dnnl_status_t conv_pd_try(conv_desc *d, conv_kind kind, dnnl_alg_kind_t alg,
                                 const dnnl_memory_desc_t *md, const dnnl_memory_desc_t *hint,
                                 const ct_conv2d_attrs *a, const ct_window *wh,
                                 const ct_window *ww, dnnl_engine_t engine,
                                 const conv_epilogue *e) {
  if (kind == CONV_FORWARD && epilogue_any(e)) {
    const dnnl_status_t st = conv_pd_create(&d->pd, kind, alg, md, hint, a, wh, ww, engine, e);
    d->fused = st == dnnl_success;
    if (st != dnnl_unimplemented) return st;
  }
  return conv_pd_create(&d->pd, kind, alg, md, hint, a, wh, ww, engine, NULL);
}

/* Describes a `kind` convolution of x (NHWC), filter (HWIO) and y on
 * device, as its arithmetic (ct_cpu) asks, a forward one with epilogue e
 * (NULL: none) in its primitive where it can (d->fused). Returns the
 * oneDNN status. */
static dnnl_status_t conv_desc_make(const ct_device *device, conv_kind kind, const ct_shape *xs,
                                    const ct_shape *fs, const ct_shape *ys,
                                    const ct_conv2d_attrs *a, const conv_epilogue *e,
                                    conv_desc *d) {
  const ct_cpu *cpu = ct_cpu_of(device);
  ct_window hw[2];
  ct_conv_windows(xs->dims, fs->dims, a->strides, a->dilations, a->same_padding, hw);
  const ct_window wh = hw[0], ww = hw[1];
  const int64_t dims[N_ARGS][4] = {{xs->dims[0], xs->dims[3], xs->dims[1], xs->dims[2]},
                                   {fs->dims[3], fs->dims[2], fs->dims[0], fs->dims[1]},
                                   {ys->dims[0], ys->dims[3], ys->dims[1], ys->dims[2]}};
  const dnnl_format_tag_t user_tags[N_ARGS] = {dnnl_nhwc, dnnl_hwio, dnnl_nhwc};
  dnnl_memory_desc_t md[N_ARGS];
  const int out = output_arg(kind);
  const int stride_1 = a->strides[0] == 1 && a->strides[1] == 1;
  const int winograd = onednn_winograd_wanted(cpu, fs, a);
  d->pd = NULL;
  d->fused = 0;
  d->transposed = kind == CONV_FORWARD && stride_1 && undilated(a) && !winograd &&
                  fs->dims[3] <= TRANSPOSED_MAX_CHANNELS;
  if (d->transposed) return transposed_desc_make(cpu, dims, a, &wh, &ww, d);
  /* Direct convolutions take activations in NHWC (in bf16, a conversion
   * without a change of layout is cheaper than oneDNN's blocked layouts);
   * Winograd's primitives pick every layout themselves */
  for (int i = 0; i < N_ARGS; ++i) {
    d->user_md[i] = ct_dnnl_md(4, dims[i], user_tags[i]);
    const int own_layout = winograd || i == ARG_FILTER;
    dnnl_dims_t dd = {dims[i][0], dims[i][1], dims[i][2], dims[i][3]};
    dnnl_memory_desc_init_by_tag(&md[i], 4, dd, cpu->bf16 && i != out ? dnnl_bf16 : dnnl_f32,
                                 own_layout ? dnnl_format_tag_any : user_tags[i]);
  }
  /* the forward convolution a gradient's primitive matches: in bf16, all of
   * its arguments bf16 (what the gradient consumes) */
  dnnl_memory_desc_t hint[N_ARGS];
  for (int i = 0; i < N_ARGS; ++i) {
    hint[i] = md[i];
    if (cpu->bf16 && kind != CONV_FORWARD) hint[i].data_type = dnnl_bf16;
  }
  dnnl_status_t st = dnnl_unimplemented;
  /* Winograd where oneDNN implements it for this layer, else direct */
  if (winograd)
    st = conv_pd_try(d, kind, dnnl_convolution_winograd, md, hint, a, &wh, &ww, cpu->engine, e);
  if (st == dnnl_unimplemented)
    st = conv_pd_try(d, kind, dnnl_convolution_direct, md, hint, a, &wh, &ww, cpu->engine, e);
  return st;
}

/* The epilogue of a `kind` convolution with attrs a, with or without a bias:
 * only a forward one has any. */
static conv_epilogue epilogue_for(conv_kind kind, int with_bias, const ct_conv2d_attrs *a) {
  const conv_epilogue e = {kind == CONV_FORWARD && with_bias, kind == CONV_FORWARD && a->relu};
  return e;
}

/* The epilogue a `kind` convolution node asks for. */
static conv_epilogue epilogue_of(const ct_kernel_ctx *ctx, conv_kind kind) {
  return epilogue_for(kind, ctx->n_inputs > 2, &ctx->attrs->conv2d);
}

/* y[r][c] += bias[c] (when not NULL), then max(0, y) with relu, over rows
 * of `channels`: the epilogue of a forward convolution its primitive did
 * not do, in one pass (the Add and Relu kernels' arithmetic). */
static void apply_epilogue(float *y, const float *bias, int relu, int64_t rows,
                           int64_t channels, int threads) {
#pragma omp parallel for num_threads(threads) if (rows * channels > CT_PARALLEL_GRAIN)
  for (int64_t r = 0; r < rows; ++r) {
    float *yr = y + r * channels;
    if (bias)
      for (int64_t c = 0; c < channels; ++c) yr[c] += bias[c];
    if (relu)
      for (int64_t c = 0; c < channels; ++c) yr[c] = yr[c] > 0.0f ? yr[c] : 0.0f;
  }
}

static conv_state *conv_state_make(ct_kernel_ctx *ctx, conv_kind kind, const int64_t *key) {
  const ct_shape *xs = NULL, *fs = NULL, *ys = NULL;
  ct_conv_shapes(ctx, kind, &xs, &fs, &ys);
  conv_state *s = calloc(1, sizeof *s);
  if (s == NULL) {
    ct_status_set(ctx->status, CT_RESOURCE_EXHAUSTED, "out of host memory in Conv2D");
    return NULL;
  }
  memcpy(s->key, key, sizeof s->key);
  s->own_winograd = own_winograd(ctx->device, xs, fs, ys, &ctx->attrs->conv2d, &s->winograd_shape);
  s->fused = s->own_winograd; /* its forward pass adds the epilogue as it writes y */
  if (s->own_winograd) return s;
  conv_desc d;
  const conv_epilogue e = epilogue_of(ctx, kind);
  int failed = ct_dnnl_check(
      ctx, conv_desc_make(ctx->device, kind, xs, fs, ys, &ctx->attrs->conv2d, &e, &d),
      "convolution primitive descriptor");
  s->transposed = d.transposed;
  s->fused = d.fused;
  if (!failed && s->fused && e.bias) {
    const dnnl_memory_desc_t bias_md = bias_operand_md(fs->dims[3]);
    s->bias = ct_dnnl_memory(ctx, &bias_md, DNNL_MEMORY_NONE);
    failed = s->bias == NULL;
  }
  failed = failed || ct_dnnl_primitive_create(ctx, &s->prim, d.pd, "convolution primitive");
  for (int i = 0; i < N_ARGS && !failed; ++i) {
    const dnnl_query_t query = arg_query(kind, d.transposed, i);
    failed = ct_dnnl_arg_make(ctx, &s->args[i], &d.user_md[i],
                              dnnl_primitive_desc_query_md(d.pd, query, 0), i == output_arg(kind));
  }
  failed = failed || ct_dnnl_scratchpad_make(ctx, &s->scratchpad, d.pd);
  if (d.pd) dnnl_primitive_desc_destroy(d.pd);
  if (failed || ctx->status->code != CT_OK) {
    conv_state_free(s);
    return NULL;
  }
  return s;
}

/* The scratch blocks (at most 3) a convolution of `kind` takes, found as
 * the kernel makes its primitive. */
static int conv_scratch(const ct_device *device, conv_kind kind, const ct_shape *x,
                        const ct_shape *filter, const ct_shape *y, const ct_conv2d_attrs *attrs,
                        int with_bias, size_t bytes[3]) {
  ct_winograd_shape shape;
  if (own_winograd(device, x, filter, y, attrs, &shape)) {
    bytes[0] = own_winograd_scratch(kind, &shape, device->threads);
    return 1;
  }
  conv_desc d;
  const conv_epilogue e = epilogue_for(kind, with_bias, attrs);
  if (conv_desc_make(device, kind, x, filter, y, attrs, &e, &d) != dnnl_success) {
    if (d.pd) dnnl_primitive_desc_destroy(d.pd);
    return 0;
  }
  const dnnl_memory_desc_t *prim_md[N_ARGS];
  for (int i = 0; i < N_ARGS; ++i)
    prim_md[i] = dnnl_primitive_desc_query_md(d.pd, arg_query(kind, d.transposed, i), 0);
  int n = ct_dnnl_scratch_blocks(d.user_md, prim_md, N_ARGS, d.pd, bytes);
  if (d.transposed) bytes[n++] = (size_t)ct_shape_elements(filter) * sizeof(float);
  dnnl_primitive_desc_destroy(d.pd);
  return n;
}

CT_CPU_SCRATCH(ct_cpu_conv2d_scratch) {
  if (n_inputs < 2) return 0;
  return conv_scratch(device, CONV_FORWARD, &in[0], &in[1], &out[0], &attrs->conv2d, n_inputs > 2,
                      bytes);
}

CT_CPU_SCRATCH(ct_cpu_conv2d_backprop_input_scratch) {
  if (n_inputs < 2) return 0;
  return conv_scratch(device, CONV_BACKWARD_DATA, &out[0], &in[0], &in[1], &attrs->conv2d, 0,
                      bytes);
}

CT_CPU_SCRATCH(ct_cpu_conv2d_backprop_filter_scratch) {
  if (n_inputs < 2) return 0;
  return conv_scratch(device, CONV_BACKWARD_FILTER, &in[0], &out[0], &in[1], &attrs->conv2d, 0,
                      bytes);
}

static conv_state *conv_state_get(ct_kernel_ctx *ctx, conv_kind kind) {
  const ct_shape *xs = NULL, *fs = NULL, *ys = NULL;
  ct_conv_shapes(ctx, kind, &xs, &fs, &ys);
  const ct_conv2d_attrs *a = &ctx->attrs->conv2d;
  int64_t key[11] = {xs->dims[0],   xs->dims[1],   xs->dims[2],    xs->dims[3],
                     fs->dims[0],   fs->dims[1],   fs->dims[2],    fs->dims[3],
                     a->strides[0], a->strides[1], a->same_padding};
  conv_state *s = ctx->state->data;
  if (s && memcmp(s->key, key, sizeof key) == 0) return s;
  conv_state_free(s);
  ctx->state->data = NULL;
  s = conv_state_make(ctx, kind, key);
  ctx->state->data = s;
  ctx->state->free_fn = conv_state_free;
  return s;
}

/* The filter of a transposed convolution (the comment at the top), from
 * the HWIO filter f of R x S x I x O into t: t[h][w][o][i] =
 * f[R-1-h][S-1-w][i][o]. */
static void turn_filter(const float *f, const ct_shape *fs, float *t) {
  const int64_t R = fs->dims[0], S = fs->dims[1], I = fs->dims[2], O = fs->dims[3];
  for (int64_t h = 0; h < R; ++h)
    for (int64_t w = 0; w < S; ++w) {
      const float *from = f + ((R - 1 - h) * S + (S - 1 - w)) * I * O;
      float *to = t + (h * S + w) * O * I;
      for (int64_t i = 0; i < I; ++i)
        for (int64_t o = 0; o < O; ++o) to[o * I + i] = from[i * O + o];
    }
}

static void own_winograd_run(ct_kernel_ctx *ctx, conv_kind kind, const ct_winograd_shape *s) {
  void *scratch = ct_kernel_scratch(ctx, own_winograd_scratch(kind, s, ctx->threads));
  if (scratch == NULL) return;
  const float *in0 = ctx->inputs[0].data, *in1 = ctx->inputs[1].data;
  float *out = ctx->outputs[0].data;
  if (kind == CONV_FORWARD) {
    const conv_epilogue e = epilogue_of(ctx, kind);
    const ct_winograd_epilogue fused = {e.bias ? ctx->inputs[2].data : NULL, e.relu};
    ct_winograd_forward(s, in0, in1, &fused, out, scratch, ctx->threads);
  } else if (kind == CONV_BACKWARD_DATA)
    ct_winograd_backward_data(s, in0, in1, out, scratch, ctx->threads);
  else
    ct_winograd_backward_filter(s, in0, in1, out, scratch, ctx->threads);
}

/* Runs the convolution's primitive (state s). */
static void primitive_run(ct_kernel_ctx *ctx, conv_kind kind, conv_state *s) {
  void *data[N_ARGS];
  switch (kind) {
    case CONV_FORWARD:
      data[ARG_X] = ctx->inputs[0].data, data[ARG_FILTER] = ctx->inputs[1].data;
      data[ARG_Y] = ctx->outputs[0].data;
      if (s->transposed) {
        const ct_shape *fs = &ctx->inputs[1].shape;
        float *turned = ct_kernel_scratch(ctx, (size_t)ct_shape_elements(fs) * sizeof(float));
        if (turned == NULL) return;
        turn_filter(data[ARG_FILTER], fs, turned);
        data[ARG_FILTER] = turned;
      }
      break;
    case CONV_BACKWARD_DATA:
      data[ARG_FILTER] = ctx->inputs[0].data, data[ARG_Y] = ctx->inputs[1].data;
      data[ARG_X] = ctx->outputs[0].data;
      break;
    default:
      data[ARG_X] = ctx->inputs[0].data, data[ARG_Y] = ctx->inputs[1].data;
      data[ARG_FILTER] = ctx->outputs[0].data;
      break;
  }
  dnnl_memory_t mems[N_ARGS];
  if (ct_dnnl_args_bind(ctx, s->args, N_ARGS, data, mems)) return;
  int x_arg = kind == CONV_BACKWARD_DATA ? DNNL_ARG_DIFF_SRC : DNNL_ARG_SRC;
  const int filter_arg = kind == CONV_BACKWARD_FILTER ? DNNL_ARG_DIFF_WEIGHTS : DNNL_ARG_WEIGHTS;
  int y_arg = kind == CONV_FORWARD ? DNNL_ARG_DST : DNNL_ARG_DIFF_DST;
  if (s->transposed) x_arg = DNNL_ARG_DIFF_DST, y_arg = DNNL_ARG_DIFF_SRC;
  dnnl_exec_arg_t args[N_ARGS + 2] = {
      {x_arg, mems[ARG_X]}, {filter_arg, mems[ARG_FILTER]}, {y_arg, mems[ARG_Y]}};
  int n_args = N_ARGS;
  if (s->bias) {
    if (ct_dnnl_check(ctx, dnnl_memory_set_data_handle(s->bias, ctx->inputs[2].data),
                      "dnnl_memory_set_data_handle"))
      return;
    /* the first post-op's second operand (conv_attr) */
    args[n_args++] = (dnnl_exec_arg_t){DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, s->bias};
  }
  if (ct_dnnl_scratchpad_bind(ctx, &s->scratchpad, args, &n_args) ||
      ct_dnnl_execute(ctx, s->prim, n_args, args))
    return;
  ct_dnnl_args_finish(ctx, s->args, N_ARGS);
}

static void conv_run(ct_kernel_ctx *ctx, conv_kind kind) {
  conv_state *s = conv_state_get(ctx, kind);
  if (s == NULL) return;
  if (s->own_winograd)
    own_winograd_run(ctx, kind, &s->winograd_shape);
  else
    primitive_run(ctx, kind, s);
  const conv_epilogue e = epilogue_of(ctx, kind);
  if (s->fused || !epilogue_any(&e) || ctx->status->code != CT_OK) return;
  const ct_shape *ys = &ctx->outputs[0].shape;
  apply_epilogue(ctx->outputs[0].data, e.bias ? ctx->inputs[2].data : NULL, e.relu,
                 ct_shape_elements(ys) / ys->dims[3], ys->dims[3], ctx->threads);
}

void ct_cpu_conv2d(ct_kernel_ctx *ctx) { conv_run(ctx, CONV_FORWARD); }
void ct_cpu_conv2d_backprop_input(ct_kernel_ctx *ctx) { conv_run(ctx, CONV_BACKWARD_DATA); }
void ct_cpu_conv2d_backprop_filter(ct_kernel_ctx *ctx) { conv_run(ctx, CONV_BACKWARD_FILTER); }
