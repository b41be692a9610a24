/* Values sent between tasks by a graph (src/exec/transfer.c) against the
 * same messages sent by MPI directly. Under `mpirun -np 2`: a feed x of N
 * floats; a = -x on task 0, b = -a on task 1, c = -b on task 0, and every
 * rank fetches c: three edges a run (a to task 1, b to task 0, c to task
 * 1). For each size it prints the median run time, the bytes each task
 * sent and received in a run as the run's timeline counted them, the bytes
 * the edges predict (3 values of 4N bytes: task 0 sends two, receives one),
 * and the median time of the three messages alone (ct_cluster_isend,
 * irecv, wait, in the same order) and of the three negations alone.
 * Usage: mpirun -np 2 build/edge_bench [RUNS (default 30)] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cluster/communication.h"
#include "ctower/ctower.h"

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return 1e6 * (double)t.tv_sec + 1e-3 * (double)t.tv_nsec;
}

static int by_value(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, by_value);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void check(int failed, const ct_status *status) {
  if (!failed) return;
  fprintf(stderr, "%sedge_bench: %s\n", ct_cluster_log_prefix(), status->message);
  ct_cluster_abort(1);
}

/* The three messages of a run, sent by MPI directly: a to 1, b back to 0,
 * c to 1. */
static double raw_messages(float *buffer, size_t bytes, ct_status *status) {
  ct_cluster_request request = {NULL};
  const int rank = ct_cluster_rank();
  const double start = now_us();
  for (int hop = 0; hop < 3; ++hop) {
    const int sender = hop == 1 ? 1 : 0;
    check(rank == sender ? ct_cluster_isend(buffer, bytes, 1 - rank, 40 + hop, &request, status)
                         : ct_cluster_irecv(buffer, bytes, 1 - rank, 40 + hop, &request, status),
          status);
    check(ct_cluster_wait(&request, NULL, status), status);
  }
  return now_us() - start;
}

/* One size: the graph's runs, then the raw messages and the negations. */
static void measure(int64_t n, int runs) {
  ct_status st = CT_STATUS_INIT;
  ct_graph *g = ct_graph_new();
  ct_output x = ct_placeholder(g, "x", CT_F32, ct_shape_of(1, n));
  ct_graph_push_device(g, "/job:worker/task:0/cpu:0");
  ct_output a = ct_neg(g, x);
  ct_graph_pop_device(g);
  ct_graph_push_device(g, "/job:worker/task:1/cpu:0");
  ct_output b = ct_neg(g, a);
  ct_graph_pop_device(g);
  ct_graph_push_device(g, "/job:worker/task:0/cpu:0");
  ct_output c = ct_neg(g, b);
  ct_graph_pop_device(g);
  ct_session_options o;
  ct_session_options_defaults(&o);
  o.device_count_cpu = 1;
  o.intra_op_parallelism_threads = 1;
  ct_session *s = ct_session_new(g, &o, &st);
  check(s == NULL, &st);
  ct_shape shape = ct_shape_of(1, n);
  ct_tensor *xv = ct_tensor_new(CT_F32, &shape, &st);
  check(xv == NULL, &st);
  for (int64_t i = 0; i < n; ++i) ((float *)xv->data)[i] = (float)i;
  ct_feed feed = {x, xv};
  ct_run_metadata *metadata = ct_run_metadata_new();
  double *graph_us = calloc((size_t)runs, sizeof *graph_us);
  double *raw_us = calloc((size_t)runs, sizeof *raw_us);
  double *neg_us = calloc((size_t)runs, sizeof *neg_us);
  long long sent = 0, received = 0;
  for (int r = -3; r < runs; ++r) { /* 3 warm-up runs */
    ct_tensor *out = NULL;
    check(ct_cluster_barrier(&st), &st);
    const double start = now_us();
    check(ct_session_run_traced(s, &feed, 1, &c, 1, NULL, 0, &out, r == 0 ? metadata : NULL, &st),
          &st);
    if (r >= 0) graph_us[r] = now_us() - start;
    if (((float *)out->data)[n - 1] != -(float)(n - 1)) {
      fprintf(stderr, "edge_bench: wrong value\n");
      ct_cluster_abort(1);
    }
    ct_tensor_free(out);
  }
  for (int e = 0; e < ct_run_metadata_event_count(metadata); ++e) {
    const ct_timeline_event ev = ct_run_metadata_event(metadata, e);
    if (strcmp(ev.op, "_Send") == 0) sent += ev.bytes;
    if (strcmp(ev.op, "_Recv") == 0) received += ev.bytes;
  }
  float *buffer = malloc((size_t)n * sizeof *buffer);
  for (int r = 0; r < runs; ++r) {
    check(ct_cluster_barrier(&st), &st);
    raw_us[r] = raw_messages(buffer, (size_t)n * sizeof *buffer, &st);
  }
  /* the negations alone: one process's session, all three on its CPU */
  ct_graph *local = ct_graph_new();
  ct_output lx = ct_placeholder(local, "x", CT_F32, ct_shape_of(1, n));
  ct_output lc = ct_neg(local, ct_neg(local, ct_neg(local, lx)));
  ct_session_options lo = o;
  lo.job[0] = '\0', lo.task = 0;
  ct_session *ls = ct_session_new(local, &lo, &st);
  check(ls == NULL, &st);
  ct_feed lfeed = {lx, xv};
  for (int r = 0; r < runs; ++r) {
    ct_tensor *out = NULL;
    const double start = now_us();
    check(ct_session_run(ls, &lfeed, 1, &lc, 1, NULL, 0, &out, &st), &st);
    neg_us[r] = now_us() - start;
    ct_tensor_free(out);
  }
  const long long value = (long long)n * 4;
  const long long predicted_sent = ct_cluster_rank() == 0 ? 2 * value : value;
  const long long predicted_received = ct_cluster_rank() == 0 ? value : 2 * value;
  char line[512];
  snprintf(line, sizeof line,
           "| %lld | %d | %.1f | %.1f | %.1f | %lld / %lld | %lld / %lld |\n", value,
           ct_cluster_rank(), median(graph_us, runs), median(raw_us, runs),
           median(neg_us, runs), sent, predicted_sent, received, predicted_received);
  char *all = NULL;
  size_t all_bytes = 0;
  check(ct_cluster_gather_to_first(line, strlen(line), &all, &all_bytes, &st), &st);
  if (all) fputs(all, stdout);
  fflush(stdout);
  free(all);
  free(buffer), free(graph_us), free(raw_us), free(neg_us);
  ct_run_metadata_free(metadata);
  ct_tensor_free(xv);
  ct_session_free(ls);
  ct_graph_free(local);
  ct_session_free(s);
  ct_graph_free(g);
}

int main(int argc, char **argv) {
  ct_status st = CT_STATUS_INIT;
  check(ct_cluster_init(&argc, &argv, &st), &st);
  if (ct_cluster_size() != 2) {
    fprintf(stderr, "edge_bench: run it with mpirun -np 2\n");
    ct_cluster_finalize();
    return 2;
  }
  const int runs = argc > 1 ? atoi(argv[1]) : 30;
  if (ct_cluster_rank() == 0)
    printf("| value bytes | rank | run µs (median) | the 3 messages alone µs | the 3 negations "
           "alone µs | bytes sent / predicted | bytes received / predicted |\n"
           "|---:|---:|---:|---:|---:|---:|---:|\n");
  const int64_t sizes[] = {1024, 65536, 1 << 20, 1 << 24}; /* floats: 4 KiB .. 64 MiB */
  for (size_t k = 0; k < sizeof sizes / sizeof *sizes; ++k) measure(sizes[k], runs > 0 ? runs : 30);
  ct_cluster_finalize();
  return 0;
}
