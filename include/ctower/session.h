/* ctower sessions: run a graph's fetches given feeds, on the session's devices.
 *
 * A session owns its devices' buffers and the values of the graph's variables.
 * The graph must outlive the session; nodes may still be added to it after
 * the session is created (new variables are initialized when first used).
 */
#ifndef CTOWER_SESSION_H
#define CTOWER_SESSION_H

#include <stdint.h>
#include <stdio.h>

#include "ctower/graph.h"
#include "ctower/session_options.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_session ct_session;

/* Returns NULL and fills status when a device cannot be created. The caller
 * owns the session (ct_session_free); the graph stays the caller's. */
ct_session *ct_session_new(ct_graph *graph, const ct_session_options *options,
                           ct_status *status);
void ct_session_free(ct_session *session);

/* A value for a placeholder (or any node output) for one run. The tensor is
 * borrowed for the duration of the run. */
typedef struct ct_feed {
  ct_output output;
  const ct_tensor *value;
} ct_feed;

/* Computes `fetches` (results[i] becomes the caller's, free with
 * ct_tensor_free) and runs `targets` for their effects. Returns 0, or fills
 * status: INVALID_ARGUMENT for a missing or ill-shaped feed, a graph that
 * failed to build, or a kernel that rejects its input; RESOURCE_EXHAUSTED
 * when a device runs out of memory. On failure results are NULL and
 * variables may have been partly updated by the failing step. */
int ct_session_run(ct_session *session, const ct_feed *feeds, int n_feeds,
                   const ct_output *fetches, int n_fetches, ct_node *const *targets,
                   int n_targets, ct_tensor **results, ct_status *status);

/* The step that random ops (dropout) mix into their streams; the trainer
 * sets it to the global step before each run so that resumed training sees
 * the same masks. */
void ct_session_set_step(ct_session *session, uint64_t step);

/* The current value of graph variable `index` (initialized on first use), as
 * a tensor owned by the session: read it or write into it between runs.
 * Only for variables in host memory (on a CPU device): a variable on a GPU
 * gives FAILED_PRECONDITION; the two calls below work wherever it lives. */
ct_tensor *ct_session_variable(ct_session *session, int index, ct_status *status);

/* A host copy of variable `index` (the caller frees it), or NULL and status
 * (FAILED_PRECONDITION for a variable of another task under mpirun: fetch
 * it in a run). */
ct_tensor *ct_session_read_variable(ct_session *session, int index, ct_status *status);
/* Sets variable `index` to `value` (same dtype and shape). Returns 0 or
 * fills status. */
int ct_session_assign_variable(ct_session *session, int index, const ct_tensor *value,
                               ct_status *status);

/* Sets variable `index` to its initial value again, drawn as when the
 * session first initialized it (TensorFlow's variable initializer; a
 * session initializes every variable on first use by itself). Returns 0 or
 * fills status as ct_session_read_variable. */
int ct_session_initialize_variable(ct_session *session, int index, ct_status *status);

/* Bytes in use now and at most, summed over the session's devices. */
void ct_session_memory(ct_session *session, size_t *in_use, size_t *peak);

/* One device's allocator, exactly. Variables, optimizer slots and every
 * buffer of a run live there. */
typedef struct ct_memory_stats {
  size_t bytes_in_use;        /* now */
  size_t peak_bytes_in_use;   /* since the session started or the last reset */
  size_t bytes_reserved;      /* obtained from the system (kept for reuse) */
  size_t largest_free_chunk;  /* among the reserved bytes */
  size_t limit;               /* 0: none */
  uint64_t allocations;       /* requests served */
} ct_memory_stats;

/* Fills *stats for device i; returns 0, or 1 when there is no device i. */
int ct_session_memory_stats(const ct_session *session, int device, ct_memory_stats *stats);
/* Starts every device's peak again from its bytes in use now. */
void ct_session_reset_peak_memory(ct_session *session);

/* Devices: ------------------------------------------------------------- */

int ct_session_device_count(const ct_session *session);
/* Canonical name of device i: "/job:localhost/replica:0/task:0/device:CPU:1". */
const char *ct_session_device_name(const ct_session *session, int index);

typedef struct ct_device_info {
  const char *name;       /* canonical */
  const char *kind;       /* "CPU" or "GPU" */
  int threads;            /* CPU: worker threads (cores); GPU: streaming multiprocessors */
  int first_core;         /* CPU: first core it is pinned to, -1 when not pinned */
  size_t memory_limit;    /* bytes; 0: none */
  const char *description; /* GPU: product, CUDA device, total memory; CPU: what its
                              kernels compute with: "isa: avx2 (oneDNN), avx2 (ctower's
                              loops)  math: fp32  winograd: none" */
} ct_device_info;

/* Fills *info for device i; returns 0, or 1 when there is no device i. */
int ct_session_device_info(const ct_session *session, int index, ct_device_info *info);

/* Host memory the session's GPUs copy from where it is, with no staging
 * (pinned memory): feeds that live there go to a GPU straight from it.
 * Fills *memory and returns 1 when the session has such a device, else
 * returns 0 (any host memory will do). Free that memory before the
 * session. */
int ct_session_host_memory(ct_session *session, ct_host_memory *memory);

/* Where the session placed `node`: the canonical name of its device, or NULL
 * when the node is not placed (not part of this session's graph). Nodes
 * added to the graph after the session was created are placed on first
 * use; placement fails with a status as ct_session_run does. */
const char *ct_session_node_device(ct_session *session, const ct_node *node, ct_status *status);

/* Why the placer chose a node's device (TensorFlow's placement passes). */
typedef enum ct_placement_reason {
  CT_PLACED_DEFAULT = 0, /* no request: the first capable device of the highest priority (GPU
                            before CPU) */
  CT_PLACED_EXPLICIT,    /* the innermost device scope it was built in */
  CT_PLACED_COLOCATED,   /* beside its variable (reads, updates, optimizer slots) */
  CT_PLACED_SOFT         /* allow_soft_placement moved it: its requested device does not
                            exist or has no kernel for it */
} ct_placement_reason;

/* "default", "explicit", "colocated" or "soft". */
const char *ct_placement_reason_name(ct_placement_reason reason);

/* Where the session placed `node` (a device index: ct_session_device_name)
 * and why; either pointer may be NULL. Places nodes added since the session
 * was made, as ct_session_node_device does. Returns 0, or 1 and status (a
 * node of another graph, or a placement that fails). */
int ct_session_node_placement(ct_session *session, const ct_node *node, int *device,
                              ct_placement_reason *reason, ct_status *status);

/* Run metadata: ----------------------------------------------------------- */

/* What one run did: one event per executed node (kernel time on its device). */
typedef struct ct_run_metadata ct_run_metadata;

/* What an event's step did: computed, copied a value between devices, or
 * took part in an all-reduce across devices or ranks (AllReduce,
 * CollectiveReduce, and the ops that pack, sum and unpack a bucket of
 * gradients). */
typedef enum ct_timeline_kind {
  CT_TIMELINE_COMPUTE,
  CT_TIMELINE_COPY,
  CT_TIMELINE_COLLECTIVE
} ct_timeline_kind;

typedef struct ct_timeline_event {
  const char *node;     /* node name; copies between devices are "_Copy/<source>", values
                           sent to or received from another task "_Send/<source>:<output>",
                           "_Recv/..." */
  const char *op;       /* "Conv2D", "_Copy", "_Send", "_Recv" */
  int device;           /* index: ct_session_device_name */
  ct_timeline_kind kind;
  double start_us;      /* microseconds since the run started */
  double end_us;
  long long bytes;      /* of its outputs (a send: of the value it sends) */
  int bucket;           /* the all-reduce bucket of gradients it works on, or -1 */
  const char *shapes;   /* "[128,784] [784,10] -> [128,10]": inputs -> outputs */
} ct_timeline_event;

ct_run_metadata *ct_run_metadata_new(void);
void ct_run_metadata_free(ct_run_metadata *metadata);
int ct_run_metadata_event_count(const ct_run_metadata *metadata);
ct_timeline_event ct_run_metadata_event(const ct_run_metadata *metadata, int index);
/* How long `device` (an index: ct_session_device_name) computed in the
 * run: the summed duration of its compute events, in microseconds (copies
 * and collectives left out); 0 for a device that computed nothing. */
double ct_run_metadata_device_busy_us(const ct_run_metadata *metadata, int device);
/* When the last run started: microseconds on CLOCK_MONOTONIC, the origin of
 * its events' times. */
double ct_run_metadata_start_us(const ct_run_metadata *metadata);
/* Writes the timeline as Chrome trace JSON (chrome://tracing, Perfetto):
 * one track per device. Returns 0 or fills status. */
int ct_run_metadata_write_chrome_trace(const ct_run_metadata *metadata,
                                       const ct_session *session, const char *path,
                                       ct_status *status);

/* ct_session_run that also records a timeline into `metadata` (cleared
 * first) when it is not NULL. */
int ct_session_run_traced(ct_session *session, const ct_feed *feeds, int n_feeds,
                          const ct_output *fetches, int n_fetches, ct_node *const *targets,
                          int n_targets, ct_tensor **results, ct_run_metadata *metadata,
                          ct_status *status);

/* ct_session_run_traced that also stages the next run's inputs, as
 * TensorFlow's StagingArea does: next_feeds (for the same outputs as
 * feeds, in the same order; a NULL value: that feed is not staged) start
 * copying onto the GPUs that read them when this run starts, on each GPU's
 * stream of copies ahead, so that the copies run under this run's kernels.
 * The session's next run takes a staged value instead of copying its feed
 * when it feeds the same memory with the same dtype and shape; any other
 * run drops what was staged. Keep next_feeds' memory unchanged until that
 * next run: it must give the values that were staged. Feeds read on host
 * devices (CPUs) are read in place and not staged; a GPU short of memory
 * leaves its copy to the next run. The timeline of a traced run shows each
 * copy ahead as a copy event "_Stage/<feed node>" on its GPU, and a copy
 * step that took a staged value as "_Unstage/<feed node>". next_feeds NULL:
 * ct_session_run_traced. */
int ct_session_run_staged(ct_session *session, const ct_feed *feeds, const ct_feed *next_feeds,
                          int n_feeds, const ct_output *fetches, int n_fetches,
                          ct_node *const *targets, int n_targets, ct_tensor **results,
                          ct_run_metadata *metadata, ct_status *status);

#ifdef __cplusplus
}
#endif
#endif
