/* The cost model behind `ctower plan`'s predicted step time: kernel rates
 * and all-reduce costs measured on this machine by `ctower bench
 * --calibrate` (commands/calibrate.c) and kept in a JSON file, or conservative
 * defaults without one. */
#ifndef CTOWER_OBSERVE_COST_MODEL_H
#define CTOWER_OBSERVE_COST_MODEL_H

#include <stddef.h>

#include "exec/estimate.h"

enum { CT_RATE_POINTS = 8 };

/* What one device type achieves, measured on its first device. */
typedef struct ct_kind_rates {
  int measured;                 /* 0: the defaults */
  int threads;                  /* the measured device's threads (CPU) or SMs (GPU) */
  int n_points;                 /* dense ops of growing size: */
  double flops[CT_RATE_POINTS]; /*   FLOPs of one op */
  double rate[CT_RATE_POINTS];  /*   FLOP/s achieved */
  double memory_bytes_per_s;    /* an elementwise op's bytes read and written per second */
  double op_overhead_s;         /* per step of a plan: scheduling, shapes, launch */
} ct_kind_rates;

/* A link between two workers: time = latency + bytes / bytes_per_s. */
typedef struct ct_link {
  double latency_s, bytes_per_s;
} ct_link;

typedef struct ct_calibration {
  int measured;           /* 0: conservative defaults */
  char cpu[128];          /* /proc/cpuinfo's model name where it was measured */
  ct_kind_rates kinds[3]; /* indexed by ct_device_kind (CPU, GPU) */
  ct_link in_process;     /* all-reduce between two devices of a process */
  int mpi_ranks;          /* ranks the MPI all-reduce was measured on; 0: not measured */
  ct_link mpi;
} ct_calibration;

void ct_calibration_defaults(ct_calibration *calibration);

/* $XDG_CACHE_HOME/ctower/calibration.json, else ~/.cache/ctower/calibration.json. */
const char *ct_calibration_default_path(char *buf, size_t size);

/* Reads a calibration file over the defaults. Returns 0; 1 and NOT_FOUND
 * when there is no file (the defaults stay), INVALID_ARGUMENT when the path
 * is not a regular file (a folder, a FIFO), or DATA_LOSS naming what is
 * malformed. */
int ct_calibration_load(const char *path, ct_calibration *calibration, ct_status *status);
/* Whether the calibration file can be written at path (not a folder, a
 * device or a FIFO): checked before measuring. Returns 0 or fills status. */
int ct_calibration_check_path(const char *path, ct_status *status);
/* Writes it (making its folder), replacing the file path leads to at once
 * (core/files.h). Returns 0 or fills status. */
int ct_calibration_save(const char *path, const ct_calibration *calibration, ct_status *status);

/* The model's time for a step of the estimate on the session's devices:
 * each device's kernels (dense ops at the calibrated rate for their size,
 * others at memory bandwidth, plus the per-step overhead; devices sharing
 * the CPU get its rates in proportion to their threads), the slowest
 * device (copies and AllReduce ops at the in-process link's latency and
 * bandwidth), plus the cross-rank sums over `ranks` ranks on `link` (no
 * overlap with the backward pass assumed). *reduce_s: the part that
 * all-reduces (the steps of all_reduce/..., and the cross-rank sums).
 * device_s (per device) and reduce_s may be NULL. */
double ct_cost_step_seconds(const ct_calibration *calibration, ct_session *session,
                            const ct_run_estimate *estimate, int ranks, const ct_link *link,
                            double *device_s, double *reduce_s);

/* The best dense FLOP/s measured for the device's kind, scaled to its
 * threads: the peak its achieved rate is held against. 0 when the
 * calibration was not measured (the defaults are no peak). */
double ct_calibration_peak_flops(const ct_calibration *calibration, const ct_device_info *device);

/* A ring all-reduce of `bytes` over n workers: 2(n-1) latencies and
 * 2(n-1)/n of the bytes each way. */
double ct_cost_ring_seconds(double bytes, int n, const ct_link *link);

#endif
