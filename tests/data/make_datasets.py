#!/usr/bin/env python3
"""Writes small datasets in the formats ctower reads, good and bad, for
tests/data/test_sources.c and tests/cli/datasets.sh.

Usage: make_datasets.py OUT

OUT/cifar10, OUT/cifar100: the binary version's files (a few records each).
OUT/folder: train/<class>/ and test/<class>/ of PNG and JPEG images, 8x8.
OUT/tfrecord: train-0000{0,1}-of-00002 and validation-00000-of-00001 of
tf.Example records (image/encoded, image/class/label 1-based as
tf_cnn_benchmarks' ImageNet), 8x8 RGB.
OUT/expected/<name>_<split>.bin: what each example must read back as, one
record per example: int32 little-endian label, then H*W*C pixel bytes (HWC),
for JPEG as PIL decodes it.
OUT/bad/...: one folder per kind of bad input (see the end of this file).
"""
import io
import os
import random
import shutil
import struct
import sys

from PIL import Image

OUT = sys.argv[1]
rng = random.Random(7)


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def expected(name, examples):
    """examples: (label, HWC bytes) in index order."""
    write(os.path.join(OUT, "expected", name + ".bin"),
          b"".join(struct.pack("<i", label) + pixels for label, pixels in examples))


# ---- CIFAR -------------------------------------------------------------------

def cifar_record(labels):
    planes = bytes(rng.randrange(256) for _ in range(3072))
    hwc = bytes(planes[k * 1024 + p] for p in range(1024) for k in range(3))
    return bytes(labels) + planes, hwc


def cifar10_file(path, n, examples):
    """Writes n CIFAR-10 records to path, appending what they hold to examples."""
    data = b""
    for _ in range(n):
        label = rng.randrange(10)
        rec, hwc = cifar_record([label])
        data += rec
        examples.append((label, hwc))
    write(path, data)


def make_cifar():
    train, test = [], []
    for i in range(1, 6):
        cifar10_file(f"{OUT}/cifar10/data_batch_{i}.bin", 2, train)
    cifar10_file(f"{OUT}/cifar10/test_batch.bin", 3, test)
    expected("cifar10_train", train)
    expected("cifar10_test", test)
    for split, n in (("train", 6), ("test", 3)):
        data, fine, coarse = b"", [], []
        for _ in range(n):
            c, f = rng.randrange(20), rng.randrange(100)
            rec, hwc = cifar_record([c, f])
            data += rec
            fine.append((f, hwc))
            coarse.append((c, hwc))
        write(f"{OUT}/cifar100/{split}.bin", data)
        expected(f"cifar100_{split}", fine)
        expected(f"cifar100_coarse_{split}", coarse)


# ---- images ------------------------------------------------------------------

def random_image(mode, size=(8, 8)):
    img = Image.new(mode, size)
    bands = len(img.getbands())
    img.putdata([tuple(rng.randrange(256) for _ in range(bands)) if bands > 1
                 else rng.randrange(256) for _ in range(size[0] * size[1])])
    return img


def encoded(img, fmt):
    buf = io.BytesIO()
    img.save(buf, fmt, **({"quality": 95} if fmt == "JPEG" else {}))
    return buf.getvalue()


def as_rgb_bytes(data):
    """What ctower must read: the image decoded by PIL, alpha dropped, RGB."""
    img = Image.open(io.BytesIO(data))
    if img.mode == "P":
        img = img.convert("RGBA")
    if img.mode in ("LA", "L"):
        img = img.convert("L").convert("RGB")
    return img.convert("RGB").tobytes()


def make_folder():
    # train: cats (PNG RGB, PNG gray, PNG RGBA, PNG palette), dogs (JPEG, JPEG gray), zebra (.PNG)
    files = {
        "train/cats/a.png": encoded(random_image("RGB"), "PNG"),
        "train/cats/b.png": encoded(random_image("L"), "PNG"),
        "train/cats/c.png": encoded(random_image("RGBA"), "PNG"),
        "train/cats/d.png": encoded(random_image("RGB").convert("P"), "PNG"),
        "train/dogs/a.jpg": encoded(random_image("RGB"), "JPEG"),
        "train/dogs/b.JPEG": encoded(random_image("L"), "JPEG"),
        "train/zebra/a.PNG": encoded(random_image("RGB"), "PNG"),
        "test/dogs/x.jpg": encoded(random_image("RGB"), "JPEG"),
        "test/zebra/y.png": encoded(random_image("RGB"), "PNG"),
    }
    classes = {"cats": 0, "dogs": 1, "zebra": 2}
    for path, data in files.items():
        write(f"{OUT}/folder/{path}", data)
    write(f"{OUT}/folder/train/cats/.hidden", b"ignored")
    for split in ("train", "test"):
        names = sorted(p for p in files if p.startswith(split + "/"))
        expected(f"folder_{split}", [(classes[p.split("/")[1]], as_rgb_bytes(files[p]))
                                     for p in names])
    # one image to be resized (a constant colour) and one to turn gray
    write(f"{OUT}/resize/train/only/a.png", encoded(Image.new("RGB", (5, 7), (10, 200, 30)), "PNG"))
    write(f"{OUT}/resize/test/only/a.png", encoded(Image.new("RGB", (8, 8), (10, 200, 30)), "PNG"))
    ramp = Image.new("L", (2, 1))
    ramp.putdata([0, 100])
    write(f"{OUT}/stretch/train/only/a.png", encoded(ramp, "PNG"))
    write(f"{OUT}/stretch/test/only/a.png", encoded(ramp, "PNG"))


# ---- TFRecord ------------------------------------------------------------------

def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def masked(crc):
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def tfrecord(records):
    out = b""
    for data in records:
        length = struct.pack("<Q", len(data))
        out += length + struct.pack("<I", masked(crc32c(length))) + data
        out += struct.pack("<I", masked(crc32c(data)))
    return out


def varint(v):
    v &= (1 << 64) - 1
    out = b""
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def field(number, payload):  # a length-delimited field
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def example(features):
    """features: name -> bytes (a BytesList) or int (an Int64List, packed)."""
    entries = b""
    for name, value in features.items():
        if isinstance(value, bytes):
            feature = field(1, field(1, value))
        else:
            feature = field(3, field(1, varint(value)))
        entries += field(1, field(1, name.encode()) + field(2, feature))
    return field(1, entries)


def make_tfrecord():
    for split, files in (("train", ["train-00000-of-00002", "train-00001-of-00002"]),
                         ("test", ["validation-00000-of-00001"])):
        examples = []
        for name in files:
            records = []
            for i in range(3):
                label = rng.randrange(5)
                data = encoded(random_image("RGB"), "PNG" if i % 2 else "JPEG")
                records.append(example({"image/encoded": data, "image/class/label": label + 1,
                                        "image/format": b"JPEG"}))
                examples.append((label, as_rgb_bytes(data)))
            write(f"{OUT}/tfrecord/{name}", tfrecord(records))
        expected(f"tfrecord_{split}", examples)
    # the other layout: train/*.tfrecord and test/*.tfrecord
    rec = [example({"image/encoded": encoded(random_image("RGB"), "PNG"), "image/class/label": 1})]
    write(f"{OUT}/tfrecord_dirs/train/a.tfrecord", tfrecord(rec))
    write(f"{OUT}/tfrecord_dirs/test/b.tfrecord", tfrecord(rec))


# ---- bad input -------------------------------------------------------------------

def copy(src, dst):
    shutil.copytree(f"{OUT}/{src}", f"{OUT}/bad/{dst}")


def make_bad():
    copy("cifar10", "cifar_truncated")  # test_batch.bin loses its last 100 bytes
    path = f"{OUT}/bad/cifar_truncated/test_batch.bin"
    data = open(path, "rb").read()
    write(path, data[:-100])
    copy("cifar10", "cifar_label")  # record 1 of data_batch_2.bin has label 12
    path = f"{OUT}/bad/cifar_label/data_batch_2.bin"
    data = bytearray(open(path, "rb").read())
    data[3073] = 12
    write(path, bytes(data))

    # train/dogs/a.jpg cut short inside its pixels: libjpeg only warns, which must fail
    copy("folder", "jpeg_corrupt")
    data = encoded(random_image("RGB", (64, 64)), "JPEG")
    write(f"{OUT}/bad/jpeg_corrupt/train/dogs/a.jpg", data[:len(data) * 3 // 4])
    copy("folder", "png_corrupt")  # a flipped byte in the pixels: a CRC error
    path = f"{OUT}/bad/png_corrupt/train/cats/a.png"
    data = bytearray(open(path, "rb").read())
    at = data.index(b"IDAT") + 8
    data[at] ^= 0xFF
    write(path, bytes(data))
    copy("folder", "not_image")  # a text file named like a JPEG
    write(f"{OUT}/bad/not_image/train/dogs/c.jpg", b"this is not an image\n")
    copy("folder", "other_file")  # a file that is not an image at all
    write(f"{OUT}/bad/other_file/train/cats/notes.txt", b"notes\n")
    copy("folder", "empty_class")
    os.makedirs(f"{OUT}/bad/empty_class/train/emus")
    copy("folder", "test_class")  # a test class the train split lacks
    write(f"{OUT}/bad/test_class/test/yaks/a.png", encoded(random_image("RGB"), "PNG"))
    copy("folder", "cmyk")  # a CMYK JPEG: cannot be made RGB
    write(f"{OUT}/bad/cmyk/train/dogs/c.jpg", encoded(random_image("CMYK"), "JPEG"))

    copy("tfrecord", "tfrecord_data_crc")  # a flipped byte in record 1's data
    path = f"{OUT}/bad/tfrecord_data_crc/train-00000-of-00002"
    data = bytearray(open(path, "rb").read())
    first = struct.unpack("<Q", data[:8])[0] + 16
    data[first + 12 + 5] ^= 0xFF
    write(path, bytes(data))
    copy("tfrecord", "tfrecord_length_crc")  # a flipped byte in record 1's length
    path = f"{OUT}/bad/tfrecord_length_crc/train-00001-of-00002"
    data = bytearray(open(path, "rb").read())
    first = struct.unpack("<Q", data[:8])[0] + 16
    data[first] ^= 0x01
    write(path, bytes(data))
    copy("tfrecord", "tfrecord_truncated")
    path = f"{OUT}/bad/tfrecord_truncated/validation-00000-of-00001"
    data = open(path, "rb").read()
    write(path, data[:-7])
    copy("tfrecord", "tfrecord_missing")  # record 0 of the second file has no label
    copy("tfrecord", "tfrecord_label")  # record 0 of the second file has label 99
    copy("tfrecord", "tfrecord_image")  # record 0 of the second file: a JPEG cut short
    jpeg = encoded(random_image("RGB", (64, 64)), "JPEG")
    for kind, features in (("missing", {"image/encoded": encoded(random_image("RGB"), "PNG")}),
                           ("label", {"image/encoded": encoded(random_image("RGB"), "PNG"),
                                      "image/class/label": 99}),
                           ("image", {"image/encoded": jpeg[:len(jpeg) * 3 // 4],
                                      "image/class/label": 1})):
        path = f"{OUT}/bad/tfrecord_{kind}/train-00001-of-00002"
        data = open(path, "rb").read()
        write(path, tfrecord([example(features)]) + data)


make_cifar()
make_folder()
make_tfrecord()
make_bad()
