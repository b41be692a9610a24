/* Sessions: their devices, placement, variable storage, and runs: a run
 * checks its request, places new nodes, takes its plan (plan_build.c) and hands
 * it to the executor (executor.c). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/communication.h"
#include "exec/executor.h"
#include "exec/placer.h"

static FILE *log_stream(const ct_session *s) {
  if (!s->options.log_device_placement) return NULL;
  return s->options.log ? s->options.log : stderr;
}

int ct_session_place_new_nodes(ct_session *s, ct_status *status) {
  const ct_graph *g = s->graph;
  if (s->n_placed == g->n_nodes) return 0;
  const size_t n = (size_t)g->n_nodes;
  int *device_of = realloc(s->device_of, n * sizeof *device_of);
  if (device_of) s->device_of = device_of;
  unsigned char *reason_of = realloc(s->placement_reason, n);
  if (reason_of) s->placement_reason = reason_of;
  int *home = realloc(s->node_home, n * sizeof *home);
  if (home) s->node_home = home;
  unsigned char *pinned = malloc(n);
  if (device_of == NULL || reason_of == NULL || home == NULL || pinned == NULL) {
    free(pinned);
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory placing nodes");
    return 1;
  }
  for (int i = s->n_placed; i < g->n_nodes; ++i) device_of[i] = -1, reason_of[i] = 0;
  int failed = ct_place_nodes(g, s->n_placed, s->devices, s->n_devices + s->n_remote,
                              s->options.allow_soft_placement, log_stream(s), device_of,
                              reason_of, pinned, status);
  for (int i = s->n_placed; !failed && i < g->n_nodes; ++i) {
    const ct_device *d = s->devices[device_of[i]];
    home[i] = !pinned[i] ? -1 : d->remote ? d->rank : ct_cluster_rank();
  }
  free(pinned);
  if (failed) return 1;
  s->n_placed = g->n_nodes;
  return 0;
}

/* Under mpirun, the devices of every other task, named as this process
 * names its own (the ranks of a job start with the same options), so that
 * a device scope may name a device of any task; a plan carries the values
 * between tasks (plan_edges.c, transfer.c). None for a session whose options name
 * another task than this rank's. */
static int add_remote_devices(ct_session *s, ct_status *status) {
  const int size = ct_cluster_size(), rank = ct_cluster_rank(), local = s->n_devices;
  if (size < 2 || strcmp(s->options.job, ct_cluster_job()) != 0 ||
      s->options.task != ct_cluster_task())
    return 0;
  ct_device **all = realloc(s->devices, (size_t)local * (size_t)size * sizeof *all);
  if (all == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory naming the job's devices");
    return 1;
  }
  s->devices = all;
  for (int r = 0; r < size; ++r)
    for (int i = 0; r != rank && i < local; ++i) {
      ct_device *d = ct_device_new_remote(all[i], r, ct_cluster_job_of(r), ct_cluster_task_of(r),
                                          status);
      if (d == NULL) return 1;
      all[local + s->n_remote++] = d;
    }
  return 0;
}

ct_session *ct_session_new(ct_graph *graph, const ct_session_options *options, ct_status *status) {
  if (graph == NULL) {
    ct_status_set(status, CT_INVALID_ARGUMENT, "ct_session_new: the graph is null");
    return NULL;
  }
  if (graph->status.code != CT_OK) {
    ct_status_set(status, CT_FAILED_PRECONDITION, "the graph failed to build: %s",
                  graph->status.message);
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
  pthread_mutex_init(&s->run_mutex, NULL);
  const ct_session_options *o = &s->options;
  if (o->intra_op_parallelism_threads < 0 || o->inter_op_parallelism_threads < 0) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "intra_op_parallelism_threads and inter_op_parallelism_threads must be >= 0 "
                  "(0: every core), got %d and %d",
                  o->intra_op_parallelism_threads, o->inter_op_parallelism_threads);
    ct_session_free(s);
    return NULL;
  }
  if (ct_devices_create(o, &s->devices, &s->n_devices, status) ||
      add_remote_devices(s, status)) {
    ct_session_free(s);
    return NULL;
  }
  FILE *log = log_stream(s);
  if (log) ct_log_device_mapping(s->devices, s->n_devices, log);
  if (ct_session_place_new_nodes(s, status)) {
    ct_session_free(s);
    return NULL;
  }
  return s;
}

void ct_session_free(ct_session *s) {
  if (s == NULL) return;
  for (int i = 0; i < s->n_plans; ++i) ct_plan_free(s->plans[i]);
  free(s->plans);
  for (int i = 0; i < s->n_variables; ++i) {
    if (s->variables[i]) ct_allocator_free(s->variable_device[i]->allocator, s->variables[i]->data);
    ct_tensor_free(s->variables[i]);
  }
  free(s->variables);
  free(s->variable_device);
  for (int i = 0; i < s->n_remote; ++i) ct_device_free(s->devices[s->n_devices + i]);
  ct_devices_free(s->devices, s->n_devices);
  free(s->device_of);
  free(s->placement_reason);
  free(s->node_home);
  pthread_mutex_destroy(&s->run_mutex);
  free(s);
}

void ct_session_set_step(ct_session *s, uint64_t step) { s->step = step; }

int ct_session_variable_device(const ct_session *s, int v) {
  for (int id = 0; id < s->n_placed; ++id)
    if (s->graph->nodes[id]->variable == v) return s->device_of[id];
  return 0;
}

/* Initializes variable values of the graph that have none yet. */
static int init_variables(ct_session *s, ct_status *status) {
  const ct_graph *g = s->graph;
  if (ct_session_place_new_nodes(s, status)) return 1;
  if (s->n_variables < g->n_variables) {
    ct_tensor **vars = realloc(s->variables, (size_t)g->n_variables * sizeof *vars);
    if (vars) s->variables = vars;
    ct_device **devices = realloc(s->variable_device, (size_t)g->n_variables * sizeof *devices);
    if (devices) s->variable_device = devices;
    if (vars == NULL || devices == NULL) {
      ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory for variables");
      return 1;
    }
    for (int i = s->n_variables; i < g->n_variables; ++i) vars[i] = NULL, devices[i] = NULL;
    s->n_variables = g->n_variables;
  }
  for (int i = 0; i < g->n_variables; ++i) {
    if (s->variables[i]) continue;
    ct_device *device = s->devices[ct_session_variable_device(s, i)];
    s->variable_device[i] = device;
    if (device->remote) continue; /* its task holds it */
    size_t nbytes = 0;
    if (ct_shape_check_bytes(&g->variables[i].shape, CT_F32, g->variables[i].name, &nbytes,
                             status))
      return 1;
    void *data = ct_allocator_alloc(device->allocator, nbytes, status);
    if (data == NULL) return 1;
    s->variables[i] = ct_tensor_wrap(CT_F32, &g->variables[i].shape, data, status);
    if (s->variables[i] == NULL) {
      ct_allocator_free(device->allocator, data);
      return 1;
    }
    s->variable_device[i] = device;
    /* a replica starts from the same values as its original */
    int source = g->variables[i].replica_of >= 0 ? g->variables[i].replica_of : i;
    if (device->ops->host_addressable) {
      ct_initialize_variable(&g->variables[source], g->seed, s->variables[i]);
      continue;
    }
    ct_tensor *initial = ct_tensor_new(CT_F32, &g->variables[i].shape, status);
    if (initial == NULL) return 1;
    ct_initialize_variable(&g->variables[source], g->seed, initial);
    int failed = ct_device_copy(device, data, NULL, initial->data, nbytes, NULL, status) ||
                 ct_device_synchronize(device, status);
    ct_tensor_free(initial);
    if (failed) return 1;
  }
  return 0;
}

static int variable_ready(ct_session *s, int index, ct_status *status) {
  if (index < 0 || index >= s->graph->n_variables) {
    ct_status_set(status, CT_INVALID_ARGUMENT, "the graph has no variable %d", index);
    return 1;
  }
  if (init_variables(s, status)) return 1;
  if (s->variables[index] == NULL) {
    ct_status_set(status, CT_FAILED_PRECONDITION,
                  "variable '%s' lives on %s, a device of another task (rank %d): its value is "
                  "there; read or assign it on that rank, or fetch it in a run",
                  s->graph->variables[index].name, s->variable_device[index]->name,
                  s->variable_device[index]->rank);
    return 1;
  }
  return 0;
}

ct_tensor *ct_session_variable(ct_session *s, int index, ct_status *status) {
  if (variable_ready(s, index, status)) return NULL;
  if (!s->variable_device[index]->ops->host_addressable) {
    ct_status_set(status, CT_FAILED_PRECONDITION,
                  "variable '%s' lives on %s, not in host memory; use "
                  "ct_session_read_variable and ct_session_assign_variable",
                  s->graph->variables[index].name, s->variable_device[index]->name);
    return NULL;
  }
  return s->variables[index];
}

ct_tensor *ct_session_read_variable(ct_session *s, int index, ct_status *status) {
  if (variable_ready(s, index, status)) return NULL;
  const ct_tensor *var = s->variables[index];
  ct_tensor *copy = ct_tensor_new(var->dtype, &var->shape, status);
  if (copy && ct_device_copy(NULL, copy->data, s->variable_device[index], var->data,
                             ct_tensor_nbytes(var), NULL, status)) {
    ct_tensor_free(copy);
    return NULL;
  }
  return copy;
}

int ct_session_assign_variable(ct_session *s, int index, const ct_tensor *value,
                               ct_status *status) {
  if (variable_ready(s, index, status)) return 1;
  ct_tensor *var = s->variables[index];
  if (value == NULL || value->dtype != var->dtype || !ct_shape_equal(&value->shape, &var->shape)) {
    char want[96], got[96];
    ct_status_set(status, CT_INVALID_ARGUMENT, "variable '%s' is %s %s; cannot assign %s %s",
                  s->graph->variables[index].name, ct_dtype_name(var->dtype),
                  ct_shape_str(&var->shape, want, sizeof want),
                  value ? ct_dtype_name(value->dtype) : "nothing",
                  value ? ct_shape_str(&value->shape, got, sizeof got) : "");
    return 1;
  }
  ct_device *device = s->variable_device[index];
  return ct_device_copy(device, var->data, NULL, value->data, ct_tensor_nbytes(var), NULL,
                        status) ||
         ct_device_synchronize(device, status);
}

int ct_session_initialize_variable(ct_session *s, int index, ct_status *status) {
  if (variable_ready(s, index, status)) return 1;
  const ct_graph *g = s->graph;
  ct_tensor *initial = ct_tensor_new(CT_F32, &g->variables[index].shape, status);
  if (initial == NULL) return 1;
  int source = g->variables[index].replica_of >= 0 ? g->variables[index].replica_of : index;
  ct_initialize_variable(&g->variables[source], g->seed, initial);
  int failed = ct_session_assign_variable(s, index, initial, status);
  ct_tensor_free(initial);
  return failed;
}

int ct_session_memory_stats(const ct_session *s, int device, ct_memory_stats *out) {
  if (device < 0 || device >= s->n_devices) return 1;
  ct_allocator_stats stats = ct_allocator_get_stats(s->devices[device]->allocator);
  out->bytes_in_use = stats.bytes_in_use;
  out->peak_bytes_in_use = stats.peak_bytes_in_use;
  out->bytes_reserved = stats.bytes_reserved;
  out->largest_free_chunk = stats.largest_free_chunk;
  out->limit = stats.limit;
  out->allocations = stats.allocations;
  return 0;
}

void ct_session_reset_peak_memory(ct_session *s) {
  for (int i = 0; i < s->n_devices; ++i) ct_allocator_reset_peak(s->devices[i]->allocator);
}

void ct_session_memory(ct_session *s, size_t *in_use, size_t *peak) {
  size_t total_in_use = 0, total_peak = 0;
  for (int i = 0; i < s->n_devices; ++i) {
    ct_allocator_stats stats = ct_allocator_get_stats(s->devices[i]->allocator);
    total_in_use += stats.bytes_in_use;
    total_peak += stats.peak_bytes_in_use;
  }
  if (in_use) *in_use = total_in_use;
  if (peak) *peak = total_peak;
}

int ct_session_device_count(const ct_session *s) { return s->n_devices; }

const char *ct_session_device_name(const ct_session *s, int index) {
  return index >= 0 && index < s->n_devices ? s->devices[index]->name : NULL;
}

static void *device_host_alloc(size_t bytes, void *device) {
  return ct_device_host_alloc(device, bytes);
}
static void device_host_free(void *ptr, size_t bytes, void *device) {
  (void)bytes;
  ct_device_host_free(device, ptr);
}

int ct_session_host_memory(ct_session *s, ct_host_memory *memory) {
  for (int d = 0; d < s->n_devices; ++d)
    if (s->devices[d]->ops->host_alloc) {
      *memory = (ct_host_memory){device_host_alloc, device_host_free, s->devices[d]};
      return 1;
    }
  return 0;
}

int ct_session_device_info(const ct_session *s, int index, ct_device_info *info) {
  if (index < 0 || index >= s->n_devices) return 1;
  const ct_device *d = s->devices[index];
  info->name = d->name;
  info->kind = ct_device_kind_name(d->ops->kind);
  info->threads = d->threads;
  info->first_core = d->first_core;
  info->memory_limit = ct_allocator_get_stats(d->allocator).limit;
  info->description = d->description;
  return 0;
}

const char *ct_session_node_device(ct_session *s, const ct_node *node, ct_status *status) {
  if (node == NULL || node->id >= s->graph->n_nodes || s->graph->nodes[node->id] != node)
    return NULL;
  if (ct_session_place_new_nodes(s, status)) return NULL;
  return s->devices[s->device_of[node->id]]->name;
}

int ct_session_node_placement(ct_session *s, const ct_node *node, int *device,
                              ct_placement_reason *reason, ct_status *status) {
  if (node == NULL || node->id >= s->graph->n_nodes || s->graph->nodes[node->id] != node) {
    ct_status_set(status, CT_INVALID_ARGUMENT, "the node is not part of this session's graph");
    return 1;
  }
  if (ct_session_place_new_nodes(s, status)) return 1;
  if (device) *device = s->device_of[node->id];
  if (reason) *reason = (ct_placement_reason)s->placement_reason[node->id];
  return 0;
}

/* ---- runs -------------------------------------------------------------------- */

static int check_feed(const ct_feed *feed, ct_status *status) {
  if (feed->output.node == NULL) {
    ct_status_set(status, CT_INVALID_ARGUMENT, "a feed names no node");
    return 1;
  }
  const ct_node *n = feed->output.node;
  ct_shape want = n->shapes[feed->output.index];
  const ct_tensor *t = feed->value;
  if (t == NULL) {
    ct_status_set(status, CT_INVALID_ARGUMENT, "the feed for '%s' is null", n->name);
    return 1;
  }
  int ok = t->dtype == n->dtypes[feed->output.index] && t->shape.rank == want.rank;
  for (int d = 0; ok && d < want.rank; ++d)
    ok = want.dims[d] < 0 || want.dims[d] == t->shape.dims[d];
  if (!ok) {
    char got[96], expected[96];
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "the feed for '%s' is %s %s but the node expects %s %s", n->name,
                  ct_dtype_name(t->dtype), ct_shape_str(&t->shape, got, sizeof got),
                  ct_dtype_name(n->dtypes[feed->output.index]),
                  ct_shape_str(&want, expected, sizeof expected));
    return 1;
  }
  return 0;
}

/* The next run's feeds, staged by this one: a feed each for the same
 * outputs, in the same order (a NULL value: not staged). */
static int check_next_feeds(const ct_feed *feeds, const ct_feed *next_feeds, int n_feeds,
                            ct_status *status) {
  for (int i = 0; i < n_feeds; ++i) {
    if (next_feeds[i].output.node != feeds[i].output.node ||
        next_feeds[i].output.index != feeds[i].output.index) {
      ct_status_set(status, CT_INVALID_ARGUMENT,
                    "next feed %d is for another output than feed %d ('%s'): give the next "
                    "run's feeds in the order of this run's",
                    i, i, feeds[i].output.node ? feeds[i].output.node->name : "null");
      return 1;
    }
    if (next_feeds[i].value && check_feed(&next_feeds[i], status)) return 1;
  }
  return 0;
}

int ct_session_run_staged(ct_session *s, const ct_feed *feeds, const ct_feed *next_feeds,
                          int n_feeds, const ct_output *fetches, int n_fetches,
                          ct_node *const *targets, int n_targets, ct_tensor **results,
                          ct_run_metadata *metadata, ct_status *status) {
  for (int i = 0; i < n_fetches; ++i) results[i] = NULL;
  if (s->graph->status.code != CT_OK) {
    ct_status_set(status, CT_FAILED_PRECONDITION, "the graph failed to build: %s",
                  s->graph->status.message);
    return 1;
  }
  for (int i = 0; i < n_fetches; ++i)
    if (fetches[i].node == NULL) {
      ct_status_set(status, CT_INVALID_ARGUMENT, "fetch %d is null", i);
      return 1;
    }
  for (int i = 0; i < n_targets; ++i)
    if (targets[i] == NULL) {
      ct_status_set(status, CT_INVALID_ARGUMENT, "target %d is null", i);
      return 1;
    }
  for (int i = 0; i < n_feeds; ++i)
    if (check_feed(&feeds[i], status)) return 1;
  if (next_feeds && check_next_feeds(feeds, next_feeds, n_feeds, status)) return 1;
  if (metadata) ct_run_metadata_clear(metadata);
  pthread_mutex_lock(&s->run_mutex);
  int failed = ct_session_place_new_nodes(s, status) || init_variables(s, status);
  ct_plan *p = failed
                   ? NULL
                   : ct_plan_get(s, feeds, n_feeds, fetches, n_fetches, targets, n_targets, status);
  failed = p == NULL || ct_executor_run(s, p, feeds, next_feeds, metadata, results, status);
  pthread_mutex_unlock(&s->run_mutex);
  if (failed)
    for (int i = 0; i < n_fetches; ++i) {
      ct_tensor_free(results[i]);
      results[i] = NULL;
    }
  return failed;
}

int ct_session_run_traced(ct_session *s, const ct_feed *feeds, int n_feeds,
                          const ct_output *fetches, int n_fetches, ct_node *const *targets,
                          int n_targets, ct_tensor **results, ct_run_metadata *metadata,
                          ct_status *status) {
  return ct_session_run_staged(s, feeds, NULL, n_feeds, fetches, n_fetches, targets, n_targets,
                               results, metadata, status);
}

int ct_session_run(ct_session *s, const ct_feed *feeds, int n_feeds, const ct_output *fetches,
                   int n_fetches, ct_node *const *targets, int n_targets, ct_tensor **results,
                   ct_status *status) {
  return ct_session_run_traced(s, feeds, n_feeds, fetches, n_fetches, targets, n_targets, results,
                               NULL, status);
}
