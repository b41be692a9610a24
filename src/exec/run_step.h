/* One step of a run of a plan, on a device's worker (executor.c schedules
 * the steps and serves the edges between tasks): the op's shape rule on
 * the real input shapes, the outputs bound by the plan's rule
 * (ct_plan_output_binding), the kernel or the copy, the release of dead
 * inputs; and the step's event in the run's timeline. */
#ifndef CTOWER_EXEC_RUN_STEP_H
#define CTOWER_EXEC_RUN_STEP_H
#include "exec/plan.h"

/* Runs step: its outputs, its kernel (or copy), its inputs released.
 * Returns 0 or fills status. */
int ct_run_step(ct_session *session, ct_plan *plan, ct_plan_step *step, ct_status *status);
/* Gives the step its outputs' memory (the plan's rule; a receive's, once
 * its header set their shapes). Returns 0 or fills status. */
int ct_run_bind_outputs(ct_session *session, ct_plan *plan, ct_plan_step *step, ct_status *status);
/* Where a value lives: a device, or NULL for host memory (a feed). */
ct_device *ct_run_slot_device(const ct_session *session, const ct_plan *plan, int slot);
/* Drops one consumer of a slot; the last one returns its buffer. */
void ct_run_slot_consumed(ct_plan *plan, int slot);
/* Returns every buffer a failed or finished run still holds. */
void ct_run_release_all(ct_plan *plan);
/* The step's event in the run's timeline: what it ran, where, when
 * (microseconds from the run's start), and the shapes it read and wrote. */
void ct_run_record_event(ct_plan *plan, ct_run_metadata *metadata, const ct_plan_step *step,
                         double start_us, double end_us);
#endif
