/* Inputs staged one run ahead (ct_session_run_staged), as TensorFlow's
 * StagingArea stages them: a run starts copying the next run's feeds onto
 * the devices that read them, beside its own kernels (ct_device_copy_ahead:
 * a GPU's stream of copies ahead), and the next run's copy steps take those
 * values instead of copying. Only the session's very next run may take
 * them, and only for the same feed memory, dtype and shape; anything else
 * drops them. The staged values are kept in the plan (ct_staged_input).
 * In a run's timeline a copy ahead is "_Stage/<feed node>", and a copy
 * step that took a staged value (it only makes its readers wait for the
 * copy) "_Unstage/<feed node>". */
#ifndef CTOWER_EXEC_STAGING_H
#define CTOWER_EXEC_STAGING_H

#include "exec/plan.h"

/* Before a run of `plan` (the session's run number s->runs, counted
 * already): gives back the staged inputs of every plan of the session that
 * were not for this run. */
void ct_staging_drop_stale(ct_session *session);

/* At the start of a run: notes next_feeds (the plan's feeds, in its order;
 * a NULL value is not staged) for the run after this one, one copy per copy
 * step of a feed onto a device that copies ahead. With `traced`, marks
 * before the copies will time them for the run's timeline
 * (ct_staging_add_timings). Returns 0 (with no room to note them, the next
 * run copies). */
int ct_staging_start(ct_session *session, ct_plan *plan, const ct_feed *next_feeds, int traced);

/* After the run's first kernel on `device` is queued (so that the copies
 * wait for that kernel alone and run beside the later ones): queues the
 * copies ahead noted for that device, once per run. A feed whose device
 * memory runs out is left to the next run to copy. Returns 0 or fills
 * status (a device that failed). Safe from the device's workers. */
int ct_staging_issue(ct_session *session, ct_plan *plan, int device, ct_status *status);

/* Once the run's steps are all queued: the copies ahead of devices that ran
 * no kernel, queued now. Returns 0 or fills status. */
int ct_staging_finish(ct_session *session, ct_plan *plan, ct_status *status);

/* The staged value a copy step takes as its output this run, or NULL:
 * staged for this run, from the memory, dtype and shape of `source` (the
 * step's input). The step's output then owns it; ct_staging_taken says the
 * step waits for it instead of copying. */
void *ct_staging_take(ct_session *session, ct_plan *plan, const ct_plan_step *step,
                      const ct_tensor *source);
/* The mark a copy step waits for instead of copying, when it took a staged
 * value this run; NULL otherwise (it copies). Clears the step's "taken". */
void *ct_staging_taken(ct_session *session, ct_plan *plan, const ct_plan_step *step);

/* Adds this run's staged copies, timed, to its timeline as copy events
 * "_Stage/<feed node>" (after the run's devices are synchronized). */
void ct_staging_add_timings(ct_plan *plan, ct_run_metadata *metadata);

#endif
