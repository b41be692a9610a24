/* What a run records besides its results: the Chrome trace of some steps
 * (--trace) and, from a sample of steps, where each device's time went.
 *
 * A sampled step's time, from reading its batch to knowing its loss, is
 * split per device into
 *   computing:      its kernels (copies and all-reduces excluded);
 *   communicating:  copies in and all-reduces, where no kernel of the
 *                   device ran meanwhile (an all-reduce across ranks runs
 *                   beside the backward pass: only what sticks out counts);
 *   input:          reading the batch (nothing else runs meanwhile);
 *   waiting:        the rest of the session's run, when the device waited
 *                   for other devices or ranks, plus summing the loss over
 *                   the ranks;
 *   idle:           the host's own work between those. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/communication.h"
#include "core/clock.h"
#include "core/text.h"
#include "exec/trace_events.h"
#include "observe/cost_model.h"
#include "observe/observer.h"

enum { SAMPLE_EVERY = 10, SHARES = 5 };
static const char *const k_share_names[SHARES] = {"compute", "communication", "input", "waiting",
                                                  "idle"};

/* One device's sums over the sampled steps, in microseconds. */
typedef struct device_time {
  double share[SHARES];
} device_time;

struct ct_observer {
  const char *trace_path;
  int64_t trace_first, trace_end;
  int64_t first_sampled;
  double origin_us; /* the trace's zero on CLOCK_MONOTONIC, agreed by the ranks */
  ct_text events;   /* this rank's trace events */
  int samples;
  double period_us; /* the sampled steps' time, summed */
  device_time devices[CT_MAX_DEVICES];
};

/* What a rank sends rank 0 for the report: fixed-size, for an all-gather. */
typedef struct rank_report {
  int n_devices, samples;
  double period_us;
  char names[CT_MAX_DEVICES][96];
  device_time devices[CT_MAX_DEVICES];
  double flops[CT_MAX_DEVICES];      /* a step's, from the plan (ct_session_estimate_run) */
  double peak_flops[CT_MAX_DEVICES]; /* FLOP/s: the calibration's best; 0 unknown */
} rank_report;

/* Each device's FLOPs per step and its calibrated peak FLOP/s (0 without
 * a calibration file). Best effort: a report without them is still one. */
static void add_flops(ct_session *session, const ct_run_estimate *estimate, rank_report *mine) {
  ct_status ignored = CT_STATUS_INIT;
  for (int d = 0; estimate && d < estimate->n_devices && d < mine->n_devices; ++d)
    mine->flops[d] = estimate->devices[d].flops;
  ct_calibration calibration;
  ct_calibration_defaults(&calibration);
  char path[4096];
  if (ct_calibration_load(ct_calibration_default_path(path, sizeof path), &calibration, &ignored) !=
      0)
    return;
  for (int d = 0; d < mine->n_devices; ++d) {
    ct_device_info info;
    ct_session_device_info(session, d, &info);
    mine->peak_flops[d] = ct_calibration_peak_flops(&calibration, &info);
  }
}

ct_observer *ct_observer_new(ct_session *session, const char *trace_path, int64_t trace_first,
                             int64_t trace_end, int64_t first_sampled, ct_status *status) {
  ct_observer *o = calloc(1, sizeof *o);
  if (o == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory for the run's report");
    return NULL;
  }
  o->trace_path = trace_path;
  o->trace_first = trace_first;
  o->trace_end = trace_end;
  if (o->trace_first == 0 && o->trace_end == 0) { /* the default: three steps after warming up */
    o->trace_first = first_sampled;
    o->trace_end = first_sampled + 3;
  }
  o->first_sampled = first_sampled;
  /* a trace that cannot be written fails now, not after the run */
  if (o->trace_path && ct_cluster_rank() == 0) {
    const ct_text nothing = {NULL, 0, 0, 0};
    if (ct_trace_write(o->trace_path, &nothing, status)) {
      free(o);
      return NULL;
    }
  }
  /* ranks leave a barrier within microseconds of each other: each takes
   * its clock's zero then, so that their traces line up */
  if (ct_cluster_barrier(status)) {
    free(o);
    return NULL;
  }
  o->origin_us = 1e6 * ct_monotonic_seconds();
  if (o->trace_path) {
    char process[160];
    snprintf(process, sizeof process, "worker %d: %s", ct_cluster_rank(),
             ct_cluster_size() > 1 ? "/job:worker" : "/job:localhost");
    ct_trace_name_tracks(&o->events, ct_cluster_rank(), process, session);
  }
  return o;
}

static int traced(const ct_observer *o, int64_t step) {
  return o->trace_path && step >= o->trace_first && step < o->trace_end;
}

int ct_observer_wants(const ct_observer *o, int64_t step) {
  return traced(o, step) ||
         (step >= o->first_sampled && (step - o->first_sampled) % SAMPLE_EVERY == 0);
}

/* Microseconds of [start, end) that no compute event of `device` covers. */
static double uncovered(const ct_run_metadata *m, int device, double start, double end) {
  double covered = 0;
  for (int i = 0; i < ct_run_metadata_event_count(m); ++i) {
    const ct_timeline_event e = ct_run_metadata_event(m, i);
    if (e.device != device || e.kind != CT_TIMELINE_COMPUTE) continue;
    const double from = e.start_us > start ? e.start_us : start;
    const double to = e.end_us < end ? e.end_us : end;
    if (to > from) covered += to - from; /* a device's kernels never overlap each other */
  }
  return end - start - covered;
}

static void add_sample(ct_observer *o, const ct_session *session, const ct_observed_step *r) {
  const ct_step_times *t = &r->times;
  const double period = 1e6 * (t->sync_end - t->input_start);
  const double input = 1e6 * (t->input_end - t->input_start);
  const double run = 1e6 * (t->run_end - t->run_start);
  const double sync = 1e6 * (t->sync_end - t->sync_start);
  const int n_devices = ct_session_device_count(session);
  double compute[CT_MAX_DEVICES] = {0}, communication[CT_MAX_DEVICES] = {0};
  for (int i = 0; i < ct_run_metadata_event_count(r->timeline); ++i) {
    const ct_timeline_event e = ct_run_metadata_event(r->timeline, i);
    if (e.kind == CT_TIMELINE_COMPUTE)
      compute[e.device] += e.end_us - e.start_us;
    else
      communication[e.device] += uncovered(r->timeline, e.device, e.start_us, e.end_us);
  }
  for (int d = 0; d < n_devices && d < CT_MAX_DEVICES; ++d) {
    double waiting = run - compute[d] - communication[d];
    const double share[SHARES] = {compute[d], communication[d], input,
                                  (waiting > 0 ? waiting : 0) + sync, period - run - sync - input};
    for (int k = 0; k < SHARES; ++k) o->devices[d].share[k] += share[k] > 0 ? share[k] : 0;
  }
  o->period_us += period;
  o->samples++;
}

static void add_trace(ct_observer *o, const ct_observed_step *r, int64_t step) {
  const ct_step_times *t = &r->times;
  const int pid = ct_cluster_rank();
  char name[64], args[64];
  snprintf(args, sizeof args, "\"step\": %lld, \"examples\": %lld", (long long)step,
           (long long)r->rows);
  snprintf(name, sizeof name, "batch %lld", (long long)step);
  ct_trace_slice(&o->events, pid, CT_TRACK_INPUT, 1e6 * t->input_start - o->origin_us,
                 1e6 * (t->input_end - t->input_start), name, "input", args);
  snprintf(args, sizeof args, "\"step\": %lld", (long long)step);
  snprintf(name, sizeof name, "step %lld", (long long)step);
  ct_trace_slice(&o->events, pid, CT_TRACK_HOST, 1e6 * t->run_start - o->origin_us,
                 1e6 * (t->sync_end - t->run_start), name, "step", args);
  ct_trace_slice(&o->events, pid, CT_TRACK_HOST, 1e6 * t->run_start - o->origin_us,
                 1e6 * (t->run_end - t->run_start), "session run", "host wait", args);
  ct_trace_slice(&o->events, pid, CT_TRACK_HOST, 1e6 * t->sync_start - o->origin_us,
                 1e6 * (t->sync_end - t->sync_start), "loss and accuracy over the ranks",
                 "host wait", args);
  ct_trace_run_events(&o->events, pid, r->timeline,
                      ct_run_metadata_start_us(r->timeline) - o->origin_us, (long long)step);
}

void ct_observer_add_step(ct_observer *o, const ct_session *session, const ct_observed_step *r,
                          int64_t step) {
  if (!ct_observer_wants(o, step)) return;
  add_sample(o, session, r);
  if (traced(o, step)) add_trace(o, r, step);
}

/* The report's table, on rank 0, from every rank's figures. */
static void print_report(const rank_report *all, int ranks, int64_t first_sampled) {
  int samples = 0;
  double period = 0;
  for (int k = 0; k < ranks; ++k) samples += all[k].samples, period += all[k].period_us;
  if (samples == 0) {
    printf("where the time went: no step was sampled (every %dth is, from step %lld)\n",
           SAMPLE_EVERY, (long long)first_sampled);
    return;
  }
  printf("where the time went (%d sampled step%s%s, %.2f ms each):\n", all[0].samples,
         all[0].samples == 1 ? "" : "s", ranks > 1 ? " per rank" : "", period / samples / 1e3);
  printf("  %-48s", "device");
  for (int s = 0; s < SHARES; ++s) printf(" %13s", k_share_names[s]);
  printf("  GFLOP/s computing (of peak)\n");
  int peaks = 0;
  int slowest_rank = 0, slowest_device = 0;
  double slowest = -1;
  for (int k = 0; k < ranks; ++k) {
    const rank_report *r = &all[k];
    for (int d = 0; d < r->n_devices && r->samples > 0; ++d) {
      const device_time *t = &r->devices[d];
      if (t->share[0] == 0) continue; /* a device the steps do not use */
      printf("  %-48s", r->names[d]);
      for (int s = 0; s < SHARES; ++s) printf(" %12.1f%%", 100 * t->share[s] / r->period_us);
      /* FLOPs of a step over its time computing */
      const double rate = r->flops[d] * r->samples / (t->share[0] * 1e-6);
      printf("  %8.1f", rate / 1e9);
      if (r->peak_flops[d] > 0) printf(" (%.0f%%)", 100 * rate / r->peak_flops[d]), ++peaks;
      printf("\n");
      const double busy = (t->share[0] + t->share[1]) / r->samples;
      if (busy > slowest) slowest = busy, slowest_rank = k, slowest_device = d;
    }
  }
  if (ranks > 1 || all[0].n_devices > 1)
    printf("  slowest: %s (computing and communicating %.2f ms of each step)\n",
           all[slowest_rank].names[slowest_device], slowest / 1e3);
  if (peaks == 0)
    printf(
        "  (the peak FLOP/s comes from `ctower bench --calibrate`, not run on this "
        "machine)\n");
}

/* This rank's part of the report, in its trace: an instant event at the end
 * whose args give each device's shares and GFLOP/s. */
static void add_report_to_trace(ct_observer *o, const rank_report *mine) {
  ct_text *t = &o->events;
  ct_text_printf(t,
                 "{\"ph\": \"i\", \"s\": \"p\", \"pid\": %d, \"tid\": %d, \"ts\": %.3f, "
                 "\"name\": \"where the time went\", \"cat\": \"report\", \"args\": {",
                 ct_cluster_rank(), CT_TRACK_HOST, 1e6 * ct_monotonic_seconds() - o->origin_us);
  int listed = 0;
  for (int d = 0; d < mine->n_devices && mine->samples > 0 && mine->period_us > 0; ++d) {
    const device_time *dt = &mine->devices[d];
    if (dt->share[0] == 0) continue;
    ct_text_str(t, listed++ ? ", " : "");
    ct_text_json_string(t, mine->names[d]);
    ct_text_str(t, ": {");
    for (int s = 0; s < SHARES; ++s)
      ct_text_printf(t, "\"%s\": %.2f, ", k_share_names[s], 100 * dt->share[s] / mine->period_us);
    ct_text_printf(t, "\"gflops_computing\": %.2f}",
                   mine->flops[d] * mine->samples / (dt->share[0] * 1e-6) / 1e9);
  }
  ct_text_str(t, "}},\n");
}

int ct_observer_samples(const ct_observer *o) { return o->samples; }

int ct_observer_finish(ct_observer *o, ct_session *session, const ct_run_estimate *estimate,
                       ct_status *status) {
  const int ranks = ct_cluster_size();
  rank_report *mine = calloc(1, sizeof *mine);
  rank_report *all = calloc((size_t)ranks, sizeof *all);
  int failed = mine == NULL || all == NULL;
  if (failed) ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory for the report");
  if (!failed) {
    mine->n_devices = ct_session_device_count(session);
    mine->samples = o->samples;
    mine->period_us = o->period_us;
    for (int d = 0; d < mine->n_devices && d < CT_MAX_DEVICES; ++d) {
      snprintf(mine->names[d], sizeof mine->names[d], "%s", ct_session_device_name(session, d));
      mine->devices[d] = o->devices[d];
    }
    if (o->samples > 0) add_flops(session, estimate, mine);
    failed = ct_cluster_allgather(mine, sizeof *mine, all, status);
  }
  if (!failed && ct_cluster_rank() == 0) print_report(all, ranks, o->first_sampled);
  if (!failed && o->trace_path) add_report_to_trace(o, mine);
  free(mine);
  free(all);
  if (failed || o->trace_path == NULL) return failed;
  char *merged = NULL;
  size_t bytes = 0;
  if (o->events.oom) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory for the trace");
    failed = 1;
  }
  /* every rank takes part in the gather, even one that failed */
  failed = ct_cluster_gather_to_first(failed           ? ""
                                      : o->events.data ? o->events.data
                                                       : "",
                                      failed ? 0 : o->events.len, &merged, &bytes, status) ||
           failed;
  if (!failed && ct_cluster_rank() == 0) {
    const ct_text events = {merged, bytes, bytes + 1, 0};
    failed = ct_trace_write(o->trace_path, &events, status);
    if (!failed)
      printf("trace of steps %lld to %lld: %s\n", (long long)o->trace_first,
             (long long)o->trace_end - 1, o->trace_path);
  }
  free(merged);
  return failed;
}

void ct_observer_free(ct_observer *o) {
  if (o == NULL) return;
  ct_text_free(&o->events);
  free(o);
}

const char *ct_device_short_name(const char *name) {
  const char *device = strstr(name, "device:");
  return device ? device + 7 : name;
}
