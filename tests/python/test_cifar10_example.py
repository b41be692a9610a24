"""examples/cifar10_multi_gpu_train.py, TensorFlow's CIFAR-10 multi-GPU
tutorial on ctower, trains what `ctower train examples/cifar10_cnn.yaml`
trains with the parameter-server update: on one tower its weights after N
steps are the command's bit for bit; on two they agree within 1e-6 (the
tutorial averages the towers' mean gradients, each with the weight decay;
the trainer sums the examples' gradients and adds the decay once: the
same sums rounded in another order)."""
import os
import subprocess
import sys

import numpy as np
import pytest

from ctower import _ctower

SOURCE = os.environ.get("CT_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
STEPS = 3


@pytest.fixture(scope="module")
def cifar(tmp_path_factory):
    """CIFAR-10's binary files, of random images: 5 x 80 train, 32 test."""
    folder = tmp_path_factory.mktemp("cifar10")
    rng = np.random.RandomState(1)
    for name, n in [("data_batch_%d.bin" % i, 80) for i in range(1, 6)] + [("test_batch.bin", 32)]:
        records = rng.randint(0, 256, (n, 3073)).astype(np.uint8)
        records[:, 0] = rng.randint(0, 10, n)
        records.tofile(str(folder / name))
    return str(folder)


def weights(path):
    tensors, _ = _ctower.checkpoint_read(path)
    return {k: np.asarray(v) for k, v in tensors.items()}


def train_both(cifar, tmp_path, towers):
    ours, theirs = str(tmp_path / "example.safetensors"), str(tmp_path / "command.safetensors")
    done = subprocess.run([sys.executable, os.path.join(SOURCE, "examples",
                                                        "cifar10_multi_gpu_train.py"),
                           "--data_dir", cifar, "--num_gpus", str(towers), "--max_steps",
                           str(STEPS), "--checkpoint", ours], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "step %d, loss = " % STEPS in done.stdout
    command = os.path.join(os.environ["CT_BINARY_DIR"], "ctower")
    done = subprocess.run([command, "train", os.path.join(SOURCE, "examples", "cifar10_cnn.yaml"),
                           "--quiet", "dataset.path=" + cifar, "train.epochs=1",
                           "train.max_steps=%d" % STEPS, "devices.n_towers=%d" % towers,
                           "session.device_count={CPU: %d}" % towers,
                           "devices.variable_update=parameter_server",
                           "train.checkpoint=" + theirs], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    a, b = weights(ours), weights(theirs)
    assert sorted(b) == ["conv1/biases", "conv1/weights", "conv2/biases", "conv2/weights",
                         "local3/biases", "local3/weights", "local4/biases", "local4/weights",
                         "logits/biases", "logits/weights"]
    assert set(b) <= set(a)
    return a, b


def test_one_tower_bit_for_bit(cifar, tmp_path):
    a, b = train_both(cifar, tmp_path, 1)
    for name in b:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


def test_two_towers_within_rounding(cifar, tmp_path):
    a, b = train_both(cifar, tmp_path, 2)
    for name in b:
        np.testing.assert_allclose(a[name], b[name], rtol=0, atol=1e-6, err_msg=name)
