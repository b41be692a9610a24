/* Session internals shared by session.c (lifecycle, devices, placement,
 * variables, runs), the plan's files (plan.h), the executor's (executor.c,
 * run_step.c, staging.c, transfer.c), the estimate and run_metadata.c. */
#ifndef CTOWER_EXEC_INTERNAL_H
#define CTOWER_EXEC_INTERNAL_H

#include <pthread.h>

#include "ctower/session.h"
#include "device/device.h"
#include "graph/graph_internal.h"

/* A buffer shared by the values that view it (a Reshape views its input). */
typedef struct ct_buffer {
  void *data;
  int refs;              /* values viewing it (atomic); 0 returns it to its allocator */
  int owned;             /* 0 for feeds, constants and variables */
  ct_device *device;
} ct_buffer;

typedef struct ct_plan ct_plan;

struct ct_session {
  ct_graph *graph;
  ct_session_options options;
  ct_device **devices;      /* /cpu:0 .. then GPUs; then, under mpirun, the n_remote devices
                               of the other tasks, which this process only names */
  int n_devices;            /* this process's */
  int n_remote;
  int *device_of;           /* per graph node: device index, -1 until placed */
  unsigned char *placement_reason; /* per graph node: its ct_placement_reason */
  int *node_home;           /* per graph node: the rank its device scope pins it to, or -1:
                               it runs in every process that needs it (plan_edges.c) */
  int n_placed;             /* nodes 0 .. n_placed-1 are placed */
  ct_tensor **variables;    /* per graph variable, NULL until first used */
  ct_device **variable_device; /* whose allocator holds each variable */
  int n_variables;
  uint64_t step;
  uint64_t runs;            /* runs begun so far: a staged input is for the next one only */
  ct_plan **plans;          /* cached per (feeds, fetches, targets) */
  int n_plans, plans_cap;
  pthread_mutex_t run_mutex;  /* runs of one session are serialized */
};

/* Places nodes added since the last call. Returns 0 or fills status. */
int ct_session_place_new_nodes(ct_session *session, ct_status *status);

/* The device a variable's reads were placed on (they are colocated), where
 * its storage lives. */
int ct_session_variable_device(const ct_session *session, int variable);

/* Fills `out` with values from the variable's initializer; the stream is a
 * function of the graph seed and the variable's name only. */
void ct_initialize_variable(const ct_variable_info *var, uint64_t graph_seed, ct_tensor *out);

/* Run metadata, filled by the executor. */
struct ct_run_metadata {
  ct_timeline_event *events;
  char **names;             /* owned copies of each event's node name and shapes */
  int n_events, cap;
  double start_us;          /* the run's start on CLOCK_MONOTONIC */
  pthread_mutex_t mutex;
};
void ct_run_metadata_clear(ct_run_metadata *metadata);
/* Adds a copy of *event (its node name and shapes copied too). */
void ct_run_metadata_add(ct_run_metadata *metadata, const ct_timeline_event *event);

#endif
