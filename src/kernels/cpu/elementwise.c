/* Elementwise kernels. Binary ops broadcast as NumPy: equal shapes, a scalar
 * operand and a trailing-dims operand (a bias) have fast paths; anything
 * else goes through strided indexing over up to CT_MAX_RANK dims. The binary
 * math ops (ops/binary_math.h) are these loops over their rows' forward
 * expressions, and BinaryMathGrad their partials. */
#include <math.h>
#include <string.h>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/lanes.h"
#include "kernels/kernel_shapes.h"

/* Offsets of element `index` of `out` in inputs a and b. */
static void offsets_of(int64_t index, const ct_shape *out, const int64_t *sa, const int64_t *sb,
                       int64_t *oa, int64_t *ob) {
  int64_t a = 0, b = 0;
  for (int d = out->rank - 1; d >= 0; --d) {
    int64_t coord = index % out->dims[d];
    index /= out->dims[d];
    a += coord * sa[d];
    b += coord * sb[d];
  }
  *oa = a;
  *ob = b;
}

/* Whether `small` is `big` (of the same rank) with one run of adjacent
 * axes set to 1, as a reduction over those axes keeps it (Mean over the
 * height and width of NHWC images: [N, 1, 1, C] of [N, H, W, C]); then big
 * is [*outer, *middle, *inner] with small [*outer, 1, *inner]. */
static int middle_block(const ct_shape *small, const ct_shape *big, int64_t *outer,
                        int64_t *middle, int64_t *inner) {
  if (small->rank != big->rank) return 0;
  int first = -1, last = -1;
  for (int d = 0; d < big->rank; ++d) {
    if (small->dims[d] == big->dims[d]) continue;
    if (small->dims[d] != 1 || (first >= 0 && last != d - 1)) return 0;
    if (first < 0) first = d;
    last = d;
  }
  if (first < 0) return 0;
  *outer = *middle = *inner = 1;
  for (int d = 0; d < big->rank; ++d)
    *(d < first ? outer : d <= last ? middle : inner) *= big->dims[d];
  return 1;
}

#define BINARY_KERNEL(fn_name, EXPR)                                                     \
  void fn_name(ct_kernel_ctx *ctx) {                                                     \
    const ct_shape *out = &ctx->outputs[0].shape;                                        \
    const float *A = ct_in_f32(ctx, 0), *B = ct_in_f32(ctx, 1);                          \
    float *Y = ct_out_f32(ctx, 0);                                                       \
    const int64_t n = ct_shape_elements(out);                                            \
    int64_t block_a = 0, block_b = 0;                                                    \
    broadcast_kind ka = ct_broadcast_kind_of(&ctx->inputs[0].shape, out, &block_a);                   \
    broadcast_kind kb = ct_broadcast_kind_of(&ctx->inputs[1].shape, out, &block_b);                   \
    const int threads = ctx->threads;                                                    \
    int64_t outer, middle, inner;                                                        \
    if (ka == SAME && kb == SAME) {                                                      \
      _Pragma("omp parallel for num_threads(threads) if(n > CT_PARALLEL_GRAIN)")         \
      for (int64_t i = 0; i < n; ++i) {                                                  \
        float a = A[i], b = B[i];                                                        \
        Y[i] = (EXPR);                                                                   \
      }                                                                                  \
    } else if (ka == SAME && (kb == SCALAR || kb == TRAILING)) {                         \
      const int64_t m = kb == SCALAR ? 1 : block_b;                                      \
      _Pragma("omp parallel for num_threads(threads) if(n > CT_PARALLEL_GRAIN)")         \
      for (int64_t r = 0; r < n / m; ++r)                                                \
        for (int64_t j = 0; j < m; ++j) {                                                \
          float a = A[r * m + j], b = B[j];                                              \
          Y[r * m + j] = (EXPR);                                                         \
        }                                                                                \
    } else if (kb == SAME && (ka == SCALAR || ka == TRAILING)) {                         \
      const int64_t m = ka == SCALAR ? 1 : block_a;                                      \
      _Pragma("omp parallel for num_threads(threads) if(n > CT_PARALLEL_GRAIN)")         \
      for (int64_t r = 0; r < n / m; ++r)                                                \
        for (int64_t j = 0; j < m; ++j) {                                                \
          float a = A[j], b = B[r * m + j];                                              \
          Y[r * m + j] = (EXPR);                                                         \
        }                                                                                \
    } else if ((ka == SAME) != (kb == SAME) &&                                           \
               middle_block(&ctx->inputs[ka == SAME].shape, out, &outer, &middle, &inner)) { \
      /* one operand repeats along middle dims ([rows, 1] against [rows, m]) */          \
      const int a_small = kb == SAME;                                                    \
      _Pragma("omp parallel for num_threads(threads) if(n > CT_PARALLEL_GRAIN)")         \
      for (int64_t o = 0; o < outer; ++o)                                                \
        for (int64_t r = 0; r < middle; ++r)                                             \
          for (int64_t i = 0; i < inner; ++i) {                                          \
            const int64_t big = (o * middle + r) * inner + i, small = o * inner + i;     \
            float a = A[a_small ? small : big], b = B[a_small ? big : small];            \
            Y[big] = (EXPR);                                                             \
          }                                                                              \
    } else {                                                                             \
      int64_t sa[CT_MAX_RANK], sb[CT_MAX_RANK];                                          \
      ct_broadcast_strides(&ctx->inputs[0].shape, out, sa);                                 \
      ct_broadcast_strides(&ctx->inputs[1].shape, out, sb);                                 \
      _Pragma("omp parallel for num_threads(threads) if(n > CT_PARALLEL_GRAIN)")         \
      for (int64_t i = 0; i < n; ++i) {                                                  \
        int64_t oa, ob;                                                                  \
        offsets_of(i, out, sa, sb, &oa, &ob);                                            \
        float a = A[oa], b = B[ob];                                                      \
        Y[i] = (EXPR);                                                                   \
      }                                                                                  \
    }                                                                                    \
  }

BINARY_KERNEL(ct_cpu_add, a + b)
BINARY_KERNEL(ct_cpu_sub, a - b)
BINARY_KERNEL(ct_cpu_mul, a * b)
BINARY_KERNEL(ct_cpu_div, a / b)
/* ReluGrad(dy, y), SigmoidGrad(y, dy), TanhGrad(y, dy): same shapes. */
BINARY_KERNEL(ct_cpu_relu_grad, b > 0.0f ? a : 0.0f)
BINARY_KERNEL(ct_cpu_sigmoid_grad, b * a * (1.0f - a))
BINARY_KERNEL(ct_cpu_tanh_grad, b * (1.0f - a * a))

#define BINARY_MATH_KERNEL(P, Name, function, forward, da, db, flops, domain) \
  BINARY_KERNEL(ct_cpu_##Name, forward)
CT_BINARY_MATH(BINARY_MATH_KERNEL, _)
#undef BINARY_MATH_KERNEL

/* The loop of one row's partial (PARTIAL: its da or db) over dy's n
 * elements: a and b broadcast to dy's shape, through strides unless both
 * have it. */
#define PARTIAL_LOOP(fn_name, PARTIAL)                                                   \
  static void fn_name(ct_kernel_ctx *ctx) {                                              \
    const ct_shape *out = &ctx->outputs[0].shape;                                        \
    const float *A = ct_in_f32(ctx, 0), *B = ct_in_f32(ctx, 1), *DY = ct_in_f32(ctx, 2); \
    float *DX = ct_out_f32(ctx, 0);                                                      \
    const int64_t n = ct_shape_elements(out);                                            \
    const int threads = ctx->threads;                                                    \
    if (ct_shape_equal(&ctx->inputs[0].shape, out) &&                                    \
        ct_shape_equal(&ctx->inputs[1].shape, out)) {                                    \
      _Pragma("omp parallel for num_threads(threads) if(n > CT_PARALLEL_GRAIN)")         \
      for (int64_t i = 0; i < n; ++i) {                                                  \
        const float a = A[i], b = B[i], dy = DY[i];                                      \
        DX[i] = (PARTIAL);                                                               \
      }                                                                                  \
      return;                                                                            \
    }                                                                                    \
    int64_t sa[CT_MAX_RANK], sb[CT_MAX_RANK];                                            \
    ct_broadcast_strides(&ctx->inputs[0].shape, out, sa);                                \
    ct_broadcast_strides(&ctx->inputs[1].shape, out, sb);                                \
    _Pragma("omp parallel for num_threads(threads) if(n > CT_PARALLEL_GRAIN)")           \
    for (int64_t i = 0; i < n; ++i) {                                                    \
      int64_t oa, ob;                                                                    \
      offsets_of(i, out, sa, sb, &oa, &ob);                                              \
      const float a = A[oa], b = B[ob], dy = DY[i];                                      \
      DX[i] = (PARTIAL);                                                                 \
    }                                                                                    \
  }
#define PARTIALS(P, Name, function, forward, da, db, flops, domain) \
  PARTIAL_LOOP(partial_a_##Name, da) PARTIAL_LOOP(partial_b_##Name, db)
CT_BINARY_MATH(PARTIALS, _)
#undef PARTIALS

#define PARTIALS_OF(P, Name, function, forward, da, db, flops, domain) \
  {partial_a_##Name, partial_b_##Name},
static void (*const partial_loops[][2])(ct_kernel_ctx *ctx) = {CT_BINARY_MATH(PARTIALS_OF, _)};
#undef PARTIALS_OF

/* BinaryMathGrad(a, b, dy) of row attrs.binary_math.op, input
 * attrs.binary_math.side: the partial over dy's shape. */
void ct_cpu_binary_math_grad(ct_kernel_ctx *ctx) {
  const int op = ctx->attrs->binary_math.op, side = ctx->attrs->binary_math.side;
  if (op < 0 || op >= CT_BINARY_MATH_COUNT || (side != 0 && side != 1)) {
    ct_status_set(ctx->status, CT_INTERNAL, "BinaryMathGrad of no binary math op (%d, %d)", op,
                  side);
    return;
  }
  partial_loops[op][side](ctx);
}

#define UNARY_KERNEL(fn_name, EXPR)                                               \
  void fn_name(ct_kernel_ctx *ctx) {                                              \
    const float *X = ct_in_f32(ctx, 0);                                           \
    float *Y = ct_out_f32(ctx, 0);                                                \
    const int64_t n = ct_in_elements(ctx, 0);                                     \
    const int threads = ctx->threads;                                             \
    _Pragma("omp parallel for num_threads(threads) if(n > CT_PARALLEL_GRAIN)")    \
    for (int64_t i = 0; i < n; ++i) {                                             \
      float x = X[i];                                                             \
      Y[i] = (EXPR);                                                              \
    }                                                                             \
  }

UNARY_KERNEL(ct_cpu_neg, -x)
UNARY_KERNEL(ct_cpu_relu, x > 0.0f ? x : 0.0f)
UNARY_KERNEL(ct_cpu_sigmoid, 1.0f / (1.0f + expf(-x)))
UNARY_KERNEL(ct_cpu_tanh, tanhf(x))

/* Y = in[0] + in[1] + ... in that order, a block of elements at a time:
 * the first two inputs added, then each further one into Y while the block
 * is in cache (an inner loop over the inputs at each element did not
 * vectorize). */
void ct_cpu_add_n(ct_kernel_ctx *ctx) {
  enum { BLOCK = 4096 };
  float *Y = ct_out_f32(ctx, 0);
  const int64_t n = ct_shape_elements(&ctx->outputs[0].shape);
  const int threads = ctx->threads, k = ctx->n_inputs;
  const ct_tensor *in = ctx->inputs;
  const int64_t blocks = (n + BLOCK - 1) / BLOCK;
#pragma omp parallel for num_threads(threads) if (n > CT_PARALLEL_GRAIN)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t i0 = b * BLOCK, m = n - i0 < BLOCK ? n - i0 : BLOCK;
    float *y = Y + i0;
    const float *a = (const float *)in[0].data + i0;
    if (k == 1) {
      for (int64_t i = 0; i < m; ++i) y[i] = a[i];
      continue;
    }
    const float *a1 = (const float *)in[1].data + i0;
    for (int64_t i = 0; i < m; ++i) y[i] = a[i] + a1[i];
    for (int j = 2; j < k; ++j) {
      const float *aj = (const float *)in[j].data + i0;
      for (int64_t i = 0; i < m; ++i) y[i] += aj[i];
    }
  }
}

void ct_cpu_broadcast_to(ct_kernel_ctx *ctx, const float *X, const ct_shape *in, float *Y,
                         const ct_shape *out, float scale) {
  const int64_t n = ct_shape_elements(out);
  const int threads = ctx->threads;
  int64_t outer, middle, inner;
  if (middle_block(in, out, &outer, &middle, &inner)) {
#pragma omp parallel for num_threads(threads) if (n > CT_PARALLEL_GRAIN)
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t r = 0; r < middle; ++r) {
        float *y = Y + (o * middle + r) * inner;
        const float *x = X + o * inner;
        for (int64_t i = 0; i < inner; ++i) y[i] = x[i] * scale;
      }
    return;
  }
  int64_t sx[CT_MAX_RANK], none[CT_MAX_RANK] = {0};
  ct_broadcast_strides(in, out, sx);
#pragma omp parallel for num_threads(threads) if (n > CT_PARALLEL_GRAIN)
  for (int64_t i = 0; i < n; ++i) {
    int64_t ox, unused;
    offsets_of(i, out, sx, none, &ox, &unused);
    Y[i] = X[ox] * scale;
  }
}

void ct_cpu_broadcast_like(ct_kernel_ctx *ctx) {
  ct_cpu_broadcast_to(ctx, ct_in_f32(ctx, 0), &ctx->inputs[0].shape, ct_out_f32(ctx, 0),
                      &ctx->outputs[0].shape, 1.0f);
}

/* Adds rows [r0, r1) of x (rows of m floats) to the `vectors` vectors of
 * sums from column j of p, in registers, each column in row order. */
static inline __attribute__((always_inline)) void add_rows_block(const float *x, int64_t m,
                                                                 int64_t r0, int64_t r1, int64_t j,
                                                                 int vectors, float *p) {
  lanes sum[4], row;
  memcpy(sum, p + j, (size_t)vectors * sizeof sum[0]);
  for (int64_t r = r0; r < r1; ++r)
    for (int v = 0; v < vectors; ++v) {
      memcpy(&row, x + r * m + j + v * LANES, sizeof row);
      sum[v] += row;
    }
  memcpy(p + j, sum, (size_t)vectors * sizeof sum[0]);
}

/* p[j] += the sum of column j over rows [r0, r1) of x (rows of m floats),
 * in row order: blocks of up to 4 vectors of columns held in registers
 * across the rows (through memory, each row's sums waited on the last
 * row's stores: fmnist_cnn's first bias gradient ran at 24 GB/s). */
static void add_rows(const float *x, int64_t m, int64_t r0, int64_t r1, float *p) {
  int64_t j = 0;
  for (; j + LANES <= m; j += 4 * LANES) {
    const int64_t left = (m - j) / LANES;
    switch (left >= 4 ? 4 : left) {
      case 4:
        add_rows_block(x, m, r0, r1, j, 4, p);
        break;
      case 3:
        add_rows_block(x, m, r0, r1, j, 3, p);
        break;
      case 2:
        add_rows_block(x, m, r0, r1, j, 2, p);
        break;
      default:
        add_rows_block(x, m, r0, r1, j, 1, p);
        break;
    }
  }
  for (j = m / LANES * LANES; j < m; ++j) {
    float sum = p[j];
    for (int64_t r = r0; r < r1; ++r) sum += x[r * m + j];
    p[j] = sum;
  }
}

enum { CHUNKS = 16 }; /* ct_cpu_sum_to's partial sums */

/* The trailing case (a bias gradient, [rows, m] -> [m]) splits rows into
 * fixed chunks whose partial sums are added in chunk order, so results do
 * not depend on the thread count. */
void ct_cpu_sum_to(ct_kernel_ctx *ctx, const float *X, const ct_shape *in, float *Y,
                   const ct_shape *out) {
  const int64_t n_in = ct_shape_elements(in), n_out = ct_shape_elements(out);
  int64_t block = 0;
  broadcast_kind kind = ct_broadcast_kind_of(out, in, &block);
  if (kind == SAME) {
    memcpy(Y, X, (size_t)n_out * sizeof *Y);
    return;
  }
  if (kind == TRAILING || kind == SCALAR) {
    const int64_t m = kind == SCALAR ? 1 : block, rows = n_in / m;
    float *partial = ct_kernel_scratch(ctx, (size_t)CHUNKS * (size_t)m * sizeof *partial);
    if (partial == NULL) return;
    const int threads = ctx->threads;
#pragma omp parallel for num_threads(threads) if (n_in > CT_PARALLEL_GRAIN)
    for (int c = 0; c < CHUNKS; ++c) {
      float *p = partial + (int64_t)c * m;
      for (int64_t j = 0; j < m; ++j) p[j] = 0.0f;
      add_rows(X, m, rows * c / CHUNKS, rows * (c + 1) / CHUNKS, p);
    }
    for (int64_t j = 0; j < m; ++j) {
      float sum = 0.0f;
      for (int c = 0; c < CHUNKS; ++c) sum += partial[(int64_t)c * m + j];
      Y[j] = sum;
    }
    return;
  }
  /* each output summed in input order, as the general loop below does */
  int64_t outer, middle, inner;
  if (middle_block(out, in, &outer, &middle, &inner) && outer > 1) {
    const int threads = ctx->threads;
#pragma omp parallel for num_threads(threads) if (n_in > CT_PARALLEL_GRAIN)
    for (int64_t o = 0; o < outer; ++o) {
      float *y = Y + o * inner;
      const float *x = X + o * middle * inner;
      for (int64_t i = 0; i < inner; ++i) y[i] = x[i];
      for (int64_t r = 1; r < middle; ++r)
        for (int64_t i = 0; i < inner; ++i) y[i] += x[r * inner + i];
    }
    return;
  }
  int64_t sy[CT_MAX_RANK], none[CT_MAX_RANK] = {0};
  ct_broadcast_strides(out, in, sy);
  memset(Y, 0, (size_t)n_out * sizeof *Y);
  for (int64_t i = 0; i < n_in; ++i) {
    int64_t oy, unused;
    offsets_of(i, in, sy, none, &oy, &unused);
    Y[oy] += X[i];
  }
}

void ct_cpu_sum_like(ct_kernel_ctx *ctx) {
  ct_cpu_sum_to(ctx, ct_in_f32(ctx, 0), &ctx->inputs[0].shape, ct_out_f32(ctx, 0),
                &ctx->outputs[0].shape);
}

/* A bias gradient's partial sums of each chunk of rows. */
CT_CPU_SCRATCH(ct_cpu_sum_like_scratch) {
  (void)device, (void)attrs, (void)n_inputs;
  const int64_t n_in = ct_shape_elements(&in[0]), n_out = ct_shape_elements(&out[0]);
  const size_t out_floats = n_out > 0 ? (size_t)n_out : 0;
  if (out_floats >= (n_in > 0 ? (size_t)n_in : 0)) return 0;
  bytes[0] = CHUNKS * out_floats * sizeof(float);
  return 1;
}
