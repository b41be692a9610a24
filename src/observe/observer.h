/* What a run records of its steps besides its results (observer.c). */
#ifndef CTOWER_OBSERVE_OBSERVER_H
#define CTOWER_OBSERVE_OBSERVER_H

#include <stdint.h>

#include "ctower/session.h"
#include "exec/estimate.h"

/* When the host did what for the last batch and step (ct_monotonic_seconds). */
typedef struct ct_step_times {
  double input_start, input_end; /* reading the batch */
  double run_start, run_end;     /* the session's run of the step */
  double sync_start, sync_end;   /* summing the loss and accuracy over the ranks */
} ct_step_times;

/* A step as the observer takes it in: when the host did what, and the
 * session's timeline of the step when it was recorded. */
typedef struct ct_observed_step {
  ct_step_times times;
  ct_run_metadata *timeline; /* the last recorded step's */
  int record_timeline;       /* record the next step's timeline (ct_observer_wants) */
  int64_t rows;              /* the examples this process trained on */
} ct_observed_step;

/* The trace (--trace) and the efficiency report of a run. It samples a
 * few steps' timelines (every tenth from `first_sampled`) and every traced
 * step's. */
typedef struct ct_observer ct_observer;

/* Steps trace_first .. trace_end - 1 traced into trace_path (NULL: no
 * trace; trace_first = trace_end = 0: three from first_sampled), the
 * tracks named after the session's devices. NULL and status when out of
 * memory or (under MPI) the ranks cannot agree on a clock. Every rank
 * calls it at the same point. */
ct_observer *ct_observer_new(ct_session *session, const char *trace_path, int64_t trace_first,
                             int64_t trace_end, int64_t first_sampled, ct_status *status);
/* Whether step's timeline is wanted: set record_timeline from it. */
int ct_observer_wants(const ct_observer *observer, int64_t step);
/* Takes in the step just run (its timeline when it was wanted). */
void ct_observer_add_step(ct_observer *observer, const ct_session *session,
                          const ct_observed_step *observed, int64_t step);
/* How many steps were sampled so far. */
int ct_observer_samples(const ct_observer *observer);
/* Prints the efficiency report (rank 0, from every rank's figures), with
 * each device's FLOPs of a step from `estimate` (NULL: unknown), and
 * writes the trace; every rank calls it. Returns 0 or fills status. */
int ct_observer_finish(ct_observer *observer, ct_session *session,
                       const ct_run_estimate *estimate, ct_status *status);
void ct_observer_free(ct_observer *observer);

/* "CPU:0" for "/job:localhost/replica:0/task:0/device:CPU:0". */
const char *ct_device_short_name(const char *device_name);

#endif
