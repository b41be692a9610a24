/* GPU elementwise kernels. Binary ops broadcast as the CPU kernels do
 * (elementwise.c), with the same cases: equal shapes, a scalar or
 * trailing-dims operand (a bias), and anything else through strided maps of
 * up to CT_MAX_RANK dims. Also the broadcasts and sums between shapes, AddN
 * and dropout. */
#include <assert.h>
#include <string.h>

#include "kernels/cuda/basic_kernels.h"
#include "kernels/cuda/launch_basic.h"
#include "kernels/kernel_shapes.h"

static_assert((int)CT_LAUNCH_MAX_RANK == (int)CT_MAX_RANK, "launch_basic.h's rank limit");

static void contiguous_strides(const ct_shape *s, int64_t *strides) {
  int64_t stride = 1;
  for (int d = s->rank - 1; d >= 0; --d) {
    strides[d] = stride;
    stride *= s->dims[d];
  }
}

/* Maps over the `rank` axes `dims`, one per stride set (strides[s][d]).
 * Axes of size 1 go, and an axis joins the one before it when every set
 * walks the two as one (outer stride = inner stride * inner dim), so that
 * the kernels divide less; the offsets stay the same. At least one axis
 * remains. */
static void make_maps(int rank, const int64_t *dims, int n_sets, int64_t (*strides)[CT_MAX_RANK],
                      ct_strided *maps) {
  memset(maps, 0, (size_t)n_sets * sizeof *maps);
  int kept = 0;
  for (int d = 0; d < rank; ++d) {
    if (dims[d] == 1) continue;
    int join = kept > 0;
    for (int s = 0; join && s < n_sets; ++s)
      join = maps[s].strides[kept - 1] == strides[s][d] * dims[d];
    if (join) {
      for (int s = 0; s < n_sets; ++s) {
        maps[s].dims[kept - 1] *= dims[d];
        maps[s].strides[kept - 1] = strides[s][d];
      }
    } else {
      for (int s = 0; s < n_sets; ++s) {
        maps[s].dims[kept] = dims[d];
        maps[s].strides[kept] = strides[s][d];
      }
      ++kept;
    }
  }
  if (kept == 0) {
    for (int s = 0; s < n_sets; ++s) maps[s].dims[0] = 1;
    kept = 1;
  }
  for (int s = 0; s < n_sets; ++s) maps[s].rank = kept;
}

static void binary(ct_kernel_ctx *ctx, ct_binary_op op) {
  const ct_shape *out = &ctx->outputs[0].shape, *a = &ctx->inputs[0].shape;
  const ct_shape *b = &ctx->inputs[1].shape;
  const int64_t n = ct_shape_elements(out);
  if (n == 0) return;
  int64_t block_a = 0, block_b = 0;
  broadcast_kind ka = ct_broadcast_kind_of(a, out, &block_a);
  broadcast_kind kb = ct_broadcast_kind_of(b, out, &block_b);
  ct_binary_layout layout;
  memset(&layout, 0, sizeof layout);
  if (ka == SAME && kb == SAME) {
    layout.kind = CT_OPERANDS_SAME;
  } else if (ka == SAME && (kb == SCALAR || kb == TRAILING)) {
    layout.kind = CT_OPERANDS_REPEAT_B;
    layout.block = kb == SCALAR ? 1 : block_b;
  } else if (kb == SAME && (ka == SCALAR || ka == TRAILING)) {
    layout.kind = CT_OPERANDS_REPEAT_A;
    layout.block = ka == SCALAR ? 1 : block_a;
  } else {
    layout.kind = CT_OPERANDS_STRIDED;
    int64_t strides[2][CT_MAX_RANK];
    ct_broadcast_strides(a, out, strides[0]);
    ct_broadcast_strides(b, out, strides[1]);
    ct_strided maps[2];
    make_maps(out->rank, out->dims, 2, strides, maps);
    layout.a_map = maps[0];
    layout.b_map = maps[1];
  }
  cudaError_t err = ct_launch_binary(op, ct_in_f32(ctx, 0), ct_in_f32(ctx, 1), ct_out_f32(ctx, 0),
                                     n, &layout, ct_kernel_gpu(ctx)->stream);
  ct_kernel_launch_failed(ctx, err);
}

void ct_gpu_add(ct_kernel_ctx *ctx) { binary(ctx, CT_BINARY_ADD); }
void ct_gpu_sub(ct_kernel_ctx *ctx) { binary(ctx, CT_BINARY_SUB); }
void ct_gpu_mul(ct_kernel_ctx *ctx) { binary(ctx, CT_BINARY_MUL); }
void ct_gpu_div(ct_kernel_ctx *ctx) { binary(ctx, CT_BINARY_DIV); }
/* ReluGrad(dy, y), SigmoidGrad(y, dy), TanhGrad(y, dy). */
void ct_gpu_relu_grad(ct_kernel_ctx *ctx) { binary(ctx, CT_BINARY_RELU_GRAD); }
void ct_gpu_sigmoid_grad(ct_kernel_ctx *ctx) { binary(ctx, CT_BINARY_SIGMOID_GRAD); }
void ct_gpu_tanh_grad(ct_kernel_ctx *ctx) { binary(ctx, CT_BINARY_TANH_GRAD); }

/* The binary math ops (ops/binary_math.h): Add's layouts over each row's
 * forward expression. */
#define BINARY_MATH_KERNEL(P, Name, function, forward, da, db, flops, domain) \
  void ct_gpu_##Name(ct_kernel_ctx *ctx) { binary(ctx, CT_BINARY_##Name); }
CT_BINARY_MATH(BINARY_MATH_KERNEL, _)
#undef BINARY_MATH_KERNEL

/* BinaryMathGrad(a, b, dy) of row attrs.binary_math.op, input
 * attrs.binary_math.side: the partial over dy's shape, a and b read through
 * strided maps unless both have it. */
void ct_gpu_binary_math_grad(ct_kernel_ctx *ctx) {
  const int op = ctx->attrs->binary_math.op, side = ctx->attrs->binary_math.side;
  if (op < 0 || op >= CT_BINARY_MATH_COUNT || (side != 0 && side != 1)) {
    ct_status_set(ctx->status, CT_INTERNAL, "BinaryMathGrad of no binary math op (%d, %d)", op,
                  side);
    return;
  }
  const ct_shape *out = &ctx->outputs[0].shape, *a = &ctx->inputs[0].shape;
  const ct_shape *b = &ctx->inputs[1].shape;
  const int64_t n = ct_shape_elements(out);
  if (n == 0) return;
  const int strided = !ct_shape_equal(a, out) || !ct_shape_equal(b, out);
  ct_strided maps[2];
  memset(maps, 0, sizeof maps);
  if (strided) {
    int64_t strides[2][CT_MAX_RANK];
    ct_broadcast_strides(a, out, strides[0]);
    ct_broadcast_strides(b, out, strides[1]);
    make_maps(out->rank, out->dims, 2, strides, maps);
  }
  cudaError_t err = ct_launch_binary_math_grad(op, side, ct_in_f32(ctx, 0), ct_in_f32(ctx, 1),
                                               ct_in_f32(ctx, 2), ct_out_f32(ctx, 0), n, strided,
                                               &maps[0], &maps[1], ct_kernel_gpu(ctx)->stream);
  ct_kernel_launch_failed(ctx, err);
}

static void unary(ct_kernel_ctx *ctx, ct_unary_op op) {
  const int64_t n = ct_in_elements(ctx, 0);
  if (n == 0) return;
  cudaError_t err =
      ct_launch_unary(op, ct_in_f32(ctx, 0), ct_out_f32(ctx, 0), n, ct_kernel_gpu(ctx)->stream);
  ct_kernel_launch_failed(ctx, err);
}

void ct_gpu_neg(ct_kernel_ctx *ctx) { unary(ctx, CT_UNARY_NEG); }
void ct_gpu_relu(ct_kernel_ctx *ctx) { unary(ctx, CT_UNARY_RELU); }
void ct_gpu_sigmoid(ct_kernel_ctx *ctx) { unary(ctx, CT_UNARY_SIGMOID); }
void ct_gpu_tanh(ct_kernel_ctx *ctx) { unary(ctx, CT_UNARY_TANH); }

/* Inputs in order, up to CT_LAUNCH_ADD_N_MAX a launch; a later launch
 * starts from the running sum in Y, so the additions keep the CPU's order. */
void ct_gpu_add_n(ct_kernel_ctx *ctx) {
  float *Y = ct_out_f32(ctx, 0);
  const int64_t n = ct_shape_elements(&ctx->outputs[0].shape);
  if (n == 0) return;
  const float *x[CT_LAUNCH_ADD_N_MAX];
  int done = 0;
  while (done < ctx->n_inputs) {
    int k = 0;
    if (done > 0) x[k++] = Y;
    while (k < CT_LAUNCH_ADD_N_MAX && done < ctx->n_inputs) x[k++] = ct_in_f32(ctx, done++);
    if (ct_kernel_launch_failed(ctx, ct_launch_add_n(x, k, Y, n, ct_kernel_gpu(ctx)->stream)))
      return;
  }
}

void ct_gpu_broadcast_to(ct_kernel_ctx *ctx, const float *X, const ct_shape *in, float *Y,
                         const ct_shape *out, float scale) {
  const int64_t n = ct_shape_elements(out);
  if (n == 0) return;
  int64_t strides[1][CT_MAX_RANK];
  ct_broadcast_strides(in, out, strides[0]);
  ct_strided map;
  make_maps(out->rank, out->dims, 1, strides, &map);
  cudaError_t err = ct_launch_broadcast(X, Y, n, &map, scale, ct_kernel_gpu(ctx)->stream);
  ct_kernel_launch_failed(ctx, err);
}

void ct_gpu_broadcast_like(ct_kernel_ctx *ctx) {
  ct_gpu_broadcast_to(ctx, ct_in_f32(ctx, 0), &ctx->inputs[0].shape, ct_out_f32(ctx, 0),
                      &ctx->outputs[0].shape, 1.0f);
}

/* As the CPU: equal sizes copy; else output element Y[offset] sums the X
 * elements that broadcasting maps to it. The axes of X split into kept ones
 * (giving the output element) and reduced ones (summed over). Output
 * elements no X element maps to (only for shapes that do not broadcast
 * back) stay 0. */
void ct_gpu_sum_to(ct_kernel_ctx *ctx, const float *X, const ct_shape *in, float *Y,
                   const ct_shape *out, float scale) {
  const int64_t n_in = ct_shape_elements(in), n_out = ct_shape_elements(out);
  if (n_out == 0) return;
  cudaStream_t stream = ct_kernel_gpu(ctx)->stream;
  if (n_in == n_out && scale == 1.0f) {
    ct_kernel_launch_failed(ctx, ct_launch_copy_bytes(Y, X, (size_t)n_out * sizeof *Y, stream));
    return;
  }
  int64_t x_strides[CT_MAX_RANK], y_strides[CT_MAX_RANK];
  contiguous_strides(in, x_strides);
  ct_broadcast_strides(out, in, y_strides);
  int kept_rank = 0, reduced_rank = 0;
  int64_t kept_dims[CT_MAX_RANK], kept_strides[2][CT_MAX_RANK];
  int64_t reduced_dims[CT_MAX_RANK], reduced_strides[1][CT_MAX_RANK];
  ct_reduce_map map;
  map.m = map.k = 1;
  for (int d = 0; d < in->rank; ++d) {
    if (y_strides[d] != 0) {
      kept_dims[kept_rank] = in->dims[d];
      kept_strides[0][kept_rank] = x_strides[d];
      kept_strides[1][kept_rank++] = y_strides[d];
      map.m *= in->dims[d];
    } else {
      reduced_dims[reduced_rank] = in->dims[d];
      reduced_strides[0][reduced_rank++] = x_strides[d];
      map.k *= in->dims[d];
    }
  }
  if (n_in == 0 || map.m < n_out) {
    cudaError_t err = ct_launch_zero_bytes(Y, (size_t)n_out * sizeof *Y, stream);
    if (ct_kernel_launch_failed(ctx, err) || n_in == 0) return;
  }
  ct_strided kept[2];
  make_maps(kept_rank, kept_dims, 2, kept_strides, kept);
  map.kept_x = kept[0];
  map.kept_y = kept[1];
  make_maps(reduced_rank, reduced_dims, 1, reduced_strides, &map.reduced);
  float *scratch = NULL;
  const int64_t scratch_floats = ct_reduce_scratch_floats(&map);
  if (scratch_floats > 0) {
    scratch = ct_kernel_scratch(ctx, (size_t)scratch_floats * sizeof *scratch);
    if (scratch == NULL) return;
  }
  ct_kernel_launch_failed(ctx, ct_launch_reduce(X, Y, &map, scale, scratch, stream));
}

void ct_gpu_sum_like(ct_kernel_ctx *ctx) {
  ct_gpu_sum_to(ctx, ct_in_f32(ctx, 0), &ctx->inputs[0].shape, ct_out_f32(ctx, 0),
                &ctx->outputs[0].shape, 1.0f);
}

/* Inverted dropout with the CPU kernel's mask (dropout.c): the gradient
 * recomputes the same mask from (stream, step, global index); the first
 * example's index and a rate input are read on the GPU. */
static void dropout(ct_kernel_ctx *ctx) {
  const int64_t n = ct_in_elements(ctx, 0);
  if (n == 0) return;
  const ct_tensor *first = ct_dropout_first_example(ctx);
  const int rate_input = ctx->attrs->dropout.rate_input;
  cudaError_t err = ct_launch_dropout(
      ct_in_f32(ctx, 0), ct_out_f32(ctx, 0), n, ctx->attrs->dropout.stream, ctx->step,
      first ? (const int64_t *)first->data : NULL, ct_example_elements(ctx),
      rate_input ? (const float *)ctx->inputs[rate_input].data : NULL, ctx->attrs->dropout.rate,
      ct_kernel_gpu(ctx)->stream);
  ct_kernel_launch_failed(ctx, err);
}

void ct_gpu_dropout(ct_kernel_ctx *ctx) { dropout(ctx); }
void ct_gpu_dropout_grad(ct_kernel_ctx *ctx) { dropout(ctx); }
