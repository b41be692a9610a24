"""ctower from Python: `import ctower.compat.v1 as tf` for TensorFlow 1.x's
graphs and sessions, `ctower.train(config)` for what `ctower train` runs,
and `ctower.devices()` for the devices a session would have."""
import json as _json
import os as _os
import sys as _sys
import tempfile as _tempfile

from ctower import _ctower
from ctower import errors

__version__ = _ctower.version


def devices(device_count=None, visible_device_list=None):
    """Every device a session would have: [{name, kind, threads, memory_limit, description}].
    device_count: TensorFlow's map, e.g. {'CPU': 2, 'GPU': 0}."""
    counts = {str(k).upper(): int(v) for k, v in (device_count or {}).items()}
    return _ctower.devices(cpu=counts.get("CPU", 1), gpu=counts.get("GPU", -1),
                           visible_device_list=visible_device_list)


def trainer_streams(graph):
    """Makes graph's random initializers (a ctower.compat.v1 Graph) draw as
    `ctower train` draws its variables, from the graph seed and each
    variable's name (or its seed=), instead of from TensorFlow's Philox
    streams: a Python program then starts from the command's weights."""
    graph._trainer_streams = True


def _yaml_value(value):
    """VALUE of a KEY=VALUE override: JSON is YAML, and a Python str stays
    that string (quoted, so '~', 'null' or ' #run2' are not read as YAML)."""
    return _json.dumps(value)


def _flatten(prefix, value, out):
    if isinstance(value, dict) and prefix.count(".") < 1:
        for k, v in value.items():
            _flatten(prefix + "." + str(k) if prefix else str(k), v, out)
    else:
        out.append("%s=%s" % (prefix, _yaml_value(value)))


def train(config=None, quiet=False, resume=False, **overrides):
    """Runs what `ctower train CONFIG [KEY=VALUE ...]` runs (progress,
    evaluation, checkpoints, TensorBoard, Ctrl-C) and returns the history:
    one dict per epoch (epoch, step, train_loss, train_accuracy, test_loss,
    test_accuracy, seconds, images_per_second).

    config: a YAML file's path, or a dict of the same keys (sections of
    keys: {'model': {'name': 'mlp'}, 'train': {'epochs': 1}}); overrides:
    dotted keys, as the command's, e.g. train(path, **{'train.epochs': 2}).
    Values are Python values (a list for a list); a str is that string.
    Ctrl-C stops after the step with a checkpoint and raises KeyboardInterrupt."""
    path, assignments = None, []
    if isinstance(config, dict):
        _flatten("", config, assignments)
    elif config is not None:
        path = _os.fspath(config)
    for key, value in overrides.items():
        assignments.append("%s=%s" % (key, _yaml_value(value)))
    _sys.stdout.flush()
    _sys.stderr.flush()
    return _ctower.train(path, assignments, quiet=quiet, resume=resume)
