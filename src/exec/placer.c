#include "exec/placer.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "kernels/kernel.h"
#include "graph/op_def.h"

static int has_kernel(const ct_node *n, const ct_device *d) {
  return n->n_outputs == 0 || ct_kernel_find(n->op->name, d->ops->kind) != NULL;
}

/* Pass 1: the device a node must share with its variable, if any. */
static const char *colocated_request(const ct_graph *g, const ct_node *n) {
  int v = n->variable;
  if (v < 0 && (n->op->flags & CT_OP_MUTATES_INPUT0) && n->n_inputs > 0)
    v = n->inputs[0].node->variable;
  if (v < 0) return NULL;
  while (g->variables[v].colocate_with >= 0) v = g->variables[v].colocate_with;
  return g->variables[v].device;
}

/* Whether the spec names a task (or a job, meaning its task 0): then it
 * means the same device in every process of the job. */
static int names_task(const ct_device_spec *spec) {
  return spec && (spec->has_job || spec->has_task);
}

/* Whether `spec` may take device d: this process's devices always; another
 * task's (under mpirun) only when the spec names a task, so that /cpu:0
 * stays this process's own, as it is in a process on its own. */
static int in_reach(const ct_device_spec *spec, const ct_device *d) {
  return !d->remote || names_task(spec);
}

/* Whether spec matches d, a job without a task meaning the job's task 0 (as
 * TensorFlow's placer takes the lowest task), so that every process of a
 * job places the node alike. */
static int spec_matches(const ct_device_spec *spec, const ct_device *d) {
  if (spec == NULL) return 1;
  ct_device_spec task_0 = *spec;
  if (task_0.has_job && !task_0.has_task) task_0.has_task = 1, task_0.task = 0;
  return ct_device_spec_matches(&task_0, d->job, d->task, d->ops->kind, d->index);
}

/* The first device that `spec` matches (NULL: any device of this process)
 * and that has a kernel for n, in TensorFlow's priority order: the device
 * types of higher priority first (GPUs before CPUs), this process's devices
 * before other tasks' (theirs in rank order), lowest index first; -1 when
 * none. *matched (when not NULL) says whether the spec matched any device
 * at all. With no request this is pass 3's default. */
static int first_capable(const ct_node *n, const ct_device_spec *spec, ct_device *const *devices,
                         int n_devices, int *matched) {
  if (matched) *matched = 0;
  int chosen = -1;
  for (int i = 0; i < n_devices; ++i) {
    const ct_device *d = devices[i];
    if (!in_reach(spec, d) || !spec_matches(spec, d)) continue;
    if (matched) *matched = 1;
    if ((chosen < 0 || d->ops->priority > devices[chosen]->ops->priority) && has_kernel(n, d))
      chosen = i;
  }
  return chosen;
}

static void list_devices(ct_device *const *devices, int n_devices, char *buf, size_t size) {
  size_t used = 0;
  for (int i = 0; i < n_devices && used < size; ++i)
    used += (size_t)snprintf(buf + used, size - used, "%s%s", i ? ", " : "", devices[i]->name);
}

/* One line of the log in one write: the ranks of a job share a stderr, and
 * their lines must not cut into each other. */
static void log_line(FILE *log, const char *format, ...) __attribute__((format(printf, 2, 3)));
static void log_line(FILE *log, const char *format, ...) {
  char line[1024];
  va_list args;
  va_start(args, format);
  int n = vsnprintf(line, sizeof line, format, args);
  va_end(args);
  if (n < 0) return;
  if ((size_t)n >= sizeof line) n = (int)sizeof line - 1, line[n - 1] = '\n';
  fwrite(line, 1, (size_t)n, log);
  fflush(log);
}

void ct_log_device_mapping(ct_device *const *devices, int n_devices, FILE *log) {
  log_line(log, "Device mapping:\n");
  for (int i = 0; i < n_devices; ++i) {
    const ct_device *d = devices[i];
    log_line(log, "%s -> device: %d, %s\n", d->name, d->index, d->mapping);
  }
}

static int place_node(const ct_graph *g, const ct_node *n, ct_device *const *devices, int n_devices,
                      int allow_soft, FILE *log, int *device_of, unsigned char *reason_of,
                      unsigned char *pinned_of, ct_status *status) {
  const char *colocated = colocated_request(g, n);
  const char *request = colocated ? colocated : n->requested_device;
  ct_device_spec spec;
  if (ct_device_spec_parse(request, &spec, status) != 0) return 1;
  int matched = 0;
  int chosen = first_capable(n, &spec, devices, n_devices, &matched);
  const char *why = NULL;
  if (chosen < 0 && request[0] != '\0') {
    char wanted[128], available[2048];
    ct_device_spec_string(&spec, wanted, sizeof wanted);
    if (!allow_soft) {
      list_devices(devices, n_devices, available, sizeof available);
      if (matched)
        ct_status_set(status, CT_INVALID_ARGUMENT,
                      "Cannot assign a device for operation '%s': Could not satisfy explicit "
                      "device specification '%s' because no supported kernel for %s devices is "
                      "available. Set session.allow_soft_placement: true to let ctower move it.",
                      n->name, wanted, ct_device_kind_name(spec.kind));
      else
        ct_status_set(status, CT_INVALID_ARGUMENT,
                      "Cannot assign a device for operation '%s': Operation was explicitly "
                      "assigned to %s but available devices are [ %s ]. Make sure the device "
                      "specification refers to a valid device.",
                      n->name, wanted, available);
      return 1;
    }
    /* Pass 4: the same type, any index, then the default. */
    ct_device_spec same_type = spec;
    same_type.has_id = 0;
    chosen = first_capable(n, &same_type, devices, n_devices, NULL);
    if (chosen < 0) chosen = first_capable(n, NULL, devices, n_devices, NULL);
    why = matched ? "has no kernel for it" : "does not exist";
  }
  if (chosen < 0) {
    ct_status_set(status, CT_UNIMPLEMENTED, "no device of this session can run op %s (node '%s')",
                  n->op->name, n->name);
    return 1;
  }
  device_of[n->id] = chosen;
  if (pinned_of) { /* on the task it names: not moved to the default by soft placement */
    ct_device_spec task_only = spec;
    task_only.kind = CT_DEVICE_KIND_ANY, task_only.has_id = 0;
    pinned_of[n->id] = names_task(&spec) && spec_matches(&task_only, devices[chosen]);
  }
  if (reason_of)
    reason_of[n->id] = (unsigned char)(why          ? CT_PLACED_SOFT
                                       : colocated  ? CT_PLACED_COLOCATED
                                       : request[0] ? CT_PLACED_EXPLICIT
                                                    : CT_PLACED_DEFAULT);
  if (log) {
    log_line(log, "%s: (%s): %s\n", n->name, n->op->name, devices[chosen]->name);
    if (why) {
      char wanted[128];
      ct_device_spec_string(&spec, wanted, sizeof wanted);
      log_line(log, "%s: requested %s, which %s; placed on %s by allow_soft_placement\n",
               n->name, wanted, why, devices[chosen]->name);
    }
  }
  return 0;
}

int ct_place_nodes(const ct_graph *g, int first_node, ct_device *const *devices, int n_devices,
                   int allow_soft, FILE *log, int *device_of, unsigned char *reason_of,
                   unsigned char *pinned_of, ct_status *status) {
  for (int id = first_node; id < g->n_nodes; ++id)
    if (place_node(g, g->nodes[id], devices, n_devices, allow_soft, log, device_of, reason_of,
                   pinned_of, status))
      return 1;
  if (log) fflush(log);
  return 0;
}

const char *ct_placement_reason_name(ct_placement_reason reason) {
  switch (reason) {
    case CT_PLACED_EXPLICIT:
      return "explicit";
    case CT_PLACED_COLOCATED:
      return "colocated";
    case CT_PLACED_SOFT:
      return "soft";
    case CT_PLACED_DEFAULT:
      break;
  }
  return "default";
}
