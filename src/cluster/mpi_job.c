/* Joining an MPI job (communication.h over MPI, built with CTOWER_MPI): a
 * process that a launcher started joins MPI_COMM_WORLD; one started alone
 * never calls MPI and behaves as cluster_single.c does. Collectives run on a
 * duplicate of the world, the stall inspector's heartbeats on another, the
 * edges between tasks on a third, all with MPI_ERRORS_RETURN so that MPI's
 * errors become statuses. Also this rank's identity and the progress it
 * reports (mpi_job.h). */
#include "cluster/mpi_job.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cluster/communication.h"
#include "cluster/launcher.h"
#include "core/clock.h"

ct_mpi_job ct_mpi = {.size = 1,
                     .local_size = 1,
                     .lock = PTHREAD_MUTEX_INITIALIZER,
                     .mine = {.step = -1, .bucket = -1},
                     .next = {.step = -1, .bucket = -1}};

int ct_mpi_failed(int err, const char *call, ct_status *status) {
  if (err == MPI_SUCCESS) return 0;
  char text[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  MPI_Error_string(err, text, &len);
  ct_status_set(status, CT_UNAVAILABLE, "%s failed on rank %d of %d: %s", call, ct_mpi.rank,
                ct_mpi.size, text);
  return 1;
}

int ct_cluster_init(int *argc, char ***argv, ct_status *status) {
  if (ct_mpi.initialized) return 0;
  if (ct_cluster_launcher_ranks() == 0) {
    ct_mpi.initialized = 1;
    return 0;
  }
  int provided = MPI_THREAD_SINGLE;
  if (MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
    ct_status_set(status, CT_UNAVAILABLE,
                  "a launcher (mpirun or srun) started this process but MPI could not start; "
                  "check the MPI installation, or run ctower without mpirun");
    return 1;
  }
  ct_mpi.mpi = 1;
  ct_mpi.thread_multiple = provided >= MPI_THREAD_MULTIPLE;
  MPI_Comm local = MPI_COMM_NULL;
  int err = MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  if (err == MPI_SUCCESS) err = MPI_Comm_rank(MPI_COMM_WORLD, &ct_mpi.rank);
  if (err == MPI_SUCCESS) err = MPI_Comm_size(MPI_COMM_WORLD, &ct_mpi.size);
  if (err == MPI_SUCCESS) err = MPI_Comm_dup(MPI_COMM_WORLD, &ct_mpi.comm);
  if (err == MPI_SUCCESS) err = MPI_Comm_dup(MPI_COMM_WORLD, &ct_mpi.heartbeat_comm);
  if (err == MPI_SUCCESS) err = MPI_Comm_dup(MPI_COMM_WORLD, &ct_mpi.edge_comm);
  int *tag_limit = NULL, has_limit = 0;
  if (err == MPI_SUCCESS)
    err = MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_limit, &has_limit);
  ct_mpi.tag_limit = has_limit && tag_limit ? *tag_limit : 32767;
  if (err == MPI_SUCCESS)
    err = MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, ct_mpi.rank, MPI_INFO_NULL,
                              &local);
  if (err == MPI_SUCCESS) err = MPI_Comm_rank(local, &ct_mpi.local_rank);
  if (err == MPI_SUCCESS) err = MPI_Comm_size(local, &ct_mpi.local_size);
  if (local != MPI_COMM_NULL) MPI_Comm_free(&local);
  if (ct_mpi_failed(err, "joining the job (MPI_COMM_WORLD)", status)) return 1;
  ct_mpi.initialized = 1;
  return 0;
}

int ct_cluster_rank(void) { return ct_mpi.rank; }
int ct_cluster_size(void) { return ct_mpi.size; }
int ct_cluster_local_rank(void) { return ct_mpi.local_rank; }
int ct_cluster_local_size(void) { return ct_mpi.local_size; }

void ct_cluster_abort(int code) {
  fflush(stdout);
  fflush(stderr);
  if (ct_mpi.mpi) {
    /* not MPI_Abort: with a rank stopped or under load, Open MPI 4.1's
     * mpirun could hang or crash in its own finalize after an abort, while
     * a rank that exits non-zero ends the job cleanly */
    _exit(code);
  }
  exit(code);
}

void ct_cluster_progress(int64_t step, int bucket, const char *what) {
  pthread_mutex_lock(&ct_mpi.lock);
  ct_mpi.next.step = step;
  ct_mpi.next.bucket = bucket;
  snprintf(ct_mpi.next.what, sizeof ct_mpi.next.what, "%s", what ? what : "");
  pthread_mutex_unlock(&ct_mpi.lock);
}

void ct_mpi_enter_collective(const char *op) {
  pthread_mutex_lock(&ct_mpi.lock);
  ct_mpi.mine.collectives++;
  ct_mpi.mine.inside = 1;
  ct_mpi.mine.step = ct_mpi.next.step;
  ct_mpi.mine.bucket = ct_mpi.next.bucket;
  snprintf(ct_mpi.mine.op, sizeof ct_mpi.mine.op, "%s", op);
  snprintf(ct_mpi.mine.what, sizeof ct_mpi.mine.what, "%s", ct_mpi.next.what);
  ct_mpi.entered_at = ct_monotonic_seconds();
  pthread_mutex_unlock(&ct_mpi.lock);
}

void ct_mpi_leave_collective(void) {
  pthread_mutex_lock(&ct_mpi.lock);
  ct_mpi.mine.inside = 0;
  ct_mpi.next.bucket = -1;
  ct_mpi.next.what[0] = '\0';
  pthread_mutex_unlock(&ct_mpi.lock);
}

void ct_cluster_enter_wait(const char *op) {
  if (ct_mpi.mpi) ct_mpi_enter_collective(op);
}

void ct_cluster_leave_wait(void) {
  if (ct_mpi.mpi) ct_mpi_leave_collective();
}
