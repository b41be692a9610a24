#!/usr/bin/python3
"""A long run: memory stays flat over 20,000 training steps.

Runs `ctower bench examples/mlp.yaml --steps N --warmup 100` (Fashion-MNIST,
batch 128, one tower: 469 steps an epoch, so the input pipeline goes round
its epochs too), sampling the process's resident memory (VmRSS) every 0.2 s,
and prints RSS after the warm-up and at the end, its largest value past the
first tenth of the run, and the allocator's statistics that `ctower bench`
prints at the end (bytes in use, peak and reserved per device). Run it for
a short and a long run to compare the allocator's figures:

    /usr/bin/python3 bench/long_run.py --steps 1000 20000

Nothing is returned to the OS inside the training loop and buffers are
reused step after step (DESIGN.md), so the long run's reserved and peak
bytes equal the short one's and RSS grows by no more than noise.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def rss_kib(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def run(a, steps):
    cmd = [a.ctower, "bench", os.path.join(ROOT, "examples", "mlp.yaml"), "--steps", str(steps),
           "--warmup", "100", "session.device_count={CPU: 1}", "devices.n_towers=1"]
    t0 = time.perf_counter()
    with tempfile.TemporaryFile(mode="w+") as log:  # a pipe unread would fill and stall it
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, text=True)
        samples = []
        while proc.poll() is None:
            kib = rss_kib(proc.pid)
            if kib:
                samples.append((time.perf_counter() - t0, kib))
            time.sleep(0.2)
        log.seek(0)
        out = log.read()
    if proc.returncode != 0 or len(samples) < 10:
        sys.stderr.write("long_run: %s failed (exit %d)\n%s" % (" ".join(cmd), proc.returncode, out))
        sys.exit(1)
    tail = samples[len(samples) // 10:]
    memory = [l for l in out.splitlines() if l.startswith("memory ")]
    speed = [l for l in out.splitlines() if "images/sec," in l]
    print("%d steps, %.0f s: RSS %d KiB at the first tenth, %d KiB at the end, at most %d KiB "
          "after the first tenth (growth %+d KiB)" % (
              steps, samples[-1][0], tail[0][1], tail[-1][1], max(k for _, k in tail),
              max(k for _, k in tail) - tail[0][1]))
    for line in speed + memory:
        print("  " + line)
    return memory


def main():
    p = argparse.ArgumentParser(description="Memory over a long training run.")
    p.add_argument("--ctower", default=os.path.join(ROOT, "build", "ctower"))
    p.add_argument("--steps", type=int, nargs="+", default=[1000, 20000])
    a = p.parse_args()
    figures = []
    for steps in a.steps:
        memory = run(a, steps)
        figures.append([re.sub(r"allocations \d+, ", "", m) for m in memory])
    if len(figures) > 1:
        print("allocator peak and reserved bytes the same in every run: %s" % (
            "yes" if all(f == figures[0] for f in figures) else "no"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
