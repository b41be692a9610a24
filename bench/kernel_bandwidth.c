/* How close the elementwise and reduction kernels come to the memory's
 * speed: each runs on a CPU device over tensors far past the last-level
 * cache, and its bytes moved (inputs read plus outputs written) per second
 * of its kernel (the run's timeline) are set against a stream-style copy
 * over the same bytes with the same number of threads.
 *
 *   kernel_bandwidth [THREADS [MEBIBYTES]]
 *
 * THREADS (default: one per core this process may use) and the size of one
 * f32 operand (default 256 MiB). Prints one JSON line per kernel and per
 * reference loop: {"kernel": "Exp", "threads": 2, "gbs": 41.2,
 * "of_copy": 0.93}. Each figure is the median of RUNS runs. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/median.h"
#include "ctower/ctower.h"
#include "ops/binary_math.h"
#include "ops/compare.h"
#include "ops/unary_math.h"

enum { RUNS = 7 };

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* STREAM's copy and scale loops over n floats, each thread on its own
 * static block as the kernels' blocks are: bytes read plus written per
 * second, the median of RUNS runs. */
static double stream_gbs(float *dst, const float *src, int64_t n, int threads, int scale) {
  double seconds[RUNS];
  for (int r = 0; r < RUNS; ++r) {
    const double start = now();
    if (scale) {
#pragma omp parallel for num_threads(threads) schedule(static)
      for (int64_t i = 0; i < n; ++i) dst[i] = 3.0f * src[i];
    } else {
#pragma omp parallel for num_threads(threads) schedule(static)
      for (int64_t i = 0; i < n; ++i) dst[i] = src[i];
    }
    seconds[r] = now() - start;
  }
  return 2.0 * (double)n * sizeof(float) / ct_median(seconds, RUNS) / 1e9;
}

typedef enum operands { UNARY, BINARY, COMPARE, REDUCE_ALL, REDUCE_ROWS } operands;

/* What one kernel is: its name in the output and how to build it. */
typedef struct kernel_case {
  const char *name;
  operands kind;
  ct_output (*unary)(ct_graph *, ct_output);
  ct_output (*binary)(ct_graph *, ct_output, ct_output);
  ct_output (*reduce)(ct_graph *, ct_output, unsigned, int);
  const char *table_op; /* a row of the unary or binary math table, or a comparison */
} kernel_case;

static ct_output build(ct_graph *g, const kernel_case *k, ct_output a, ct_output b) {
  if (k->reduce) return k->reduce(g, a, k->kind == REDUCE_ROWS ? 2u : 0u, 0);
  if (k->unary) return k->unary(g, a);
  if (k->binary) return k->binary(g, a, b);
  if (k->kind == UNARY) return ct_unary_math(g, k->table_op, a);
  if (k->kind == COMPARE) return ct_compare(g, k->table_op, a, b);
  return ct_binary_math(g, k->table_op, a, b);
}

/* The kernel's bytes per second of kernel time: the median of RUNS traced
 * runs after one warm-up, or a negative figure on an error. */
static double kernel_gbs(const kernel_case *k, ct_tensor *a, ct_tensor *b, int threads) {
  ct_graph *g = ct_graph_new();
  const ct_shape shape = a->shape;
  ct_output pa = ct_placeholder(g, "a", CT_F32, shape), pb = ct_placeholder(g, "b", CT_F32, shape);
  ct_output y = build(g, k, pa, pb);
  ct_status st = CT_STATUS_INIT;
  ct_session_options options;
  ct_session_options_defaults(&options);
  options.device_count_gpu = 0;
  options.intra_op_parallelism_threads = threads;
  ct_session *s = ct_graph_status(g)->code == CT_OK ? ct_session_new(g, &options, &st) : NULL;
  ct_run_metadata *metadata = ct_run_metadata_new();
  const char *node = ct_node_name(y.node);
  const int n_inputs = k->kind == BINARY || k->kind == COMPARE ? 2 : 1;
  double seconds[RUNS];
  long long bytes = 0;
  int ok = s != NULL;
  for (int r = -1; ok && r < RUNS; ++r) {
    ct_feed feeds[2] = {{pa, a}, {pb, b}};
    ct_tensor *out = NULL;
    ok = ct_session_run_traced(s, feeds, n_inputs, &y, 1, NULL, 0, &out,
                               metadata, &st) == 0;
    if (!ok) break;
    ct_tensor_free(out);
    for (int e = 0; e < ct_run_metadata_event_count(metadata); ++e) {
      ct_timeline_event event = ct_run_metadata_event(metadata, e);
      if (strcmp(event.node, node) != 0) continue;
      if (r >= 0) seconds[r] = 1e-6 * (event.end_us - event.start_us);
      bytes = event.bytes + (long long)ct_tensor_nbytes(a) * n_inputs;
    }
  }
  if (!ok) fprintf(stderr, "kernel_bandwidth: %s: %s\n", k->name, st.message);
  ct_run_metadata_free(metadata);
  ct_session_free(s);
  ct_graph_free(g);
  return ok ? (double)bytes / ct_median(seconds, RUNS) / 1e9 : -1.0;
}

#define UNARY_CASE(P, Name, function, forward, derivative, gradient, flops, domain) \
  {#Name, UNARY, NULL, NULL, NULL, #Name},
#define BINARY_CASE(P, Name, function, forward, da, db, flops, domain) \
  {#Name, BINARY, NULL, NULL, NULL, #Name},
#define COMPARE_CASE(P, Name, function, op) {#Name, COMPARE, NULL, NULL, NULL, #Name},

static const kernel_case cases[] = {
    {"Relu", UNARY, ct_relu, NULL, NULL, NULL},
    {"Sigmoid", UNARY, ct_sigmoid, NULL, NULL, NULL},
    {"Tanh", UNARY, ct_tanh, NULL, NULL, NULL},
    CT_UNARY_MATH(UNARY_CASE, _)
    {"Add", BINARY, NULL, ct_add, NULL, NULL},
    {"Mul", BINARY, NULL, ct_mul, NULL, NULL},
    CT_BINARY_MATH(BINARY_CASE, _)
    CT_COMPARE(COMPARE_CASE, _)
    {"Sum (all axes)", REDUCE_ALL, NULL, NULL, ct_reduce_sum, NULL},
    {"Sum (rows of 1024)", REDUCE_ROWS, NULL, NULL, ct_reduce_sum, NULL},
    {"Mean (rows of 1024)", REDUCE_ROWS, NULL, NULL, ct_reduce_mean, NULL},
    {"Max (all axes)", REDUCE_ALL, NULL, NULL, ct_reduce_max, NULL},
    {"Min (rows of 1024)", REDUCE_ROWS, NULL, NULL, ct_reduce_min, NULL},
};

int main(int argc, char **argv) {
  const int threads = argc > 1 ? atoi(argv[1]) : omp_get_num_procs();
  const long mib = argc > 2 ? atol(argv[2]) : 256;
  if (argc > 3 || threads < 1 || mib < 1) {
    fprintf(stderr, "usage: kernel_bandwidth [THREADS [MEBIBYTES]]\n");
    return 2;
  }
  const int64_t n = (int64_t)mib * 1024 * 1024 / (int64_t)sizeof(float);
  const ct_shape shape = ct_shape_of(2, n / 1024, (int64_t)1024);
  ct_status st = CT_STATUS_INIT;
  ct_tensor *a = ct_tensor_new(CT_F32, &shape, &st), *b = ct_tensor_new(CT_F32, &shape, &st);
  if (a == NULL || b == NULL) {
    fprintf(stderr, "kernel_bandwidth: %s\n", st.message);
    return 1;
  }
  float *av = ct_tensor_f32(a), *bv = ct_tensor_f32(b);
  /* positive values away from zero: every row's domain holds them */
  for (int64_t i = 0; i < n; ++i) {
    av[i] = 0.5f + (float)(i % 1000) * 1e-3f;
    bv[i] = 1.5f - (float)(i % 777) * 1e-3f;
  }
  const double copy = stream_gbs(bv, av, n, threads, 0);
  const double scale = stream_gbs(bv, av, n, threads, 1);
  for (int64_t i = 0; i < n; ++i) bv[i] = 1.5f - (float)(i % 777) * 1e-3f;
  printf("{\"kernel\": \"stream copy\", \"threads\": %d, \"gbs\": %.1f, \"of_copy\": 1.00}\n",
         threads, copy);
  printf("{\"kernel\": \"stream scale\", \"threads\": %d, \"gbs\": %.1f, \"of_copy\": %.2f}\n",
         threads, scale, scale / copy);
  int failed = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    const double gbs = kernel_gbs(&cases[i], a, b, threads);
    failed |= gbs < 0;
    printf("{\"kernel\": \"%s\", \"threads\": %d, \"gbs\": %.1f, \"of_copy\": %.2f}\n",
           cases[i].name, threads, gbs, gbs / copy);
    fflush(stdout);
  }
  ct_tensor_free(a);
  ct_tensor_free(b);
  return failed;
}
