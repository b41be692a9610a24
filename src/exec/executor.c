/* Plans and runs.
 *
 * A plan is made once per distinct (feeds, fetches, targets) and cached, in
 * numbered passes:
 *   1. mark the nodes the fetches and targets need, stopping at fed nodes;
 *   2. make a step per needed node, on the device the placer chose, with its
 *      kernel from the registry;
 *   3. partition: where a step reads a value that lives on another device,
 *      insert a copy step on the reading device (one per value and device);
 *   4. link each step to the steps that wait for it, and count each value's
 *      consumers so that a run returns a buffer as soon as its last consumer
 *      has run.
 * A run queues the steps that wait for nothing on their devices' workers;
 * each worker runs a step (the op's shape rule on the real input shapes,
 * outputs from its device's allocator or a view of input 0 or the variable's
 * storage, the kernel, the release of dead inputs) and queues every
 * consumer whose last input this was. Devices thus run concurrently, each
 * node as soon as its inputs are ready. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exec/exec_internal.h"
#include "kernels/kernel.h"
#include "ops/op_def.h"

typedef struct plan_step {
  ct_node *node;           /* NULL for a copy between devices */
  char *copy_name;         /* copies: "_Copy/<source node>" */
  ct_kernel_fn kernel;
  int device;
  int n_inputs;
  int *input_slots;        /* value slot of each input */
  int first_slot;          /* slot of output 0; outputs are consecutive */
  int n_outputs;
  int *consumers;          /* steps that wait for this one */
  int n_consumers;
  int n_deps;              /* steps this one waits for */
  ct_kernel_state state;
  /* traced runs on a GPU: marks around the step's queued work, made on
   * first use; timed: whether this run recorded them */
  void *mark_begin, *mark_end;
  int timed;
} plan_step;

struct ct_plan {
  ct_device *const *devices; /* the session's, which outlive the plan */
  int n_devices;
  /* the key */
  int n_feeds, n_fetches, n_targets;
  ct_output *feed_outputs;
  ct_output *fetch_outputs;
  ct_node **targets;
  /* the schedule */
  plan_step *steps;
  int n_steps, steps_cap;
  int n_slots, slots_cap;
  int *slot_device;        /* device holding each value; -1 for feeds (host memory) */
  int *slot_consumers;     /* per slot: inputs reading it + fetches of it */
  int *feed_slots;         /* per feed */
  int *fetch_slots;        /* per fetch */
  void **slot_ready;       /* per slot: for a GPU value that a copy takes into host
                              memory, a mark recorded once its producer is queued */
  unsigned char uses_device[CT_MAX_DEVICES]; /* runs a step or holds a value there */
  void **slot_side_mark;   /* per slot, this run: the mark its readers wait for, when
                              its producer finished it on another stream (output_marks) */
  /* per-run state, sized once */
  ct_tensor *values;
  ct_buffer **value_buffers;
  ct_buffer *buffers;      /* one per slot at most */
  atomic_int *remaining;   /* per slot: consumers still to run */
  atomic_int *pending;     /* per step: producers still to run */
  /* traced runs: a mark per device where the run began on it (GPUs), and
   * the run's clock then */
  void *device_marks[CT_MAX_DEVICES];
  double device_mark_us[CT_MAX_DEVICES];
};

void ct_plan_free(ct_plan *p) {
  if (p == NULL) return;
  for (int i = 0; i < p->n_steps; ++i) {
    free(p->steps[i].input_slots);
    free(p->steps[i].consumers);
    free(p->steps[i].copy_name);
    if (p->steps[i].state.free_fn) p->steps[i].state.free_fn(p->steps[i].state.data);
    ct_device_mark_free(p->devices[p->steps[i].device], p->steps[i].mark_begin);
    ct_device_mark_free(p->devices[p->steps[i].device], p->steps[i].mark_end);
  }
  for (int d = 0; d < p->n_devices; ++d) ct_device_mark_free(p->devices[d], p->device_marks[d]);
  for (int slot = 0; p->slot_ready && slot < p->n_slots; ++slot)
    if (p->slot_ready[slot]) ct_device_mark_free(p->devices[p->slot_device[slot]], p->slot_ready[slot]);
  free(p->slot_ready);
  free(p->slot_side_mark);
  free(p->steps);
  free(p->feed_outputs);
  free(p->fetch_outputs);
  free(p->targets);
  free(p->slot_device);
  free(p->slot_consumers);
  free(p->feed_slots);
  free(p->fetch_slots);
  free(p->values);
  free(p->value_buffers);
  free(p->buffers);
  free(p->remaining);
  free(p->pending);
  free(p);
}

static int plan_matches(const ct_plan *p, const ct_feed *feeds, int n_feeds,
                        const ct_output *fetches, int n_fetches, ct_node *const *targets,
                        int n_targets) {
  if (p->n_feeds != n_feeds || p->n_fetches != n_fetches || p->n_targets != n_targets)
    return 0;
  for (int i = 0; i < n_feeds; ++i)
    if (p->feed_outputs[i].node != feeds[i].output.node ||
        p->feed_outputs[i].index != feeds[i].output.index)
      return 0;
  for (int i = 0; i < n_fetches; ++i)
    if (p->fetch_outputs[i].node != fetches[i].node || p->fetch_outputs[i].index != fetches[i].index)
      return 0;
  for (int i = 0; i < n_targets; ++i)
    if (p->targets[i] != targets[i]) return 0;
  return 1;
}

/* ---- building --------------------------------------------------------------- */

static int grow(void **array, int *cap, int need, size_t item) {
  if (need <= *cap) return 0;
  int cap2 = *cap ? *cap : 64;
  while (cap2 < need) cap2 *= 2;
  void *a = realloc(*array, (size_t)cap2 * item);
  if (a == NULL) return 1;
  memset((char *)a + (size_t)*cap * item, 0, (size_t)(cap2 - *cap) * item);
  *array = a;
  *cap = cap2;
  return 0;
}

static int add_slots(ct_plan *p, int count, int device) {
  int old_cap = p->slots_cap;
  int cap = old_cap;
  if (grow((void **)&p->slot_device, &cap, p->n_slots + count, sizeof *p->slot_device)) return -1;
  cap = old_cap;
  if (grow((void **)&p->slot_consumers, &cap, p->n_slots + count, sizeof *p->slot_consumers))
    return -1;
  p->slots_cap = cap;
  int first = p->n_slots;
  for (int i = 0; i < count; ++i) p->slot_device[first + i] = device;
  p->n_slots += count;
  return first;
}

static plan_step *add_step(ct_plan *p) {
  if (grow((void **)&p->steps, &p->steps_cap, p->n_steps + 1, sizeof *p->steps)) return NULL;
  plan_step *step = &p->steps[p->n_steps++];
  memset(step, 0, sizeof *step);
  return step;
}

/* Whether output `index` of n is a variable's storage (or a view of it):
 * the one kind of value that changes after it is produced. */
static int is_variable_storage(const ct_node *n, int index) {
  while (index == 0 && n->variable < 0 && (n->op->flags & CT_OP_ALIAS_INPUT0) && n->n_inputs > 0)
    n = n->inputs[0].node;
  return index == 0 && n->variable >= 0;
}

/* Pass 3: the slot a step on `device` reads for `slot`: the slot itself, or
 * a copy of it on that device (made once; copy_of maps (slot, device) to
 * it). `shared` says the reader may use the value in place: feeds and the
 * values of CPU devices are in host memory, which CPU devices share, and a
 * value that no op changes can be read where it is (a variable cannot: its
 * update may run while another device still reads it, so that device gets
 * its own copy). */
static int local_slot(ct_plan *p, int slot, int device, int n_devices, int shared,
                      int **copy_of, int *copy_of_cap, const char *source_name) {
  if (p->slot_device[slot] == device || shared) return slot;
  int key = slot * n_devices + device;
  int old = *copy_of_cap;
  if (grow((void **)copy_of, copy_of_cap, key + 1, sizeof **copy_of)) return -1;
  for (int i = old; i < *copy_of_cap; ++i) (*copy_of)[i] = -1;
  if ((*copy_of)[key] >= 0) return (*copy_of)[key];
  plan_step *copy = add_step(p);
  int out = copy ? add_slots(p, 1, device) : -1;
  if (out < 0) return -1;
  copy->device = device;
  copy->n_inputs = 1;
  copy->input_slots = malloc(sizeof *copy->input_slots);
  size_t len = strlen(source_name) + 8;
  copy->copy_name = malloc(len);
  if (copy->input_slots == NULL || copy->copy_name == NULL) return -1;
  snprintf(copy->copy_name, len, "_Copy/%s", source_name);
  copy->input_slots[0] = slot;
  copy->first_slot = out;
  copy->n_outputs = 1;
  p->slot_consumers[slot]++;
  (*copy_of)[key] = out;
  return out;
}

static int add_consumer(plan_step *producer, int consumer) {
  for (int i = 0; i < producer->n_consumers; ++i)
    if (producer->consumers[i] == consumer) return 0; /* already linked */
  int *c = realloc(producer->consumers, (size_t)(producer->n_consumers + 1) * sizeof *c);
  if (c == NULL) return 1;
  producer->consumers = c;
  producer->consumers[producer->n_consumers++] = consumer;
  return 0;
}

static ct_plan *plan_build(ct_session *s, const ct_feed *feeds, int n_feeds,
                           const ct_output *fetches, int n_fetches, ct_node *const *targets,
                           int n_targets, ct_status *status) {
  const ct_graph *g = s->graph;
  const int n_nodes = g->n_nodes;
  ct_plan *p = calloc(1, sizeof *p);
  unsigned char *needed = calloc((size_t)n_nodes + 1, 1);
  unsigned char *fed = calloc((size_t)n_nodes + 1, 1);
  int *slot_base = calloc((size_t)n_nodes + 1, sizeof *slot_base);
  int *step_of = calloc((size_t)n_nodes + 1, sizeof *step_of);
  ct_node **stack = calloc((size_t)n_nodes + 1, sizeof *stack);
  int *copy_of = NULL, copy_of_cap = 0, *producer_of = NULL;
  if (!p || !needed || !fed || !slot_base || !step_of || !stack) goto oom;
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
  if (!p->feed_outputs || !p->fetch_outputs || !p->targets || !p->feed_slots || !p->fetch_slots)
    goto oom;
  for (int i = 0; i < n_feeds; ++i) {
    p->feed_outputs[i] = feeds[i].output;
    fed[feeds[i].output.node->id] = 1;
  }
  if (n_fetches) memcpy(p->fetch_outputs, fetches, (size_t)n_fetches * sizeof *fetches);
  if (n_targets) memcpy(p->targets, targets, (size_t)n_targets * sizeof *targets);

  /* Pass 1: what the fetches and targets need. Fed nodes always get their
   * slots, even when nothing reads them (a feed may be unused). */
  int top = 0;
  for (int i = 0; i < n_feeds; ++i) needed[feeds[i].output.node->id] = 1;
  for (int i = 0; i < n_fetches; ++i)
    if (!needed[fetches[i].node->id]) needed[fetches[i].node->id] = 1, stack[top++] = fetches[i].node;
  for (int i = 0; i < n_targets; ++i)
    if (!needed[targets[i]->id]) needed[targets[i]->id] = 1, stack[top++] = targets[i];
  while (top > 0) {
    ct_node *n = stack[--top];
    if (fed[n->id]) continue;
    for (int j = 0; j < n->n_inputs + n->n_control; ++j) {
      ct_node *in = j < n->n_inputs ? n->inputs[j].node : n->control[j - n->n_inputs];
      if (!needed[in->id]) needed[in->id] = 1, stack[top++] = in;
    }
  }

  /* Pass 2: a step per needed node on its device; a slot per output. */
  for (int id = 0; id < n_nodes; ++id) {
    step_of[id] = -1;
    if (!needed[id]) continue;
    ct_node *n = g->nodes[id];
    int device = fed[id] ? -1 : s->device_of[id];
    slot_base[id] = add_slots(p, n->n_outputs, device);
    if (slot_base[id] < 0) goto oom;
    if (fed[id]) continue;
    if (n->op == ct_op_find("Placeholder")) {
      ct_status_set(status, CT_INVALID_ARGUMENT,
                    "you must feed a value for placeholder '%s' (%s)", n->name,
                    ct_dtype_name(n->dtypes[0]));
      goto fail;
    }
    plan_step *step = add_step(p);
    if (step == NULL) goto oom;
    step_of[id] = p->n_steps - 1;
    step->node = n;
    step->device = device;
    step->first_slot = slot_base[id];
    step->n_outputs = n->n_outputs;
    step->n_inputs = n->n_inputs;
    if (n->n_outputs > 0) {
      step->kernel = ct_kernel_find(n->op->name, s->devices[device]->ops->kind);
      if (step->kernel == NULL) {
        ct_status_set(status, CT_UNIMPLEMENTED, "no %s kernel for op %s (node '%s')",
                      s->devices[device]->name, n->op->name, n->name);
        goto fail;
      }
    }
  }

  /* Pass 3: inputs, with copies where a value lives on another device. */
  const int n_node_steps = p->n_steps;
  for (int i = 0; i < n_node_steps; ++i) {
    ct_node *n = p->steps[i].node;
    int *inputs = calloc((size_t)n->n_inputs + 1, sizeof *inputs);
    if (inputs == NULL) goto oom;
    p->steps[i].input_slots = inputs;
    for (int j = 0; j < n->n_inputs; ++j) {
      const ct_node *source = n->inputs[j].node;
      int slot = slot_base[source->id] + n->inputs[j].index;
      int from = p->slot_device[slot], to = p->steps[i].device;
      int host_value = from < 0 || (s->devices[from]->ops->host_addressable &&
                                    !is_variable_storage(source, n->inputs[j].index));
      /* a multi-device op reads each input where it is when that is a
       * device of its own kind (its kernel's); a feed, or a value of the
       * other kind, is copied to its device like any input */
      int part_in_place = (n->op->flags & CT_OP_MULTI_DEVICE) && from >= 0 &&
                          s->devices[from]->ops == s->devices[to]->ops;
      int shared = part_in_place || (host_value && s->devices[to]->ops->host_addressable);
      int local = local_slot(p, slot, to, s->n_devices, shared, &copy_of, &copy_of_cap,
                             source->name);
      if (local < 0) goto oom;
      p->steps[i].input_slots[j] = local; /* p->steps may have moved: index again */
      p->slot_consumers[local]++;
    }
    if (n->op->flags & CT_OP_MULTI_DEVICE) /* output k lives where input k does */
      for (int k = 0; k < n->n_outputs && k < n->n_inputs; ++k)
        if (p->slot_device[p->steps[i].input_slots[k]] >= 0)
          p->slot_device[p->steps[i].first_slot + k] = p->slot_device[p->steps[i].input_slots[k]];
  }
  for (int i = 0; i < n_feeds; ++i)
    p->feed_slots[i] = slot_base[feeds[i].output.node->id] + feeds[i].output.index;
  for (int i = 0; i < n_fetches; ++i) {
    p->fetch_slots[i] = slot_base[fetches[i].node->id] + fetches[i].index;
    p->slot_consumers[p->fetch_slots[i]]++;
  }

  /* Pass 4: who waits for whom. */
  producer_of = malloc((size_t)p->n_slots * sizeof *producer_of);
  if (producer_of == NULL) goto oom;
  for (int slot = 0; slot < p->n_slots; ++slot) producer_of[slot] = -1;
  for (int i = 0; i < p->n_steps; ++i)
    for (int o = 0; o < p->steps[i].n_outputs; ++o) producer_of[p->steps[i].first_slot + o] = i;
  for (int i = 0; i < p->n_steps; ++i) {
    plan_step *step = &p->steps[i];
    for (int j = 0; j < step->n_inputs; ++j) {
      int producer = producer_of[step->input_slots[j]];
      if (producer < 0) continue; /* a feed */
      int before = p->steps[producer].n_consumers;
      if (add_consumer(&p->steps[producer], i)) goto oom;
      step->n_deps += p->steps[producer].n_consumers > before;
    }
    for (int c = 0; step->node && c < step->node->n_control; ++c) {
      int producer = step_of[step->node->control[c]->id];
      if (producer < 0) continue; /* fed */
      int before = p->steps[producer].n_consumers;
      if (add_consumer(&p->steps[producer], i)) goto oom;
      step->n_deps += p->steps[producer].n_consumers > before;
    }
  }

  /* Pass 5: a value copied off a GPU into host memory gets a mark, so that
   * the copy waits for its producer alone, not for the work the GPU's
   * worker has queued since (ct_device_mark_new gives CPU devices none). */
  p->slot_ready = calloc((size_t)p->n_slots + 1, sizeof *p->slot_ready);
  if (p->slot_ready == NULL) goto oom;
  for (int i = 0; i < p->n_steps; ++i) {
    const plan_step *step = &p->steps[i];
    const int source = step->node == NULL ? step->input_slots[0] : -1;
    if (source < 0 || p->slot_device[source] < 0 || p->slot_ready[source] ||
        !s->devices[step->device]->ops->host_addressable)
      continue;
    /* a variable changes in place after its producer: its copy must see
     * the updates queued before it, so it waits for the whole stream */
    const plan_step *producer = producer_of[source] >= 0 ? &p->steps[producer_of[source]] : NULL;
    if (producer && producer->node &&
        is_variable_storage(producer->node, source - producer->first_slot))
      continue;
    p->slot_ready[source] = ct_device_mark_new(s->devices[p->slot_device[source]]);
  }

  /* The devices a run must wait for at its end, and room in each one's
   * queue for all its steps at once (a run queues each step once) */
  int steps_on[CT_MAX_DEVICES] = {0};
  for (int i = 0; i < p->n_steps; ++i) p->uses_device[p->steps[i].device] = 1, ++steps_on[p->steps[i].device];
  for (int slot = 0; slot < p->n_slots; ++slot)
    if (p->slot_device[slot] >= 0) p->uses_device[p->slot_device[slot]] = 1;
  for (int d = 0; d < s->n_devices; ++d)
    if (ct_device_reserve(s->devices[d], steps_on[d], status)) goto fail;

  p->slot_side_mark = calloc((size_t)p->n_slots + 1, sizeof *p->slot_side_mark);
  p->values = calloc((size_t)p->n_slots + 1, sizeof *p->values);
  p->value_buffers = calloc((size_t)p->n_slots + 1, sizeof *p->value_buffers);
  p->buffers = calloc((size_t)p->n_slots + 1, sizeof *p->buffers);
  p->remaining = calloc((size_t)p->n_slots + 1, sizeof *p->remaining);
  p->pending = calloc((size_t)p->n_steps + 1, sizeof *p->pending);
  if (!p->slot_side_mark || !p->values || !p->value_buffers || !p->buffers || !p->remaining ||
      !p->pending)
    goto oom;
  free(needed), free(fed), free(slot_base), free(step_of), free(stack), free(copy_of);
  free(producer_of);
  return p;
oom:
  ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory planning a run");
fail:
  free(needed), free(fed), free(slot_base), free(step_of), free(stack), free(copy_of);
  free(producer_of);
  ct_plan_free(p);
  return NULL;
}

static ct_plan *plan_get(ct_session *s, const ct_feed *feeds, int n_feeds,
                         const ct_output *fetches, int n_fetches, ct_node *const *targets,
                         int n_targets, ct_status *status) {
  for (int i = 0; i < s->n_plans; ++i)
    if (plan_matches(s->plans[i], feeds, n_feeds, fetches, n_fetches, targets, n_targets))
      return s->plans[i];
  ct_plan *p = plan_build(s, feeds, n_feeds, fetches, n_fetches, targets, n_targets, status);
  if (p == NULL) return NULL;
  if (grow((void **)&s->plans, &s->plans_cap, s->n_plans + 1, sizeof *s->plans)) {
    ct_plan_free(p);
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory caching a plan");
    return NULL;
  }
  s->plans[s->n_plans++] = p;
  return p;
}

/* ---- running ------------------------------------------------------------------ */

typedef struct run_state {
  ct_session *session;
  ct_plan *plan;
  atomic_int steps_left;
  atomic_int failed;
  pthread_mutex_t mutex;
  pthread_cond_t done;
  ct_status status;           /* the first failure */
  ct_run_metadata *metadata;
  struct timespec start;
} run_state;

static double micros_since(const struct timespec *start) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)(now.tv_sec - start->tv_sec) * 1e6 + (double)(now.tv_nsec - start->tv_nsec) * 1e-3;
}

static void buffer_release(ct_buffer *b) {
  if (b == NULL || atomic_fetch_sub((atomic_int *)&b->refs, 1) > 1) return;
  if (b->owned) ct_allocator_free(b->device->allocator, b->data);
  b->data = NULL;
}

/* Drops one consumer of a slot; the last one returns its buffer. */
static void slot_consumed(ct_plan *p, int slot) {
  if (atomic_fetch_sub(&p->remaining[slot], 1) == 1) {
    buffer_release(p->value_buffers[slot]);
    p->value_buffers[slot] = NULL;
  }
}

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

/* Whether output 0 can take over input 0's buffer: an in-place op, input 0
 * dies with this step (no other consumer left, no other view of it, not
 * read twice here), owned by the device, of the output's shape and dtype. */
static int can_take_input0(const ct_plan *p, const plan_step *step, const ct_tensor *out) {
  const ct_node *n = step->node;
  if (n == NULL || !(n->op->flags & CT_OP_INPLACE) || step->n_inputs == 0) return 0;
  int in_slot = step->input_slots[0];
  const ct_buffer *b = p->value_buffers[in_slot];
  if (b == NULL || !b->owned || atomic_load((atomic_int *)&b->refs) != 1 ||
      atomic_load(&p->remaining[in_slot]) != 1)
    return 0;
  for (int j = 1; j < step->n_inputs; ++j)
    if (step->input_slots[j] == in_slot) return 0;
  const ct_tensor *in = &p->values[in_slot];
  return in->dtype == out->dtype && ct_shape_equal(&in->shape, &out->shape);
}

/* Gives a step its outputs: storage of a variable or constant, a view of
 * input 0, input 0's own buffer (in place), or fresh buffers from its
 * device. */
static int bind_outputs(ct_session *s, ct_plan *p, plan_step *step, ct_status *status) {
  ct_node *n = step->node;
  for (int o = 0; o < step->n_outputs; ++o) {
    int slot = step->first_slot + o;
    ct_device *device = s->devices[p->slot_device[slot]];
    ct_tensor *value = &p->values[slot];
    atomic_store(&p->remaining[slot], p->slot_consumers[slot]);
    ct_buffer *b = &p->buffers[slot];
    memset(b, 0, sizeof *b);
    b->device = device;
    b->refs = 1;
    if (n && n->variable >= 0 && o == 0) {
      value->data = s->variables[n->variable]->data;
    } else if (n && n->constant && o == 0 && device->ops->host_addressable) {
      value->data = n->constant->data;
    } else if (n && (n->op->flags & CT_OP_ALIAS_INPUT0) && o == 0) {
      int in_slot = step->input_slots[0];
      value->data = p->values[in_slot].data;
      b = p->value_buffers[in_slot];
      if (b) atomic_fetch_add((atomic_int *)&b->refs, 1);
    } else if (o == 0 && can_take_input0(p, step, value)) {
      int in_slot = step->input_slots[0];
      b = p->value_buffers[in_slot];
      value->data = b->data;
      p->value_buffers[in_slot] = NULL; /* the output owns it now */
    } else {
      size_t nbytes = (size_t)ct_shape_elements(&value->shape) * ct_dtype_size(value->dtype);
      b->data = ct_allocator_alloc(device->allocator, nbytes, status);
      if (b->data == NULL) return 1;
      b->owned = 1;
      value->data = b->data;
      if (n && n->constant && o == 0 && /* a constant on a GPU: uploaded each run */
          ct_device_copy(device, b->data, NULL, n->constant->data, nbytes, NULL, status)) {
        p->value_buffers[slot] = b;
        return 1;
      }
    }
    p->value_buffers[slot] = b;
  }
  return 0;
}

/* Where a value lives: a device, or NULL for host memory (a feed). */
static ct_device *device_of_slot(const ct_session *s, const ct_plan *p, int slot) {
  return p->slot_device[slot] >= 0 ? s->devices[p->slot_device[slot]] : NULL;
}

/* Inputs finished on another stream than their device's compute stream:
 * that device's work from now on (this step's, and the buffer's next
 * owner's once it is released) waits for them. */
static int wait_for_side_marks(ct_session *s, ct_plan *p, const plan_step *step,
                               ct_status *status) {
  for (int j = 0; j < step->n_inputs; ++j) {
    const int slot = step->input_slots[j];
    if (p->slot_side_mark[slot] &&
        ct_device_wait_mark(device_of_slot(s, p, slot), p->slot_side_mark[slot], status))
      return 1;
  }
  return 0;
}

static int run_step(ct_session *s, ct_plan *p, plan_step *step, ct_status *status) {
  ct_node *n = step->node;
  if (step->n_outputs == 0) return 0; /* NoOp */
  ct_tensor inputs[64];
  ct_shape in_shapes[64];
  ct_dtype in_dtypes[64];
  for (int j = 0; j < step->n_inputs; ++j) {
    inputs[j] = p->values[step->input_slots[j]];
    in_shapes[j] = inputs[j].shape;
    in_dtypes[j] = inputs[j].dtype;
  }
  ct_shape out_shapes[64];
  ct_dtype out_dtypes[64];
  if (n == NULL) { /* a copy */
    out_shapes[0] = in_shapes[0];
    out_dtypes[0] = in_dtypes[0];
  } else {
    ct_infer_ctx infer = {n->name, &n->attrs, n->n_inputs, in_shapes, in_dtypes,
                          n->n_outputs, out_shapes, out_dtypes, status};
    if (n->op->infer && n->op->infer(&infer) != 0) return 1;
  }
  for (int o = 0; o < step->n_outputs; ++o) {
    ct_tensor *value = &p->values[step->first_slot + o];
    value->shape = out_shapes[o];
    value->dtype = out_dtypes[o];
    value->owns_data = 0;
  }
  if (bind_outputs(s, p, step, status)) return 1;
  ct_device *device = s->devices[step->device];
  if (wait_for_side_marks(s, p, step, status)) return 1;
  if (n == NULL) {
    const int source = step->input_slots[0];
    /* into host memory, the copy waits for the value's own mark */
    void *ready = p->slot_side_mark[source] ? p->slot_side_mark[source] : p->slot_ready[source];
    if (ct_device_copy(device, p->values[step->first_slot].data, device_of_slot(s, p, source),
                       inputs[0].data, ct_tensor_nbytes(&inputs[0]), ready, status))
      return 1;
  } else {
    /* only a multi-device op reads its inputs off its own device */
    ct_device *input_devices[64];
    const int multi = (n->op->flags & CT_OP_MULTI_DEVICE) != 0;
    for (int j = 0; multi && j < step->n_inputs; ++j)
      input_devices[j] = device_of_slot(s, p, step->input_slots[j]);
    void *output_marks[64] = {NULL};
    ct_kernel_ctx ctx = {n,      &n->attrs,     step->n_inputs, inputs, step->n_outputs,
                         &p->values[step->first_slot], device, device->threads, s->step,
                         &step->state, status, {NULL}, 0, multi ? input_devices : NULL,
                         output_marks};
    step->kernel(&ctx);
    for (int k = 0; k < ctx.n_scratch; ++k) ct_allocator_free(device->allocator, ctx.scratch[k]);
    if (status->code != CT_OK) return 1;
    for (int o = 0; o < step->n_outputs; ++o)
      p->slot_side_mark[step->first_slot + o] = output_marks[o];
  }
  for (int j = 0; j < step->n_inputs; ++j) slot_consumed(p, step->input_slots[j]);
  for (int o = 0; o < step->n_outputs; ++o) {
    const int slot = step->first_slot + o;
    if (p->slot_consumers[slot] > 0) continue;
    /* unread: its buffer goes back now, so its device's later work (the
     * buffer's next owner) must come after the writes still pending */
    if (ct_device_wait_mark(device_of_slot(s, p, slot), p->slot_side_mark[slot], status))
      return 1;
    atomic_store(&p->remaining[slot], 1);
    slot_consumed(p, slot);
  }
  return 0;
}

/* A step's name and op in the timeline. */
static const char *step_name(const plan_step *step) {
  return step->node ? step->node->name : step->copy_name;
}
static const char *step_op(const plan_step *step) {
  return step->node ? step->node->op->name : "_Copy";
}

static void execute_step(void *context, int index);

static void record_failure(run_state *run, const ct_status *status) {
  pthread_mutex_lock(&run->mutex);
  ct_status_propagate(&run->status, status);
  pthread_mutex_unlock(&run->mutex);
  atomic_store(&run->failed, 1);
}

/* Queues a step on its device. The plan reserved room for every step of
 * each device, so this cannot fail short of a broken invariant; if it
 * does, the run fails, and the step is passed through here (it does no
 * work in a failed run) so that the run still ends. */
static void schedule(run_state *run, int index) {
  ct_device *device = run->session->devices[run->plan->steps[index].device];
  ct_device_task task = {execute_step, run, index};
  ct_status status = CT_STATUS_INIT;
  if (ct_device_submit(device, task, &status) != 0) {
    record_failure(run, &status);
    execute_step(run, index);
  }
}

/* A device worker runs one step, then queues the consumers it unblocked. */
static void execute_step(void *context, int index) {
  run_state *run = context;
  ct_plan *p = run->plan;
  plan_step *step = &p->steps[index];
  if (!atomic_load(&run->failed)) {
    ct_status status = CT_STATUS_INIT;
    double start = run->metadata ? micros_since(&run->start) : 0;
    ct_device *device = run->session->devices[step->device];
    /* on a device that queues its work (a GPU: the run made it a mark) the
     * step's time is its queued work's, read after the run */
    const int queued = run->metadata && step->n_outputs > 0 && p->device_marks[step->device];
    if (queued && !step->mark_begin) step->mark_begin = ct_device_mark_new(device);
    if (queued && !step->mark_end) step->mark_end = ct_device_mark_new(device);
    int failed = (queued && ct_device_mark_record(device, step->mark_begin, &status)) ||
                 run_step(run->session, p, step, &status) ||
                 (queued && ct_device_mark_record(device, step->mark_end, &status));
    /* a copy into host memory waits for these marks: a missing one would
     * let it read a value not written yet, so failing to record fails */
    for (int o = 0; !failed && o < step->n_outputs; ++o) {
      const int slot = step->first_slot + o;
      failed = ct_device_mark_record(device_of_slot(run->session, p, slot), p->slot_ready[slot],
                                     &status);
    }
    step->timed = queued && !failed && step->mark_begin && step->mark_end;
    if (failed) {
      record_failure(run, &status);
    } else if (run->metadata && step->n_outputs > 0 && !step->timed) {
      ct_run_metadata_add(run->metadata, step_name(step), step_op(step), step->device, start,
                          micros_since(&run->start));
    }
  }
  for (int c = 0; c < step->n_consumers; ++c)
    if (atomic_fetch_sub(&p->pending[step->consumers[c]], 1) == 1) schedule(run, step->consumers[c]);
  if (atomic_fetch_sub(&run->steps_left, 1) == 1) {
    pthread_mutex_lock(&run->mutex);
    pthread_cond_signal(&run->done);
    pthread_mutex_unlock(&run->mutex);
  }
}

/* Returns every buffer a failed or finished run still holds: each slot that
 * still has a buffer holds one reference to it. */
static void release_all(ct_plan *p) {
  for (int slot = 0; slot < p->n_slots; ++slot) {
    buffer_release(p->value_buffers[slot]);
    p->value_buffers[slot] = NULL;
    atomic_store(&p->remaining[slot], 0);
  }
}

static int run_plan(ct_session *s, ct_plan *p, const ct_feed *feeds, ct_run_metadata *metadata,
                    ct_status *status) {
  for (int slot = 0; slot < p->n_slots; ++slot) {
    p->value_buffers[slot] = NULL;
    p->slot_side_mark[slot] = NULL;
    atomic_store(&p->remaining[slot], 0);
  }
  for (int i = 0; i < p->n_feeds; ++i) {
    int slot = p->feed_slots[i];
    p->values[slot] = *feeds[i].value;
    p->values[slot].owns_data = 0;
    atomic_store(&p->remaining[slot], p->slot_consumers[slot]);
  }
  if (p->n_steps == 0) return 0;
  run_state run;
  memset(&run, 0, sizeof run);
  run.session = s;
  run.plan = p;
  run.metadata = metadata;
  clock_gettime(CLOCK_MONOTONIC, &run.start);
  for (int d = 0; metadata && d < s->n_devices && d < CT_MAX_DEVICES; ++d) {
    /* a GPU is idle when a run starts (the last one waited for it): its
     * mark is reached at once, at the run's clock now */
    if (!p->device_marks[d]) p->device_marks[d] = ct_device_mark_new(s->devices[d]);
    if (ct_device_mark_record(s->devices[d], p->device_marks[d], status)) return 1;
    p->device_mark_us[d] = micros_since(&run.start);
  }
  atomic_store(&run.steps_left, p->n_steps);
  pthread_mutex_init(&run.mutex, NULL);
  pthread_cond_init(&run.done, NULL);
  for (int i = 0; i < p->n_steps; ++i) atomic_store(&p->pending[i], p->steps[i].n_deps);
  for (int i = 0; i < p->n_steps; ++i)
    if (p->steps[i].n_deps == 0) schedule(&run, i);
  pthread_mutex_lock(&run.mutex);
  while (atomic_load(&run.steps_left) > 0) pthread_cond_wait(&run.done, &run.mutex);
  pthread_mutex_unlock(&run.mutex);
  pthread_mutex_destroy(&run.mutex);
  pthread_cond_destroy(&run.done);
  ct_status_propagate(status, &run.status);
  return atomic_load(&run.failed);
}

/* The timeline events of steps timed on GPUs, now that their work is done:
 * from the device's mark at the start of the run. */
static void add_device_timings(ct_plan *p, ct_run_metadata *metadata) {
  for (int i = 0; i < p->n_steps; ++i) {
    plan_step *step = &p->steps[i];
    if (!step->timed) continue;
    step->timed = 0;
    ct_device *device = p->devices[step->device];
    void *origin = p->device_marks[step->device];
    double base = p->device_mark_us[step->device];
    ct_run_metadata_add(metadata, step_name(step), step_op(step), step->device,
                        base + ct_device_mark_elapsed_us(device, origin, step->mark_begin),
                        base + ct_device_mark_elapsed_us(device, origin, step->mark_end));
  }
}

/* A host copy of a fetched value, wherever it lives. */
static int fetch_result(ct_session *s, ct_plan *p, int slot, ct_tensor **result,
                        ct_status *status) {
  const ct_tensor *value = &p->values[slot];
  *result = ct_tensor_new(value->dtype, &value->shape, status);
  if (*result == NULL) return 1;
  return ct_device_copy(NULL, (*result)->data, device_of_slot(s, p, slot), value->data,
                        ct_tensor_nbytes(value), p->slot_side_mark[slot], status);
}

int ct_session_run_traced(ct_session *s, const ct_feed *feeds, int n_feeds,
                          const ct_output *fetches, int n_fetches, ct_node *const *targets,
                          int n_targets, ct_tensor **results, ct_run_metadata *metadata,
                          ct_status *status) {
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
  if (metadata) ct_run_metadata_clear(metadata);
  pthread_mutex_lock(&s->run_mutex);
  int failed = ct_session_place_new_nodes(s, status) || ct_session_init_variables(s, status);
  ct_plan *p = failed ? NULL
                      : plan_get(s, feeds, n_feeds, fetches, n_fetches, targets, n_targets, status);
  failed = p == NULL || run_plan(s, p, feeds, metadata, status);
  for (int i = 0; i < n_fetches && !failed; ++i)
    failed = fetch_result(s, p, p->fetch_slots[i], &results[i], status);
  /* A run ends when its devices are done: GPU work is queued, not waited
   * for, until here (its errors surface here too). */
  for (int d = 0; d < s->n_devices && p; ++d)
    if (p->uses_device[d] && ct_device_synchronize(s->devices[d], status)) failed = 1;
  if (p && metadata) add_device_timings(p, metadata);
  if (p) release_all(p);
  pthread_mutex_unlock(&s->run_mutex);
  if (failed)
    for (int i = 0; i < n_fetches; ++i) {
      ct_tensor_free(results[i]);
      results[i] = NULL;
    }
  return failed;
}

int ct_session_run(ct_session *s, const ct_feed *feeds, int n_feeds, const ct_output *fetches,
                   int n_fetches, ct_node *const *targets, int n_targets, ct_tensor **results,
                   ct_status *status) {
  return ct_session_run_traced(s, feeds, n_feeds, fetches, n_fetches, targets, n_targets, results,
                               NULL, status);
}
