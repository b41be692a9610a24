/* The cluster spec (ctower/cluster.h): which job and task each rank is.
 * Shared by both builds of communication.h; a process on its own is
 * /job:worker/task:0 (its devices keep the name /job:localhost/...: see
 * config_options.c). */
#include <stdio.h>
#include <string.h>

#include "cluster/communication.h"

static struct {
  int ps, workers; /* workers 0: no spec, every rank a worker */
  char prefix[32];
} spec;

int ct_cluster_set_spec(int ps, int workers, ct_status *status) {
  const int size = ct_cluster_size();
  spec.prefix[0] = '\0';
  if (ps == 0 && workers == 0) {
    spec.ps = spec.workers = 0;
    ct_cluster_log_prefix();
    return 0;
  }
  if (ps < 0 || workers < 0 || (ps > 0 && workers == 0)) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "cluster: {ps: %d, worker: %d} has no worker task: the workers compute and the "
                  "ps tasks only hold variables; give cluster.worker 1 or more (ps + worker = the "
                  "%d rank%s mpirun starts)",
                  ps, workers, size, size == 1 ? "" : "s");
    return 1;
  }
  if (ps + workers != size) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "cluster: {ps: %d, worker: %d} names %d tasks but the job has %d rank%s; start "
                  "it with mpirun -np %d, or change cluster.ps and cluster.worker so that they "
                  "add up to %d",
                  ps, workers, ps + workers, size, size == 1 ? "" : "s", ps + workers, size);
    return 1;
  }
  spec.ps = ps;
  spec.workers = workers;
  ct_cluster_log_prefix(); /* before the stall inspector's thread may print it */
  return 0;
}

int ct_cluster_ps_tasks(void) { return spec.ps; }
int ct_cluster_is_ps(void) { return ct_cluster_rank() < spec.ps; }
const char *ct_cluster_job(void) { return ct_cluster_job_of(ct_cluster_rank()); }
int ct_cluster_task(void) { return ct_cluster_task_of(ct_cluster_rank()); }
const char *ct_cluster_job_of(int rank) { return rank < spec.ps ? "ps" : "worker"; }
int ct_cluster_task_of(int rank) { return rank - (rank < spec.ps ? 0 : spec.ps); }

int ct_cluster_job_tasks(const char *job) {
  if (strcmp(job, "ps") == 0) return spec.ps;
  return strcmp(job, "worker") == 0 ? ct_cluster_size() - spec.ps : 0;
}

int ct_cluster_rank_of(const char *job, int task) {
  if (task < 0 || task >= ct_cluster_job_tasks(job)) return -1;
  return strcmp(job, "ps") == 0 ? task : spec.ps + task;
}

const char *ct_cluster_log_prefix(void) {
  if (ct_cluster_size() < 2) return "";
  if (spec.prefix[0] == '\0')
    snprintf(spec.prefix, sizeof spec.prefix, "[%s %d] ", ct_cluster_job(), ct_cluster_task());
  return spec.prefix;
}
