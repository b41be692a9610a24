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
 * Under mpirun a session's devices are named with this rank's job and task
 * (ct_session_options_defaults), and a graph's device scopes may name the
 * devices of other tasks (ctower/graph.h): every rank then builds the same
 * graph and makes the same runs, and the values that cross processes are
 * sent between them. */
#ifndef CTOWER_CLUSTER_PUBLIC_H
#define CTOWER_CLUSTER_PUBLIC_H

#include "ctower/status.h"

#ifdef __cplusplus
extern "C" {
#endif

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

/* Ends every rank of the job now with exit status `code`: this rank exits
 * at once and the launcher (mpirun ends a job when a rank exits non-zero)
 * ends the others; in a process on its own, exit(code). For a rank that
 * failed: print first. */
void ct_cluster_abort(int code);

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

#ifdef __cplusplus
}
#endif

#endif
