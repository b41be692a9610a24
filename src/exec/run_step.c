/* One step of a run (run_step.h). */
#include "exec/run_step.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "exec/staging.h"
#include "graph/op_def.h"

static void buffer_release(ct_buffer *b) {
  if (b == NULL || atomic_fetch_sub((atomic_int *)&b->refs, 1) > 1) return;
  if (b->owned) ct_allocator_free(b->device->allocator, b->data);
  b->data = NULL;
}

/* Drops one consumer of a slot; the last one returns its buffer. */
void ct_run_slot_consumed(ct_plan *p, int slot) {
  if (atomic_fetch_sub(&p->remaining[slot], 1) == 1) {
    buffer_release(p->value_buffers[slot]);
    p->value_buffers[slot] = NULL;
  }
}

/* Output o's binding by the plan's rule (ct_plan_output_binding), from
 * the run's buffers: whether input 0 dies with this step (owned by its
 * device, no other view of it, no other consumer left) and fits output o. */
static ct_output_binding binding_of(const ct_plan *p, const ct_plan_step *step, int o) {
  int dies = 0, fits = 0;
  if (step->n_inputs > 0) {
    const int in_slot = step->input_slots[0];
    const ct_buffer *b = p->value_buffers[in_slot];
    dies = b && b->owned && atomic_load((atomic_int *)&b->refs) == 1 &&
           atomic_load(&p->remaining[in_slot]) == 1;
    const ct_tensor *in = &p->values[in_slot], *out = &p->values[step->first_slot + o];
    fits = in->dtype == out->dtype && ct_shape_equal(&in->shape, &out->shape);
  }
  return ct_plan_output_binding(p, step, o, dies, fits);
}

/* A fresh buffer for output o (a copy's may be the one the last run staged
 * ahead; a constant on a device that is not host memory is uploaded into
 * it, each run). */
static int bind_fresh(ct_session *s, ct_plan *p, ct_plan_step *step, int o, ct_buffer *b,
                      ct_status *status) {
  const ct_node *n = step->node;
  ct_tensor *value = &p->values[step->first_slot + o];
  void *staged = n == NULL && step->transfer == CT_TRANSFER_NONE
                     ? ct_staging_take(s, p, step, &p->values[step->input_slots[0]])
                     : NULL;
  size_t nbytes = 0;
  if (ct_shape_check_bytes(&value->shape, value->dtype, "a value of the step", &nbytes, status))
    return 1;
  b->data = staged ? staged : ct_allocator_alloc(b->device->allocator, nbytes, status);
  if (b->data == NULL) return 1;
  b->owned = 1;
  value->data = b->data;
  return n && n->constant && o == 0 && !staged &&
         ct_device_copy(b->device, b->data, NULL, n->constant->data, nbytes, NULL, status);
}

int ct_run_bind_outputs(ct_session *s, ct_plan *p, ct_plan_step *step, ct_status *status) {
  const ct_node *n = step->node;
  for (int o = 0; o < step->n_outputs; ++o) {
    const int slot = step->first_slot + o, in_slot = step->n_inputs ? step->input_slots[0] : -1;
    ct_tensor *value = &p->values[slot];
    atomic_store(&p->remaining[slot], p->slot_consumers[slot]);
    ct_buffer *b = &p->buffers[slot];
    memset(b, 0, sizeof *b);
    b->device = s->devices[p->slot_device[slot]];
    b->refs = 1;
    switch (binding_of(p, step, o)) {
      case CT_BIND_VARIABLE:
        value->data = s->variables[n->variable]->data;
        break;
      case CT_BIND_CONSTANT:
        value->data = n->constant->data;
        break;
      case CT_BIND_VIEW:
        value->data = p->values[in_slot].data;
        b = p->value_buffers[in_slot];
        if (b) atomic_fetch_add((atomic_int *)&b->refs, 1);
        break;
      case CT_BIND_INPUT0:
        b = p->value_buffers[in_slot];
        value->data = b->data;
        p->value_buffers[in_slot] = NULL; /* the output owns it now */
        break;
      case CT_BIND_FRESH:
        if (bind_fresh(s, p, step, o, b, status)) {
          if (b->data) p->value_buffers[slot] = b; /* the run's end gives it back */
          return 1;
        }
        break;
    }
    p->value_buffers[slot] = b;
  }
  return 0;
}

/* Where a value lives: a device, or NULL for host memory (a feed). */
ct_device *ct_run_slot_device(const ct_session *s, const ct_plan *p, int slot) {
  return p->slot_device[slot] >= 0 ? s->devices[p->slot_device[slot]] : NULL;
}

/* Inputs finished on another stream than their device's compute stream:
 * that device's work from now on (this step's, and the buffer's next
 * owner's once it is released) waits for them. */
static int wait_for_side_marks(ct_session *s, ct_plan *p, const ct_plan_step *step,
                               ct_status *status) {
  for (int j = 0; j < step->n_inputs; ++j) {
    const int slot = step->input_slots[j];
    if (p->slot_side_mark[slot] &&
        ct_device_wait_mark(ct_run_slot_device(s, p, slot), p->slot_side_mark[slot], status))
      return 1;
  }
  return 0;
}

/* A step's name and op in the timeline. */
static const char *step_name(const ct_plan_step *step) {
  return step->node ? step->node->name : step->copy_name;
}
static const char *step_op(const ct_plan_step *step) {
  return step->node                           ? step->node->op->name
         : step->transfer == CT_TRANSFER_SEND ? "_Send"
         : step->transfer == CT_TRANSFER_RECV ? "_Recv"
                                              : "_Copy";
}

/* session.check_numerics: the first NaN or Inf among the step's f32
 * outputs (in host memory) fails the run naming the op and its device. */
static int check_numerics(const ct_session *s, const ct_plan *p, const ct_plan_step *step,
                          ct_status *status) {
  if (!s->options.check_numerics || !s->devices[step->device]->ops->host_addressable) return 0;
  for (int o = 0; o < step->n_outputs; ++o) {
    const ct_tensor *t = &p->values[step->first_slot + o];
    if (t->dtype != CT_F32 || t->data == NULL) continue;
    const float *x = t->data;
    const int64_t n = ct_shape_elements(&t->shape);
    for (int64_t i = 0; i < n; ++i) {
      if (isfinite(x[i])) continue;
      ct_status_set(status, CT_FAILED_PRECONDITION,
                    "check_numerics: %s (%s) on %s wrote %s to output %d, element %lld, at step "
                    "%llu; look at its inputs, or lower the learning rate",
                    step_name(step), step_op(step), s->devices[step->device]->name,
                    isnan(x[i]) ? "NaN" : "Inf", o, (long long)i, (unsigned long long)s->step + 1);
      return 1;
    }
  }
  return 0;
}

/* A copy step: the value copied onto the step's device, or, when the last
 * run copied it ahead, a wait for that copy. */
static int run_copy(ct_session *s, ct_plan *p, ct_plan_step *step, const ct_tensor *input,
                    ct_status *status) {
  ct_device *device = s->devices[step->device];
  const int source = step->input_slots[0];
  /* into host memory, the copy waits for the value's own mark */
  void *ready = p->slot_side_mark[source] ? p->slot_side_mark[source] : p->slot_ready[source];
  void *staged = ct_staging_taken(s, p, step); /* copied ahead: its readers wait for that */
  step->unstaged = staged != NULL;
  return (staged ? ct_device_wait_mark(device, staged, status)
                 : ct_device_copy(device, p->values[step->first_slot].data,
                                  ct_run_slot_device(s, p, source), input->data,
                                  ct_tensor_nbytes(input), ready, status)) ||
         ct_device_step_done(device, step_name(step), step_op(step), status);
}

/* A node's step: its kernel, then the next run's copies ahead on its
 * device (staging.h). */
static int run_kernel(ct_session *s, ct_plan *p, ct_plan_step *step, ct_tensor *inputs,
                      ct_status *status) {
  ct_node *n = step->node;
  ct_device *device = s->devices[step->device];
  /* only a multi-device op reads its inputs off its own device */
  ct_device *input_devices[64];
  const int multi = (n->op->flags & CT_OP_MULTI_DEVICE) != 0;
  for (int j = 0; multi && j < step->n_inputs; ++j)
    input_devices[j] = ct_run_slot_device(s, p, step->input_slots[j]);
  void *output_marks[64] = {NULL};
  ct_kernel_ctx ctx = {n,
                       &n->attrs,
                       step->n_inputs,
                       inputs,
                       step->n_outputs,
                       &p->values[step->first_slot],
                       device,
                       device->threads,
                       s->step,
                       &step->state,
                       status,
                       {NULL},
                       0,
                       multi ? input_devices : NULL,
                       output_marks};
  step->kernel(&ctx);
  for (int k = 0; k < ctx.n_scratch; ++k) ct_allocator_free(device->allocator, ctx.scratch[k]);
  if (status->code != CT_OK || ct_device_step_done(device, step_name(step), step_op(step), status))
    return 1;
  if (check_numerics(s, p, step, status)) return 1;
  /* the next run's inputs copied in beside this run's kernels (staging.h) */
  if (ct_staging_issue(s, p, step->device, status)) return 1;
  for (int o = 0; o < step->n_outputs; ++o)
    p->slot_side_mark[step->first_slot + o] = output_marks[o];
  return 0;
}

int ct_run_step(ct_session *s, ct_plan *p, ct_plan_step *step, ct_status *status) {
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
  if (ct_plan_step_infer(step, in_shapes, in_dtypes, out_shapes, out_dtypes, status)) return 1;
  for (int o = 0; o < step->n_outputs; ++o) {
    ct_tensor *value = &p->values[step->first_slot + o];
    value->shape = out_shapes[o];
    value->dtype = out_dtypes[o];
    value->owns_data = 0;
  }
  if (ct_run_bind_outputs(s, p, step, status) || wait_for_side_marks(s, p, step, status) ||
      (step->node ? run_kernel(s, p, step, inputs, status)
                  : run_copy(s, p, step, &inputs[0], status)))
    return 1;
  for (int j = 0; j < step->n_inputs; ++j) ct_run_slot_consumed(p, step->input_slots[j]);
  for (int o = 0; o < step->n_outputs; ++o) {
    const int slot = step->first_slot + o;
    if (p->slot_consumers[slot] > 0) continue;
    /* unread: its buffer goes back now, so its device's later work (the
     * buffer's next owner) must come after the writes still pending */
    if (ct_device_wait_mark(ct_run_slot_device(s, p, slot), p->slot_side_mark[slot], status))
      return 1;
    atomic_store(&p->remaining[slot], 1);
    ct_run_slot_consumed(p, slot);
  }
  return 0;
}

/* The step's event in the run's timeline: what it ran, where, when, and
 * the shapes it read and wrote. */
void ct_run_record_event(ct_plan *p, ct_run_metadata *metadata, const ct_plan_step *step,
                         double start_us, double end_us) {
  char shapes[512];
  size_t used = 0;
  long long bytes = 0;
  for (int j = 0; j < step->n_inputs + 1 + step->n_outputs && used < sizeof shapes; ++j) {
    char one[96] = "->";
    const int output = j - step->n_inputs - 1;
    if (j != step->n_inputs) {
      const ct_tensor *t =
          &p->values[output < 0 ? step->input_slots[j] : step->first_slot + output];
      ct_shape_str(&t->shape, one, sizeof one);
      /* a send's bytes are those it sends */
      if (output >= 0 || step->transfer == CT_TRANSFER_SEND)
        bytes += (long long)ct_tensor_nbytes(t);
    }
    used += (size_t)snprintf(shapes + used, sizeof shapes - used, "%s%s", j ? " " : "", one);
  }
  const ct_node *n = step->node;
  /* a copy that took a staged value: "_Unstage/<source>", not "_Copy/..." */
  char unstaged[160];
  if (step->unstaged)
    snprintf(unstaged, sizeof unstaged, "_Unstage/%s", step->copy_name + strlen("_Copy/"));
  const int bucket = n ? n->all_reduce_bucket : -1;
  const int collective =
      n && ((n->op->flags & (CT_OP_MULTI_DEVICE | CT_OP_WAITS_FOR_PEERS)) || bucket >= 0);
  const ct_timeline_event event = {step->unstaged ? unstaged : step_name(step),
                                   step->unstaged ? "_Unstage" : step_op(step),
                                   step->device,
                                   step->node == NULL ? CT_TIMELINE_COPY
                                   : collective       ? CT_TIMELINE_COLLECTIVE
                                                      : CT_TIMELINE_COMPUTE,
                                   start_us,
                                   end_us,
                                   bytes,
                                   bucket,
                                   shapes};
  ct_run_metadata_add(metadata, &event);
}

/* Returns every buffer a failed or finished run still holds: each slot that
 * still has a buffer holds one reference to it. */
void ct_run_release_all(ct_plan *p) {
  for (int slot = 0; slot < p->n_slots; ++slot) {
    buffer_release(p->value_buffers[slot]);
    p->value_buffers[slot] = NULL;
    atomic_store(&p->remaining[slot], 0);
  }
}
