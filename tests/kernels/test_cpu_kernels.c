/* Every CPU kernel against an independent naive loop: forward kernels and
 * the backward kernels (ReluGrad, Conv2DBackprop*, MaxPoolGrad, ...), run
 * through a session on random inputs. Max differences are printed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#include "core/hash.h"
#include "graph/graph_internal.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/winograd.h"
#include "ops/conv_geometry.h"
#include "test_support.h"

/* ---- harness ---------------------------------------------------------------- */

typedef struct op_run {
  ct_graph *g;
  ct_output in[4];
  ct_tensor *value[4];
  int n;
} op_run;

static void run_begin(op_run *r, int n, const ct_shape *shapes, uint64_t seed) {
  ct_status st = CT_STATUS_INIT;
  memset(r, 0, sizeof *r);
  r->g = ct_graph_new();
  r->n = n;
  for (int i = 0; i < n; ++i) {
    char name[16];
    snprintf(name, sizeof name, "x%d", i);
    r->in[i] = ct_placeholder(r->g, name, CT_F32, shapes[i]);
    r->value[i] = ct_tensor_new(CT_F32, &shapes[i], &st);
    assert_status_ok(&st);
    ct_test_fill_uniform(ct_tensor_f32(r->value[i]), ct_tensor_elements(r->value[i]),
                         seed + (uint64_t)i, -1.0f, 1.0f);
  }
}

/* The arithmetic of the sessions run_fetch makes (train.precision and
 * train.conv_algorithm); the tests that change it set it back. */
static ct_precision g_precision = CT_PRECISION_FP32;
static ct_conv_algorithm g_conv_algorithm = CT_CONV_DIRECT;
static int g_threads = 2; /* the CPU device's */

/* The CPU alone, whatever GPUs the machine has: these are the CPU kernels. */
static ct_session *cpu_session(ct_graph *g, int threads, ct_status *st) {
  ct_session_options options;
  ct_session_options_defaults(&options);
  options.device_count_gpu = 0;
  options.precision = g_precision;
  options.conv_algorithm = g_conv_algorithm;
  if (threads) options.intra_op_parallelism_threads = threads;
  return ct_session_new(g, &options, st);
}

/* Runs the fetches with the inputs fed; results are the caller's. */
static void run_fetch(op_run *r, int n_fetches, const ct_output *fetches, ct_tensor **results) {
  ct_status st = CT_STATUS_INIT;
  assert_status_ok(ct_graph_status(r->g));
  ct_session *s = cpu_session(r->g, g_threads, &st);
  assert_status_ok(&st);
  ct_feed feeds[4];
  for (int i = 0; i < r->n; ++i) feeds[i] = (ct_feed){r->in[i], r->value[i]};
  ct_session_run(s, feeds, r->n, fetches, n_fetches, NULL, 0, results, &st);
  assert_status_ok(&st);
  ct_session_free(s);
}

static void run_end(op_run *r) {
  for (int i = 0; i < r->n; ++i) ct_tensor_free(r->value[i]);
  ct_graph_free(r->g);
}

static void expect_close_floats(const char *what, const float *got, const float *want, int64_t n,
                                double tol) {
  double diff = ct_test_max_rel_diff(got, want, n);
  printf("  %-34s max difference %.2e\n", what, diff);
  if (!(diff <= tol)) fail_msg("%s: max difference %g > %g", what, diff, tol);
}

static void expect_close(const char *what, const ct_tensor *got, const float *want, int64_t n,
                         double tol) {
  assert_int_equal(ct_tensor_elements(got), n);
  expect_close_floats(what, ct_tensor_f32(got), want, n, tol);
}

static float *input(const op_run *r, int i) { return ct_tensor_f32(r->value[i]); }

/* ---- matmul ----------------------------------------------------------------- */

/* MatMul of every transposition of [M, K] x [K, N] against the naive loop,
 * within tol; the four products go to out[] when it is not NULL (else they
 * are freed). */
static void check_matmul_of(int64_t M, int64_t K, int64_t N, double tol, ct_tensor **out) {
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      ct_shape shapes[2] = {ta ? ct_shape_of(2, K, M) : ct_shape_of(2, M, K),
                            tb ? ct_shape_of(2, N, K) : ct_shape_of(2, K, N)};
      op_run r;
      run_begin(&r, 2, shapes, 3);
      ct_output y = ct_matmul(r.g, r.in[0], r.in[1], ta, tb);
      ct_tensor *got;
      run_fetch(&r, 1, &y, &got);
      float *want = calloc((size_t)(M * N), sizeof *want);
      const float *A = input(&r, 0), *B = input(&r, 1);
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          double s = 0;
          for (int64_t k = 0; k < K; ++k)
            s += (double)(ta ? A[k * M + i] : A[i * K + k]) * (tb ? B[j * K + k] : B[k * N + j]);
          want[i * N + j] = (float)s;
        }
      char what[64];
      snprintf(what, sizeof what, "MatMul ta=%d tb=%d", ta, tb);
      expect_close(what, got, want, M * N, tol);
      free(want);
      if (out) out[ta * 2 + tb] = got;
      else ct_tensor_free(got);
      run_end(&r);
    }
}

static void check_matmul(double tol, ct_tensor **out) { check_matmul_of(37, 53, 29, tol, out); }

/* Also with B's rows 2 KiB and 3 KiB apart, which an AVX2 sgemm takes as a
 * copy of B with longer rows (test_cpu_kernels_avx2 runs these tests so). */
static void test_matmul(void **state) {
  (void)state;
  check_matmul(1e-4, NULL);
  check_matmul_of(19, 67, 512, 1e-4, NULL);
  check_matmul_of(19, 67, 768, 1e-4, NULL);
}

/* ---- convolution -------------------------------------------------------------- */

typedef struct conv_geom {
  int64_t N, H, W, C, R, S, K, stride, P, Q, pad_h, pad_w, dil_h, dil_w;
} conv_geom;

/* With the filter's taps dil_h rows and dil_w columns apart. */
static conv_geom dilated_geometry(int64_t N, int64_t H, int64_t W, int64_t C, int64_t R,
                                  int64_t S, int64_t K, int64_t stride, int same, int64_t dil_h,
                                  int64_t dil_w) {
  ct_window wh = ct_window_of(H, ct_dilated(R, dil_h), stride, same);
  ct_window ww = ct_window_of(W, ct_dilated(S, dil_w), stride, same);
  conv_geom g = {N, H, W, C, R, S, K, stride, wh.out, ww.out, wh.pad_before, ww.pad_before,
                 dil_h, dil_w};
  return g;
}

static conv_geom geometry(int64_t N, int64_t H, int64_t W, int64_t C, int64_t R, int64_t S,
                          int64_t K, int64_t stride, int same) {
  return dilated_geometry(N, H, W, C, R, S, K, stride, same, 1, 1);
}

/* Calls fn(x index, filter index, y index) for every tap that lands inside x. */
#define FOR_EACH_TAP(g, body)                                                              \
  for (int64_t n = 0; n < g.N; ++n)                                                        \
    for (int64_t p = 0; p < g.P; ++p)                                                      \
      for (int64_t q = 0; q < g.Q; ++q)                                                    \
        for (int64_t r = 0; r < g.R; ++r)                                                  \
          for (int64_t s = 0; s < g.S; ++s) {                                              \
            int64_t h = p * g.stride + r * g.dil_h - g.pad_h;                              \
            int64_t w = q * g.stride + s * g.dil_w - g.pad_w;                              \
            if (h < 0 || h >= g.H || w < 0 || w >= g.W) continue;                          \
            for (int64_t c = 0; c < g.C; ++c)                                              \
              for (int64_t k = 0; k < g.K; ++k) {                                          \
                int64_t xi = ((n * g.H + h) * g.W + w) * g.C + c;                          \
                int64_t fi = ((r * g.S + s) * g.C + c) * g.K + k;                          \
                int64_t yi = ((n * g.P + p) * g.Q + q) * g.K + k;                          \
                body;                                                                      \
              }                                                                            \
          }

/* Conv2D and its gradients on geometry cg against the naive loop, within
 * tol; the three results go to out[] when it is not NULL (else freed). */
static void check_conv_geometry(conv_geom cg, int same, double tol, ct_tensor **out_kept) {
  const int64_t stride = cg.stride;
  ct_shape shapes[2] = {ct_shape_of(4, cg.N, cg.H, cg.W, cg.C),
                        ct_shape_of(4, cg.R, cg.S, cg.C, cg.K)};
  op_run r;
  run_begin(&r, 2, shapes, 11);
  ct_output y = ct_conv2d_dilated(r.g, r.in[0], r.in[1], (int)stride, (int)stride, (int)cg.dil_h,
                                  (int)cg.dil_w, same ? CT_PADDING_SAME : CT_PADDING_VALID);
  /* dy is a third input: feed it through a placeholder shaped like y */
  ct_shape ys = ct_output_shape(y);
  ct_output dy = ct_placeholder(r.g, "dy", CT_F32, ys);
  ct_status st = CT_STATUS_INIT;
  r.in[2] = dy;
  r.value[2] = ct_tensor_new(CT_F32, &ys, &st);
  r.n = 3;
  ct_test_fill_uniform(ct_tensor_f32(r.value[2]), ct_tensor_elements(r.value[2]), 5, -1, 1);
  ct_output x_grad, f_grad;
  ct_output xs[2] = {r.in[0], r.in[1]}, grads[2];
  ct_output loss = ct_reduce_sum(r.g, ct_mul(r.g, y, dy), 0, 0);
  ct_gradients(r.g, loss, 2, xs, grads);
  x_grad = grads[0];
  f_grad = grads[1];
  ct_output fetches[3] = {y, x_grad, f_grad};
  ct_tensor *out[3];
  run_fetch(&r, 3, fetches, out);
  assert_int_equal(ys.dims[1], cg.P);
  const float *X = input(&r, 0), *F = input(&r, 1), *DY = input(&r, 2);
  int64_t ny = cg.N * cg.P * cg.Q * cg.K, nx = cg.N * cg.H * cg.W * cg.C;
  int64_t nf = cg.R * cg.S * cg.C * cg.K;
  float *y_ref = calloc((size_t)ny, 4), *dx_ref = calloc((size_t)nx, 4), *df_ref = calloc((size_t)nf, 4);
  FOR_EACH_TAP(cg, {
    y_ref[yi] += X[xi] * F[fi];
    dx_ref[xi] += DY[yi] * F[fi];
    df_ref[fi] += DY[yi] * X[xi];
  });
  static const char *const ops[3] = {"Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter"};
  const float *refs[3] = {y_ref, dx_ref, df_ref};
  const int64_t sizes[3] = {ny, nx, nf};
  for (int i = 0; i < 3; ++i) {
    char what[96];
    snprintf(what, sizeof what, "%s %s s%lld d%lldx%lld", ops[i], same ? "SAME" : "VALID",
             (long long)stride, (long long)cg.dil_h, (long long)cg.dil_w);
    expect_close(what, out[i], refs[i], sizes[i], tol);
  }
  free(y_ref), free(dx_ref), free(df_ref);
  for (int i = 0; i < 3; ++i) {
    if (out_kept) out_kept[i] = out[i];
    else ct_tensor_free(out[i]);
  }
  run_end(&r);
}

static void check_conv(int same, int64_t stride) {
  check_conv_geometry(geometry(2, 9, 8, 3, 5, 3, 4, stride, same), same, 1e-4, NULL);
}

static void test_conv2d(void **state) {
  (void)state;
  check_conv(1, 1);
  check_conv(0, 1);
  check_conv(1, 2);
  check_conv(0, 2);
  /* 16 output channels at stride 1, forward run transposed (conv.c), an
   * even kernel padded unevenly (SAME) and evenly (VALID) */
  check_conv_geometry(geometry(2, 7, 6, 5, 4, 2, 16, 1, 1), 1, 1e-4, NULL);
  check_conv_geometry(geometry(2, 7, 6, 5, 4, 2, 16, 1, 0), 0, 1e-4, NULL);
  /* dilated filters (tf.nn.conv2d's dilations): at stride 1 with few output
   * channels (never run transposed), strided, and 3x3 layers of 32 channels
   * that Winograd's algorithm, asked for, must leave to the direct one */
  check_conv_geometry(dilated_geometry(2, 9, 8, 3, 3, 2, 4, 1, 1, 2, 3), 1, 1e-4, NULL);
  check_conv_geometry(dilated_geometry(2, 9, 8, 3, 2, 3, 4, 2, 0, 3, 2), 0, 1e-4, NULL);
  g_conv_algorithm = CT_CONV_WINOGRAD;
  check_conv_geometry(dilated_geometry(2, 12, 12, 32, 3, 3, 32, 1, 1, 2, 2), 1, 1e-3, NULL);
  check_conv_geometry(dilated_geometry(2, 12, 12, 32, 5, 5, 32, 1, 0, 2, 1), 0, 1e-3, NULL);
  g_conv_algorithm = CT_CONV_DIRECT;
}

/* Conv2D with its bias and ReLU (ct_conv2d_bias) on geometry cg against the
 * naive loop: y = max(0, conv + bias), and for L = sum(y * dy) the
 * gradients of x, the filter and the bias, dy masked where y is 0. */
static void check_conv_bias_relu(conv_geom cg, int same) {
  const ct_shape shapes[4] = {ct_shape_of(4, cg.N, cg.H, cg.W, cg.C),
                              ct_shape_of(4, cg.R, cg.S, cg.C, cg.K), ct_shape_of(1, cg.K),
                              ct_shape_of(4, cg.N, cg.P, cg.Q, cg.K)};
  op_run r;
  run_begin(&r, 4, shapes, 21);
  const int stride = (int)cg.stride;
  ct_output fetches[4];
  fetches[0] = ct_conv2d_bias(r.g, r.in[0], r.in[1], r.in[2], stride, stride,
                              same ? CT_PADDING_SAME : CT_PADDING_VALID, 1);
  ct_output loss = ct_reduce_sum(r.g, ct_mul(r.g, fetches[0], r.in[3]), 0, 0);
  ct_gradients(r.g, loss, 3, r.in, fetches + 1);
  ct_tensor *out[4];
  run_fetch(&r, 4, fetches, out);
  const float *X = input(&r, 0), *F = input(&r, 1), *B = input(&r, 2), *DY = input(&r, 3);
  const float *Y = ct_tensor_f32(out[0]);
  const int64_t ny = cg.N * cg.P * cg.Q * cg.K, nx = cg.N * cg.H * cg.W * cg.C;
  const int64_t nf = cg.R * cg.S * cg.C * cg.K;
  float *y_ref = calloc((size_t)ny, 4), *dz = calloc((size_t)ny, 4), *dx_ref = calloc((size_t)nx, 4);
  float *df_ref = calloc((size_t)nf, 4), *db_ref = calloc((size_t)cg.K, 4);
  FOR_EACH_TAP(cg, y_ref[yi] += X[xi] * F[fi]);
  for (int64_t i = 0; i < ny; ++i) {
    y_ref[i] = fmaxf(0.0f, y_ref[i] + B[i % cg.K]);
    dz[i] = Y[i] > 0.0f ? DY[i] : 0.0f; /* the kernel's mask: y near 0 may round either way */
    db_ref[i % cg.K] += dz[i];
  }
  FOR_EACH_TAP(cg, {
    dx_ref[xi] += dz[yi] * F[fi];
    df_ref[fi] += dz[yi] * X[xi];
  });
  char what[80];
  snprintf(what, sizeof what, "Conv2D+bias+ReLU %lldx%lld %lld->%lld /%d", (long long)cg.R,
           (long long)cg.S, (long long)cg.C, (long long)cg.K, stride);
  expect_close(what, out[0], y_ref, ny, 1e-4);
  expect_close("  its dx", out[1], dx_ref, nx, 1e-4);
  expect_close("  its dfilter", out[2], df_ref, nf, 1e-4);
  expect_close("  its dbias", out[3], db_ref, cg.K, 1e-4);
  free(y_ref), free(dz), free(dx_ref), free(df_ref), free(db_ref);
  for (int i = 0; i < 4; ++i) ct_tensor_free(out[i]);
  run_end(&r);
}

/* On every path of a forward convolution (conv.c): run transposed (at most
 * 16 output channels, stride 1) with the bias and ReLU in a pass after,
 * a direct primitive doing them itself (on 1 and 3 input channels, the one
 * oneDNN ranks after its brgemm kernel), Winograd (32 channels, 3x3:
 * oneDNN's with AVX-512, ctower's own in test_cpu_kernels_avx2), a strided
 * one. */
static void test_conv2d_bias_relu(void **state) {
  (void)state;
  g_conv_algorithm = CT_CONV_AUTO;
  check_conv_bias_relu(geometry(2, 9, 8, 3, 5, 3, 4, 1, 1), 1);
  check_conv_bias_relu(geometry(2, 9, 8, 3, 5, 5, 32, 1, 1), 1);
  check_conv_bias_relu(geometry(2, 9, 8, 1, 5, 5, 32, 1, 1), 1);
  check_conv_bias_relu(geometry(2, 12, 12, 32, 3, 3, 32, 1, 1), 1);
  check_conv_bias_relu(geometry(2, 9, 8, 3, 5, 3, 4, 2, 0), 0);
  g_conv_algorithm = CT_CONV_DIRECT;
}

/* ---- the arithmetic a session chooses: Winograd, bfloat16 --------------------- */

/* The description of the CPU device of a session with this arithmetic
 * (ct_device_info): what ctower says it computes with. The tests expect
 * what it reports, never what the CPU's flags suggest. */
static void cpu_description(ct_precision precision, ct_conv_algorithm algorithm, char *out,
                            size_t size) {
  const ct_precision saved_precision = g_precision;
  const ct_conv_algorithm saved_algorithm = g_conv_algorithm;
  g_precision = precision, g_conv_algorithm = algorithm;
  ct_graph *g = ct_graph_new();
  ct_status st = CT_STATUS_INIT;
  ct_session *session = cpu_session(g, 0, &st);
  assert_status_ok(&st);
  ct_device_info info;
  assert_int_equal(ct_session_device_info(session, 0, &info), 0);
  snprintf(out, size, "%s", info.description);
  printf("  the CPU device reports: %s\n", out);
  ct_session_free(session);
  ct_graph_free(g);
  g_precision = saved_precision, g_conv_algorithm = saved_algorithm;
}

/* Whether that description has `what` ("math: bf16", "winograd: 3x3"). */
static int cpu_reports(ct_precision precision, ct_conv_algorithm algorithm, const char *what) {
  char description[512];
  cpu_description(precision, algorithm, description, sizeof description);
  return strstr(description, what) != NULL;
}

/* Whether two lists of n tensors hold bitwise the same values. */
static int same_bits(ct_tensor **a, ct_tensor **b, int n) {
  int same = 1;
  for (int i = 0; i < n; ++i)
    same = same && memcmp(ct_tensor_f32(a[i]), ct_tensor_f32(b[i]),
                          (size_t)ct_tensor_elements(a[i]) * sizeof(float)) == 0;
  return same;
}

static void free_all(ct_tensor **t, int n) {
  for (int i = 0; i < n; ++i) ct_tensor_free(t[i]);
}

/* Whether the CPU device, with conv_algorithm `algorithm`, reports that
 * Winograd computes a stride-1 layer of taps x taps from in to out
 * channels: "winograd: 3x3 (oneDNN's), 5x5 (ctower's own, channels in
 * multiples of N), from M channels" or "winograd: 3x3 and 5x5 (ctower's
 * own, ...)", or "none". oneDNN's 3x3 takes any channel counts, ctower's
 * own multiples of the N it reports; auto only layers of M or more. */
static int winograd_takes(ct_conv_algorithm algorithm, int taps, int64_t in, int64_t out) {
  static const char own_mark[] = "(ctower's own, channels in multiples of ";
  char description[512];
  cpu_description(CT_PRECISION_FP32, algorithm, description, sizeof description);
  const char *w = strstr(description, "winograd: ");
  assert_non_null(w);
  const char *own = strstr(w, own_mark), *from = strstr(w, "from ");
  const int64_t multiple = own ? atoll(own + sizeof own_mark - 1) : 0;
  const int64_t least = from ? atoll(from + 5) : 0;
  const int own_takes = multiple > 0 && in % multiple == 0 && out % multiple == 0;
  const int takes = taps == 3 ? strstr(w, "3x3 (oneDNN's)") != NULL ||
                                    (strstr(w, "3x3 and 5x5") != NULL && own_takes)
                              : strstr(w, "5x5 (ctower's own") != NULL && own_takes;
  return takes && in >= least && out >= least;
}

/* Winograd on stride-1 layers of 3x3 and 5x5: within 1e-4 (2e-4 for 5x5,
 * as test_own_winograd) of the naive loop (relative to the result, at
 * least 1), as the direct convolution, on inputs in [-1, 1] with up to 800
 * products per output; and not the direct convolution's bits where the
 * device reports Winograd for those taps (Winograd did run), exactly them
 * where it does not (the fallback), on a size of an odd number of tiles
 * and unpadded too. */
static void test_conv2d_winograd(void **state) {
  (void)state;
  const conv_geom layers[4] = {
      geometry(2, 12, 12, 16, 3, 3, 32, 1, 1), geometry(3, 7, 6, 32, 3, 3, 16, 1, 0),
      geometry(2, 10, 9, 32, 5, 5, 64, 1, 1), geometry(3, 9, 8, 64, 5, 5, 32, 1, 0)};
  for (int i = 0; i < 4; ++i) {
    const int taps = (int)layers[i].R;
    const int has = winograd_takes(CT_CONV_WINOGRAD, taps, layers[i].C, layers[i].K);
    const double tolerance = taps == 5 ? 2e-4 : 1e-4;
    printf("  %dx%d: Winograd %s on this CPU\n", taps, taps, has ? "used" : "not available: direct");
    ct_tensor *direct[3], *winograd[3];
    check_conv_geometry(layers[i], i % 2 == 0, 1e-4, direct);
    g_conv_algorithm = CT_CONV_WINOGRAD;
    check_conv_geometry(layers[i], i % 2 == 0, tolerance, winograd);
    g_conv_algorithm = CT_CONV_DIRECT;
    assert_int_equal(same_bits(direct, winograd, 3), !has);
    free_all(direct, 3);
    free_all(winograd, 3);
  }
}

/* ctower's own Winograd (winograd.c) called directly, on every CPU that
 * runs its build, 3x3 and 5x5, on channel counts in multiples of the
 * build's (16 with AVX2, 32 with AVX-512: what the CPU device reports, and
 * what ct_winograd_supports takes): y, dx and dfilter within 1e-4 (3x3) and 2e-4
 * (5x5: sums of more transformed terms, whose coefficients reach 2.5) of
 * the naive loop on 1 and 2 threads, SAME and VALID, sizes of odd and even
 * tiles and a single pixel; and the same bits again from a second run on
 * as many threads. */
static void test_own_winograd(void **state) {
  (void)state;
  /* m: the channel multiple of the build's kernels (16 for AVX2, 32 for
   * AVX-512), the one the CPU device reports */
  const int64_t m = ct_winograd_channel_multiple();
  char description[512], reported[64];
  cpu_description(CT_PRECISION_FP32, CT_CONV_WINOGRAD, description, sizeof description);
  snprintf(reported, sizeof reported, "channels in multiples of %lld)", (long long)m);
  if (m == 0) {
    printf("  not in this build (no AVX2 and FMA): convolutions direct\n");
    assert_null(strstr(description, "ctower's own"));
    return;
  }
  assert_non_null(strstr(description, reported));
  assert_true(ct_winograd_supports(5, m, 2 * m) && !ct_winograd_supports(5, m / 2, m));
  const conv_geom layers[8] = {
      geometry(2, 7, 9, m, 3, 3, 2 * m, 1, 1),  geometry(3, 8, 5, 2 * m, 3, 3, m, 1, 0),
      geometry(2, 6, 6, 3 * m, 3, 3, 4 * m, 1, 1), geometry(2, 1, 1, m, 3, 3, m, 1, 1),
      geometry(2, 7, 9, m, 5, 5, 2 * m, 1, 1),  geometry(3, 9, 6, 2 * m, 5, 5, m, 1, 0),
      geometry(2, 14, 14, 2 * m, 5, 5, 4 * m, 1, 1), geometry(2, 1, 1, m, 5, 5, m, 1, 1)};
  for (int i = 0; i < 16; ++i) {
    const conv_geom g = layers[i % 8];
    const int threads = 1 + i / 8;
    const ct_winograd_shape s = {g.R, g.N, g.H, g.W, g.C, g.P, g.Q, g.K, g.pad_h, g.pad_w};
    const int64_t nx = g.N * g.H * g.W * g.C, ny = g.N * g.P * g.Q * g.K;
    const int64_t nf = g.R * g.S * g.C * g.K;
    float *X = malloc((size_t)nx * 4), *F = malloc((size_t)nf * 4), *DY = malloc((size_t)ny * 4);
    ct_test_fill_uniform(X, nx, 1 + (uint64_t)i, -1, 1);
    ct_test_fill_uniform(F, nf, 2 + (uint64_t)i, -1, 1);
    ct_test_fill_uniform(DY, ny, 3 + (uint64_t)i, -1, 1);
    float *ref[3] = {calloc((size_t)ny, 4), calloc((size_t)nx, 4), calloc((size_t)nf, 4)};
    FOR_EACH_TAP(g, {
      ref[0][yi] += X[xi] * F[fi];
      ref[1][xi] += DY[yi] * F[fi];
      ref[2][fi] += DY[yi] * X[xi];
    });
    size_t bytes = ct_winograd_forward_scratch(&s, threads);
    const size_t data_bytes = ct_winograd_backward_data_scratch(&s, threads);
    const size_t filter_bytes = ct_winograd_backward_filter_scratch(&s, threads);
    bytes = bytes > data_bytes ? bytes : data_bytes;
    bytes = bytes > filter_bytes ? bytes : filter_bytes;
    void *scratch = malloc(bytes);
    const int64_t n[3] = {ny, nx, nf};
    float *got[2][3];
    for (int run = 0; run < 2; ++run) {
      for (int k = 0; k < 3; ++k) got[run][k] = malloc((size_t)n[k] * 4);
      ct_winograd_forward(&s, X, F, NULL, got[run][0], scratch, threads);
      ct_winograd_backward_data(&s, F, DY, got[run][1], scratch, threads);
      ct_winograd_backward_filter(&s, X, DY, got[run][2], scratch, threads);
    }
    static const char *const what[3] = {"y", "dx", "dfilter"};
    for (int k = 0; k < 3; ++k) {
      char name[80];
      snprintf(name, sizeof name, "%s, %lldx%lld by %lldx%lld, %lld to %lld, %d thread(s)",
               what[k], (long long)g.H, (long long)g.W, (long long)g.R, (long long)g.S,
               (long long)g.C, (long long)g.K, threads);
      expect_close_floats(name, got[0][k], ref[k], n[k], g.R == 5 ? 2e-4 : 1e-4);
      assert_memory_equal(got[0][k], got[1][k], (size_t)n[k] * 4);
      free(got[0][k]), free(got[1][k]), free(ref[k]);
    }
    free(scratch), free(X), free(F), free(DY);
  }
}

/* conv_algorithm auto on devices of 1 and 2 threads: Winograd for 3x3 (and
 * 5x5 where the device reports it) stride-1 layers of as many channels in
 * and out as the device reports where the CPU has it
 * (bits other than the direct convolution's), the direct convolution's bits
 * on narrower layers, all within 1e-4 of the naive loop. */
static void test_conv2d_auto_algorithm(void **state) {
  (void)state;
  const int64_t layers[4][3] = {{16, 16, 3}, {16, 32, 3}, {32, 32, 3}, {32, 64, 5}}; /* in, out, taps */
  for (int i = 0; i < 8; ++i) {
    g_threads = 1 + i / 4;
    const int64_t in = layers[i % 4][0], out = layers[i % 4][1], taps = layers[i % 4][2];
    const conv_geom cg = geometry(2, 12, 12, in, taps, taps, out, 1, 1);
    ct_tensor *direct[3], *chosen[3];
    check_conv_geometry(cg, 1, 1e-4, direct);
    g_conv_algorithm = CT_CONV_AUTO;
    check_conv_geometry(cg, 1, taps == 5 ? 2e-4 : 1e-4, chosen);
    g_conv_algorithm = CT_CONV_DIRECT;
    const int winograd = winograd_takes(CT_CONV_AUTO, (int)taps, in, out);
    printf("  %lldx%lld, %lld to %lld channels, %d thread(s): %s\n", (long long)taps,
           (long long)taps, (long long)in, (long long)out, g_threads,
           winograd ? "Winograd" : "direct");
    assert_int_equal(same_bits(direct, chosen, 3), !winograd);
    free_all(direct, 3);
    free_all(chosen, 3);
  }
  g_threads = 2;
}

/* train.precision bf16 rounds the inputs of products to 8 significant bits
 * (relative error 2^-9 each) and sums in fp32: within 3e-2 of the naive
 * loop for these sums of up to 53 products of numbers in [-1, 1]; not the
 * fp32 bits where the CPU has AVX512_BF16, exactly them where it has not. */
static void test_bf16_convolution_and_matmul(void **state) {
  (void)state;
  const conv_geom cg = geometry(2, 9, 8, 3, 5, 3, 4, 1, 1);
  ct_tensor *fp32[7], *bf16[7];
  check_conv_geometry(cg, 1, 1e-4, fp32);
  check_matmul(1e-4, fp32 + 3);
  g_precision = CT_PRECISION_BF16;
  check_conv_geometry(cg, 1, 3e-2, bf16);
  check_matmul(3e-2, bf16 + 3);
  g_precision = CT_PRECISION_FP32;
  const int has = cpu_reports(CT_PRECISION_BF16, CT_CONV_DIRECT, "math: bf16");
  printf("  bf16 %s on this CPU\n", has ? "used" : "not available: fp32");
  for (int i = 0; i < 7; ++i) assert_int_equal(same_bits(fp32 + i, bf16 + i, 1), !has);
  free_all(fp32, 7);
  free_all(bf16, 7);
}

/* The bfloat16 nearest x, ties to an even last bit, found by comparing x
 * with the two bfloat16 numbers around it in double precision (x finite,
 * normal). */
static uint16_t nearest_bf16(float x) {
  uint32_t bits;
  memcpy(&bits, &x, sizeof bits);
  const uint32_t below = bits & 0xffff0000u, above = below + 0x10000u; /* in magnitude */
  float lo, hi;
  memcpy(&lo, &below, sizeof lo);
  memcpy(&hi, &above, sizeof hi); /* past the largest float: infinity */
  const double to_lo = fabs((double)x - lo), to_hi = isinf(hi) ? ldexp(1.0, 104) : fabs(hi - (double)x);
  if (to_lo != to_hi) return (uint16_t)((to_lo < to_hi ? below : above) >> 16);
  return (uint16_t)(((below >> 16) & 1u) ? above >> 16 : below >> 16);
}

/* ct_round_to_bf16 on ties, the largest float, NaNs, infinities, zeros,
 * subnormals and random floats of every magnitude, on 1 and 2 threads, in
 * lengths that leave a remainder to the last thread's loop. */
static void test_round_to_bf16(void **state) {
  (void)state;
  const uint32_t special[] = {0x3f808000u, 0x3f818000u, 0xbf808000u, 0x3f807fffu, 0x7f7fffffu,
                              0xff7fffffu, 0x7f800000u, 0xff800000u, 0x7f800001u, 0xffc00000u,
                              0x00000000u, 0x80000000u, 0x00000001u, 0x807fffffu, 0x00800000u};
  const int n_special = (int)(sizeof special / sizeof special[0]);
  const int64_t lengths[] = {31, 1000, 100003}; /* 31: all in the remainder loop */
  for (int li = 0; li < 3; ++li) {
    const int64_t n = lengths[li];
    float *in = malloc((size_t)n * sizeof *in);
    uint16_t *out = malloc((size_t)n * sizeof *out);
    uint64_t state64 = 12345;
    for (int64_t i = 0; i < n; ++i) {
      uint32_t bits = i < n_special ? special[i] : special[i % n_special];
      if (i >= n_special && i % 3 != 0) { /* random bits: any sign, exponent and mantissa */
        state64 = state64 * 6364136223846793005ull + 1442695040888963407ull;
        bits = (uint32_t)(state64 >> 32);
      }
      memcpy(&in[i], &bits, sizeof bits);
    }
    for (int threads = 1; threads <= 2; ++threads) {
      memset(out, 0, (size_t)n * sizeof *out);
      ct_round_to_bf16(in, out, n, threads);
      for (int64_t i = 0; i < n; ++i) {
        uint32_t bits;
        memcpy(&bits, &in[i], sizeof bits);
        const uint32_t sign = bits & 0x80000000u;
        uint16_t want;
        if (isnan(in[i]))
          want = (uint16_t)((bits >> 16) | 0x0040u); /* quiet, payload and sign kept */
        else if (fpclassify(in[i]) == FP_SUBNORMAL || in[i] == 0.0f)
          want = (uint16_t)(sign >> 16);
        else if (isinf(in[i]))
          want = (uint16_t)(bits >> 16);
        else
          want = nearest_bf16(in[i]);
        if (out[i] != want)
          fail_msg("n %lld, %d threads: element %lld, float bits 0x%08x: 0x%04x, want 0x%04x",
                   (long long)n, threads, (long long)i, bits, out[i], want);
      }
    }
    free(in);
    free(out);
  }
}

/* ---- pooling --------------------------------------------------------------------- */

/* Pooling of kh x kw windows at strides sh, sw over [2, 7, 6, C] and its
 * gradient against the naive loop; with `ties`, x takes only a few values
 * (as after a ReLU), so that windows hold their maximum more than once:
 * MaxPool's gradient goes to the first in the window. */
static void check_pool(int is_max, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int same,
                       int64_t C, int ties) {
  const int64_t N = 2, H = 7, W = 6;
  ct_window wh = ct_window_of(H, kh, sh, same), ww = ct_window_of(W, kw, sw, same);
  ct_shape shapes[2] = {ct_shape_of(4, N, H, W, C), ct_shape_of(4, N, wh.out, ww.out, C)};
  op_run r;
  run_begin(&r, 2, shapes, 21);
  for (int64_t i = 0; ties && i < N * H * W * C; ++i)
    input(&r, 0)[i] = floorf(input(&r, 0)[i] * 1.5f) > 0 ? floorf(input(&r, 0)[i] * 1.5f) : 0;
  ct_padding pad = same ? CT_PADDING_SAME : CT_PADDING_VALID;
  ct_output y = is_max ? ct_max_pool_hw(r.g, r.in[0], (int)kh, (int)kw, (int)sh, (int)sw, pad)
                       : ct_avg_pool_hw(r.g, r.in[0], (int)kh, (int)kw, (int)sh, (int)sw, pad);
  ct_output xs[1] = {r.in[0]}, grads[1];
  ct_gradients(r.g, ct_reduce_sum(r.g, ct_mul(r.g, y, r.in[1]), 0, 0), 1, xs, grads);
  ct_output fetches[2] = {y, grads[0]};
  ct_tensor *out[2];
  run_fetch(&r, 2, fetches, out);
  const float *X = input(&r, 0), *DY = input(&r, 1);
  int64_t ny = N * wh.out * ww.out * C, nx = N * H * W * C;
  float *y_ref = calloc((size_t)ny, 4), *dx_ref = calloc((size_t)nx, 4);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t p = 0; p < wh.out; ++p)
      for (int64_t q = 0; q < ww.out; ++q)
        for (int64_t c = 0; c < C; ++c) {
          int64_t yi = ((n * wh.out + p) * ww.out + q) * C + c, best = -1, count = 0;
          double acc = 0;
          for (int64_t a = 0; a < kh; ++a)
            for (int64_t b = 0; b < kw; ++b) {
              int64_t h = p * sh + a - wh.pad_before, w = q * sw + b - ww.pad_before;
              if (h < 0 || h >= H || w < 0 || w >= W) continue;
              int64_t xi = ((n * H + h) * W + w) * C + c;
              if (best < 0 || X[xi] > X[best]) best = xi;
              acc += X[xi];
              ++count;
            }
          if (is_max) {
            y_ref[yi] = X[best];
            dx_ref[best] += DY[yi];
          } else {
            y_ref[yi] = (float)(acc / (double)count);
            for (int64_t a = 0; a < kh; ++a)
              for (int64_t b = 0; b < kw; ++b) {
                int64_t h = p * sh + a - wh.pad_before, w = q * sw + b - ww.pad_before;
                if (h < 0 || h >= H || w < 0 || w >= W) continue;
                dx_ref[((n * H + h) * W + w) * C + c] += DY[yi] / (float)count;
              }
          }
        }
  char what[64];
  snprintf(what, sizeof what, "%s %lldx%lld/%lldx%lld %s, C %lld%s",
           is_max ? "MaxPool" : "AvgPool", (long long)kh, (long long)kw, (long long)sh,
           (long long)sw, same ? "SAME" : "VALID", (long long)C, ties ? ", ties" : "");
  expect_close(what, out[0], y_ref, ny, 1e-5);
  strcat(what, " grad");
  expect_close(what, out[1], dx_ref, nx, 1e-5);
  free(y_ref), free(dx_ref);
  ct_tensor_free(out[0]), ct_tensor_free(out[1]);
  run_end(&r);
}

/* Windows that overlap (3x3/2) and windows that do not, with and without
 * padding, and with rows and columns no window covers (2x2/3, 3x3/3
 * VALID); 3x3/3 SAME clips its first and last windows. Where windows do
 * not overlap, MaxPool's gradient is ctower's own loop: 70 and 19 channels
 * take its vectors and the channels after them. */
static void test_pooling(void **state) {
  (void)state;
  check_pool(1, 2, 2, 2, 2, 0, 3, 0);
  check_pool(1, 3, 3, 2, 2, 1, 3, 0);
  check_pool(1, 2, 2, 2, 2, 0, 70, 1);
  check_pool(1, 3, 3, 2, 2, 1, 70, 1);
  check_pool(1, 2, 2, 2, 2, 1, 3, 0);
  check_pool(1, 2, 2, 3, 3, 0, 70, 1);
  check_pool(1, 2, 2, 3, 3, 1, 5, 1);
  check_pool(1, 3, 3, 3, 3, 1, 70, 1);
  check_pool(1, 3, 3, 3, 3, 0, 19, 0);
  check_pool(0, 2, 2, 2, 2, 0, 3, 0);
  check_pool(0, 3, 3, 2, 2, 1, 3, 0);
  /* windows and strides that differ along H and W (tf.nn.max_pool's
   * ksize=[1, 2, 3, 1]): overlapping along one axis only, and apart */
  check_pool(1, 2, 3, 1, 2, 1, 70, 1);
  check_pool(1, 3, 2, 3, 2, 0, 19, 1);
  check_pool(1, 1, 3, 2, 3, 1, 5, 0);
  check_pool(0, 2, 3, 1, 2, 1, 3, 0);
  check_pool(0, 3, 1, 2, 1, 0, 3, 0);
}

/* ---- LRN (TensorFlow's definition) ------------------------------------------------- */

/* LRN of input 0 and its gradient for the upstream gradient input 1, into
 * out[0] and out[1] (the caller's). */
static void run_lrn(op_run *r, int64_t radius, float bias, float alpha, float beta,
                    ct_tensor **out) {
  ct_output y = ct_lrn(r->g, r->in[0], (int)radius, bias, alpha, beta);
  ct_output xs[1] = {r->in[0]}, grads[1];
  ct_gradients(r->g, ct_reduce_sum(r->g, ct_mul(r->g, y, r->in[1]), 0, 0), 1, xs, grads);
  ct_output fetches[2] = {y, grads[0]};
  run_fetch(r, 2, fetches, out);
}

static void check_lrn(int64_t C, int64_t radius) {
  const int64_t N = 2, H = 3, W = 4;
  const float bias = 1.0f, alpha = 0.001f / 9.0f * 50, beta = 0.75f;
  ct_shape shapes[2] = {ct_shape_of(4, N, H, W, C), ct_shape_of(4, N, H, W, C)};
  op_run r;
  run_begin(&r, 2, shapes, 31);
  ct_tensor *out[2];
  run_lrn(&r, radius, bias, alpha, beta, out);
  const float *X = input(&r, 0), *DY = input(&r, 1);
  const int64_t total = N * H * W * C;
  float *y_ref = calloc((size_t)total, 4), *dx_ref = calloc((size_t)total, 4);
  for (int64_t row = 0; row < N * H * W; ++row) {
    const float *x = X + row * C;
    const float *dy = DY + row * C;
    double scale[64];
    for (int64_t c = 0; c < C; ++c) {
      double sum = 0;
      for (int64_t j = c - radius; j <= c + radius; ++j)
        if (j >= 0 && j < C) sum += (double)x[j] * x[j];
      scale[c] = bias + alpha * sum;
      y_ref[row * C + c] = (float)(x[c] * pow(scale[c], -beta));
    }
    /* dy_c/dx_j = [c==j] s_c^-b - 2 a b x_c x_j s_c^(-b-1) for |c-j| <= r */
    for (int64_t j = 0; j < C; ++j) {
      double g = 0;
      for (int64_t c = j - radius; c <= j + radius; ++c) {
        if (c < 0 || c >= C) continue;
        double d = -2.0 * alpha * beta * x[c] * x[j] * pow(scale[c], -beta - 1);
        if (c == j) d += pow(scale[c], -beta);
        g += dy[c] * d;
      }
      dx_ref[row * C + j] = (float)g;
    }
  }
  char name[64];
  snprintf(name, sizeof name, "LRN, %lld channels, radius %lld", (long long)C, (long long)radius);
  expect_close(name, out[0], y_ref, total, 1e-4);
  snprintf(name, sizeof name, "LRNGrad, %lld channels, radius %lld", (long long)C,
           (long long)radius);
  expect_close(name, out[1], dx_ref, total, 1e-4);
  free(y_ref), free(dx_ref);
  ct_tensor_free(out[0]), ct_tensor_free(out[1]);
  run_end(&r);
}

/* Radius 0 and more than 16 channels with radius 3 included: oneDNN 2.6's
 * LRN backward crashed on the first and was wrong on the second. */
static void test_lrn(void **state) {
  (void)state;
  for (int64_t radius = 0; radius <= 3; ++radius) {
    check_lrn(9, radius);
    check_lrn(24, radius);
  }
  check_lrn(64, 4); /* cifar10_cnn's norm1 and norm2 */
}

/* LRN and its gradient against PyTorch's torch.nn.functional.local_response_norm
 * (Debian's python3-torch; skipped without it), with cifar10_cnn's
 * parameters. torch divides alpha by the window size (size = 2 radius + 1)
 * and takes NCHW, so it gets alpha * size and the transposed input. */
static const char k_torch_lrn[] =
    "import sys, numpy as np, torch\n"
    "n, h, w, c, r, bias, alpha, beta = sys.argv[2:10]\n"
    "n, h, w, c, r = int(n), int(h), int(w), int(c), int(r)\n"
    "raw = np.fromfile(sys.argv[1] + '/in', dtype='<f4').reshape(2, n, h, w, c)\n"
    "x = torch.tensor(raw[0]).permute(0, 3, 1, 2).double().requires_grad_()\n"
    "dy = torch.tensor(raw[1]).permute(0, 3, 1, 2).double()\n"
    "size = 2 * r + 1\n"
    "y = torch.nn.functional.local_response_norm(x, size, float(alpha) * size, float(beta),"
    " float(bias))\n"
    "(y * dy).sum().backward()\n"
    "out = torch.stack([y.detach(), x.grad]).permute(0, 1, 3, 4, 2)\n"
    "out.float().numpy().astype('<f4').tofile(sys.argv[1] + '/out')\n";

static void test_lrn_matches_pytorch(void **state) {
  (void)state;
  if (system("/usr/bin/python3 -c 'import torch, numpy' 2>/dev/null") != 0) skip();
  const int64_t N = 2, H = 3, W = 5, C = 64, radius = 4;
  const float bias = 1.0f, alpha = 0.001f / 9.0f, beta = 0.75f;
  const int64_t total = N * H * W * C;
  ct_shape shapes[2] = {ct_shape_of(4, N, H, W, C), ct_shape_of(4, N, H, W, C)};
  op_run r;
  run_begin(&r, 2, shapes, 57);
  /* values of a ReLU output's size, where alpha / 9 still matters */
  for (int64_t i = 0; i < total; ++i) ct_tensor_f32(r.value[0])[i] *= 20.0f;
  ct_tensor *out[2];
  run_lrn(&r, radius, bias, alpha, beta, out);

  char *dir = ct_test_tmpdir(), path[1200], command[4096];
  float *buf = malloc((size_t)(2 * total) * sizeof *buf);
  assert_non_null(buf);
  memcpy(buf, input(&r, 0), (size_t)total * sizeof *buf);
  memcpy(buf + total, input(&r, 1), (size_t)total * sizeof *buf);
  snprintf(path, sizeof path, "%s/in", dir);
  assert_int_equal(ct_test_write_file(path, buf, (size_t)(2 * total) * sizeof *buf), 0);
  snprintf(path, sizeof path, "%s/lrn.py", dir);
  assert_int_equal(ct_test_write_file(path, k_torch_lrn, strlen(k_torch_lrn)), 0);
  snprintf(command, sizeof command,
           "/usr/bin/python3 %s %s %lld %lld %lld %lld %lld %.9g %.9g %.9g", path, dir,
           (long long)N, (long long)H, (long long)W, (long long)C, (long long)radius, (double)bias,
           (double)alpha, (double)beta);
  assert_int_equal(system(command), 0);
  snprintf(path, sizeof path, "%s/out", dir);
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  assert_int_equal(fread(buf, sizeof *buf, (size_t)(2 * total), f), (size_t)(2 * total));
  fclose(f);
  expect_close("LRN against PyTorch, radius 4", out[0], buf, total, 1e-5);
  expect_close("LRNGrad against PyTorch, radius 4", out[1], buf + total, total, 1e-5);
  free(buf);
  ct_test_remove_dir(dir);
  ct_tensor_free(out[0]), ct_tensor_free(out[1]);
  run_end(&r);
}

/* ---- batch norm ---------------------------------------------------------------------- */

/* FusedBatchNorm against a naive loop in double, on x drawn from [-1, 1]
 * plus `offset`, its first row (which the kernel's sums are shifted by)
 * `outlier` more. */
static void check_batch_norm(float offset, float outlier) {
  const int64_t R = 6 * 5, C = 4;
  ct_shape shapes[3] = {ct_shape_of(4, (int64_t)6, (int64_t)5, (int64_t)1, C), ct_shape_of(1, C),
                        ct_shape_of(1, C)};
  op_run r;
  run_begin(&r, 3, shapes, 41);
  ct_initializer zeros = {CT_INIT_ZEROS, 0}, ones = {CT_INIT_ONES, 0};
  ct_output mean = ct_variable(r.g, "mm", ct_shape_of(1, C), zeros, 0);
  ct_output var = ct_variable(r.g, "mv", ct_shape_of(1, C), ones, 0);
  ct_output y = ct_batch_norm(r.g, r.in[0], r.in[1], r.in[2], mean, var, 1, 0.9f, 1e-3f);
  assert_int_equal(ct_graph_update_op_count(r.g), 2);
  ct_output fetches[1] = {y};
  ct_tensor *out[1];
  float *x = ct_tensor_f32(r.value[0]);
  for (int64_t i = 0; i < R * C; ++i) x[i] += offset + (i < C ? outlier : 0.0f);
  run_fetch(&r, 1, fetches, out);
  const float *X = input(&r, 0), *G = input(&r, 1), *B = input(&r, 2);
  float *ref = calloc((size_t)(R * C), 4);
  for (int64_t c = 0; c < C; ++c) {
    double m = 0, v = 0;
    for (int64_t i = 0; i < R; ++i) m += X[i * C + c];
    m /= (double)R;
    for (int64_t i = 0; i < R; ++i) v += (X[i * C + c] - m) * (X[i * C + c] - m);
    v /= (double)R;
    for (int64_t i = 0; i < R; ++i)
      ref[i * C + c] = (float)(G[c] * (X[i * C + c] - m) / sqrt(v + 1e-3) + B[c]);
  }
  printf("  x in [-1, 1] + %g, its first row %g more\n", offset, outlier);
  expect_close("FusedBatchNorm training", out[0], ref, R * C, 1e-4);
  free(ref);
  ct_tensor_free(out[0]);
  run_end(&r);
}

static void test_batch_norm(void **state) {
  (void)state;
  check_batch_norm(0.0f, 0.0f);
  check_batch_norm(100.0f, 5.0f);
}

/* FusedBatchNorm (with relu, its ReLU fused) and its gradient over 115
 * channels (blocks of 64, 32 and 16 and 3 more, each computed its own way:
 * batch_norm.c) against naive loops: y, and for the loss sum(y * w) dx,
 * dgamma and dbeta. */
static void check_batch_norm_blocks(int relu) {
  const int64_t R = 3 * 5 * 4, C = 64 + 32 + 16 + 3;
  ct_shape shapes[4] = {ct_shape_of(4, (int64_t)3, (int64_t)5, (int64_t)4, C), ct_shape_of(1, C),
                        ct_shape_of(1, C), ct_shape_of(4, (int64_t)3, (int64_t)5, (int64_t)4, C)};
  op_run r;
  run_begin(&r, 4, shapes, 43);
  ct_initializer zeros = {CT_INIT_ZEROS, 0}, ones = {CT_INIT_ONES, 0};
  ct_output mean = ct_variable(r.g, "mm", ct_shape_of(1, C), zeros, 0);
  ct_output var = ct_variable(r.g, "mv", ct_shape_of(1, C), ones, 0);
  ct_output y = (relu ? ct_batch_norm_relu : ct_batch_norm)(r.g, r.in[0], r.in[1], r.in[2], mean,
                                                            var, 1, 0.9f, 1e-3f);
  ct_output xs[3] = {r.in[0], r.in[1], r.in[2]}, grads[3];
  ct_gradients(r.g, ct_reduce_sum(r.g, ct_mul(r.g, y, r.in[3]), 0, 0), 3, xs, grads);
  ct_output fetches[4] = {y, grads[0], grads[1], grads[2]};
  ct_tensor *out[4];
  run_fetch(&r, 4, fetches, out);
  const float *X = input(&r, 0), *G = input(&r, 1), *B = input(&r, 2), *DY = input(&r, 3);
  float *y_ref = calloc((size_t)(R * C), 4), *dx_ref = calloc((size_t)(R * C), 4);
  float *dg_ref = calloc((size_t)C, 4), *db_ref = calloc((size_t)C, 4);
  for (int64_t c = 0; c < C; ++c) {
    double m = 0, v = 0, db = 0, dg = 0;
    for (int64_t i = 0; i < R; ++i) m += X[i * C + c];
    m /= (double)R;
    for (int64_t i = 0; i < R; ++i) v += (X[i * C + c] - m) * (X[i * C + c] - m);
    const double inv_std = 1.0 / sqrt(v / (double)R + 1e-3);
    /* the gradient of the batch norm's output: through its ReLU with relu */
    double *dz = calloc((size_t)R, sizeof *dz);
    for (int64_t i = 0; i < R; ++i) {
      const double xhat = (X[i * C + c] - m) * inv_std, z = G[c] * xhat + B[c];
      y_ref[i * C + c] = (float)(relu && z <= 0 ? 0 : z);
      dz[i] = relu && z <= 0 ? 0 : DY[i * C + c];
      db += dz[i];
      dg += dz[i] * xhat;
    }
    for (int64_t i = 0; i < R; ++i) {
      const double xhat = (X[i * C + c] - m) * inv_std;
      dx_ref[i * C + c] = (float)(G[c] * inv_std / (double)R * ((double)R * dz[i] - db - xhat * dg));
    }
    free(dz);
    dg_ref[c] = (float)dg, db_ref[c] = (float)db;
  }
  printf("  %s\n", relu ? "with its ReLU" : "without a ReLU");
  expect_close("FusedBatchNorm, 115 channels", out[0], y_ref, R * C, 1e-4);
  expect_close("FusedBatchNormGrad dx, 115 channels", out[1], dx_ref, R * C, 1e-4);
  expect_close("FusedBatchNormGrad dgamma, 115 channels", out[2], dg_ref, C, 1e-4);
  expect_close("FusedBatchNormGrad dbeta, 115 channels", out[3], db_ref, C, 1e-4);
  free(y_ref), free(dx_ref), free(dg_ref), free(db_ref);
  free_all(out, 4);
  run_end(&r);
}

static void test_batch_norm_channel_blocks(void **state) {
  (void)state;
  check_batch_norm_blocks(0);
}

/* ct_batch_norm_relu: the ReLU in the batch norm's op, forward and backward,
 * and the same bits as a batch norm followed by a ReLU. */
static void test_batch_norm_relu(void **state) {
  (void)state;
  check_batch_norm_blocks(1);
  const int64_t C = 19;
  ct_shape shapes[4] = {ct_shape_of(2, (int64_t)40, C), ct_shape_of(1, C), ct_shape_of(1, C),
                        ct_shape_of(2, (int64_t)40, C)};
  op_run r;
  run_begin(&r, 4, shapes, 47);
  ct_output none = {NULL, 0}, xs[3] = {r.in[0], r.in[1], r.in[2]}, fused_grads[3], plain_grads[3];
  ct_output fused = ct_batch_norm_relu(r.g, r.in[0], r.in[1], r.in[2], none, none, 1, 0.9f, 1e-3f);
  ct_output plain =
      ct_relu(r.g, ct_batch_norm(r.g, r.in[0], r.in[1], r.in[2], none, none, 1, 0.9f, 1e-3f));
  ct_gradients(r.g, ct_reduce_sum(r.g, ct_mul(r.g, fused, r.in[3]), 0, 0), 3, xs, fused_grads);
  ct_gradients(r.g, ct_reduce_sum(r.g, ct_mul(r.g, plain, r.in[3]), 0, 0), 3, xs, plain_grads);
  ct_output fetches[8] = {fused, fused_grads[0], fused_grads[1], fused_grads[2],
                          plain, plain_grads[0], plain_grads[1], plain_grads[2]};
  ct_tensor *out[8];
  run_fetch(&r, 8, fetches, out);
  assert_true(same_bits(out, out + 4, 4));
  free_all(out, 8);
  run_end(&r);
}

/* AddN of 3 inputs over 3 blocks and a part of the kernel's (4096
 * elements each): the sums in input order, so exactly the naive loop's. */
static void test_add_n(void **state) {
  (void)state;
  const int64_t n = 3 * 4096 + 123;
  ct_shape shapes[3] = {ct_shape_of(1, n), ct_shape_of(1, n), ct_shape_of(1, n)};
  op_run r;
  run_begin(&r, 3, shapes, 53);
  ct_output y = ct_add_n(r.g, 3, r.in);
  ct_tensor *got;
  run_fetch(&r, 1, &y, &got);
  float *want = calloc((size_t)n, sizeof *want);
  for (int64_t i = 0; i < n; ++i) want[i] = input(&r, 0)[i] + input(&r, 1)[i] + input(&r, 2)[i];
  assert_memory_equal(ct_tensor_f32(got), want, (size_t)n * sizeof *want);
  printf("  AddN of 3, %lld elements: the naive loop's bits\n", (long long)n);
  free(want);
  ct_tensor_free(got);
  run_end(&r);
}

/* ---- broadcasting, reductions, shapes ---------------------------------------------- */

static void test_broadcast_and_reduce(void **state) {
  (void)state;
  ct_shape shapes[2] = {ct_shape_of(3, (int64_t)4, (int64_t)1, (int64_t)5),
                        ct_shape_of(2, (int64_t)3, (int64_t)1)};
  op_run r;
  run_begin(&r, 2, shapes, 51);
  ct_output sum = ct_add(r.g, r.in[0], r.in[1]);  /* [4, 3, 5] */
  ct_output quot = ct_div(r.g, r.in[0], ct_add(r.g, r.in[1], ct_scalar(r.g, 3.0f)));
  ct_output red = ct_reduce_sum(r.g, sum, 0x5, 0); /* over axes 0 and 2 -> [3] */
  ct_output mean = ct_reduce_mean(r.g, sum, 0x2, 1); /* [4, 1, 5] */
  /* one operand of the output's shape, the other repeated along its middle axis */
  ct_output scaled = ct_mul(r.g, sum, mean), centered = ct_sub(r.g, mean, sum);
  ct_output fetches[6] = {sum, quot, red, mean, scaled, centered};
  ct_tensor *out[6];
  run_fetch(&r, 6, fetches, out);
  const float *A = input(&r, 0), *B = input(&r, 1);
  float s_ref[60], q_ref[60], red_ref[3] = {0}, mean_ref[20] = {0};
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 5; ++k) {
        s_ref[(i * 3 + j) * 5 + k] = A[i * 5 + k] + B[j];
        q_ref[(i * 3 + j) * 5 + k] = A[i * 5 + k] / (B[j] + 3.0f);
        red_ref[j] += A[i * 5 + k] + B[j];
        mean_ref[i * 5 + k] += (A[i * 5 + k] + B[j]) / 3.0f;
      }
  expect_close("Add broadcast [4,1,5]+[3,1]", out[0], s_ref, 60, 1e-6);
  expect_close("RealDiv broadcast", out[1], q_ref, 60, 1e-6);
  expect_close("Sum over axes 0,2", out[2], red_ref, 3, 1e-5);
  expect_close("Mean over axis 1 keep_dims", out[3], mean_ref, 20, 1e-5);
  float scaled_ref[60], centered_ref[60];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 5; ++k) {
        scaled_ref[(i * 3 + j) * 5 + k] = s_ref[(i * 3 + j) * 5 + k] * mean_ref[i * 5 + k];
        centered_ref[(i * 3 + j) * 5 + k] = mean_ref[i * 5 + k] - s_ref[(i * 3 + j) * 5 + k];
      }
  expect_close("Mul [4,3,5]*[4,1,5]", out[4], scaled_ref, 60, 1e-5);
  expect_close("Sub [4,1,5]-[4,3,5]", out[5], centered_ref, 60, 1e-5);
  for (int i = 0; i < 6; ++i) ct_tensor_free(out[i]);
  run_end(&r);
}

/* A bias gradient, SumLike [rows, m] -> [m], against sums in double; its
 * bits do not depend on the thread count. Blocks of 4 vectors of columns
 * and fewer, and columns after the last vector (16 or 8 floats): m of 123
 * takes blocks of 4 and 3 vectors either way, 83 of 4 and 1 or 4 and 2;
 * 3000 rows, every chunk of rows. */
static void check_bias_gradient(int64_t m) {
  enum { ROWS = 3000 };
  ct_shape shapes[2] = {ct_shape_of(2, (int64_t)ROWS, m), ct_shape_of(1, m)};
  ct_tensor *out[2];
  for (int run = 0; run < 2; ++run) {
    op_run r;
    run_begin(&r, 2, shapes, 61);
    ct_output sum = ct_sum_like(r.g, r.in[0], r.in[1]);
    g_threads = 1 + run;
    run_fetch(&r, 1, &sum, &out[run]);
    g_threads = 2;
    double *ref = calloc((size_t)m, sizeof *ref);
    float *ref_f = calloc((size_t)m, sizeof *ref_f);
    for (int64_t i = 0; i < ROWS * m; ++i) ref[i % m] += input(&r, 0)[i];
    for (int64_t j = 0; j < m; ++j) ref_f[j] = (float)ref[j];
    char what[64];
    snprintf(what, sizeof what, "SumLike [3000, %lld] -> [%lld], %d thread%s", (long long)m,
             (long long)m, 1 + run, run ? "s" : "");
    expect_close(what, out[run], ref_f, m, 1e-3);
    free(ref), free(ref_f);
    run_end(&r);
  }
  assert_memory_equal(out[0]->data, out[1]->data, (size_t)m * sizeof(float));
  ct_tensor_free(out[0]), ct_tensor_free(out[1]);
}

static void test_bias_gradient(void **state) {
  (void)state;
  check_bias_gradient(123);
  check_bias_gradient(83);
}

static void test_concat_split(void **state) {
  (void)state;
  ct_shape shapes[2] = {ct_shape_of(2, (int64_t)3, (int64_t)2), ct_shape_of(2, (int64_t)3, (int64_t)4)};
  op_run r;
  run_begin(&r, 2, shapes, 61);
  ct_output joined = ct_concat(r.g, 2, r.in, 1);
  ct_output parts[3];
  ct_split(r.g, joined, 1, 3, parts);
  ct_output fetches[2] = {joined, parts[1]};
  ct_tensor *out[2];
  run_fetch(&r, 2, fetches, out);
  float ref[18], part_ref[6];
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 2; ++j) ref[i * 6 + j] = input(&r, 0)[i * 2 + j];
    for (int j = 0; j < 4; ++j) ref[i * 6 + 2 + j] = input(&r, 1)[i * 4 + j];
    for (int j = 0; j < 2; ++j) part_ref[i * 2 + j] = ref[i * 6 + 2 + j];
  }
  expect_close("ConcatV2 axis 1", out[0], ref, 18, 0);
  expect_close("Split axis 1, part 1 of 3", out[1], part_ref, 6, 0);
  ct_tensor_free(out[0]), ct_tensor_free(out[1]);
  run_end(&r);
}

/* Split of [3, 7] along axis 1 into parts of 2, 0, 4 and the rest (1)
 * against naive copies; sizes that do not sum to 7 are refused. */
static void test_split_sizes(void **state) {
  (void)state;
  ct_shape shapes[1] = {ct_shape_of(2, (int64_t)3, (int64_t)7)};
  op_run r;
  run_begin(&r, 1, shapes, 62);
  const int64_t sizes[4] = {2, 0, 4, -1}, want_sizes[4] = {2, 0, 4, 1};
  ct_output parts[4];
  ct_split_sizes(r.g, r.in[0], -1, 4, sizes, parts);
  ct_tensor *out[4];
  run_fetch(&r, 4, parts, out);
  int64_t first = 0;
  for (int k = 0; k < 4; ++k) {
    float ref[3 * 7];
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < want_sizes[k]; ++j)
        ref[i * want_sizes[k] + j] = input(&r, 0)[i * 7 + first + j];
    assert_int_equal(out[k]->shape.dims[1], want_sizes[k]);
    char what[48];
    snprintf(what, sizeof what, "Split sizes, part %d of [2, 0, 4, -1]", k);
    expect_close(what, out[k], ref, 3 * want_sizes[k], 0);
    first += want_sizes[k];
    ct_tensor_free(out[k]);
  }
  ct_split_sizes(r.g, r.in[0], 1, 2, (const int64_t[]){3, 3}, parts);
  assert_null(parts[0].node);
  assert_int_equal(ct_graph_status(r.g)->code, CT_INVALID_ARGUMENT);
  run_end(&r);
}

/* The elements listed per axis, gathered by a naive loop from x [4, 5, 3]. */
typedef struct slice_case {
  const char *what;
  int64_t begin[3], end[3], strides[3];
  unsigned begin_mask, end_mask;
  int n[3];       /* how many indices each axis takes */
  int take[3][5]; /* which */
} slice_case;

static void check_slice(const slice_case *c) {
  const int64_t dims[3] = {4, 5, 3};
  ct_shape shapes[1] = {ct_shape_make(3, dims)};
  op_run r;
  run_begin(&r, 1, shapes, 64);
  ct_output y = ct_strided_slice(r.g, r.in[0], c->begin, c->end, c->strides, c->begin_mask,
                                 c->end_mask);
  ct_tensor *out;
  run_fetch(&r, 1, &y, &out);
  float ref[60];
  int k = 0;
  for (int i = 0; i < c->n[0]; ++i)
    for (int j = 0; j < c->n[1]; ++j)
      for (int l = 0; l < c->n[2]; ++l)
        ref[k++] = input(&r, 0)[(c->take[0][i] * 5 + c->take[1][j]) * 3 + c->take[2][l]];
  for (int d = 0; d < 3; ++d) assert_int_equal(out->shape.dims[d], c->n[d]);
  expect_close(c->what, out, ref, k, 0);
  ct_tensor_free(out);
  run_end(&r);
}

/* StridedSlice with negative indices and strides, masks, clamping and an
 * empty axis; a stride of 0 is refused. */
static void test_strided_slice(void **state) {
  (void)state;
  const slice_case cases[] = {
      {"x[1:3, :, ::2]", {1, 0, 0}, {3, 0, 0}, {1, 1, 2}, 0x6, 0x6, {2, 5, 2},
       {{1, 2}, {0, 1, 2, 3, 4}, {0, 2}}},
      {"x[-1:0:-2, -2:, 2]", {-1, -2, 2}, {0, 0, 3}, {-2, 1, 1}, 0, 0x2, {2, 2, 1},
       {{3, 1}, {3, 4}, {2}}},
      {"x[::-1, -9:99, 1:1]", {0, -9, 1}, {0, 99, 1}, {-1, 1, 1}, 0x1, 0x1, {4, 5, 0},
       {{3, 2, 1, 0}, {0, 1, 2, 3, 4}, {0}}},
      {"x[:, 4:1:-1, -3:]", {0, 4, -3}, {0, 1, 0}, {1, -1, 1}, 0x1, 0x5, {4, 3, 3},
       {{0, 1, 2, 3}, {4, 3, 2}, {0, 1, 2}}},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) check_slice(&cases[k]);
  ct_graph *g = ct_graph_new();
  ct_output x = ct_placeholder(g, "x", CT_F32, ct_shape_of(1, (int64_t)4));
  assert_null(ct_strided_slice(g, x, (const int64_t[]){0}, (const int64_t[]){4},
                               (const int64_t[]){0}, 0, 0).node);
  assert_int_equal(ct_graph_status(g)->code, CT_INVALID_ARGUMENT);
  ct_graph_free(g);
}

/* Transpose of [2, 3, 4, 5] by each of a few permutations against the
 * naive loop; a perm that is no permutation is refused. */
static void test_transpose(void **state) {
  (void)state;
  const int64_t dims[4] = {2, 3, 4, 5};
  const int perms[][4] = {{0, 3, 1, 2}, {3, 2, 1, 0}, {1, 0, 3, 2}, {0, 1, 2, 3}};
  for (size_t p = 0; p < sizeof perms / sizeof perms[0]; ++p) {
    ct_shape shapes[1] = {ct_shape_make(4, dims)};
    op_run r;
    run_begin(&r, 1, shapes, 64);
    ct_output y = ct_transpose(r.g, r.in[0], perms[p]);
    ct_tensor *out;
    run_fetch(&r, 1, &y, &out);
    float ref[120];
    int64_t c[4], k = 0;
    for (c[0] = 0; c[0] < dims[perms[p][0]]; ++c[0])
      for (c[1] = 0; c[1] < dims[perms[p][1]]; ++c[1])
        for (c[2] = 0; c[2] < dims[perms[p][2]]; ++c[2])
          for (c[3] = 0; c[3] < dims[perms[p][3]]; ++c[3]) {
            int64_t at[4];
            for (int d = 0; d < 4; ++d) at[perms[p][d]] = c[d];
            ref[k++] = input(&r, 0)[((at[0] * 3 + at[1]) * 4 + at[2]) * 5 + at[3]];
          }
    for (int d = 0; d < 4; ++d) assert_int_equal(out->shape.dims[d], dims[perms[p][d]]);
    char what[48];
    snprintf(what, sizeof what, "Transpose (%d, %d, %d, %d)", perms[p][0], perms[p][1],
             perms[p][2], perms[p][3]);
    expect_close(what, out, ref, k, 0);
    ct_tensor_free(out);
    run_end(&r);
  }
  ct_graph *g = ct_graph_new();
  ct_output x = ct_placeholder(g, "x", CT_F32, ct_shape_of(2, (int64_t)2, (int64_t)3));
  assert_null(ct_transpose(g, x, (const int[]){1, 1}).node);
  assert_int_equal(ct_graph_status(g)->code, CT_INVALID_ARGUMENT);
  assert_non_null(strstr(ct_graph_status(g)->message, "perm is not a permutation"));
  ct_graph_free(g);
}

/* ---- classification ------------------------------------------------------------------ */

/* ArgMax along each axis of [3, 4, 5] (and axis -2) against the naive scan,
 * the values rounded to tenths so that some maxima tie (the first wins). */
static void test_argmax_along_each_axis(void **state) {
  (void)state;
  const int64_t dims[3] = {3, 4, 5};
  ct_shape shapes[1] = {ct_shape_make(3, dims)};
  op_run r;
  run_begin(&r, 1, shapes, 73);
  float *x = input(&r, 0);
  for (int i = 0; i < 60; ++i) x[i] = roundf(x[i] * 10.0f) / 10.0f;
  const int axes[4] = {0, 1, 2, -2};
  ct_output fetches[4];
  for (int k = 0; k < 4; ++k) fetches[k] = ct_argmax_axis(r.g, r.in[0], axes[k]);
  ct_tensor *out[4];
  run_fetch(&r, 4, fetches, out);
  for (int k = 0; k < 4; ++k) {
    const int axis = axes[k] < 0 ? axes[k] + 3 : axes[k];
    const int64_t stride = axis == 0 ? 20 : axis == 1 ? 5 : 1;
    int64_t j = 0, ties = 0;
    for (int64_t i = 0; i < 60; ++i) {
      if ((i / stride) % dims[axis] != 0) continue; /* i: the first of its line */
      int64_t best = 0;
      for (int64_t c = 1; c < dims[axis]; ++c) {
        ties += x[i + c * stride] == x[i + best * stride];
        if (x[i + c * stride] > x[i + best * stride]) best = c;
      }
      if (ct_tensor_i32(out[k])[j] != best)
        fail_msg("ArgMax axis %d, output %lld: %d, not %lld", axes[k], (long long)j,
                 ct_tensor_i32(out[k])[j], (long long)best);
      ++j;
    }
    assert_int_equal(ct_tensor_elements(out[k]), j);
    printf("  ArgMax axis %2d of [3, 4, 5]: %lld outputs match (%lld ties seen)\n", axes[k],
           (long long)j, (long long)ties);
    ct_tensor_free(out[k]);
  }
  ct_output too_far = ct_argmax_axis(r.g, r.in[0], 3);
  assert_null(too_far.node);
  assert_int_equal(ct_graph_status(r.g)->code, CT_INVALID_ARGUMENT);
  run_end(&r);
}

static void test_cross_entropy_and_accuracy(void **state) {
  (void)state;
  const int64_t N = 6, C = 5;
  ct_shape shapes[1] = {ct_shape_of(2, N, C)};
  op_run r;
  run_begin(&r, 1, shapes, 71);
  int32_t labels[6] = {0, 4, 2, 2, 1, 3};
  ct_tensor lt = {CT_I32, ct_shape_of(1, N), labels, 0};
  ct_output lab = ct_constant(r.g, "labels", &lt);
  ct_output loss = ct_sparse_softmax_cross_entropy(r.g, r.in[0], lab);
  ct_output acc = ct_accuracy(r.g, r.in[0], lab);
  ct_output arg = ct_argmax(r.g, r.in[0]);
  ct_output fetches[3] = {loss, acc, arg};
  ct_tensor *out[3];
  run_fetch(&r, 3, fetches, out);
  const float *Z = input(&r, 0);
  float ref[6];
  int correct = 0;
  for (int64_t n = 0; n < N; ++n) {
    double sum = 0;
    int best = 0;
    for (int64_t c = 0; c < C; ++c) {
      sum += exp(Z[n * C + c]);
      if (Z[n * C + c] > Z[n * C + best]) best = (int)c;
    }
    ref[n] = (float)(log(sum) - Z[n * C + labels[n]]);
    correct += best == labels[n];
    assert_int_equal(ct_tensor_i32(out[2])[n], best);
  }
  float acc_ref = (float)correct / (float)N;
  expect_close("SparseSoftmaxCrossEntropy", out[0], ref, N, 1e-5);
  expect_close("Accuracy", out[1], &acc_ref, 1, 1e-6);
  for (int i = 0; i < 3; ++i) ct_tensor_free(out[i]);
  run_end(&r);
}

/* softmax_cross_entropy_with_logits against -sum labels * log softmax, and
 * its gradient against softmax - labels, in double */
static void test_dense_cross_entropy(void **state) {
  (void)state;
  const int64_t N = 5, C = 7;
  ct_shape shapes[2] = {ct_shape_of(2, N, C), ct_shape_of(2, N, C)};
  op_run r;
  run_begin(&r, 2, shapes, 73);
  float *labels = (float *)input(&r, 1);
  for (int64_t n = 0; n < N; ++n) { /* each row a distribution */
    double total = 0;
    for (int64_t c = 0; c < C; ++c) total += labels[n * C + c] = fabsf(labels[n * C + c]);
    for (int64_t c = 0; c < C; ++c) labels[n * C + c] = (float)(labels[n * C + c] / total);
  }
  ct_output loss = ct_softmax_cross_entropy(r.g, r.in[0], r.in[1]);
  ct_output dz;
  ct_gradients(r.g, ct_reduce_sum(r.g, loss, 0, 0), 1, r.in, &dz);
  ct_output fetches[2] = {loss, dz};
  ct_tensor *out[2];
  run_fetch(&r, 2, fetches, out);
  const float *Z = input(&r, 0);
  float ref[5], grad_ref[35];
  for (int64_t n = 0; n < N; ++n) {
    double max = Z[n * C], sum = 0, l = 0;
    for (int64_t c = 1; c < C; ++c) max = Z[n * C + c] > max ? Z[n * C + c] : max;
    for (int64_t c = 0; c < C; ++c) sum += exp(Z[n * C + c] - max);
    for (int64_t c = 0; c < C; ++c) {
      l -= labels[n * C + c] * (Z[n * C + c] - max - log(sum));
      grad_ref[n * C + c] = (float)(exp(Z[n * C + c] - max) / sum - labels[n * C + c]);
    }
    ref[n] = (float)l;
  }
  expect_close("SoftmaxCrossEntropyWithLogits", out[0], ref, N, 1e-5);
  expect_close("its gradient", out[1], grad_ref, N * C, 1e-5);
  ct_tensor_free(out[0]), ct_tensor_free(out[1]);
  run_end(&r);
}

/* L2Loss against sum x^2 / 2 in double, its gradient against x * dy */
static void test_l2_loss(void **state) {
  (void)state;
  ct_shape shapes[1] = {ct_shape_of(2, (int64_t)7, (int64_t)9)};
  op_run r;
  run_begin(&r, 1, shapes, 83);
  ct_output loss = ct_mul(r.g, ct_l2_loss(r.g, r.in[0]), ct_scalar(r.g, 0.004f));
  ct_output dx;
  ct_gradients(r.g, loss, 1, r.in, &dx);
  ct_output fetches[2] = {loss, dx};
  ct_tensor *out[2];
  run_fetch(&r, 2, fetches, out);
  const float *x = input(&r, 0);
  double sum = 0;
  float grad_ref[63];
  for (int i = 0; i < 63; ++i) {
    sum += (double)x[i] * x[i];
    grad_ref[i] = x[i] * 0.004f;
  }
  float ref = (float)(0.5 * sum) * 0.004f;
  expect_close("L2Loss", out[0], &ref, 1, 1e-6);
  expect_close("its gradient, bit for bit", out[1], grad_ref, 63, 0);
  ct_tensor_free(out[0]), ct_tensor_free(out[1]);
  run_end(&r);
}

/* Equal of argmaxes cast to f32 and averaged (TensorFlow's accuracy) equals
 * Accuracy; Cast converts as C does, element by element. */
static void test_equal_and_cast(void **state) {
  (void)state;
  const int64_t N = 8, C = 3;
  ct_shape shapes[1] = {ct_shape_of(2, N, C)};
  op_run r;
  run_begin(&r, 1, shapes, 79);
  int32_t labels[8] = {0, 1, 2, 0, 1, 2, 2, 1};
  ct_tensor lt = {CT_I32, ct_shape_of(1, N), labels, 0};
  ct_output lab = ct_constant(r.g, "labels", &lt);
  ct_output eq = ct_equal(r.g, ct_argmax(r.g, r.in[0]), lab);
  ct_output mean = ct_reduce_mean(r.g, ct_cast(r.g, eq, CT_F32), 0, 0);
  ct_output to_i32 = ct_cast(r.g, r.in[0], CT_I32);
  ct_output to_i64 = ct_cast(r.g, lab, CT_I64);
  ct_output scalar_eq = ct_equal(r.g, to_i64, ct_cast(r.g, ct_scalar(r.g, 2.0f), CT_I64));
  ct_output fetches[6] = {eq, mean, ct_accuracy(r.g, r.in[0], lab), to_i32, to_i64, scalar_eq};
  ct_tensor *out[6];
  run_fetch(&r, 6, fetches, out);
  const float *Z = input(&r, 0);
  assert_int_equal(out[0]->dtype, CT_U8);
  for (int64_t n = 0; n < N; ++n) {
    int best = 0;
    for (int64_t c = 1; c < C; ++c)
      if (Z[n * C + c] > Z[n * C + best]) best = (int)c;
    assert_int_equal(((uint8_t *)out[0]->data)[n], best == labels[n]);
    assert_int_equal(((int64_t *)out[4]->data)[n], labels[n]);
    assert_int_equal(((uint8_t *)out[5]->data)[n], labels[n] == 2);
  }
  for (int64_t i = 0; i < N * C; ++i) assert_int_equal(ct_tensor_i32(out[3])[i], (int32_t)Z[i]);
  expect_close("Equal, Cast, Mean = Accuracy", out[1], ct_tensor_f32(out[2]), 1, 0);
  for (int i = 0; i < 6; ++i) ct_tensor_free(out[i]);
  run_end(&r);
}

static void test_bad_label_is_an_error(void **state) {
  (void)state;
  ct_graph *g = ct_graph_new();
  ct_output z = ct_placeholder(g, "z", CT_F32, ct_shape_of(2, (int64_t)2, (int64_t)3));
  int32_t labels[2] = {1, 7};
  ct_tensor lt = {CT_I32, ct_shape_of(1, (int64_t)2), labels, 0};
  ct_output loss = ct_sparse_softmax_cross_entropy(g, z, ct_constant(g, "labels", &lt));
  ct_status st = CT_STATUS_INIT;
  ct_session *s = cpu_session(g, 0, &st);
  float zv[6] = {0};
  ct_tensor zt = {CT_F32, ct_shape_of(2, (int64_t)2, (int64_t)3), zv, 0};
  ct_feed feed = {z, &zt};
  ct_tensor *out = NULL;
  assert_int_not_equal(ct_session_run(s, &feed, 1, &loss, 1, NULL, 0, &out, &st), 0);
  assert_int_equal(st.code, CT_INVALID_ARGUMENT);
  assert_non_null(strstr(st.message, "label 7 of example 1"));
  assert_null(out);
  ct_session_free(s);
  ct_graph_free(g);
}

/* ---- dropout ------------------------------------------------------------------------- */

/* Dropout at rate 0.4, given as an attribute or as a tensor fed 0.4 (the
 * second input): each element kept (scaled by 1 / 0.6) exactly where the
 * hash of (the node's stream, the step, the element's index) says, its
 * tail past the last vector of 8 included, and about 40% dropped. */
static void check_dropout_statistics(int rate_as_tensor) {
  const int64_t n = 100003; /* not a multiple of the kernel's 8 lanes */
  ct_shape shapes[2] = {ct_shape_of(1, n), ct_shape_of(0)};
  op_run r;
  run_begin(&r, 1 + rate_as_tensor, shapes, 81);
  for (int64_t i = 0; i < n; ++i) input(&r, 0)[i] = 1.0f;
  if (rate_as_tensor) input(&r, 1)[0] = 0.4f;
  ct_output y = rate_as_tensor ? ct_dropout_tensor(r.g, r.in[0], r.in[1])
                               : ct_dropout(r.g, r.in[0], 0.4f);
  ct_tensor *out;
  run_fetch(&r, 1, &y, &out);
  /* each element kept as the hash of (stream, step 0, index) says */
  const uint64_t stream = y.node->attrs.dropout.stream;
  const uint32_t threshold = (uint32_t)(0.4 * 4294967296.0);
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    float v = ct_tensor_f32(out)[i];
    const uint64_t h = ct_mix64(stream ^ ct_mix64(0 ^ ct_mix64((uint64_t)i)));
    if ((uint32_t)(h >> 32) >= threshold)
      assert_true(fabsf(v - 1.0f / 0.6f) < 1e-6f);
    else
      assert_true(v == 0.0f);
    kept += v != 0.0f;
  }
  double rate = 1.0 - (double)kept / (double)n;
  printf("  Dropout rate 0.4 (%s): measured %.4f\n", rate_as_tensor ? "a tensor" : "an attribute",
         rate);
  assert_true(fabs(rate - 0.4) < 0.01);
  ct_tensor_free(out);
  run_end(&r);
}

static void test_dropout_statistics(void **state) {
  (void)state;
  check_dropout_statistics(0);
  check_dropout_statistics(1);
}

/* A rate tensor outside [0, 1) fails the run naming the node and the
 * keep probability, as TensorFlow refuses a keep_prob outside (0, 1]. */
static void test_dropout_rate_out_of_range(void **state) {
  (void)state;
  ct_shape shapes[2] = {ct_shape_of(1, (int64_t)16), ct_shape_of(0)};
  const float bad[] = {1.0f, -0.5f, NAN};
  for (int k = 0; k < 3; ++k) {
    op_run r;
    run_begin(&r, 2, shapes, 3);
    input(&r, 1)[0] = bad[k];
    ct_output y = ct_dropout_tensor(r.g, r.in[0], r.in[1]);
    ct_status st = CT_STATUS_INIT;
    ct_session *s = cpu_session(r.g, g_threads, &st);
    ct_feed feeds[2] = {{r.in[0], r.value[0]}, {r.in[1], r.value[1]}};
    ct_tensor *out = NULL;
    assert_int_equal(ct_session_run(s, feeds, 2, &y, 1, NULL, 0, &out, &st), 1);
    printf("  rate %g: %s\n", (double)bad[k], st.message);
    assert_int_equal(st.code, CT_INVALID_ARGUMENT);
    assert_non_null(strstr(st.message, "the keep probability in (0, 1]"));
    ct_session_free(s);
    run_end(&r);
  }
}

/* ---- optimizer updates -------------------------------------------------------------- */

static void test_optimizer_updates(void **state) {
  (void)state;
  /* loss = sum(w * c): the gradient is c, so the updates have closed forms. */
  const float c_value[3] = {0.5f, -1.0f, 2.0f};
  for (int kind = 0; kind < 3; ++kind) {
    ct_graph *g = ct_graph_new();
    ct_initializer init = {CT_INIT_CONSTANT, 1.0f};
    ct_output w = ct_variable(g, "w", ct_shape_of(1, (int64_t)3), init, 1);
    ct_tensor ct = {CT_F32, ct_shape_of(1, (int64_t)3), (void *)c_value, 0};
    ct_output loss = ct_reduce_sum(g, ct_mul(g, w, ct_constant(g, "c", &ct)), 0, 0);
    ct_optimizer_config oc;
    ct_optimizer_config_defaults(&oc, (ct_optimizer_kind)kind);
    oc.weight_decay = 0.1f;
    oc.nesterov = kind == CT_OPTIMIZER_MOMENTUM;
    ct_train_op train;
    assert_int_equal(ct_optimizer_minimize(g, &oc, loss, &train), 0);
    ct_status st = CT_STATUS_INIT;
    ct_session *s = cpu_session(g, 0, &st);
    double ref[3] = {1, 1, 1}, m[3] = {0}, v[3] = {0};
    const double base_lr = 0.1;
    for (int step = 1; step <= 3; ++step) {
      float lr = ct_optimizer_learning_rate(&oc, base_lr, step);
      ct_tensor lt = {CT_F32, ct_shape_of(0), &lr, 0};
      ct_feed feed = {train.learning_rate, &lt};
      ct_session_run(s, &feed, 1, NULL, 0, &train.op, 1, NULL, &st);
      assert_status_ok(&st);
      for (int i = 0; i < 3; ++i) {
        double grad = c_value[i] + 0.1 * ref[i];
        if (kind == CT_OPTIMIZER_SGD) {
          ref[i] -= base_lr * grad;
        } else if (kind == CT_OPTIMIZER_MOMENTUM) {
          m[i] = 0.9 * m[i] + grad;
          ref[i] -= base_lr * (grad + 0.9 * m[i]);
        } else {
          m[i] = 0.9 * m[i] + 0.1 * grad;
          v[i] = 0.999 * v[i] + 0.001 * grad * grad;
          double mhat = m[i] / (1 - pow(0.9, step)), vhat = v[i] / (1 - pow(0.999, step));
          ref[i] -= base_lr * mhat / (sqrt(vhat) + 1e-8);
        }
      }
    }
    float want[3] = {(float)ref[0], (float)ref[1], (float)ref[2]};
    const char *names[] = {"ApplyGradientDescent (wd 0.1)", "ApplyMomentum Nesterov (wd 0.1)",
                           "ApplyAdam (wd 0.1)"};
    expect_close(names[kind], ct_session_variable(s, 0, &st), want, 3, 1e-5);
    ct_session_free(s);
    ct_graph_free(g);
  }
}

/* In a process on its own (rank 0 of 1, the root) a CollectiveReduce to
 * rank 0 and a CollectiveBroadcast from it return their input, and Assign
 * writes its value into the variable. */
static void test_parameter_server_ops_alone(void **state) {
  (void)state;
  op_run r;
  const ct_shape shape = ct_shape_of(2, (int64_t)2, (int64_t)3);
  run_begin(&r, 1, &shape, 21);
  ct_initializer zeros = {CT_INIT_ZEROS, 0.0f};
  ct_output w = ct_variable(r.g, "w", shape, zeros, 1);
  ct_output fetches[3] = {ct_collective_reduce_to(r.g, r.in[0], 0, 1),
                          ct_collective_broadcast(r.g, r.in[0], 0, 2)};
  fetches[2] = ct_assign(r.g, w, fetches[1]);
  ct_tensor *got[3];
  run_fetch(&r, 3, fetches, got);
  const char *names[3] = {"CollectiveReduce to rank 0 (alone)", "CollectiveBroadcast (alone)",
                          "Assign"};
  for (int k = 0; k < 3; ++k) {
    expect_close(names[k], got[k], input(&r, 0), 6, 0.0);
    ct_tensor_free(got[k]);
  }
  ct_assign(r.g, r.in[0], r.in[0]); /* not a variable: an error in the graph */
  assert_int_equal(ct_graph_status(r.g)->code, CT_INVALID_ARGUMENT);
  run_end(&r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_matmul),
      cmocka_unit_test(test_conv2d),
      cmocka_unit_test(test_conv2d_bias_relu),
      cmocka_unit_test(test_conv2d_winograd),
      cmocka_unit_test(test_own_winograd),
      cmocka_unit_test(test_conv2d_auto_algorithm),
      cmocka_unit_test(test_bf16_convolution_and_matmul),
      cmocka_unit_test(test_round_to_bf16),
      cmocka_unit_test(test_pooling),
      cmocka_unit_test(test_lrn),
      cmocka_unit_test(test_lrn_matches_pytorch),
      cmocka_unit_test(test_batch_norm),
      cmocka_unit_test(test_batch_norm_channel_blocks),
      cmocka_unit_test(test_batch_norm_relu),
      cmocka_unit_test(test_add_n),
      cmocka_unit_test(test_broadcast_and_reduce),
      cmocka_unit_test(test_bias_gradient),
      cmocka_unit_test(test_concat_split),
      cmocka_unit_test(test_split_sizes),
      cmocka_unit_test(test_strided_slice),
      cmocka_unit_test(test_transpose),
      cmocka_unit_test(test_argmax_along_each_axis),
      cmocka_unit_test(test_cross_entropy_and_accuracy),
      cmocka_unit_test(test_dense_cross_entropy),
      cmocka_unit_test(test_equal_and_cast),
      cmocka_unit_test(test_l2_loss),
      cmocka_unit_test(test_bad_label_is_an_error),
      cmocka_unit_test(test_dropout_statistics),
      cmocka_unit_test(test_dropout_rate_out_of_range),
      cmocka_unit_test(test_optimizer_updates),
      cmocka_unit_test(test_parameter_server_ops_alone),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
