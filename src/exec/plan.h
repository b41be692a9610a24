/* Plans: what a run of a session does, made once per distinct (feeds,
 * fetches, targets) and cached in the session. plan.c builds one in
 * numbered passes (plan_build.c; partition.c and plan_edges.c are its
 * passes between devices and between tasks), plan.c holds its data, and
 * executor.c runs it. */
#ifndef CTOWER_EXEC_PLAN_H
#define CTOWER_EXEC_PLAN_H

#include <stdatomic.h>

#include "exec/exec_internal.h"
#include "kernels/kernel.h"

/* What a step without a node does: a copy between devices, or one end of
 * an edge between tasks (plan_edges.c, transfer.h). */
typedef enum ct_transfer_kind { CT_TRANSFER_NONE, CT_TRANSFER_SEND, CT_TRANSFER_RECV } ct_transfer_kind;

/* One step: a node's kernel on its device, a copy between devices, or a
 * value (or a control edge's signal) sent to or received from another
 * task. */
typedef struct ct_plan_step {
  ct_node *node;   /* NULL for a copy, a send or a receive */
  char *copy_name; /* "_Copy/<source node>", "_Send/<node>:<output>", "_Recv/..." */
  ct_transfer_kind transfer;
  int peer;        /* a send or receive: the other task's rank */
  int edge;        /* its index in the job's list of edges between tasks (the tag) */
  int after;       /* the send of a control edge: the step it signals the end of */
  int transfer_index; /* a send or receive: its index in the plan's transfer_steps */
  ct_kernel_fn kernel;
  int device;
  ct_worker_role role; /* which of the device's workers runs it */
  int n_inputs;
  int *input_slots; /* value slot of each input */
  int first_slot;   /* slot of output 0; outputs are consecutive */
  int n_outputs;
  int *consumers; /* steps that wait for this one */
  int n_consumers;
  int n_deps; /* steps this one waits for */
  ct_kernel_state state;
  /* traced runs on a GPU: marks around the step's queued work, made on
   * first use; timed: whether this run recorded them */
  void *mark_begin, *mark_end;
  int timed;
  int unstaged; /* a copy of a feed that took, this run, the value the last run staged */
} ct_plan_step;

/* A feed's copy onto a device, started by the run before the one it is
 * for (ct_session_run_staged; staging.h), kept by the copy step that
 * would otherwise make it. */
typedef struct ct_staged_input {
  void *data;         /* on the step's device, from its allocator; NULL: nothing staged */
  const ct_tensor *pending; /* to copy ahead this run, once its device computes; NULL: none */
  const void *host;   /* the feed's memory it was copied from */
  ct_dtype dtype;
  ct_shape shape;
  uint64_t for_run;   /* the session's run (ct_session.runs) that may take it */
  void *begin, *end;  /* marks of the step's device around the copy; readers wait for end */
  int timed;          /* begin was recorded: the copy goes into the run's timeline */
  int taken;          /* this run's copy step took data as its output: it waits for end */
} ct_staged_input;

struct ct_plan {
  ct_device *const *devices; /* the session's, which outlive the plan */
  int n_devices;
  /* the key */
  int n_feeds, n_fetches, n_targets;
  ct_output *feed_outputs;
  ct_output *fetch_outputs;
  ct_node **targets;
  /* the schedule */
  ct_plan_step *steps;
  int n_steps, steps_cap;
  int n_slots, slots_cap;
  int *slot_device;    /* device holding each value; -1 for feeds (host memory) */
  int *slot_consumers; /* per slot: inputs reading it + fetches of it */
  int *feed_slots;     /* per feed */
  int *fetch_slots;    /* per fetch */
  void **slot_ready;   /* per slot: for a GPU value that a copy takes into host
                          memory, a mark recorded once its producer is queued */
  unsigned char uses_device[CT_MAX_DEVICES]; /* runs a step or holds a value there */
  void **slot_side_mark; /* per slot, this run: the mark its readers wait for, when
                            its producer finished it on another stream (output_marks) */
  ct_staged_input *staged; /* two per step (for even and odd runs: a run takes one while it
                              stages the other), NULL until a run stages for this plan */
  atomic_int staging_started[CT_MAX_DEVICES]; /* this run: the device's copies ahead queued */
  int staging_traced; /* this run times its copies ahead for its timeline */
  /* per-run state, sized once */
  ct_tensor *values;
  ct_buffer **value_buffers;
  ct_buffer *buffers;    /* one per slot at most */
  atomic_int *remaining; /* per slot: consumers still to run */
  atomic_int *pending;   /* per step: producers still to run */
  ct_device_task *root_tasks; /* room for a device worker's steps that wait for nothing */
  /* edges between tasks (plan_edges.c, transfer.c): how many the job's plan has, this
   * process's sends and receives (their steps), their state in a run, and
   * the runs so far (a message's tag names its run, modulo 4) */
  struct ct_plan_edge *edges; /* the job's, sorted */
  int n_edges;
  int n_transfers;
  int *transfer_steps;
  struct ct_transfer_state *transfer_state;
  uint64_t runs;
  /* how long the last run took (0: none yet), in microseconds: its thread
   * sleeps until shortly before the next one should end (executor.c) */
  double last_run_us;
  /* traced runs: a mark per device where the run began on it (GPUs), and
   * the run's clock then */
  void *device_marks[CT_MAX_DEVICES];
  double device_mark_us[CT_MAX_DEVICES];
};

void ct_plan_free(ct_plan *plan);

/* Gives back every staged input the plan holds (their buffers, to their
 * devices' allocators; the copies into them are done once the run that
 * made them has ended). */
void ct_plan_drop_staged(ct_plan *plan);

/* The cached plan for (feeds, fetches, targets), made now when there is
 * none. NULL and status when the graph cannot run so (a placeholder not
 * fed, an op with no kernel on its device) or memory runs out. */
ct_plan *ct_plan_get(ct_session *session, const ct_feed *feeds, int n_feeds,
                     const ct_output *fetches, int n_fetches, ct_node *const *targets,
                     int n_targets, ct_status *status);

/* A step's output shapes and dtypes from its inputs' (all dims known): the
 * op's shape rule, or a copy's input's. Returns 0 or fills status. */
int ct_plan_step_infer(const ct_plan_step *step, const ct_shape *in_shapes,
                       const ct_dtype *in_dtypes, ct_shape *out_shapes, ct_dtype *out_dtypes,
                       ct_status *status);

/* How a run gives a step's output its memory: the executor's rule
 * (run_step.c), which the estimate (estimate.c) predicts with. */
typedef enum ct_output_binding {
  CT_BIND_VARIABLE, /* output 0 of a variable's read: the variable's storage */
  CT_BIND_CONSTANT, /* output 0 of a constant on a host-addressable device: its own memory */
  CT_BIND_VIEW,     /* output 0 of an op that aliases input 0 (Reshape, Identity): a view */
  CT_BIND_INPUT0,   /* output 0 of an in-place op: input 0's buffer, which dies with the step */
  CT_BIND_FRESH     /* a fresh buffer from the output's device */
} ct_output_binding;
/* Output o's binding. input0_dies: the step's input 0 is a buffer of its
 * device's that no other value views and no other step still reads;
 * input0_fits: it has output o's dtype and shape (as this run infers
 * them). */
ct_output_binding ct_plan_output_binding(const ct_plan *plan, const ct_plan_step *step, int o,
                                         int input0_dies, int input0_fits);
/* Grows a zero-filled array of items of `item` bytes to hold `need` of
 * them (capacity *cap, doubling). Returns 0, or 1 when out of memory. */
int ct_plan_grow(void **array, int *cap, int need, size_t item);

/* Room for `count` more values (slots) on `device` (-1: host memory) and
 * for one more step; the index of the first new slot, the new step (zeroed),
 * or -1 / NULL when out of memory. */
int ct_plan_add_slots(ct_plan *plan, int count, int device);
ct_plan_step *ct_plan_add_step(ct_plan *plan);

/* A copy step of `slot` onto `device`, named after its source node; the
 * copy's slot, or -1 when out of memory. */
int ct_plan_add_copy(ct_plan *plan, int slot, int device, const char *source_name);

/* Pass 3: each node step's input slots, with a copy step on the reading
 * device where a value lives on another device that the reader cannot
 * read in place (slot_base[node id]: the slot of the node's output 0).
 * Returns 0 or fills status. */
int ct_plan_partition(ct_plan *plan, const int *slot_base, ct_status *status);

/* Pass 5: a mark for each value a copy takes into host memory, recorded
 * when its producer is queued, so that the copy waits for that producer
 * alone (producer_of[slot]: the step that writes the slot, or -1). Returns
 * 0 or fills status. */
int ct_plan_mark_copies_to_host(ct_plan *plan, const int *producer_of, ct_status *status);

/* ---- edges between tasks (plan_edges.c) ---------------------------------------
 * Under mpirun a node whose device scope names a task (pinned) runs in that
 * task's process; any other runs in every process that needs it. This
 * process's plan gets a send step for each value (or control edge) that
 * one of its nodes gives another task, and a receive step for each value
 * it needs from one, which lands on its first host device. The job's list
 * of such edges is the same on every rank (every rank builds the same
 * graph and places it alike), sorted by producer, output and destination;
 * an edge's index and the run's number make its messages' tags. */

/* The device receives land on: this process's first host device. */
int ct_plan_receiving_device(const ct_session *session);

/* Pass 1b: which needed nodes run in this process (runs_here[id]; all of
 * them, unfed, in a session that names no other task's device) and the
 * job's edges between tasks, kept in the plan. Every rank checks that the
 * others found the same edges (an all-gather), so that ranks that built
 * different graphs fail here, named, instead of waiting for each other.
 * Returns 0 or fills status. */
int ct_plan_find_edges(ct_plan *plan, const ct_session *session, const unsigned char *needed,
                       const unsigned char *fed, unsigned char *runs_here, ct_status *status);

/* Pass 3b, after partition: the send and receive steps of this process
 * (slot_base: per node, its output 0's slot; step_of: per node, its step,
 * and for a node of another task whose control edge this process
 * receives, that receive). Returns 0 or fills status. */
int ct_plan_add_transfers(ct_plan *plan, const ct_session *session, const int *slot_base,
                          int *step_of, ct_status *status);

#endif
