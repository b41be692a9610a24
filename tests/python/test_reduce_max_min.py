"""tf.reduce_max and tf.reduce_min (and their tf.math names) against NumPy:
every set of axes, keepdims or not, values with ties, and the gradient
TensorFlow gives: dy divided among the positions equal to the result."""
import itertools

import numpy as np
import pytest

import ctower.compat.v1 as tf

_X = np.floor(np.random.RandomState(1).uniform(-3, 3, (4, 5, 6))).astype(np.float32)  # ties
_AXES = [None, 0, 1, 2, -1, [0, 2], (1, 2), [0, 1, 2]]


def _numpy_gradient(np_fn, x, axis, w):
    """TensorFlow's rule in NumPy: (x == y) / count(x == y) * w."""
    y = np_fn(x, axis=axis, keepdims=True)
    hits = (x == y).astype(np.float64)
    count = hits.sum(axis=axis, keepdims=True)
    return hits / count * w.reshape(y.shape)


@pytest.mark.parametrize("name,np_fn", [("reduce_max", np.max), ("reduce_min", np.min)])
@pytest.mark.parametrize("axis,keepdims", list(itertools.product(_AXES, [False, True])))
def test_values_and_gradients_against_numpy(name, np_fn, axis, keepdims):
    for fn in (getattr(tf, name), getattr(tf.math, name)):
        tf.reset_default_graph()
        x = tf.placeholder(tf.float32, _X.shape)
        y = fn(x, axis=axis, keepdims=keepdims, name="y")
        assert y.op.name == "y"
        np_axis = tuple(axis) if isinstance(axis, (list, tuple)) else axis
        want = np_fn(_X, axis=np_axis, keepdims=keepdims)
        assert y.shape.as_list() == list(want.shape)
        w = np.linspace(-1, 1, want.size).reshape(want.shape).astype(np.float32)
        (dx,) = tf.gradients(tf.reduce_sum(y * w), [x])
        with tf.Session() as sess:
            got, got_dx = sess.run([y, dx], {x: _X})
        np.testing.assert_array_equal(got, want)
        np.testing.assert_allclose(got_dx, _numpy_gradient(np_fn, _X, np_axis, w), rtol=1e-6,
                                   atol=1e-7)


def test_tensorflow_rules_at_ties_nans_and_nothing():
    # TensorFlow 2's values (compat.v1 graph mode)
    m = tf.constant([[1.0, 5.0, 5.0], [2.0, 2.0, 2.0]])
    r = tf.reduce_max(m, axis=1, keepdims=True)
    x = tf.constant([1.0, 3.0, 3.0, 2.0, np.nan])
    with tf.Session() as sess:
        got, grad = sess.run([r, tf.gradients(r, m)[0]])
        np.testing.assert_array_equal(got, [[5], [2]])
        np.testing.assert_allclose(grad, [[0, 0.5, 0.5], [1 / 3, 1 / 3, 1 / 3]], rtol=1e-7)
        got, grad = sess.run([tf.reduce_max(x), tf.gradients(tf.reduce_max(x), x)[0]])
        assert np.isnan(got) and np.isnan(grad).all()
        assert sess.run(tf.reduce_max(tf.zeros([0]))) == -np.inf
        assert sess.run(tf.reduce_min(tf.zeros([0]))) == np.inf
