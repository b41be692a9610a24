/* communication.h's collectives and messages over MPI (built with
 * CTOWER_MPI; mpi_job.c joins the job), and leaving the job. Each collective
 * marks the rank as waiting in it, for the stall inspector. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/communication.h"
#include "cluster/launcher.h"
#include "cluster/mpi_job.h"

/* The most elements (or bytes) one MPI call moves: MPI counts are ints. */
enum { CHUNK = INT_MAX };

void ct_cluster_finalize(void) {
  /* MPI_Finalize waits for every rank: the inspector watches that wait
   * too, so that a rank stopped before it cannot hang the others. */
  if (ct_stall_inspector_running()) {
    ct_status ignored = CT_STATUS_INIT;
    ct_cluster_progress(-1, -1, "the end of the job");
    ct_cluster_barrier(&ignored);
  }
  ct_stall_inspector_stop();
  if (ct_mpi.mpi) {
    MPI_Comm_free(&ct_mpi.edge_comm);
    MPI_Comm_free(&ct_mpi.heartbeat_comm);
    MPI_Comm_free(&ct_mpi.comm);
    MPI_Finalize();
    ct_mpi.mpi = 0;
  }
}

/* In-place sum of count elements of `type` (elem bytes each), chunk by chunk. */
static int allreduce(void *data, int64_t count, MPI_Datatype type, size_t elem, const char *call,
                     ct_status *status) {
  if (!ct_mpi.mpi || count <= 0) return 0;
  ct_mpi_enter_collective("all-reduce");
  int err = MPI_SUCCESS;
  for (int64_t done = 0; done < count && err == MPI_SUCCESS;) {
    int n = count - done > CHUNK ? CHUNK : (int)(count - done);
    err = MPI_Allreduce(MPI_IN_PLACE, (char *)data + (size_t)done * elem, n, type, MPI_SUM,
                        ct_mpi.comm);
    done += n;
  }
  ct_mpi_leave_collective();
  return ct_mpi_failed(err, call, status);
}

int ct_cluster_allreduce_f32(float *data, int64_t count, ct_status *status) {
  return allreduce(data, count, MPI_FLOAT, sizeof *data, "all-reduce (f32)", status);
}

int ct_cluster_allreduce_f64(double *data, int64_t count, ct_status *status) {
  return allreduce(data, count, MPI_DOUBLE, sizeof *data, "all-reduce (f64)", status);
}

int ct_cluster_allreduce_i64(int64_t *data, int64_t count, ct_status *status) {
  return allreduce(data, count, MPI_INT64_T, sizeof *data, "all-reduce (i64)", status);
}

/* Whether root names a rank; fills status naming `call` when not. */
static int bad_root(int root, const char *call, ct_status *status) {
  if (root >= 0 && root < ct_mpi.size) return 0;
  ct_status_set(status, CT_INVALID_ARGUMENT, "%s rank %d: the ranks are 0 to %d", call, root,
                ct_mpi.size - 1);
  return 1;
}

int ct_cluster_reduce_f32(float *data, int64_t count, int root, ct_status *status) {
  if (bad_root(root, "reduce to", status)) return 1;
  if (!ct_mpi.mpi || count <= 0) return 0;
  ct_mpi_enter_collective("reduce");
  int err = MPI_SUCCESS;
  for (int64_t done = 0; done < count && err == MPI_SUCCESS;) {
    int n = count - done > CHUNK ? CHUNK : (int)(count - done);
    float *part = data + done;
    err = ct_mpi.rank == root
              ? MPI_Reduce(MPI_IN_PLACE, part, n, MPI_FLOAT, MPI_SUM, root, ct_mpi.comm)
              : MPI_Reduce(part, NULL, n, MPI_FLOAT, MPI_SUM, root, ct_mpi.comm);
    done += n;
  }
  ct_mpi_leave_collective();
  return ct_mpi_failed(err, "reduce (f32)", status);
}

int ct_cluster_broadcast(void *data, size_t bytes, int root, ct_status *status) {
  if (bad_root(root, "broadcast from", status)) return 1;
  if (!ct_mpi.mpi || bytes == 0) return 0;
  ct_mpi_enter_collective("broadcast");
  int err = MPI_SUCCESS;
  for (size_t done = 0; done < bytes && err == MPI_SUCCESS;) {
    int n = bytes - done > CHUNK ? CHUNK : (int)(bytes - done);
    err = MPI_Bcast((char *)data + done, n, MPI_BYTE, root, ct_mpi.comm);
    done += (size_t)n;
  }
  ct_mpi_leave_collective();
  return ct_mpi_failed(err, "broadcast", status);
}

int ct_cluster_gather_to_first(const void *mine, size_t bytes, char **all, size_t *all_bytes,
                               ct_status *status) {
  if (!ct_mpi.mpi) return ct_cluster_gather_alone(mine, bytes, all, all_bytes, status);
  *all = NULL;
  *all_bytes = 0;
  const int first = ct_mpi.rank == 0;
  int count = bytes < (size_t)INT_MAX ? (int)bytes : -1;
  int *counts = first ? calloc((size_t)ct_mpi.size, sizeof *counts) : NULL;
  int *offsets = first ? calloc((size_t)ct_mpi.size, sizeof *offsets) : NULL;
  int failed = first && (counts == NULL || offsets == NULL);
  ct_mpi_enter_collective("gather");
  /* every rank takes part in both calls, whatever went wrong, so that
   * none waits for another forever; a failure shows in the counts */
  if (failed) count = -1;
  int err = MPI_Gather(&count, 1, MPI_INT, counts, 1, MPI_INT, 0, ct_mpi.comm);
  size_t total = 0;
  for (int r = 0; first && err == MPI_SUCCESS && r < ct_mpi.size; ++r) {
    if (counts[r] < 0 || total + (size_t)counts[r] >= (size_t)INT_MAX) failed = 1;
    offsets[r] = failed ? 0 : (int)total;
    if (failed) counts[r] = 0;
    total += failed ? 0 : (size_t)counts[r];
  }
  if (first && err == MPI_SUCCESS && !failed && (*all = malloc(total + 1)) == NULL) failed = 1;
  if (first && failed)
    for (int r = 0; r < ct_mpi.size; ++r) counts[r] = 0, offsets[r] = 0;
  if (err == MPI_SUCCESS)
    err = MPI_Gatherv(mine, count < 0 ? 0 : count, MPI_BYTE, *all, counts, offsets, MPI_BYTE, 0,
                      ct_mpi.comm);
  ct_mpi_leave_collective();
  free(counts);
  free(offsets);
  if (ct_mpi_failed(err, "gather", status)) {
    free(*all);
    *all = NULL;
    return 1;
  }
  if (failed) {
    free(*all);
    *all = NULL;
    ct_status_set(status, CT_RESOURCE_EXHAUSTED,
                  "cannot gather the ranks' parts on rank 0: out of host memory, or 2 GiB or more "
                  "in all");
    return 1;
  }
  if (first) {
    (*all)[total] = '\0';
    *all_bytes = total;
  }
  return 0;
}

int ct_cluster_allgather(const void *mine, size_t bytes, void *all, ct_status *status) {
  if (!ct_mpi.mpi) {
    memmove(all, mine, bytes);
    return 0;
  }
  if (bytes == 0) return 0;
  ct_mpi_enter_collective("all-gather");
  int err = MPI_SUCCESS;
  for (size_t done = 0; done < bytes && err == MPI_SUCCESS;) {
    int n = bytes - done > CHUNK ? CHUNK : (int)(bytes - done);
    /* n bytes of each rank, rank r's at all + r * bytes + done */
    MPI_Datatype piece = MPI_DATATYPE_NULL, strided = MPI_DATATYPE_NULL;
    err = MPI_Type_contiguous(n, MPI_BYTE, &piece);
    if (err == MPI_SUCCESS) err = MPI_Type_create_resized(piece, 0, (MPI_Aint)bytes, &strided);
    if (err == MPI_SUCCESS) err = MPI_Type_commit(&strided);
    if (err == MPI_SUCCESS)
      err = MPI_Allgather((const char *)mine + done, n, MPI_BYTE, (char *)all + done, 1, strided,
                          ct_mpi.comm);
    if (strided != MPI_DATATYPE_NULL) MPI_Type_free(&strided);
    if (piece != MPI_DATATYPE_NULL) MPI_Type_free(&piece);
    done += (size_t)n;
  }
  ct_mpi_leave_collective();
  return ct_mpi_failed(err, "all-gather", status);
}

/* counts and offsets of the ranks as MPI's ints into out (2 * size of
 * them: counts, then offsets); 1 when one is 2 GiB or more. */
static int int_counts(const int64_t *counts, const int64_t *offsets, int *out) {
  int bad = 0;
  for (int r = 0; r < ct_mpi.size; ++r) {
    bad |= counts[r] < 0 || counts[r] >= INT_MAX || offsets[r] < 0 || offsets[r] >= INT_MAX;
    out[r] = bad ? 0 : (int)counts[r];
    out[ct_mpi.size + r] = bad ? 0 : (int)offsets[r];
  }
  return bad;
}

static int too_large(const char *call, ct_status *status) {
  ct_status_set(status, CT_INVALID_ARGUMENT,
                "%s of blocks of 2 GiB or more (or at offsets past 2 GiB) on rank %d; make the "
                "buckets smaller",
                call, ct_mpi.rank);
  return 1;
}

int ct_cluster_alltoallv(const void *send, const int64_t *send_counts, const int64_t *send_offsets,
                         void *recv, const int64_t *recv_counts, const int64_t *recv_offsets,
                         ct_status *status) {
  if (!ct_mpi.mpi) {
    memmove((char *)recv + recv_offsets[0], (const char *)send + send_offsets[0],
            (size_t)send_counts[0]);
    return 0;
  }
  int *sends = calloc((size_t)ct_mpi.size * 4, sizeof *sends);
  if (sends == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory for an all-to-all");
    return 1;
  }
  int *recvs = sends + 2 * ct_mpi.size;
  /* a rank with a count out of MPI's range sends and receives nothing, and
   * fails; the others go on with what they agree on */
  const int bad =
      int_counts(send_counts, send_offsets, sends) | int_counts(recv_counts, recv_offsets, recvs);
  if (bad) memset(sends, 0, (size_t)ct_mpi.size * 4 * sizeof *sends);
  ct_mpi_enter_collective("all-to-all");
  const int err = MPI_Alltoallv(send, sends, sends + ct_mpi.size, MPI_BYTE, recv, recvs,
                                recvs + ct_mpi.size, MPI_BYTE, ct_mpi.comm);
  ct_mpi_leave_collective();
  free(sends);
  if (ct_mpi_failed(err, "all-to-all", status)) return 1;
  return bad ? too_large("all-to-all", status) : 0;
}

int ct_cluster_allgatherv(void *all, const int64_t *counts, const int64_t *offsets,
                          ct_status *status) {
  if (!ct_mpi.mpi) return 0;
  int *ints = calloc((size_t)ct_mpi.size * 2, sizeof *ints);
  if (ints == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory for an all-gather");
    return 1;
  }
  if (int_counts(counts, offsets, ints)) { /* the same counts everywhere: every rank fails */
    free(ints);
    return too_large("all-gather", status);
  }
  ct_mpi_enter_collective("all-gather");
  const int err = MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, ints, ints + ct_mpi.size,
                                 MPI_BYTE, ct_mpi.comm);
  ct_mpi_leave_collective();
  free(ints);
  return ct_mpi_failed(err, "all-gather", status);
}

int ct_cluster_barrier(ct_status *status) {
  if (!ct_mpi.mpi) return 0;
  ct_mpi_enter_collective("barrier");
  int err = MPI_Barrier(ct_mpi.comm);
  ct_mpi_leave_collective();
  return ct_mpi_failed(err, "barrier", status);
}

/* ---- point-to-point messages --------------------------------------------- */

/* Starts a send (send = 1) or receive of `bytes` with peer on comm, into a
 * new request. */
static int start_p2p(MPI_Comm comm, int send, void *data, size_t bytes, int peer, int tag,
                     ct_cluster_request *request, ct_status *status) {
  request->impl = NULL;
  const char *call = send ? "sending to" : "receiving from";
  if (!ct_mpi.mpi) {
    ct_status_set(status, CT_UNAVAILABLE,
                  "%s rank %d: a process on its own has no other rank; start the job with mpirun",
                  call, peer);
    return 1;
  }
  if (bytes >= (size_t)INT_MAX || peer == ct_mpi.rank ||
      (peer != CT_CLUSTER_ANY_SOURCE && (peer < 0 || peer >= ct_mpi.size)) ||
      (send && peer == CT_CLUSTER_ANY_SOURCE)) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "%s rank %d (%zu bytes): the peer must be another rank of the %d, and a "
                  "message below 2 GiB",
                  call, peer, bytes, ct_mpi.size);
    return 1;
  }
  MPI_Request *r = malloc(sizeof *r);
  if (r == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory %s rank %d", call, peer);
    return 1;
  }
  const int source = peer == CT_CLUSTER_ANY_SOURCE ? MPI_ANY_SOURCE : peer;
  int err = send ? MPI_Isend(data, (int)bytes, MPI_BYTE, peer, tag, comm, r)
                 : MPI_Irecv(data, (int)bytes, MPI_BYTE, source, tag, comm, r);
  if (ct_mpi_failed(err, send ? "a send" : "a receive", status)) {
    free(r);
    return 1;
  }
  request->impl = r;
  return 0;
}

int ct_cluster_isend(const void *data, size_t bytes, int dest, int tag, ct_cluster_request *request,
                     ct_status *status) {
  return start_p2p(ct_mpi.comm, 1, (void *)data, bytes, dest, tag, request, status);
}

int ct_cluster_irecv(void *data, size_t bytes, int source, int tag, ct_cluster_request *request,
                     ct_status *status) {
  return start_p2p(ct_mpi.comm, 0, data, bytes, source, tag, request, status);
}

int ct_cluster_edge_isend(const void *data, size_t bytes, int dest, int tag,
                          ct_cluster_request *request, ct_status *status) {
  return start_p2p(ct_mpi.edge_comm, 1, (void *)data, bytes, dest, tag, request, status);
}

int ct_cluster_edge_irecv(void *data, size_t bytes, int source, int tag,
                          ct_cluster_request *request, ct_status *status) {
  return start_p2p(ct_mpi.edge_comm, 0, data, bytes, source, tag, request, status);
}

int ct_cluster_tag_limit(void) { return ct_mpi.mpi ? ct_mpi.tag_limit : 32767; }

int ct_cluster_wait(ct_cluster_request *request, int *source, ct_status *status) {
  MPI_Request *r = request->impl;
  if (source) *source = -1;
  if (r == NULL) return 0;
  request->impl = NULL;
  MPI_Status st;
  ct_mpi_enter_collective("message");
  int err = MPI_Wait(r, &st);
  ct_mpi_leave_collective();
  free(r);
  if (source && err == MPI_SUCCESS) *source = st.MPI_SOURCE;
  return ct_mpi_failed(err, "a point-to-point message", status);
}

int ct_cluster_test(ct_cluster_request *request, int *done, ct_status *status) {
  MPI_Request *r = request->impl;
  *done = 1;
  if (r == NULL) return 0;
  int flag = 0;
  int err = MPI_Test(r, &flag, MPI_STATUS_IGNORE);
  *done = flag || err != MPI_SUCCESS;
  if (*done) {
    free(r);
    request->impl = NULL;
  }
  return ct_mpi_failed(err, "a point-to-point message", status);
}

void ct_cluster_cancel(ct_cluster_request *request) {
  MPI_Request *r = request->impl;
  if (r == NULL) return;
  request->impl = NULL;
  MPI_Cancel(r);
  MPI_Wait(r, MPI_STATUS_IGNORE);
  free(r);
}
