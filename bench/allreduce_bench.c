/* allreduce_bench: ctower's cross-rank all-reduce against raw MPI_Allreduce
 * on the same buffer, in one run. Under `mpirun -np N`:
 *   build/allreduce_bench [REPEATS]
 * For 1, 4, 16 and 64 MB of floats, rank 0 prints the median time and
 * the bus bandwidth (2 (N-1)/N bytes / time, as nccl-tests count it) of
 *   mpi:      MPI_Allreduce(MPI_IN_PLACE) on MPI_COMM_WORLD;
 *   cluster:  ct_cluster_allreduce_f32, what the CollectiveReduce kernel
 *             calls (on its own communicator);
 *   op:       a session run of one CollectiveReduce node on a fed tensor
 *             (the kernel copies the feed into its output first: in
 *             training the packed gradient dies there and is summed in
 *             place);
 * and the ratios cluster/mpi and op/mpi; first, the latency of an
 * all-reduce of one float (the cost model's alpha). Without MPI it says so
 * and exits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cluster/communication.h"
#include "ctower/ctower.h"
#ifdef CTOWER_HAVE_MPI
#include <mpi.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int compare(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *t, int n) {
  qsort(t, (size_t)n, sizeof *t, compare);
  return t[n / 2];
}

int main(int argc, char **argv) {
  ct_status st = CT_STATUS_INIT;
  if (ct_cluster_init(&argc, &argv, &st)) {
    fprintf(stderr, "allreduce_bench: %s\n", st.message);
    return 1;
  }
  const int repeats = argc > 1 ? atoi(argv[1]) : 20, ranks = ct_cluster_size();
  if (ranks < 2 || repeats < 1) {
    fprintf(stderr, "usage: mpirun -np N allreduce_bench [REPEATS], N >= 2\n");
    ct_cluster_finalize();
    return 2;
  }
  if (ct_cluster_rank() == 0)
    printf("%d ranks, median of %d; bus bandwidth GB/s (time ms)\n%8s %18s %18s %18s %9s %9s\n",
           ranks, repeats, "MB", "mpi", "cluster", "op", "cluster/", "op/mpi");
  double *times = malloc((size_t)repeats * 50 * sizeof *times);
  float one = 1;
  for (int r = 0; r < repeats * 50; ++r) {
    const double t0 = now();
    MPI_Allreduce(MPI_IN_PLACE, &one, 1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    times[r] = now() - t0;
  }
  const double alpha = median(times, repeats * 50);
  if (ct_cluster_rank() == 0) printf("latency of a 4-byte all-reduce: %.2f us\n", alpha * 1e6);
  for (int mb = 1; mb <= 64; mb *= 4) {
    const int64_t n = (int64_t)mb * (1 << 20) / 4;
    ct_shape shape = ct_shape_of(1, n);
    ct_tensor *x = ct_tensor_new(CT_F32, &shape, &st);
    ct_graph *g = ct_graph_new();
    ct_output in = ct_placeholder(g, "x", CT_F32, shape);
    ct_output sum = ct_collective_reduce(g, in, 0);
    ct_session *s = ct_session_new(g, NULL, &st);
    if (x == NULL || s == NULL) {
      fprintf(stderr, "allreduce_bench: %s\n", st.message);
      ct_cluster_abort(1);
    }
    double result[3];
    for (int way = 0; way < 3; ++way) {
      for (int r = 0; r < repeats + 2; ++r) {
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = now();
        if (way == 0)
          MPI_Allreduce(MPI_IN_PLACE, x->data, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        else if (way == 1)
          ct_cluster_allreduce_f32(ct_tensor_f32(x), n, &st);
        else
          ct_session_run(s, &(ct_feed){in, x}, 1, NULL, 0, &sum.node, 1, NULL, &st);
        if (r >= 2) times[r - 2] = now() - t0;
      }
      result[way] = median(times, repeats);
    }
    if (st.code != CT_OK) {
      fprintf(stderr, "allreduce_bench: %s\n", st.message);
      ct_cluster_abort(1);
    }
    const double bus = 2.0 * (ranks - 1) / ranks * (double)n * 4;
    if (ct_cluster_rank() == 0)
      printf("%8d %9.2f (%6.2f) %9.2f (%6.2f) %9.2f (%6.2f) %9.2f %9.2f\n", mb,
             bus / result[0] * 1e-9, result[0] * 1e3, bus / result[1] * 1e-9, result[1] * 1e3,
             bus / result[2] * 1e-9, result[2] * 1e3, result[0] / result[1],
             result[0] / result[2]);
    ct_session_free(s);
    ct_graph_free(g);
    ct_tensor_free(x);
  }
  free(times);
  ct_cluster_finalize();
  return 0;
}
#else
int main(void) {
  printf("allreduce_bench: this build has no MPI (CTOWER_MPI=off)\n");
  return 0;
}
#endif
