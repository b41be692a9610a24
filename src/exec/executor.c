/* Plans and runs.
 *
 * A plan is made once per distinct (feeds, fetches, targets) and cached:
 *   1. mark the nodes the fetches and targets need, stopping at fed nodes;
 *   2. order them (creation order is topological) and find each kernel;
 *   3. count each value's consumers, so a run can return a buffer to the
 *      allocator as soon as its last consumer has run.
 * A run walks the plan: shape rule on the real input shapes, outputs from
 * the device allocator (or a view of input 0 for Reshape-like ops, or the
 * variable's storage), the kernel, then the release of dead inputs. */
#include <omp.h>
#include <xmmintrin.h>
#include <pmmintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec_internal.h"
#include "ops/op_def.h"

typedef struct plan_step {
  ct_node *node;
  ct_kernel_fn kernel;
  int *input_slots;      /* value slot of each input */
  int first_slot;        /* slot of output 0; outputs are consecutive */
  ct_kernel_state state;
} plan_step;

struct ct_plan {
  /* the key */
  int n_feeds, n_fetches, n_targets;
  ct_output *feed_outputs;
  ct_output *fetch_outputs;
  ct_node **targets;
  int graph_nodes;        /* graph size when planned */
  /* the schedule */
  plan_step *steps;
  int n_steps;
  int n_slots;
  int *consumers;         /* per slot: inputs reading it + fetches of it */
  int *feed_slots;        /* per feed */
  int *fetch_slots;       /* per fetch */
  /* per-run scratch, sized once */
  ct_tensor *values;
  ct_buffer **value_buffers;
  ct_buffer *buffers;     /* one per slot at most */
  int *remaining;
};

void ct_plan_free(ct_plan *p) {
  if (p == NULL) return;
  for (int i = 0; i < p->n_steps; ++i) {
    free(p->steps[i].input_slots);
    if (p->steps[i].state.free_fn) p->steps[i].state.free_fn(p->steps[i].state.data);
  }
  free(p->steps);
  free(p->feed_outputs);
  free(p->fetch_outputs);
  free(p->targets);
  free(p->consumers);
  free(p->feed_slots);
  free(p->fetch_slots);
  free(p->values);
  free(p->value_buffers);
  free(p->buffers);
  free(p->remaining);
  free(p);
}

static int outputs_equal(const ct_output *a, const ct_output *b, int n) {
  for (int i = 0; i < n; ++i)
    if (a[i].node != b[i].node || a[i].index != b[i].index) return 0;
  return 1;
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
  if (!outputs_equal(p->fetch_outputs, fetches, n_fetches)) return 0;
  for (int i = 0; i < n_targets; ++i)
    if (p->targets[i] != targets[i]) return 0;
  return 1;
}

static ct_plan *plan_build(ct_session *s, const ct_feed *feeds, int n_feeds,
                           const ct_output *fetches, int n_fetches, ct_node *const *targets,
                           int n_targets, ct_status *status) {
  const ct_graph *g = s->graph;
  const int n_nodes = g->n_nodes;
  ct_plan *p = calloc(1, sizeof *p);
  unsigned char *needed = calloc((size_t)n_nodes, 1);
  unsigned char *fed = calloc((size_t)n_nodes, 1);
  int *slot_base = calloc((size_t)n_nodes, sizeof *slot_base);
  ct_node **stack = calloc((size_t)n_nodes + 1, sizeof *stack);
  if (!p || !needed || !fed || !slot_base || !stack) goto oom;
  p->graph_nodes = n_nodes;
  p->n_feeds = n_feeds;
  p->n_fetches = n_fetches;
  p->n_targets = n_targets;
  p->feed_outputs = calloc((size_t)n_feeds + 1, sizeof *p->feed_outputs);
  p->fetch_outputs = calloc((size_t)n_fetches + 1, sizeof *p->fetch_outputs);
  p->targets = calloc((size_t)n_targets + 1, sizeof *p->targets);
  if (!p->feed_outputs || !p->fetch_outputs || !p->targets) goto oom;
  for (int i = 0; i < n_feeds; ++i) {
    p->feed_outputs[i] = feeds[i].output;
    fed[feeds[i].output.node->id] = 1;
  }
  memcpy(p->fetch_outputs, fetches, (size_t)n_fetches * sizeof *fetches);
  memcpy(p->targets, targets, (size_t)n_targets * sizeof *targets);

  /* Pass 1: what the fetches and targets need. */
  int top = 0;
  for (int i = 0; i < n_fetches; ++i) stack[top++] = fetches[i].node, needed[fetches[i].node->id] = 1;
  for (int i = 0; i < n_targets; ++i)
    if (!needed[targets[i]->id]) stack[top++] = targets[i], needed[targets[i]->id] = 1;
  while (top > 0) {
    ct_node *n = stack[--top];
    if (fed[n->id]) continue;
    for (int j = 0; j < n->n_inputs + n->n_control; ++j) {
      ct_node *in = j < n->n_inputs ? n->inputs[j].node : n->control[j - n->n_inputs];
      if (!needed[in->id]) {
        needed[in->id] = 1;
        stack[top++] = in;
      }
    }
  }

  /* Pass 2: the schedule in creation order; slots for every output. */
  int n_slots = 0, n_steps = 0;
  for (int id = 0; id < n_nodes; ++id) {
    if (!needed[id]) continue;
    slot_base[id] = n_slots;
    n_slots += g->nodes[id]->n_outputs;
    if (!fed[id]) n_steps++;
  }
  p->n_slots = n_slots;
  p->steps = calloc((size_t)n_steps + 1, sizeof *p->steps);
  p->consumers = calloc((size_t)n_slots + 1, sizeof *p->consumers);
  p->feed_slots = calloc((size_t)n_feeds + 1, sizeof *p->feed_slots);
  p->fetch_slots = calloc((size_t)n_fetches + 1, sizeof *p->fetch_slots);
  p->values = calloc((size_t)n_slots + 1, sizeof *p->values);
  p->value_buffers = calloc((size_t)n_slots + 1, sizeof *p->value_buffers);
  p->buffers = calloc((size_t)n_slots + 1, sizeof *p->buffers);
  p->remaining = calloc((size_t)n_slots + 1, sizeof *p->remaining);
  if (!p->steps || !p->consumers || !p->feed_slots || !p->fetch_slots || !p->values ||
      !p->value_buffers || !p->buffers || !p->remaining)
    goto oom;
  for (int id = 0; id < n_nodes; ++id) {
    if (!needed[id] || fed[id]) continue;
    ct_node *n = g->nodes[id];
    if (n->op == ct_op_find("Placeholder")) {
      ct_status_set(status, CT_INVALID_ARGUMENT,
                    "you must feed a value for placeholder '%s' (%s)", n->name,
                    ct_dtype_name(n->dtypes[0]));
      goto fail;
    }
    plan_step *step = &p->steps[p->n_steps++];
    step->node = n;
    step->first_slot = slot_base[id];
    step->kernel = n->op->infer == NULL && n->n_outputs == 0 ? NULL : ct_kernel_find(n->op->name, CT_DEVICE_CPU);
    if (step->kernel == NULL && n->n_outputs > 0) {
      ct_status_set(status, CT_UNIMPLEMENTED, "no CPU kernel for op %s (node '%s')",
                    n->op->name, n->name);
      goto fail;
    }
    step->input_slots = calloc((size_t)n->n_inputs + 1, sizeof *step->input_slots);
    if (step->input_slots == NULL) goto oom;
    for (int j = 0; j < n->n_inputs; ++j) {
      int slot = slot_base[n->inputs[j].node->id] + n->inputs[j].index;
      step->input_slots[j] = slot;
      p->consumers[slot]++;
    }
  }
  for (int i = 0; i < n_feeds; ++i)
    p->feed_slots[i] = slot_base[feeds[i].output.node->id] + feeds[i].output.index;
  for (int i = 0; i < n_fetches; ++i) {
    p->fetch_slots[i] = slot_base[fetches[i].node->id] + fetches[i].index;
    p->consumers[p->fetch_slots[i]]++;
  }
  free(needed);
  free(fed);
  free(slot_base);
  free(stack);
  return p;
oom:
  ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory planning a run");
fail:
  free(needed);
  free(fed);
  free(slot_base);
  free(stack);
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
  if (s->n_plans == s->plans_cap) {
    int cap = s->plans_cap ? s->plans_cap * 2 : 8;
    ct_plan **plans = realloc(s->plans, (size_t)cap * sizeof *plans);
    if (plans == NULL) {
      ct_plan_free(p);
      ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory caching a plan");
      return NULL;
    }
    s->plans = plans;
    s->plans_cap = cap;
  }
  s->plans[s->n_plans++] = p;
  return p;
}

/* ---- running -------------------------------------------------------------- */

static void buffer_release(ct_buffer *b) {
  if (b == NULL || --b->refs > 0) return;
  if (b->owned) ct_allocator_free(b->device->allocator, b->data);
  b->data = NULL;
}

/* Drops one consumer of a slot; the last one returns its buffer. */
static void slot_consumed(ct_plan *p, int slot) {
  if (--p->remaining[slot] == 0) {
    buffer_release(p->value_buffers[slot]);
    p->value_buffers[slot] = NULL;
  }
}

static int check_feed(const ct_feed *feed, ct_status *status) {
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

/* Gives a step its outputs: storage of a variable or constant, a view of
 * input 0, or fresh buffers from the device. */
static int bind_outputs(ct_session *s, ct_plan *p, plan_step *step, ct_status *status) {
  ct_node *n = step->node;
  for (int o = 0; o < n->n_outputs; ++o) {
    int slot = step->first_slot + o;
    ct_tensor *value = &p->values[slot];
    p->remaining[slot] = p->consumers[slot];
    ct_buffer *b = &p->buffers[slot];
    memset(b, 0, sizeof *b);
    b->device = s->cpu;
    b->refs = 1;
    if (n->variable >= 0 && o == 0) {
      value->data = s->variables[n->variable]->data;
    } else if (n->constant && o == 0) {
      value->data = n->constant->data;
    } else if ((n->op->flags & CT_OP_ALIAS_INPUT0) && o == 0) {
      int in_slot = step->input_slots[0];
      value->data = p->values[in_slot].data;
      b = p->value_buffers[in_slot];
      if (b) b->refs++;
    } else {
      size_t nbytes = (size_t)ct_shape_elements(&value->shape) * ct_dtype_size(value->dtype);
      b->data = ct_allocator_alloc(s->cpu->allocator, nbytes, status);
      if (b->data == NULL) return 1;
      b->owned = 1;
      value->data = b->data;
    }
    p->value_buffers[slot] = b;
  }
  return 0;
}

/* Returns every buffer a failed or finished run still holds. */
static void release_all(ct_plan *p) {
  for (int slot = 0; slot < p->n_slots; ++slot) {
    while (p->value_buffers[slot] && p->remaining[slot] > 0) slot_consumed(p, slot);
    p->value_buffers[slot] = NULL;
    p->remaining[slot] = 0;
  }
}

static int run_step(ct_session *s, ct_plan *p, plan_step *step, ct_status *status) {
  ct_node *n = step->node;
  if (n->n_outputs == 0) return 0; /* NoOp */
  ct_tensor inputs[64];
  ct_shape in_shapes[64];
  ct_dtype in_dtypes[64];
  for (int j = 0; j < n->n_inputs; ++j) {
    inputs[j] = p->values[step->input_slots[j]];
    in_shapes[j] = inputs[j].shape;
    in_dtypes[j] = inputs[j].dtype;
  }
  ct_shape out_shapes[64];
  ct_dtype out_dtypes[64];
  ct_infer_ctx infer = {n->name, &n->attrs, n->n_inputs, in_shapes, in_dtypes,
                        n->n_outputs, out_shapes, out_dtypes, status};
  if (n->op->infer && n->op->infer(&infer) != 0) return 1;
  for (int o = 0; o < n->n_outputs; ++o) {
    p->values[step->first_slot + o].shape = out_shapes[o];
    p->values[step->first_slot + o].dtype = out_dtypes[o];
    p->values[step->first_slot + o].owns_data = 0;
  }
  if (bind_outputs(s, p, step, status)) return 1;
  ct_kernel_ctx ctx = {n, &n->attrs, n->n_inputs, inputs, n->n_outputs,
                       &p->values[step->first_slot], s->cpu, s->cpu->threads, s->step,
                       &step->state, status, {NULL}, 0};
  step->kernel(&ctx);
  for (int k = 0; k < ctx.n_scratch; ++k) ct_allocator_free(s->cpu->allocator, ctx.scratch[k]);
  if (status->code != CT_OK) return 1;
  for (int j = 0; j < n->n_inputs; ++j) slot_consumed(p, step->input_slots[j]);
  for (int o = 0; o < n->n_outputs; ++o)
    if (p->consumers[step->first_slot + o] == 0) {
      p->remaining[step->first_slot + o] = 1;
      slot_consumed(p, step->first_slot + o);
    }
  return 0;
}

/* Makes the calling thread's OpenMP team the device's workers, with
 * denormals flushed to zero on each of them (as TensorFlow does): gradients
 * that decay into denormals otherwise slow every kernel several times. The
 * team's threads are reused across parallel regions, so the setting stays. */
static void enter_device_threads(const ct_device *device) {
  omp_set_num_threads(device->threads);
#pragma omp parallel num_threads(device->threads)
  {
    _MM_SET_FLUSH_ZERO_MODE(_MM_FLUSH_ZERO_ON);
    _MM_SET_DENORMALS_ZERO_MODE(_MM_DENORMALS_ZERO_ON);
  }
}

int ct_session_run(ct_session *s, const ct_feed *feeds, int n_feeds, const ct_output *fetches,
                   int n_fetches, ct_node *const *targets, int n_targets, ct_tensor **results,
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
    if (feeds[i].output.node == NULL || check_feed(&feeds[i], status)) {
      ct_status_set(status, CT_INVALID_ARGUMENT, "feed %d has no node", i);
      return 1;
    }
  if (ct_session_init_variables(s, status)) return 1;
  ct_plan *p = plan_get(s, feeds, n_feeds, fetches, n_fetches, targets, n_targets, status);
  if (p == NULL) return 1;

  for (int i = 0; i < n_feeds; ++i) {
    int slot = p->feed_slots[i];
    p->values[slot] = *feeds[i].value;
    p->values[slot].owns_data = 0;
    p->value_buffers[slot] = NULL;
    p->remaining[slot] = p->consumers[slot];
  }
  enter_device_threads(s->cpu);
  int failed = 0;
  for (int i = 0; i < p->n_steps && !failed; ++i) failed = run_step(s, p, &p->steps[i], status);
  for (int i = 0; i < n_fetches && !failed; ++i) {
    results[i] = ct_tensor_clone(&p->values[p->fetch_slots[i]], status);
    failed = results[i] == NULL;
  }
  release_all(p);
  if (failed)
    for (int i = 0; i < n_fetches; ++i) {
      ct_tensor_free(results[i]);
      results[i] = NULL;
    }
  return failed;
}
