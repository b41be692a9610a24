/* Conv2D and its two gradients through cuDNN's legacy convolution API, as
 * the CPU kernels compute them (kernels/cpu/conv.c).
 *
 * Activations stay NHWC. cuDNN's NHWC filters are KRSC ([out, kh, kw, in])
 * where ours are HWIO, so the filter is transposed into scratch on the way
 * in and the filter gradient on the way out. cuDNN pads both sides alike;
 * where TensorFlow's SAME padding puts one more row (column) after than
 * before, x gets that row of zeros explicitly in scratch (dx gets it and
 * drops it afterwards) and cuDNN pads by the smaller amount. The descriptors
 * and the algorithm (the first deterministic one in cuDNN's heuristic order
 * whose workspace fits) stay in the node's state until the shapes change.
 * A forward convolution's bias and ReLU (ct_conv2d_bias) follow it on the
 * stream as the Add and Relu kernels' launches. */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/launch_basic.h"
#include "kernels/cuda/launch_nn.h"
#include "kernels/cuda/nn_kernels.h"
#include "ops/conv_geometry.h"
#include "kernels/kernel_shapes.h"

typedef struct conv_state {
  int64_t key[12];                /* x dims, filter dims, strides, padding, precision */
  cudnnTensorDescriptor_t x_desc; /* x with its extra rows and columns */
  cudnnTensorDescriptor_t y_desc;
  cudnnFilterDescriptor_t w_desc; /* KRSC */
  cudnnConvolutionDescriptor_t conv_desc;
  cudnnConvolutionFwdAlgo_t fwd_algo; /* the one of the node's kind */
  cudnnConvolutionBwdDataAlgo_t bwd_data_algo;
  cudnnConvolutionBwdFilterAlgo_t bwd_filter_algo;
  size_t workspace_bytes;
  int64_t extra_h, extra_w;          /* rows and columns of zeros after x: 0 or 1 */
  size_t filter_bytes, padded_bytes; /* the other scratch: KRSC filter, padded x or dx */
} conv_state;

static void conv_state_free(void *data) {
  conv_state *s = data;
  if (s == NULL) return;
  if (s->x_desc) cudnnDestroyTensorDescriptor(s->x_desc);
  if (s->y_desc) cudnnDestroyTensorDescriptor(s->y_desc);
  if (s->w_desc) cudnnDestroyFilterDescriptor(s->w_desc);
  if (s->conv_desc) cudnnDestroyConvolutionDescriptor(s->conv_desc);
  free(s);
}

static size_t aligned(size_t bytes) { return (bytes + 255) & ~(size_t)255; }

/* The largest scratch block the device's allocator can likely hand out now:
 * its largest free chunk, or what its limit still lets it reserve. */
static size_t scratch_available(const ct_kernel_ctx *ctx) {
  ct_allocator_stats st = ct_allocator_get_stats(ctx->device->allocator);
  if (st.limit == 0) return SIZE_MAX;
  size_t available = st.largest_free_chunk;
  if (st.limit > st.bytes_reserved && st.limit - st.bytes_reserved > available)
    available = st.limit - st.bytes_reserved;
  return available;
}

/* One of cuDNN's rated algorithms, whatever the kind. */
typedef struct algo_rating {
  int algo;
  cudnnStatus_t status;
  size_t memory;
  cudnnDeterminism_t determinism;
  cudnnMathType_t math;
} algo_rating;

#define MAX_ALGOS 16
_Static_assert(MAX_ALGOS >= (int)CUDNN_CONVOLUTION_FWD_ALGO_COUNT &&
                   MAX_ALGOS >= (int)CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT &&
                   MAX_ALGOS >= (int)CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
               "room for every algorithm's rating");

/* cuDNN's heuristic ratings for the state's shapes, best first. */
static int rate_algos(ct_kernel_ctx *ctx, conv_kind kind, const conv_state *s, algo_rating *out,
                      int *count) {
  cudnnHandle_t h = ct_gpu_cudnn(ct_kernel_gpu(ctx), ctx->node->name, ctx->status);
  if (h == NULL) return 1;
  cudnnStatus_t st;
  *count = 0;
  if (kind == CONV_FORWARD) {
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    st = cudnnGetConvolutionForwardAlgorithm_v7(h, s->x_desc, s->w_desc, s->conv_desc, s->y_desc,
                                                CUDNN_CONVOLUTION_FWD_ALGO_COUNT, count, perf);
    for (int i = 0; st == CUDNN_STATUS_SUCCESS && i < *count; ++i)
      out[i] = (algo_rating){(int)perf[i].algo, perf[i].status, perf[i].memory, perf[i].determinism,
                             perf[i].mathType};
  } else if (kind == CONV_BACKWARD_DATA) {
    cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    st = cudnnGetConvolutionBackwardDataAlgorithm_v7(
        h, s->w_desc, s->y_desc, s->conv_desc, s->x_desc, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
        count, perf);
    for (int i = 0; st == CUDNN_STATUS_SUCCESS && i < *count; ++i)
      out[i] = (algo_rating){(int)perf[i].algo, perf[i].status, perf[i].memory, perf[i].determinism,
                             perf[i].mathType};
  } else {
    cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    st = cudnnGetConvolutionBackwardFilterAlgorithm_v7(
        h, s->x_desc, s->y_desc, s->conv_desc, s->w_desc, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
        count, perf);
    for (int i = 0; st == CUDNN_STATUS_SUCCESS && i < *count; ++i)
      out[i] = (algo_rating){(int)perf[i].algo, perf[i].status, perf[i].memory, perf[i].determinism,
                             perf[i].mathType};
  }
  return ct_cudnn_check(st, ctx->node->name, ctx->status);
}

/* Sets the state's algorithm, its math type and its workspace size. */
static int use_algo(ct_kernel_ctx *ctx, conv_kind kind, conv_state *s, const algo_rating *r) {
  cudnnHandle_t h = ct_gpu_cudnn(ct_kernel_gpu(ctx), ctx->node->name, ctx->status);
  if (h == NULL) return 1;
  const char *what = ctx->node->name;
  /* cuDNN rates each algorithm under a math type, and runs it under that one */
  if (ct_cudnn_check(cudnnSetConvolutionMathType(s->conv_desc, r->math), what, ctx->status))
    return 1;
  cudnnStatus_t st;
  if (kind == CONV_FORWARD) {
    s->fwd_algo = (cudnnConvolutionFwdAlgo_t)r->algo;
    st = cudnnGetConvolutionForwardWorkspaceSize(h, s->x_desc, s->w_desc, s->conv_desc, s->y_desc,
                                                 s->fwd_algo, &s->workspace_bytes);
  } else if (kind == CONV_BACKWARD_DATA) {
    s->bwd_data_algo = (cudnnConvolutionBwdDataAlgo_t)r->algo;
    st = cudnnGetConvolutionBackwardDataWorkspaceSize(
        h, s->w_desc, s->y_desc, s->conv_desc, s->x_desc, s->bwd_data_algo, &s->workspace_bytes);
  } else {
    s->bwd_filter_algo = (cudnnConvolutionBwdFilterAlgo_t)r->algo;
    st = cudnnGetConvolutionBackwardFilterWorkspaceSize(
        h, s->x_desc, s->y_desc, s->conv_desc, s->w_desc, s->bwd_filter_algo, &s->workspace_bytes);
  }
  return ct_cudnn_check(st, what, ctx->status);
}

/* The first deterministic algorithm in cuDNN's order whose workspace fits;
 * in fp32 those rated under FMA math (no TF32) first, and never one that
 * converts fp32 inputs to fp16. */
static int choose_algo(ct_kernel_ctx *ctx, conv_kind kind, conv_state *s) {
  algo_rating ratings[MAX_ALGOS];
  int count = 0;
  if (rate_algos(ctx, kind, s, ratings, &count)) return 1;
  const size_t others = aligned(s->filter_bytes) + aligned(s->padded_bytes);
  const size_t available = scratch_available(ctx);
  const size_t fits = available > others ? available - others : 0;
  const int fp32 = ct_kernel_gpu(ctx)->precision == CT_PRECISION_FP32;
  /* pass 0 asks for the FMA rating in fp32; pass 1 (fp32 only) takes an
   * algorithm rated otherwise and runs it under FMA math all the same */
  for (int pass = 0; pass < (fp32 ? 2 : 1); ++pass)
    for (int i = 0; i < count; ++i) {
      algo_rating r = ratings[i];
      if (r.status != CUDNN_STATUS_SUCCESS || r.determinism != CUDNN_DETERMINISTIC ||
          r.memory > fits || r.math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION ||
          (fp32 && pass == 0 && r.math != CUDNN_FMA_MATH))
        continue;
      if (fp32) r.math = CUDNN_FMA_MATH;
      return use_algo(ctx, kind, s, &r);
    }
  static const char *const kinds[] = {"forward", "backward-data", "backward-filter"};
  ct_status_set(ctx->status, CT_UNIMPLEMENTED,
                "%s: cuDNN offers no deterministic %s convolution algorithm%s for these shapes "
                "whose workspace fits in the %zu MiB free on the device",
                ctx->node->name, kinds[kind], fp32 ? " in fp32 (FMA) math" : "", fits >> 20);
  return 1;
}

static conv_state *conv_state_make(ct_kernel_ctx *ctx, conv_kind kind, const int64_t *key) {
  const ct_shape *xs = NULL, *fs = NULL, *ys = NULL;
  ct_conv_shapes(ctx, kind, &xs, &fs, &ys);
  const ct_conv2d_attrs *a = &ctx->attrs->conv2d;
  ct_window hw[2];
  ct_conv_windows(xs->dims, fs->dims, a->strides, a->dilations, a->same_padding, hw);
  const ct_window wh = hw[0], ww = hw[1];
  const int64_t extra_h = wh.pad_after - wh.pad_before, extra_w = ww.pad_after - ww.pad_before;
  const int64_t n = xs->dims[0], h = xs->dims[1] + extra_h, w = xs->dims[2] + extra_w;
  const int64_t c = xs->dims[3], r = fs->dims[0], sw = fs->dims[1], k = fs->dims[3];
  const int64_t p = ys->dims[1], q = ys->dims[2];
  const int64_t dims[] = {
      n, h, w, c, r, sw, k, p, q, a->strides[0], a->strides[1], a->dilations[0], a->dilations[1]};
  for (size_t i = 0; i < sizeof dims / sizeof dims[0]; ++i)
    if (dims[i] > INT_MAX) {
      ct_status_set(ctx->status, CT_UNIMPLEMENTED,
                    "%s: cuDNN takes convolution sizes up to %d, got %lld", ctx->node->name,
                    INT_MAX, (long long)dims[i]);
      return NULL;
    }
  conv_state *s = calloc(1, sizeof *s);
  if (s == NULL) {
    ct_status_set(ctx->status, CT_RESOURCE_EXHAUSTED, "out of host memory in %s", ctx->node->name);
    return NULL;
  }
  memcpy(s->key, key, sizeof s->key);
  s->extra_h = extra_h;
  s->extra_w = extra_w;
  s->filter_bytes = (size_t)ct_shape_elements(fs) * sizeof(float);
  s->padded_bytes = extra_h || extra_w ? (size_t)(n * h * w * c) * sizeof(float) : 0;
  const char *what = ctx->node->name;
  ct_status *st = ctx->status;
  const cudnnMathType_t math =
      ct_kernel_gpu(ctx)->precision == CT_PRECISION_FP32 ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH;
  int failed =
      ct_cudnn_check(cudnnCreateTensorDescriptor(&s->x_desc), what, st) ||
      ct_cudnn_check(cudnnCreateTensorDescriptor(&s->y_desc), what, st) ||
      ct_cudnn_check(cudnnCreateFilterDescriptor(&s->w_desc), what, st) ||
      ct_cudnn_check(cudnnCreateConvolutionDescriptor(&s->conv_desc), what, st) ||
      ct_cudnn_check(cudnnSetTensor4dDescriptor(s->x_desc, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT,
                                                (int)n, (int)c, (int)h, (int)w),
                     what, st) ||
      ct_cudnn_check(cudnnSetTensor4dDescriptor(s->y_desc, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT,
                                                (int)n, (int)k, (int)p, (int)q),
                     what, st) ||
      ct_cudnn_check(cudnnSetFilter4dDescriptor(s->w_desc, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC,
                                                (int)k, (int)c, (int)r, (int)sw),
                     what, st) ||
      ct_cudnn_check(cudnnSetConvolution2dDescriptor(
                         s->conv_desc, (int)wh.pad_before, (int)ww.pad_before, (int)a->strides[0],
                         (int)a->strides[1], (int)a->dilations[0], (int)a->dilations[1],
                         CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                     what, st) ||
      ct_cudnn_check(cudnnSetConvolutionMathType(s->conv_desc, math), what, st);
  if (!failed) {
    /* the padding above must give TensorFlow's output size */
    int on, oc, oh, ow;
    failed = ct_cudnn_check(cudnnGetConvolution2dForwardOutputDim(s->conv_desc, s->x_desc,
                                                                  s->w_desc, &on, &oc, &oh, &ow),
                            what, st);
    if (!failed && (on != n || oc != k || oh != p || ow != q)) {
      ct_status_set(st, CT_INTERNAL,
                    "%s: cuDNN's convolution output [%d, %d, %d, %d] differs from [%lld, %lld, "
                    "%lld, %lld]",
                    what, on, oh, ow, oc, (long long)n, (long long)p, (long long)q, (long long)k);
      failed = 1;
    }
  }
  if (failed || choose_algo(ctx, kind, s)) {
    conv_state_free(s);
    return NULL;
  }
  return s;
}

static conv_state *conv_state_get(ct_kernel_ctx *ctx, conv_kind kind) {
  const ct_shape *xs = NULL, *fs = NULL, *ys = NULL;
  ct_conv_shapes(ctx, kind, &xs, &fs, &ys);
  const ct_conv2d_attrs *a = &ctx->attrs->conv2d;
  const int64_t key[12] = {xs->dims[0],   xs->dims[1],     xs->dims[2],
                           xs->dims[3],   fs->dims[0],     fs->dims[1],
                           fs->dims[2],   fs->dims[3],     a->strides[0],
                           a->strides[1], a->same_padding, (int64_t)ct_kernel_gpu(ctx)->precision};
  conv_state *s = ctx->state->data;
  if (s && memcmp(s->key, key, sizeof key) == 0) return s;
  conv_state_free(s);
  s = conv_state_make(ctx, kind, key);
  ctx->state->data = s;
  ctx->state->free_fn = conv_state_free;
  return s;
}

/* What a convolution kernel's run computes with: the state, cuDNN's
 * handle, the scratch blocks and x's sizes. */
typedef struct conv_call {
  const conv_state *s;
  cudnnHandle_t cudnn;
  void *workspace;
  float *filter; /* KRSC */
  float *padded; /* x or dx with its extra rows and columns; NULL when it has none */
  int64_t n, h, w, c, rsc, k;
  cudaStream_t stream;
} conv_call;

/* x with its extra rows and columns of zeros (in c->padded) where it needs
 * them; NULL when the launch failed. */
static const float *padded_input(ct_kernel_ctx *ctx, const conv_call *c, const float *x) {
  if (c->padded == NULL) return x;
  if (ct_kernel_launch_failed(ctx, ct_launch_pad_after(x, c->padded, c->n, c->h, c->w, c->c,
                                                       c->s->extra_h, c->s->extra_w, c->stream)))
    return NULL;
  return c->padded;
}

static void conv_forward(ct_kernel_ctx *ctx, const conv_call *c) {
  const conv_state *s = c->s;
  const float one = 1.0f, zero = 0.0f;
  if (ct_kernel_launch_failed(
          ctx, ct_launch_transpose(ct_in_f32(ctx, 1), c->filter, c->rsc, c->k, c->stream)))
    return;
  const float *x = padded_input(ctx, c, ct_in_f32(ctx, 0));
  float *y = ct_out_f32(ctx, 0);
  if (x == NULL ||
      ct_cudnn_check(cudnnConvolutionForward(c->cudnn, &one, s->x_desc, x, s->w_desc, c->filter,
                                             s->conv_desc, s->fwd_algo, c->workspace,
                                             s->workspace_bytes, &zero, s->y_desc, y),
                     ctx->node->name, ctx->status))
    return;
  const int64_t out_elements = ct_shape_elements(&ctx->outputs[0].shape);
  const ct_binary_layout per_channel = {.kind = CT_OPERANDS_REPEAT_B, .block = c->k};
  if (ctx->n_inputs > 2 &&
      ct_kernel_launch_failed(ctx, ct_launch_binary(CT_BINARY_ADD, y, ct_in_f32(ctx, 2), y,
                                                    out_elements, &per_channel, c->stream)))
    return;
  if (ctx->attrs->conv2d.relu)
    ct_kernel_launch_failed(ctx, ct_launch_unary(CT_UNARY_RELU, y, y, out_elements, c->stream));
}

static void conv_backward_data(ct_kernel_ctx *ctx, const conv_call *c) {
  const conv_state *s = c->s;
  const float one = 1.0f, zero = 0.0f;
  float *dx = c->padded ? c->padded : ct_out_f32(ctx, 0);
  if (ct_kernel_launch_failed(
          ctx, ct_launch_transpose(ct_in_f32(ctx, 0), c->filter, c->rsc, c->k, c->stream)) ||
      ct_cudnn_check(
          cudnnConvolutionBackwardData(c->cudnn, &one, s->w_desc, c->filter, s->y_desc,
                                       ct_in_f32(ctx, 1), s->conv_desc, s->bwd_data_algo,
                                       c->workspace, s->workspace_bytes, &zero, s->x_desc, dx),
          ctx->node->name, ctx->status))
    return;
  if (c->padded)
    ct_kernel_launch_failed(
        ctx, ct_launch_crop_after(c->padded, ct_out_f32(ctx, 0), c->n, c->h, c->w, c->c, s->extra_h,
                                  s->extra_w, c->stream));
}

static void conv_backward_filter(ct_kernel_ctx *ctx, const conv_call *c) {
  const conv_state *s = c->s;
  const float one = 1.0f, zero = 0.0f;
  const float *x = padded_input(ctx, c, ct_in_f32(ctx, 0));
  if (x == NULL || ct_cudnn_check(cudnnConvolutionBackwardFilter(
                                      c->cudnn, &one, s->x_desc, x, s->y_desc, ct_in_f32(ctx, 1),
                                      s->conv_desc, s->bwd_filter_algo, c->workspace,
                                      s->workspace_bytes, &zero, s->w_desc, c->filter),
                                  ctx->node->name, ctx->status))
    return;
  ct_kernel_launch_failed(
      ctx, ct_launch_transpose(c->filter, ct_out_f32(ctx, 0), c->k, c->rsc, c->stream));
}

static void conv_run(ct_kernel_ctx *ctx, conv_kind kind) {
  const ct_shape *xs = NULL, *fs = NULL, *ys = NULL;
  ct_conv_shapes(ctx, kind, &xs, &fs, &ys);
  ct_gpu *gpu = ct_kernel_gpu(ctx);
  const int64_t out_elements = ct_shape_elements(&ctx->outputs[0].shape);
  if (out_elements == 0) return;
  if (ct_shape_elements(xs) == 0 || ct_shape_elements(fs) == 0 || ct_shape_elements(ys) == 0) {
    /* a sum over nothing (no images, input channels or output channels) */
    ct_kernel_launch_failed(
        ctx, cudaMemsetAsync(ctx->outputs[0].data, 0, (size_t)out_elements * sizeof(float),
                             gpu->stream));
    return;
  }
  /* cuDNN is loaded, and the handle made, before its first descriptor */
  cudnnHandle_t cudnn = ct_gpu_cudnn(gpu, ctx->node->name, ctx->status);
  if (cudnn == NULL) return;
  conv_state *s = conv_state_get(ctx, kind);
  if (s == NULL) return;
  const size_t ws_bytes = aligned(s->workspace_bytes), filter_bytes = aligned(s->filter_bytes);
  char *scratch = ct_kernel_scratch(ctx, ws_bytes + filter_bytes + aligned(s->padded_bytes));
  if (scratch == NULL) return;
  const conv_call call = {
      .s = s,
      .cudnn = cudnn,
      .workspace = s->workspace_bytes ? scratch : NULL,
      .filter = (float *)(scratch + ws_bytes),
      .padded = s->padded_bytes ? (float *)(scratch + ws_bytes + filter_bytes) : NULL,
      .n = xs->dims[0],
      .h = xs->dims[1],
      .w = xs->dims[2],
      .c = xs->dims[3],
      .rsc = fs->dims[0] * fs->dims[1] * fs->dims[2],
      .k = fs->dims[3],
      .stream = gpu->stream};
  if (kind == CONV_FORWARD)
    conv_forward(ctx, &call);
  else if (kind == CONV_BACKWARD_DATA)
    conv_backward_data(ctx, &call);
  else
    conv_backward_filter(ctx, &call);
}

void ct_gpu_conv2d(ct_kernel_ctx *ctx) { conv_run(ctx, CONV_FORWARD); }
void ct_gpu_conv2d_backprop_input(ct_kernel_ctx *ctx) { conv_run(ctx, CONV_BACKWARD_DATA); }
void ct_gpu_conv2d_backprop_filter(ct_kernel_ctx *ctx) { conv_run(ctx, CONV_BACKWARD_FILTER); }
