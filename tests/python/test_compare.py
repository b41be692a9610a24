"""tf.greater, tf.less, tf.greater_equal, tf.less_equal, tf.not_equal
(ctower's comparisons, src/ops/compare.h), their tf.math names and the
operators > < >= <= against NumPy: bool tensors of float32, int32 and int64
values, a scalar on either side; no gradient."""
import numpy as np
import pytest

import ctower.compat.v1 as tf
from ctower import _ctower

NUMPY = {"greater": np.greater, "less": np.less, "greater_equal": np.greater_equal,
         "less_equal": np.less_equal, "not_equal": np.not_equal}
FUNCTIONS = [function for _, function in _ctower.compare_ops()]
_A = np.array([1, 2, -0.0, np.nan, 1, np.nan, np.inf, -np.inf, 3, 0.5], np.float32)
_B = np.array([1, 1, 0.0, 1, np.nan, np.nan, np.inf, 1, 4, 0.5], np.float32)


def test_every_op_of_the_table_is_checked_here():
    assert sorted(FUNCTIONS) == sorted(NUMPY)


@pytest.mark.parametrize("function", FUNCTIONS)
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64])
def test_values_against_numpy(function, dtype):
    a, b = (_A, _B) if dtype == np.float32 else (
        np.array([1, 2, 0, -1, 2**31 - 1, 5], dtype), np.array([1, 1, 0, 1, -2**31, 6], dtype))
    if dtype == np.int64:
        a, b = a + (1 << 60), b + (1 << 60)  # past 2^53: a double would round them together
    for fn in (getattr(tf, function), getattr(tf.math, function)):
        tf.reset_default_graph()
        x = tf.placeholder(tf.as_dtype(dtype), [None])
        y = tf.placeholder(tf.as_dtype(dtype), [None])
        z = fn(x, y, name="z")
        assert z.op.name == "z" and z.dtype is tf.bool
        with tf.Session() as sess:
            np.testing.assert_array_equal(sess.run(z, {x: a, y: b}), NUMPY[function](a, b))
            np.testing.assert_array_equal(sess.run(fn(x, b[1]), {x: a}), NUMPY[function](a, b[1]))
            np.testing.assert_array_equal(sess.run(fn(a[0], y), {y: b}), NUMPY[function](a[0], b))


def test_operators_and_no_gradient():
    x = tf.constant([1.0, 2.0, 3.0])
    v = tf.Variable([3.0, 2.0, 1.0])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(x > 2).tolist() == [False, False, True]
        assert sess.run(x < v).tolist() == [True, False, False]
        assert sess.run(x >= 2).tolist() == [False, True, True]
        assert sess.run(v <= x).tolist() == [False, True, True]
        assert sess.run(2.0 < x).tolist() == [False, False, True]  # reflected: x > 2.0
    assert tf.gradients(tf.reduce_sum(tf.cast(x > 2, tf.float32)), [x]) == [None]


def test_dtypes_must_agree():
    with pytest.raises(Exception, match="a comparison takes values of one dtype"):
        tf.greater(tf.constant([1.0]), tf.constant([1]))
