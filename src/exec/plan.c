/* The plan's own data (plan.h): growing its steps and slots, a copy
 * step, a step's shape rule, how a run binds a step's outputs, and freeing
 * it. The passes that fill it are plan_build.c's; executor.c runs it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/plan.h"
#include "graph/op_def.h"

void ct_plan_drop_staged(ct_plan *p) {
  for (int i = 0; p->staged && i < 2 * p->n_steps; ++i) {
    ct_staged_input *st = &p->staged[i];
    if (st->data) ct_allocator_free(p->devices[p->steps[i / 2].device]->allocator, st->data);
    st->data = NULL;
    st->pending = NULL;
    st->taken = 0;
  }
}

void ct_plan_free(ct_plan *p) {
  if (p == NULL) return;
  ct_plan_drop_staged(p);
  for (int i = 0; p->staged && i < 2 * p->n_steps; ++i) {
    ct_device_mark_free(p->devices[p->steps[i / 2].device], p->staged[i].begin);
    ct_device_mark_free(p->devices[p->steps[i / 2].device], p->staged[i].end);
  }
  free(p->staged);
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
    if (p->slot_ready[slot])
      ct_device_mark_free(p->devices[p->slot_device[slot]], p->slot_ready[slot]);
  free(p->slot_ready);
  free(p->slot_side_mark);
  free(p->edges);
  free(p->transfer_steps);
  free(p->transfer_state);
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
  free(p->root_tasks);
  free(p);
}

int ct_plan_step_infer(const ct_plan_step *step, const ct_shape *in_shapes,
                       const ct_dtype *in_dtypes, ct_shape *out_shapes, ct_dtype *out_dtypes,
                       ct_status *status) {
  const ct_node *n = step->node;
  if (step->transfer != CT_TRANSFER_NONE) { /* its value's shape comes with it */
    ct_status_set(status, CT_UNIMPLEMENTED,
                  "%s: the shape of a value sent between tasks is known only when it comes; "
                  "a run with edges between tasks cannot be estimated before it runs",
                  step->copy_name);
    return 1;
  }
  if (n == NULL) { /* a copy */
    out_shapes[0] = in_shapes[0];
    out_dtypes[0] = in_dtypes[0];
    return 0;
  }
  ct_infer_ctx infer = {n->name,      &n->attrs,  n->n_inputs, in_shapes, in_dtypes,
                        n->n_outputs, out_shapes, out_dtypes,  status};
  return n->op->infer && n->op->infer(&infer) != 0;
}

ct_output_binding ct_plan_output_binding(const ct_plan *p, const ct_plan_step *step, int o,
                                         int input0_dies, int input0_fits) {
  const ct_node *n = step->node;
  if (n == NULL || o != 0) return CT_BIND_FRESH;
  if (n->variable >= 0) return CT_BIND_VARIABLE;
  if (n->constant && p->devices[p->slot_device[step->first_slot]]->ops->host_addressable)
    return CT_BIND_CONSTANT;
  if (n->op->flags & CT_OP_ALIAS_INPUT0) return CT_BIND_VIEW;
  if (!(n->op->flags & CT_OP_INPLACE) || step->n_inputs == 0 || !input0_dies || !input0_fits)
    return CT_BIND_FRESH;
  for (int j = 1; j < step->n_inputs; ++j) /* read twice: it would change under the kernel */
    if (step->input_slots[j] == step->input_slots[0]) return CT_BIND_FRESH;
  return CT_BIND_INPUT0;
}

int ct_plan_grow(void **array, int *cap, int need, size_t item) {
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

int ct_plan_add_slots(ct_plan *p, int count, int device) {
  int old_cap = p->slots_cap;
  int cap = old_cap;
  if (ct_plan_grow((void **)&p->slot_device, &cap, p->n_slots + count, sizeof *p->slot_device))
    return -1;
  cap = old_cap;
  if (ct_plan_grow((void **)&p->slot_consumers, &cap, p->n_slots + count,
                   sizeof *p->slot_consumers))
    return -1;
  p->slots_cap = cap;
  int first = p->n_slots;
  for (int i = 0; i < count; ++i) p->slot_device[first + i] = device;
  p->n_slots += count;
  return first;
}

ct_plan_step *ct_plan_add_step(ct_plan *p) {
  if (ct_plan_grow((void **)&p->steps, &p->steps_cap, p->n_steps + 1, sizeof *p->steps))
    return NULL;
  ct_plan_step *step = &p->steps[p->n_steps++];
  memset(step, 0, sizeof *step);
  return step;
}

int ct_plan_add_copy(ct_plan *p, int slot, int device, const char *source_name) {
  ct_plan_step *copy = ct_plan_add_step(p);
  int out = copy ? ct_plan_add_slots(p, 1, device) : -1;
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
  return out;
}
