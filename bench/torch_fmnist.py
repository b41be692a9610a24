#!/usr/bin/python3
"""PyTorch's side of bench/main_job.py: fmnist_cnn trained on Fashion-MNIST.

The model of ctower's main job (bench/torch_step.py's fmnist_cnn: conv 5x5x32
SAME + ReLU, max pool, conv 5x5x64 + ReLU, max pool, dense 1024 + ReLU,
dropout 0.4, dense 10), the same batch (128) and optimizer (Adam, lr 0.001),
the images scaled to [0, 1], reshuffled every epoch; after each epoch the
test set is evaluated. Prints one JSON line per epoch:
    {"epoch": 1, "seconds": 31.2, "test_accuracy": 0.8801}
seconds counts from the start of the script (data loading included) to the
end of that epoch's evaluation.

    /usr/bin/python3 bench/torch_fmnist.py --threads 2 --epochs 10 [--target 0.91] [--seed 42]

--target stops after the first epoch whose test accuracy reaches it. Run it
with bench/bench_train.py's "best" environment for PyTorch at its best.
"""
import argparse
import gzip
import json
import os
import sys
import time

T0 = time.perf_counter()

import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_step import make_model  # noqa: E402


def read_idx(path):
    """An IDX file (gzipped) as a numpy array."""
    with gzip.open(path, "rb") as f:
        raw = f.read()
    dims = raw[3]
    shape = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def load(folder, split):
    images = read_idx(os.path.join(folder, "%s-images-idx3-ubyte.gz" % split))
    labels = read_idx(os.path.join(folder, "%s-labels-idx1-ubyte.gz" % split))
    x = torch.from_numpy(images.astype(np.float32) / 255.0).unsqueeze(1)
    return x, torch.from_numpy(labels.astype(np.int64))


def main():
    p = argparse.ArgumentParser(description="fmnist_cnn on Fashion-MNIST with PyTorch.")
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--target", type=float, default=0.0)
    p.add_argument("--seed", type=int, default=42)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    train_x, train_y = load(a.data, "train")
    test_x, test_y = load(a.data, "t10k")
    model = make_model("fmnist_cnn")
    opt = torch.optim.Adam(model.parameters(), lr=0.001)
    loss_fn = torch.nn.CrossEntropyLoss()
    for epoch in range(1, a.epochs + 1):
        model.train()
        order = torch.randperm(len(train_x))
        for start in range(0, len(order), a.batch):
            idx = order[start:start + a.batch]
            opt.zero_grad(set_to_none=True)
            loss_fn(model(train_x[idx]), train_y[idx]).backward()
            opt.step()
        model.eval()
        correct = 0
        with torch.no_grad():
            for start in range(0, len(test_x), 1000):
                logits = model(test_x[start:start + 1000])
                correct += (logits.argmax(1) == test_y[start:start + 1000]).sum().item()
        accuracy = correct / len(test_x)
        print(json.dumps({"epoch": epoch, "seconds": round(time.perf_counter() - T0, 1),
                          "test_accuracy": accuracy}), flush=True)
        if a.target and accuracy >= a.target:
            break
    return 0


if __name__ == "__main__":
    sys.exit(main())
