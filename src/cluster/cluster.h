/* The processes of a job: MPI ranks, as TensorFlow tasks. Rank k of a job
 * launched by mpirun (or srun) is /job:worker/replica:0/task:k; a process
 * started on its own is the only one (size 1, rank 0) and never touches MPI.
 *
 * This is ctower's one piece of process-wide state besides the device
 * registry, because MPI's world is process-wide: ct_cluster_init once, at
 * the start of main, and ct_cluster_finalize at its end. Every call below
 * works on a build without MPI (CTOWER_MPI=off) and in a process started
 * alone: size 1, collectives are copies or nothing.
 *
 * Collectives must be called by every rank in the same order; they are
 * safe to call from any one thread at a time (MPI_THREAD_MULTIPLE is asked
 * for, so the stall inspector's thread may talk meanwhile). */
#ifndef CTOWER_CLUSTER_H
#define CTOWER_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

#include "ctower/status.h"

/* Joins the job when the environment says mpirun or srun started this
 * process (OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_RANK, ...), else stays a
 * single process. A second call does nothing. Returns 0, or 1 and status
 * (UNAVAILABLE: launched by mpirun but MPI cannot start, or a build without
 * MPI launched as one of several ranks: rebuild with CTOWER_MPI=on). */
int ct_cluster_init(int *argc, char ***argv, ct_status *status);
/* Leaves the job (MPI_Finalize when MPI was started), which waits for
 * every rank: with the stall inspector running, it watches that wait too
 * (a barrier) before it stops. */
void ct_cluster_finalize(void);

int ct_cluster_rank(void);       /* 0 .. size-1 */
int ct_cluster_size(void);       /* 1 for a process on its own */
/* Ranks on this machine, and this one's index among them (cores and GPUs
 * are shared between them). */
int ct_cluster_local_rank(void);
int ct_cluster_local_size(void);

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
int ct_cluster_barrier(ct_status *status);

/* Ends every rank of the job now with exit status `code` (MPI_Abort); in a
 * process on its own, exit(code). For a rank that failed: print first. */
void ct_cluster_abort(int code);

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

/* Starts a thread that exchanges heartbeats (each rank's last progress)
 * with every other rank. When a rank has sent nothing for timeout_s
 * seconds (stopped, or stuck in a long step) or has been stuck in the same
 * collective that long, every rank that notices prints which ranks have
 * not reached which collective (bucket and step), as Horovod's stall
 * inspector does, and the job ends with a non-zero status. Nothing for a
 * process on its own or timeout_s <= 0. Returns 0 or fills status. */
int ct_cluster_start_stall_inspector(double timeout_s, ct_status *status);

/* "[worker 2] " (or "[ps 0] " under a cluster spec) in a job of several
 * ranks, "" otherwise: what a rank puts before the errors and warnings it
 * prints. */
const char *ct_cluster_log_prefix(void);

/* ---- the cluster spec: TensorFlow's jobs and tasks over the ranks --------
 * cluster: {ps: P, worker: W}: ranks 0 .. P-1 are /job:ps/task:0 .. P-1,
 * ranks P .. P+W-1 /job:worker/task:0 .. W-1. Without ps tasks (P = 0)
 * every rank is a worker, task = rank. (cluster_spec.c, both builds.) */

/* Sets the spec; every rank sets the same one, before naming its devices.
 * P = W = 0: no spec. Returns 0, or 1 and INVALID_ARGUMENT when W is 0
 * beside ps tasks or P + W is not the job's size (both named). */
int ct_cluster_set_spec(int ps, int workers, ct_status *status);
int ct_cluster_ps_tasks(void);        /* P: 0 without ps tasks */
int ct_cluster_is_ps(void);           /* whether this rank is a ps task */
const char *ct_cluster_job(void);     /* this rank's job: "ps" or "worker" */
int ct_cluster_task(void);            /* its task within the job */
/* How many tasks job `job` ("ps", "worker") has, and the rank of one of
 * them (-1: no such task). */
int ct_cluster_job_tasks(const char *job);
int ct_cluster_rank_of(const char *job, int task);
/* The job ("ps" or "worker") and the task of rank r. */
const char *ct_cluster_job_of(int rank);
int ct_cluster_task_of(int rank);

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
