#include "exec/trace_events.h"

#include <stdio.h>
#include <string.h>

#include "core/files.h"

enum { FIRST_DEVICE_TRACK = 10, TRACKS_PER_DEVICE = 3 };

int ct_trace_device_track(int device, ct_timeline_kind kind) {
  return FIRST_DEVICE_TRACK + TRACKS_PER_DEVICE * device + (int)kind;
}

/* A metadata event ("ph": "M") naming a process or track and placing it. */
static void name_event(ct_text *out, int pid, int tid, const char *what, const char *name) {
  ct_text_printf(out,
                 "{\"ph\": \"M\", \"pid\": %d, \"tid\": %d, \"name\": \"%s_name\", \"args\": "
                 "{\"name\": ",
                 pid, tid, what);
  ct_text_json_string(out, name);
  ct_text_str(out, "}},\n");
  ct_text_printf(out,
                 "{\"ph\": \"M\", \"pid\": %d, \"tid\": %d, \"name\": \"%s_sort_index\", "
                 "\"args\": {\"sort_index\": %d}},\n",
                 pid, tid, what, strcmp(what, "process") == 0 ? pid : tid);
}

void ct_trace_name_tracks(ct_text *out, int pid, const char *process, const ct_session *s) {
  static const char *const kind_names[] = {"", " copies in", " all-reduce"};
  name_event(out, pid, 0, "process", process);
  name_event(out, pid, CT_TRACK_HOST, "thread", "host: steps and waits");
  name_event(out, pid, CT_TRACK_INPUT, "thread", "input pipeline");
  for (int d = 0; d < ct_session_device_count(s); ++d)
    for (int kind = 0; kind < TRACKS_PER_DEVICE; ++kind) {
      char name[192];
      snprintf(name, sizeof name, "%s%s", ct_session_device_name(s, d), kind_names[kind]);
      name_event(out, pid, ct_trace_device_track(d, (ct_timeline_kind)kind), "thread", name);
    }
}

void ct_trace_slice(ct_text *out, int pid, int tid, double ts_us, double dur_us, const char *name,
                    const char *category, const char *args_json) {
  ct_text_printf(out,
                 "{\"ph\": \"X\", \"pid\": %d, \"tid\": %d, \"ts\": %.3f, \"dur\": %.3f, "
                 "\"name\": ",
                 pid, tid, ts_us, dur_us);
  ct_text_json_string(out, name);
  ct_text_str(out, ", \"cat\": ");
  ct_text_json_string(out, category);
  ct_text_printf(out, ", \"args\": {%s}},\n", args_json ? args_json : "");
}

void ct_trace_run_events(ct_text *out, int pid, const ct_run_metadata *m, double offset_us,
                         long long step) {
  for (int i = 0; i < ct_run_metadata_event_count(m); ++i) {
    const ct_timeline_event e = ct_run_metadata_event(m, i);
    ct_text args = {NULL, 0, 0, 0};
    ct_text_printf(&args, "\"step\": %lld, \"op\": ", step);
    ct_text_json_string(&args, e.op);
    ct_text_str(&args, ", \"shapes\": ");
    ct_text_json_string(&args, e.shapes);
    if (e.kind != CT_TIMELINE_COMPUTE) ct_text_printf(&args, ", \"bytes\": %lld", e.bytes);
    if (e.bucket >= 0) ct_text_printf(&args, ", \"bucket\": %d", e.bucket);
    if (args.oom) {
      out->oom = 1;
    } else {
      ct_trace_slice(out, pid, ct_trace_device_track(e.device, e.kind), offset_us + e.start_us,
                     e.end_us - e.start_us, e.node, e.op, args.data);
    }
    ct_text_free(&args);
  }
}

static const ct_file_role k_trace_role = {"the trace", "give the trace a file's path"};

int ct_trace_write(const char *path, const ct_text *events, ct_status *status) {
  if (events->oom) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory for the trace '%s'", path);
    return 1;
  }
  static const char head[] = "{\"traceEvents\": [\n",
                    tail[] = "\n],\n\"displayTimeUnit\": \"ms\"}\n";
  /* the events' lines end in ",\n": the last one's comma goes */
  const size_t body = events->len >= 2 ? events->len - 2 : 0;
  ct_file_writer w;
  if (ct_file_writer_open(&w, path, &k_trace_role, status)) return 1;
  if (ct_file_writer_write(&w, head, sizeof head - 1, status) ||
      ct_file_writer_write(&w, events->data, body, status) ||
      ct_file_writer_write(&w, tail, sizeof tail - 1, status)) {
    ct_file_writer_discard(&w);
    return 1;
  }
  return ct_file_writer_commit(&w, status);
}

/* A single run's trace: ct_run_metadata_write_chrome_trace (session.h). */
int ct_run_metadata_write_chrome_trace(const ct_run_metadata *m, const ct_session *s,
                                       const char *path, ct_status *status) {
  ct_text events = {NULL, 0, 0, 0};
  ct_trace_name_tracks(&events, 0, "ctower", s);
  ct_trace_run_events(&events, 0, m, 0, 0);
  const int failed = ct_trace_write(path, &events, status);
  ct_text_free(&events);
  return failed;
}
