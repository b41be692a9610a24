/* ctower sessions: run a graph's fetches given feeds, on the session's devices.
 *
 * A session owns its devices' buffers and the values of the graph's variables.
 * The graph must outlive the session; nodes may still be added to it after
 * the session is created (new variables are initialized when first used).
 */
#ifndef CTOWER_SESSION_H
#define CTOWER_SESSION_H

#include <stdint.h>

#include "ctower/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_session ct_session;

typedef struct ct_session_options {
  int intra_op_parallelism_threads; /* worker threads of /cpu:0; 0: every core */
  size_t cpu_memory_limit;          /* bytes; 0: none */
} ct_session_options;

void ct_session_options_defaults(ct_session_options *options);

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
 * a tensor owned by the session: read it or write into it between runs. */
ct_tensor *ct_session_variable(ct_session *session, int index, ct_status *status);

/* Bytes in use now and at most, on /cpu:0's allocator. */
void ct_session_memory(ct_session *session, size_t *in_use, size_t *peak);

#ifdef __cplusplus
}
#endif
#endif
