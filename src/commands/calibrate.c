/* `ctower bench --calibrate`: measures what the cost model (cost_model.h)
 * needs on this machine and writes it to the calibration file:
 *   1. on the first device of each type: the FLOP/s a matmul and a
 *      convolution achieve at a few sizes, the bytes per second of an
 *      elementwise Add, and the time a plan spends per step (a chain of
 *      small ops);
 *   2. the all-reduce between two CPU devices of one process (an AllReduce
 *      op) at a small and a large size: its latency and bandwidth;
 *   3. under mpirun with several ranks, the same for the ranks' MPI
 *      all-reduce (ct_cluster_allreduce_f32). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/communication.h"
#include "core/clock.h"
#include "core/median.h"
#include "ctower/trainer.h"
#include "commands/calibrate.h"
#include "observe/cost_model.h"

/* The median time of running `target` (after one untimed run): at least 3
 * runs, more while under 0.2 s in all, at most 25. */
static int time_target(ct_session *s, ct_node *target, double *seconds, ct_status *status) {
  double times[25];
  int n = 0;
  if (ct_session_run(s, NULL, 0, NULL, 0, &target, 1, NULL, status)) return 1;
  for (double total = 0; n < 25 && (n < 3 || total < 0.2); ++n) {
    const double t0 = ct_monotonic_seconds();
    if (ct_session_run(s, NULL, 0, NULL, 0, &target, 1, NULL, status)) return 1;
    times[n] = ct_monotonic_seconds() - t0;
    total += times[n];
  }
  *seconds = ct_median(times, n);
  return 0;
}

static ct_output variable(ct_graph *g, const char *name, ct_shape shape) {
  return ct_variable(g, name, shape, (ct_initializer){CT_INIT_UNIFORM, 1.0f}, 0);
}

/* The benchmarks of one device type, as graphs built on `device`. */
enum { MATMUL, CONV_SMALL, CONV_LARGE, ADD, CHAIN };
enum { CHAIN_OPS = 100 };
static const int64_t k_matmul_sizes[] = {64, 256, 512};

static ct_node *build_benchmark(ct_graph *g, int which, int64_t n) {
  ct_output x, y;
  switch (which) {
    case MATMUL:
      x = variable(g, "a", ct_shape_of(2, n, n));
      return ct_matmul(g, x, variable(g, "b", ct_shape_of(2, n, n)), 0, 0).node;
    case CONV_SMALL: /* an fmnist_cnn-like layer, and a resnet20-like one */
    case CONV_LARGE:
      x = variable(
          g, "x",
          which == CONV_SMALL ? ct_shape_of(4, 8, 16, 16, 16) : ct_shape_of(4, 16, 28, 28, 32));
      y = variable(
          g, "f",
          which == CONV_SMALL ? ct_shape_of(4, 3, 3, 16, 16) : ct_shape_of(4, 5, 5, 32, 64));
      return ct_conv2d(g, x, y, 1, 1, CT_PADDING_SAME).node;
    case ADD:
      x = variable(g, "a", ct_shape_of(1, n));
      return ct_add(g, x, variable(g, "b", ct_shape_of(1, n))).node;
    default:
      x = variable(g, "x", ct_shape_of(1, 16));
      for (int i = 0; i < CHAIN_OPS; ++i) x = ct_relu(g, x);
      return x.node;
  }
}

/* Runs one benchmark on `device` of a session with `options`: its median
 * time, and the FLOPs and bytes of its last op into *flops. */
static int run_benchmark(const ct_session_options *options, const char *device, int which,
                         int64_t n, double *seconds, double *flops, ct_status *status) {
  ct_graph *g = ct_graph_new();
  if (g == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory calibrating");
    return 1;
  }
  ct_graph_push_device(g, device);
  ct_node *target = build_benchmark(g, which, n);
  ct_graph_pop_device(g);
  ct_session *s = ct_session_new(g, options, status);
  int failed = s == NULL || time_target(s, target, seconds, status);
  if (!failed) {
    if (which == MATMUL) *flops = 2.0 * (double)n * (double)n * (double)n;
    if (which == CONV_SMALL) *flops = 2.0 * 8 * 16 * 16 * 16 * 3 * 3 * 16;
    if (which == CONV_LARGE) *flops = 2.0 * 16 * 28 * 28 * 64 * 5 * 5 * 32;
    if (which == ADD) *flops = 3.0 * sizeof(float) * (double)n; /* bytes */
  }
  ct_session_free(s);
  ct_graph_free(g);
  return failed;
}

static void sort_points(ct_kind_rates *k) {
  for (int i = 1; i < k->n_points; ++i)
    for (int j = i; j > 0 && k->flops[j] < k->flops[j - 1]; --j) {
      double f = k->flops[j], r = k->rate[j];
      k->flops[j] = k->flops[j - 1], k->rate[j] = k->rate[j - 1];
      k->flops[j - 1] = f, k->rate[j - 1] = r;
    }
}

/* Step 1 on `device`, of `threads` threads. */
static int calibrate_kind(const ct_session_options *options, const char *device, int threads,
                          ct_kind_rates *k, ct_status *status) {
  double t = 0, flops = 0;
  memset(k, 0, sizeof *k);
  k->threads = threads;
  if (run_benchmark(options, device, CHAIN, 0, &t, &flops, status)) return 1;
  k->op_overhead_s = t / CHAIN_OPS;
  for (int i = 0; i < (int)(sizeof k_matmul_sizes / sizeof *k_matmul_sizes) + 2; ++i) {
    const int which = i < 3 ? MATMUL : i == 3 ? CONV_SMALL : CONV_LARGE;
    if (run_benchmark(options, device, which, i < 3 ? k_matmul_sizes[i] : 0, &t, &flops, status))
      return 1;
    k->flops[k->n_points] = flops;
    k->rate[k->n_points++] = flops / (t > k->op_overhead_s ? t - k->op_overhead_s : t);
  }
  sort_points(k);
  if (run_benchmark(options, device, ADD, (int64_t)4 << 20, &t, &flops, status)) return 1;
  k->memory_bytes_per_s = flops / t;
  k->measured = 1;
  return 0;
}

/* Step 2: an AllReduce of n floats between /cpu:0 and /cpu:1. */
static int time_all_reduce(const ct_session_options *options, int64_t n, double *seconds,
                           ct_status *status) {
  ct_graph *g = ct_graph_new();
  ct_output parts[2], sums[2];
  for (int k = 0; k < 2; ++k) {
    char device[16], name[16];
    snprintf(device, sizeof device, "/cpu:%d", k);
    snprintf(name, sizeof name, "part%d", k);
    ct_graph_push_device(g, device);
    parts[k] = variable(g, name, ct_shape_of(1, n));
    ct_graph_pop_device(g);
  }
  ct_graph_push_device(g, "/cpu:0");
  ct_all_reduce(g, 2, parts, sums);
  ct_graph_pop_device(g);
  ct_session *s = ct_session_new(g, options, status);
  int failed = s == NULL || time_target(s, sums[0].node, seconds, status);
  ct_session_free(s);
  ct_graph_free(g);
  return failed;
}

/* A link from times at a small and a large size (bytes). */
static ct_link fit_link(double small_bytes, double small_s, double large_bytes, double large_s) {
  ct_link link;
  link.bytes_per_s =
      large_s > small_s ? (large_bytes - small_bytes) / (large_s - small_s) : large_bytes / large_s;
  link.latency_s = small_s - small_bytes / link.bytes_per_s;
  if (link.latency_s < 1e-7) link.latency_s = 1e-7;
  return link;
}

/* Step 3: the median of a few MPI all-reduces of n floats. */
static int time_mpi(int64_t n, double *seconds, ct_status *status) {
  float *data = calloc((size_t)n, sizeof *data);
  double times[9];
  if (data == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory calibrating");
    return 1;
  }
  int failed = ct_cluster_allreduce_f32(data, n, status);
  for (int i = 0; i < 9 && !failed; ++i) {
    const double t0 = ct_monotonic_seconds();
    failed = ct_cluster_allreduce_f32(data, n, status);
    times[i] = ct_monotonic_seconds() - t0;
  }
  free(data);
  if (failed) return 1;
  double median[1] = {ct_median(times, 9)};
  if (ct_cluster_allreduce_f64(median, 1, status)) return 1; /* the ranks' mean */
  *seconds = median[0] / ct_cluster_size();
  return 0;
}

static void cpu_model(char *buf, size_t size) {
  snprintf(buf, size, "unknown");
  FILE *f = fopen("/proc/cpuinfo", "r");
  char line[512];
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, "model name", 10) == 0 && strchr(line, ':')) {
      snprintf(buf, size, "%s", strchr(line, ':') + 2);
      buf[strcspn(buf, "\n")] = '\0';
      break;
    }
  if (f) fclose(f);
}

static void print_kind(FILE *report, const char *device, const ct_kind_rates *k) {
  if (report == NULL) return;
  fprintf(report, "%s (%d threads): per op %.1f us; memory %.2f GB/s; dense", device, k->threads,
          k->op_overhead_s * 1e6, k->memory_bytes_per_s / 1e9);
  for (int i = 0; i < k->n_points; ++i)
    fprintf(report, "%s %.3g MFLOP at %.2f GFLOP/s", i ? "," : "", k->flops[i] / 1e6,
            k->rate[i] / 1e9);
  fprintf(report, "\n");
}

int ct_calibration_measure(const ct_session_options *session, ct_calibration *c, FILE *report,
                           ct_status *status) {
  ct_calibration_defaults(c);
  cpu_model(c->cpu, sizeof c->cpu);
  ct_session_options one = *session;
  one.log_device_placement = 0;
  one.device_count_cpu = 1;
  memset(one.cpu_device_threads, 0, sizeof one.cpu_device_threads);
  ct_graph *g = ct_graph_new();
  ct_session *probe = g ? ct_session_new(g, &one, status) : NULL;
  int failed = probe == NULL;
  for (int d = 0; !failed && d < ct_session_device_count(probe); ++d) {
    ct_device_info info;
    ct_session_device_info(probe, d, &info);
    const int kind = strcmp(info.kind, "GPU") == 0 ? CT_DEVICE_KIND_GPU : CT_DEVICE_KIND_CPU;
    if (c->kinds[kind].measured) continue;
    failed = calibrate_kind(&one, info.name, info.threads, &c->kinds[kind], status);
    if (!failed) print_kind(report, info.name, &c->kinds[kind]);
  }
  ct_session_free(probe);
  ct_graph_free(g);
  ct_session_options two = one;
  two.device_count_cpu = 2;
  double small_s = 0, large_s = 0;
  const int64_t small = 1024, large = (int64_t)4 << 20;
  failed = failed || time_all_reduce(&two, small, &small_s, status) ||
           time_all_reduce(&two, large, &large_s, status);
  if (!failed) {
    /* the bytes of both parts: what the cost model charges an AllReduce for */
    c->in_process = fit_link(8.0 * small, small_s, 8.0 * large, large_s);
    if (report)
      fprintf(report, "all-reduce between /cpu:0 and /cpu:1: latency %.1f us, %.2f GB/s\n",
              c->in_process.latency_s * 1e6, c->in_process.bytes_per_s / 1e9);
  }
  if (!failed && ct_cluster_size() > 1) {
    failed = time_mpi(small, &small_s, status) || time_mpi(large, &large_s, status);
    if (!failed) {
      c->mpi_ranks = ct_cluster_size();
      c->mpi = fit_link(4.0 * small, small_s, 4.0 * large, large_s);
      if (report)
        fprintf(report, "MPI all-reduce over %d ranks: latency %.1f us, %.2f GB/s\n",
                c->mpi_ranks, c->mpi.latency_s * 1e6, c->mpi.bytes_per_s / 1e9);
    }
  }
  c->measured = !failed;
  return failed;
}

int ct_calibrate_main(const ct_session_options *session, const char *path, ct_status *status) {
  char default_path[1024];
  if (path == NULL) path = ct_calibration_default_path(default_path, sizeof default_path);
  /* a file that cannot be written fails now, not after the measuring */
  if (ct_cluster_rank() == 0 && ct_calibration_check_path(path, status)) return 1;
  ct_calibration c;
  int failed = ct_calibration_measure(session, &c, stdout, status);
  if (!failed && ct_cluster_rank() == 0) {
    failed = ct_calibration_save(path, &c, status);
    if (!failed) printf("calibration written to %s\n", path);
  }
  return failed;
}
