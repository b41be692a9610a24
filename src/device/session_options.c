/* The defaults of ctower/session_options.h, as TensorFlow's ConfigProto
 * has them: soft placement, one CPU device, every GPU, all their memory. */
#include <string.h>

#include "ctower/session_options.h"

void ct_session_options_defaults(ct_session_options *options) {
  memset(options, 0, sizeof *options);
  options->allow_soft_placement = 1;
  options->device_count_cpu = 1;
  options->device_count_gpu = -1;
  options->gpu_options.per_process_gpu_memory_fraction = 1.0;
}
