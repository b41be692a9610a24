/* Softmax cross-entropy with integer labels and with a distribution of
 * labels, L2 loss, argmax and accuracy. */
#include <math.h>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/kernel_shapes.h"

static int check_label(ct_kernel_ctx *ctx, int32_t label, int64_t row, int64_t classes) {
  if (label >= 0 && label < classes) return 0;
  ct_status_set(ctx->status, CT_INVALID_ARGUMENT,
                "label %d of example %lld is outside [0, %lld) in '%s'; check the dataset's "
                "labels against the model's number of classes",
                (int)label, (long long)row, (long long)classes, ctx->node->name);
  return 1;
}

/* loss[n] = logsumexp(logits[n]) - logits[n, label]; backprop = softmax - onehot. */
void ct_cpu_sparse_softmax_xent(ct_kernel_ctx *ctx) {
  const int64_t N = ctx->inputs[0].shape.dims[0], C = ctx->inputs[0].shape.dims[1];
  const float *logits = ct_in_f32(ctx, 0);
  const int32_t *labels = ct_tensor_i32(&ctx->inputs[1]);
  float *loss = ct_out_f32(ctx, 0), *backprop = ct_out_f32(ctx, 1);
  for (int64_t n = 0; n < N; ++n)
    if (check_label(ctx, labels[n], n, C)) return;
  for (int64_t n = 0; n < N; ++n) {
    const float *z = logits + n * C;
    float *p = backprop + n * C;
    float max = z[0];
    for (int64_t c = 1; c < C; ++c) max = z[c] > max ? z[c] : max;
    float sum = 0.0f;
    for (int64_t c = 0; c < C; ++c) {
      p[c] = expf(z[c] - max);
      sum += p[c];
    }
    const float inv = 1.0f / sum;
    for (int64_t c = 0; c < C; ++c) p[c] *= inv;
    loss[n] = logf(sum) + max - z[labels[n]];
    p[labels[n]] -= 1.0f;
  }
}

/* loss[n] = sum over c of labels * (logsumexp(logits[n]) - logits[n, c]);
 * backprop = softmax - labels. */
void ct_cpu_softmax_xent(ct_kernel_ctx *ctx) {
  const int64_t N = ctx->inputs[0].shape.dims[0], C = ctx->inputs[0].shape.dims[1];
  const float *logits = ct_in_f32(ctx, 0), *labels = ct_in_f32(ctx, 1);
  float *loss = ct_out_f32(ctx, 0), *backprop = ct_out_f32(ctx, 1);
  for (int64_t n = 0; n < N; ++n) {
    const float *z = logits + n * C, *y = labels + n * C;
    float *p = backprop + n * C;
    float max = C ? z[0] : 0.0f;
    for (int64_t c = 1; c < C; ++c) max = z[c] > max ? z[c] : max;
    float sum = 0.0f;
    for (int64_t c = 0; c < C; ++c) {
      p[c] = expf(z[c] - max);
      sum += p[c];
    }
    const float inv = 1.0f / sum, log_sum = logf(sum) + max;
    float l = 0.0f;
    for (int64_t c = 0; c < C; ++c) {
      l += y[c] * (log_sum - z[c]);
      p[c] = p[c] * inv - y[c];
    }
    loss[n] = l;
  }
}

/* sum(x^2) / 2, summed in double in index order. */
void ct_cpu_l2_loss(ct_kernel_ctx *ctx) {
  const float *x = ct_in_f32(ctx, 0);
  const int64_t n = ct_in_elements(ctx, 0);
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += (double)x[i] * (double)x[i];
  ct_out_f32(ctx, 0)[0] = (float)(0.5 * sum);
}

/* The index of the first largest of z[0], z[stride], ... z[(C - 1) stride]
 * (a NaN at 0 stays; a NaN after never wins). */
static int64_t strided_argmax(const float *z, int64_t C, int64_t stride) {
  int64_t best = 0;
  for (int64_t c = 1; c < C; ++c)
    if (z[c * stride] > z[best * stride]) best = c;
  return best;
}

/* x viewed as [outer, C, inner] around the axis: out[o, i] is the argmax of
 * x[o, :, i]. */
void ct_cpu_argmax(ct_kernel_ctx *ctx) {
  const ct_shape *s = &ctx->inputs[0].shape;
  const int axis = ct_kernel_axis(ctx, s->rank);
  const int64_t outer = ct_outer_count(s, axis), C = s->dims[axis], inner = ct_inner_count(s, axis);
  const float *x = ct_in_f32(ctx, 0);
  int32_t *out = ct_tensor_i32(&ctx->outputs[0]);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i)
      out[o * inner + i] = (int32_t)strided_argmax(x + o * C * inner + i, C, inner);
}

void ct_cpu_accuracy(ct_kernel_ctx *ctx) {
  const int64_t N = ctx->inputs[0].shape.dims[0], C = ctx->inputs[0].shape.dims[1];
  const int32_t *labels = ct_tensor_i32(&ctx->inputs[1]);
  int64_t correct = 0;
  for (int64_t n = 0; n < N; ++n) correct += strided_argmax(ct_in_f32(ctx, 0) + n * C, C, 1) == labels[n];
  ct_out_f32(ctx, 0)[0] = N ? (float)correct / (float)N : 0.0f;
}
