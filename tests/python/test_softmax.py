"""tf.nn.softmax and tf.nn.log_softmax (composed of reduce_max, exp, sum and
log) against NumPy: values and gradients along every axis, logits large
enough that an unshifted exp would overflow."""
import numpy as np
import pytest

import ctower.compat.v1 as tf

_X = np.random.RandomState(2).uniform(-5, 5, (3, 4, 5)).astype(np.float32)


def _softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _gradients(x, axis, w):
    """d sum(w * softmax) / dx and d sum(w * log_softmax) / dx, by hand."""
    s = _softmax(x, axis)
    d_soft = s * (w - (w * s).sum(axis=axis, keepdims=True))
    d_log = w - s * w.sum(axis=axis, keepdims=True)
    return d_soft, d_log


@pytest.mark.parametrize("axis", [None, 0, 1, 2, -2])
def test_values_and_gradients_against_numpy(axis):
    tf.reset_default_graph()
    x = tf.placeholder(tf.float32, _X.shape)
    w = tf.placeholder(tf.float32, _X.shape)
    kwargs = {} if axis is None else {"axis": axis}
    soft = tf.nn.softmax(x, name="soft", **kwargs)
    log = tf.nn.log_softmax(x, name="log", **kwargs)
    assert soft.op.name == "soft" and log.op.name == "log"
    grads = tf.gradients(tf.reduce_sum(soft * w), [x]) + tf.gradients(tf.reduce_sum(log * w), [x])
    a = -1 if axis is None else axis
    x64 = _X.astype(np.float64)
    weights = np.linspace(-1, 1, _X.size).reshape(_X.shape).astype(np.float32)
    with tf.Session() as sess:
        got = sess.run([soft, log] + grads, {x: _X, w: weights})
    np.testing.assert_allclose(got[0], _softmax(x64, a), rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(got[1], np.log(_softmax(x64, a)), rtol=2e-6, atol=2e-6)
    d_soft, d_log = _gradients(x64, a, weights.astype(np.float64))
    np.testing.assert_allclose(got[2], d_soft, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[3], d_log, rtol=1e-5, atol=1e-5)


def test_large_logits_and_dim():
    x = tf.constant([[1000.0, 1001.0, 1002.0], [-1000.0, 0.0, 1000.0]])
    with tf.Session() as sess:
        soft, log = sess.run([tf.nn.softmax(x, dim=1), tf.nn.log_softmax(x)])
    want = _softmax(np.array([[1000.0, 1001.0, 1002.0], [-1000.0, 0.0, 1000.0]]), -1)
    np.testing.assert_allclose(soft, want, rtol=1e-6, atol=1e-30)
    np.testing.assert_allclose(log[0], np.log(want[0]), rtol=1e-6)
    assert np.isfinite(log).all()
    with pytest.raises(ValueError, match="axis or dim"):
        tf.nn.softmax(x, axis=1, dim=1)
