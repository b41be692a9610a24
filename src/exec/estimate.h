/* A run predicted without running it: the plan the executor would run
 * (plan_build.c), walked in the executor's order with the shapes the feeds
 * give, binding each step's outputs by the executor's own rule
 * (ct_plan_output_binding: variables and host constants in place, views of
 * input 0, in-place takeover of a dying input 0, otherwise fresh buffers
 * rounded as the allocator rounds them), with kernel scratch, freeing a
 * buffer after its last consumer; plus each step's FLOPs and bytes.
 * `ctower plan` prints it. */
#ifndef CTOWER_EXEC_ESTIMATE_H
#define CTOWER_EXEC_ESTIMATE_H

#include <stddef.h>

#include "exec/exec_internal.h"

/* One step of the run: a kernel or a copy between devices. */
typedef struct ct_step_cost {
  int device;
  const char *name; /* the node's, "_Copy/<source>" for a copy */
  const char *op;   /* the op's name, "_Copy" for a copy */
  int dense;      /* a convolution or matmul (CT_OP_DENSE) */
  double flops;
  double bytes; /* bytes its inputs and outputs hold */
} ct_step_cost;

typedef struct ct_device_estimate {
  size_t parameter_bytes;  /* variables other than optimizer slots (weights, batch-norm
                              statistics) */
  size_t optimizer_bytes;  /* optimizer slots (momentum, Adam's moments) */
  size_t persistent_bytes; /* both, as the allocator holds them */
  size_t peak_bytes;       /* persistent + the run's buffers and scratch at their peak */
  double flops, dense_flops;
  double copied_in_bytes; /* bytes copies bring to this device */
  int steps;
} ct_device_estimate;

typedef struct ct_run_estimate {
  int n_devices;
  ct_device_estimate devices[CT_MAX_DEVICES];
  double copied_bytes;     /* between devices, all copies */
  double all_reduce_bytes; /* inputs of AllReduce ops (one tower's part each) */
  double collective_bytes; /* inputs of CollectiveReduce ops, and the packed gradients of
                              CompressedAllReduce ops: summed across ranks */
  ct_step_cost *steps;     /* in the order walked */
  int n_steps;
} ct_run_estimate;

/* Fills *estimate for a run of (feeds, fetches, targets), as
 * ct_session_run would do it (the feeds' shapes matter, not their values),
 * without running a kernel: places new nodes and makes (and caches) the
 * plan. Returns 0, or 1 and status as ct_session_run would fail to plan.
 * Free with ct_run_estimate_free either way. */
int ct_session_estimate_run(ct_session *session, const ct_feed *feeds, int n_feeds,
                            const ct_output *fetches, int n_fetches, ct_node *const *targets,
                            int n_targets, ct_run_estimate *estimate, ct_status *status);
void ct_run_estimate_free(ct_run_estimate *estimate);

#endif
