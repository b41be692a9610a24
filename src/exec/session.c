/* Session lifecycle and variable storage. Runs are in executor.c. */
#include <stdlib.h>
#include <string.h>

#include "exec/exec_internal.h"

void ct_session_options_defaults(ct_session_options *options) {
  memset(options, 0, sizeof *options);
}

ct_session *ct_session_new(ct_graph *graph, const ct_session_options *options,
                           ct_status *status) {
  if (graph == NULL) {
    ct_status_set(status, CT_INVALID_ARGUMENT, "ct_session_new: the graph is null");
    return NULL;
  }
  ct_session *s = calloc(1, sizeof *s);
  if (s == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory creating a session");
    return NULL;
  }
  s->graph = graph;
  if (options)
    s->options = *options;
  else
    ct_session_options_defaults(&s->options);
  if (s->options.intra_op_parallelism_threads < 0) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "intra_op_parallelism_threads must be >= 0 (0: every core), got %d",
                  s->options.intra_op_parallelism_threads);
    free(s);
    return NULL;
  }
  s->cpu = ct_cpu_device_new(0, s->options.intra_op_parallelism_threads,
                             s->options.cpu_memory_limit, status);
  if (s->cpu == NULL) {
    free(s);
    return NULL;
  }
  return s;
}

void ct_session_free(ct_session *s) {
  if (s == NULL) return;
  for (int i = 0; i < s->n_plans; ++i) ct_plan_free(s->plans[i]);
  free(s->plans);
  for (int i = 0; i < s->n_variables; ++i) ct_tensor_free(s->variables[i]);
  free(s->variables);
  ct_device_free(s->cpu);
  free(s);
}

void ct_session_set_step(ct_session *s, uint64_t step) { s->step = step; }

int ct_session_init_variables(ct_session *s, ct_status *status) {
  const ct_graph *g = s->graph;
  if (s->n_variables < g->n_variables) {
    ct_tensor **vars = realloc(s->variables, (size_t)g->n_variables * sizeof *vars);
    if (vars == NULL) {
      ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory for variables");
      return 1;
    }
    for (int i = s->n_variables; i < g->n_variables; ++i) vars[i] = NULL;
    s->variables = vars;
    s->n_variables = g->n_variables;
  }
  for (int i = 0; i < g->n_variables; ++i) {
    if (s->variables[i]) continue;
    s->variables[i] = ct_tensor_new(CT_F32, &g->variables[i].shape, status);
    if (s->variables[i] == NULL) return 1;
    ct_initialize_variable(&g->variables[i], g->seed, s->variables[i]);
  }
  return 0;
}

ct_tensor *ct_session_variable(ct_session *s, int index, ct_status *status) {
  if (index < 0 || index >= s->graph->n_variables) {
    ct_status_set(status, CT_INVALID_ARGUMENT, "the graph has no variable %d", index);
    return NULL;
  }
  if (ct_session_init_variables(s, status)) return NULL;
  return s->variables[index];
}

void ct_session_memory(ct_session *s, size_t *in_use, size_t *peak) {
  ct_allocator_stats stats = ct_allocator_get_stats(s->cpu->allocator);
  if (in_use) *in_use = stats.bytes_in_use;
  if (peak) *peak = stats.peak_bytes_in_use;
}
