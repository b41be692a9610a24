#!/usr/bin/env python3
"""JPEG decoding and augmentation: ctower's input pipeline against PyTorch's
DataLoader, in one run.

Writes an image folder of 256x256 JPEGs (10 classes), then alternates, for
--rounds rounds, ctower's pipeline (bench/pipeline_bench: --workers worker
threads decode, random-crop to 224 and flip into f32 batches) and a
DataLoader over torchvision's ImageFolder with RandomCrop(224),
RandomHorizontalFlip() and ToTensor() (--workers worker processes, the same
batch size). Each side takes --warmup batches untimed (the workers start),
then --batches timed ones from the same epoch. Prints every round, the
medians in images/sec and per worker, and their ratio.

Usage: jpeg_pipeline_bench.py [--build build] [--dir /tmp/jpeg_bench] [--workers 2]
                              [--batch 64] [--batches 60] [--warmup 4] [--rounds 5]
Needs python3-torchvision (Debian) and PIL.
"""
import argparse
import os
import random
import statistics
import subprocess
import sys
import time


def make_folder(root, n, size):
    """n JPEGs of size x size under root/train/<class>/ and a few in root/test:
    smooth colour fields with noise, as photos are smooth with detail."""
    from PIL import Image, ImageFilter

    done = os.path.join(root, f".done-{n}-{size}")
    if os.path.exists(done):
        return
    rng = random.Random(7)
    for split, count in (("train", n), ("test", 10)):
        for i in range(count):
            label = i % 10
            folder = os.path.join(root, split, f"class{label}")
            os.makedirs(folder, exist_ok=True)
            small = Image.frombytes("RGB", (8, 8), bytes(rng.getrandbits(8) for _ in range(192)))
            img = small.resize((size, size), Image.BICUBIC)
            noise = Image.effect_noise((size, size), 24).convert("RGB")
            img = Image.blend(img, noise, 0.15).filter(ImageFilter.SMOOTH)
            img.save(os.path.join(folder, f"{i:06d}.jpg"), quality=90)
    open(done, "w").close()


def run_ctower(args):
    out = subprocess.run(
        [os.path.join(args.build, "pipeline_bench"), args.dir, "--size", "256", "--crop", "224",
         "--batch", str(args.batch), "--threads", str(args.workers), "--batches",
         str(args.batches), "--warmup", str(args.warmup)],
        check=True, capture_output=True, text=True).stdout
    return float(out.split('"images_per_sec": ')[1].split(",")[0])


def run_torch(args):
    import torch
    import torchvision.transforms as T
    from torch.utils.data import DataLoader
    from torchvision.datasets import ImageFolder

    transform = T.Compose([T.RandomCrop(224), T.RandomHorizontalFlip(), T.ToTensor()])
    data = ImageFolder(os.path.join(args.dir, "train"), transform=transform)
    loader = DataLoader(data, batch_size=args.batch, shuffle=True, num_workers=args.workers,
                        drop_last=True)
    batches = iter(loader)
    for _ in range(args.warmup):
        next(batches)
    start = time.perf_counter()
    for _ in range(args.batches):
        images, _ = next(batches)
    seconds = time.perf_counter() - start
    assert images.shape == (args.batch, 3, 224, 224) and images.dtype == torch.float32
    del batches
    return args.batch * args.batches / seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--dir", default="/tmp/jpeg_bench")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--batches", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    make_folder(args.dir, args.batch * (args.warmup + args.batches), 256)
    ctower, torch = [], []
    print(f"{args.workers} workers, batch {args.batch}, {args.batches} timed batches "
          f"after {args.warmup}; images/sec")
    for r in range(args.rounds):
        # alternate which goes first, so a trend in the machine's load hits both
        first, second = (run_ctower, run_torch) if r % 2 == 0 else (run_torch, run_ctower)
        a, b = first(args), second(args)
        c, t = (a, b) if r % 2 == 0 else (b, a)
        ctower.append(c)
        torch.append(t)
        print(f"round {r + 1}: ctower {c:.1f}, torch {t:.1f}, ratio {c / t:.2f}", flush=True)
    mc, mt = statistics.median(ctower), statistics.median(torch)
    w = args.workers
    ratios = [c / t for c, t in zip(ctower, torch)]
    print(f"median: ctower {mc:.1f} images/sec ({mc / w:.1f} per worker), torch {mt:.1f} "
          f"images/sec ({mt / w:.1f} per worker), ratio {mc / mt:.2f} (per round: "
          f"{min(ratios):.2f} to {max(ratios):.2f}, median {statistics.median(ratios):.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
