/* A device: where kernels run and buffers live. One per /cpu:N (and later
 * /gpu:N). Each owns a worker thread that runs the kernels placed on it, the
 * count of threads in that worker's OpenMP team (pinned to cores of its own
 * when the machine has enough), its allocator and, for CPU devices, the
 * oneDNN engine and stream its kernels use; for GPUs, the CUDA streams and
 * library handles (device/cuda/cuda_device.h). */
#ifndef CTOWER_DEVICE_H
#define CTOWER_DEVICE_H

#include <dnnl.h>
#include <pthread.h>

#include "ctower/device_name.h"
#include "ctower/session.h"
#include "device/allocator.h"
#include "kernels/kernel.h"

/* Work handed to a device's worker: fn(context, index). */
typedef struct ct_device_task {
  void (*fn)(void *context, int index);
  void *context;
  int index;
} ct_device_task;

typedef struct ct_device ct_device;
struct ct_device {
  char name[128];           /* canonical: /job:localhost/replica:0/task:0/device:CPU:0 */
  char description[320];    /* GPU: "NVIDIA H100 80GB HBM3, CUDA device 0"; CPU: "" */
  ct_device_type type;
  int index;                /* N in /cpu:N */
  int threads;              /* CPU: the worker's OpenMP team size; GPU: its SMs */
  int first_core;           /* pinned to cores [first_core, first_core + threads), or -1 */
  ct_allocator *allocator;
  dnnl_engine_t engine;     /* CPU: the oneDNN engine */
  dnnl_stream_t stream;
  struct ct_gpu *gpu;       /* GPU: streams, library handles (device/cuda/cuda_device.h) */
  /* the worker and its FIFO queue */
  void (*thread_init)(struct ct_device *device); /* runs first on the worker */
  pthread_t worker;
  int worker_started;
  pthread_mutex_t mutex;
  pthread_cond_t wake;
  ct_device_task *queue;
  int queue_head, queue_len, queue_cap;
  int stopping;
};

/* A device with its name, queue and lock, nothing started; the caller
 * gives it an allocator and starts its worker. NULL and status when out of
 * memory. */
ct_device *ct_device_new_common(ct_device_type type, int index, ct_status *status);
/* Starts the worker thread, which runs thread_init (may be NULL) first. */
int ct_device_start(ct_device *device, void (*thread_init)(ct_device *), ct_status *status);

/* A CPU device with `threads` workers pinned from first_core (-1: not
 * pinned) and an optional memory limit in bytes (0: none). Starts its worker.
 * Returns NULL and fills status on failure. */
ct_device *ct_cpu_device_new(int index, int threads, int first_core, size_t memory_limit,
                             ct_status *status);
/* Stops the worker (after the tasks already queued) and frees the device. */
void ct_device_free(ct_device *device);

/* Queues a task for the device's worker. Returns 0, or 1 when out of memory. */
int ct_device_submit(ct_device *device, ct_device_task task);

/* Copies nbytes from src (on `from`; NULL: host memory) to dst (on `to`;
 * NULL: host memory), ordered after the work queued on both and before
 * the work queued on them later; a copy into host memory is complete when
 * this returns. `ready`, when not NULL, is a mark recorded on `from` once
 * src was written: a copy from a GPU into host memory then waits for that
 * work alone, not for everything queued on the GPU since. Returns 0 or
 * fills status. */
int ct_device_copy(ct_device *to, void *dst, ct_device *from, const void *src, size_t nbytes,
                   void *ready, ct_status *status);
/* Waits for the device's queued work (GPUs; CPU devices have none). */
int ct_device_synchronize(ct_device *device, ct_status *status);

/* Marks in a GPU's queue, to time its work for run metadata and to let a
 * copy wait for one value's producer: a recorded mark is reached when the
 * work queued before it is done. CPU devices run a step's work before it
 * returns and need none: ct_device_mark_new gives NULL for them (and when
 * the device cannot make one). */
void *ct_device_mark_new(ct_device *device);
/* Records the mark after the work queued on the device so far (nothing for
 * a NULL mark). Returns 0, or 1 and fills status when the GPU fails. */
int ct_device_mark_record(ct_device *device, void *mark, ct_status *status);
/* Microseconds from one recorded mark to another of the same device, once
 * the device has reached both (after ct_device_synchronize). */
double ct_device_mark_elapsed_us(void *from, void *to);
void ct_device_mark_free(void *mark);
/* Makes the work queued on the device from now on wait for a mark recorded
 * on any GPU (nothing for a NULL mark). Returns 0 or fills status. */
int ct_device_wait_mark(ct_device *device, void *mark, ct_status *status);

/* Cores this process may run on (sched_getaffinity), at least 1. */
int ct_available_cores(void);

/* Appends the CPU devices the options ask for to devices[*n]. */
int ct_cpu_devices_create(const struct ct_session_options *options, ct_device **devices, int *n,
                          ct_status *status);

/* The devices a session's options ask for, in the order of their names:
 * /cpu:0 .. /cpu:n-1, then the GPUs (when built with CUDA and present). Returns 0 and an
 * array the caller frees with ct_devices_free, or fills status. */
int ct_devices_create(const struct ct_session_options *options, ct_device ***devices,
                      int *n_devices, ct_status *status);
void ct_devices_free(ct_device **devices, int n_devices);

#endif
