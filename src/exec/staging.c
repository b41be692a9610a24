/* Inputs staged one run ahead (staging.h). Each copy step of a feed has
 * two entries, used by even and odd runs: a run takes the value staged
 * for it from one while it stages the next run's into the other. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/staging.h"

/* The feed whose value a copy step copies, or -1: a step that copies a
 * feed (host memory) onto a device that copies ahead. */
static int staged_feed_of(const ct_plan *p, const ct_plan_step *step) {
  if (step->node || step->transfer != CT_TRANSFER_NONE) return -1;
  if (!ct_device_copies_ahead(p->devices[step->device])) return -1;
  for (int k = 0; k < p->n_feeds; ++k)
    if (p->feed_slots[k] == step->input_slots[0]) return k;
  return -1;
}

/* Step `index`'s entry for the session's run `run`. */
static ct_staged_input *entry(const ct_plan *p, int index, uint64_t run) {
  return &p->staged[2 * index + (int)(run & 1)];
}

void ct_staging_drop_stale(ct_session *s) {
  for (int i = 0; i < s->n_plans; ++i) {
    ct_plan *p = s->plans[i];
    for (int j = 0; p->staged && j < 2 * p->n_steps; ++j) {
      ct_staged_input *st = &p->staged[j];
      if (st->data == NULL || st->for_run == s->runs) continue;
      ct_allocator_free(p->devices[p->steps[j / 2].device]->allocator, st->data);
      st->data = NULL;
    }
  }
}

/* Copies `value` ahead for copy step `index` and the next run. Returns 0
 * or fills status; memory the device lacks now is no failure (nothing is
 * staged). */
static int stage_one(ct_session *s, ct_plan *p, int index, const ct_tensor *value,
                     ct_status *status) {
  ct_device *device = p->devices[p->steps[index].device];
  ct_staged_input *st = entry(p, index, s->runs + 1);
  const size_t nbytes = ct_tensor_nbytes(value);
  const int traced = p->staging_traced;
  if (!st->end) st->end = ct_device_mark_new(device);
  if (traced && !st->begin) st->begin = ct_device_mark_new(device);
  ct_status shortage = CT_STATUS_INIT;
  void *data = st->end ? ct_allocator_alloc(device->allocator, nbytes ? nbytes : 1, &shortage)
                       : NULL;
  if (data == NULL) return 0;
  st->timed = traced && st->begin;
  if (ct_device_copy_ahead(device, data, value->data, nbytes, st->timed ? st->begin : NULL,
                           st->end, status)) {
    ct_allocator_free(device->allocator, data);
    st->timed = 0;
    return 1;
  }
  st->data = data;
  st->host = value->data;
  st->dtype = value->dtype;
  st->shape = value->shape;
  st->for_run = s->runs + 1;
  return 0;
}

int ct_staging_start(ct_session *s, ct_plan *p, const ct_feed *next_feeds, int traced) {
  p->staging_traced = traced;
  for (int d = 0; d < p->n_devices && d < CT_MAX_DEVICES; ++d)
    atomic_store(&p->staging_started[d], 0);
  for (int i = 0; i < p->n_steps; ++i) {
    const int k = staged_feed_of(p, &p->steps[i]);
    if (k < 0 || next_feeds[k].value == NULL) continue;
    if (p->staged == NULL) {
      p->staged = calloc(2 * (size_t)p->n_steps, sizeof *p->staged);
      if (p->staged == NULL) return 0; /* no room to stage: the next run copies */
    }
    entry(p, i, s->runs + 1)->pending = next_feeds[k].value;
  }
  return 0;
}

int ct_staging_issue(ct_session *s, ct_plan *p, int device, ct_status *status) {
  if (p->staged == NULL || atomic_exchange(&p->staging_started[device], 1)) return 0;
  for (int i = 0; i < p->n_steps; ++i) {
    ct_staged_input *st = entry(p, i, s->runs + 1);
    if (p->steps[i].device != device || st->pending == NULL) continue;
    const ct_tensor *value = st->pending;
    st->pending = NULL;
    if (stage_one(s, p, i, value, status)) return 1;
  }
  return 0;
}

int ct_staging_finish(ct_session *s, ct_plan *p, ct_status *status) {
  for (int d = 0; p->staged && d < p->n_devices && d < CT_MAX_DEVICES; ++d)
    if (ct_staging_issue(s, p, d, status)) return 1;
  return 0;
}

void *ct_staging_take(ct_session *s, ct_plan *p, const ct_plan_step *step,
                      const ct_tensor *source) {
  if (p->staged == NULL || staged_feed_of(p, step) < 0) return NULL;
  ct_staged_input *st = entry(p, (int)(step - p->steps), s->runs);
  if (st->data == NULL || st->for_run != s->runs || st->host != source->data ||
      st->dtype != source->dtype || !ct_shape_equal(&st->shape, &source->shape))
    return NULL;
  void *data = st->data;
  st->data = NULL; /* the step's output owns it now */
  st->taken = 1;
  return data;
}

void *ct_staging_taken(ct_session *s, ct_plan *p, const ct_plan_step *step) {
  if (p->staged == NULL) return NULL;
  ct_staged_input *st = entry(p, (int)(step - p->steps), s->runs);
  if (!st->taken) return NULL;
  st->taken = 0;
  return st->end;
}

void ct_staging_add_timings(ct_plan *p, ct_run_metadata *metadata) {
  for (int j = 0; p->staged && j < 2 * p->n_steps; ++j) {
    ct_staged_input *st = &p->staged[j];
    if (!st->timed) continue;
    st->timed = 0;
    const ct_plan_step *step = &p->steps[j / 2];
    ct_device *device = p->devices[step->device];
    void *origin = p->device_marks[step->device];
    const double base = p->device_mark_us[step->device];
    char name[160], shape[96], shapes[200];
    snprintf(name, sizeof name, "_Stage/%s", p->feed_outputs[staged_feed_of(p, step)].node->name);
    ct_shape_str(&st->shape, shape, sizeof shape);
    snprintf(shapes, sizeof shapes, "%s -> %s", shape, shape);
    const ct_timeline_event event = {
        name,
        "_Stage",
        step->device,
        CT_TIMELINE_COPY,
        base + ct_device_mark_elapsed_us(device, origin, st->begin),
        base + ct_device_mark_elapsed_us(device, origin, st->end),
        (long long)ct_shape_elements(&st->shape) * (long long)ct_dtype_size(st->dtype),
        -1,
        shapes};
    ct_run_metadata_add(metadata, &event);
  }
}
