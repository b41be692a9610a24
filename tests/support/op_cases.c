/* The shared op cases (op_cases.h). */
#include "op_cases.h"

#include "ops/binary_math.h"
#include "ops/compare.h"
#include "ops/unary_math.h"

#include <math.h>
#include <stdio.h>

static ct_output b_add(ct_graph *g, const ct_output *x) { return ct_add(g, x[0], x[1]); }
static ct_output b_sub(ct_graph *g, const ct_output *x) { return ct_sub(g, x[0], x[1]); }
static ct_output b_mul(ct_graph *g, const ct_output *x) { return ct_mul(g, x[0], x[1]); }
static ct_output b_div(ct_graph *g, const ct_output *x) { return ct_div(g, x[0], x[1]); }
static ct_output b_neg(ct_graph *g, const ct_output *x) { return ct_neg(g, x[0]); }
static ct_output b_identity(ct_graph *g, const ct_output *x) { return ct_identity(g, x[0]); }
static ct_output b_relu(ct_graph *g, const ct_output *x) { return ct_relu(g, x[0]); }
static ct_output b_sigmoid(ct_graph *g, const ct_output *x) { return ct_sigmoid(g, x[0]); }
static ct_output b_tanh(ct_graph *g, const ct_output *x) { return ct_tanh(g, x[0]); }
static ct_output b_add_n(ct_graph *g, const ct_output *x) { return ct_add_n(g, 3, x); }
#define UNARY_MATH_BUILDER(P, Name, function, forward, derivative, gradient, flops, domain) \
  static ct_output b_##Name(ct_graph *g, const ct_output *x) {                             \
    return ct_unary_math(g, #Name, x[0]);                                                  \
  }
CT_UNARY_MATH(UNARY_MATH_BUILDER, _)
#undef UNARY_MATH_BUILDER
#define BINARY_MATH_BUILDER(P, Name, function, forward, da, db, flops, domain) \
  static ct_output b_##Name(ct_graph *g, const ct_output *x) {                \
    return ct_binary_math(g, #Name, x[0], x[1]);                              \
  }
CT_BINARY_MATH(BINARY_MATH_BUILDER, _)
#undef BINARY_MATH_BUILDER
/* a comparison, cast to f32 so that the GPU's bools compare with the CPU's */
#define COMPARE_BUILDER(P, Name, function, op)                                \
  static ct_output b_##Name(ct_graph *g, const ct_output *x) {                \
    return ct_cast(g, ct_compare(g, #Name, x[0], x[1]), CT_F32);              \
  }
CT_COMPARE(COMPARE_BUILDER, _)
#undef COMPARE_BUILDER
/* every output of the all-reduce carries a gradient: L weighs their sum */
static ct_output b_all_reduce(ct_graph *g, const ct_output *x) {
  ct_output sums[3];
  ct_all_reduce(g, 3, x, sums);
  return ct_add_n(g, 3, (ct_output[]){ct_mul(g, sums[0], ct_scalar(g, 0.5f)), sums[1],
                                      ct_mul(g, sums[2], ct_scalar(g, 2.0f))});
}
static ct_output b_collective_reduce(ct_graph *g, const ct_output *x) {
  return ct_collective_reduce(g, x[0], 0);
}
/* a process on its own is rank 0 of 1: the root, which keeps x */
static ct_output b_collective_reduce_to(ct_graph *g, const ct_output *x) {
  return ct_collective_reduce_to(g, x[0], 0, 3);
}
static ct_output b_collective_broadcast(ct_graph *g, const ct_output *x) {
  return ct_collective_broadcast(g, x[0], 0, 4);
}
static ct_output b_broadcast_like(ct_graph *g, const ct_output *x) {
  return ct_broadcast_like(g, x[0], x[1]);
}
static ct_output b_sum_like(ct_graph *g, const ct_output *x) { return ct_sum_like(g, x[0], x[1]); }
static ct_output b_matmul_nn(ct_graph *g, const ct_output *x) { return ct_matmul(g, x[0], x[1], 0, 0); }
static ct_output b_matmul_nt(ct_graph *g, const ct_output *x) { return ct_matmul(g, x[0], x[1], 0, 1); }
static ct_output b_matmul_tn(ct_graph *g, const ct_output *x) { return ct_matmul(g, x[0], x[1], 1, 0); }
static ct_output b_matmul_tt(ct_graph *g, const ct_output *x) { return ct_matmul(g, x[0], x[1], 1, 1); }
static ct_output b_conv_same(ct_graph *g, const ct_output *x) {
  return ct_conv2d(g, x[0], x[1], 1, 1, CT_PADDING_SAME);
}
static ct_output b_conv_valid_s2(ct_graph *g, const ct_output *x) {
  return ct_conv2d(g, x[0], x[1], 2, 2, CT_PADDING_VALID);
}
static ct_output b_conv_dilated(ct_graph *g, const ct_output *x) {
  return ct_conv2d_dilated(g, x[0], x[1], 1, 1, 2, 3, CT_PADDING_SAME);
}
static ct_output b_conv_dilated_s2(ct_graph *g, const ct_output *x) {
  return ct_conv2d_dilated(g, x[0], x[1], 2, 1, 2, 2, CT_PADDING_VALID);
}
/* the bias and ReLU in the convolution's op (ct_conv2d_bias) */
static ct_output b_conv_bias(ct_graph *g, const ct_output *x) {
  return ct_conv2d_bias(g, x[0], x[1], x[2], 1, 1, CT_PADDING_SAME, 0);
}
static ct_output b_conv_bias_relu(ct_graph *g, const ct_output *x) {
  return ct_conv2d_bias(g, x[0], x[1], x[2], 2, 2, CT_PADDING_VALID, 1);
}
static ct_output b_max_pool(ct_graph *g, const ct_output *x) {
  return ct_max_pool(g, x[0], 2, 2, CT_PADDING_VALID);
}
static ct_output b_max_pool_same(ct_graph *g, const ct_output *x) {
  return ct_max_pool(g, x[0], 3, 2, CT_PADDING_SAME);
}
/* a max pool of a ReLU: its gradient masked on the pool's output (ops_nn.c) */
static ct_output b_relu_max_pool(ct_graph *g, const ct_output *x) {
  return ct_max_pool(g, ct_relu(g, x[0]), 2, 2, CT_PADDING_VALID);
}
static ct_output b_relu_max_pool_same(ct_graph *g, const ct_output *x) {
  return ct_max_pool(g, ct_relu(g, x[0]), 3, 2, CT_PADDING_SAME);
}
static ct_output b_avg_pool(ct_graph *g, const ct_output *x) {
  return ct_avg_pool(g, x[0], 3, 2, CT_PADDING_SAME);
}
/* windows and strides that differ along H and W */
static ct_output b_max_pool_hw(ct_graph *g, const ct_output *x) {
  return ct_max_pool_hw(g, x[0], 2, 3, 1, 2, CT_PADDING_SAME);
}
static ct_output b_max_pool_hw_apart(ct_graph *g, const ct_output *x) {
  return ct_max_pool_hw(g, x[0], 3, 2, 3, 2, CT_PADDING_VALID);
}
static ct_output b_avg_pool_hw(ct_graph *g, const ct_output *x) {
  return ct_avg_pool_hw(g, x[0], 3, 2, 2, 1, CT_PADDING_SAME);
}
static ct_output b_lrn(ct_graph *g, const ct_output *x) {
  return ct_lrn(g, x[0], 2, 1.0f, 0.1f, 0.75f);
}
static ct_output b_lrn_radius0(ct_graph *g, const ct_output *x) {
  return ct_lrn(g, x[0], 0, 1.0f, 0.1f, 0.75f);
}
static ct_output b_lrn_cifar10(ct_graph *g, const ct_output *x) { /* cifar10_cnn's */
  return ct_lrn(g, x[0], 4, 1.0f, 0.001f / 9.0f, 0.75f);
}
static ct_output b_lrn_radius3(ct_graph *g, const ct_output *x) {
  return ct_lrn(g, x[0], 3, 2.0f, 0.05f, 0.75f);
}
static ct_output b_bn_training(ct_graph *g, const ct_output *x) {
  ct_output none = {NULL, 0};
  return ct_batch_norm(g, x[0], x[1], x[2], none, none, 1, 0.9f, 1e-3f);
}
static ct_output b_bn_relu_training(ct_graph *g, const ct_output *x) {
  ct_output none = {NULL, 0};
  return ct_batch_norm_relu(g, x[0], x[1], x[2], none, none, 1, 0.9f, 1e-3f);
}
static ct_output b_bn_inference(ct_graph *g, const ct_output *x) {
  ct_initializer half = {CT_INIT_CONSTANT, 0.5f}, two = {CT_INIT_CONSTANT, 2.0f};
  ct_output mean = ct_variable(g, "mean", ct_shape_of(1, (int64_t)3), half, 0);
  ct_output var = ct_variable(g, "var", ct_shape_of(1, (int64_t)3), two, 0);
  return ct_batch_norm(g, x[0], x[1], x[2], mean, var, 0, 0.9f, 1e-3f);
}
static ct_output b_dropout(ct_graph *g, const ct_output *x) { return ct_dropout(g, x[0], 0.3f); }
/* the rate a tensor: a constant beside x, on x's device */
static ct_output b_dropout_tensor(ct_graph *g, const ct_output *x) {
  float rate = 0.3f;
  const ct_tensor value = {CT_F32, ct_shape_of(0), &rate, 0};
  return ct_dropout_tensor(g, x[0], ct_constant(g, "rate", &value));
}
static ct_output b_reshape(ct_graph *g, const ct_output *x) {
  return ct_reshape(g, x[0], ct_shape_of(2, (int64_t)-1, (int64_t)6));
}
static ct_output b_concat(ct_graph *g, const ct_output *x) { return ct_concat(g, 2, x, 1); }
static ct_output b_split(ct_graph *g, const ct_output *x) {
  ct_output parts[3];
  ct_split(g, x[0], 1, 3, parts);
  /* use two of the three parts, so the third gets a zero gradient */
  return ct_sub(g, parts[0], ct_mul(g, parts[2], parts[2]));
}
/* parts of 1, 3 (the rest, -1) and 2 along axis 0; the middle one unused */
static ct_output b_split_sizes(ct_graph *g, const ct_output *x) {
  ct_output parts[3];
  ct_split_sizes(g, x[0], 0, 3, (const int64_t[]){1, -1, 2}, parts);
  return ct_concat(g, 2, (ct_output[]){ct_mul(g, parts[2], parts[2]), parts[0]}, 0);
}
/* x[0:4:3, -1:0:-2, :] of [4, 5, 3]: rows 0 and 3, columns 4 and 2 */
static ct_output b_strided_slice(ct_graph *g, const ct_output *x) {
  return ct_strided_slice(g, x[0], (const int64_t[]){0, -1, 0}, (const int64_t[]){4, 0, 0},
                          (const int64_t[]){3, -2, 1}, 0x4, 0x4);
}
/* x[::-1, 1:3] of [6, 4] */
static ct_output b_reversed_slice(ct_graph *g, const ct_output *x) {
  return ct_strided_slice(g, x[0], (const int64_t[]){0, 1}, (const int64_t[]){0, 3},
                          (const int64_t[]){-1, 1}, 0x1, 0x1);
}
/* axes (2, 0, 1) of [2, 3, 4]; NHWC [2, 3, 4, 5] to NCHW */
static ct_output b_transpose(ct_graph *g, const ct_output *x) {
  return ct_transpose(g, x[0], (const int[]){2, 0, 1});
}
static ct_output b_transpose_to_nchw(ct_graph *g, const ct_output *x) {
  return ct_transpose(g, x[0], (const int[]){0, 3, 1, 2});
}
static ct_output b_sum(ct_graph *g, const ct_output *x) { return ct_reduce_sum(g, x[0], 0x2, 0); }
static ct_output b_mean(ct_graph *g, const ct_output *x) { return ct_reduce_mean(g, x[0], 0x5, 1); }
static ct_output b_mean_all(ct_graph *g, const ct_output *x) { return ct_reduce_mean(g, x[0], 0, 0); }
static ct_output b_xent(ct_graph *g, const ct_output *x) {
  int32_t labels[4] = {0, 3, 1, 4};
  ct_tensor t = {CT_I32, ct_shape_of(1, (int64_t)4), labels, 0};
  return ct_sparse_softmax_cross_entropy(g, x[0], ct_constant(g, "labels", &t));
}
/* labels a distribution per row (a one-hot row among them) */
static ct_output b_dense_xent(ct_graph *g, const ct_output *x) {
  float labels[12] = {0.25f, 0.25f, 0.5f, 0.0f, 0.0f, 1.0f, 0.0f, 0.0f, 0.1f, 0.2f, 0.3f, 0.4f};
  ct_tensor t = {CT_F32, ct_shape_of(2, (int64_t)3, (int64_t)4), labels, 0};
  return ct_softmax_cross_entropy(g, x[0], ct_constant(g, "labels", &t));
}
/* the index as a float: no gradient reaches x (the check expects zeros) */
static ct_output b_argmax_axis0(ct_graph *g, const ct_output *x) {
  return ct_cast(g, ct_argmax_axis(g, x[0], 0), CT_F32);
}
static ct_output b_argmax_axis1(ct_graph *g, const ct_output *x) {
  return ct_cast(g, ct_argmax_axis(g, x[0], 1), CT_F32);
}
static ct_output b_argmax_last(ct_graph *g, const ct_output *x) {
  return ct_cast(g, ct_argmax_axis(g, x[0], -1), CT_F32);
}
static ct_output b_max_axis1(ct_graph *g, const ct_output *x) {
  return ct_reduce_max(g, x[0], 1u << 1, 0);
}
static ct_output b_min_axes02_keep(ct_graph *g, const ct_output *x) {
  return ct_reduce_min(g, x[0], 1u << 0 | 1u << 2, 1);
}
static ct_output b_max_all(ct_graph *g, const ct_output *x) { return ct_reduce_max(g, x[0], 0, 0); }
static ct_output b_l2_loss(ct_graph *g, const ct_output *x) { return ct_l2_loss(g, x[0]); }
static ct_output b_dense_chain(ct_graph *g, const ct_output *x) {
  return ct_tanh(g, ct_add(g, ct_matmul(g, x[0], x[1], 0, 0), x[2]));
}

#define S1(a) ct_shape_of(1, (int64_t)(a))
#define S2(a, b) ct_shape_of(2, (int64_t)(a), (int64_t)(b))
#define S3(a, b, c) ct_shape_of(3, (int64_t)(a), (int64_t)(b), (int64_t)(c))
#define S4(a, b, c, d) ct_shape_of(4, (int64_t)(a), (int64_t)(b), (int64_t)(c), (int64_t)(d))

static op_case cases[112];
static int n_cases;

static void add_case(const char *name, int n, ct_shape s0, ct_shape s1, ct_shape s2,
                     value_kind values, ct_output (*build)(ct_graph *, const ct_output *)) {
  assert_true(n_cases < (int)(sizeof cases / sizeof cases[0]));
  op_case *c = &cases[n_cases++];
  c->name = name;
  c->n_inputs = n;
  c->shapes[0] = s0;
  c->shapes[1] = s1;
  c->shapes[2] = s2;
  c->values = values;
  c->build = build;
}

void ct_op_case_fill(float *v, int64_t n, value_kind kind, uint64_t seed) {
  ct_test_fill_uniform(v, n, seed, -1.0f, 1.0f);
  for (int64_t i = 0; i < n; ++i) {
    if (kind == VALUES_AWAY_FROM_ZERO) v[i] = v[i] >= 0 ? v[i] + 0.2f : v[i] - 0.2f;
    if (kind == VALUES_POSITIVE) v[i] = 0.5f + fabsf(v[i]);
    /* [k/2 + 0.1, k/2 + 0.4] for k in -4 ... 3 */
    if (kind == VALUES_OFF_GRID) v[i] = 0.5f * floorf(4.0f * v[i]) + 0.25f + 0.15f * v[i];
  }
  if (kind == VALUES_DISTINCT) { /* a shuffled ladder: no two values within 0.05 */
    for (int64_t i = 0; i < n; ++i) v[i] = 0.05f * (float)i - 0.025f * (float)n;
    uint64_t s = seed | 1;
    for (int64_t i = n - 1; i > 0; --i) {
      s ^= s << 13, s ^= s >> 7, s ^= s << 17;
      int64_t j = (int64_t)(s % (uint64_t)(i + 1));
      float t = v[i];
      v[i] = v[j];
      v[j] = t;
    }
  }
}

static void build_table(void) {
  ct_shape none = ct_shape_of(0);
  add_case("Add broadcast", 2, S3(2, 3, 4), S1(4), none, VALUES_UNIFORM, b_add);
  add_case("Add same", 2, S2(3, 4), S2(3, 4), none, VALUES_UNIFORM, b_add);
  add_case("Sub broadcast", 2, S2(3, 1), S2(1, 4), none, VALUES_UNIFORM, b_sub);
  add_case("Mul broadcast", 2, S3(2, 3, 4), S3(2, 1, 4), none, VALUES_UNIFORM, b_mul);
  add_case("RealDiv", 2, S2(3, 4), S1(4), none, VALUES_POSITIVE, b_div);
  add_case("Neg", 1, S2(3, 4), none, none, VALUES_UNIFORM, b_neg);
  add_case("Identity", 1, S2(3, 4), none, none, VALUES_UNIFORM, b_identity);
  add_case("Relu", 1, S2(5, 6), none, none, VALUES_AWAY_FROM_ZERO, b_relu);
  add_case("Sigmoid", 1, S2(5, 6), none, none, VALUES_UNIFORM, b_sigmoid);
  add_case("Tanh", 1, S2(5, 6), none, none, VALUES_UNIFORM, b_tanh);
#define UNARY_MATH_CASE(P, Name, function, forward, derivative, gradient, flops, domain) \
  add_case(#Name, 1, S2(5, 6), none, none, VALUES_##domain, b_##Name);
  CT_UNARY_MATH(UNARY_MATH_CASE, _)
#undef UNARY_MATH_CASE
  /* each binary math row twice: shapes alike, and broadcast both ways (a
   * [3, 1] against b [1, 4]), so that both partials sum to their shapes */
#define BINARY_MATH_CASE(P, Name, function, forward, da, db, flops, domain)           \
  add_case(#Name, 2, S2(3, 4), S2(3, 4), none, VALUES_##domain, b_##Name);           \
  add_case(#Name " broadcast", 2, S2(3, 1), S2(1, 4), none, VALUES_##domain, b_##Name);
  CT_BINARY_MATH(BINARY_MATH_CASE, _)
#undef BINARY_MATH_CASE
#define COMPARE_CASE(P, Name, function, op) \
  add_case(#Name, 2, S2(3, 4), S2(3, 4), none, VALUES_UNIFORM, b_##Name);
  CT_COMPARE(COMPARE_CASE, _)
#undef COMPARE_CASE
  add_case("AddN", 3, S2(3, 4), S2(3, 4), S2(3, 4), VALUES_UNIFORM, b_add_n);
  add_case("AllReduce", 3, S2(3, 4), S2(3, 4), S2(3, 4), VALUES_UNIFORM, b_all_reduce);
  add_case("CollectiveReduce", 1, S2(3, 4), none, none, VALUES_UNIFORM, b_collective_reduce);
  add_case("CollectiveReduce to rank 0", 1, S2(3, 4), none, none, VALUES_UNIFORM,
           b_collective_reduce_to);
  add_case("CollectiveBroadcast", 1, S3(2, 3, 4), none, none, VALUES_UNIFORM,
           b_collective_broadcast);
  add_case("BroadcastLike", 2, S1(4), S3(2, 3, 4), none, VALUES_UNIFORM, b_broadcast_like);
  add_case("SumLike", 2, S3(2, 3, 4), S2(1, 4), none, VALUES_UNIFORM, b_sum_like);
  add_case("MatMul", 2, S2(3, 5), S2(5, 4), none, VALUES_UNIFORM, b_matmul_nn);
  add_case("MatMul b^T", 2, S2(3, 5), S2(4, 5), none, VALUES_UNIFORM, b_matmul_nt);
  add_case("MatMul a^T", 2, S2(5, 3), S2(5, 4), none, VALUES_UNIFORM, b_matmul_tn);
  add_case("MatMul a^T b^T", 2, S2(5, 3), S2(4, 5), none, VALUES_UNIFORM, b_matmul_tt);
  add_case("Conv2D SAME", 2, S4(2, 5, 5, 3), S4(3, 3, 3, 4), none, VALUES_UNIFORM, b_conv_same);
  add_case("Conv2D SAME dilated 2x3", 2, S4(2, 6, 7, 3), S4(3, 2, 3, 4), none, VALUES_UNIFORM,
           b_conv_dilated);
  add_case("Conv2D VALID s2x1 dilated 2x2", 2, S4(1, 8, 7, 2), S4(2, 3, 2, 3), none,
           VALUES_UNIFORM, b_conv_dilated_s2);
  add_case("Conv2D VALID s2", 2, S4(2, 7, 6, 2), S4(3, 2, 2, 3), none, VALUES_UNIFORM,
           b_conv_valid_s2);
  add_case("Conv2D+bias SAME", 3, S4(2, 5, 5, 3), S4(3, 3, 3, 4), S1(4), VALUES_UNIFORM,
           b_conv_bias);
  add_case("Conv2D+bias+ReLU VALID s2", 3, S4(2, 7, 6, 2), S4(3, 2, 2, 3), S1(3), VALUES_UNIFORM,
           b_conv_bias_relu);
  add_case("MaxPool", 1, S4(2, 4, 4, 3), none, none, VALUES_DISTINCT, b_max_pool);
  add_case("MaxPool SAME 3x3/2", 1, S4(1, 5, 5, 2), none, none, VALUES_DISTINCT, b_max_pool_same);
  /* an odd count of distinct values: none at ReLU's kink (0) */
  add_case("Relu, MaxPool", 1, S4(1, 5, 5, 3), none, none, VALUES_DISTINCT, b_relu_max_pool);
  add_case("Relu, MaxPool SAME 3x3/2", 1, S4(1, 5, 5, 3), none, none, VALUES_DISTINCT,
           b_relu_max_pool_same);
  add_case("AvgPool SAME 3x3/2", 1, S4(2, 5, 5, 3), none, none, VALUES_UNIFORM, b_avg_pool);
  add_case("MaxPool SAME 2x3/1x2", 1, S4(1, 5, 6, 2), none, none, VALUES_DISTINCT, b_max_pool_hw);
  add_case("MaxPool VALID 3x2/3x2", 1, S4(1, 6, 5, 2), none, none, VALUES_DISTINCT,
           b_max_pool_hw_apart);
  add_case("AvgPool SAME 3x2/2x1", 1, S4(2, 5, 4, 3), none, none, VALUES_UNIFORM, b_avg_pool_hw);
  add_case("LRN", 1, S4(2, 3, 3, 7), none, none, VALUES_UNIFORM, b_lrn);
  add_case("LRN radius 0", 1, S4(1, 2, 2, 5), none, none, VALUES_UNIFORM, b_lrn_radius0);
  add_case("LRN radius 3, 20 ch", 1, S4(1, 2, 2, 20), none, none, VALUES_UNIFORM, b_lrn_radius3);
  add_case("LRN radius 4, cifar10_cnn", 1, S4(1, 2, 2, 12), none, none, VALUES_UNIFORM,
           b_lrn_cifar10);
  add_case("BatchNorm training", 3, S4(2, 3, 3, 3), S1(3), S1(3), VALUES_UNIFORM, b_bn_training);
  add_case("BatchNorm+ReLU training", 3, S4(2, 3, 3, 3), S1(3), S1(3), VALUES_UNIFORM,
           b_bn_relu_training);
  add_case("BatchNorm inference", 3, S2(4, 3), S1(3), S1(3), VALUES_UNIFORM, b_bn_inference);
  add_case("Dropout", 1, S2(6, 8), none, none, VALUES_UNIFORM, b_dropout);
  add_case("Dropout rate tensor", 1, S2(6, 8), none, none, VALUES_UNIFORM, b_dropout_tensor);
  add_case("Reshape", 1, S3(2, 3, 4), none, none, VALUES_UNIFORM, b_reshape);
  add_case("Concat", 2, S2(3, 2), S2(3, 4), none, VALUES_UNIFORM, b_concat);
  add_case("Split", 1, S2(3, 6), none, none, VALUES_UNIFORM, b_split);
  add_case("Split sizes", 1, S3(6, 2, 3), none, none, VALUES_UNIFORM, b_split_sizes);
  add_case("StridedSlice", 1, S3(4, 5, 3), none, none, VALUES_UNIFORM, b_strided_slice);
  add_case("StridedSlice reversed", 1, S2(6, 4), none, none, VALUES_UNIFORM, b_reversed_slice);
  add_case("Transpose", 1, S3(2, 3, 4), none, none, VALUES_UNIFORM, b_transpose);
  add_case("Transpose to NCHW", 1, S4(2, 3, 4, 5), none, none, VALUES_UNIFORM,
           b_transpose_to_nchw);
  add_case("Sum", 1, S3(2, 3, 4), none, none, VALUES_UNIFORM, b_sum);
  add_case("Mean keep_dims", 1, S3(2, 3, 4), none, none, VALUES_UNIFORM, b_mean);
  add_case("Mean all", 1, S2(3, 4), none, none, VALUES_UNIFORM, b_mean_all);
  add_case("SoftmaxCrossEntropy", 1, S2(4, 5), none, none, VALUES_UNIFORM, b_xent);
  add_case("SoftmaxCrossEntropyWithLogits", 1, S2(3, 4), none, none, VALUES_UNIFORM,
           b_dense_xent);
  add_case("Max axis 1", 1, S3(2, 5, 3), none, none, VALUES_DISTINCT, b_max_axis1);
  add_case("Min axes 0, 2 keep_dims", 1, S3(3, 2, 4), none, none, VALUES_DISTINCT,
           b_min_axes02_keep);
  add_case("Max of all", 1, S2(4, 5), none, none, VALUES_DISTINCT, b_max_all);
  add_case("ArgMax axis 0", 1, S3(5, 3, 4), none, none, VALUES_DISTINCT, b_argmax_axis0);
  add_case("ArgMax axis 1", 1, S3(2, 6, 3), none, none, VALUES_DISTINCT, b_argmax_axis1);
  add_case("ArgMax last axis", 1, S2(3, 40), none, none, VALUES_DISTINCT, b_argmax_last);
  add_case("L2Loss", 1, S3(2, 3, 4), none, none, VALUES_UNIFORM, b_l2_loss);
  add_case("dense chain", 3, S2(3, 4), S2(4, 2), S1(2), VALUES_UNIFORM, b_dense_chain);
}

const op_case *ct_op_cases(int *n) {
  if (n_cases == 0) build_table();
  *n = n_cases;
  return cases;
}

void ct_op_case_build(const op_case *c, ct_graph *g, op_case_graph *out) {
  ct_status st = CT_STATUS_INIT;
  for (int i = 0; i < c->n_inputs; ++i) {
    char name[16];
    snprintf(name, sizeof name, "x%d", i);
    out->x[i] = ct_placeholder(g, name, CT_F32, c->shapes[i]);
    out->values[i] = ct_tensor_new(CT_F32, &c->shapes[i], &st);
    assert_status_ok(&st);
    ct_op_case_fill(ct_tensor_f32(out->values[i]), ct_tensor_elements(out->values[i]), c->values,
                    17u + (uint64_t)i);
    out->feeds[i] = (ct_feed){out->x[i], out->values[i]};
  }
  out->y = c->build(g, out->x);
  assert_status_ok(ct_graph_status(g));
  ct_shape ys = ct_output_shape(out->y);
  ct_tensor *r = ct_tensor_new(CT_F32, &ys, &st);
  assert_status_ok(&st);
  ct_test_fill_uniform(ct_tensor_f32(r), ct_tensor_elements(r), 99, -1.0f, 1.0f);
  out->loss = ct_reduce_sum(g, ct_mul(g, out->y, ct_constant(g, "R", r)), 0, 0);
  ct_tensor_free(r); /* the constant holds its own copy */
}

void ct_op_case_graph_free(op_case_graph *built, int n_inputs) {
  for (int i = 0; i < n_inputs; ++i) ct_tensor_free(built->values[i]);
}
