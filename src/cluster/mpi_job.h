/* This process as a rank of an MPI job (communication.h's MPI build): the
 * state that its files share. mpi_job.c joins the job and keeps the rank's
 * identity and the progress it reports; cluster_mpi.c runs the collectives
 * and messages; stall_inspector.c sends the progress to the other ranks and
 * watches theirs. */
#ifndef CTOWER_CLUSTER_MPI_JOB_H
#define CTOWER_CLUSTER_MPI_JOB_H
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>

#include "ctower/status.h"

/* What a rank tells the others every half second: its last collective and
 * where it stands in it. */
typedef struct ct_heartbeat {
  int64_t seq;         /* heartbeats this rank has sent before this one */
  int64_t collectives; /* collectives it has entered */
  int64_t step;        /* of its last collective; -1: none reported */
  int32_t bucket;      /* of its last collective; -1: not a bucket */
  int32_t inside;      /* 1 while it waits in collective number `collectives` */
  char op[16];         /* "all-reduce", "broadcast", "all-gather", "barrier" */
  char what[32];       /* its ct_cluster_progress name */
} ct_heartbeat;

/* The job as this process sees it: set by ct_cluster_init (mpi_job.c),
 * the communicators freed by ct_cluster_finalize (cluster_mpi.c). */
typedef struct ct_mpi_job {
  int initialized, mpi, thread_multiple;
  int rank, size, local_rank, local_size;
  MPI_Comm comm, heartbeat_comm, edge_comm; /* collectives and messages; heartbeats; edges */
  int tag_limit;
  pthread_mutex_t lock; /* guards mine, next and entered_at */
  ct_heartbeat mine;    /* this rank's last collective */
  ct_heartbeat next;    /* the progress reported for the next collective */
  double entered_at;    /* when this rank entered its last collective */
} ct_mpi_job;
extern ct_mpi_job ct_mpi; /* this process's, in mpi_job.c */

/* 0 for MPI_SUCCESS; else fills status with MPI's words for err, returns 1. */
int ct_mpi_failed(int err, const char *call, ct_status *status);
/* Marks this rank as waiting in a new collective `op`, with the progress
 * reported for it; ct_mpi_leave_collective marks it done and forgets the
 * bucket and name (they were for this collective). */
void ct_mpi_enter_collective(const char *op);
void ct_mpi_leave_collective(void);
/* Whether the stall inspector runs; stopping it (nothing when it does not)
 * cancels its messages and joins its thread. */
int ct_stall_inspector_running(void);
void ct_stall_inspector_stop(void);
#endif
