/* The CUDA device: what a GPU kernel needs from its device, and the GPU
 * side of the device registry. Built only with CUDA (CTOWER_HAVE_CUDA).
 *
 * Ordering model: each GPU device (a physical GPU, or one of the logical
 * devices split from it) has a compute stream. Its worker thread launches
 * the kernels of the steps placed on it onto that stream, in dataflow order,
 * and never waits for them: a step counts as done when it is queued. Buffers
 * of a device are written by its compute stream alone, so a buffer freed to
 * the allocator and handed out again is only touched by later work on the
 * same stream, in order. Work that crosses devices is ordered with events
 * (cudaStreamWaitEvent), never with a host wait.
 *
 * Copies into a device run on its compute stream: the buffer they fill may
 * have just been freed by work still queued there, so a copy stream would
 * have to wait for the compute stream anyway. From host memory they go
 * through pinned staging buffers (staging.c), so the host does not wait.
 * Copies out to host memory run on the device's copy stream, after an event
 * of the value's producer: the host waits for that copy alone (its reader
 * needs the value), while the compute stream goes on with later kernels;
 * the source buffer is released only once the copy is done. A variable is
 * the exception: kernels queued after its producer change it in place, so
 * its copies (and those of values no step produced) run on the compute
 * stream, after everything queued there. Fetches and variable reads wait
 * for the whole device too (ct_cuda_synchronize).
 *
 * Collectives run on the device's communication stream, so that an
 * all-reduce overlaps the compute stream's later kernels (the rest of the
 * backward pass). Their outputs are the one exception to "written by the
 * compute stream alone": the communication stream writes them after
 * waiting for the compute streams that used those buffers before, and the
 * kernel hands the executor a mark recorded after the writes (ct_kernel_ctx's
 * output_marks); every later reader's device waits for it
 * (ct_device_wait_mark) before touching them or giving their buffers back. */
#ifndef CTOWER_CUDA_DEVICE_H
#define CTOWER_CUDA_DEVICE_H

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <pthread.h>

#include "ctower/session.h"
#include "ctower/status.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ct_device;

/* Pinned host buffers for copies into one GPU device (staging.c). */
typedef struct ct_staging ct_staging;
ct_staging *ct_staging_new(void);
void ct_staging_free(ct_staging *staging);
/* Queues a copy of nbytes from host memory src to dst on `stream`, through
 * a pinned buffer when one is free or can be made (else directly). src may
 * be reused as soon as this returns. Returns 0 or fills status. */
int ct_staging_copy_to_gpu(ct_staging *staging, void *dst, const void *src, size_t nbytes,
                           cudaStream_t stream, ct_status *status);

typedef struct ct_gpu {
  int ordinal;                /* the CUDA device (after CUDA_VISIBLE_DEVICES) */
  int sm_count;
  size_t total_memory;        /* of the physical GPU */
  char product[256];          /* "NVIDIA H100 80GB HBM3" */
  cudaStream_t stream;        /* compute: every kernel and copy into this device */
  cudaStream_t copy_stream;   /* copies out of this device into host memory */
  cudaStream_t comm_stream;   /* collectives (collective.c) */
  ct_staging *staging;        /* pinned buffers for copies in from host memory */
  cublasHandle_t cublas;      /* bound to `stream` */
  cudnnHandle_t cudnn;        /* bound to `stream` */
  ct_precision precision;     /* CT_PRECISION_FP32, _TF32 or _BF16 (ctower/session.h) */
  void *collectives;          /* NCCL communicators this device keeps (collective.c) */
  void (*collectives_free)(void *collectives);
} ct_gpu;

/* The GPUs a session's options ask for, as devices /gpu:first_index ..;
 * appends to devices[*n] (capacity CT_MAX_DEVICES). A machine without GPUs
 * (or without a driver) adds none and is not an error. */
int ct_cuda_devices_create(const ct_session_options *options, struct ct_device **devices,
                           int *n, ct_status *status);
void ct_cuda_device_release(struct ct_device *device);

/* Copies nbytes from src to dst; a NULL device is host memory. Ordered
 * after the work already queued on the devices involved (or, into host
 * memory with a `ready` event, after the work that event follows), and
 * before the work queued on them later. Returns 0 or fills status. */
int ct_cuda_copy(struct ct_device *to, void *dst, struct ct_device *from, const void *src,
                 size_t nbytes, void *ready, ct_status *status);

/* Makes `waiter` wait (on the GPU, not the host) for the work queued on
 * `signaller` so far; the streams may be on different GPUs. Returns 0 or
 * fills status. */
int ct_cuda_stream_wait(cudaStream_t waiter, cudaStream_t signaller, ct_status *status);

/* Held while queueing work that makes one device's stream wait for
 * another's: copies between GPUs and the stages of an AllReduce. The ranks
 * of an NCCL collective wait for each other on the GPU, so a wait queued
 * between them (one rank before it, the other after) could deadlock. */
extern pthread_mutex_t ct_cuda_order_lock;

/* Marks (device.h's ct_device_mark_*): CUDA events with timing. */
void *ct_cuda_mark_new(struct ct_device *device);
int ct_cuda_mark_record(struct ct_device *device, void *mark, ct_status *status);
double ct_cuda_mark_elapsed_us(void *from, void *to);
void ct_cuda_mark_free(void *mark);
/* Makes the device's later work wait for a mark recorded on any GPU's
 * stream: a GPU's compute stream waits on the GPU; a CPU device's caller
 * waits on the host. */
int ct_cuda_mark_wait(struct ct_device *device, void *mark, ct_status *status);

/* Waits until the device's queued work, compute, copies and collectives,
 * is done (for fetches and tests). */
int ct_cuda_synchronize(struct ct_device *device, ct_status *status);

/* Fills status from a CUDA, cuBLAS or cuDNN error; returns 1 for an error. */
int ct_cuda_check(cudaError_t err, const char *what, ct_status *status);
int ct_cublas_check(cublasStatus_t err, const char *what, ct_status *status);
int ct_cudnn_check(cudnnStatus_t err, const char *what, ct_status *status);

/* The number of GPUs the CUDA runtime sees (0 without a driver). */
int ct_cuda_device_count(void);

#ifdef __cplusplus
}
#endif

#endif
