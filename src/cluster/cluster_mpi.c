/* cluster.h over MPI (built with CTOWER_MPI): a process that a launcher
 * started joins MPI_COMM_WORLD; one started alone never calls MPI and
 * behaves as cluster_single.c does. Collectives run on a duplicate of the
 * world, the stall inspector's heartbeats on another, both with
 * MPI_ERRORS_RETURN so that MPI's errors become statuses. */
#include <limits.h>
#include <mpi.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cluster/cluster.h"
#include "core/clock.h"
#include "cluster/launcher.h"

/* The most elements (or bytes) one MPI call moves: MPI counts are ints. */
enum { CHUNK = INT_MAX, HEARTBEAT_TAG = 17 };

/* What a rank tells the others every half second: its last collective and
 * where it stands in it. */
typedef struct heartbeat {
  int64_t seq;         /* heartbeats this rank has sent before this one */
  int64_t collectives; /* collectives it has entered */
  int64_t step;        /* of its last collective; -1: none reported */
  int32_t bucket;      /* of its last collective; -1: not a bucket */
  int32_t inside;      /* 1 while it waits in collective number `collectives` */
  char op[16];         /* "all-reduce", "broadcast", "all-gather", "barrier" */
  char what[32];       /* its ct_cluster_progress name */
} heartbeat;

/* The stall inspector's state: one heartbeat in and one out per rank. */
typedef struct inspector {
  double timeout_s;
  heartbeat *in, *out, *seen; /* seen[r]: rank r's latest (this rank's own too) */
  MPI_Request *recv, *send;
  double *heard, *since; /* when rank r was last heard, and entered its state */
  pthread_t thread;
  atomic_int stop;
} inspector;

static struct {
  int initialized, mpi, thread_multiple;
  int rank, size, local_rank, local_size;
  MPI_Comm comm, heartbeat_comm, edge_comm; /* collectives and messages; heartbeats; edges */
  int tag_limit;
  pthread_mutex_t lock; /* guards mine, next and entered_at */
  heartbeat mine;       /* this rank's last collective */
  heartbeat next;       /* the progress reported for the next collective */
  double entered_at;    /* when this rank entered its last collective */
  inspector *inspector;
} g = {.size = 1,
       .local_size = 1,
       .lock = PTHREAD_MUTEX_INITIALIZER,
       .mine = {.step = -1, .bucket = -1},
       .next = {.step = -1, .bucket = -1}};

/* 0 for MPI_SUCCESS; else fills status with MPI's words for err, returns 1. */
static int mpi_failed(int err, const char *call, ct_status *status) {
  if (err == MPI_SUCCESS) return 0;
  char text[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  MPI_Error_string(err, text, &len);
  ct_status_set(status, CT_UNAVAILABLE, "%s failed on rank %d of %d: %s", call, g.rank, g.size,
                text);
  return 1;
}

int ct_cluster_init(int *argc, char ***argv, ct_status *status) {
  if (g.initialized) return 0;
  if (ct_cluster_launcher_ranks() == 0) {
    g.initialized = 1;
    return 0;
  }
  int provided = MPI_THREAD_SINGLE;
  if (MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
    ct_status_set(status, CT_UNAVAILABLE,
                  "a launcher (mpirun or srun) started this process but MPI could not start; "
                  "check the MPI installation, or run ctower without mpirun");
    return 1;
  }
  g.mpi = 1;
  g.thread_multiple = provided >= MPI_THREAD_MULTIPLE;
  MPI_Comm local = MPI_COMM_NULL;
  int err = MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  if (err == MPI_SUCCESS) err = MPI_Comm_rank(MPI_COMM_WORLD, &g.rank);
  if (err == MPI_SUCCESS) err = MPI_Comm_size(MPI_COMM_WORLD, &g.size);
  if (err == MPI_SUCCESS) err = MPI_Comm_dup(MPI_COMM_WORLD, &g.comm);
  if (err == MPI_SUCCESS) err = MPI_Comm_dup(MPI_COMM_WORLD, &g.heartbeat_comm);
  if (err == MPI_SUCCESS) err = MPI_Comm_dup(MPI_COMM_WORLD, &g.edge_comm);
  int *tag_limit = NULL, has_limit = 0;
  if (err == MPI_SUCCESS) err = MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_limit, &has_limit);
  g.tag_limit = has_limit && tag_limit ? *tag_limit : 32767;
  if (err == MPI_SUCCESS)
    err = MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, g.rank, MPI_INFO_NULL, &local);
  if (err == MPI_SUCCESS) err = MPI_Comm_rank(local, &g.local_rank);
  if (err == MPI_SUCCESS) err = MPI_Comm_size(local, &g.local_size);
  if (local != MPI_COMM_NULL) MPI_Comm_free(&local);
  if (mpi_failed(err, "joining the job (MPI_COMM_WORLD)", status)) return 1;
  g.initialized = 1;
  return 0;
}

static void stop_inspector(void);

void ct_cluster_finalize(void) {
  /* MPI_Finalize waits for every rank: the inspector watches that wait
   * too, so that a rank stopped before it cannot hang the others. */
  if (g.inspector != NULL) {
    ct_status ignored = CT_STATUS_INIT;
    ct_cluster_progress(-1, -1, "the end of the job");
    ct_cluster_barrier(&ignored);
  }
  stop_inspector();
  if (g.mpi) {
    MPI_Comm_free(&g.edge_comm);
    MPI_Comm_free(&g.heartbeat_comm);
    MPI_Comm_free(&g.comm);
    MPI_Finalize();
    g.mpi = 0;
  }
}

int ct_cluster_rank(void) { return g.rank; }
int ct_cluster_size(void) { return g.size; }
int ct_cluster_local_rank(void) { return g.local_rank; }
int ct_cluster_local_size(void) { return g.local_size; }

void ct_cluster_abort(int code) {
  fflush(stdout);
  fflush(stderr);
  if (g.mpi) {
    /* not MPI_Abort: with a rank stopped or under load, Open MPI 4.1's
     * mpirun could hang or crash in its own finalize after an abort, while
     * a rank that exits non-zero ends the job cleanly */
    _exit(code);
  }
  exit(code);
}

void ct_cluster_progress(int64_t step, int bucket, const char *what) {
  pthread_mutex_lock(&g.lock);
  g.next.step = step;
  g.next.bucket = bucket;
  snprintf(g.next.what, sizeof g.next.what, "%s", what ? what : "");
  pthread_mutex_unlock(&g.lock);
}

/* Marks this rank as waiting in a new collective `op`, with the progress
 * reported for it; leave_collective marks it done and forgets the bucket
 * and name (they were for this collective). */
static void enter_collective(const char *op) {
  pthread_mutex_lock(&g.lock);
  g.mine.collectives++;
  g.mine.inside = 1;
  g.mine.step = g.next.step;
  g.mine.bucket = g.next.bucket;
  snprintf(g.mine.op, sizeof g.mine.op, "%s", op);
  snprintf(g.mine.what, sizeof g.mine.what, "%s", g.next.what);
  g.entered_at = ct_monotonic_seconds();
  pthread_mutex_unlock(&g.lock);
}

static void leave_collective(void) {
  pthread_mutex_lock(&g.lock);
  g.mine.inside = 0;
  g.next.bucket = -1;
  g.next.what[0] = '\0';
  pthread_mutex_unlock(&g.lock);
}

void ct_cluster_enter_wait(const char *op) {
  if (g.mpi) enter_collective(op);
}

void ct_cluster_leave_wait(void) {
  if (g.mpi) leave_collective();
}

/* In-place sum of count elements of `type` (elem bytes each), chunk by chunk. */
static int allreduce(void *data, int64_t count, MPI_Datatype type, size_t elem, const char *call,
                     ct_status *status) {
  if (!g.mpi || count <= 0) return 0;
  enter_collective("all-reduce");
  int err = MPI_SUCCESS;
  for (int64_t done = 0; done < count && err == MPI_SUCCESS;) {
    int n = count - done > CHUNK ? CHUNK : (int)(count - done);
    err = MPI_Allreduce(MPI_IN_PLACE, (char *)data + (size_t)done * elem, n, type, MPI_SUM, g.comm);
    done += n;
  }
  leave_collective();
  return mpi_failed(err, call, status);
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
  if (root >= 0 && root < g.size) return 0;
  ct_status_set(status, CT_INVALID_ARGUMENT, "%s rank %d: the ranks are 0 to %d", call, root,
                g.size - 1);
  return 1;
}

int ct_cluster_reduce_f32(float *data, int64_t count, int root, ct_status *status) {
  if (bad_root(root, "reduce to", status)) return 1;
  if (!g.mpi || count <= 0) return 0;
  enter_collective("reduce");
  int err = MPI_SUCCESS;
  for (int64_t done = 0; done < count && err == MPI_SUCCESS;) {
    int n = count - done > CHUNK ? CHUNK : (int)(count - done);
    float *part = data + done;
    err = g.rank == root ? MPI_Reduce(MPI_IN_PLACE, part, n, MPI_FLOAT, MPI_SUM, root, g.comm)
                         : MPI_Reduce(part, NULL, n, MPI_FLOAT, MPI_SUM, root, g.comm);
    done += n;
  }
  leave_collective();
  return mpi_failed(err, "reduce (f32)", status);
}

int ct_cluster_broadcast(void *data, size_t bytes, int root, ct_status *status) {
  if (bad_root(root, "broadcast from", status)) return 1;
  if (!g.mpi || bytes == 0) return 0;
  enter_collective("broadcast");
  int err = MPI_SUCCESS;
  for (size_t done = 0; done < bytes && err == MPI_SUCCESS;) {
    int n = bytes - done > CHUNK ? CHUNK : (int)(bytes - done);
    err = MPI_Bcast((char *)data + done, n, MPI_BYTE, root, g.comm);
    done += (size_t)n;
  }
  leave_collective();
  return mpi_failed(err, "broadcast", status);
}

int ct_cluster_gather_to_first(const void *mine, size_t bytes, char **all, size_t *all_bytes,
                               ct_status *status) {
  if (!g.mpi) return ct_cluster_gather_alone(mine, bytes, all, all_bytes, status);
  *all = NULL;
  *all_bytes = 0;
  const int first = g.rank == 0;
  int count = bytes < (size_t)INT_MAX ? (int)bytes : -1;
  int *counts = first ? calloc((size_t)g.size, sizeof *counts) : NULL;
  int *offsets = first ? calloc((size_t)g.size, sizeof *offsets) : NULL;
  int failed = first && (counts == NULL || offsets == NULL);
  enter_collective("gather");
  /* every rank takes part in both calls, whatever went wrong, so that
   * none waits for another forever; a failure shows in the counts */
  if (failed) count = -1;
  int err = MPI_Gather(&count, 1, MPI_INT, counts, 1, MPI_INT, 0, g.comm);
  size_t total = 0;
  for (int r = 0; first && err == MPI_SUCCESS && r < g.size; ++r) {
    if (counts[r] < 0 || total + (size_t)counts[r] >= (size_t)INT_MAX) failed = 1;
    offsets[r] = failed ? 0 : (int)total;
    if (failed) counts[r] = 0;
    total += failed ? 0 : (size_t)counts[r];
  }
  if (first && err == MPI_SUCCESS && !failed && (*all = malloc(total + 1)) == NULL) failed = 1;
  if (first && failed)
    for (int r = 0; r < g.size; ++r) counts[r] = 0, offsets[r] = 0;
  if (err == MPI_SUCCESS)
    err = MPI_Gatherv(mine, count < 0 ? 0 : count, MPI_BYTE, *all, counts, offsets, MPI_BYTE, 0,
                      g.comm);
  leave_collective();
  free(counts);
  free(offsets);
  if (mpi_failed(err, "gather", status)) {
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
  if (!g.mpi) {
    memmove(all, mine, bytes);
    return 0;
  }
  if (bytes == 0) return 0;
  enter_collective("all-gather");
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
                          g.comm);
    if (strided != MPI_DATATYPE_NULL) MPI_Type_free(&strided);
    if (piece != MPI_DATATYPE_NULL) MPI_Type_free(&piece);
    done += (size_t)n;
  }
  leave_collective();
  return mpi_failed(err, "all-gather", status);
}

/* counts and offsets of the ranks as MPI's ints into out (2 * size of
 * them: counts, then offsets); 1 when one is 2 GiB or more. */
static int int_counts(const int64_t *counts, const int64_t *offsets, int *out) {
  int bad = 0;
  for (int r = 0; r < g.size; ++r) {
    bad |= counts[r] < 0 || counts[r] >= INT_MAX || offsets[r] < 0 || offsets[r] >= INT_MAX;
    out[r] = bad ? 0 : (int)counts[r];
    out[g.size + r] = bad ? 0 : (int)offsets[r];
  }
  return bad;
}

static int too_large(const char *call, ct_status *status) {
  ct_status_set(status, CT_INVALID_ARGUMENT,
                "%s of blocks of 2 GiB or more (or at offsets past 2 GiB) on rank %d; make the "
                "buckets smaller",
                call, g.rank);
  return 1;
}

int ct_cluster_alltoallv(const void *send, const int64_t *send_counts,
                         const int64_t *send_offsets, void *recv, const int64_t *recv_counts,
                         const int64_t *recv_offsets, ct_status *status) {
  if (!g.mpi) {
    memmove((char *)recv + recv_offsets[0], (const char *)send + send_offsets[0],
            (size_t)send_counts[0]);
    return 0;
  }
  int *sends = calloc((size_t)g.size * 4, sizeof *sends);
  if (sends == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory for an all-to-all");
    return 1;
  }
  int *recvs = sends + 2 * g.size;
  /* a rank with a count out of MPI's range sends and receives nothing, and
   * fails; the others go on with what they agree on */
  const int bad = int_counts(send_counts, send_offsets, sends) |
                  int_counts(recv_counts, recv_offsets, recvs);
  if (bad) memset(sends, 0, (size_t)g.size * 4 * sizeof *sends);
  enter_collective("all-to-all");
  const int err = MPI_Alltoallv(send, sends, sends + g.size, MPI_BYTE, recv, recvs,
                                recvs + g.size, MPI_BYTE, g.comm);
  leave_collective();
  free(sends);
  if (mpi_failed(err, "all-to-all", status)) return 1;
  return bad ? too_large("all-to-all", status) : 0;
}

int ct_cluster_allgatherv(void *all, const int64_t *counts, const int64_t *offsets,
                          ct_status *status) {
  if (!g.mpi) return 0;
  int *ints = calloc((size_t)g.size * 2, sizeof *ints);
  if (ints == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory for an all-gather");
    return 1;
  }
  if (int_counts(counts, offsets, ints)) { /* the same counts everywhere: every rank fails */
    free(ints);
    return too_large("all-gather", status);
  }
  enter_collective("all-gather");
  const int err = MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, ints, ints + g.size,
                                 MPI_BYTE, g.comm);
  leave_collective();
  free(ints);
  return mpi_failed(err, "all-gather", status);
}

int ct_cluster_barrier(ct_status *status) {
  if (!g.mpi) return 0;
  enter_collective("barrier");
  int err = MPI_Barrier(g.comm);
  leave_collective();
  return mpi_failed(err, "barrier", status);
}

/* ---- point-to-point messages --------------------------------------------- */

/* Starts a send (send = 1) or receive of `bytes` with peer on comm, into a
 * new request. */
static int start_p2p(MPI_Comm comm, int send, void *data, size_t bytes, int peer, int tag,
                     ct_cluster_request *request, ct_status *status) {
  request->impl = NULL;
  const char *call = send ? "sending to" : "receiving from";
  if (!g.mpi) {
    ct_status_set(status, CT_UNAVAILABLE,
                  "%s rank %d: a process on its own has no other rank; start the job with mpirun",
                  call, peer);
    return 1;
  }
  if (bytes >= (size_t)INT_MAX || peer == g.rank ||
      (peer != CT_CLUSTER_ANY_SOURCE && (peer < 0 || peer >= g.size)) ||
      (send && peer == CT_CLUSTER_ANY_SOURCE)) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "%s rank %d (%zu bytes): the peer must be another rank of the %d, and a "
                  "message below 2 GiB",
                  call, peer, bytes, g.size);
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
  if (mpi_failed(err, send ? "a send" : "a receive", status)) {
    free(r);
    return 1;
  }
  request->impl = r;
  return 0;
}

int ct_cluster_isend(const void *data, size_t bytes, int dest, int tag, ct_cluster_request *request,
                     ct_status *status) {
  return start_p2p(g.comm, 1, (void *)data, bytes, dest, tag, request, status);
}

int ct_cluster_irecv(void *data, size_t bytes, int source, int tag, ct_cluster_request *request,
                     ct_status *status) {
  return start_p2p(g.comm, 0, data, bytes, source, tag, request, status);
}

int ct_cluster_edge_isend(const void *data, size_t bytes, int dest, int tag,
                          ct_cluster_request *request, ct_status *status) {
  return start_p2p(g.edge_comm, 1, (void *)data, bytes, dest, tag, request, status);
}

int ct_cluster_edge_irecv(void *data, size_t bytes, int source, int tag,
                          ct_cluster_request *request, ct_status *status) {
  return start_p2p(g.edge_comm, 0, data, bytes, source, tag, request, status);
}

int ct_cluster_tag_limit(void) { return g.mpi ? g.tag_limit : 32767; }

int ct_cluster_wait(ct_cluster_request *request, int *source, ct_status *status) {
  MPI_Request *r = request->impl;
  if (source) *source = -1;
  if (r == NULL) return 0;
  request->impl = NULL;
  MPI_Status st;
  enter_collective("message");
  int err = MPI_Wait(r, &st);
  leave_collective();
  free(r);
  if (source && err == MPI_SUCCESS) *source = st.MPI_SOURCE;
  return mpi_failed(err, "a point-to-point message", status);
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
  return mpi_failed(err, "a point-to-point message", status);
}

void ct_cluster_cancel(ct_cluster_request *request) {
  MPI_Request *r = request->impl;
  if (r == NULL) return;
  request->impl = NULL;
  MPI_Cancel(r);
  MPI_Wait(r, MPI_STATUS_IGNORE);
  free(r);
}

/* ---- the stall inspector ----------------------------------------------------- */

/* "all-reduce bucket 3 of step 12", "broadcast for checkpoint", ... */
static void describe(const heartbeat *h, char *buf, size_t size) {
  if (h->collectives == 0) {
    snprintf(buf, size, "no collective yet");
    return;
  }
  int n = h->bucket >= 0 ? snprintf(buf, size, "%s bucket %d", h->op, (int)h->bucket)
          : h->what[0]   ? snprintf(buf, size, "%s for %s", h->op, h->what)
                         : snprintf(buf, size, "%s", h->op);
  if (h->step >= 0 && n >= 0 && (size_t)n < size)
    snprintf(buf + n, size - (size_t)n, " of step %lld", (long long)h->step);
}

/* Appends the printf-formatted text to buf (size bytes, *used of them
 * taken), truncating at its end. */
static void append(char *buf, size_t size, size_t *used, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void append(char *buf, size_t size, size_t *used, const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  int w = vsnprintf(buf + *used, size - *used, fmt, args);
  va_end(args);
  if (w > 0) *used = *used + (size_t)w < size ? *used + (size_t)w : size - 1;
}

/* Prints, as this rank sees it, which ranks have not reached the collective
 * that others wait in (or have gone silent), and ends the job. */
static void report_stall(const inspector *in, double now) {
  char msg[4096], lagging[512] = "", waiting[512] = "", waited[160] = "", last[160];
  size_t used = 0, lag_used = 0, wait_used = 0;
  int waiting_in = -1, laggards = 0, waiters = 0;
  for (int r = 0; r < g.size; ++r)
    if (in->seen[r].inside &&
        (waiting_in < 0 || in->seen[r].collectives > in->seen[waiting_in].collectives))
      waiting_in = r;
  if (waiting_in >= 0) describe(&in->seen[waiting_in], waited, sizeof waited);
  const int64_t target = waiting_in >= 0 ? in->seen[waiting_in].collectives : 0;
  msg[0] = '\0';
  for (int r = 0; r < g.size; ++r) {
    const int silent = r != g.rank && now - in->heard[r] >= in->timeout_s;
    const int behind = waiting_in >= 0 && in->seen[r].collectives < target;
    if (waiting_in >= 0 && in->seen[r].inside && in->seen[r].collectives == target)
      append(waiting, sizeof waiting, &wait_used, "%s%d", waiters++ ? ", " : "", r);
    if (!silent && !behind) continue;
    describe(&in->seen[r], last, sizeof last);
    if (behind)
      append(msg, sizeof msg, &used, "%srank %d has not reached %s (its last: %s",
             laggards ? "; " : "", r, waited, last);
    else
      append(msg, sizeof msg, &used, "%srank %d has sent nothing (its last: %s",
             laggards ? "; " : "", r, last);
    if (silent) append(msg, sizeof msg, &used, "; silent for %.0f s", now - in->heard[r]);
    append(msg, sizeof msg, &used, ")");
    append(lagging, sizeof lagging, &lag_used, "%s%d", laggards++ ? ", " : "", r);
  }
  if (laggards == 0)
    append(msg, sizeof msg, &used, "every rank has waited in %s for %.0f s", waited, in->timeout_s);
  else if (waiters > 0)
    append(msg, sizeof msg, &used, "; rank%s %s %s there", waiters > 1 ? "s" : "", waiting,
           waiters > 1 ? "wait" : "waits");
  fprintf(stderr,
          "%sctower: error: stalled for %.0f s: %s. Check rank%s %s (stopped, or stuck in a long "
          "step), or raise cluster.stall_timeout_s\n",
          ct_cluster_log_prefix(), in->timeout_s, msg, laggards == 1 ? "" : "s", laggards ? lagging : "every");
  /* One rank ends the job: the lowest that still answers, so that the job
   * ends the same way whichever ranks saw the stall; the others wait to be
   * ended, and end the job themselves if that does not come. */
  int aborter = g.rank;
  for (int r = 0; r < g.rank; ++r)
    if (now - in->heard[r] < in->timeout_s &&
        !(waiting_in >= 0 && in->seen[r].collectives < target)) {
      aborter = r;
      break;
    }
  /* the aborter too waits a moment: the launcher forwards every rank's
   * report above before it ends the ranks (on a loaded machine one was
   * lost otherwise) */
  sleep(aborter != g.rank ? 5 : 1);
  ct_cluster_abort(1);
}

/* For an MPI call of the inspector that failed: the heartbeats are lost, so
 * no stall could be seen any more; the job ends. */
static void inspector_failed(int err, const char *call) {
  ct_status status = CT_STATUS_INIT;
  mpi_failed(err, call, &status);
  fprintf(stderr, "%sctower: error: the stall inspector stopped: %s\n", ct_cluster_log_prefix(), status.message);
  ct_cluster_abort(1);
}

/* Records a heartbeat of rank r heard at `now`. */
static void note(inspector *in, int r, const heartbeat *h, double now) {
  if (h->collectives != in->seen[r].collectives || h->inside != in->seen[r].inside)
    in->since[r] = now;
  in->seen[r] = *h;
  in->heard[r] = now;
}

static void inspect_once(inspector *in) {
  const double now = ct_monotonic_seconds();
  const int n = (int)sizeof(heartbeat);
  for (int r = 0; r < g.size; ++r) {
    if (r == g.rank) continue;
    for (;;) {
      int done = 0, err = MPI_Test(&in->recv[r], &done, MPI_STATUS_IGNORE);
      if (err != MPI_SUCCESS) inspector_failed(err, "receiving a heartbeat");
      if (!done) break;
      note(in, r, &in->in[r], now);
      err = MPI_Irecv(&in->in[r], n, MPI_BYTE, r, HEARTBEAT_TAG, g.heartbeat_comm, &in->recv[r]);
      if (err != MPI_SUCCESS) inspector_failed(err, "receiving a heartbeat");
    }
  }
  pthread_mutex_lock(&g.lock);
  heartbeat mine = g.mine;
  const double entered_at = g.entered_at;
  pthread_mutex_unlock(&g.lock);
  mine.seq = in->seen[g.rank].seq + 1;
  in->seen[g.rank] = mine;
  in->heard[g.rank] = now;
  in->since[g.rank] = entered_at;
  for (int r = 0; r < g.size; ++r) {
    if (r == g.rank) continue;
    int idle = 0, err = MPI_Test(&in->send[r], &idle, MPI_STATUS_IGNORE);
    if (err == MPI_SUCCESS && idle) {
      in->out[r] = mine;
      err = MPI_Isend(&in->out[r], n, MPI_BYTE, r, HEARTBEAT_TAG, g.heartbeat_comm, &in->send[r]);
    }
    if (err != MPI_SUCCESS) inspector_failed(err, "sending a heartbeat");
  }
  for (int r = 0; r < g.size; ++r) {
    const int silent = r != g.rank && now - in->heard[r] >= in->timeout_s;
    const int stuck = in->seen[r].inside && now - in->since[r] >= in->timeout_s;
    if (silent || stuck) report_stall(in, now);
  }
}

static void *inspector_main(void *arg) {
  inspector *in = arg;
  const struct timespec tick = {0, 50 * 1000 * 1000};
  while (!atomic_load(&in->stop)) {
    inspect_once(in);
    for (int i = 0; i < 10 && !atomic_load(&in->stop); ++i) nanosleep(&tick, NULL);
  }
  return NULL;
}

static void inspector_free(inspector *in) {
  free(in->in);
  free(in->out);
  free(in->seen);
  free(in->recv);
  free(in->send);
  free(in->heard);
  free(in->since);
  free(in);
}

/* Cancels the pending receives, completes the sends (heartbeats are small:
 * MPI has sent them already) and frees the inspector. */
static void inspector_end(inspector *in) {
  for (int r = 0; r < g.size; ++r) {
    if (in->recv[r] != MPI_REQUEST_NULL) {
      MPI_Cancel(&in->recv[r]);
      MPI_Wait(&in->recv[r], MPI_STATUS_IGNORE);
    }
    if (in->send[r] != MPI_REQUEST_NULL) MPI_Wait(&in->send[r], MPI_STATUS_IGNORE);
  }
  inspector_free(in);
}

static void stop_inspector(void) {
  inspector *in = g.inspector;
  if (in == NULL) return;
  atomic_store(&in->stop, 1);
  pthread_join(in->thread, NULL);
  inspector_end(in);
  g.inspector = NULL;
}

int ct_cluster_start_stall_inspector(double timeout_s, ct_status *status) {
  if (!g.mpi || g.size < 2 || timeout_s <= 0 || g.inspector != NULL) return 0;
  if (!g.thread_multiple) {
    ct_status_set(status, CT_UNAVAILABLE,
                  "the stall inspector needs MPI_THREAD_MULTIPLE, which this MPI does not "
                  "provide; set cluster.stall_timeout_s: 0 to run without it");
    return 1;
  }
  const size_t n = (size_t)g.size;
  inspector *in = calloc(1, sizeof *in);
  if (in != NULL) {
    in->in = calloc(n, sizeof *in->in);
    in->out = calloc(n, sizeof *in->out);
    in->seen = calloc(n, sizeof *in->seen);
    in->recv = malloc(n * sizeof *in->recv);
    in->send = malloc(n * sizeof *in->send);
    in->heard = malloc(n * sizeof *in->heard);
    in->since = malloc(n * sizeof *in->since);
  }
  if (in == NULL || !in->in || !in->out || !in->seen || !in->recv || !in->send || !in->heard ||
      !in->since) {
    if (in) inspector_free(in);
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory starting the stall inspector");
    return 1;
  }
  in->timeout_s = timeout_s;
  atomic_init(&in->stop, 0);
  const double now = ct_monotonic_seconds();
  int err = MPI_SUCCESS;
  for (int r = 0; r < g.size; ++r) {
    in->seen[r].step = -1;
    in->seen[r].bucket = -1;
    in->heard[r] = in->since[r] = now;
    in->send[r] = in->recv[r] = MPI_REQUEST_NULL;
    if (r != g.rank && err == MPI_SUCCESS)
      err = MPI_Irecv(&in->in[r], (int)sizeof(heartbeat), MPI_BYTE, r, HEARTBEAT_TAG,
                      g.heartbeat_comm, &in->recv[r]);
  }
  if (mpi_failed(err, "starting the stall inspector", status)) {
    inspector_end(in);
    return 1;
  }
  if (pthread_create(&in->thread, NULL, inspector_main, in) != 0) {
    inspector_end(in);
    ct_status_set(status, CT_UNAVAILABLE, "could not start the stall inspector's thread");
    return 1;
  }
  g.inspector = in;
  return 0;
}
