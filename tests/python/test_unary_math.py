"""tf.exp, tf.log, ... (ctower's unary math ops, src/ops/unary_math.h) and
their tf.math names against NumPy: values, and gradients against NumPy's
derivatives (None where TensorFlow gives None)."""
import numpy as np
import pytest

import ctower.compat.v1 as tf
from ctower import _ctower

# function: (NumPy's function, its derivative or None for TensorFlow's None, inputs)
_R = np.random.RandomState(0)
_ANY = np.concatenate([_R.uniform(-3, 3, 200), [0.0, 1.0, -1.0]]).astype(np.float32)
_POSITIVE = np.concatenate([_R.uniform(0.01, 10, 200), [1.0, 1e-3, 1e4]]).astype(np.float32)
_NONZERO = _ANY[np.abs(_ANY) > 0.05]
_STEPS = np.concatenate([_ANY, [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.0, -0.0]]).astype(np.float32)
NUMPY = {
    "exp": (np.exp, np.exp, _ANY),
    "log": (np.log, lambda x: 1 / x, _POSITIVE),
    "log1p": (np.log1p, lambda x: 1 / (1 + x), _POSITIVE),
    "sqrt": (np.sqrt, lambda x: 0.5 / np.sqrt(x), _POSITIVE),
    "rsqrt": (lambda x: 1 / np.sqrt(x), lambda x: -0.5 * x ** -1.5, _POSITIVE),
    "square": (np.square, lambda x: 2 * x, _ANY),
    "abs": (np.abs, np.sign, _NONZERO),
    "sign": (np.sign, np.zeros_like, _ANY),
    "reciprocal": (np.reciprocal, lambda x: -1 / x ** 2, _NONZERO),
    "floor": (np.floor, None, _STEPS),
    "ceil": (np.ceil, None, _STEPS),
    "round": (np.round, None, _STEPS),  # both round half to even
}
FUNCTIONS = [function for _, function in _ctower.unary_math_ops()]


def test_every_op_of_the_table_is_checked_here():
    assert sorted(FUNCTIONS) == sorted(NUMPY)


@pytest.mark.parametrize("function", FUNCTIONS)
def test_values_and_gradients_against_numpy(function):
    np_fn, np_grad, values = NUMPY[function]
    for fn in (getattr(tf, function), getattr(tf.math, function)):
        tf.reset_default_graph()
        x = tf.placeholder(tf.float32, [None])
        w = tf.placeholder(tf.float32, [None])
        y = fn(x, name="y")
        assert y.op.name == "y"
        (dx,) = tf.gradients(tf.reduce_sum(y * w), [x])
        weights = np.linspace(-1, 1, len(values)).astype(np.float32)
        with tf.Session() as sess:
            feed = {x: values, w: weights}
            got = sess.run(y, feed)
            np.testing.assert_allclose(got, np_fn(values.astype(np.float64)), rtol=2e-6,
                                       atol=1e-7)
            if np_grad is None:
                assert dx is None
            else:
                want = weights * np_grad(values.astype(np.float64))
                np.testing.assert_allclose(sess.run(dx, feed), want, rtol=2e-6, atol=1e-7)


def test_round_is_half_to_even():
    x = tf.constant([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997], tf.float32)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(tf.round(x)), [0, 2, 2, -0.0, -2, -2, 0])


def test_python_floats_and_integers():
    with tf.Session() as sess:
        assert sess.run(tf.sqrt(4.0)) == 2.0
        assert sess.run(tf.exp(tf.zeros([2]))).tolist() == [1.0, 1.0]
        i = tf.constant([1, 2, 3])
        assert tf.round(i) is i  # TensorFlow's round of integers is x itself
    with pytest.raises(TypeError, match="int32 not in list of allowed values"):
        tf.exp(i)
    with pytest.raises(TypeError, match="tf.abs of int32: ctower's Abs takes float32"):
        tf.abs(i)
    with pytest.raises(TypeError, match="tf.log of bool"):
        tf.log(tf.placeholder(tf.bool, [2]))


def test_composes_with_other_ops():
    a = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 4.0]], np.float32)
    x = tf.constant(a)
    e = tf.exp(x)
    softmax = e / tf.reduce_sum(e, axis=1, keep_dims=True)
    with tf.Session() as sess:
        want = np.exp(a) / np.exp(a).sum(axis=1, keepdims=True)
        np.testing.assert_allclose(sess.run(softmax), want, rtol=1e-6)
        np.testing.assert_allclose(sess.run(tf.log(tf.sqrt(tf.square(x)))), np.log(np.abs(a)),
                                   rtol=1e-6)
