/* communication.h without MPI (CTOWER_MPI=off, or no MPI found): the process
 * is the whole job. Started by a launcher as one of several ranks, it
 * refuses to start, since it could not talk to the others. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/communication.h"
#include "cluster/launcher.h"

int ct_cluster_init(int *argc, char ***argv, ct_status *status) {
  (void)argc;
  (void)argv;
  const int ranks = ct_cluster_launcher_ranks();
  if (ranks > 1) {
    ct_status_set(status, CT_UNAVAILABLE,
                  "this process is one of %d ranks a launcher (mpirun or srun) started, but "
                  "ctower was built without MPI; rebuild with -DCTOWER_MPI=on",
                  ranks);
    return 1;
  }
  return 0;
}

void ct_cluster_finalize(void) {}

int ct_cluster_rank(void) { return 0; }
int ct_cluster_size(void) { return 1; }
int ct_cluster_local_rank(void) { return 0; }
int ct_cluster_local_size(void) { return 1; }

int ct_cluster_allreduce_f32(float *data, int64_t count, ct_status *status) {
  (void)data, (void)count, (void)status;
  return 0;
}

int ct_cluster_allreduce_f64(double *data, int64_t count, ct_status *status) {
  (void)data, (void)count, (void)status;
  return 0;
}

int ct_cluster_allreduce_i64(int64_t *data, int64_t count, ct_status *status) {
  (void)data, (void)count, (void)status;
  return 0;
}

/* Whether root is not rank 0, the only one; fills status naming `call`. */
static int bad_root(int root, const char *call, ct_status *status) {
  if (root == 0) return 0;
  ct_status_set(status, CT_INVALID_ARGUMENT, "%s rank %d: the only rank is 0", call, root);
  return 1;
}

int ct_cluster_reduce_f32(float *data, int64_t count, int root, ct_status *status) {
  (void)data, (void)count;
  return bad_root(root, "reduce to", status);
}

int ct_cluster_broadcast(void *data, size_t bytes, int root, ct_status *status) {
  (void)data, (void)bytes;
  return bad_root(root, "broadcast from", status);
}

int ct_cluster_allgather(const void *mine, size_t bytes, void *all, ct_status *status) {
  (void)status;
  memmove(all, mine, bytes);
  return 0;
}

int ct_cluster_gather_to_first(const void *mine, size_t bytes, char **all, size_t *all_bytes,
                               ct_status *status) {
  return ct_cluster_gather_alone(mine, bytes, all, all_bytes, status);
}

int ct_cluster_alltoallv(const void *send, const int64_t *send_counts,
                         const int64_t *send_offsets, void *recv, const int64_t *recv_counts,
                         const int64_t *recv_offsets, ct_status *status) {
  (void)recv_counts, (void)status;
  memmove((char *)recv + recv_offsets[0], (const char *)send + send_offsets[0],
          (size_t)send_counts[0]);
  return 0;
}

int ct_cluster_allgatherv(void *all, const int64_t *counts, const int64_t *offsets,
                          ct_status *status) {
  (void)all, (void)counts, (void)offsets, (void)status;
  return 0;
}

int ct_cluster_barrier(ct_status *status) {
  (void)status;
  return 0;
}

void ct_cluster_abort(int code) {
  fflush(stdout);
  fflush(stderr);
  exit(code);
}

void ct_cluster_progress(int64_t step, int bucket, const char *what) {
  (void)step, (void)bucket, (void)what;
}

int ct_cluster_start_stall_inspector(double timeout_s, ct_status *status) {
  (void)timeout_s, (void)status;
  return 0;
}

/* No other rank to talk to: a request never starts. */
static int no_peer(const char *call, int peer, ct_status *status) {
  ct_status_set(status, CT_UNAVAILABLE,
                "%s rank %d: a process on its own has no other rank; start the job with mpirun",
                call, peer);
  return 1;
}

int ct_cluster_isend(const void *data, size_t bytes, int dest, int tag, ct_cluster_request *request,
                     ct_status *status) {
  (void)data, (void)bytes, (void)tag;
  request->impl = NULL;
  return no_peer("sending to", dest, status);
}

int ct_cluster_irecv(void *data, size_t bytes, int source, int tag, ct_cluster_request *request,
                     ct_status *status) {
  (void)data, (void)bytes, (void)tag;
  request->impl = NULL;
  return no_peer("receiving from", source, status);
}

int ct_cluster_wait(ct_cluster_request *request, int *source, ct_status *status) {
  (void)request, (void)status;
  if (source) *source = 0;
  return 0;
}

int ct_cluster_test(ct_cluster_request *request, int *done, ct_status *status) {
  (void)request, (void)status;
  *done = 1;
  return 0;
}

void ct_cluster_cancel(ct_cluster_request *request) { request->impl = NULL; }

int ct_cluster_edge_isend(const void *data, size_t bytes, int dest, int tag,
                          ct_cluster_request *request, ct_status *status) {
  return ct_cluster_isend(data, bytes, dest, tag, request, status);
}

int ct_cluster_edge_irecv(void *data, size_t bytes, int source, int tag,
                          ct_cluster_request *request, ct_status *status) {
  return ct_cluster_irecv(data, bytes, source, tag, request, status);
}

int ct_cluster_tag_limit(void) { return 32767; }

void ct_cluster_enter_wait(const char *op) { (void)op; }
void ct_cluster_leave_wait(void) {}
