/* CUDA devices: enumeration under the session's GPU options; per device a
 * compute stream with cuBLAS and cuDNN bound to it, a copy stream for
 * copies out to host memory, a communication stream for collectives and
 * pinned staging buffers for copies in (staging.c); the BFC allocator over
 * cudaMalloc regions; copies between host and devices ordered with events
 * (cuda_device.h). */
#include "device/cuda/cuda_device.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/cuda/cuda_libraries.h"
#include "device/gpu_layout.h"

/* Whether the CUDA driver's library is on this machine. */
static int driver_installed(void) {
  void *driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (driver) dlclose(driver);
  return driver != NULL;
}

/* The number of GPUs the CUDA runtime sees, into *count. A machine without
 * a GPU, or without the driver, has none: 0. A driver that is there but
 * fails (older than the runtime, its library and kernel module of other
 * versions, a GPU that will not start) is an error: 1 and status. */
static int cuda_device_count(int *count, ct_status *status) {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  *count = 0;
  if (err == cudaSuccess) {
    *count = n;
    return 0;
  }
  cudaGetLastError(); /* clear the error */
  if (err == cudaErrorNoDevice || (err == cudaErrorInsufficientDriver && !driver_installed()))
    return 0;
  ct_status_set(status, CT_UNAVAILABLE,
                "the CUDA driver failed while counting the GPUs: %s (%s); see what nvidia-smi "
                "says, or hide the GPUs with session.device_count: {GPU: 0} (or "
                "CUDA_VISIBLE_DEVICES=\"\") to run on the CPUs",
                cudaGetErrorName(err), cudaGetErrorString(err));
  return 1;
}

/* ---- regions from cudaMalloc ------------------------------------------------ */

/* Regions are allocated on whatever thread asks (an AllReduce binds outputs
 * on other GPUs), so the caller's current device is put back afterwards:
 * its later launches go to its own stream. */
static void *gpu_region_alloc(size_t bytes, void *context) {
  ct_gpu *gpu = context;
  void *p = NULL;
  int current = -1;
  cudaGetDevice(&current);
  cudaError_t err = cudaSetDevice(gpu->ordinal);
  if (err == cudaSuccess) err = cudaMalloc(&p, bytes);
  if (err != cudaSuccess) {
    cudaGetLastError();
    p = NULL;
    /* a GPU that failed earlier refuses every allocation: not a shortage */
    if (err != cudaErrorMemoryAllocation) gpu->fault = err;
  }
  if (current >= 0) cudaSetDevice(current);
  return p;
}

/* Why the last region could not be had, when memory was not the reason. */
static int gpu_region_error(void *context, char *text, size_t size) {
  const ct_gpu *gpu = context;
  if (gpu->fault == cudaSuccess) return 0;
  ct_status why = CT_STATUS_INIT;
  ct_cuda_check(gpu->fault, "cudaMalloc", &why);
  snprintf(text, size, "%s", why.message);
  return 1;
}

static void gpu_region_free(void *ptr, size_t bytes, void *context) {
  (void)bytes;
  const ct_gpu *gpu = context;
  int current = -1;
  cudaGetDevice(&current);
  cudaSetDevice(gpu->ordinal);
  cudaFree(ptr);
  if (current >= 0) cudaSetDevice(current);
}

/* ---- the worker --------------------------------------------------------------- */

/* GPU workers run on their device: CUDA's current device is per thread. */
static void gpu_thread_init(ct_device *d) { cudaSetDevice(ct_gpu_of(d)->ordinal); }

/* ---- enumeration (the rules are in device/gpu_layout.c) -------------------- */

static int gpu_setup(ct_device *d, int ordinal, ct_precision precision, ct_status *status) {
  ct_gpu *gpu = calloc(1, sizeof *gpu);
  if (gpu == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory creating %s", d->name);
    return 1;
  }
  d->impl = gpu;
  gpu->ordinal = ordinal;
  gpu->precision = precision;
  pthread_mutex_init(&gpu->handles_lock, NULL);
  struct cudaDeviceProp prop;
  if (ct_cuda_check(cudaSetDevice(ordinal), d->name, status) ||
      ct_cuda_check(cudaGetDeviceProperties(&prop, ordinal), d->name, status) ||
      ct_cuda_check(cudaStreamCreateWithFlags(&gpu->stream, cudaStreamNonBlocking), d->name,
                    status) ||
      ct_cuda_check(cudaStreamCreateWithFlags(&gpu->copy_stream, cudaStreamNonBlocking),
                    d->name, status) ||
      ct_cuda_check(cudaStreamCreateWithFlags(&gpu->ahead_stream, cudaStreamNonBlocking),
                    d->name, status) ||
      ct_cuda_check(cudaStreamCreateWithFlags(&gpu->comm_stream, cudaStreamNonBlocking),
                    d->name, status))
    return 1;
  const char *sync = getenv("CTOWER_GPU_SYNC");
  gpu->sync_each_kernel = sync && sync[0] && strcmp(sync, "0") != 0;
  gpu->staging = ct_staging_new();
  if (gpu->staging == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory creating %s", d->name);
    return 1;
  }
  gpu->sm_count = prop.multiProcessorCount;
  gpu->total_memory = prop.totalGlobalMem;
  snprintf(gpu->product, sizeof gpu->product, "%s", prop.name);
  snprintf(d->description, sizeof d->description, "%s, CUDA device %d, %zu MiB", gpu->product,
           ordinal, gpu->total_memory >> 20);
  snprintf(d->mapping, sizeof d->mapping, "name: %s", d->description);
  d->threads = gpu->sm_count; /* what `ctower devices` shows: SMs */
  return 0;
}

static int make_cublas(ct_gpu *gpu, const char *who, ct_status *status) {
  cublasHandle_t handle = NULL;
  if (ct_cublas_check(cublasCreate(&handle), who, status)) return 1;
  if (ct_cublas_check(cublasSetStream(handle, gpu->stream), who, status)) {
    cublasDestroy(handle);
    return 1;
  }
  gpu->cublas = handle;
  return 0;
}

static int make_cudnn(ct_gpu *gpu, const char *who, ct_status *status) {
  cudnnHandle_t handle = NULL;
  if (ct_cudnn_check(cudnnCreate(&handle), who, status)) return 1;
  if (ct_cudnn_check(cudnnSetStream(handle, gpu->stream), who, status)) {
    cudnnDestroy(handle);
    return 1;
  }
  gpu->cudnn = handle;
  return 0;
}

/* Loads `library` and runs make() on the GPU's device (the caller's current
 * device is put back afterwards), under gpu->handles_lock. */
static void make_handle(ct_gpu *gpu, ct_cuda_library library,
                        int (*make)(ct_gpu *, const char *, ct_status *), const char *who,
                        ct_status *status) {
  if (ct_cuda_library_require(library, who, status)) return;
  int current = -1;
  cudaGetDevice(&current);
  if (!ct_cuda_check(cudaSetDevice(gpu->ordinal), who, status)) make(gpu, who, status);
  if (current >= 0) cudaSetDevice(current);
}

cublasHandle_t ct_gpu_cublas(ct_gpu *gpu, const char *who, ct_status *status) {
  pthread_mutex_lock(&gpu->handles_lock);
  if (gpu->cublas == NULL) make_handle(gpu, CT_CUDA_CUBLAS, make_cublas, who, status);
  cublasHandle_t handle = gpu->cublas;
  pthread_mutex_unlock(&gpu->handles_lock);
  return handle;
}

cudnnHandle_t ct_gpu_cudnn(ct_gpu *gpu, const char *who, ct_status *status) {
  pthread_mutex_lock(&gpu->handles_lock);
  if (gpu->cudnn == NULL) make_handle(gpu, CT_CUDA_CUDNN, make_cudnn, who, status);
  cudnnHandle_t handle = gpu->cudnn;
  pthread_mutex_unlock(&gpu->handles_lock);
  return handle;
}

static void gpu_release(ct_device *d) {
  ct_gpu *gpu = ct_gpu_of(d);
  if (gpu == NULL) return;
  cudaSetDevice(gpu->ordinal); /* ct_device_free has waited for the stream */
  if (gpu->cudnn) cudnnDestroy(gpu->cudnn);
  if (gpu->cublas) cublasDestroy(gpu->cublas);
  if (gpu->stream) cudaStreamDestroy(gpu->stream);
  /* copies out finish before gpu_copy returns: nothing is queued here */
  if (gpu->copy_stream) cudaStreamDestroy(gpu->copy_stream);
  if (gpu->ahead_stream) cudaStreamDestroy(gpu->ahead_stream);
  if (gpu->comm_stream) cudaStreamDestroy(gpu->comm_stream);
  ct_staging_free(gpu->staging); /* the stream is idle: no transfer reads them */
  if (gpu->collectives) gpu->collectives_free(gpu->collectives);
  pthread_mutex_destroy(&gpu->handles_lock);
  free(gpu);
  d->impl = NULL;
}

/* The memory limit of logical device `name` on GPU `ordinal`, from what
 * the runtime says is free now (gpu_setup made `ordinal` current). */
static int device_limit(const ct_session_options *o, const char *name, int ordinal,
                        int virtual_index, size_t *limit, ct_status *status) {
  size_t free_bytes = 0, total = 0;
  if (ct_cuda_check(cudaMemGetInfo(&free_bytes, &total), "reading GPU memory", status)) return 1;
  return ct_gpu_memory_limit(o, name, ordinal, virtual_index, free_bytes, total, limit, status);
}

static int gpu_count_devices(const ct_session_options *o) {
  /* A list the layout refuses, or a failing driver, counts no GPU here;
   * creating the session reports it. */
  ct_gpu_layout layout;
  ct_status ignored = CT_STATUS_INIT;
  /* device_count GPU 0 hides the GPUs without waking the CUDA runtime */
  int available = 0;
  if (o->device_count_gpu != 0 && cuda_device_count(&available, &ignored)) return 0;
  if (ct_gpu_layout_make(o, available, &layout, &ignored)) return 0;
  return ct_gpu_layout_devices(&layout);
}

static int gpu_create_devices(const ct_session_options *o, ct_device **devices, int *n,
                              ct_status *status) {
  ct_gpu_layout layout;
  /* device_count GPU 0 hides the GPUs without waking the CUDA runtime */
  int available = 0;
  if (o->device_count_gpu != 0 && cuda_device_count(&available, status)) return 1;
  if (ct_gpu_layout_make(o, available, &layout, status)) return 1;
  int index = 0;
  for (int p = 0; p < layout.n_physical; ++p) {
    for (int v = 0; v < layout.per_physical; ++v, ++index) {
      if (*n >= CT_MAX_DEVICES) {
        ct_status_set(status, CT_INVALID_ARGUMENT, "more than %d devices asked for",
                      CT_MAX_DEVICES);
        return 1;
      }
      ct_device *d = ct_device_new_common(&ct_cuda_device_ops, o, index, status);
      if (d == NULL) return 1;
      devices[(*n)++] = d;
      size_t limit = 0;
      if (gpu_setup(d, layout.ordinals[p], o->precision, status) ||
          device_limit(o, d->name, layout.ordinals[p], v, &limit, status))
        return 1;
      if (ct_device_make_allocator(d, limit, o->gpu_options.allow_growth, d->impl, status) ||
          ct_device_start(d, gpu_thread_init, status))
        return 1;
    }
  }
  return 0;
}

/* ---- copies ------------------------------------------------------------------- */

static cudaStream_t stream_of(const ct_device *d) { return d ? ct_gpu_of(d)->stream : NULL; }

pthread_mutex_t ct_cuda_order_lock = PTHREAD_MUTEX_INITIALIZER;

/* Untimed events of each GPU, kept for reuse rather than created and
 * destroyed around every wait. A wait (cudaStreamWaitEvent,
 * cudaEventSynchronize) takes in the work the event captured when the wait
 * is called, and a later record of the event does not change it; so an
 * event goes back to the pool as soon as its wait is queued or done. */
enum { POOLED_EVENTS = 64 };
static struct event_pool {
  cudaEvent_t free[POOLED_EVENTS];
  int n;
} event_pools[CT_MAX_DEVICES];
static pthread_mutex_t event_pool_lock = PTHREAD_MUTEX_INITIALIZER;

/* An untimed event of GPU `ordinal`, the current device. */
static int event_take(int ordinal, cudaEvent_t *event, ct_status *status) {
  *event = NULL;
  pthread_mutex_lock(&event_pool_lock);
  if (ordinal < CT_MAX_DEVICES && event_pools[ordinal].n > 0)
    *event = event_pools[ordinal].free[--event_pools[ordinal].n];
  pthread_mutex_unlock(&event_pool_lock);
  return *event == NULL &&
         ct_cuda_check(cudaEventCreateWithFlags(event, cudaEventDisableTiming), "an event", status);
}

static void event_give_back(int ordinal, cudaEvent_t event) {
  pthread_mutex_lock(&event_pool_lock);
  if (ordinal < CT_MAX_DEVICES && event_pools[ordinal].n < POOLED_EVENTS) {
    event_pools[ordinal].free[event_pools[ordinal].n++] = event;
    event = NULL;
  }
  pthread_mutex_unlock(&event_pool_lock);
  if (event) cudaEventDestroy(event);
}

int ct_cuda_stream_wait(cudaStream_t waiter, cudaStream_t signaller, ct_status *status) {
  if (waiter == signaller) return 0;
  /* cudaEventRecord fails unless the event belongs to the signaller's device
   * (another physical GPU than the current one in a copy between GPUs);
   * cudaStreamWaitEvent takes an event of any device. */
  int current = -1, device = -1;
  if (ct_cuda_check(cudaGetDevice(&current), "an event", status) ||
      ct_cuda_check(cudaStreamGetDevice(signaller, &device), "an event", status))
    return 1;
  if (device != current && ct_cuda_check(cudaSetDevice(device), "an event", status)) return 1;
  cudaEvent_t event;
  const int taken = !event_take(device, &event, status);
  int failed = !taken || ct_cuda_check(cudaEventRecord(event, signaller), "recording an event",
                                       status);
  if (device != current) cudaSetDevice(current);
  if (!failed)
    failed = ct_cuda_check(cudaStreamWaitEvent(waiter, event, 0), "waiting on an event", status);
  if (taken) event_give_back(device, event);
  return failed;
}

/* Into host memory; the host reader needs the value, so this waits for
 * the copy. With a `ready` mark of the value's producer the copy runs on
 * the copy stream after that mark, and nothing queued on the compute
 * stream since holds it up. Without one (a variable, which kernels queued
 * later may change in place, or a value of no step) it runs on the compute
 * stream, after everything queued there. */
static int copy_to_host(const ct_device *from, void *dst, const void *src, size_t nbytes,
                        void *ready, ct_status *status) {
  const ct_gpu *gpu = ct_gpu_of(from);
  cudaSetDevice(gpu->ordinal);
  cudaStream_t stream = ready ? gpu->copy_stream : gpu->stream;
  cudaEvent_t done;
  if (event_take(gpu->ordinal, &done, status)) return 1;
  int failed =
      (ready && ct_cuda_check(cudaStreamWaitEvent(stream, (cudaEvent_t)ready, 0),
                              "copying from the GPU", status)) ||
      ct_cuda_check(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToHost, stream),
                    "copying from the GPU", status) ||
      ct_cuda_check(cudaEventRecord(done, stream), "copying from the GPU", status) ||
      ct_cuda_check(cudaEventSynchronize(done), "copying from the GPU", status);
  /* a copy queued before the failure may still be writing dst */
  if (failed) cudaStreamSynchronize(stream);
  event_give_back(gpu->ordinal, done);
  return failed;
}

/* One end is a GPU; the other is host memory (NULL or a host-addressable
 * device) or another GPU. */
static int gpu_copy(ct_device *to, void *dst, ct_device *from, const void *src, size_t nbytes,
                    void *ready, ct_status *status) {
  if (nbytes == 0) return 0;
  const ct_device *gpu_to = to && to->ops == &ct_cuda_device_ops ? to : NULL;
  const ct_device *gpu_from = from && from->ops == &ct_cuda_device_ops ? from : NULL;
  if (gpu_to && !gpu_from) { /* from host memory, through a pinned buffer */
    cudaSetDevice(ct_gpu_of(gpu_to)->ordinal);
    return ct_staging_copy_to_gpu(ct_gpu_of(gpu_to)->staging, dst, src, nbytes,
                                  stream_of(gpu_to), status);
  }
  if (!gpu_to) return copy_to_host(gpu_from, dst, src, nbytes, ready, status);
  /* Between GPUs: the copy runs on the destination's stream after the
   * source's queued work, and the source's later work (which may reuse the
   * source buffer) waits for the copy. The two waits go in under
   * ct_cuda_order_lock: queued between the ranks of an NCCL all-reduce
   * they could make each rank wait for the other (cuda_device.h). */
  cudaSetDevice(ct_gpu_of(gpu_to)->ordinal);
  cudaStream_t s_to = stream_of(gpu_to), s_from = stream_of(gpu_from);
  pthread_mutex_lock(&ct_cuda_order_lock);
  int failed = ct_cuda_stream_wait(s_to, s_from, status) ||
               ct_cuda_check(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDefault, s_to),
                             "copying between GPUs", status) ||
               ct_cuda_stream_wait(s_from, s_to, status);
  pthread_mutex_unlock(&ct_cuda_order_lock);
  return failed;
}

/* A copy in from host memory on the stream of copies ahead, through a
 * pinned buffer: after the work queued on the compute stream so far (the
 * last reader of dst's memory may still be queued there), beside the work
 * queued on it later. */
static int gpu_copy_ahead(ct_device *to, void *dst, const void *src, size_t nbytes, void *begin,
                          void *end, ct_status *status) {
  ct_gpu *gpu = ct_gpu_of(to);
  int current = -1;
  cudaGetDevice(&current);
  if (current != gpu->ordinal) cudaSetDevice(gpu->ordinal);
  const int failed =
      ct_cuda_stream_wait(gpu->ahead_stream, gpu->stream, status) ||
      (begin &&
       ct_cuda_check(cudaEventRecord((cudaEvent_t)begin, gpu->ahead_stream), to->name, status)) ||
      ct_staging_copy_to_gpu(gpu->staging, dst, src, nbytes, gpu->ahead_stream, status) ||
      ct_cuda_check(cudaEventRecord((cudaEvent_t)end, gpu->ahead_stream), to->name, status);
  gpu->ahead_queued = 1;
  if (current >= 0 && current != gpu->ordinal) cudaSetDevice(current);
  return failed;
}

static int gpu_synchronize(ct_device *d, ct_status *status) {
  ct_gpu *gpu = ct_gpu_of(d);
  /* a GPU whose setup stopped before its stream existed */
  if (gpu == NULL || gpu->stream == NULL) return 0;
  cudaSetDevice(gpu->ordinal);
  /* the stream of copies ahead only when a run used it: a wait less */
  const int ahead = gpu->ahead_queued;
  gpu->ahead_queued = 0;
  return ct_cuda_check(cudaStreamSynchronize(gpu->stream), d->name, status) ||
         (gpu->copy_stream &&
          ct_cuda_check(cudaStreamSynchronize(gpu->copy_stream), d->name, status)) ||
         (ahead && ct_cuda_check(cudaStreamSynchronize(gpu->ahead_stream), d->name, status)) ||
         (gpu->comm_stream &&
          ct_cuda_check(cudaStreamSynchronize(gpu->comm_stream), d->name, status));
}

/* Under CTOWER_GPU_SYNC=1, waits for the work of every step and names the
 * step whose work failed: a kernel's fault otherwise surfaces at a later
 * call, far from its cause. */
static int gpu_step_done(ct_device *d, const char *name, const char *op, ct_status *status) {
  const ct_gpu *gpu = ct_gpu_of(d);
  if (!gpu->sync_each_kernel) return 0;
  int current = -1;
  cudaGetDevice(&current);
  cudaSetDevice(gpu->ordinal);
  cudaError_t err = cudaDeviceSynchronize();
  if (err == cudaSuccess) err = cudaGetLastError();
  if (current >= 0) cudaSetDevice(current);
  if (err == cudaSuccess) return 0;
  cudaGetLastError();
  ct_status_set(status, CT_INTERNAL,
                "%s (%s) on %s failed on the GPU: CUDA error %s (%s), found by waiting for its "
                "work (CTOWER_GPU_SYNC=1)",
                name, op, d->name, cudaGetErrorName(err), cudaGetErrorString(err));
  return 1;
}

/* ---- timing marks ------------------------------------------------------------ */

static void *gpu_mark_new(ct_device *d) {
  int current = -1;
  cudaGetDevice(&current);
  cudaEvent_t event = NULL;
  if (cudaSetDevice(ct_gpu_of(d)->ordinal) != cudaSuccess || cudaEventCreate(&event) != cudaSuccess) {
    cudaGetLastError();
    event = NULL;
  }
  if (current >= 0) cudaSetDevice(current);
  return event;
}

/* Any thread may record a mark of any GPU (an AllReduce's outputs live on
 * other GPUs than its worker's); the event's GPU is made current for it. */
static int gpu_mark_record(ct_device *d, void *mark, ct_status *status) {
  const ct_gpu *gpu = ct_gpu_of(d);
  int current = -1;
  cudaGetDevice(&current);
  if (current != gpu->ordinal) cudaSetDevice(gpu->ordinal);
  int failed = ct_cuda_check(cudaEventRecord((cudaEvent_t)mark, gpu->stream), d->name, status);
  if (current >= 0 && current != gpu->ordinal) cudaSetDevice(current);
  return failed;
}

static double gpu_mark_elapsed_us(void *from, void *to) {
  float ms = 0;
  if (cudaEventElapsedTime(&ms, (cudaEvent_t)from, (cudaEvent_t)to) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return (double)ms * 1e3;
}

static void gpu_mark_free(void *mark) { cudaEventDestroy((cudaEvent_t)mark); }

/* The GPU's compute stream waits, on the GPU, for a mark of any GPU. */
static int gpu_mark_wait(ct_device *d, void *mark, ct_status *status) {
  return ct_cuda_check(cudaStreamWaitEvent(ct_gpu_of(d)->stream, (cudaEvent_t)mark, 0), d->name,
                       status);
}

/* ---- what the GPUs load ------------------------------------------------------ */

/* The driver's and runtime's versions, and the libraries a GPU loads. */
static void gpu_describe_runtime(char *text, size_t size) {
  int driver = 0, runtime = 0;
  if (cudaDriverGetVersion(&driver) != cudaSuccess) driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaGetLastError();
  char driver_text[96] = "no driver (libcuda.so.1 was not found)";
  if (driver > 0)
    snprintf(driver_text, sizeof driver_text, "driver %d.%d", driver / 1000, driver % 1000 / 10);
  snprintf(text, size, "CUDA: %s, runtime %d.%d (linked into ctower)\n", driver_text,
           runtime / 1000, runtime % 1000 / 10);
  for (int lib = 0; lib < CT_CUDA_LIBRARY_COUNT; ++lib) {
    const size_t used = strlen(text);
    char line[1280];
    ct_cuda_library_describe((ct_cuda_library)lib, line, sizeof line);
    if (used + strlen(line) + 2 > size) break;
    memcpy(text + used, line, strlen(line));
    memcpy(text + used + strlen(line), "\n", 2);
  }
}

const ct_device_ops ct_cuda_device_ops = {
    .kind = CT_DEVICE_KIND_GPU,
    .priority = 1,
    .host_addressable = 0,
    .create_devices = gpu_create_devices,
    .count_devices = gpu_count_devices,
    .describe_runtime = gpu_describe_runtime,
    .release = gpu_release,
    .region_alloc = gpu_region_alloc,
    .region_free = gpu_region_free,
    .region_error = gpu_region_error,
    .copy = gpu_copy,
    .copy_ahead = gpu_copy_ahead,
    .host_alloc = ct_pinned_alloc,
    .host_free = ct_pinned_free,
    .synchronize = gpu_synchronize,
    .step_done = gpu_step_done,
    .mark_new = gpu_mark_new,
    .mark_record = gpu_mark_record,
    .mark_elapsed_us = gpu_mark_elapsed_us,
    .mark_free = gpu_mark_free,
    .mark_wait = gpu_mark_wait,
};
