/* Run metadata: the per-node timeline of a run, and its Chrome trace. */
#include <stdio.h>
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

void ct_run_metadata_add(ct_run_metadata *m, const char *node, const char *op, int device,
                         double start_us, double end_us) {
  pthread_mutex_lock(&m->mutex);
  if (m->n_events == m->cap) {
    int cap = m->cap ? m->cap * 2 : 256;
    ct_timeline_event *events = realloc(m->events, (size_t)cap * sizeof *events);
    char **names = events ? realloc(m->names, (size_t)cap * sizeof *names) : NULL;
    if (events) m->events = events;
    if (names == NULL) { /* out of memory: the timeline loses this event */
      pthread_mutex_unlock(&m->mutex);
      return;
    }
    m->names = names;
    m->cap = cap;
  }
  char *name = strdup(node);
  if (name) {
    m->names[m->n_events] = name;
    m->events[m->n_events++] = (ct_timeline_event){name, op, device, start_us, end_us};
  }
  pthread_mutex_unlock(&m->mutex);
}

int ct_run_metadata_event_count(const ct_run_metadata *m) { return m->n_events; }

ct_timeline_event ct_run_metadata_event(const ct_run_metadata *m, int index) {
  return m->events[index];
}

static void write_json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; ++s) {
    if (*s == '"' || *s == '\\') fputc('\\', f);
    if ((unsigned char)*s < 0x20)
      fprintf(f, "\\u%04x", (unsigned char)*s);
    else
      fputc(*s, f);
  }
  fputc('"', f);
}

int ct_run_metadata_write_chrome_trace(const ct_run_metadata *m, const ct_session *s,
                                       const char *path, ct_status *status) {
  FILE *f = fopen(path, "w");
  if (f == NULL) {
    ct_status_set(status, CT_UNAVAILABLE, "cannot write the trace '%s': %m", path);
    return 1;
  }
  fprintf(f, "{\"traceEvents\": [\n");
  for (int d = 0; d < ct_session_device_count(s); ++d) {
    fprintf(f, "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 0, \"tid\": %d, \"args\": {\"name\": ", d);
    write_json_string(f, ct_session_device_name(s, d));
    fprintf(f, "}},\n");
  }
  for (int i = 0; i < m->n_events; ++i) {
    const ct_timeline_event *e = &m->events[i];
    fprintf(f, "{\"ph\": \"X\", \"pid\": 0, \"tid\": %d, \"ts\": %.3f, \"dur\": %.3f, \"name\": ",
            e->device, e->start_us, e->end_us - e->start_us);
    write_json_string(f, e->op);
    fprintf(f, ", \"args\": {\"node\": ");
    write_json_string(f, e->node);
    fprintf(f, "}}%s\n", i + 1 < m->n_events ? "," : "");
  }
  fprintf(f, "],\n\"displayTimeUnit\": \"ms\"}\n");
  if (fclose(f) != 0) {
    ct_status_set(status, CT_UNAVAILABLE, "cannot write the trace '%s': %m", path);
    return 1;
  }
  return 0;
}
