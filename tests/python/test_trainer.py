"""ctower.train runs what `ctower train` runs and returns the history;
ctower.devices lists the devices."""
import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

import ctower
import ctower.compat.v1 as tf

SYNTHETIC = {"name": "synthetic", "image_shape": [28, 28, 1], "num_classes": 10,
             "train_size": 256, "test_size": 64, "batch_size": 64}


def _read(path):
    tensors, metadata = ctower._ctower.checkpoint_read(str(path))
    return {k: np.asarray(v) for k, v in tensors.items()}, metadata


def test_devices():
    names = [d["name"] for d in ctower.devices()]
    assert names[0] == "/job:localhost/replica:0/task:0/device:CPU:0"
    two = ctower.devices({"CPU": 2, "GPU": 0})
    assert [d["name"][-5:] for d in two] == ["CPU:0", "CPU:1"]
    assert all(d["kind"] == "CPU" and d["threads"] >= 1 for d in two)


SOURCE = os.environ.get("CT_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
MLP_YAML = os.path.join(SOURCE, "examples", "mlp.yaml")


def test_train_returns_the_history_and_writes_what_the_command_writes(tmp_path):
    ours, theirs = tmp_path / "python.safetensors", tmp_path / "command.safetensors"
    overrides = {"dataset.name": "synthetic", "dataset.image_shape": [28, 28, 1],
                 "dataset.num_classes": 10, "dataset.train_size": 256,
                 "dataset.test_size": 64, "dataset.batch_size": 64, "train.epochs": 2,
                 "train.optimizer.name": "sgd", "train.optimizer.learning_rate": 0.05}
    history = ctower.train(MLP_YAML, quiet=True, **overrides, **{"train.checkpoint": str(ours)})
    assert [h["epoch"] for h in history] == [1, 2] and history[1]["step"] == 8
    assert history[1]["train_loss"] < history[0]["train_loss"]
    assert 0.0 <= history[1]["test_accuracy"] <= 1.0
    # the same run through the command: the same weights, bit for bit
    command = os.path.join(os.environ["CT_BINARY_DIR"], "ctower")
    done = subprocess.run([command, "train", MLP_YAML, "--quiet", "train.checkpoint=%s" % theirs]
                          + ["%s=%s" % (k, json.dumps(v)) for k, v in overrides.items()],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    a, meta = _read(ours)
    b, _ = _read(theirs)
    assert sorted(a) == sorted(b) and meta["global_step"] == "8"
    for name in a:
        np.testing.assert_array_equal(a[name], b[name])
    # a dict of the config's sections is the same config
    same = ctower.train({"model": {"name": "mlp"}, "dataset": SYNTHETIC,
                         "train": {"epochs": 2, "checkpoint": "",
                                   "optimizer": {"name": "sgd", "learning_rate": 0.05}}},
                        quiet=True)
    assert [h["train_loss"] for h in same] == [h["train_loss"] for h in history]
    # and tf.train.Saver reads it
    name = sorted(k for k in a if a[k].ndim == 2)[0]
    w = tf.get_variable(name, a[name].shape)
    with tf.Session() as sess:
        tf.train.Saver([w]).restore(sess, str(ours))
        np.testing.assert_array_equal(sess.run(w), a[name])


def test_train_from_a_yaml_file_with_overrides(tmp_path):
    history = ctower.train(MLP_YAML, quiet=True,
                           **{"dataset": SYNTHETIC, "train.epochs": 1, "train.checkpoint": "",
                              "dataset.batch_size": 128})
    assert len(history) == 1 and history[0]["step"] == 2


def test_a_str_value_stays_that_string(tmp_path, monkeypatch):
    # read as YAML, ' #run2' would be a comment and 'null' or '~' no value
    monkeypatch.chdir(tmp_path)
    for name in ("model #run2.safetensors", "null", "~", "[not, a, list]"):
        ctower.train({"model": {"name": "mlp"}, "dataset": SYNTHETIC,
                      "train": {"epochs": 1, "max_steps": 1, "checkpoint": name}}, quiet=True)
        assert (tmp_path / name).is_file(), name
    ctower.train({"model": {"name": "mlp"}, "dataset": SYNTHETIC}, quiet=True,
                 **{"train.epochs": 1, "train.max_steps": 1, "train.checkpoint": "x #run3"})
    assert (tmp_path / "x #run3").is_file()
    with pytest.raises(tf.errors.InvalidArgumentError, match="dataset.image_shape"):
        ctower.train({"model": {"name": "mlp"}, "dataset": SYNTHETIC}, quiet=True,
                     **{"dataset.image_shape": "[28, 28, 1]"})


def test_bad_configs_are_invalid_argument(tmp_path):
    with pytest.raises(tf.errors.InvalidArgumentError, match="train.epoks"):
        ctower.train({"model": {"name": "mlp"}}, **{"train.epoks": 1})
    with pytest.raises(tf.errors.NotFoundError):
        ctower.train(str(tmp_path / "missing.yaml"))


CTRL_C = """
import os, signal, sys, threading
import ctower
config = {"model": {"name": "mlp"},
          "dataset": {"name": "synthetic", "image_shape": [28, 28, 1], "num_classes": 10,
                      "train_size": 2560, "test_size": 64, "batch_size": 64},
          "train": {"epochs": 1000, "checkpoint": sys.argv[1]}}
try:
    ctower.train(config, quiet=True)
except KeyboardInterrupt as e:
    print("KeyboardInterrupt:", e, flush=True)
try:  # Python's own handler is back: Ctrl-C is KeyboardInterrupt again
    os.kill(os.getpid(), signal.SIGINT)
    threading.Event().wait(5)
except KeyboardInterrupt:
    print("restored", flush=True)
"""


def test_ctrl_c_stops_after_the_step_with_a_checkpoint(tmp_path):
    path = tmp_path / "m.safetensors"
    child = subprocess.Popen([sys.executable, "-c", CTRL_C, str(path)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    for line in child.stdout:  # Ctrl-C once training is under way
        if line.startswith("epoch 1/"):
            child.send_signal(signal.SIGINT)
            break
    out, err = child.communicate(timeout=300)
    assert child.returncode == 0, err
    assert "KeyboardInterrupt: stopped by SIGINT after step" in out
    assert "restored" in out
    _, meta = _read(path)
    assert int(meta["global_step"]) >= 40
