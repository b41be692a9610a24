/* CPU devices: a worker thread with its own OpenMP team, pinned to its own
 * cores when there are enough, denormals flushed to zero on every thread of
 * the team (as TensorFlow does: decaying gradients otherwise slow every
 * kernel several times). */
#include <omp.h>
#include <pmmintrin.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xmmintrin.h>

#include "ctower/session.h"
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

/* Pins the calling thread to `count` of the process's cores from `first`. */
static void pin_to_cores(int first, int count) {
  cpu_set_t allowed, mine;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return;
  CPU_ZERO(&mine);
  int seen = 0;
  for (int cpu = 0; cpu < CPU_SETSIZE && seen < first + count; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed)) continue;
    if (seen >= first) CPU_SET(cpu, &mine);
    ++seen;
  }
  if (CPU_COUNT(&mine) > 0) sched_setaffinity(0, sizeof mine, &mine);
}

static void *worker_main(void *arg) {
  ct_device *d = arg;
  /* Team threads inherit the affinity the worker has when they start. */
  if (d->first_core >= 0) pin_to_cores(d->first_core, d->threads);
  omp_set_num_threads(d->threads);
#pragma omp parallel num_threads(d->threads)
  {
    _MM_SET_FLUSH_ZERO_MODE(_MM_FLUSH_ZERO_ON);
    _MM_SET_DENORMALS_ZERO_MODE(_MM_DENORMALS_ZERO_ON);
  }
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

ct_device *ct_cpu_device_new(int index, int threads, int first_core, size_t memory_limit,
                             ct_status *status) {
  ct_device *d = calloc(1, sizeof *d);
  if (d == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory creating a device");
    return NULL;
  }
  d->type = CT_DEVICE_CPU;
  d->index = index;
  d->threads = threads > 0 ? threads : 1;
  d->first_core = first_core;
  ct_device_canonical_name(CT_DEVICE_KIND_CPU, index, d->name, sizeof d->name);
  pthread_mutex_init(&d->mutex, NULL);
  pthread_cond_init(&d->wake, NULL);
  d->allocator = ct_allocator_new(d->name, memory_limit);
  if (d->allocator == NULL || dnnl_engine_create(&d->engine, dnnl_cpu, 0) != dnnl_success ||
      dnnl_stream_create(&d->stream, d->engine, dnnl_stream_default_flags) != dnnl_success) {
    ct_status_set(status, CT_UNAVAILABLE, "could not create the oneDNN CPU engine for %s",
                  d->name);
    ct_device_free(d);
    return NULL;
  }
  if (pthread_create(&d->worker, NULL, worker_main, d) != 0) {
    ct_status_set(status, CT_UNAVAILABLE, "could not start the worker thread of %s", d->name);
    ct_device_free(d);
    return NULL;
  }
  d->worker_started = 1;
  return d;
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
  if (d->stream) dnnl_stream_destroy(d->stream);
  if (d->engine) dnnl_engine_destroy(d->engine);
  ct_allocator_free_all(d->allocator);
  pthread_mutex_destroy(&d->mutex);
  pthread_cond_destroy(&d->wake);
  free(d->queue);
  free(d);
}

/* ---- the registry ------------------------------------------------------- */

int ct_devices_create(const ct_session_options *o, ct_device ***out, int *n_out,
                      ct_status *status) {
  *out = NULL;
  *n_out = 0;
  int n_cpu = o->device_count_cpu > 0 ? o->device_count_cpu : 1;
  if (n_cpu > CT_MAX_DEVICES) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "device_count CPU is %d; at most %d CPU devices are supported", n_cpu,
                  CT_MAX_DEVICES);
    return 1;
  }
  const int cores = ct_available_cores();
  const int total = o->intra_op_parallelism_threads > 0 ? o->intra_op_parallelism_threads : cores;
  int threads[CT_MAX_DEVICES], sum = 0;
  for (int i = 0; i < n_cpu; ++i) {
    /* an even share, the first devices taking the remainder; at least one */
    threads[i] = o->cpu_device_threads[i] > 0 ? o->cpu_device_threads[i]
                                               : total / n_cpu + (i < total % n_cpu);
    if (threads[i] < 1) threads[i] = 1;
    sum += threads[i];
  }
  ct_device **devices = calloc((size_t)n_cpu, sizeof *devices);
  if (devices == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory creating devices");
    return 1;
  }
  /* Pin each device to cores of its own only when they all fit: otherwise
   * two pools would spin on the same cores. */
  const int pin = n_cpu > 1 && sum <= cores;
  int next_core = 0;
  for (int i = 0; i < n_cpu; ++i) {
    size_t limit = o->cpu_device_memory_limit[i] ? o->cpu_device_memory_limit[i] : o->cpu_memory_limit;
    devices[i] = ct_cpu_device_new(i, threads[i], pin ? next_core : -1, limit, status);
    if (devices[i] == NULL) {
      ct_devices_free(devices, i);
      return 1;
    }
    next_core += threads[i];
  }
  *out = devices;
  *n_out = n_cpu;
  return 0;
}

void ct_devices_free(ct_device **devices, int n) {
  if (devices == NULL) return;
  for (int i = 0; i < n; ++i) ct_device_free(devices[i]);
  free(devices);
}
