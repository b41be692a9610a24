#!/usr/bin/python3
"""Training-step throughput: ctower against PyTorch, as a markdown table.

What it measures
    For each model (fmnist_cnn, mlp) and thread count T (1, 2) it runs, each
    as its own subprocess:
      ctower             build/bench_step --threads T   (environment untouched)
      torch best         bench/torch_step.py --threads T with
                           OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=T
                           MALLOC_MMAP_THRESHOLD_=33554432
                           MALLOC_TRIM_THRESHOLD_=4294967296
                           MALLOC_TOP_PAD_=268435456
      torch as-shipped   bench/torch_step.py --threads T (environment untouched;
                           only torch.set_num_threads(T) inside the script)
    All three time the same work: --steps training steps (forward, backward,
    momentum SGD, lr 0.01, momentum 0.9) after --warmup steps, batch --batch,
    random data; each prints one JSON line (images_per_sec, step_ms_median,
    peak_rss_growth_mb). The runs are interleaved -- one repeat does every
    (model, threads) cell, running the three variants back to back, and the
    order of the three rotates from repeat to repeat -- and the whole thing is
    repeated --repeats times. The table reports medians over repeats; the
    ctower/torch-best ratio is the median of the per-repeat ratios.
    Nothing else in the environment is changed (OPENBLAS_CORETYPE and the
    like are passed on as they are).

How to run (from anywhere; Debian's python3-torch lives under /usr/bin/python3)
    cmake --build build --target bench_step          # the C side
    /usr/bin/python3 bench/bench_train.py            # full run, ~minutes
    /usr/bin/python3 bench/bench_train.py --skip-ctower --repeats 3 --steps 20
    /usr/bin/python3 bench/bench_train.py --models mlp --threads 1,2

Progress goes to stderr; stdout is only the markdown (a header line and the
table), ready to paste into bench/RESULTS.md. The header records the 1-minute
load average before and after: on a shared machine, other processes on the
cores make the multi-threaded figures (whose thread teams spin-wait) collapse,
so compare only runs taken on an otherwise idle machine.
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TORCH_STEP = os.path.join(HERE, "torch_step.py")

TORCH_BEST_ENV = {
    "OPENBLAS_NUM_THREADS": "1",
    # OMP_NUM_THREADS is set to T per run.
    "MALLOC_MMAP_THRESHOLD_": "33554432",
    "MALLOC_TRIM_THRESHOLD_": "4294967296",
    "MALLOC_TOP_PAD_": "268435456",
}

VARIANTS = ["ctower", "torch_best", "torch_shipped"]


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def git_commit():
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                             capture_output=True, text=True, check=True)
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def torch_version(python):
    try:
        out = subprocess.run([python, "-c", "import torch; print(torch.__version__)"],
                             capture_output=True, text=True, check=True)
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def run_one(variant, model, threads, a):
    """Runs one benchmark subprocess and returns its parsed JSON line."""
    common = ["--model", model, "--batch", str(a.batch), "--threads", str(threads),
              "--steps", str(a.steps), "--warmup", str(a.warmup)]
    env = dict(os.environ)
    if variant == "ctower":
        cmd = [a.ctower_bin] + common
    else:
        cmd = [a.python, TORCH_STEP] + common
        if variant == "torch_best":
            env.update(TORCH_BEST_ENV)
            env["OMP_NUM_THREADS"] = str(threads)
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    lines = [l for l in proc.stdout.splitlines() if l.startswith("{")]
    if proc.returncode != 0 or not lines:
        sys.stderr.write("bench_train: %s failed (exit %d): %s\n%s%s" % (
            variant, proc.returncode, " ".join(cmd), proc.stdout, proc.stderr))
        sys.exit(1)
    return json.loads(lines[-1])


def fmt(values, digits=0):
    """Median of a list, or an en dash for an empty one."""
    if not values:
        return "\u2013"
    return "%.*f" % (digits, statistics.median(values))


def main():
    p = argparse.ArgumentParser(description="ctower vs PyTorch training-step throughput.")
    p.add_argument("--ctower-bin", default=os.path.join(ROOT, "build", "bench_step"),
                   help="path of ctower's bench_step (default: build/bench_step)")
    p.add_argument("--python", default=sys.executable,
                   help="interpreter with torch for torch_step.py (default: this one)")
    p.add_argument("--models", default="fmnist_cnn,mlp", help="comma-separated")
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--skip-ctower", action="store_true",
                   help="run PyTorch alone (when the C side is not built)")
    a = p.parse_args()
    models = [m for m in a.models.split(",") if m]
    threads = [int(t) for t in a.threads.split(",") if t]
    for m in models:
        if m not in ("fmnist_cnn", "mlp"):
            p.error("unknown model %r (fmnist_cnn, mlp)" % m)
    if a.repeats < 1 or a.steps < 1 or a.warmup < 0 or a.batch < 1 or not threads \
            or min(threads) < 1:
        p.error("repeats, steps, batch and threads must be >= 1, warmup >= 0")

    variants = VARIANTS[1:] if a.skip_ctower else VARIANTS
    if not a.skip_ctower and not (os.path.isfile(a.ctower_bin)
                                  and os.access(a.ctower_bin, os.X_OK)):
        sys.stderr.write(
            "bench_train: ctower benchmark binary not found or not executable: %s\n"
            "  build it with:  cmake --build build --target bench_step\n"
            "  or point --ctower-bin at it, or pass --skip-ctower to run PyTorch alone.\n"
            % a.ctower_bin)
        return 2
    if not os.path.isfile(TORCH_STEP):
        sys.stderr.write("bench_train: missing %s\n" % TORCH_STEP)
        return 2

    load_start = os.getloadavg()[0]
    if load_start > 0.5:
        sys.stderr.write("bench_train: warning: 1-minute load average is %.2f before starting; "
                         "other processes compete for the cores and multi-threaded timings "
                         "(spinning thread teams) suffer most\n" % load_start)
    # results[(model, threads)][variant] = list of JSON dicts, one per repeat
    results = {(m, t): {v: [] for v in variants} for m in models for t in threads}
    for r in range(a.repeats):
        order = variants[r % len(variants):] + variants[:r % len(variants)]
        for m in models:
            for t in threads:
                for v in order:
                    res = run_one(v, m, t, a)
                    results[(m, t)][v].append(res)
                    sys.stderr.write("repeat %d/%d  %-10s T=%d  %-13s %10.1f img/s  "
                                     "%8.2f ms  rss +%.1f MB\n" % (
                                         r + 1, a.repeats, m, t, v, res["images_per_sec"],
                                         res["step_ms_median"], res["peak_rss_growth_mb"]))

    now = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    print("%s, commit %s, %s (%d cores visible), torch %s; batch %d, %d steps after %d "
          "warm-up, median of %d repeats; load average %.2f before, %.2f after%s" % (
              now, git_commit(), cpu_model(), os.cpu_count() or 0, torch_version(a.python),
              a.batch, a.steps, a.warmup, a.repeats, load_start, os.getloadavg()[0],
              ", ctower skipped" if a.skip_ctower else ""))
    print()
    print("| model | threads | ctower img/s | torch best img/s | torch as-shipped img/s "
          "| ctower / torch best | ctower RSS growth MB | torch best RSS growth MB "
          "| torch as-shipped RSS growth MB |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for m in models:
        for t in threads:
            cell = results[(m, t)]

            def col(v, key):
                return [x[key] for x in cell.get(v, [])]

            ratios = [c["images_per_sec"] / b["images_per_sec"]
                      for c, b in zip(cell.get("ctower", []), cell["torch_best"])]
            print("| %s | %d | %s | %s | %s | %s | %s | %s | %s |" % (
                m, t,
                fmt(col("ctower", "images_per_sec")),
                fmt(col("torch_best", "images_per_sec")),
                fmt(col("torch_shipped", "images_per_sec")),
                fmt(ratios, 2),
                fmt(col("ctower", "peak_rss_growth_mb"), 1),
                fmt(col("torch_best", "peak_rss_growth_mb"), 1),
                fmt(col("torch_shipped", "peak_rss_growth_mb"), 1)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
