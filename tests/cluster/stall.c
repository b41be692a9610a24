/* The stall test's job (stall.sh): after one all-reduce, rank 1 stops
 * itself (SIGSTOP); the others report bucket 3 of step 12 and wait in the
 * next all-reduce (or, with the argument "finalize", go straight to
 * ct_cluster_finalize, which waits for rank 1 too; with "edges", run a
 * graph that needs a value of task 1). The stall inspector (2 s) must name
 * rank 1 and what the others wait in and end the job; a job that ends by
 * itself exits 0, which fails the test. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cluster/communication.h"
#include "ctower/ctower.h"

/* A session whose runs fetch a value computed on task 1. */
typedef struct across_tasks {
  ct_graph *graph;
  ct_session *session;
  ct_output fetch;
} across_tasks;

static int across_tasks_new(across_tasks *a, ct_status *status) {
  a->graph = ct_graph_new();
  ct_output x = ct_scalar(a->graph, 2.0f);
  ct_graph_push_device(a->graph, "/job:worker/task:1/cpu:0");
  a->fetch = ct_neg(a->graph, x);
  ct_graph_pop_device(a->graph);
  ct_session_options o;
  ct_session_options_defaults(&o);
  a->session = ct_session_new(a->graph, &o, status);
  return a->session == NULL;
}

/* A run at `step`. */
static int across_tasks_run(across_tasks *a, uint64_t step, ct_status *status) {
  ct_tensor *value = NULL;
  ct_session_set_step(a->session, step);
  int failed = ct_session_run(a->session, NULL, 0, &a->fetch, 1, NULL, 0, &value, status);
  ct_tensor_free(value);
  return failed;
}

int main(int argc, char **argv) {
  ct_status status = CT_STATUS_INIT;
  float x = 1.0f;
  if (ct_cluster_init(&argc, &argv, &status) || ct_cluster_start_stall_inspector(2.0, &status) ||
      ct_cluster_allreduce_f32(&x, 1, &status)) {
    fprintf(stderr, "stall: %s\n", status.message);
    return 2;
  }
  const char *mode = argc > 1 ? argv[1] : "";
  across_tasks a = {NULL, NULL, {NULL, 0}};
  const int edges = strcmp(mode, "edges") == 0;
  /* a first run, with every rank, plans it (and checks the ranks agree) */
  if (edges && (across_tasks_new(&a, &status) || across_tasks_run(&a, 6, &status))) {
    fprintf(stderr, "stall: %s\n", status.message);
    return 2;
  }
  if (ct_cluster_rank() == 1) raise(SIGSTOP);
  if (edges && across_tasks_run(&a, 7, &status)) {
    fprintf(stderr, "stall: %s\n", status.message);
    return 2;
  }
  ct_cluster_progress(12, 3, "bucket 3");
  if (strcmp(mode, "") == 0 && ct_cluster_allreduce_f32(&x, 1, &status)) {
    fprintf(stderr, "stall: %s\n", status.message);
    return 2;
  }
  ct_session_free(a.session);
  ct_graph_free(a.graph);
  ct_cluster_finalize();
  return 0;
}
