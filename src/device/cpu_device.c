#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "device/device.h"

int ct_available_cores(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

ct_device *ct_cpu_device_new(int index, int threads, size_t memory_limit, ct_status *status) {
  ct_device *d = calloc(1, sizeof *d);
  if (d == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory creating a device");
    return NULL;
  }
  d->type = CT_DEVICE_CPU;
  d->index = index;
  d->threads = threads > 0 ? threads : ct_available_cores();
  snprintf(d->name, sizeof d->name, "/job:localhost/replica:0/task:0/device:CPU:%d", index);
  d->allocator = ct_allocator_new(d->name, memory_limit);
  if (d->allocator == NULL || dnnl_engine_create(&d->engine, dnnl_cpu, 0) != dnnl_success ||
      dnnl_stream_create(&d->stream, d->engine, dnnl_stream_default_flags) != dnnl_success) {
    ct_status_set(status, CT_UNAVAILABLE, "could not create the oneDNN CPU engine for %s",
                  d->name);
    ct_device_free(d);
    return NULL;
  }
  return d;
}

void ct_device_free(ct_device *d) {
  if (d == NULL) return;
  if (d->stream) dnnl_stream_destroy(d->stream);
  if (d->engine) dnnl_engine_destroy(d->engine);
  ct_allocator_free_all(d->allocator);
  free(d);
}
