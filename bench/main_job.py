#!/usr/bin/python3
"""The main job end to end: time to a test accuracy, ctower against PyTorch.

Runs, one after the other, `build/ctower train examples/fmnist_cnn.yaml`
(its towers on the local devices: one CPU device of all the cores on a
machine without a GPU) and bench/torch_fmnist.py (the same model, batch 128
and Adam lr 0.001, --threads cores, PyTorch at its best: bench/bench_train.py's
environment), each until the first epoch whose test accuracy reaches
--target (default 0.91) or 10 epochs, and prints per epoch the wall time
since the command started (data loading and evaluations included) and the
test accuracy, then the time each took to reach the target and the ratio.

    /usr/bin/python3 bench/main_job.py [--rounds 3] [--target 0.91]

With --rounds R the two alternate R times and the medians are printed too;
--seeds S1,S2,... gives each round its own seed (train.seed for ctower,
torch.manual_seed for PyTorch), so that the medians are over training runs
that differ, not over timings of one.
"""
import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from bench_train import TORCH_BEST_ENV  # noqa: E402

EPOCH_LINE = re.compile(r"^epoch (\d+)/\d+: .*\| test loss [0-9.]+ acc ([0-9.]+) \|")


def run_ctower(a, seed):
    """Trains with ctower until the target; returns [(epoch, seconds, accuracy)]."""
    cmd = [a.ctower, "train", os.path.join(ROOT, "examples", "fmnist_cnn.yaml"),
           "train.checkpoint=", "train.seed=%d" % seed, "--quiet"]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    epochs = []
    for line in proc.stdout:
        m = EPOCH_LINE.match(line)
        if not m:
            continue
        epochs.append((int(m.group(1)), time.perf_counter() - t0, float(m.group(2))))
        if epochs[-1][2] >= a.target:
            proc.send_signal(signal.SIGTERM)  # ends after this step; nothing to save
            break
    proc.stdout.close()
    proc.wait()
    return epochs


def run_torch(a, seed):
    """Trains with PyTorch until the target; returns [(epoch, seconds, accuracy)]."""
    env = dict(os.environ)
    env.update(TORCH_BEST_ENV)
    env["OMP_NUM_THREADS"] = str(a.threads)
    cmd = [a.python, os.path.join(HERE, "torch_fmnist.py"), "--threads", str(a.threads),
           "--target", str(a.target), "--seed", str(seed)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    return [(j["epoch"], j["seconds"], j["test_accuracy"])
            for j in map(json.loads, out.splitlines())]


def time_to_target(epochs, target):
    reached = [s for _, s, acc in epochs if acc >= target]
    return reached[0] if reached else None


def main():
    p = argparse.ArgumentParser(description="Time to a test accuracy: ctower vs PyTorch.")
    p.add_argument("--ctower", default=os.path.join(ROOT, "build", "ctower"))
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--threads", type=int, default=2, help="PyTorch's threads (default 2)")
    p.add_argument("--target", type=float, default=0.91)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--seeds", default="42", help="comma-separated, one per round, reused in turn")
    a = p.parse_args()
    seeds = [int(x) for x in a.seeds.split(",") if x]
    times = {"ctower": [], "torch": []}
    for r in range(a.rounds):
        seed = seeds[r % len(seeds)]
        for name, fn in (("ctower", run_ctower), ("torch", run_torch)):
            epochs = fn(a, seed)
            for epoch, seconds, acc in epochs:
                print("round %d seed %d %-6s epoch %2d: %7.1f s  test accuracy %.4f" % (
                    r + 1, seed, name, epoch, seconds, acc), flush=True)
            t = time_to_target(epochs, a.target)
            print("round %d seed %d %-6s reached %.2f: %s" % (
                r + 1, seed, name, a.target, "after %.1f s" % t if t else "never"), flush=True)
            times[name].append(t)
    done = [(c, t) for c, t in zip(times["ctower"], times["torch"]) if c and t]
    if done:
        print("median time to %.2f: ctower %.1f s, PyTorch %.1f s; PyTorch / ctower %.2f" % (
            a.target, statistics.median(c for c, _ in done), statistics.median(t for _, t in done),
            statistics.median(t / c for c, t in done)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
