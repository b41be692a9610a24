/* What every device has: a name, a worker thread with a FIFO queue of
 * tasks, an allocator; the registry that makes a session's devices; and
 * copies between devices. CPU specifics are in cpu_device.c, CUDA ones in
 * cuda/cuda_device.c. */
#include <stdlib.h>
#include <string.h>

#include "device/device.h"
#include "device/gpu_plan.h"
#ifdef CTOWER_HAVE_CUDA
#include "device/cuda/cuda_device.h"
#endif

ct_device *ct_device_new_common(ct_device_type type, int index, ct_status *status) {
  ct_device *d = calloc(1, sizeof *d);
  if (d == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory creating a device");
    return NULL;
  }
  d->type = type;
  d->index = index;
  d->threads = 1;
  d->first_core = -1;
  ct_device_canonical_name(type == CT_DEVICE_GPU ? CT_DEVICE_KIND_GPU : CT_DEVICE_KIND_CPU, index,
                           d->name, sizeof d->name);
  pthread_mutex_init(&d->mutex, NULL);
  pthread_cond_init(&d->wake, NULL);
  return d;
}

static void *worker_main(void *arg) {
  ct_device *d = arg;
  if (d->thread_init) d->thread_init(d);
  pthread_mutex_lock(&d->mutex);
  for (;;) {
    while (d->queue_len == 0 && !d->stopping) pthread_cond_wait(&d->wake, &d->mutex);
    if (d->queue_len == 0 && d->stopping) break;
    ct_device_task task = d->queue[d->queue_head];
    d->queue_head = (d->queue_head + 1) % d->queue_cap;
    d->queue_len--;
    pthread_mutex_unlock(&d->mutex);
    task.fn(task.context, task.index);
    pthread_mutex_lock(&d->mutex);
  }
  pthread_mutex_unlock(&d->mutex);
  return NULL;
}

int ct_device_start(ct_device *d, void (*thread_init)(ct_device *), ct_status *status) {
  d->thread_init = thread_init;
  if (pthread_create(&d->worker, NULL, worker_main, d) != 0) {
    ct_status_set(status, CT_UNAVAILABLE, "could not start the worker thread of %s", d->name);
    return 1;
  }
  d->worker_started = 1;
  return 0;
}

int ct_device_submit(ct_device *d, ct_device_task task) {
  pthread_mutex_lock(&d->mutex);
  if (d->queue_len == d->queue_cap) {
    int cap = d->queue_cap ? d->queue_cap * 2 : 256;
    ct_device_task *q = malloc((size_t)cap * sizeof *q);
    if (q == NULL) {
      pthread_mutex_unlock(&d->mutex);
      return 1;
    }
    for (int i = 0; i < d->queue_len; ++i) q[i] = d->queue[(d->queue_head + i) % d->queue_cap];
    free(d->queue);
    d->queue = q;
    d->queue_head = 0;
    d->queue_cap = cap;
  }
  d->queue[(d->queue_head + d->queue_len) % d->queue_cap] = task;
  d->queue_len++;
  pthread_cond_signal(&d->wake);
  pthread_mutex_unlock(&d->mutex);
  return 0;
}

void ct_device_free(ct_device *d) {
  if (d == NULL) return;
  if (d->worker_started) {
    pthread_mutex_lock(&d->mutex);
    d->stopping = 1;
    pthread_cond_signal(&d->wake);
    pthread_mutex_unlock(&d->mutex);
    pthread_join(d->worker, NULL);
  }
  ct_status ignored = CT_STATUS_INIT;
  ct_device_synchronize(d, &ignored); /* no queued work may use what is freed below */
  if (d->stream) dnnl_stream_destroy(d->stream);
  if (d->engine) dnnl_engine_destroy(d->engine);
  ct_allocator_free_all(d->allocator); /* GPU regions go back through the device */
#ifdef CTOWER_HAVE_CUDA
  ct_cuda_device_release(d);
#endif
  pthread_mutex_destroy(&d->mutex);
  pthread_cond_destroy(&d->wake);
  free(d->queue);
  free(d);
}

int ct_device_copy(ct_device *to, void *dst, ct_device *from, const void *src, size_t nbytes,
                   void *ready, ct_status *status) {
#ifdef CTOWER_HAVE_CUDA
  return ct_cuda_copy(to, dst, from, src, nbytes, ready, status);
#else
  (void)to, (void)from, (void)ready, (void)status;
  if (nbytes) memcpy(dst, src, nbytes);
  return 0;
#endif
}

int ct_device_synchronize(ct_device *d, ct_status *status) {
#ifdef CTOWER_HAVE_CUDA
  return ct_cuda_synchronize(d, status);
#else
  (void)d, (void)status;
  return 0;
#endif
}

void *ct_device_mark_new(ct_device *d) {
#ifdef CTOWER_HAVE_CUDA
  if (d->type == CT_DEVICE_GPU) return ct_cuda_mark_new(d);
#endif
  (void)d;
  return NULL;
}

int ct_device_mark_record(ct_device *d, void *mark, ct_status *status) {
#ifdef CTOWER_HAVE_CUDA
  if (mark) return ct_cuda_mark_record(d, mark, status);
#endif
  (void)d, (void)mark, (void)status;
  return 0;
}

double ct_device_mark_elapsed_us(void *from, void *to) {
#ifdef CTOWER_HAVE_CUDA
  if (from && to) return ct_cuda_mark_elapsed_us(from, to);
#endif
  (void)from, (void)to;
  return 0;
}

void ct_device_mark_free(void *mark) {
#ifdef CTOWER_HAVE_CUDA
  if (mark) ct_cuda_mark_free(mark);
#endif
  (void)mark;
}

int ct_device_wait_mark(ct_device *d, void *mark, ct_status *status) {
#ifdef CTOWER_HAVE_CUDA
  if (mark) return ct_cuda_mark_wait(d, mark, status);
#endif
  (void)d, (void)mark, (void)status;
  return 0;
}

/* ---- the registry ------------------------------------------------------- */

int ct_gpu_device_count(const ct_session_options *o) {
#ifdef CTOWER_HAVE_CUDA
  /* A list the plan refuses counts no GPU here; creating the session
   * reports it. */
  ct_gpu_plan plan;
  ct_status ignored = CT_STATUS_INIT;
  /* device_count GPU 0 hides the GPUs without waking the CUDA runtime */
  const int available = o->device_count_gpu == 0 ? 0 : ct_cuda_device_count();
  if (ct_gpu_plan_make(o, available, &plan, &ignored)) return 0;
  return ct_gpu_plan_devices(&plan);
#else
  (void)o;
  return 0;
#endif
}

int ct_devices_create(const ct_session_options *o, ct_device ***out, int *n_out,
                      ct_status *status) {
  *out = NULL;
  *n_out = 0;
  ct_device **devices = calloc(CT_MAX_DEVICES, sizeof *devices);
  if (devices == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory creating devices");
    return 1;
  }
  int n = 0;
  int failed = ct_cpu_devices_create(o, devices, &n, status);
#ifdef CTOWER_HAVE_CUDA
  if (!failed) failed = ct_cuda_devices_create(o, devices, &n, status);
#endif
  if (failed) {
    ct_devices_free(devices, n);
    return 1;
  }
  *out = devices;
  *n_out = n;
  return 0;
}

void ct_devices_free(ct_device **devices, int n) {
  if (devices == NULL) return;
  for (int i = 0; i < n; ++i) ct_device_free(devices[i]);
  free(devices);
}
