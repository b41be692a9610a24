"""pytest for the Python package: CTest runs it with PYTHONPATH=build/python
(tests/CMakeLists.txt, label `python`); each test starts from a new default
graph."""
import os
import subprocess
import sys

import pytest

import ctower.compat.v1 as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def run_script(text, timeout=120):
    """Runs Python code in a process of its own; returns (returncode, stdout, stderr)."""
    env = dict(os.environ)
    done = subprocess.run([sys.executable, "-c", text], capture_output=True, text=True,
                          timeout=timeout, env=env)
    return done.returncode, done.stdout, done.stderr
