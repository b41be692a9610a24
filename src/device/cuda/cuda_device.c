/* CUDA devices: enumeration under the session's GPU options, one compute
 * stream and one copy stream per device, cuBLAS and cuDNN bound to the
 * compute stream, the BFC allocator over cudaMalloc regions, and copies
 * between host and devices ordered with events (cuda_device.h). */
#include "device/cuda/cuda_device.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/device.h"

int ct_cuda_device_count(void) {
  int n = 0;
  /* No driver, or no device: the runtime says so and there are no GPUs. */
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError(); /* clear the sticky error */
    return 0;
  }
  return n;
}

/* ---- regions from cudaMalloc ------------------------------------------------ */

/* Regions are allocated on whatever thread asks (an AllReduce binds outputs
 * on other GPUs), so the caller's current device is put back afterwards:
 * its later launches go to its own stream. */
static void *gpu_region_alloc(size_t bytes, void *context) {
  const ct_gpu *gpu = context;
  void *p = NULL;
  int current = -1;
  cudaGetDevice(&current);
  if (cudaSetDevice(gpu->ordinal) != cudaSuccess || cudaMalloc(&p, bytes) != cudaSuccess) {
    cudaGetLastError();
    p = NULL;
  }
  if (current >= 0) cudaSetDevice(current);
  return p;
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
static void gpu_thread_init(ct_device *d) { cudaSetDevice(d->gpu->ordinal); }

/* ---- enumeration -------------------------------------------------------------- */

/* The CUDA ordinals that become /gpu:0, /gpu:1, ...: all of them in order,
 * or gpu_options.visible_device_list ("1,0": ordinal 1 is /gpu:0). */
static int visible_ordinals(const ct_gpu_options *g, int available, int *ordinals,
                            ct_status *status) {
  if (g->visible_device_list[0] == '\0') {
    for (int i = 0; i < available; ++i) ordinals[i] = i;
    return available;
  }
  int n = 0;
  const char *p = g->visible_device_list;
  while (*p) {
    char *end = NULL;
    long id = strtol(p, &end, 10);
    if (end == p || id < 0 || id >= available) {
      ct_status_set(status, CT_INVALID_ARGUMENT,
                    "gpu_options.visible_device_list '%s' names GPU %.*s, but this machine "
                    "has %d visible GPU%s (0 to %d); list ids among those, or leave it empty",
                    g->visible_device_list, (int)(end > p ? end - p : 1), p, available,
                    available == 1 ? "" : "s", available - 1);
      return -1;
    }
    for (int i = 0; i < n; ++i)
      if (ordinals[i] == id) {
        ct_status_set(status, CT_INVALID_ARGUMENT,
                      "gpu_options.visible_device_list '%s' names GPU %ld twice",
                      g->visible_device_list, id);
        return -1;
      }
    ordinals[n++] = (int)id;
    p = *end == ',' ? end + 1 : end;
    if (*end != ',' && *end != '\0') {
      ct_status_set(status, CT_INVALID_ARGUMENT,
                    "gpu_options.visible_device_list '%s' is not a comma-separated list of "
                    "GPU ids such as \"1,0\"",
                    g->visible_device_list);
      return -1;
    }
  }
  return n;
}

static int gpu_setup(ct_device *d, int ordinal, ct_precision precision, ct_status *status) {
  ct_gpu *gpu = calloc(1, sizeof *gpu);
  if (gpu == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory creating %s", d->name);
    return 1;
  }
  d->gpu = gpu;
  gpu->ordinal = ordinal;
  gpu->precision = precision;
  struct cudaDeviceProp prop;
  if (ct_cuda_check(cudaSetDevice(ordinal), d->name, status) ||
      ct_cuda_check(cudaGetDeviceProperties(&prop, ordinal), d->name, status) ||
      ct_cuda_check(cudaStreamCreateWithFlags(&gpu->stream, cudaStreamNonBlocking), d->name,
                    status) ||
      ct_cublas_check(cublasCreate(&gpu->cublas), d->name, status) ||
      ct_cublas_check(cublasSetStream(gpu->cublas, gpu->stream), d->name, status) ||
      ct_cudnn_check(cudnnCreate(&gpu->cudnn), d->name, status) ||
      ct_cudnn_check(cudnnSetStream(gpu->cudnn, gpu->stream), d->name, status))
    return 1;
  gpu->sm_count = prop.multiProcessorCount;
  gpu->total_memory = prop.totalGlobalMem;
  snprintf(gpu->product, sizeof gpu->product, "%s", prop.name);
  snprintf(d->description, sizeof d->description, "%s, CUDA device %d, %zu MiB", gpu->product,
           ordinal, gpu->total_memory >> 20);
  d->threads = gpu->sm_count; /* what `ctower devices` shows: SMs */
  return 0;
}

void ct_cuda_device_release(ct_device *d) {
  ct_gpu *gpu = d->gpu;
  if (gpu == NULL) return;
  cudaSetDevice(gpu->ordinal); /* ct_device_free has waited for the stream */
  if (gpu->cudnn) cudnnDestroy(gpu->cudnn);
  if (gpu->cublas) cublasDestroy(gpu->cublas);
  if (gpu->stream) cudaStreamDestroy(gpu->stream);
  if (gpu->collectives) gpu->collectives_free(gpu->collectives);
  free(gpu);
  d->gpu = NULL;
}

/* The memory limit of logical device `name` on GPU `ordinal`: its
 * virtual-device size, else the byte limit, else the fraction of the GPU's
 * memory; by default what is free, less room for the buffers the CUDA
 * libraries allocate on their own. Without growth the limit is reserved at
 * once, so it must be free now. */
static int device_limit(const ct_session_options *o, const char *name, int ordinal,
                        int virtual_index, size_t *limit, ct_status *status) {
  size_t free_bytes = 0, total = 0;
  if (ct_cuda_check(cudaMemGetInfo(&free_bytes, &total), "reading GPU memory", status)) return 1;
  const ct_gpu_options *g = &o->gpu_options;
  char source[128];
  size_t want;
  if (g->n_virtual_devices > 0) {
    want = (size_t)g->virtual_devices_mb[virtual_index] << 20;
    snprintf(source, sizeof source, "gpu_options.virtual_devices");
  } else if (o->gpu_memory_limit) {
    want = o->gpu_memory_limit;
    snprintf(source, sizeof source, "memory_limit_mb GPU");
  } else if (g->per_process_gpu_memory_fraction > 0 && g->per_process_gpu_memory_fraction < 1) {
    want = (size_t)((double)total * g->per_process_gpu_memory_fraction);
    snprintf(source, sizeof source, "per_process_gpu_memory_fraction %.2f of %zu MiB",
             g->per_process_gpu_memory_fraction, total >> 20);
  } else {
    size_t headroom = free_bytes / 20 > ((size_t)256 << 20) ? free_bytes / 20 : (size_t)256 << 20;
    want = free_bytes > headroom ? free_bytes - headroom : 0;
    snprintf(source, sizeof source, "the default (all free memory)");
  }
  if (!g->allow_growth && want > free_bytes) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED,
                  "GPU %d has %zu MiB free but %s asks for %zu MiB for %s; another session or "
                  "process holds the rest: ask for less, or set gpu_options.allow_growth: true",
                  ordinal, free_bytes >> 20, source, want >> 20, name);
    return 1;
  }
  *limit = want;
  return 0;
}

int ct_cuda_devices_create(const ct_session_options *o, ct_device **devices, int *n,
                           ct_status *status) {
  if (o->device_count_gpu == 0) return 0;
  const int available = ct_cuda_device_count();
  if (available == 0) return 0;
  int ordinals[CT_MAX_DEVICES];
  int n_gpus = visible_ordinals(&o->gpu_options, available < CT_MAX_DEVICES ? available
                                                                            : CT_MAX_DEVICES,
                                ordinals, status);
  if (n_gpus < 0) return 1;
  if (o->device_count_gpu > 0 && o->device_count_gpu < n_gpus) n_gpus = o->device_count_gpu;
  const int per_gpu = o->gpu_options.n_virtual_devices > 0 ? o->gpu_options.n_virtual_devices : 1;
  int index = 0;
  for (int p = 0; p < n_gpus; ++p) {
    for (int v = 0; v < per_gpu; ++v, ++index) {
      if (*n >= CT_MAX_DEVICES) {
        ct_status_set(status, CT_INVALID_ARGUMENT, "more than %d devices asked for",
                      CT_MAX_DEVICES);
        return 1;
      }
      ct_device *d = ct_device_new_common(CT_DEVICE_GPU, index, status);
      if (d == NULL) return 1;
      devices[(*n)++] = d;
      size_t limit = 0;
      if (gpu_setup(d, ordinals[p], o->gpu_precision, status) ||
          device_limit(o, d->name, ordinals[p], v, &limit, status))
        return 1;
      ct_allocator_options ao = {d->name, limit, o->gpu_options.allow_growth, 0,
                                 gpu_region_alloc, gpu_region_free, d->gpu};
      d->allocator = ct_allocator_new_with(&ao, status);
      if (d->allocator == NULL || ct_device_start(d, gpu_thread_init, status)) return 1;
    }
  }
  return 0;
}

/* ---- copies ------------------------------------------------------------------- */

static cudaStream_t stream_of(const ct_device *d) { return d ? d->gpu->stream : NULL; }

pthread_mutex_t ct_cuda_order_lock = PTHREAD_MUTEX_INITIALIZER;

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
  int created =
      !ct_cuda_check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "an event", status);
  int failed = !created || ct_cuda_check(cudaEventRecord(event, signaller), "recording an event",
                                         status);
  if (device != current) cudaSetDevice(current);
  if (!failed)
    failed = ct_cuda_check(cudaStreamWaitEvent(waiter, event, 0), "waiting on an event", status);
  if (created) cudaEventDestroy(event); /* safe: destruction waits for the event to complete */
  return failed;
}

int ct_cuda_copy(ct_device *to, void *dst, ct_device *from, const void *src, size_t nbytes,
                 ct_status *status) {
  if (nbytes == 0) return 0;
  const ct_device *gpu_to = to && to->type == CT_DEVICE_GPU ? to : NULL;
  const ct_device *gpu_from = from && from->type == CT_DEVICE_GPU ? from : NULL;
  if (!gpu_to && !gpu_from) {
    memcpy(dst, src, nbytes);
    return 0;
  }
  if (gpu_to && !gpu_from) {
    /* From host memory: cudaMemcpyAsync returns once the source has been
     * staged, so the host buffer may be reused as soon as this returns. */
    cudaSetDevice(gpu_to->gpu->ordinal);
    return ct_cuda_check(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyHostToDevice,
                                         stream_of(gpu_to)),
                         "copying to the GPU", status);
  }
  if (!gpu_to) {
    /* To host memory: the host reader needs the value now. */
    cudaSetDevice(gpu_from->gpu->ordinal);
    cudaStream_t s = stream_of(gpu_from);
    return ct_cuda_check(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToHost, s),
                         "copying from the GPU", status) ||
           ct_cuda_check(cudaStreamSynchronize(s), "copying from the GPU", status);
  }
  /* Between GPUs: the copy runs on the destination's stream after the
   * source's queued work, and the source's later work (which may reuse the
   * source buffer) waits for the copy. The two waits go in under
   * ct_cuda_order_lock: queued between the ranks of an NCCL all-reduce
   * they could make each rank wait for the other (cuda_device.h). */
  cudaSetDevice(gpu_to->gpu->ordinal);
  cudaStream_t s_to = stream_of(gpu_to), s_from = stream_of(gpu_from);
  pthread_mutex_lock(&ct_cuda_order_lock);
  int failed = ct_cuda_stream_wait(s_to, s_from, status) ||
               ct_cuda_check(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDefault, s_to),
                             "copying between GPUs", status) ||
               ct_cuda_stream_wait(s_from, s_to, status);
  pthread_mutex_unlock(&ct_cuda_order_lock);
  return failed;
}

int ct_cuda_synchronize(ct_device *d, ct_status *status) {
  /* a CPU device, or a GPU whose setup stopped before its stream existed */
  if (d == NULL || d->gpu == NULL || d->gpu->stream == NULL) return 0;
  cudaSetDevice(d->gpu->ordinal);
  return ct_cuda_check(cudaStreamSynchronize(d->gpu->stream), d->name, status);
}

/* ---- timing marks ------------------------------------------------------------ */

void *ct_cuda_mark_new(ct_device *d) {
  int current = -1;
  cudaGetDevice(&current);
  cudaEvent_t event = NULL;
  if (cudaSetDevice(d->gpu->ordinal) != cudaSuccess || cudaEventCreate(&event) != cudaSuccess) {
    cudaGetLastError();
    event = NULL;
  }
  if (current >= 0) cudaSetDevice(current);
  return event;
}

void ct_cuda_mark_record(ct_device *d, void *mark) {
  if (cudaEventRecord((cudaEvent_t)mark, d->gpu->stream) != cudaSuccess) cudaGetLastError();
}

double ct_cuda_mark_elapsed_us(void *from, void *to) {
  float ms = 0;
  if (cudaEventElapsedTime(&ms, (cudaEvent_t)from, (cudaEvent_t)to) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return (double)ms * 1e3;
}

void ct_cuda_mark_free(void *mark) { cudaEventDestroy((cudaEvent_t)mark); }
