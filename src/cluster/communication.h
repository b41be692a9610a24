/* Communication between the job's processes (ranks), inside ctower: what
 * include/ctower/cluster.h gives (joining, ranks, the cluster spec, the
 * stall inspector) and the collectives and messages between the ranks.
 * Collectives must be called by every rank in the same order; they are safe
 * to call from any one thread at a time (MPI_THREAD_MULTIPLE is asked for,
 * so the stall inspector's thread may talk meanwhile). */
#ifndef CTOWER_CLUSTER_COMMUNICATION_H
#define CTOWER_CLUSTER_COMMUNICATION_H

#include <stddef.h>
#include <stdint.h>

#include "ctower/cluster.h"
#include "ctower/status.h"

/* In-place sums across every rank (the same count everywhere). Returns 0,
 * or 1 and status (UNAVAILABLE naming the call and MPI's error). */
int ct_cluster_allreduce_f32(float *data, int64_t count, ct_status *status);
int ct_cluster_allreduce_f64(double *data, int64_t count, ct_status *status);
int ct_cluster_allreduce_i64(int64_t *data, int64_t count, ct_status *status);
/* The sum across every rank into root's data (in place); the other ranks'
 * data are left as they were. Returns 0, or 1 and status (INVALID_ARGUMENT
 * for a root that is no rank, UNAVAILABLE naming MPI's error). */
int ct_cluster_reduce_f32(float *data, int64_t count, int root, ct_status *status);
/* root's bytes into every rank's data. */
int ct_cluster_broadcast(void *data, size_t bytes, int root, ct_status *status);
/* Every rank's `bytes` bytes, in rank order, into all (size * bytes). */
int ct_cluster_allgather(const void *mine, size_t bytes, void *all, ct_status *status);
/* Every rank's `bytes` bytes (a different count on each rank, below
 * 2 GiB), concatenated in rank order into *all (malloc'd, NUL-terminated,
 * *all_bytes long) on rank 0; *all is NULL on the other ranks. Returns 0,
 * or 1 and status. */
int ct_cluster_gather_to_first(const void *mine, size_t bytes, char **all, size_t *all_bytes,
                               ct_status *status);
/* Blocks between every pair of ranks, in bytes: this rank's
 * send_counts[j] bytes at send + send_offsets[j] go to rank j, and rank
 * j's for this rank land at recv + recv_offsets[j] (recv_counts[j] bytes,
 * the count rank j sends here). Counts and offsets below 2 GiB (else
 * INVALID_ARGUMENT, on every rank: each checks its own). Returns 0 or 1. */
int ct_cluster_alltoallv(const void *send, const int64_t *send_counts,
                         const int64_t *send_offsets, void *recv, const int64_t *recv_counts,
                         const int64_t *recv_offsets, ct_status *status);
/* Rank r's counts[r] bytes at all + offsets[r] into every rank's all, in
 * place (the same counts and offsets on every rank, below 2 GiB). */
int ct_cluster_allgatherv(void *all, const int64_t *counts, const int64_t *offsets,
                          ct_status *status);
int ct_cluster_barrier(ct_status *status);

/* What this rank is about to wait for in a collective: the training step
 * and the all-reduce bucket (-1: not a bucket), and a short name
 * ("bucket 3", "evaluation", "checkpoint"). The stall inspector reports it. */
void ct_cluster_progress(int64_t step, int bucket, const char *what);

/* Marks this rank as waiting for other ranks outside a collective (a run
 * that sends and receives values between tasks), named `op` with the last
 * ct_cluster_progress, so that the stall inspector names what it waits
 * for; ct_cluster_leave_wait ends it. Nothing in a process on its own. */
void ct_cluster_enter_wait(const char *op);
void ct_cluster_leave_wait(void);

/* ---- point-to-point messages, for ps and worker tasks ----------------------
 * Nonblocking sends and receives of bytes (below 2 GiB) between two ranks,
 * completed by ct_cluster_wait; a wait is watched by the stall inspector as
 * a collective is (name it with ct_cluster_progress first). In a process
 * on its own there is no other rank: UNAVAILABLE. */
enum { CT_CLUSTER_ANY_SOURCE = -1 };
typedef struct ct_cluster_request {
  void *impl; /* NULL: nothing pending */
} ct_cluster_request;
int ct_cluster_isend(const void *data, size_t bytes, int dest, int tag, ct_cluster_request *request,
                     ct_status *status);
int ct_cluster_irecv(void *data, size_t bytes, int source, int tag, ct_cluster_request *request,
                     ct_status *status);
/* Completes a request (nothing for one not pending); *source (when not
 * NULL) becomes the rank a receive came from. Returns 0 or fills status. */
int ct_cluster_wait(ct_cluster_request *request, int *source, ct_status *status);
/* Whether a request has completed, without waiting: *done becomes 1 (and
 * the request is released) or 0. Returns 0 or fills status. */
int ct_cluster_test(ct_cluster_request *request, int *done, ct_status *status);
/* Withdraws a pending receive and releases it (nothing for one not
 * pending). */
void ct_cluster_cancel(ct_cluster_request *request);

/* ---- a graph's edges between tasks -----------------------------------------
 * The values a graph sends from one task to another (exec/transfer.c)
 * travel on a communicator of their own, so that their tags (one per edge
 * and step) never meet the trainer's messages; otherwise as above. */
int ct_cluster_edge_isend(const void *data, size_t bytes, int dest, int tag,
                          ct_cluster_request *request, ct_status *status);
int ct_cluster_edge_irecv(void *data, size_t bytes, int source, int tag,
                          ct_cluster_request *request, ct_status *status);
/* The largest tag a message may carry (MPI_TAG_UB: at least 32767). */
int ct_cluster_tag_limit(void);

#endif
