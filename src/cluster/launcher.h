/* What the environment says about the job this process was started in,
 * read from the variables launchers set (Open MPI's mpirun, MPICH's and
 * Intel's hydra, PMIx, Slurm's srun), and what a process on its own does.
 * Shared by both builds of communication.h. */
#ifndef CTOWER_CLUSTER_LAUNCHER_H
#define CTOWER_CLUSTER_LAUNCHER_H

#include <stddef.h>

#include "ctower/status.h"

/* The number of ranks the environment shows: 0 when no launcher started
 * this process; otherwise the job's size, or (PMIx alone gives only the
 * rank) at least this rank + 1. Never fails. */
int ct_cluster_launcher_ranks(void);

/* ct_cluster_gather_to_first in a process on its own: a NUL-terminated
 * copy of its bytes. */
int ct_cluster_gather_alone(const void *mine, size_t bytes, char **all, size_t *all_bytes,
                            ct_status *status);

#endif
