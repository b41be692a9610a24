/* What every device has: a name, workers (threads with a FIFO queue of
 * tasks each), an allocator; the calls that dispatch through its type's table
 * (device.h); and the registry that makes a session's devices from the
 * types of device_types.c. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "device/device.h"

/* How long a worker that runs out of tasks watches its queue before it
 * sleeps, where its session's CPU threads leave a core free for the threads
 * that queue its work (ct_device.idle_watch; with none free, the watching
 * worker would take the core they need): the next task usually comes within
 * microseconds (the next run of a training loop), and a sleeping thread takes
 * tens of microseconds to wake, more in a virtual machine, and as long again
 * for the thread that wakes it (bench/RESULTS.md, "Behind the code's
 * choices"). It yields its core meanwhile to any thread that wants it. */
static const double idle_watch_seconds = 300e-6;

/* Returns once a task is queued, or idle_watch_seconds after it was called. */
static void watch_for_tasks(ct_device_worker *w) {
  const double until = ct_monotonic_seconds() + idle_watch_seconds;
  while (atomic_load_explicit(&w->queued, memory_order_relaxed) == 0 &&
         ct_monotonic_seconds() < until)
    sched_yield();
}

static void worker_init(ct_device_worker *w, ct_device *d) {
  w->device = d;
  atomic_init(&w->queued, 0);
  pthread_mutex_init(&w->mutex, NULL);
  pthread_cond_init(&w->wake, NULL);
}

ct_device *ct_device_new_common(const ct_device_ops *ops, const ct_session_options *options,
                                int index, ct_status *status) {
  ct_device *d = calloc(1, sizeof *d);
  if (d == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory creating a device");
    return NULL;
  }
  d->ops = ops;
  d->index = index;
  d->threads = 1;
  d->first_core = -1;
  snprintf(d->job, sizeof d->job, "%s", options->job);
  d->task = options->task;
  ct_device_canonical_name(d->job, d->task, ops->kind, index, d->name, sizeof d->name);
  for (int role = 0; role < CT_WORKER_ROLES; ++role) worker_init(&d->workers[role], d);
  return d;
}

ct_device *ct_device_new_remote(const ct_device *local, int rank, const char *job, int task,
                                ct_status *status) {
  ct_device *d = calloc(1, sizeof *d);
  if (d == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory naming another task's devices");
    return NULL;
  }
  d->ops = local->ops;
  d->index = local->index;
  d->remote = 1;
  d->rank = rank;
  d->threads = local->threads;
  d->first_core = -1;
  snprintf(d->job, sizeof d->job, "%s", job);
  d->task = task;
  ct_device_canonical_name(d->job, d->task, d->ops->kind, d->index, d->name, sizeof d->name);
  snprintf(d->mapping, sizeof d->mapping, "%s", local->mapping);
  return d;
}

int ct_device_make_allocator(ct_device *d, size_t limit, int allow_growth, void *context,
                             ct_status *status) {
  ct_allocator_options options = {d->name,
                                  limit,
                                  allow_growth,
                                  0,
                                  d->ops->region_alloc,
                                  d->ops->region_free,
                                  d->ops->region_error,
                                  context};
  d->allocator = ct_allocator_new_with(&options, status);
  return d->allocator == NULL;
}

static void *worker_main(void *arg) {
  ct_device_worker *w = arg;
  if (w->thread_init) w->thread_init(w->device);
  pthread_mutex_lock(&w->mutex);
  for (;;) {
    if (w->queue_len == 0 && !w->stopping && w->device->idle_watch) {
      pthread_mutex_unlock(&w->mutex);
      watch_for_tasks(w);
      pthread_mutex_lock(&w->mutex);
    }
    while (w->queue_len == 0 && !w->stopping) {
      w->sleeping = 1;
      pthread_cond_wait(&w->wake, &w->mutex);
      w->sleeping = 0;
    }
    if (w->queue_len == 0 && w->stopping) break;
    ct_device_task task = w->queue[w->queue_head];
    w->queue_head = (w->queue_head + 1) % w->queue_cap;
    atomic_store_explicit(&w->queued, --w->queue_len, memory_order_relaxed);
    pthread_mutex_unlock(&w->mutex);
    task.fn(task.context, task.index);
    pthread_mutex_lock(&w->mutex);
  }
  pthread_mutex_unlock(&w->mutex);
  return NULL;
}

static int worker_start(ct_device_worker *w, void (*thread_init)(ct_device *), const char *what,
                        ct_status *status) {
  w->thread_init = thread_init;
  if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
    ct_status_set(status, CT_UNAVAILABLE, "could not start the %s thread of %s", what,
                  w->device->name);
    return 1;
  }
  w->started = 1;
  return 0;
}

/* Stops the thread after the tasks already queued, and frees the worker. */
static void worker_stop(ct_device_worker *w) {
  if (w->started) {
    pthread_mutex_lock(&w->mutex);
    w->stopping = 1;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->mutex);
    pthread_join(w->thread, NULL);
  }
  pthread_mutex_destroy(&w->mutex);
  pthread_cond_destroy(&w->wake);
  free(w->queue);
}

int ct_device_start(ct_device *d, void (*thread_init)(ct_device *), ct_status *status) {
  return worker_start(&d->workers[CT_WORKER_COMPUTE], thread_init, "worker", status);
}

/* A type whose steps only queue work never blocks its worker for long: it
 * has one worker for both roles. */
static ct_device_worker *worker_of(ct_device *d, ct_worker_role role) {
  return &d->workers[d->ops->synchronize ? CT_WORKER_COMPUTE : role];
}

int ct_device_reserve(ct_device *d, ct_worker_role role, int tasks, ct_status *status) {
  ct_device_worker *w = worker_of(d, role);
  pthread_mutex_lock(&w->mutex);
  int failed = 0;
  if (tasks > w->queue_cap) {
    ct_device_task *q = malloc((size_t)tasks * sizeof *q);
    if (q == NULL) {
      failed = 1;
    } else {
      for (int i = 0; i < w->queue_len; ++i) q[i] = w->queue[(w->queue_head + i) % w->queue_cap];
      free(w->queue);
      w->queue = q;
      w->queue_head = 0;
      w->queue_cap = tasks;
    }
  }
  pthread_mutex_unlock(&w->mutex);
  if (failed) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory for the queue of %s", d->name);
    return 1;
  }
  /* the communication thread starts with the first plan that needs it */
  return tasks > 0 && !w->started && worker_start(w, NULL, "communication", status);
}

int ct_device_submit_tasks(ct_device *d, ct_worker_role role, const ct_device_task *tasks, int n,
                           ct_status *status) {
  ct_device_worker *w = worker_of(d, role);
  pthread_mutex_lock(&w->mutex);
  const int full = n > w->queue_cap - w->queue_len;
  if (!full) {
    for (int i = 0; i < n; ++i)
      w->queue[(w->queue_head + w->queue_len + i) % w->queue_cap] = tasks[i];
    w->queue_len += n;
    atomic_store_explicit(&w->queued, w->queue_len, memory_order_relaxed);
    if (w->sleeping) pthread_cond_signal(&w->wake);
  }
  pthread_mutex_unlock(&w->mutex);
  if (full)
    ct_status_set(status, CT_INTERNAL,
                  "the queue of %s is full (%d tasks, %d more): none was reserved", d->name,
                  w->queue_cap, n);
  return full;
}

int ct_device_submit(ct_device *d, ct_worker_role role, ct_device_task task, ct_status *status) {
  return ct_device_submit_tasks(d, role, &task, 1, status);
}

void ct_device_free(ct_device *d) {
  if (d == NULL) return;
  if (d->remote) { /* a name only */
    free(d);
    return;
  }
  for (int role = 0; role < CT_WORKER_ROLES; ++role) worker_stop(&d->workers[role]);
  ct_status ignored = CT_STATUS_INIT;
  ct_device_synchronize(d, &ignored);  /* no queued work may use what is freed below */
  ct_allocator_free_all(d->allocator); /* regions go back through the type's region_free */
  if (d->ops->release) d->ops->release(d);
  free(d);
}

/* The type that carries out a copy: the end that is not host memory. */
static const ct_device_ops *copier(const ct_device *to, const ct_device *from) {
  if (to && !to->ops->host_addressable) return to->ops;
  if (from && !from->ops->host_addressable) return from->ops;
  return NULL;
}

int ct_device_copy(ct_device *to, void *dst, ct_device *from, const void *src, size_t nbytes,
                   void *ready, ct_status *status) {
  const ct_device_ops *ops = copier(to, from);
  if (ops) return ops->copy(to, dst, from, src, nbytes, ready, status);
  if (nbytes) memcpy(dst, src, nbytes);
  return 0;
}

int ct_device_copies_ahead(const ct_device *d) { return d->ops->copy_ahead != NULL; }

int ct_device_copy_ahead(ct_device *to, void *dst, const void *src, size_t nbytes, void *begin,
                         void *end, ct_status *status) {
  return to->ops->copy_ahead(to, dst, src, nbytes, begin, end, status);
}

void *ct_device_host_alloc(ct_device *d, size_t bytes) {
  return d->ops->host_alloc ? d->ops->host_alloc(bytes) : NULL;
}

void ct_device_host_free(ct_device *d, void *ptr) {
  if (ptr) d->ops->host_free(ptr);
}

int ct_device_synchronize(ct_device *d, ct_status *status) {
  return d->ops->synchronize ? d->ops->synchronize(d, status) : 0;
}

int ct_device_step_done(ct_device *d, const char *name, const char *op, ct_status *status) {
  return d->ops->step_done ? d->ops->step_done(d, name, op, status) : 0;
}

void *ct_device_mark_new(ct_device *d) { return d->ops->mark_new ? d->ops->mark_new(d) : NULL; }

int ct_device_mark_record(ct_device *d, void *mark, ct_status *status) {
  return mark ? d->ops->mark_record(d, mark, status) : 0;
}

double ct_device_mark_elapsed_us(ct_device *d, void *from, void *to) {
  return from && to ? d->ops->mark_elapsed_us(from, to) : 0;
}

void ct_device_mark_free(ct_device *d, void *mark) {
  if (mark) d->ops->mark_free(mark);
}

int ct_device_wait_mark(ct_device *d, void *mark, ct_status *status) {
  return mark ? d->ops->mark_wait(d, mark, status) : 0;
}

/* ---- the registry ------------------------------------------------------- */

int ct_device_count(const ct_session_options *o, ct_device_kind kind) {
  int n = 0;
  for (int t = 0; t < ct_device_type_count; ++t)
    if (ct_device_types[t]->kind == kind) n += ct_device_types[t]->count_devices(o);
  return n;
}

void ct_device_runtime_describe(char *text, size_t size) {
  size_t used = 0;
  text[0] = '\0';
  for (int t = 0; t < ct_device_type_count && used + 1 < size; ++t)
    if (ct_device_types[t]->describe_runtime) {
      ct_device_types[t]->describe_runtime(text + used, size - used);
      used += strlen(text + used);
    }
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
  int n = 0, failed = 0;
  for (int t = 0; t < ct_device_type_count && !failed; ++t)
    failed = ct_device_types[t]->create_devices(o, devices, &n, status);
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
