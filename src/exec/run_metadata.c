/* Run metadata: the per-node timeline of a run (its Chrome trace: trace_events.c). */
#include <stdlib.h>
#include <string.h>

#include "exec/exec_internal.h"

ct_run_metadata *ct_run_metadata_new(void) {
  ct_run_metadata *m = calloc(1, sizeof *m);
  if (m) pthread_mutex_init(&m->mutex, NULL);
  return m;
}

void ct_run_metadata_clear(ct_run_metadata *m) {
  for (int i = 0; i < m->n_events; ++i) free(m->names[i]);
  m->n_events = 0;
}

void ct_run_metadata_free(ct_run_metadata *m) {
  if (m == NULL) return;
  ct_run_metadata_clear(m);
  free(m->events);
  free(m->names);
  pthread_mutex_destroy(&m->mutex);
  free(m);
}

void ct_run_metadata_add(ct_run_metadata *m, const ct_timeline_event *event) {
  /* one allocation holds the node name, then the shapes */
  const size_t node_len = strlen(event->node) + 1;
  const size_t shapes_len = event->shapes ? strlen(event->shapes) + 1 : 0;
  char *names = malloc(node_len + shapes_len);
  if (names == NULL) return; /* out of memory: the timeline loses this event */
  memcpy(names, event->node, node_len);
  if (shapes_len) memcpy(names + node_len, event->shapes, shapes_len);
  pthread_mutex_lock(&m->mutex);
  if (m->n_events == m->cap) {
    int cap = m->cap ? m->cap * 2 : 256;
    ct_timeline_event *events = realloc(m->events, (size_t)cap * sizeof *events);
    char **all_names = events ? realloc(m->names, (size_t)cap * sizeof *all_names) : NULL;
    if (events) m->events = events;
    if (all_names == NULL) {
      pthread_mutex_unlock(&m->mutex);
      free(names);
      return;
    }
    m->names = all_names;
    m->cap = cap;
  }
  ct_timeline_event *e = &m->events[m->n_events];
  *e = *event;
  e->node = names;
  e->shapes = shapes_len ? names + node_len : "";
  m->names[m->n_events++] = names;
  pthread_mutex_unlock(&m->mutex);
}

double ct_run_metadata_device_busy_us(const ct_run_metadata *m, int device) {
  double busy = 0;
  for (int i = 0; i < m->n_events; ++i)
    if (m->events[i].device == device && m->events[i].kind == CT_TIMELINE_COMPUTE)
      busy += m->events[i].end_us - m->events[i].start_us;
  return busy;
}

double ct_run_metadata_start_us(const ct_run_metadata *m) { return m->start_us; }

int ct_run_metadata_event_count(const ct_run_metadata *m) { return m->n_events; }

ct_timeline_event ct_run_metadata_event(const ct_run_metadata *m, int index) {
  return m->events[index];
}
