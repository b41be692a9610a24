"""TensorFlow 1.x's ops, names and operators over ctower's engine, against
NumPy."""
import numpy as np
import pytest

import ctower.compat.v1 as tf


def run(*fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(list(fetches) if len(fetches) > 1 else fetches[0], feed_dict=feed_dict)


def test_math_ops_and_operators():
    a = np.arange(6, dtype=np.float32).reshape(2, 3) + 1
    b = np.full((2, 3), 2.0, np.float32)
    x, y = tf.constant(a), tf.constant(b)
    got = run(tf.add(x, y), tf.subtract(x, y), tf.multiply(x, y), tf.divide(x, y),
              x + y, x - 1.0, 2.0 * x, x / y, -x, 1.0 / x, tf.add_n([x, y, x]))
    want = [a + b, a - b, a * b, a / b, a + b, a - 1, 2 * a, a / b, -a, 1 / a, a + b + a]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_matmul_and_at_operator():
    a = np.random.RandomState(0).randn(3, 4).astype(np.float32)
    b = np.random.RandomState(1).randn(4, 2).astype(np.float32)
    x, y = tf.constant(a), tf.constant(b)
    got = run(tf.matmul(x, y), x @ y, tf.matmul(y, x, transpose_a=True, transpose_b=True))
    np.testing.assert_allclose(got[0], a @ b, rtol=1e-5)
    np.testing.assert_allclose(got[1], a @ b, rtol=1e-5)
    np.testing.assert_allclose(got[2], (a @ b).T, rtol=1e-5)


def test_shape_ops():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x = tf.constant(a)
    parts = tf.split(x, 2, axis=2)
    got = run(tf.reshape(x, [6, -1]), tf.concat([x, x], 1), parts[1], tf.stack([x, x], axis=1),
              tf.expand_dims(x, 0), tf.reduce_sum(x, axis=1), tf.reduce_mean(x, [0, 2]),
              tf.reduce_sum(x, 2, keepdims=True), tf.reduce_mean(x), x[1], x[:, 2])
    want = [a.reshape(6, 4), np.concatenate([a, a], 1), np.split(a, 2, 2)[1],
            np.stack([a, a], 1), a[None], a.sum(1), a.mean((0, 2)), a.sum(2, keepdims=True),
            a.mean(), a[1], a[:, 2]]
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_argmax_equal_cast_accuracy():
    logits = np.array([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7]], np.float32)
    labels = tf.placeholder(tf.int64, [None])  # argmax gives int64, as in TensorFlow
    correct = tf.equal(tf.argmax(logits, 1), labels)
    assert tf.argmax(logits, 1, output_type=tf.int32).dtype == tf.int32
    accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))
    c, acc = run(correct, accuracy, feed_dict={labels: [1, 0, 0]})
    assert c.dtype == np.bool_ and c.tolist() == [True, True, False]
    assert acc == pytest.approx(2 / 3)
    assert correct.dtype == tf.bool and accuracy.dtype == tf.float32


def test_nn_ops():
    rng = np.random.RandomState(2)
    x = rng.randn(2, 6, 6, 3).astype(np.float32)
    w = rng.randn(3, 3, 3, 4).astype(np.float32)
    conv = tf.nn.conv2d(x, w, strides=[1, 1, 1, 1], padding="VALID")
    got = run(conv, tf.nn.relu(conv), tf.nn.sigmoid(conv), tf.nn.tanh(conv),
              tf.nn.max_pool(conv, [1, 2, 2, 1], [1, 2, 2, 1], "VALID"),
              tf.nn.avg_pool(conv, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="VALID"),
              tf.nn.bias_add(conv, np.arange(4, dtype=np.float32)))
    ref = np.zeros((2, 4, 4, 4), np.float32)
    for i in range(4):
        for j in range(4):
            ref[:, i, j, :] = np.tensordot(x[:, i:i + 3, j:j + 3, :], w, axes=3)
    np.testing.assert_allclose(got[0], ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got[1], np.maximum(ref, 0), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got[2], 1 / (1 + np.exp(-ref)), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got[3], np.tanh(ref), rtol=1e-4, atol=1e-5)
    pooled = ref.reshape(2, 2, 2, 2, 2, 4)
    np.testing.assert_allclose(got[4], pooled.max((2, 4)), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got[5], pooled.mean((2, 4)), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got[6], ref + np.arange(4), rtol=1e-4, atol=1e-4)


def test_cross_entropies():
    logits = np.array([[1.0, 2.0, 0.5], [0.1, -1.0, 3.0]], np.float32)
    labels = np.array([1, 2])
    onehot = np.eye(3, dtype=np.float32)[labels]
    sparse = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    dense = tf.nn.softmax_cross_entropy_with_logits(labels=onehot, logits=logits)
    s, d = run(sparse, dense)
    z = logits - logits.max(1, keepdims=True)
    want = -(z - np.log(np.exp(z).sum(1, keepdims=True)))[np.arange(2), labels]
    np.testing.assert_allclose(s, want, rtol=1e-5)
    np.testing.assert_allclose(d, want, rtol=1e-5)


def test_names_and_scopes_are_tensorflows():
    with tf.name_scope("tower_0") as scope:
        a = tf.constant(1.0, name="a")
        b = tf.add(a, a)
        c = tf.matmul(tf.zeros([2, 2]), tf.ones([2, 2]), name="product")
    with tf.name_scope("tower_0"):
        d = tf.constant(2.0, name="a")
    assert scope == "tower_0/"
    assert (a.name, b.name, c.name, d.name) == ("tower_0/a:0", "tower_0/Add:0",
                                                "tower_0/product:0", "tower_0_1/a:0")
    assert b.op.type == "Add" and c.shape.as_list() == [2, 2]
    assert tf.get_default_graph().get_tensor_by_name("tower_0/a:0").op.name == "tower_0/a"


def test_device_scopes_are_recorded():
    with tf.device("/cpu:0"):
        a = tf.constant(1.0)
        with tf.device("/gpu:1"):
            b = a + a
        with tf.device(None):
            c = a + a
    assert (a.device, b.device, c.device) == ("/cpu:0", "/gpu:1", "")


def test_placeholder_feeds_and_nested_fetches():
    x = tf.placeholder(tf.float32, shape=[None, 2], name="x")
    y = x * 2.0
    z = tf.reduce_sum(y)
    noop = tf.no_op()
    feed = np.array([[1, 2], [3, 4]], np.float32)
    with tf.Session() as sess:
        out = sess.run({"y": y, "pair": (z, [y, noop]), "name": "x:0"}, feed_dict={x: feed})
        assert isinstance(out["pair"], tuple) and out["pair"][1][1] is None
        np.testing.assert_array_equal(out["y"], feed * 2)
        assert out["pair"][0] == 20.0 and isinstance(out["pair"][0], np.float32)
        np.testing.assert_array_equal(out["name"], feed)
        # feeds by name, of another dtype (converted as TensorFlow converts)
        np.testing.assert_array_equal(sess.run(y, {"x:0": [[0.5, 1.0]]}), [[1.0, 2.0]])
        assert z.eval(feed_dict={x: feed}) == 20.0


def test_fetched_arrays_are_not_copies():
    x = tf.placeholder(tf.float32, [1000])
    with tf.Session() as sess:
        value = sess.run(x + 1.0, {x: np.zeros(1000, np.float32)})
    assert value.base is not None and not value.flags.owndata
    assert type(value.base).__name__ in ("HostTensor", "memoryview")


def test_control_dependencies_and_group():
    v = tf.Variable(0.0)
    inc = v.assign_add(1.0)
    with tf.control_dependencies([inc]):
        read = tf.identity(v)
    step = tf.group(inc, name="step")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(read) == 1.0
        sess.run(step)
        assert sess.run(v) == 2.0
    assert step.name == "step"


def test_shape_errors_raise_value_error_and_the_graph_goes_on():
    a = tf.constant(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match="MatMul"):
        tf.matmul(a, a)
    b = a + 1.0
    assert run(b).shape == (2, 3)


def test_l2_loss_and_its_gradient():
    a = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5
    x = tf.constant(a)
    loss = tf.multiply(tf.nn.l2_loss(x), 0.004)
    value, grad = run(loss, tf.gradients(loss, x)[0])
    assert value == pytest.approx(0.004 * (a * a).sum() / 2, rel=1e-6)
    np.testing.assert_array_equal(grad, a * np.float32(0.004))
