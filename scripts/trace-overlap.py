#!/usr/bin/env python3
"""How much of a trace's copies ahead ran under computing.

Reads a Chrome trace that `ctower train|bench --trace` wrote and, for each
device, takes its "_Stage/..." events (a step's copies of the next step's
inputs, on the device's "copies in" track) and the compute events of the
same device (its own track). Prints per device how many copies ahead there
were, their total time, and how much of it overlapped computing, then the
whole trace's share. Exits 1 when the trace holds no copy ahead.

Usage: trace-overlap.py TRACE.json
"""
import json
import sys


def intervals_overlap(start, end, spans):
    """Microseconds of [start, end) covered by the union of spans (sorted)."""
    covered, cursor = 0.0, start
    for s, e in spans:
        if e <= cursor:
            continue
        if s >= end:
            break
        lo, hi = max(s, cursor), min(e, end)
        if hi > lo:
            covered += hi - lo
            cursor = hi
    return covered


def main(path):
    with open(path) as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    track_name = {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            track_name[(e["pid"], e["tid"])] = e["args"]["name"]
    by_name = {(pid, name): tid for (pid, tid), name in track_name.items()}
    spans, stages = {}, {}
    for e in events:
        if e.get("ph") != "X":
            continue
        key = (e["pid"], e["tid"])
        interval = (e["ts"], e["ts"] + e["dur"])
        if e["name"].startswith("_Stage/"):
            stages.setdefault(key, []).append(interval)
        elif not e["name"].startswith("_"):
            spans.setdefault(key, []).append(interval)
    total = overlapped = 0.0
    count = 0
    for (pid, tid), copies in sorted(stages.items()):
        name = track_name.get((pid, tid), "")
        device = name[: -len(" copies in")] if name.endswith(" copies in") else name
        compute = sorted(spans.get((pid, by_name.get((pid, device))), []))
        t = sum(e - s for s, e in copies)
        o = sum(intervals_overlap(s, e, compute) for s, e in copies)
        print("%s (process %s): %d copies ahead, %.0f us, %.0f us of it under computing (%.0f%%)"
              % (device, pid, len(copies), t, o, 100 * o / t if t else 0))
        total, overlapped, count = total + t, overlapped + o, count + len(copies)
    if count == 0:
        print("no copy ahead (_Stage) in %s" % path)
        return 1
    print("all: %d copies ahead, %.0f%% of their time under computing" % (count, 100 * overlapped / total))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
