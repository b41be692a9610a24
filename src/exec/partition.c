/* Pass 3 and pass 5 of building a plan (plan_build.c): where values cross
 * devices. A step reads a value in place when it lives on its own device,
 * or when both are host memory and nothing changes the value meanwhile;
 * otherwise the plan gets a copy step on the reading device, one per value
 * and device. A multi-device op (AllReduce) reads each input on its own
 * device when that is of the op's device type, and leaves output k where
 * input k is. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/plan.h"
#include "graph/op_def.h"

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
 * values of host-addressable devices (CPUs) are in host memory, which such
 * devices share, and a
 * value that no op changes can be read where it is (a variable cannot: its
 * update may run while another device still reads it, so that device gets
 * its own copy). */
static int local_slot(ct_plan *p, int slot, int device, int n_devices, int shared, int **copy_of,
                      int *copy_of_cap, const char *source_name) {
  if (p->slot_device[slot] == device || shared) return slot;
  int key = slot * n_devices + device;
  int old = *copy_of_cap;
  if (ct_plan_grow((void **)copy_of, copy_of_cap, key + 1, sizeof **copy_of)) return -1;
  for (int i = old; i < *copy_of_cap; ++i) (*copy_of)[i] = -1;
  if ((*copy_of)[key] >= 0) return (*copy_of)[key];
  int out = ct_plan_add_copy(p, slot, device, source_name);
  if (out < 0) return -1;
  (*copy_of)[key] = out;
  return out;
}

int ct_plan_partition(ct_plan *p, const int *slot_base, ct_status *status) {
  ct_device *const *devices = p->devices;
  int *copy_of = NULL, copy_of_cap = 0;
  const int n_node_steps = p->n_steps;
  for (int i = 0; i < n_node_steps; ++i) {
    ct_node *n = p->steps[i].node;
    int *inputs = calloc((size_t)n->n_inputs + 1, sizeof *inputs);
    if (inputs == NULL) goto oom;
    p->steps[i].input_slots = inputs;
    for (int j = 0; j < n->n_inputs; ++j) {
      const ct_node *source = n->inputs[j].node;
      const int slot = slot_base[source->id] + n->inputs[j].index;
      const int from = p->slot_device[slot], to = p->steps[i].device;
      const int host_value = from < 0 || (devices[from]->ops->host_addressable &&
                                          !is_variable_storage(source, n->inputs[j].index));
      /* a multi-device op reads each input where it is when that is a
       * device of its own type (its kernel's); a feed, or a value of
       * another type, is copied to its device like any input */
      const int part_in_place = (n->op->flags & CT_OP_MULTI_DEVICE) && from >= 0 &&
                                devices[from]->ops == devices[to]->ops;
      const int shared = part_in_place || (host_value && devices[to]->ops->host_addressable);
      const int local =
          local_slot(p, slot, to, p->n_devices, shared, &copy_of, &copy_of_cap, source->name);
      if (local < 0) goto oom;
      p->steps[i].input_slots[j] = local; /* p->steps may have moved: index again */
      p->slot_consumers[local]++;
    }
    if (n->op->flags & CT_OP_MULTI_DEVICE) /* output k lives where input k does */
      for (int k = 0; k < n->n_outputs && k < n->n_inputs; ++k)
        if (p->slot_device[p->steps[i].input_slots[k]] >= 0)
          p->slot_device[p->steps[i].first_slot + k] = p->slot_device[p->steps[i].input_slots[k]];
  }
  free(copy_of);
  return 0;
oom:
  free(copy_of);
  ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory planning a run");
  return 1;
}

/* A value copied into host memory off a device that queues its work gets
 * a mark, so that the copy waits for its producer alone, not for the work
 * the device's worker has queued since (ct_device_mark_new gives none for
 * a type that does not queue). */
int ct_plan_mark_copies_to_host(ct_plan *p, const int *producer_of, ct_status *status) {
  p->slot_ready = calloc((size_t)p->n_slots + 1, sizeof *p->slot_ready);
  if (p->slot_ready == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory planning a run");
    return 1;
  }
  for (int i = 0; i < p->n_steps; ++i) {
    const ct_plan_step *step = &p->steps[i];
    const int copy = step->node == NULL && step->transfer == CT_TRANSFER_NONE;
    const int source = copy ? step->input_slots[0] : -1;
    if (source < 0 || p->slot_device[source] < 0 || p->slot_ready[source] ||
        !p->devices[step->device]->ops->host_addressable)
      continue;
    /* a variable changes in place after its producer: its copy must see
     * the updates queued before it, so it waits for the whole stream */
    const ct_plan_step *producer = producer_of[source] >= 0 ? &p->steps[producer_of[source]] : NULL;
    if (producer && producer->node &&
        is_variable_storage(producer->node, source - producer->first_slot))
      continue;
    p->slot_ready[source] = ct_device_mark_new(p->devices[p->slot_device[source]]);
  }
  return 0;
}
