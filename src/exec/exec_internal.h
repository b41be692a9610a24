/* Session internals shared by session.c (lifecycle, variables) and
 * executor.c (plans and runs). */
#ifndef CTOWER_EXEC_INTERNAL_H
#define CTOWER_EXEC_INTERNAL_H

#include "ctower/session.h"
#include "device/device.h"
#include "graph/graph_internal.h"

/* A buffer shared by the values that view it (a Reshape views its input). */
typedef struct ct_buffer {
  void *data;
  int refs;              /* values viewing it; 0 returns it to the allocator */
  int owned;             /* 0 for feeds, constants and variables */
  ct_device *device;
} ct_buffer;

typedef struct ct_plan ct_plan;

struct ct_session {
  ct_graph *graph;
  ct_session_options options;
  ct_device *cpu;           /* /cpu:0; the devices issue adds more */
  ct_tensor **variables;    /* per graph variable, NULL until first used */
  int n_variables;
  uint64_t step;
  ct_plan **plans;          /* cached per (feeds, fetches, targets) */
  int n_plans, plans_cap;
};

/* Initializes variable values of the graph that have none yet. */
int ct_session_init_variables(ct_session *session, ct_status *status);

void ct_plan_free(ct_plan *plan);

/* Fills `out` with values from the variable's initializer; the stream is a
 * function of the graph seed and the variable's name only. */
void ct_initialize_variable(const ct_variable_info *var, uint64_t graph_seed, ct_tensor *out);

#endif
