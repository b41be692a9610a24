"""TensorFlow 1.x's ops with their full arguments, against NumPy: argmax
along any axis, split into parts of given sizes, initializers with a mean
or an asymmetric range, and indexing with slices, tf.newaxis and '...'."""
import numpy as np
import pytest

import ctower.compat.v1 as tf


def run(*fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(list(fetches) if len(fetches) > 1 else fetches[0], feed_dict=feed_dict)


def test_argmax_along_every_axis():
    a = np.random.RandomState(3).randint(0, 3, (3, 4, 5)).astype(np.float32)  # many ties
    x = tf.placeholder(tf.float32, [None, 4, 5])
    axes = [0, 1, 2, -1, -3]
    got = run(*[tf.argmax(x, axis=k) for k in axes], tf.argmax(x, dimension=1),
              tf.argmax(x, 1, output_type=tf.int32), feed_dict={x: a})
    want = [np.argmax(a, axis=k) for k in axes] + [np.argmax(a, 1), np.argmax(a, 1)]
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_array_equal(g, w)
    assert got[0].dtype == np.int64 and got[-1].dtype == np.int32
    assert tf.argmax(x, 0).shape.as_list() == [4, 5]


def test_argmax_misuse_raises():
    x = tf.constant(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match="out of range"):
        tf.argmax(x, axis=2)
    with pytest.raises(ValueError):
        tf.argmax(x, axis=0, dimension=1)
    with pytest.raises(TypeError):
        tf.argmax(x, 0, output_type=tf.float32)
    with pytest.raises(ValueError, match="empty"):
        tf.argmax(tf.constant(np.zeros((2, 0), np.float32)), axis=1)


def test_split_into_sizes_and_its_gradient():
    a = np.random.RandomState(4).randn(2, 9, 3).astype(np.float32)
    x = tf.placeholder(tf.float32, [None, 9, 3])
    parts = tf.split(x, [2, -1, 4], axis=1)
    same = tf.split(x, np.array([3, 3, 3]), 1, num=3)
    assert [p.shape.as_list() for p in parts] == [[None, 2, 3], [None, 3, 3], [None, 4, 3]]
    w = np.arange(4 * 3, dtype=np.float32).reshape(4, 3)
    loss = tf.reduce_sum(parts[2] * w) + tf.reduce_sum(parts[0])
    (grad,) = tf.gradients(loss, [x])
    got = run(*parts, *same, grad, feed_dict={x: a})
    want = np.split(a, [2, 5], axis=1) + np.split(a, 3, axis=1)
    for g, w_ in zip(got, want):
        np.testing.assert_array_equal(g, w_)
    want_grad = np.zeros_like(a)
    want_grad[:, :2] = 1
    want_grad[:, 5:] = w
    np.testing.assert_array_equal(got[-1], want_grad)


def test_split_misuse_raises():
    x = tf.constant(np.zeros((2, 6), np.float32))
    with pytest.raises(ValueError, match="does not split"):
        tf.split(x, [2, 3], axis=1)
    with pytest.raises(ValueError, match="does not split"):
        tf.split(x, 4, axis=1)
    with pytest.raises(ValueError):
        tf.split(x, [-1, -1], axis=1)
    with pytest.raises(ValueError):
        tf.split(x, [3, 3], axis=1, num=3)
    with pytest.raises(ValueError):
        tf.split(x, [], axis=1)
    with pytest.raises(TypeError):
        tf.split(x, tf.constant([3, 3]), axis=1)


def test_initializers_take_a_mean_and_any_range():
    shape = [100, 40]

    def values(seed_graph):
        tf.reset_default_graph()
        tf.set_random_seed(seed_graph)
        pairs = [(tf.random_uniform_initializer(2.0, 5.0, seed=3),
                  tf.random_uniform_initializer(-1.0, 1.0, seed=3)),
                 (tf.random_normal_initializer(mean=4.0, stddev=0.5, seed=5),
                  tf.random_normal_initializer(seed=5)),
                 (tf.truncated_normal_initializer(mean=-3.0, stddev=2.0, seed=7),
                  tf.truncated_normal_initializer(seed=7))]
        vs = [tf.get_variable("v%d_%d" % (k, j), shape, initializer=init)
              for k, pair in enumerate(pairs) for j, init in enumerate(pair)]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            return sess.run(vs)

    u, u0, n, n0, t, t0 = values(1)
    np.testing.assert_allclose(u, 3.5 + 1.5 * u0, atol=1e-5)
    assert u.min() >= 2.0 and u.max() <= 5.0 and abs(u.mean() - 3.5) < 0.05
    np.testing.assert_allclose(n, 4.0 + 0.5 * n0, atol=1e-5)
    assert abs(n.mean() - 4.0) < 0.05
    np.testing.assert_allclose(t, -3.0 + 2.0 * t0, atol=1e-5)
    assert t.min() >= -7.0 and t.max() <= 1.0 and abs(t.mean() + 3.0) < 0.2
    for again, first in zip(values(1), (u, u0, n, n0, t, t0)):
        np.testing.assert_array_equal(again, first)  # deterministic with the seeds


def test_indexing_as_numpy_indexes():
    a = np.arange(4 * 5 * 6, dtype=np.float32).reshape(4, 5, 6)
    x = tf.placeholder(tf.float32, [None, 5, 6])
    keys = [np.s_[1:3], np.s_[:, -1], np.s_[-2:, 1:-1, ::2], np.s_[::-1, 4:0:-2],
            np.s_[..., 2], np.s_[1, ..., 1:3], np.s_[tf.newaxis, :, 3], np.s_[:, None, 2:, None],
            np.s_[-1], np.s_[...], np.s_[2, 3, 4], np.s_[:, -9:99], np.s_[:, 3:1]]
    got = run(*[x[k] for k in keys], feed_dict={x: a})
    for k, g in zip(keys, got):
        want = a[k]
        assert g.shape == want.shape, k
        np.testing.assert_array_equal(g, want)
    assert x[:, 1:4, None].shape.as_list() == [None, 3, 1, 6]
    i = tf.constant(np.arange(12, dtype=np.int32).reshape(3, 4))
    np.testing.assert_array_equal(run(i[1:, ::-1]), np.arange(12).reshape(3, 4)[1:, ::-1])


def test_slice_gradient_and_tf_slice():
    a = np.random.RandomState(5).randn(3, 4).astype(np.float32)
    x = tf.constant(a)
    y = tf.reduce_sum(x[1:, ::-2] * np.array([[1.0, 2.0]], np.float32))
    (grad,) = tf.gradients(y, [x])
    want = np.zeros_like(a)
    want[1:, 3] = 1.0
    want[1:, 1] = 2.0
    got, part, rest = run(grad, tf.slice(x, [1, 1], [2, 2]), tf.slice(x, [0, 2], [-1, -1]))
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(part, a[1:3, 1:3])
    np.testing.assert_array_equal(rest, a[:, 2:])


def test_indexing_misuse_raises():
    x = tf.constant(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match="out of bounds"):
        x[2]
    with pytest.raises(ValueError, match="out of bounds"):
        x[:, -4]
    with pytest.raises(ValueError, match="zero"):
        x[::0]
    with pytest.raises(ValueError, match="Index out of range"):
        x[0, 0, 0]
    with pytest.raises(ValueError, match="Multiple ellipses"):  # TensorFlow's class
        x[..., 0, ...]
    with pytest.raises(TypeError):
        x[tf.constant(0)]
    with pytest.raises(TypeError):
        x[0.5]
    with pytest.raises(TypeError):
        x[True]
    with pytest.raises(ValueError):
        tf.slice(x, [0], [1])


def test_stop_gradient_and_stop_gradients():
    a = np.array([1.0, -2.0, 0.5], np.float32)
    x = tf.placeholder(tf.float32, [3])
    b = 2.0 * x
    (dx,) = tf.gradients(tf.reduce_sum(x * tf.stop_gradient(x)), [x])
    da, db = tf.gradients(tf.reduce_sum(x * b), [x, b], stop_gradients=[b])
    (full,) = tf.gradients(tf.reduce_sum(x * b), x)
    got = run(dx, da, db, full, tf.stop_gradient(x), feed_dict={x: a})
    for g, w in zip(got, [a, 2 * a, a, 4 * a, a]):
        np.testing.assert_array_equal(g, w)
    assert tf.gradients(tf.reduce_sum(tf.stop_gradient(x)), [x]) == [None]


def test_compute_gradients_with_grad_loss():
    a = np.array([[1.0, 2.0], [3.0, -1.0]], np.float32)
    w = tf.get_variable("w", [2], initializer=tf.constant_initializer([0.5, -2.0]))
    per_example = tf.reduce_sum(tf.constant(a) * w, axis=1)  # [2]
    weights = np.array([3.0, -1.0], np.float32)
    ((grad, var),) = tf.train.GradientDescentOptimizer(0.1).compute_gradients(
        per_example, grad_loss=tf.constant(weights))
    assert var is w
    np.testing.assert_allclose(run(grad), weights @ a, rtol=1e-6)


def test_transpose_as_numpy():
    value = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    x = tf.constant(value)
    to_nchw = tf.transpose(x, [0, 3, 1, 2])
    reversed_axes = tf.transpose(x)
    weights = np.random.RandomState(1).rand(2, 5, 3, 4).astype(np.float32)
    grad, = tf.gradients(tf.reduce_sum(to_nchw * weights), [x])
    with tf.Session() as sess:
        a, b, g = sess.run([to_nchw, reversed_axes, grad])
    np.testing.assert_array_equal(a, value.transpose(0, 3, 1, 2))
    np.testing.assert_array_equal(b, value.transpose())
    np.testing.assert_array_equal(g, weights.transpose(0, 2, 3, 1))  # back by the inverse
    with pytest.raises(ValueError, match="not a permutation"):
        tf.transpose(x, [0, 1, 1, 2])
