/* Chrome trace events (the JSON that Perfetto and chrome://tracing open)
 * for the runs of a session: what ct_run_metadata_write_chrome_trace and
 * `ctower train|bench --trace` write.
 *
 * A trace has a process per rank (pid) and tracks (tid) within it: the
 * host's own (steps, waits), the input pipeline's, and three per device:
 * its computing, its copies in from other devices, and its all-reduces
 * (in process and across ranks, with their bytes). Events are appended to
 * a ct_text as lines that each end in ",\n"; ct_trace_finish wraps them. */
#ifndef CTOWER_EXEC_TRACE_EVENTS_H
#define CTOWER_EXEC_TRACE_EVENTS_H

#include "core/text.h"
#include "ctower/session.h"

enum { CT_TRACK_HOST = 0, CT_TRACK_INPUT = 1 };

/* The track of device d's events of a kind. */
int ct_trace_device_track(int device, ct_timeline_kind kind);

/* Names process pid ("worker 1: /job:worker/replica:0/task:1") and its
 * host, input and device tracks, in that order on screen. */
void ct_trace_name_tracks(ct_text *out, int pid, const char *process, const ct_session *session);

/* A complete slice ("ph": "X") on track tid, from ts_us for dur_us;
 * args_json: the members of its "args" object ("\"step\": 3"), or NULL. */
void ct_trace_slice(ct_text *out, int pid, int tid, double ts_us, double dur_us, const char *name,
                    const char *category, const char *args_json);

/* A slice for every event of the run in metadata, at offset_us plus the
 * event's time, named by its node, its op type as the category, and its
 * step, op, shapes (and bytes, for copies and all-reduces) as args. */
void ct_trace_run_events(ct_text *out, int pid, const ct_run_metadata *metadata, double offset_us,
                         long long step);

/* The whole trace document around events (lines from the calls above).
 * Returns 0, or fills status when out of memory or the file cannot be
 * written; the file is replaced atomically (written beside, then renamed:
 * core/files.h), so a reader never sees half of it, and a path that is not
 * a regular file (a folder, a device, a FIFO) is refused untouched. */
int ct_trace_write(const char *path, const ct_text *events, ct_status *status);

#endif
