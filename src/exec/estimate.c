/* Predicting a run (estimate.h): the executor's buffer rules (the plan's
 * ct_plan_output_binding, and run_step.c's release of dead inputs)
 * applied to shapes alone.
 * Devices run concurrently in a real run; the walk takes one step from each
 * worker's queue in turn (device by device, compute then communication),
 * each queue first in, first out as the workers' are, which is the
 * executor's own order on one device. */
#include "exec/estimate.h"

#include <stdlib.h>
#include <string.h>

#include "device/allocator.h"
#include "exec/plan.h"
#include "graph/op_def.h"
#include "kernels/kernel.h"

/* A buffer of the walk: its device, its bytes as the allocator holds them,
 * and the values viewing it. */
typedef struct sim_buffer {
  int device;
  size_t bytes;
  int refs;
  int owned;
} sim_buffer;

typedef struct walk {
  const ct_session *session;
  const ct_plan *plan;
  ct_run_estimate *out;
  ct_shape *shapes; /* per slot */
  ct_dtype *dtypes;
  int *buffer_of; /* per slot: its buffer, or -1 */
  int *remaining; /* per slot: consumers still to run */
  sim_buffer *buffers;
  int n_buffers;
  size_t in_use[CT_MAX_DEVICES];
  /* per worker (device * CT_WORKER_ROLES + role): a FIFO of step indices */
  int *queue[CT_MAX_DEVICES * CT_WORKER_ROLES];
  int head[CT_MAX_DEVICES * CT_WORKER_ROLES], tail[CT_MAX_DEVICES * CT_WORKER_ROLES];
  int *pending; /* per step */
} walk;

static void note_peak(walk *w, int device, size_t extra) {
  ct_device_estimate *d = &w->out->devices[device];
  const size_t now = d->persistent_bytes + w->in_use[device] + extra;
  if (now > d->peak_bytes) d->peak_bytes = now;
}

static int new_buffer(walk *w, int device, size_t nbytes, int owned) {
  sim_buffer *b = &w->buffers[w->n_buffers];
  b->device = device;
  b->bytes = owned ? ct_allocator_chunk_bytes(nbytes) : 0;
  b->refs = 1;
  b->owned = owned;
  if (owned) {
    w->in_use[device] += b->bytes;
    note_peak(w, device, 0);
  }
  return w->n_buffers++;
}

static void release(walk *w, int buffer) {
  if (buffer < 0) return;
  sim_buffer *b = &w->buffers[buffer];
  if (--b->refs == 0 && b->owned) w->in_use[b->device] -= b->bytes;
}

static void consumed(walk *w, int slot) {
  if (--w->remaining[slot] == 0) {
    release(w, w->buffer_of[slot]);
    w->buffer_of[slot] = -1;
  }
}

static size_t slot_nbytes(const walk *w, int slot) {
  const int64_t n = ct_shape_elements(&w->shapes[slot]);
  return n > 0 ? (size_t)n * ct_dtype_size(w->dtypes[slot]) : 0;
}

/* Output o's binding by the executor's rule (ct_plan_output_binding), from
 * the walk's buffers. */
static ct_output_binding binding_of(const walk *w, const ct_plan_step *step, int o) {
  int dies = 0, fits = 0;
  if (step->n_inputs > 0) {
    const int in_slot = step->input_slots[0], b = w->buffer_of[in_slot], out = step->first_slot + o;
    dies = b >= 0 && w->buffers[b].owned && w->buffers[b].refs == 1 && w->remaining[in_slot] == 1;
    fits = w->dtypes[in_slot] == w->dtypes[out] &&
           ct_shape_equal(&w->shapes[in_slot], &w->shapes[out]);
  }
  return ct_plan_output_binding(w->plan, step, o, dies, fits);
}

/* run_step.c's ct_run_bind_outputs, on the walk's buffers. */
static void bind_outputs(walk *w, const ct_plan_step *step) {
  const ct_plan *p = w->plan;
  for (int o = 0; o < step->n_outputs; ++o) {
    const int slot = step->first_slot + o, device = p->slot_device[slot];
    const int in_slot = step->n_inputs ? step->input_slots[0] : -1;
    w->remaining[slot] = p->slot_consumers[slot];
    int b = -1;
    switch (binding_of(w, step, o)) {
      case CT_BIND_VARIABLE:
      case CT_BIND_CONSTANT:
        b = new_buffer(w, device, 0, 0);
        break;
      case CT_BIND_VIEW:
        b = w->buffer_of[in_slot];
        if (b >= 0) w->buffers[b].refs++;
        break;
      case CT_BIND_INPUT0:
        b = w->buffer_of[in_slot];
        w->buffer_of[in_slot] = -1;
        break;
      case CT_BIND_FRESH:
        b = new_buffer(w, device, slot_nbytes(w, slot), 1);
        break;
    }
    w->buffer_of[slot] = b;
  }
}

/* The shapes of a step's outputs, by the op's shape rule. */
static int infer_outputs(walk *w, const ct_plan_step *step, ct_status *status) {
  ct_shape in_shapes[64], out_shapes[64];
  ct_dtype in_dtypes[64], out_dtypes[64];
  for (int j = 0; j < step->n_inputs && j < 64; ++j) {
    in_shapes[j] = w->shapes[step->input_slots[j]];
    in_dtypes[j] = w->dtypes[step->input_slots[j]];
  }
  if (ct_plan_step_infer(step, in_shapes, in_dtypes, out_shapes, out_dtypes, status)) return 1;
  for (int o = 0; o < step->n_outputs; ++o) {
    w->shapes[step->first_slot + o] = out_shapes[o];
    w->dtypes[step->first_slot + o] = out_dtypes[o];
  }
  return 0;
}

/* A step's input and output shapes (at most 64 each), and their bytes. */
static double step_shapes(const walk *w, const ct_plan_step *step, ct_shape *in_shapes,
                          ct_shape *out_shapes) {
  double bytes = 0;
  for (int j = 0; j < step->n_inputs && j < 64; ++j) {
    in_shapes[j] = w->shapes[step->input_slots[j]];
    bytes += (double)slot_nbytes(w, step->input_slots[j]);
  }
  for (int o = 0; o < step->n_outputs && o < 64; ++o) {
    out_shapes[o] = w->shapes[step->first_slot + o];
    bytes += (double)slot_nbytes(w, step->first_slot + o);
  }
  return bytes;
}

/* The step's FLOPs and bytes, and what a copy or a collective moves. */
static void count_costs(walk *w, const ct_plan_step *step, const ct_shape *in_shapes,
                        const ct_shape *out_shapes, double bytes) {
  const ct_node *n = step->node;
  ct_run_estimate *e = w->out;
  ct_step_cost *c = &e->steps[e->n_steps++];
  c->device = step->device;
  c->name = n ? n->name : step->copy_name;
  c->op = n ? n->op->name : "_Copy";
  c->dense = n && (n->op->flags & CT_OP_DENSE);
  c->flops =
      n ? n->op->flops(&n->attrs, step->n_inputs, in_shapes, step->n_outputs, out_shapes) : 0;
  c->bytes = bytes;
  ct_device_estimate *d = &e->devices[step->device];
  d->flops += c->flops;
  if (c->dense) d->dense_flops += c->flops;
  d->steps++;
  if (n == NULL) {
    d->copied_in_bytes += bytes / 2;
    e->copied_bytes += bytes / 2;
  } else if (strcmp(n->op->name, "AllReduce") == 0) {
    e->all_reduce_bytes += bytes / 2;
  } else if (strcmp(n->op->name, "CollectiveReduce") == 0) {
    e->collective_bytes += bytes / 2;
  } else if (strcmp(n->op->name, "CompressedAllReduce") == 0) {
    e->collective_bytes += (double)ct_shape_elements(&in_shapes[0]); /* packed bytes */
  }
}

/* run_step.c's ct_run_step, on shapes: outputs, the kernel's scratch at its
 * height, then the inputs' release and that of unread outputs. */
static int walk_step(walk *w, const ct_plan_step *step, ct_status *status) {
  const ct_plan *p = w->plan;
  if (step->n_outputs == 0) return 0; /* NoOp */
  if (infer_outputs(w, step, status)) return 1;
  bind_outputs(w, step);
  ct_shape in_shapes[64], out_shapes[64];
  count_costs(w, step, in_shapes, out_shapes, step_shapes(w, step, in_shapes, out_shapes));
  if (step->node) {
    size_t blocks[4] = {0}, scratch = 0;
    const int n_blocks = ct_kernel_scratch_estimate(step->node->op->name, p->devices[step->device],
                                                    &step->node->attrs, in_shapes, step->n_inputs,
                                                    out_shapes, blocks);
    for (int k = 0; k < n_blocks; ++k) scratch += ct_allocator_chunk_bytes(blocks[k]);
    if (scratch) note_peak(w, step->device, scratch);
  }
  for (int j = 0; j < step->n_inputs; ++j) consumed(w, step->input_slots[j]);
  for (int o = 0; o < step->n_outputs; ++o) {
    const int slot = step->first_slot + o;
    if (p->slot_consumers[slot] > 0) continue;
    w->remaining[slot] = 1;
    consumed(w, slot);
  }
  return 0;
}

static void enqueue(walk *w, int index) {
  const ct_plan_step *step = &w->plan->steps[index];
  const int q = step->device * CT_WORKER_ROLES + (int)step->role;
  w->queue[q][w->tail[q]++] = index;
}

/* Every step, a step from each worker in turn; 0 or status. */
static int walk_plan(walk *w, ct_status *status) {
  const ct_plan *p = w->plan;
  for (int i = 0; i < p->n_steps; ++i)
    if ((w->pending[i] = p->steps[i].n_deps) == 0) enqueue(w, i);
  const int workers = p->n_devices * CT_WORKER_ROLES;
  for (int done = 0, progress = 1; done < p->n_steps && progress;) {
    progress = 0;
    for (int q = 0; q < workers; ++q) {
      if (w->head[q] == w->tail[q]) continue;
      const int index = w->queue[q][w->head[q]++];
      const ct_plan_step *step = &p->steps[index];
      if (walk_step(w, step, status)) return 1;
      for (int c = 0; c < step->n_consumers; ++c)
        if (--w->pending[step->consumers[c]] == 0) enqueue(w, step->consumers[c]);
      ++done, progress = 1;
    }
  }
  return 0;
}

/* Variables and optimizer slots, where the session keeps them. */
static void count_variables(const ct_session *s, ct_run_estimate *e) {
  const ct_graph *g = s->graph;
  for (int v = 0; v < g->n_variables; ++v) {
    ct_device_estimate *d = &e->devices[ct_session_variable_device(s, v)];
    size_t bytes = 0; /* a variable's bytes were counted when it was made */
    ct_shape_bytes(&g->variables[v].shape, CT_F32, &bytes);
    if (g->variables[v].colocate_with >= 0)
      d->optimizer_bytes += bytes;
    else
      d->parameter_bytes += bytes;
    d->persistent_bytes += ct_allocator_chunk_bytes(bytes);
  }
  for (int i = 0; i < e->n_devices; ++i) e->devices[i].peak_bytes = e->devices[i].persistent_bytes;
}

static int walk_init(walk *w, const ct_plan *p, const ct_feed *feeds) {
  const size_t slots = (size_t)p->n_slots + 1, steps = (size_t)p->n_steps + 1;
  w->shapes = calloc(slots, sizeof *w->shapes);
  w->dtypes = calloc(slots, sizeof *w->dtypes);
  w->buffer_of = malloc(slots * sizeof *w->buffer_of);
  w->remaining = calloc(slots, sizeof *w->remaining);
  w->buffers = calloc(slots + 1, sizeof *w->buffers);
  w->pending = calloc(steps, sizeof *w->pending);
  w->out->steps = calloc(steps, sizeof *w->out->steps);
  int failed = !w->shapes || !w->dtypes || !w->buffer_of || !w->remaining || !w->buffers ||
               !w->pending || !w->out->steps;
  for (int q = 0; q < p->n_devices * CT_WORKER_ROLES && !failed; ++q)
    failed = (w->queue[q] = malloc(steps * sizeof **w->queue)) == NULL;
  if (failed) return 1;
  for (size_t slot = 0; slot < slots; ++slot) w->buffer_of[slot] = -1;
  for (int i = 0; i < p->n_feeds; ++i) {
    const int slot = p->feed_slots[i];
    w->shapes[slot] = feeds[i].value->shape;
    w->dtypes[slot] = feeds[i].value->dtype;
    w->remaining[slot] = p->slot_consumers[slot];
  }
  return 0;
}

static void walk_free(walk *w) {
  free(w->shapes), free(w->dtypes), free(w->buffer_of), free(w->remaining), free(w->buffers);
  free(w->pending);
  for (int q = 0; q < CT_MAX_DEVICES * CT_WORKER_ROLES; ++q) free(w->queue[q]);
}

int ct_session_estimate_run(ct_session *s, const ct_feed *feeds, int n_feeds,
                            const ct_output *fetches, int n_fetches, ct_node *const *targets,
                            int n_targets, ct_run_estimate *e, ct_status *status) {
  memset(e, 0, sizeof *e);
  e->n_devices = s->n_devices;
  pthread_mutex_lock(&s->run_mutex);
  const ct_plan *p =
      ct_session_place_new_nodes(s, status)
          ? NULL
          : ct_plan_get(s, feeds, n_feeds, fetches, n_fetches, targets, n_targets, status);
  walk w;
  memset(&w, 0, sizeof w);
  w.session = s, w.plan = p, w.out = e;
  int failed = p == NULL;
  if (!failed && walk_init(&w, p, feeds)) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory predicting a run");
    failed = 1;
  }
  if (!failed) count_variables(s, e);
  failed = failed || walk_plan(&w, status);
  walk_free(&w);
  pthread_mutex_unlock(&s->run_mutex);
  return failed;
}

void ct_run_estimate_free(ct_run_estimate *e) {
  free(e->steps);
  e->steps = NULL;
  e->n_steps = 0;
}
