/* A device: where kernels run and buffers live (/cpu:0, /gpu:1, ...). Each
 * owns a worker thread that runs the steps placed on it, from a FIFO queue
 * (and a second one for the steps that wait for other processes), and an
 * allocator; what is particular to its type (oneDNN's engine on a
 * CPU, streams and library handles on a GPU) hangs off `impl`, and what the
 * rest of ctower asks of a type goes through its table of operations,
 * ct_device_ops. The executor, the session and the placer dispatch through
 * that table: none of them tests a device's type.
 *
 * Adding a device type: a file that fills a ct_device_ops (cpu_device.c,
 * cuda/cuda_device.c) and its line in device_types.c. */
#ifndef CTOWER_DEVICE_H
#define CTOWER_DEVICE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "ctower/device_name.h"
#include "ctower/session_options.h"
#include "ctower/status.h"
#include "device/allocator.h"

typedef struct ct_device ct_device;

/* What a device type does; one static table per type. A NULL function is
 * "nothing to do" where the comment says so. */
typedef struct ct_device_ops {
  ct_device_kind kind;  /* the type's name in device specs and the kernel registry's key */
  int priority;         /* default placement tries higher first (TensorFlow: GPU, then CPU) */
  int host_addressable; /* its buffers are host memory: host-addressable devices read one
                           another's values in place, with no copy */
  /* Appends the devices of this type that `options` ask for to devices[*n]
   * (capacity CT_MAX_DEVICES), each with its allocator and its worker
   * started. Returns 0, or fills status; devices already appended stay for
   * the caller to free. */
  int (*create_devices)(const ct_session_options *options, ct_device **devices, int *n,
                        ct_status *status);
  /* How many devices create_devices would make, without making them. */
  int (*count_devices)(const ct_session_options *options);
  /* What the type loads at run time, and from where, a line each ending in
   * '\n', into text (NUL-terminated, at most size bytes); NULL: nothing. */
  void (*describe_runtime)(char *text, size_t size);
  /* Frees what create_devices set up beside the allocator, once the worker
   * has stopped and the device is synchronized; NULL: nothing. */
  void (*release)(ct_device *device);
  /* Where the allocator's regions come from; NULL: page-aligned host memory. */
  void *(*region_alloc)(size_t bytes, void *context);
  void (*region_free)(void *ptr, size_t bytes, void *context);
  /* When region_alloc failed for another reason than a shortage of memory
   * (a GPU that failed earlier), writes why into text and returns 1; NULL:
   * a failed region is always a shortage. */
  int (*region_error)(void *context, char *text, size_t size);
  /* Copies nbytes from src to dst where one end is a device of this type
   * and the other host memory (NULL), a host-addressable device, or a
   * device of this type (contract: ct_device_copy). NULL for a
   * host-addressable type: such copies are plain memcpy. */
  int (*copy)(ct_device *to, void *dst, ct_device *from, const void *src, size_t nbytes,
              void *ready, ct_status *status);
  /* Copies nbytes from host memory src into dst on the device off its
   * compute queue (a GPU's copy stream), after the work queued so far and
   * beside the work queued later; records `begin` (when not NULL) before
   * the copy and `end` after it (contract: ct_device_copy_ahead). NULL: a
   * host-addressable type, which needs no copy. */
  int (*copy_ahead)(ct_device *to, void *dst, const void *src, size_t nbytes, void *begin,
                    void *end, ct_status *status);
  /* Host memory that copies into devices of this type read directly, with
   * no staging (a GPU's pinned memory), and its release; NULL: none. */
  void *(*host_alloc)(size_t bytes);
  void (*host_free)(void *ptr);
  /* Waits until the work queued on the device is done; NULL: a type whose
   * steps finish before they return. */
  int (*synchronize)(ct_device *device, ct_status *status);
  /* Called after each step (a kernel, or a copy into the device) the
   * executor runs on the device, with the step's node name and op: a type
   * that queues work may wait for it here and report its failure under the
   * step's name (a GPU under CTOWER_GPU_SYNC=1). Returns 0 or fills status;
   * NULL: nothing to check. */
  int (*step_done)(ct_device *device, const char *name, const char *op, ct_status *status);
  /* Marks (ct_device_mark_*); NULL mark_new: the type needs none. */
  void *(*mark_new)(ct_device *device);
  int (*mark_record)(ct_device *device, void *mark, ct_status *status);
  double (*mark_elapsed_us)(void *from, void *to);
  void (*mark_free)(void *mark);
  int (*mark_wait)(ct_device *device, void *mark, ct_status *status);
} ct_device_ops;

/* Work handed to a device's worker: fn(context, index). */
typedef struct ct_device_task {
  void (*fn)(void *context, int index);
  void *context;
  int index;
} ct_device_task;

/* A device's two workers. Compute runs its steps. Communication runs the
 * steps that wait for other processes (a collective across ranks), so
 * that the device goes on computing meanwhile, as the backward pass does
 * while PyTorch's DDP sums its buckets. On a type whose steps only queue
 * work (a GPU) both roles are the compute worker. */
typedef enum ct_worker_role {
  CT_WORKER_COMPUTE,
  CT_WORKER_COMMUNICATION,
  CT_WORKER_ROLES
} ct_worker_role;

/* A thread and its FIFO queue. */
typedef struct ct_device_worker {
  struct ct_device *device;
  void (*thread_init)(struct ct_device *device); /* runs first on the thread; may be NULL */
  pthread_t thread;
  int started;
  pthread_mutex_t mutex;
  pthread_cond_t wake;
  ct_device_task *queue;
  int queue_head, queue_len, queue_cap;
  atomic_int queued; /* queue_len, read without the lock while the worker watches for tasks */
  int sleeping;      /* the worker waits on `wake`: a submit must signal it */
  int stopping;
} ct_device_worker;

struct ct_device {
  const ct_device_ops *ops;    /* its type */
  char name[128];              /* canonical: /job:localhost/replica:0/task:0/device:CPU:0 */
  char job[CT_DEVICE_JOB_MAX]; /* the task it belongs to (the session options'): "" is */
  int task;                    /*   localhost, task 0 */
  char description[320];       /* GPU: "NVIDIA H100 80GB HBM3, CUDA device 0"; CPU: its kernels' ISA, math, convolutions */
  char mapping[352];           /* the placement log's "Device mapping:" entry after the index:
                                  "name: cpu, cores: 1" */
  int index;                   /* N in /cpu:N */
  int remote;                  /* 1: another task's device, which this process only names
                                  (ct_device_new_remote) */
  int rank;                    /* remote: the MPI rank of its task */
  int threads;                 /* CPU: the worker's OpenMP team size; GPU: its SMs */
  int first_core;              /* pinned to cores [first_core, first_core + threads), or -1 */
  int idle_watch;              /* its workers watch for tasks a moment before they sleep (the
                                  process's CPU devices leave a core of its share free for
                                  the threads that queue their work) */
  ct_allocator *allocator;
  void *impl; /* the type's own state (cpu_device.h, cuda/cuda_device.h) */
  ct_device_worker workers[CT_WORKER_ROLES]; /* compute; communication, started when needed */
};

/* A device of type `ops` with its name, queue and lock, nothing started;
 * the type's create_devices gives it an allocator (ct_device_make_allocator)
 * and starts its worker. NULL and status when out of memory. */
ct_device *ct_device_new_common(const ct_device_ops *ops, const ct_session_options *options,
                                int index, ct_status *status);
/* The device of rank `rank` (/job:JOB/task:TASK) that mirrors `local`: its
 * type and index, for the placer to choose and a plan to send values to
 * (exec/plan_edges.c); nothing runs on it here: no allocator, no worker.
 * Freed by ct_device_free. NULL and status when out of memory. */
ct_device *ct_device_new_remote(const ct_device *local, int rank, const char *job, int task,
                                ct_status *status);
/* The device's allocator from its type's region source, with `context`
 * handed to it. Returns 0 or fills status. */
int ct_device_make_allocator(ct_device *device, size_t limit, int allow_growth, void *context,
                             ct_status *status);
/* Starts the compute worker, which runs thread_init (may be NULL) first. */
int ct_device_start(ct_device *device, void (*thread_init)(ct_device *), ct_status *status);
/* Stops the workers (after the tasks already queued) and frees the device. */
void ct_device_free(ct_device *device);

/* Makes room in the queue of the device's worker of `role` for `tasks` tasks at
 * once, so that ct_device_submit never needs memory; starts the
 * communication worker the first time it gets room. Returns 0 or fills
 * status. */
int ct_device_reserve(ct_device *device, ct_worker_role role, int tasks, ct_status *status);
/* Queues a task for the device's worker of `role`. Returns 0, or fills
 * status (INTERNAL) when the queue is full: reserve room first. */
int ct_device_submit(ct_device *device, ct_worker_role role, ct_device_task task,
                     ct_status *status);
/* Queues tasks[0..n) together, in order: the worker takes none of them
 * before all are queued. Returns 0, or fills status (INTERNAL) and queues
 * none when there is no room for all. */
int ct_device_submit_tasks(ct_device *device, ct_worker_role role, const ct_device_task *tasks,
                           int n, ct_status *status);

/* Copies nbytes from src (on `from`; NULL: host memory) to dst (on `to`;
 * NULL: host memory), ordered after the work queued on both and before
 * the work queued on them later; a copy into host memory is complete when
 * this returns. `ready`, when not NULL, is a mark of `from` recorded once
 * src was written: a copy into host memory then waits for that work
 * alone, not for everything queued on the device since. Returns 0 or
 * fills status. */
int ct_device_copy(ct_device *to, void *dst, ct_device *from, const void *src, size_t nbytes,
                   void *ready, ct_status *status);
/* Whether the device can copy ahead (ct_device_copy_ahead): a device
 * whose buffers are not host memory. */
int ct_device_copies_ahead(const ct_device *device);
/* Starts copying nbytes from host memory src into dst on `to` beside its
 * compute (TensorFlow's StagingArea: the copy of the next step's input runs
 * under this step's kernels). The copy comes after the work queued on `to`
 * so far, and the host may change src once `to` is synchronized. Its
 * readers wait for the mark `end` (ct_device_wait_mark), which is recorded
 * after it; `begin`, when not NULL, is recorded before it, to time it. Both
 * are marks of `to`. Returns 0 or fills status. */
int ct_device_copy_ahead(ct_device *to, void *dst, const void *src, size_t nbytes, void *begin,
                         void *end, ct_status *status);
/* Host memory that copies into `device` read directly (ct_device_ops'
 * host_alloc): NULL when its type has none or it is out of memory. */
void *ct_device_host_alloc(ct_device *device, size_t bytes);
void ct_device_host_free(ct_device *device, void *ptr);
/* Waits for the device's queued work (nothing on a type whose steps finish
 * before they return). Returns 0 or fills status. */
int ct_device_synchronize(ct_device *device, ct_status *status);
/* After a step named `name` (op `op`) ran on the device: the type's check
 * of the work it queued (ct_device_ops.step_done). Returns 0 or fills
 * status. */
int ct_device_step_done(ct_device *device, const char *name, const char *op, ct_status *status);

/* Marks in a device's queue, to time its work for run metadata and to let
 * a copy or a reader wait for one value's producer: a recorded mark is
 * reached when the work queued before it is done. A mark belongs to the
 * device (type) that made it; every call below takes that device. A type
 * whose steps finish before they return needs none: ct_device_mark_new
 * gives NULL for it (and when the device cannot make one), and every call
 * below does nothing for a NULL mark. */
void *ct_device_mark_new(ct_device *device);
/* Records the mark after the work queued on the device so far. Returns 0,
 * or 1 and fills status when the device fails. */
int ct_device_mark_record(ct_device *device, void *mark, ct_status *status);
/* Microseconds from one recorded mark to another of the same device, once
 * the device has reached both (after ct_device_synchronize). */
double ct_device_mark_elapsed_us(ct_device *device, void *from, void *to);
void ct_device_mark_free(ct_device *device, void *mark);
/* Makes the work queued on the device from now on wait for a mark recorded
 * on a device of its type. Returns 0 or fills status. */
int ct_device_wait_mark(ct_device *device, void *mark, ct_status *status);

/* Cores this process may run on (sched_getaffinity), at least 1. */
int ct_available_cores(void);

/* The devices a session's options ask for, type by type in the order of
 * device_types.c (/cpu:0 .. /cpu:n-1, then the GPUs when built with CUDA
 * and present). Returns 0 and an array the caller frees with
 * ct_devices_free, or fills status. */
int ct_devices_create(const ct_session_options *options, ct_device ***devices, int *n_devices,
                      ct_status *status);
void ct_devices_free(ct_device **devices, int n_devices);

/* The registered device types (device_types.c), in creation order. */
extern const ct_device_ops *const ct_device_types[];
extern const int ct_device_type_count;

#endif
