#!/usr/bin/python3
"""GPU training throughput: ctower against PyTorch eager on the same GPU, as a
markdown table.

What it measures
    For each model (fmnist_cnn on 28x28x1, resnet20 on 32x32x3), batch (128,
    512) and precision (fp32, bf16) it runs, each as its own subprocess:
      ctower   build/ctower bench with the model on synthetic images of that
               shape, one tower on /gpu:0, momentum SGD (lr 0.01, 0.9),
               train.precision as given
      torch    bench/torch_step.py --device cuda --precision P (eager, cuDNN
               benchmark mode on, bf16 through autocast, fp32 weights)
    Both time training steps (forward, backward, update) after warm-up steps;
    each step ends with the GPU done (ctower's session run waits for its
    devices; the PyTorch script calls torch.cuda.synchronize()). Each reports
    images/sec from the median step time. The two run back to back, their
    order alternating, and every cell is repeated --repeats times; the table
    gives medians and the median of the per-repeat ratios.

How to run (on a machine with a CUDA GPU and PyTorch built with CUDA)
    cmake -S . -B build && cmake --build build -j --target ctower
    python3 bench/gpu_bench.py                 # all cells, 3 repeats
    python3 bench/gpu_bench.py --models resnet20 --batches 512 --repeats 5

Progress goes to stderr; stdout is the markdown for bench/RESULTS.md. A run
that fails, or outlasts --timeout, is reported on stderr and its cell shown
as failed; the others go on, and the exit status is then 1.
"""
import argparse
import datetime
import json
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

SHAPES = {"fmnist_cnn": "[28, 28, 1]", "resnet20": "[32, 32, 3]"}


def run(cmd, timeout):
    """cmd run to its end; one that outlasts timeout seconds raises RuntimeError."""
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RuntimeError("%s ran past %d s" % (" ".join(cmd[:3]), timeout))
    return out


def output_of(cmd):
    """cmd's standard output, or "" where cmd is not installed."""
    try:
        return subprocess.run(cmd, capture_output=True, text=True).stdout
    except OSError:
        return ""


def run_ctower(ctower, model, batch, precision, steps, warmup, timeout):
    overrides = [
        "model.name=" + model, "dataset.name=synthetic",
        "dataset.image_shape=" + SHAPES[model], "dataset.batch_size=%d" % batch,
        "dataset.train_size=%d" % (batch * (steps + warmup)), "dataset.test_size=%d" % batch,
        "devices.towers=[/gpu:0]", "session.allow_soft_placement=false",
        "train.optimizer.name=momentum", "train.optimizer.learning_rate=0.01",
        "train.optimizer.momentum=0.9", "train.precision=" + precision,
    ]
    cmd = [ctower, "bench", os.path.join(ROOT, "examples", "mlp.yaml"), *overrides,
           "--steps", str(steps), "--warmup", str(warmup)]
    out = run(cmd, timeout)
    m = re.search(r"([0-9.]+) images/sec", out.stdout)
    if out.returncode != 0 or not m:
        raise RuntimeError("ctower bench failed: " + out.stdout + out.stderr)
    return float(m.group(1))


def run_torch(python, model, batch, precision, steps, warmup, timeout):
    cmd = [python, os.path.join(HERE, "torch_step.py"), "--model", model, "--batch", str(batch),
           "--device", "cuda", "--precision", precision, "--steps", str(steps),
           "--warmup", str(warmup)]
    out = run(cmd, timeout)
    if out.returncode != 0:
        raise RuntimeError("torch_step failed: " + out.stdout + out.stderr)
    return json.loads(out.stdout.strip().splitlines()[-1])["images_per_sec"]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ctower", default=os.path.join(ROOT, "build", "ctower"))
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--models", default="fmnist_cnn,resnet20")
    p.add_argument("--batches", default="128,512")
    p.add_argument("--precisions", default="fp32,bf16")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--timeout", type=int, default=300,
                   help="seconds one run may take; a run that fails or takes longer is "
                        "reported and its cell left out")
    a = p.parse_args()
    cells = [(m, int(b), pr) for m in a.models.split(",") for b in a.batches.split(",")
             for pr in a.precisions.split(",")]
    results = {c: {"ctower": [], "torch": [], "ratio": []} for c in cells}
    for r in range(a.repeats):
        for i, (model, batch, precision) in enumerate(cells):
            order = ["ctower", "torch"] if (r + i) % 2 == 0 else ["torch", "ctower"]
            got = {}
            for who in order:
                try:
                    if who == "ctower":
                        got[who] = run_ctower(a.ctower, model, batch, precision, a.steps,
                                              a.warmup, a.timeout)
                    else:
                        got[who] = run_torch(a.python, model, batch, precision, a.steps,
                                             a.warmup, a.timeout)
                except RuntimeError as e:
                    print("repeat %d %s batch %d %s: %s failed: %s" %
                          (r + 1, model, batch, precision, who, str(e)[-2000:]),
                          file=sys.stderr)
            if len(got) < 2:
                continue
            cell = results[(model, batch, precision)]
            cell["ctower"].append(got["ctower"])
            cell["torch"].append(got["torch"])
            cell["ratio"].append(got["ctower"] / got["torch"])
            print("repeat %d %s batch %d %s: ctower %.0f, torch %.0f img/s" %
                  (r + 1, model, batch, precision, got["ctower"], got["torch"]), file=sys.stderr)
    commit = output_of(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"]).strip()
    gpu = output_of(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"]).strip().splitlines()
    print("%s, commit %s, %s, %d repeats of %d steps after %d warm-up; medians" %
          (datetime.date.today().isoformat(), commit or "?", gpu[0] if gpu else "GPU", a.repeats,
           a.steps, a.warmup))
    print()
    print("| model | batch | precision | ctower img/s | PyTorch img/s | ctower / PyTorch |")
    print("|---|---:|---|---:|---:|---:|")
    for (model, batch, precision), cell in results.items():
        if not cell["ratio"]:
            print("| %s | %d | %s | failed | failed | - |" % (model, batch, precision))
            continue
        print("| %s | %d | %s | %.0f | %.0f | %.2f |" %
              (model, batch, precision, statistics.median(cell["ctower"]),
               statistics.median(cell["torch"]), statistics.median(cell["ratio"])))
    return 1 if any(not cell["ratio"] for cell in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
