/* A device: where kernels run and buffers live. One per /cpu:N (and later
 * /gpu:N); each owns its worker threads' count, its allocator and, for CPU
 * devices, the oneDNN engine and stream its kernels use. */
#ifndef CTOWER_DEVICE_H
#define CTOWER_DEVICE_H

#include <dnnl.h>

#include "device/allocator.h"
#include "kernels/kernel.h"

typedef struct ct_device {
  char name[128];           /* canonical: /job:localhost/replica:0/task:0/device:CPU:0 */
  ct_device_type type;
  int index;                /* N in /cpu:N */
  int threads;              /* worker threads of this device */
  ct_allocator *allocator;
  dnnl_engine_t engine;     /* CPU: the oneDNN engine */
  dnnl_stream_t stream;
} ct_device;

/* A CPU device with `threads` workers and an optional memory limit in bytes
 * (0: none). Returns NULL and fills status on failure. */
ct_device *ct_cpu_device_new(int index, int threads, size_t memory_limit, ct_status *status);
void ct_device_free(ct_device *device);

/* Cores this process may run on (sched_getaffinity), at least 1. */
int ct_available_cores(void);

#endif
