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
 * The one exception is a copy ahead (ct_device_copy_ahead: a run's copy
 * of the next run's inputs): it runs on the device's stream of copies
 * ahead, first waiting for the compute stream's work queued so far, so
 * that it overlaps the compute stream's later kernels.
 * Copies out to host memory run on the device's copy stream, after an event
 * of the value's producer: the host waits for that copy alone (its reader
 * needs the value), while the compute stream goes on with later kernels;
 * the source buffer is released only once the copy is done. A variable is
 * the exception: kernels queued after its producer change it in place, so
 * its copies (and those of values no step produced) run on the compute
 * stream, after everything queued there. Fetches and variable reads wait
 * for the whole device too (ct_device_synchronize).
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

#include "ctower/session_options.h"
#include "ctower/status.h"
#include "device/device.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Pinned host buffers for copies into one GPU device (staging.c). */
typedef struct ct_staging ct_staging;
ct_staging *ct_staging_new(void);
void ct_staging_free(ct_staging *staging);
/* Queues a copy of nbytes from host memory src to dst on `stream`: from
 * src itself when it is pinned memory of ct_pinned_alloc (read when the
 * copy runs: its owner keeps it unchanged until the GPU is synchronized, as
 * a run's feeds are), else through a pinned buffer when one is free or can
 * be made (else directly), and then src may be reused as soon as this
 * returns. Returns 0 or fills status. */
int ct_staging_copy_to_gpu(ct_staging *staging, void *dst, const void *src, size_t nbytes,
                           cudaStream_t stream, ct_status *status);
/* Pinned host memory, portable to every GPU, that copies into a GPU read
 * directly (ct_device_ops.host_alloc); NULL when there is none to be had. */
void *ct_pinned_alloc(size_t bytes);
void ct_pinned_free(void *ptr);

typedef struct ct_gpu {
  int ordinal;                /* the CUDA device (after CUDA_VISIBLE_DEVICES) */
  int sm_count;
  size_t total_memory;        /* of the physical GPU */
  char product[256];          /* "NVIDIA H100 80GB HBM3" */
  cudaStream_t stream;        /* compute: every kernel, and copies into this device */
  cudaStream_t copy_stream;   /* copies out of this device into host memory */
  cudaStream_t ahead_stream;  /* copies in of a run's next inputs (ct_device_copy_ahead) */
  int ahead_queued;           /* a copy ahead was queued since the last synchronize (set by a
                                 step's worker, read once the run's steps are done) */
  cudaStream_t comm_stream;   /* collectives (collective.c) */
  ct_staging *staging;        /* pinned buffers for copies in from host memory */
  pthread_mutex_t handles_lock; /* guards the creation of the two handles */
  cublasHandle_t cublas;      /* bound to `stream`; NULL until ct_gpu_cublas makes it */
  cudnnHandle_t cudnn;        /* bound to `stream`; NULL until ct_gpu_cudnn makes it */
  ct_precision precision;     /* CT_PRECISION_FP32, _TF32 or _BF16 (ctower/session.h) */
  int sync_each_kernel;       /* CTOWER_GPU_SYNC=1: wait for and check every step's work */
  cudaError_t fault;          /* the error that made the last cudaMalloc of a region fail,
                                 when it was no shortage of memory (cudaSuccess: none) */
  void *collectives;          /* NCCL communicators this device keeps (collective.c) */
  void (*collectives_free)(void *collectives);
} ct_gpu;

/* The GPU state of a GPU device. */
static inline ct_gpu *ct_gpu_of(const ct_device *device) { return (ct_gpu *)device->impl; }

/* The GPU's cuBLAS and cuDNN handles, bound to its compute stream, made
 * the first time a kernel needs them (so that a machine without cuDNN runs
 * every op that needs none). NULL and status when the library is missing
 * (UNAVAILABLE: `who`, an op's name, needs it; where the library was looked
 * for) or fails. */
cublasHandle_t ct_gpu_cublas(ct_gpu *gpu, const char *who, ct_status *status);
cudnnHandle_t ct_gpu_cudnn(ct_gpu *gpu, const char *who, ct_status *status);

/* GPUs as devices /gpu:0 .. under the session's GPU options (a machine
 * without GPUs, or without a driver, has none, which is not an error; a
 * driver that is there but fails is: creating the devices says so);
 * copies, marks (CUDA events with timing) and synchronization ordered as
 * the header comment says. */
extern const ct_device_ops ct_cuda_device_ops;

/* Makes `waiter` wait (on the GPU, not the host) for the work queued on
 * `signaller` so far; the streams may be on different GPUs. Returns 0 or
 * fills status. */
int ct_cuda_stream_wait(cudaStream_t waiter, cudaStream_t signaller, ct_status *status);

/* Held while queueing work that makes one device's stream wait for
 * another's: copies between GPUs and the stages of an AllReduce. The ranks
 * of an NCCL collective wait for each other on the GPU, so a wait queued
 * between them (one rank before it, the other after) could deadlock. */
extern pthread_mutex_t ct_cuda_order_lock;

/* Fills status from a CUDA, cuBLAS or cuDNN error; returns 1 for an error. */
int ct_cuda_check(cudaError_t err, const char *what, ct_status *status);
int ct_cublas_check(cublasStatus_t err, const char *what, ct_status *status);
int ct_cudnn_check(cudnnStatus_t err, const char *what, ct_status *status);

#ifdef __cplusplus
}
#endif

#endif
