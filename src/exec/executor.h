/* The executor: runs a plan (plan.h) on the session's devices. */
#ifndef CTOWER_EXEC_EXECUTOR_H
#define CTOWER_EXEC_EXECUTOR_H

#include "exec/plan.h"

/* Runs the plan with these feeds (the plan's, checked by the caller),
 * starts copying next_feeds (NULL: none) ahead for the next run
 * (staging.h), fills results[i] with a host copy of fetch i (the caller's), and
 * records a timeline into metadata when it is not NULL. Waits for every
 * device the run used and gives back every buffer of the run. Returns 0,
 * or fills status with the first failure (results may then be partly
 * filled: the caller frees them). The caller holds the session's run
 * lock. */
int ct_executor_run(ct_session *session, ct_plan *plan, const ct_feed *feeds,
                    const ct_feed *next_feeds, ct_run_metadata *metadata, ct_tensor **results,
                    ct_status *status);

#endif
