#!/usr/bin/python3
"""Writes the seed corpora of the fuzz targets: OUT/<target>/<seed>.

Usage: make_seeds.py SOURCE_DIR OUT

Configs are the examples/*.yaml and a few overrides; layer lists, the
examples' and a few whose names come close to clashing; device names, the
forms users write; checkpoints, IDX, CIFAR and TFRecord files, small
valid ones (the datasets from tests/data/make_datasets.py) and a few
broken ones.
"""
import glob
import gzip
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

SOURCE, OUT = sys.argv[1], sys.argv[2]


def seed(target, name, data):
    os.makedirs(f"{OUT}/{target}", exist_ok=True)
    with open(f"{OUT}/{target}/{name}", "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


for path in glob.glob(f"{SOURCE}/examples/*.yaml"):
    seed("config", os.path.basename(path), open(path, "rb").read())
for i, text in enumerate(["train.epochs=3", "session.device_count={CPU: 2, GPU: 0}",
                          "devices.towers=[/cpu:0, /job:worker/task:1/cpu:0]",
                          "train: {optimizer: {name: adam, learning_rate: 1e-3}}\n"]):
    seed("config", f"override_{i}", text)

# layer lists, as the value of model.layers: the examples' (their block
# lists, dedented) and a few that give names alike, repeats and blocks
for path in glob.glob(f"{SOURCE}/examples/*_layers.yaml"):
    lines = open(path).read().split("\n")
    start = lines.index("  layers:") + 1
    block = []
    for line in lines[start:]:
        if line.strip() and not line.startswith("    "):
            break
        block.append(line[4:])
    seed("layers", os.path.basename(path), "\n".join(block))
for i, text in enumerate([
        "[{dense: {name: d, units: 8, repeat: 2}}, {dense: {name: d_2, units: 8}}, {dense: {units: 10}}]",
        "[{dense: {units: 8, repeat: 3}}, {dense: {name: dense_0_3, units: 8}}, {dense: {units: 10}}]",
        "[{conv2d: {filters: 4, kernel: 3, padding: same, repeat: 2}}, batch_norm, {residual: {name: r, "
        "repeat: 2, shortcut: projection, layers: [{conv2d: {filters: 8, kernel: 3, stride: 2, padding: same}}, "
        "{batch_norm: {name: shortcut}}]}}, global_avg_pool, {dense: {units: 10}}]",
        "[{residual: {layers: [{conv2d: {filters: 3, kernel: 1, repeat: 2}}, {conv2d: {name: conv2d_0_2, "
        "filters: 3, kernel: 1}}]}}, flatten, {dense: {name: logits, units: 10}}]"]):
    seed("layers", f"list_{i}", text)

for i, text in enumerate(["/cpu:0", "/gpu:1", "/device:GPU:1", "/job:localhost/replica:0/task:0/device:CPU:0",
                          "/job:worker/task:3/cpu:*", "cpu:0", "/GPU:0"]):
    seed("device_name", f"name_{i}", text)


def safetensors(tensors, metadata):
    header, data = {"__metadata__": metadata}, b""
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


seed("safetensors", "small", safetensors(
    {"w": ("F32", [2, 2], struct.pack("<4f", 1, 2, 3, 4)), "n": ("I64", [1], struct.pack("<q", 7))},
    {"format": "ctower", "global_step": "3", "epoch": "0", "epoch_example": "96"}))
seed("safetensors", "empty", safetensors({}, {}))

idx = struct.pack(">IIII", 0x803, 2, 3, 3) + bytes(range(18))
seed("idx", "images", idx)
seed("idx", "images.gz", gzip.compress(idx))
seed("idx", "labels", struct.pack(">II", 0x801, 4) + bytes([1, 2, 3, 4]))
seed("idx", "floats", struct.pack(">IIII", 0xD02, 1, 2, 0) + struct.pack(">2f", 0.5, -1))

# model_exports: a header (ABI version, count, the array: 1 for the entries
# that follow, else an offset or an address) and entries of four pointer
# fields (name, description, build, layers), each an offset into the input
# where it is smaller than the input
def exports(abi, count, array, entries, tail=b""):
    body = struct.pack("<iiQ", abi, count, array)
    size = len(body) + 32 * len(entries)
    names = b""
    packed = b""
    for name, description, build, layers in entries:
        offset = size + len(tail) + len(names)
        names += name + b"\0"
        packed += struct.pack("<QQQQ", offset, description, build, layers)
    return body + packed + tail + names


seed("model_exports", "one_model", exports(1, 1, 1, [(b"dense", 0, 0x1234, 0)]))
seed("model_exports", "three_claimed", exports(1, 3, 1, [(b"a", 0, 0, 8)]))
seed("model_exports", "two_named_alike", exports(1, 2, 1, [(b"same", 0, 0, 0), (b"same", 0, 0, 0)]))
seed("model_exports", "other_abi", exports(2, 1, 1, [(b"dense", 0, 0, 0)]))
seed("model_exports", "huge_count", exports(1, 100000000, 1, [(b"dense", 0, 0, 0)]))
seed("model_exports", "array_elsewhere", exports(1, 1, 0xdeadbeef000, []))

with tempfile.TemporaryDirectory() as data:
    subprocess.run(["/usr/bin/python3", f"{SOURCE}/tests/data/make_datasets.py", data], check=True,
                   stdout=subprocess.DEVNULL)
    seed("cifar", "test_batch", open(f"{data}/cifar10/test_batch.bin", "rb").read())
    seed("cifar", "truncated", open(f"{data}/bad/cifar_truncated/test_batch.bin", "rb").read())
    seed("tfrecord", "validation", open(f"{data}/tfrecord/validation-00000-of-00001", "rb").read())
    for bad in ("tfrecord_data_crc", "tfrecord_length_crc"):
        for path in glob.glob(f"{data}/bad/{bad}/*"):
            seed("tfrecord", f"{bad}_{os.path.basename(path)}", open(path, "rb").read())
