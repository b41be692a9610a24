"""TensorFlow 1.x programs as their authors wrote them: MNIST's input_data
reading IDX files, and scripts/tf1-programs.sh running a folder of programs
with only their import lines changed."""
import gzip
import os
import subprocess
import textwrap

import numpy as np
import pytest

import ctower.compat.v1 as tf
from ctower.compat.v1.examples.tutorials.mnist import input_data

SOURCE = os.environ.get("CT_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))


def _write_idx(path, array):
    header = (0x800 + array.ndim).to_bytes(4, "big")
    header += b"".join(d.to_bytes(4, "big") for d in array.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + array.astype(np.uint8).tobytes())


def _mnist_folder(folder, train=60, test=20):
    rng = np.random.RandomState(5)
    for prefix, n in (("train", train), ("t10k", test)):
        images = rng.randint(0, 256, size=(n, 28, 28))
        labels = np.arange(n) % 10
        _write_idx(folder / ("%s-images-idx3-ubyte.gz" % prefix), images)
        _write_idx(folder / ("%s-labels-idx1-ubyte.gz" % prefix), labels)
    return folder


def test_read_data_sets_reads_idx_files(tmp_path):
    data = input_data.read_data_sets(str(_mnist_folder(tmp_path)), one_hot=True,
                                     validation_size=10)
    assert data.train.images.shape == (50, 784) and data.train.images.dtype == np.float32
    assert data.validation.num_examples == 10 and data.test.labels.shape == (20, 10)
    assert 0.0 <= data.train.images.min() and data.train.images.max() <= 1.0
    np.testing.assert_array_equal(data.test.labels.argmax(1), np.arange(20) % 10)
    dense = input_data.read_data_sets(str(tmp_path), validation_size=0)
    assert dense.train.labels.dtype == np.uint8 and dense.train.num_examples == 60
    # next_batch goes round the epoch: every example once, then the next epoch
    seen = np.concatenate([dense.train.next_batch(25)[1] for _ in range(3)])
    assert dense.train.epochs_completed == 1 and len(seen) == 75
    np.testing.assert_array_equal(np.bincount(seen[:60]), np.full(10, 6))


def test_read_data_sets_names_what_is_missing(tmp_path):
    with pytest.raises(tf.errors.NotFoundError, match="train-images-idx3-ubyte.gz"):
        input_data.read_data_sets(str(tmp_path))
    _mnist_folder(tmp_path)
    with open(tmp_path / "t10k-labels-idx1-ubyte.gz", "wb") as f:
        f.write(gzip.compress(b"\x00\x00\x08\x03" + b"\x00" * 12))
    with pytest.raises(tf.errors.DataLossError, match="not an IDX file of labels"):
        input_data.read_data_sets(str(tmp_path))


PROGRAM = """
import argparse
import sys
from tensorflow.examples.tutorials.mnist import input_data
import tensorflow as tf

def main(_):
    mnist = input_data.read_data_sets(FLAGS.data_dir, one_hot=True, validation_size=0)
    x = tf.placeholder(tf.float32, [None, 784])
    y_ = tf.placeholder(tf.float32, [None, 10])
    W = tf.Variable(tf.zeros([784, 10]))
    y = tf.matmul(x, W)
    loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=y_, logits=y))
    step = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(5):
            xs, ys = mnist.train.next_batch(20)
            sess.run(step, {x: xs, y_: ys})
        print("loss %.4f" % sess.run(loss, {x: mnist.test.images, y_: mnist.test.labels}))

if __name__ == '__main__':
    parser = argparse.ArgumentParser()
    parser.add_argument('--data_dir', type=str, default='/nowhere')
    FLAGS, unparsed = parser.parse_known_args()
    tf.app.run(main=main, argv=[sys.argv[0]] + unparsed)
"""


def test_tf1_programs_runs_a_folder_with_the_import_line_changed(tmp_path):
    programs = tmp_path / "programs"
    programs.mkdir()
    (programs / "softmax.py").write_text(textwrap.dedent(PROGRAM))
    (programs / "broken.py").write_text("import tensorflow as tf\ntf.no_such_name\n")
    (tmp_path / "data").mkdir()
    data = _mnist_folder(tmp_path / "data")
    env = dict(os.environ, CTOWER_PYTHONPATH=os.path.join(os.environ["CT_BINARY_DIR"], "python"))
    done = subprocess.run(["bash", os.path.join(SOURCE, "scripts", "tf1-programs.sh"),
                           str(programs), "--data_dir=%s" % data],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith("ran     softmax.py") and "loss " in line for line in lines), lines
    assert any(line.startswith("FAILED  broken.py (exit 1") and "tf.no_such_name" in line
               for line in lines), lines
    assert lines[-1] == "1 ran, 1 failed"
    # the programs themselves are untouched
    assert "import tensorflow as tf" in (programs / "softmax.py").read_text()
