"""The fuzz target of the Python front end (fuzz_compat_v1.py) for a few
thousand calls, and the calls it found raising an exception TensorFlow does
not raise for them (each now raises TensorFlow's class)."""
import os
import sys
import tempfile

import numpy as np
import pytest

import ctower.compat.v1 as tf

sys.path.insert(0, os.path.dirname(__file__))
import fuzz_compat_v1  # noqa: E402


def test_a_short_fuzz_run_finds_nothing():
    findings, made = fuzz_compat_v1.fuzz(3000, seed=20261201, timeout=60.0)
    assert findings == []
    assert made == 3000


def _saver_of_a_tensor():
    x = tf.constant([1.0])
    tf.train.Saver([x]).save(tf.Session(), os.path.join(tempfile.mkdtemp(), "m"))


def _save_without_a_session():
    tf.get_variable("v", [2])
    tf.train.Saver().save({}, os.path.join(tempfile.mkdtemp(), "m"))


def _eval_in_an_operation():
    x = tf.constant([1.0])
    x.eval(session=tf.no_op())


def _save_at_an_infinite_step():
    tf.get_variable("v", [2])
    tf.train.Saver().save(tf.Session(), os.path.join(tempfile.mkdtemp(), "m"),
                          global_step=tf.constant(float("inf")))


def _minimize_with_an_operation_as_step():
    v = tf.get_variable("v", [2])
    tf.train.GradientDescentOptimizer(0.1).minimize(tf.reduce_sum(v), global_step=tf.no_op())


# call, the class TensorFlow raises
_FOUND = [
    (lambda: tf.concat([], 0), ValueError),
    (lambda: tf.stack([]), ValueError),
    (lambda: tf.train.GradientDescentOptimizer(0.1).minimize(2), TypeError),
    (lambda: tf.name_scope(5).__enter__(), TypeError),
    (lambda: tf.assign(tf.constant([1.0]), [2.0]), TypeError),
    (lambda: tf.assign_add(tf.constant([1.0]), [2.0]), TypeError),
    (lambda: tf.variables_initializer(["v"]), TypeError),
    (_saver_of_a_tensor, TypeError),
    (_save_without_a_session, TypeError),
    (_eval_in_an_operation, TypeError),
    (lambda: tf.Session(graph=3j), TypeError),
    (lambda: tf.Session().run(tf.constant(1.0), [1, 2]), TypeError),
    (lambda: tf.Session().run("x"), ValueError),
    (lambda: tf.ones([1, 2**40]), tf.errors.ResourceExhaustedError),
    (lambda: tf.constant(1.0, shape=[2**20, 2**20]), tf.errors.ResourceExhaustedError),
    (lambda: tf.placeholder(tf.float32, [2**64, 2]), ValueError),
    (lambda: tf.reshape(tf.constant([1.0]), [2**63]), ValueError),
    (lambda: tf.get_variable("w", [2**64]), ValueError),
    (lambda: tf.constant([1.0])[2**63:], ValueError),
    (lambda: tf.constant([[1.0]])[..., ..., 0], ValueError),
    (lambda: tf.nn.max_pool(tf.zeros([1, 2, 2, 1]), [1, 2, 2, 1], [1, 2**40, 1, 1], "SAME"),
     ValueError),
    (lambda: tf.nn.conv2d(tf.zeros([1, 2, 2, 1]), tf.zeros([1, 1, 1, 1]), [1, 2**40, 1, 1],
                          "SAME"), ValueError),
    (lambda: tf.constant(2**70, dtype=tf.uint8), ValueError),
    (lambda: tf.constant(float("inf"), dtype=tf.int32), ValueError),
    (_save_at_an_infinite_step, ValueError),
    (lambda: tf.Session().run(tf.no_op(), {tf.placeholder(tf.int32, [1]): [float("inf")]}),
     ValueError),
    (_minimize_with_an_operation_as_step, TypeError),
]


@pytest.mark.parametrize("call, expected", _FOUND, ids=[str(k) for k in range(len(_FOUND))])
def test_calls_the_fuzzer_found_raise_tensorflows_class(call, expected):
    with pytest.raises(expected):
        call()


def test_a_huge_constant_leaves_the_graph_usable():
    with pytest.raises(tf.errors.ResourceExhaustedError):
        tf.zeros([2**40, 2**10])
    y = tf.constant(np.ones(3, np.float32)) * 2.0
    np.testing.assert_array_equal(tf.Session().run(y), [2.0, 2.0, 2.0])
