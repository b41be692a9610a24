/* The stall test's job (stall.sh): after one all-reduce, rank 1 stops
 * itself (SIGSTOP); the others report bucket 3 of step 12 and wait in the
 * next all-reduce (or, with the argument "finalize", go straight to
 * ct_cluster_finalize, which waits for rank 1 too). The stall inspector
 * (2 s) must name rank 1 and the collective and end the job; a job that
 * ends by itself exits 0, which fails the test. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cluster/cluster.h"

int main(int argc, char **argv) {
  ct_status status = CT_STATUS_INIT;
  float x = 1.0f;
  if (ct_cluster_init(&argc, &argv, &status) || ct_cluster_start_stall_inspector(2.0, &status) ||
      ct_cluster_allreduce_f32(&x, 1, &status)) {
    fprintf(stderr, "stall: %s\n", status.message);
    return 2;
  }
  if (ct_cluster_rank() == 1) raise(SIGSTOP);
  ct_cluster_progress(12, 3, "bucket 3");
  if ((argc < 2 || strcmp(argv[1], "finalize") != 0) && ct_cluster_allreduce_f32(&x, 1, &status)) {
    fprintf(stderr, "stall: %s\n", status.message);
    return 2;
  }
  ct_cluster_finalize();
  return 0;
}
