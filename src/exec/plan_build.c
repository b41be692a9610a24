/* Building a plan, in numbered passes:
 *   1. mark the nodes the fetches and targets need, stopping at fed nodes;
 *      1b. under mpirun, which of them this process runs, and the job's
 *      edges between tasks (plan_edges.c);
 *   2. make a step per needed node, on the device the placer chose, with its
 *      kernel from the registry, and a slot per output;
 *   3. partition (partition.c): where a step reads a value that lives on a
 *      device it cannot read in place, insert a copy step on the reading
 *      device (one per value and device); 3b. where an edge crosses to or
 *      from another task (under mpirun), a send or a receive step
 *      (plan_edges.c);
 *   4. link each step to the steps that wait for it, and count each value's
 *      consumers so that a run returns a buffer as soon as its last consumer
 *      has run;
 *   5. give each value that a copy takes into host memory a mark
 *      (partition.c);
 *   6. note the devices a run uses, reserve room in their queues for every
 *      step, and size the per-run state once. */
#include <stdlib.h>
#include <string.h>

#include "exec/plan.h"
#include "graph/op_def.h"
#include "ops/op_registry.h"

static int plan_matches(const ct_plan *p, const ct_feed *feeds, int n_feeds,
                        const ct_output *fetches, int n_fetches, ct_node *const *targets,
                        int n_targets) {
  if (p->n_feeds != n_feeds || p->n_fetches != n_fetches || p->n_targets != n_targets) return 0;
  for (int i = 0; i < n_feeds; ++i)
    if (p->feed_outputs[i].node != feeds[i].output.node ||
        p->feed_outputs[i].index != feeds[i].output.index)
      return 0;
  for (int i = 0; i < n_fetches; ++i)
    if (p->fetch_outputs[i].node != fetches[i].node ||
        p->fetch_outputs[i].index != fetches[i].index)
      return 0;
  for (int i = 0; i < n_targets; ++i)
    if (p->targets[i] != targets[i]) return 0;
  return 1;
}

static int add_consumer(ct_plan_step *producer, int consumer) {
  for (int i = 0; i < producer->n_consumers; ++i)
    if (producer->consumers[i] == consumer) return 0; /* already linked */
  int *c = realloc(producer->consumers, (size_t)(producer->n_consumers + 1) * sizeof *c);
  if (c == NULL) return 1;
  producer->consumers = c;
  producer->consumers[producer->n_consumers++] = consumer;
  return 0;
}

static int out_of_memory(ct_status *status) {
  ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory planning a run");
  return 1;
}

/* What the passes share while a plan is built. */
typedef struct plan_builder {
  const ct_session *session;
  ct_plan *plan;
  unsigned char *needed;    /* per node: the run needs it */
  unsigned char *fed;       /* per node: a feed gives its value */
  unsigned char *runs_here; /* per node: needed, not fed, and run by this process */
  int *slot_base;           /* per node: the slot of its output 0 */
  int *step_of;             /* per node: its step, or -1 */
  int *producer_of;         /* per slot: the step that writes it, or -1 */
} plan_builder;

/* Pass 1: what the fetches and targets need. Fed nodes always get their
 * slots, even when nothing reads them (a feed may be unused). */
static int mark_needed(plan_builder *b, const ct_plan *p) {
  const int n_nodes = b->session->graph->n_nodes;
  ct_node **stack = calloc((size_t)n_nodes + 1, sizeof *stack);
  if (stack == NULL) return 1;
  int top = 0;
  for (int i = 0; i < p->n_feeds; ++i) b->needed[p->feed_outputs[i].node->id] = 1;
  for (int i = 0; i < p->n_fetches + p->n_targets; ++i) {
    ct_node *n = i < p->n_fetches ? p->fetch_outputs[i].node : p->targets[i - p->n_fetches];
    if (!b->needed[n->id]) b->needed[n->id] = 1, stack[top++] = n;
  }
  while (top > 0) {
    ct_node *n = stack[--top];
    if (b->fed[n->id]) continue;
    for (int j = 0; j < n->n_inputs + n->n_control; ++j) {
      ct_node *in = j < n->n_inputs ? n->inputs[j].node : n->control[j - n->n_inputs];
      if (!b->needed[in->id]) b->needed[in->id] = 1, stack[top++] = in;
    }
  }
  free(stack);
  return 0;
}

/* Pass 2: a step per needed node on its device; a slot per output. A node
 * of another task gets no step, and its outputs' slots are where this
 * process receives them (pass 3b). */
static int add_node_steps(plan_builder *b, ct_status *status) {
  const ct_session *s = b->session;
  ct_plan *p = b->plan;
  for (int id = 0; id < s->graph->n_nodes; ++id) {
    b->step_of[id] = -1;
    if (!b->needed[id]) continue;
    ct_node *n = s->graph->nodes[id];
    const int remote = !b->fed[id] && !b->runs_here[id];
    const int device = b->fed[id] ? -1 : remote ? ct_plan_receiving_device(s) : s->device_of[id];
    b->slot_base[id] = ct_plan_add_slots(p, n->n_outputs, device);
    if (b->slot_base[id] < 0) return out_of_memory(status);
    if (b->fed[id]) continue;
    if (n->op == ct_op_find("Placeholder")) {
      ct_status_set(status, CT_INVALID_ARGUMENT, "you must feed a value for placeholder '%s' (%s)",
                    n->name, ct_dtype_name(n->dtypes[0]));
      return 1;
    }
    if (remote) continue; /* another task runs it */
    ct_plan_step *step = ct_plan_add_step(p);
    if (step == NULL) return out_of_memory(status);
    b->step_of[id] = p->n_steps - 1;
    step->node = n;
    step->device = device;
    step->role = n->op->flags & CT_OP_WAITS_FOR_PEERS ? CT_WORKER_COMMUNICATION : CT_WORKER_COMPUTE;
    step->first_slot = b->slot_base[id];
    step->n_outputs = n->n_outputs;
    step->n_inputs = n->n_inputs;
    if (n->n_outputs > 0) {
      step->kernel = ct_kernel_find(n->op->name, s->devices[device]->ops->kind);
      if (step->kernel == NULL) {
        ct_status_set(status, CT_UNIMPLEMENTED, "no %s kernel for op %s (node '%s')",
                      s->devices[device]->name, n->op->name, n->name);
        return 1;
      }
    }
  }
  return 0;
}

/* Pass 4: who waits for whom (data and control dependencies). */
static int link_steps(plan_builder *b) {
  ct_plan *p = b->plan;
  b->producer_of = malloc((size_t)p->n_slots * sizeof *b->producer_of + 1);
  if (b->producer_of == NULL) return 1;
  for (int slot = 0; slot < p->n_slots; ++slot) b->producer_of[slot] = -1;
  for (int i = 0; i < p->n_steps; ++i)
    for (int o = 0; o < p->steps[i].n_outputs; ++o) b->producer_of[p->steps[i].first_slot + o] = i;
  for (int i = 0; i < p->n_steps; ++i) {
    ct_plan_step *step = &p->steps[i];
    /* a control edge's send waits for its producer as a node for its
     * control inputs */
    const int signal = step->transfer == CT_TRANSFER_SEND && step->n_inputs == 0;
    const int n_control = step->node ? step->node->n_control : signal;
    for (int j = 0; j < step->n_inputs + n_control; ++j) {
      const int producer = j < step->n_inputs ? b->producer_of[step->input_slots[j]]
                           : step->node ? b->step_of[step->node->control[j - step->n_inputs]->id]
                                        : step->after;
      if (producer < 0) continue; /* fed */
      const int before = p->steps[producer].n_consumers;
      if (add_consumer(&p->steps[producer], i)) return 1;
      step->n_deps += p->steps[producer].n_consumers > before;
    }
  }
  return 0;
}

/* Pass 6: the devices a run must wait for at its end, room in each one's
 * queue for all its steps at once (a run queues each step once), and the
 * per-run state. */
static int prepare_runs(plan_builder *b, ct_status *status) {
  ct_plan *p = b->plan;
  int steps_on[CT_MAX_DEVICES][CT_WORKER_ROLES] = {{0}};
  for (int i = 0; i < p->n_steps; ++i) {
    p->uses_device[p->steps[i].device] = 1;
    /* sends and receives run on the executor's thread */
    if (p->steps[i].transfer == CT_TRANSFER_NONE) ++steps_on[p->steps[i].device][p->steps[i].role];
  }
  for (int slot = 0; slot < p->n_slots; ++slot)
    if (p->slot_device[slot] >= 0) p->uses_device[p->slot_device[slot]] = 1;
  for (int d = 0; d < p->n_devices; ++d)
    for (int role = 0; role < CT_WORKER_ROLES; ++role)
      if (ct_device_reserve(p->devices[d], (ct_worker_role)role, steps_on[d][role], status))
        return 1;
  p->slot_side_mark = calloc((size_t)p->n_slots + 1, sizeof *p->slot_side_mark);
  p->values = calloc((size_t)p->n_slots + 1, sizeof *p->values);
  p->value_buffers = calloc((size_t)p->n_slots + 1, sizeof *p->value_buffers);
  p->buffers = calloc((size_t)p->n_slots + 1, sizeof *p->buffers);
  p->remaining = calloc((size_t)p->n_slots + 1, sizeof *p->remaining);
  p->pending = calloc((size_t)p->n_steps + 1, sizeof *p->pending);
  p->root_tasks = calloc((size_t)p->n_steps + 1, sizeof *p->root_tasks);
  return (!p->slot_side_mark || !p->values || !p->value_buffers || !p->buffers || !p->remaining ||
          !p->pending || !p->root_tasks) &&
         out_of_memory(status);
}

/* The plan's key: its feeds, fetches and targets, copied. */
static ct_plan *plan_new(const ct_session *s, const ct_feed *feeds, int n_feeds,
                         const ct_output *fetches, int n_fetches, ct_node *const *targets,
                         int n_targets) {
  ct_plan *p = calloc(1, sizeof *p);
  if (p == NULL) return NULL;
  p->devices = s->devices;
  p->n_devices = s->n_devices;
  p->n_feeds = n_feeds;
  p->n_fetches = n_fetches;
  p->n_targets = n_targets;
  p->feed_outputs = calloc((size_t)n_feeds + 1, sizeof *p->feed_outputs);
  p->fetch_outputs = calloc((size_t)n_fetches + 1, sizeof *p->fetch_outputs);
  p->targets = calloc((size_t)n_targets + 1, sizeof *p->targets);
  p->feed_slots = calloc((size_t)n_feeds + 1, sizeof *p->feed_slots);
  p->fetch_slots = calloc((size_t)n_fetches + 1, sizeof *p->fetch_slots);
  if (!p->feed_outputs || !p->fetch_outputs || !p->targets || !p->feed_slots || !p->fetch_slots) {
    ct_plan_free(p);
    return NULL;
  }
  for (int i = 0; i < n_feeds; ++i) p->feed_outputs[i] = feeds[i].output;
  if (n_fetches) memcpy(p->fetch_outputs, fetches, (size_t)n_fetches * sizeof *fetches);
  if (n_targets) memcpy(p->targets, targets, (size_t)n_targets * sizeof *targets);
  return p;
}

static ct_plan *plan_build(const ct_session *s, const ct_feed *feeds, int n_feeds,
                           const ct_output *fetches, int n_fetches, ct_node *const *targets,
                           int n_targets, ct_status *status) {
  const size_t n_nodes = (size_t)s->graph->n_nodes + 1;
  plan_builder b = {s,
                    plan_new(s, feeds, n_feeds, fetches, n_fetches, targets, n_targets),
                    calloc(n_nodes, 1),
                    calloc(n_nodes, 1),
                    calloc(n_nodes, 1),
                    calloc(n_nodes, sizeof(int)),
                    calloc(n_nodes, sizeof(int)),
                    NULL};
  ct_plan *p = b.plan;
  int failed = (!p || !b.needed || !b.fed || !b.runs_here || !b.slot_base || !b.step_of) &&
               out_of_memory(status);
  for (int i = 0; !failed && i < n_feeds; ++i) b.fed[feeds[i].output.node->id] = 1;
  failed = failed || (mark_needed(&b, p) && out_of_memory(status)) ||
           ct_plan_find_edges(p, s, b.needed, b.fed, b.runs_here, status) ||
           add_node_steps(&b, status) || ct_plan_partition(p, b.slot_base, status) ||
           ct_plan_add_transfers(p, s, b.slot_base, b.step_of, status);
  for (int i = 0; !failed && i < n_feeds; ++i)
    p->feed_slots[i] = b.slot_base[feeds[i].output.node->id] + feeds[i].output.index;
  for (int i = 0; !failed && i < n_fetches; ++i) {
    p->fetch_slots[i] = b.slot_base[fetches[i].node->id] + fetches[i].index;
    p->slot_consumers[p->fetch_slots[i]]++;
  }
  failed = failed || (link_steps(&b) && out_of_memory(status)) ||
           ct_plan_mark_copies_to_host(p, b.producer_of, status) || prepare_runs(&b, status);
  free(b.needed), free(b.fed), free(b.runs_here), free(b.slot_base), free(b.step_of),
      free(b.producer_of);
  if (failed) {
    ct_plan_free(p);
    return NULL;
  }
  return p;
}

ct_plan *ct_plan_get(ct_session *s, const ct_feed *feeds, int n_feeds, const ct_output *fetches,
                     int n_fetches, ct_node *const *targets, int n_targets, ct_status *status) {
  for (int i = 0; i < s->n_plans; ++i)
    if (plan_matches(s->plans[i], feeds, n_feeds, fetches, n_fetches, targets, n_targets))
      return s->plans[i];
  ct_plan *p = plan_build(s, feeds, n_feeds, fetches, n_fetches, targets, n_targets, status);
  if (p == NULL) return NULL;
  if (ct_plan_grow((void **)&s->plans, &s->plans_cap, s->n_plans + 1, sizeof *s->plans)) {
    ct_plan_free(p);
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory caching a plan");
    return NULL;
  }
  s->plans[s->n_plans++] = p;
  return p;
}
