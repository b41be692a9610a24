#!/usr/bin/python3
"""ctower over MPI ranks against PyTorch DDP, side by side in one run.

For fmnist_cnn at global batch B (default 256) with Adam lr 0.001, each
round runs, one after another:
    ctower 1 rank:   mpirun -np 1 ctower bench examples/fmnist_cnn.yaml
    ctower N ranks:  mpirun -np N ctower bench ... (one tower, one core each)
    DDP 1 process:   bench/ddp_step.py --procs 1
    DDP N processes: bench/ddp_step.py --procs N (gloo, one thread each)
and prints each one's images/sec, then the medians over the rounds and the
ratios: ctower's scaling (N ranks / 1), DDP's, and ctower N ranks / DDP N.

    /usr/bin/python3 bench/mpi_bench.py [--rounds 3] [--ranks 2] [--batch 256]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def ctower(ranks, a):
    cmd = ["mpirun", "--allow-run-as-root", "--bind-to", "core", "-np", str(ranks),
           os.path.join(a.build, "ctower"), "bench", os.path.join(ROOT, "examples/fmnist_cnn.yaml"),
           f"dataset.batch_size={a.batch}", "devices.towers=[/cpu:0]",
           "session.device_count={CPU: 1, GPU: 0}", "session.intra_op_parallelism_threads=1",
           "--steps", str(a.steps)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return float(re.search(r"([0-9.]+) images/sec", out).group(1))


def ddp(procs, a):
    cmd = ["/usr/bin/python3", os.path.join(HERE, "ddp_step.py"), "--procs", str(procs),
           "--batch", str(a.batch), "--steps", str(a.steps)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])["images_per_sec"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    a = p.parse_args()
    runs = {"ctower 1": [], f"ctower {a.ranks}": [], "ddp 1": [], f"ddp {a.ranks}": []}
    for r in range(a.rounds):
        row = {"ctower 1": ctower(1, a), f"ctower {a.ranks}": ctower(a.ranks, a),
               "ddp 1": ddp(1, a), f"ddp {a.ranks}": ddp(a.ranks, a)}
        for k, v in row.items():
            runs[k].append(v)
        print(f"round {r + 1}: " + ", ".join(f"{k}: {v:.0f}" for k, v in row.items()), flush=True)
    med = {k: statistics.median(v) for k, v in runs.items()}
    n = a.ranks
    print("medians (images/sec): " + ", ".join(f"{k}: {v:.0f}" for k, v in med.items()))
    print(f"ctower {n} ranks / 1 rank: {med[f'ctower {n}'] / med['ctower 1']:.2f}x; "
          f"DDP {n} / 1: {med[f'ddp {n}'] / med['ddp 1']:.2f}x; "
          f"ctower {n} ranks / DDP {n}: {med[f'ctower {n}'] / med[f'ddp {n}']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
