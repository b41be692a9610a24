/* The defaults of ctower/session_options.h, as TensorFlow's ConfigProto
 * has them: soft placement, one CPU device, every GPU, all their memory;
 * under mpirun the devices are named with this rank's job and task. */
#include <stdio.h>
#include <string.h>

#include "ctower/cluster.h"
#include "ctower/session_options.h"

void ct_session_options_defaults(ct_session_options *options) {
  memset(options, 0, sizeof *options);
  options->allow_soft_placement = 1;
  options->device_count_cpu = 1;
  options->device_count_gpu = -1;
  options->gpu_options.per_process_gpu_memory_fraction = 1.0;
  if (ct_cluster_size() > 1) { /* this rank's devices are its task's */
    snprintf(options->job, sizeof options->job, "%s", ct_cluster_job());
    options->task = ct_cluster_task();
  }
}
