/* What the environment says about the job this process was started in,
 * read from the variables launchers set (Open MPI's mpirun, MPICH's and
 * Intel's hydra, PMIx, Slurm's srun). Shared by both builds of cluster.h. */
#ifndef CTOWER_CLUSTER_LAUNCHER_H
#define CTOWER_CLUSTER_LAUNCHER_H

/* The number of ranks the environment shows: 0 when no launcher started
 * this process; otherwise the job's size, or (PMIx alone gives only the
 * rank) at least this rank + 1. Never fails. */
int ct_cluster_launcher_ranks(void);

#endif
