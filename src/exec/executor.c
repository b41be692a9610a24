/* Runs a plan (plan.h). A run queues the steps that wait for nothing on
 * their devices' workers; each worker runs a step (run_step.h: the op's
 * shape rule on the real input shapes, its outputs bound, the kernel, the
 * release of dead inputs) and queues every consumer whose last input this
 * was. Devices thus run concurrently, each node as soon as its inputs are
 * ready. The run's own thread serves the sends and receives of edges
 * between tasks (transfer.h) and waits for the run's end. */
#include <math.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cluster/communication.h"
#include "exec/executor.h"
#include "exec/run_step.h"
#include "exec/staging.h"
#include "exec/transfer.h"

typedef struct run_state {
  ct_session *session;
  ct_plan *plan;
  atomic_int steps_left;
  atomic_int failed;
  pthread_mutex_t mutex;
  pthread_cond_t done; /* signalled by the last step, and by each send that becomes ready */
  int *ready_sends;    /* sends whose inputs are ready, for the run's thread (under mutex) */
  int n_ready_sends;
  int *spare_sends;          /* the list the run's thread took last, to be refilled */
  double *transfer_start_us; /* per transfer: when it started (traced runs) */
  ct_status status;          /* the first failure */
  ct_run_metadata *metadata;
  struct timespec start;
} run_state;

static double micros_since(const struct timespec *start) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)(now.tv_sec - start->tv_sec) * 1e6 + (double)(now.tv_nsec - start->tv_nsec) * 1e-3;
}

static void execute_step(void *context, int index);
static void step_finished(run_state *run, int index);

static void record_failure(run_state *run, const ct_status *status) {
  pthread_mutex_lock(&run->mutex);
  ct_status_propagate(&run->status, status);
  pthread_mutex_unlock(&run->mutex);
  atomic_store(&run->failed, 1);
}

/* Queues a step on its device. The plan reserved room for every step of
 * each device, so this cannot fail short of a broken invariant; if it
 * does, the run fails, and the step is passed through here (it does no
 * work in a failed run) so that the run still ends. */
static void schedule(run_state *run, int index) {
  const ct_plan_step *step = &run->plan->steps[index];
  if (step->transfer != CT_TRANSFER_NONE) { /* the run's thread starts it */
    pthread_mutex_lock(&run->mutex);
    run->ready_sends[run->n_ready_sends++] = index;
    pthread_cond_signal(&run->done);
    pthread_mutex_unlock(&run->mutex);
    return;
  }
  ct_device *device = run->session->devices[step->device];
  ct_device_task task = {execute_step, run, index};
  ct_status status = CT_STATUS_INIT;
  if (ct_device_submit(device, step->role, task, &status) != 0) {
    record_failure(run, &status);
    execute_step(run, index);
  }
}

/* Queues the steps that wait for nothing: each device worker's together, in
 * the plan's order. Queued one at a time, a worker could finish the first
 * and queue its consumers among the rest, in an order that changed from
 * run to run; on one device the steps now run in the same order every run
 * (and check_numerics names the same op). Sends go to the run's thread. */
static void schedule_roots(run_state *run) {
  ct_plan *p = run->plan;
  for (int d = 0; d < run->session->n_devices; ++d)
    for (int role = 0; role < CT_WORKER_ROLES; ++role) {
      int n = 0;
      for (int i = 0; i < p->n_steps; ++i) {
        const ct_plan_step *step = &p->steps[i];
        if (step->n_deps == 0 && step->transfer == CT_TRANSFER_NONE && step->device == d &&
            (int)step->role == role)
          p->root_tasks[n++] = (ct_device_task){execute_step, run, i};
      }
      ct_status status = CT_STATUS_INIT;
      if (n > 0 && ct_device_submit_tasks(run->session->devices[d], (ct_worker_role)role,
                                          p->root_tasks, n, &status) != 0) {
        record_failure(run, &status); /* as in schedule: the steps pass through */
        for (int k = 0; k < n; ++k) execute_step(run, p->root_tasks[k].index);
      }
    }
  for (int i = 0; i < p->n_steps; ++i)
    if (p->steps[i].n_deps == 0 && p->steps[i].transfer == CT_TRANSFER_SEND) schedule(run, i);
}

/* A device worker runs one step, then queues the consumers it unblocked. */
static void execute_step(void *context, int index) {
  run_state *run = context;
  ct_plan *p = run->plan;
  ct_plan_step *step = &p->steps[index];
  if (!atomic_load(&run->failed)) {
    ct_status status = CT_STATUS_INIT;
    double start = run->metadata ? micros_since(&run->start) : 0;
    ct_device *device = run->session->devices[step->device];
    /* on a device that queues its work (a GPU: the run made it a mark) the
     * step's time is its queued work's, read after the run */
    const int queued = run->metadata && step->n_outputs > 0 && p->device_marks[step->device];
    if (queued && !step->mark_begin) step->mark_begin = ct_device_mark_new(device);
    if (queued && !step->mark_end) step->mark_end = ct_device_mark_new(device);
    int failed = (queued && ct_device_mark_record(device, step->mark_begin, &status)) ||
                 ct_run_step(run->session, p, step, &status) ||
                 (queued && ct_device_mark_record(device, step->mark_end, &status));
    /* a copy into host memory waits for these marks: a missing one would
     * let it read a value not written yet, so failing to record fails */
    for (int o = 0; !failed && o < step->n_outputs; ++o) {
      const int slot = step->first_slot + o;
      failed = ct_device_mark_record(ct_run_slot_device(run->session, p, slot), p->slot_ready[slot],
                                     &status);
    }
    step->timed = queued && !failed && step->mark_begin && step->mark_end;
    if (failed) {
      record_failure(run, &status);
    } else if (run->metadata && !step->timed) {
      ct_run_record_event(p, run->metadata, step, start, micros_since(&run->start));
    }
  }
  step_finished(run, index);
}

/* A step is done: the consumers whose last input it was may run. */
static void step_finished(run_state *run, int index) {
  ct_plan *p = run->plan;
  const ct_plan_step *step = &p->steps[index];
  for (int c = 0; c < step->n_consumers; ++c)
    if (atomic_fetch_sub(&p->pending[step->consumers[c]], 1) == 1)
      schedule(run, step->consumers[c]);
  if (atomic_fetch_sub(&run->steps_left, 1) == 1) {
    pthread_mutex_lock(&run->mutex);
    pthread_cond_signal(&run->done);
    pthread_mutex_unlock(&run->mutex);
  }
}

/* ---- edges between tasks (transfer.h) ------------------------------------------ */

/* A send or receive is done: the send's input is consumed, and the step
 * finishes as a device's step does. */
static void transfer_finished(run_state *run, int t) {
  ct_plan *p = run->plan;
  const int index = p->transfer_steps[t];
  const ct_plan_step *step = &p->steps[index];
  if (run->metadata && !atomic_load(&run->failed))
    ct_run_record_event(p, run->metadata, step, run->transfer_start_us[t],
                        micros_since(&run->start));
  for (int j = 0; j < step->n_inputs; ++j) ct_run_slot_consumed(p, step->input_slots[j]);
  step_finished(run, index);
}

/* Starts the sends that became ready: each carries its value, or the run's
 * failure once it has failed, so that the peer does not wait for a value
 * that will not come. Returns how many it started. */
static int start_ready_sends(run_state *run, unsigned char *active) {
  ct_plan *p = run->plan;
  pthread_mutex_lock(&run->mutex); /* take the list; the workers fill the spare one */
  int *ready = run->ready_sends;
  const int n = run->n_ready_sends;
  run->ready_sends = run->spare_sends;
  run->spare_sends = ready;
  run->n_ready_sends = 0;
  ct_status failure = run->status;
  pthread_mutex_unlock(&run->mutex);
  for (int i = 0; i < n; ++i) {
    const int t = p->steps[ready[i]].transfer_index;
    ct_status status = CT_STATUS_INIT;
    run->transfer_start_us[t] = micros_since(&run->start);
    if (ct_plan_transfer_send(p, t, atomic_load(&run->failed) ? &failure : NULL, &status)) {
      record_failure(run, &status);
      transfer_finished(run, t);
    } else {
      active[t] = 1;
    }
  }
  return n;
}

/* Advances transfer t; returns whether anything happened. */
static int advance_transfer(run_state *run, int t, unsigned char *active) {
  ct_plan *p = run->plan;
  ct_plan_step *step = &p->steps[p->transfer_steps[t]];
  ct_status status = CT_STATUS_INIT;
  switch (ct_plan_transfer_poll(p, t, &status)) {
    case CT_TRANSFER_PENDING:
      return 0;
    case CT_TRANSFER_SHAPED: {
      /* no buffer (memory ran out): the bytes are still taken, and dropped */
      const int discard = ct_run_bind_outputs(run->session, p, step, &status);
      if (discard) record_failure(run, &status);
      ct_status_clear(&status);
      if (ct_plan_transfer_receive(p, t, discard, &status) == 0) return 1;
      break;
    }
    case CT_TRANSFER_DONE:
      active[t] = 0;
      transfer_finished(run, t);
      return 1;
    case CT_TRANSFER_PEER_FAILED:
    case CT_TRANSFER_ERROR:
      break;
  }
  record_failure(run, &status);
  active[t] = 0;
  transfer_finished(run, t);
  return 1;
}

/* The run's thread in a run with edges between tasks: it posts the
 * receives, starts each send as its value is ready and completes them all
 * as their messages come and go, until no step is left. A device's worker
 * never waits for another task. */
static void run_transfers(run_state *run, int receives_posted, unsigned char *active) {
  ct_plan *p = run->plan;
  for (int t = 0; t < p->n_transfers; ++t)
    if (p->steps[p->transfer_steps[t]].transfer == CT_TRANSFER_RECV) {
      if (receives_posted)
        active[t] = 1;
      else
        transfer_finished(run, t);
    }
  double last_progress = micros_since(&run->start);
  while (atomic_load(&run->steps_left) > 0) {
    int progressed = start_ready_sends(run, active);
    for (int t = 0; t < p->n_transfers; ++t)
      if (active[t]) progressed += advance_transfer(run, t, active);
    const double now = micros_since(&run->start);
    if (progressed) last_progress = now;
    /* MPI moves a message only while it is called: shortly after a message
     * moved the next part usually follows (a value after its header), so
     * poll at once, yielding the core; then sleep until a send is ready,
     * or 100 microseconds */
    if (now - last_progress < 300) {
      sched_yield();
      continue;
    }
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_nsec += 100000;
    if (until.tv_nsec >= 1000000000) until.tv_sec++, until.tv_nsec -= 1000000000;
    pthread_mutex_lock(&run->mutex);
    if (run->n_ready_sends == 0 && atomic_load(&run->steps_left) > 0)
      pthread_cond_timedwait(&run->done, &run->mutex, &until);
    pthread_mutex_unlock(&run->mutex);
  }
}

/* How long before a run should end its thread wakes to watch for the end, and
 * how long after that it watches at most before it sleeps again, in
 * microseconds. A sleeping thread takes tens of microseconds to wake, more in
 * a virtual machine, a sizeable part of a small model's step
 * (bench/RESULTS.md, "Behind the code's choices"); watching the whole run
 * instead takes a core from the threads that feed the next one. */
enum { WATCH_BEFORE_END_US = 150, WATCH_AT_MOST_US = 400 };

/* Whether the run's thread may watch for the run's end: its devices leave
 * it a core (device.h's idle_watch) and it has no transfers to serve. */
static int may_watch_end(const ct_session *s, const ct_plan *p) {
  if (p->n_transfers > 0 || p->last_run_us <= 0) return 0;
  for (int d = 0; d < s->n_devices; ++d)
    if (p->uses_device[d] && !s->devices[d]->idle_watch) return 0;
  return 1;
}

/* Returns once no step of the run is left: sleeping, or, where it may
 * watch, asleep until shortly before the end the last run suggests, then
 * watching for a moment, yielding its core to any thread that wants it. */
static void wait_for_run_end(run_state *run, int watch) {
  pthread_mutex_lock(&run->mutex);
  if (watch) {
    const double wake_us = fmax(run->plan->last_run_us - WATCH_BEFORE_END_US, 0.0);
    struct timespec until = run->start;
    until.tv_sec += (time_t)(wake_us / 1e6);
    until.tv_nsec += (long)(fmod(wake_us, 1e6) * 1e3);
    if (until.tv_nsec >= 1000000000) until.tv_sec++, until.tv_nsec -= 1000000000;
    while (atomic_load(&run->steps_left) > 0 &&
           pthread_cond_timedwait(&run->done, &run->mutex, &until) == 0) {
    }
    pthread_mutex_unlock(&run->mutex);
    const double watch_until = micros_since(&run->start) + WATCH_AT_MOST_US;
    while (atomic_load(&run->steps_left) > 0 && micros_since(&run->start) < watch_until)
      sched_yield();
    pthread_mutex_lock(&run->mutex);
  }
  while (atomic_load(&run->steps_left) > 0) pthread_cond_wait(&run->done, &run->mutex);
  pthread_mutex_unlock(&run->mutex);
}

static int run_plan(ct_session *s, ct_plan *p, const ct_feed *feeds, const ct_feed *next_feeds,
                    ct_run_metadata *metadata, ct_status *status) {
  s->runs++;
  ct_staging_drop_stale(s);
  for (int slot = 0; slot < p->n_slots; ++slot) {
    p->value_buffers[slot] = NULL;
    p->slot_side_mark[slot] = NULL;
    atomic_store(&p->remaining[slot], 0);
  }
  for (int i = 0; i < p->n_feeds; ++i) {
    int slot = p->feed_slots[i];
    p->values[slot] = *feeds[i].value;
    p->values[slot].owns_data = 0;
    atomic_store(&p->remaining[slot], p->slot_consumers[slot]);
  }
  if (p->n_steps == 0) return 0;
  run_state run;
  memset(&run, 0, sizeof run);
  run.session = s;
  run.plan = p;
  run.metadata = metadata;
  clock_gettime(CLOCK_MONOTONIC, &run.start);
  if (metadata)
    metadata->start_us = 1e6 * (double)run.start.tv_sec + 1e-3 * (double)run.start.tv_nsec;
  for (int d = 0; metadata && d < s->n_devices && d < CT_MAX_DEVICES; ++d) {
    /* a GPU is idle when a run starts (the last one waited for it): its
     * mark is reached at once, at the run's clock now */
    if (!p->device_marks[d]) p->device_marks[d] = ct_device_mark_new(s->devices[d]);
    if (ct_device_mark_record(s->devices[d], p->device_marks[d], status)) return 1;
    p->device_mark_us[d] = micros_since(&run.start);
  }
  if (next_feeds) ct_staging_start(s, p, next_feeds, metadata != NULL);
  atomic_store(&run.steps_left, p->n_steps);
  pthread_mutex_init(&run.mutex, NULL);
  pthread_condattr_t done_attr; /* timed waits on the run's clock */
  pthread_condattr_init(&done_attr);
  pthread_condattr_setclock(&done_attr, CLOCK_MONOTONIC);
  pthread_cond_init(&run.done, &done_attr);
  pthread_condattr_destroy(&done_attr);
  unsigned char *active = NULL;
  int receives_posted = 0;
  if (p->n_transfers > 0) {
    run.ready_sends = malloc((size_t)p->n_transfers * sizeof *run.ready_sends);
    run.spare_sends = malloc((size_t)p->n_transfers * sizeof *run.spare_sends);
    run.transfer_start_us = calloc((size_t)p->n_transfers, sizeof *run.transfer_start_us);
    active = calloc((size_t)p->n_transfers, 1);
    if (!run.ready_sends || !run.spare_sends || !run.transfer_start_us || !active) {
      ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory starting a run");
      free(run.ready_sends), free(run.spare_sends), free(run.transfer_start_us), free(active);
      return 1;
    }
    /* the receives are posted before any step runs; a failure to post
     * them fails the run, whose sends then carry that failure */
    receives_posted = ct_plan_transfers_begin(p, &run.status) == 0;
    if (!receives_posted) atomic_store(&run.failed, 1);
  }
  for (int i = 0; i < p->n_steps; ++i) atomic_store(&p->pending[i], p->steps[i].n_deps);
  schedule_roots(&run);
  /* a run with edges between tasks waits for the other tasks (every rank
   * makes it, with or without messages of its own): a task that stops
   * leaves the others waiting here, and the stall inspector names it */
  if (p->n_edges > 0) {
    ct_cluster_progress((int64_t)s->step, -1, "edges between tasks");
    ct_cluster_enter_wait("run");
  }
  if (p->n_transfers > 0) run_transfers(&run, receives_posted, active);
  wait_for_run_end(&run, may_watch_end(s, p));
  p->last_run_us = micros_since(&run.start);
  if (p->n_edges > 0) ct_cluster_leave_wait();
  pthread_mutex_destroy(&run.mutex);
  pthread_cond_destroy(&run.done);
  free(run.ready_sends), free(run.spare_sends), free(run.transfer_start_us), free(active);
  ct_status_propagate(status, &run.status);
  return atomic_load(&run.failed);
}

/* The timeline events of steps timed on GPUs, now that their work is done:
 * from the device's mark at the start of the run. */
static void add_device_timings(ct_plan *p, ct_run_metadata *metadata) {
  for (int i = 0; i < p->n_steps; ++i) {
    ct_plan_step *step = &p->steps[i];
    if (!step->timed) continue;
    step->timed = 0;
    ct_device *device = p->devices[step->device];
    void *origin = p->device_marks[step->device];
    double base = p->device_mark_us[step->device];
    ct_run_record_event(p, metadata, step,
                        base + ct_device_mark_elapsed_us(device, origin, step->mark_begin),
                        base + ct_device_mark_elapsed_us(device, origin, step->mark_end));
  }
}

/* A host copy of a fetched value, wherever it lives. */
static int fetch_result(ct_session *s, ct_plan *p, int slot, ct_tensor **result,
                        ct_status *status) {
  const ct_tensor *value = &p->values[slot];
  *result = ct_tensor_new(value->dtype, &value->shape, status);
  if (*result == NULL) return 1;
  return ct_device_copy(NULL, (*result)->data, ct_run_slot_device(s, p, slot), value->data,
                        ct_tensor_nbytes(value), p->slot_side_mark[slot], status);
}

int ct_executor_run(ct_session *s, ct_plan *p, const ct_feed *feeds, const ct_feed *next_feeds,
                    ct_run_metadata *metadata, ct_tensor **results, ct_status *status) {
  int failed = run_plan(s, p, feeds, next_feeds, metadata, status);
  if (!failed && next_feeds) failed = ct_staging_finish(s, p, status);
  for (int i = 0; i < p->n_fetches && !failed; ++i)
    failed = fetch_result(s, p, p->fetch_slots[i], &results[i], status);
  /* A run ends when its devices are done: work a device queues (a GPU's)
   * is not waited for until here, and its errors surface here too. */
  for (int d = 0; d < s->n_devices; ++d)
    if (p->uses_device[d] && ct_device_synchronize(s->devices[d], status)) failed = 1;
  if (metadata) add_device_timings(p, metadata);
  if (metadata) ct_staging_add_timings(p, metadata);
  /* a failed run's copies ahead may not have been made */
  if (failed) ct_plan_drop_staged(p);
  ct_run_release_all(p);
  return failed;
}
