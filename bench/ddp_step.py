#!/usr/bin/python3
"""PyTorch DistributedDataParallel counterpart of `mpirun -np N ctower bench`.

What it measures
    N processes (gloo backend over 127.0.0.1, one thread each, process k
    pinned to core k when the machine has enough) train the same model as
    bench/torch_step.py (`make_model`) as DDP replicas: each takes
    global_batch / N examples (the first global_batch % N take one more) of
    one fixed batch of uniform [0, 1) images with labels i % 10, and every
    step runs zero_grad(set_to_none=True), forward, softmax cross-entropy
    averaged over its shard, backward (DDP all-reduces the gradients in
    buckets while it runs) and the optimizer (adam lr 0.001, as
    examples/fmnist_cnn.yaml, or momentum SGD lr 0.01 momentum 0.9). Steps
    are timed on rank 0 after W warm-up steps; images_per_sec is
    global_batch / the median step time (sorted[N // 2], as bench_step.c).

How to run (Debian's python3-torch lives under /usr/bin/python3)
    /usr/bin/python3 bench/ddp_step.py --model fmnist_cnn --batch 256 --procs 2

It prints exactly one JSON line:
    {"framework":"pytorch-ddp","model":...,"batch":...,"procs":...,
     "images_per_sec":...,"step_ms_median":...}
"""
import argparse
import json
import os
import socket
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_step import make_model  # noqa: E402  the models, defined once


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker(rank, a, port, result):
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) >= a.procs:
        os.sched_setaffinity(0, {cores[rank]})
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=a.procs)
    torch.manual_seed(12345)
    model = DistributedDataParallel(make_model(a.model))
    model.train()
    if a.optimizer == "adam":
        opt = torch.optim.Adam(model.parameters(), lr=0.001)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    shard = a.batch // a.procs + (1 if rank < a.batch % a.procs else 0)
    shape = (3, 32, 32) if a.model == "resnet20" else (1, 28, 28)
    images = torch.rand(shard, *shape)
    labels = torch.arange(shard, dtype=torch.long) % 10
    times = []
    for i in range(a.warmup + a.steps):
        dist.barrier()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(images), labels)
        loss.backward()
        opt.step()
        if i >= a.warmup:
            times.append(time.perf_counter() - t0)
    if rank == 0:
        times.sort()
        result.put((times[len(times) // 2], bool(torch.isfinite(loss).item())))
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description="Time PyTorch DDP training steps on random data.")
    p.add_argument("--model", default="fmnist_cnn", choices=["fmnist_cnn", "mlp", "resnet20"])
    p.add_argument("--optimizer", default="adam", choices=["adam", "momentum"])
    p.add_argument("--batch", type=int, default=256, help="the global batch")
    p.add_argument("--procs", type=int, default=2)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=5)
    a = p.parse_args()
    if a.batch < a.procs or a.procs < 1 or a.steps < 1 or a.warmup < 0:
        p.error("procs and steps must be >= 1, batch >= procs, warmup >= 0")
    ctx = mp.get_context("spawn")
    result = ctx.SimpleQueue()
    mp.spawn(worker, args=(a, free_port(), result), nprocs=a.procs, join=True)
    median, finite = result.get()
    if not finite:
        print("ddp_step: loss is not finite", file=sys.stderr)
        return 1
    print(json.dumps({
        "framework": "pytorch-ddp", "model": a.model, "optimizer": a.optimizer,
        "batch": a.batch, "procs": a.procs, "threads_per_proc": 1,
        "images_per_sec": round(a.batch / median, 1), "step_ms_median": round(median * 1e3, 3),
    }, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
