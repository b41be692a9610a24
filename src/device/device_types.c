/* The device types a session creates devices of, in order: a new type is
 * one file that fills a ct_device_ops and one line here. */
#include "device/cpu_device.h"
#ifdef CTOWER_HAVE_CUDA
#include "device/cuda/cuda_device.h"
#endif

const ct_device_ops *const ct_device_types[] = {
    &ct_cpu_device_ops,
#ifdef CTOWER_HAVE_CUDA
    &ct_cuda_device_ops,
#endif
};
const int ct_device_type_count = sizeof ct_device_types / sizeof ct_device_types[0];
