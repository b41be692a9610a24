#!/usr/bin/python3
"""PyTorch counterpart of bench/bench_step.c: times training steps on random data.

What it measures
    N training steps (zero_grad(set_to_none=True), forward, softmax
    cross-entropy loss with integer labels averaged over the batch, backward,
    momentum SGD update with lr 0.01 and momentum 0.9) after W warm-up steps,
    on one fixed batch of uniform [0, 1) images with labels i % 10.
    Each step is timed with time.perf_counter(); the reported step time is the
    median (sorted[N // 2], the same choice as bench_step.c) and
    images_per_sec = batch / median.
    peak_rss_growth_mb is the growth of the process's peak resident set size
    (VmHWM in /proc/self/status) from just before the first warm-up step to
    just after the last timed step, in MiB.

Models (the same as ctower's zoo)
    mlp         784-256-128-10 with ReLU, input flattened 28x28x1
    fmnist_cnn  conv 5x5x32 SAME + ReLU, maxpool 2x2/2, conv 5x5x64 SAME +
                ReLU, maxpool 2x2/2, flatten, dense 1024 + ReLU, dropout 0.4,
                dense 10
    cifar10_cnn the TensorFlow CIFAR-10 tutorial network on 24x24x3 crops:
                conv 5x5x64 SAME + ReLU, max pool 3x3/2, LRN (radius 4,
                bias 1, alpha 0.001/9 per element as TensorFlow counts it,
                beta 0.75), conv 5x5x64 + ReLU, LRN, max pool 3x3/2, dense
                384 + ReLU, dense 192 + ReLU, dense 10
    resnet20    the CIFAR ResNet-20 on 32x32x3: conv-BN-ReLU 16, three stages
                of three basic blocks (16/32/64, stride 2 at the start of
                stages 2 and 3, 1x1 conv-BN projection shortcuts), global
                average pooling, dense 10 (272,474 parameters, as ctower's)
    Input is NCHW (PyTorch's native layout); ctower uses NHWC.

Precision (--precision)
    bf16 runs forward and loss under torch.autocast(dtype=torch.bfloat16)
    with fp32 weights, on the CPU as on a GPU (PyTorch's CPU autocast:
    convolutions and matmuls in bf16 through oneDNN where the CPU has it).

GPU (--device cuda)
    The model, data and optimizer live on the GPU; each step ends with
    torch.cuda.synchronize() before its time is taken (ctower's session run
    also waits for the GPU). --precision bf16 runs forward and loss under
    torch.autocast(dtype=torch.bfloat16) with fp32 weights; tf32 sets
    torch.backends.{cuda.matmul,cudnn}.allow_tf32; fp32 clears both.
    peak_gpu_mb is torch.cuda.max_memory_allocated() in MiB.

How to run (Debian's python3-torch lives under /usr/bin/python3)
    /usr/bin/python3 bench/torch_step.py --model fmnist_cnn --batch 128 \
        --threads 2 --steps 30 --warmup 5

It prints exactly one JSON line:
    {"framework":"pytorch","model":...,"batch":...,"threads":...,
     "images_per_sec":...,"step_ms_median":...,"peak_rss_growth_mb":...}
Thread count is set with torch.set_num_threads(T); the environment
(OMP_NUM_THREADS, allocator tuning, ...) is left to the caller, see
bench/bench_train.py.
"""
import argparse
import contextlib
import json
import sys
import time

import torch
import torch.nn as nn


def peak_rss_mb():
    """Peak resident set size of this process (VmHWM), in MiB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


# each model's image shape, channels first: that of its dataset
INPUT_SHAPES = {"mlp": (1, 28, 28), "fmnist_cnn": (1, 28, 28), "cifar10_cnn": (3, 24, 24),
                "resnet20": (3, 32, 32)}


def make_model(name):
    if name == "mlp":
        return nn.Sequential(
            nn.Flatten(),
            nn.Linear(28 * 28, 256), nn.ReLU(),
            nn.Linear(256, 128), nn.ReLU(),
            nn.Linear(128, 10),
        )
    if name == "fmnist_cnn":
        return nn.Sequential(
            nn.Conv2d(1, 32, 5, padding=2), nn.ReLU(),
            nn.MaxPool2d(2, 2),
            nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(),
            nn.MaxPool2d(2, 2),
            nn.Flatten(),
            nn.Linear(7 * 7 * 64, 1024), nn.ReLU(),
            nn.Dropout(0.4),
            nn.Linear(1024, 10),
        )
    if name == "cifar10_cnn":
        # TensorFlow's LRN scales alpha by each squared element; PyTorch's
        # divides its alpha by the window size (9): the same normalization
        return nn.Sequential(
            nn.Conv2d(3, 64, 5, padding=2), nn.ReLU(),
            nn.MaxPool2d(3, 2, padding=1),
            nn.LocalResponseNorm(9, alpha=0.001, beta=0.75, k=1.0),
            nn.Conv2d(64, 64, 5, padding=2), nn.ReLU(),
            nn.LocalResponseNorm(9, alpha=0.001, beta=0.75, k=1.0),
            nn.MaxPool2d(3, 2, padding=1),
            nn.Flatten(),
            nn.Linear(6 * 6 * 64, 384), nn.ReLU(),
            nn.Linear(384, 192), nn.ReLU(),
            nn.Linear(192, 10),
        )
    if name == "resnet20":
        return ResNet20()
    raise ValueError("unknown model: " + name)


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                          nn.BatchNorm2d(cout))

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + self.shortcut(x))


class ResNet20(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.conv0 = nn.Conv2d(3, 16, 3, 1, 1, bias=False)
        self.bn0 = nn.BatchNorm2d(16)
        blocks, cin = [], 16
        for stage, cout in enumerate([16, 32, 64]):
            for block in range(3):
                blocks.append(BasicBlock(cin, cout, 2 if stage > 0 and block == 0 else 1))
                cin = cout
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(64, classes)

    def forward(self, x):
        x = torch.relu(self.bn0(self.conv0(x)))
        x = self.blocks(x)
        return self.fc(x.mean(dim=(2, 3)))


def main():
    p = argparse.ArgumentParser(description="Time PyTorch training steps on random data.")
    p.add_argument("--model", default="fmnist_cnn", choices=list(INPUT_SHAPES))
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--precision", default="fp32", choices=["fp32", "tf32", "bf16"])
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=5)
    a = p.parse_args()
    if a.batch < 1 or a.threads < 1 or a.steps < 1 or a.warmup < 0:
        p.error("batch, threads and steps must be >= 1, warmup >= 0")

    torch.set_num_threads(a.threads)
    torch.manual_seed(12345)
    cuda = a.device == "cuda"
    if cuda:
        tf32 = a.precision == "tf32"
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
        torch.backends.cudnn.benchmark = True
    model = make_model(a.model).to(a.device)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()  # mean over the batch
    images = torch.rand(a.batch, *INPUT_SHAPES[a.model], device=a.device)
    labels = torch.arange(a.batch, dtype=torch.long, device=a.device) % 10
    autocast = (torch.autocast(device_type=a.device, dtype=torch.bfloat16)
                if a.precision == "bf16" else contextlib.nullcontext())

    times = []
    rss_before = peak_rss_mb()
    for i in range(a.warmup + a.steps):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with autocast:
            loss = loss_fn(model(images), labels)
        loss.backward()
        opt.step()
        if cuda:
            torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        if i >= a.warmup:
            times.append(dt)
    rss_growth = peak_rss_mb() - rss_before
    if not torch.isfinite(loss).item():
        print("torch_step: loss is not finite", file=sys.stderr)
        return 1

    times.sort()
    median = times[len(times) // 2]
    print(json.dumps({
        "framework": "pytorch",
        "model": a.model,
        "batch": a.batch,
        "threads": a.threads,
        "device": a.device,
        "precision": a.precision,
        "images_per_sec": round(a.batch / median, 1),
        "step_ms_median": round(median * 1e3, 3),
        "peak_rss_growth_mb": round(rss_growth, 1),
        "peak_gpu_mb": round(torch.cuda.max_memory_allocated() / 2**20, 1) if cuda else 0.0,
    }, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
