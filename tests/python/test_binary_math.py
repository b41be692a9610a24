"""tf.maximum, tf.pow, ... (ctower's binary math ops, src/ops/binary_math.h)
and their tf.math names against NumPy: values and both gradients, with the
inputs broadcast; TensorFlow's rules at ties, NaNs and Pow's zeros; `**`
and tf.clip_by_value over them."""
import numpy as np
import pytest

import ctower.compat.v1 as tf
from ctower import _ctower

_R = np.random.RandomState(0)


def _uniform(shape):
    return _R.uniform(-3, 3, shape).astype(np.float32)


def _positive(shape):
    return _R.uniform(0.1, 3, shape).astype(np.float32)


def _max_partials(a, b):
    return (a >= b).astype(np.float64), (a < b).astype(np.float64)


def _min_partials(a, b):
    return (a <= b).astype(np.float64), (a > b).astype(np.float64)


def _pow_partials(a, b):
    return b * a ** (b - 1), a ** b * np.log(a)


# function: (NumPy's function, its partials (da, db) at dy = 1, inputs)
NUMPY = {
    "maximum": (np.maximum, _max_partials, _uniform),
    "minimum": (np.minimum, _min_partials, _uniform),
    "squared_difference": (lambda a, b: (a - b) ** 2, lambda a, b: (2 * (a - b), -2 * (a - b)),
                           _uniform),
    "pow": (np.power, _pow_partials, _positive),
}
FUNCTIONS = [function for _, function in _ctower.binary_math_ops()]
SHAPES = [([4, 5], [4, 5]), ([4, 5], [5]), ([3, 1], [1, 4]), ([], [2, 3]), ([2, 3, 4], [2, 1, 4])]


def test_every_op_of_the_table_is_checked_here():
    assert sorted(FUNCTIONS) == sorted(NUMPY)


def _sum_to(g, shape):
    """NumPy's sum of a broadcast gradient g down to `shape`."""
    while g.ndim > len(shape):
        g = g.sum(axis=0)
    for d, n in enumerate(shape):
        if n == 1 and g.shape[d] != 1:
            g = g.sum(axis=d, keepdims=True)
    return g


@pytest.mark.parametrize("function", FUNCTIONS)
@pytest.mark.parametrize("shapes", SHAPES)
def test_values_and_gradients_against_numpy(function, shapes):
    np_fn, np_partials, draw = NUMPY[function]
    a, b = draw(shapes[0]), draw(shapes[1])
    if a.shape == b.shape:
        b.flat[::3] = a.flat[::3]  # ties: the gradient goes to a
    for fn in (getattr(tf, function), getattr(tf.math, function)):
        tf.reset_default_graph()
        x, y = tf.placeholder(tf.float32, shapes[0]), tf.placeholder(tf.float32, shapes[1])
        z = fn(x, y, name="z")
        assert z.op.name == "z"
        want = np_fn(a.astype(np.float64), b.astype(np.float64))
        w = np.linspace(-1, 1, want.size).reshape(want.shape).astype(np.float32)
        dx, dy = tf.gradients(tf.reduce_sum(z * w), [x, y])
        with tf.Session() as sess:
            got, got_dx, got_dy = sess.run([z, dx, dy], {x: a, y: b})
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6)
        da, db = np_partials(*np.broadcast_arrays(a.astype(np.float64), b.astype(np.float64)))
        np.testing.assert_allclose(got_dx, _sum_to(w * da, a.shape), rtol=2e-5, atol=1e-5)
        np.testing.assert_allclose(got_dy, _sum_to(w * db, b.shape), rtol=2e-5, atol=1e-5)


def _run_with_gradients(z, xs):
    with tf.Session() as sess:
        return sess.run([z] + tf.gradients(z, xs))


def test_tensorflow_rules_at_ties_nans_and_zeros():
    nan, inf = np.nan, np.inf
    a = tf.constant([1, 2, nan, 1, 0, 0, -2, 0, 2, -1], tf.float32)
    b = tf.constant([1, 1, 1, nan, 0, 2, 2, -1, 0.5, 3], tf.float32)
    # TensorFlow 2's values at these pairs (compat.v1 graph mode)
    y, da, db = _run_with_gradients(tf.maximum(a, b), [a, b])
    np.testing.assert_array_equal(y, [1, 2, nan, nan, 0, 2, 2, 0, 2, 3])
    np.testing.assert_array_equal(da, [1, 1, 0, 0, 1, 0, 0, 1, 1, 0])
    np.testing.assert_array_equal(db, [0, 0, 1, 1, 0, 1, 1, 0, 0, 1])
    y, da, db = _run_with_gradients(tf.minimum(a, b), [a, b])
    np.testing.assert_array_equal(y, [1, 1, nan, nan, 0, 0, -2, -1, 0.5, -1])
    np.testing.assert_array_equal(da, [1, 0, 0, 0, 1, 1, 1, 0, 0, 1])
    y, da, db = _run_with_gradients(tf.pow(a, b), [a, b])
    np.testing.assert_allclose(y, [1, 2, nan, 1, 1, 0, 4, inf, 1.4142135, -1], rtol=1e-6)
    np.testing.assert_allclose(da, [1, 1, 1, nan, nan, 0, -4, -inf, 0.35355338, 3], rtol=1e-6)
    np.testing.assert_allclose(db, [0, 1.3862944, nan, 0, 0, 0, 0, nan, 0.9802581, 0], rtol=1e-6)


def test_pow_operator_and_python_numbers():
    x = tf.constant([2.0, 3.0])
    v = tf.Variable([1.0, 4.0])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(x ** 2).tolist() == [4.0, 9.0]
        assert sess.run(2.0 ** x).tolist() == [4.0, 8.0]
        assert sess.run(v ** 0.5).tolist() == [1.0, 2.0]
        assert sess.run(tf.maximum(x, 2.5)).tolist() == [2.5, 3.0]
    with pytest.raises(TypeError, match="tf.maximum of int32: ctower's Maximum takes float32"):
        tf.maximum(tf.constant([1, 2]), tf.constant([3, 4]))


def test_clip_by_value_as_tensorflow_composes_it():
    values = np.array([-1, 0, 0.5, 1, 2], np.float32)
    x = tf.placeholder(tf.float32, [5])
    y = tf.clip_by_value(x, 0.0, 1.0, name="clipped")
    assert y.op.name == "clipped"
    crossed = tf.clip_by_value(x, 1.0, 0.0)  # lo > hi: lo, as TensorFlow's
    with tf.Session() as sess:
        got, grad = sess.run([y, tf.gradients(y, x)[0]], {x: values})
        np.testing.assert_array_equal(got, np.clip(values, 0, 1))
        np.testing.assert_array_equal(grad, [0, 1, 1, 1, 0])  # bounds included
        got, grad = sess.run([crossed, tf.gradients(crossed, x)[0]], {x: values})
        np.testing.assert_array_equal(got, [1, 1, 1, 1, 1])
        np.testing.assert_array_equal(grad, [0, 0, 0, 0, 0])
