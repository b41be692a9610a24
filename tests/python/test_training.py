"""Variables, initializers, gradients, optimizers and Saver, as TensorFlow
1.x has them."""
import os

import numpy as np
import pytest

import ctower.compat.v1 as tf


def test_get_variable_reuse_and_scopes():
    with tf.variable_scope("conv1"):
        w = tf.get_variable("weights", [3, 3], initializer=tf.zeros_initializer())
    with pytest.raises(ValueError, match="Variable conv1/weights already exists, disallowed"):
        with tf.variable_scope("conv1"):
            tf.get_variable("weights", [3, 3])
    with tf.variable_scope("conv1", reuse=True):
        assert tf.get_variable("weights") is w
    with pytest.raises(ValueError, match="Variable conv1/bias does not exist"):
        with tf.variable_scope("conv1", reuse=True):
            tf.get_variable("bias", [3])
    with tf.variable_scope(tf.get_variable_scope()):
        with tf.name_scope("tower_1"):
            with tf.variable_scope("conv1"):
                tf.get_variable_scope().reuse_variables()
                assert tf.get_variable("weights") is w
    with tf.variable_scope("auto", reuse=tf.AUTO_REUSE):
        first = tf.get_variable("v", [2])
    with tf.variable_scope("auto", reuse=tf.AUTO_REUSE):
        assert tf.get_variable("v", [2]) is first
    assert w.name == "conv1/weights:0" and w.op.name == "conv1/weights"
    assert [v.name for v in tf.trainable_variables()] == ["conv1/weights:0", "auto/v:0"]


def test_initializers_and_their_seeds():
    tf.set_random_seed(7)
    a = tf.get_variable("a", [100, 50], initializer=tf.truncated_normal_initializer(stddev=0.1,
                                                                                    seed=3))
    b = tf.get_variable("b", [100, 50], initializer=tf.truncated_normal_initializer(stddev=0.1,
                                                                                    seed=3))
    c = tf.get_variable("c", [100, 50], initializer=tf.random_normal_initializer(stddev=2.0))
    g = tf.get_variable("g", [100, 50], initializer=tf.glorot_uniform_initializer(seed=1))
    k = tf.get_variable("k", [3], initializer=tf.constant_initializer([1, 2, 3]))
    o = tf.get_variable("o", [2], initializer=tf.ones_initializer())
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        va, vb, vc, vg, vk, vo = sess.run([a, b, c, g, k, o])
    np.testing.assert_array_equal(va, vb)  # one seed: one stream, as TensorFlow's op seeds
    assert np.abs(va).max() <= 0.2 and 0.07 < va.std() < 0.1
    assert np.abs(vc).max() > 4.0 and 1.8 < vc.std() < 2.2  # not truncated
    limit = np.sqrt(6.0 / 150)
    assert np.abs(vg).max() <= limit and vg.std() > limit / 2
    np.testing.assert_array_equal(vk, [1, 2, 3])
    np.testing.assert_array_equal(vo, [1, 1])


def test_variable_assign_and_initializer_resets():
    v = tf.Variable([1.0, 2.0], name="v")
    update = v.assign(v * 3.0)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(update)
        np.testing.assert_array_equal(sess.run(v), [3, 6])
        sess.run(v.initializer)
        np.testing.assert_array_equal(v.eval(session=sess), [1, 2])


def test_gradients_against_numpy():
    x = tf.placeholder(tf.float32, [None, 3])
    w = tf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2) / 10)
    y = tf.reduce_sum(tf.nn.tanh(tf.matmul(x, w)))
    gw, gx = tf.gradients(y, [w, x])
    xv = np.random.RandomState(0).randn(4, 3).astype(np.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got_w, got_x = sess.run([gw, gx], {x: xv})
    t = np.tanh(xv @ (np.arange(6).reshape(3, 2) / 10))
    np.testing.assert_allclose(got_w, xv.T @ (1 - t * t), rtol=1e-5)
    np.testing.assert_allclose(got_x, (1 - t * t) @ (np.arange(6).reshape(3, 2) / 10).T,
                               rtol=1e-5)
    assert tf.gradients(y, tf.constant(1.0)) == [None]


def _regression(optimizer, steps=3):
    tf.reset_default_graph()
    x = tf.placeholder(tf.float32, [None, 2])
    y = tf.placeholder(tf.float32, [None, 1])
    w = tf.get_variable("w", [2, 1], initializer=tf.constant_initializer([[0.5], [-0.5]]))
    loss = tf.reduce_mean((tf.matmul(x, w) - y) * (tf.matmul(x, w) - y))
    global_step = tf.train.get_or_create_global_step()
    train = optimizer.minimize(loss, global_step=global_step)
    xv = np.array([[1, 2], [3, 4], [5, 6]], np.float32)
    yv = np.array([[1], [2], [3]], np.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(steps):
            sess.run(train, {x: xv, y: yv})
        return sess.run(w), sess.run(global_step), xv, yv


def _numpy_steps(update, steps=3):
    xv = np.array([[1, 2], [3, 4], [5, 6]], np.float64)
    yv = np.array([[1], [2], [3]], np.float64)
    w = np.array([[0.5], [-0.5]])
    state = {}
    for t in range(1, steps + 1):
        g = 2 * xv.T @ (xv @ w - yv) / 3
        w = update(w, g, t, state)
    return w


def test_optimizers_step_as_tensorflow_does():
    def sgd(w, g, t, s):
        return w - 0.01 * g

    def momentum(w, g, t, s):
        s["a"] = s.get("a", 0) * 0.9 + g
        return w - 0.01 * s["a"]

    def adam(w, g, t, s):
        s["m"] = 0.9 * s.get("m", 0) + 0.1 * g
        s["v"] = 0.999 * s.get("v", 0) + 0.001 * g * g
        lr = 0.1 * np.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t)
        return w - lr * s["m"] / (np.sqrt(s["v"]) + 1e-8)

    for opt, ref in ((tf.train.GradientDescentOptimizer(0.01), sgd),
                     (tf.train.MomentumOptimizer(0.01, 0.9), momentum),
                     (tf.train.AdamOptimizer(0.1), adam)):
        w, step, _, _ = _regression(opt)
        np.testing.assert_allclose(w, _numpy_steps(ref), rtol=2e-4, atol=1e-6)
        assert step == 3.0


def test_compute_and_apply_gradients():
    v = tf.get_variable("v", [2], initializer=tf.ones_initializer())
    u = tf.get_variable("u", [2], initializer=tf.ones_initializer())
    loss = tf.reduce_sum(v * v)
    opt = tf.train.GradientDescentOptimizer(0.5)
    grads = opt.compute_gradients(loss)
    assert [var for _, var in grads] == [v, u] and grads[1][0] is None
    train = opt.apply_gradients(grads)
    with tf.Session() as sess:
        sess.run(train)
        np.testing.assert_array_equal(sess.run(v), [0, 0])
        np.testing.assert_array_equal(sess.run(u), [1, 1])


def test_saver_round_trip(tmp_path):
    v = tf.get_variable("layer/w", [2, 2], initializer=tf.ones_initializer())
    loss = tf.reduce_sum(v * v)
    train = tf.train.MomentumOptimizer(0.1, 0.9).minimize(loss)
    saver = tf.train.Saver()
    path = str(tmp_path / "model.safetensors")
    with tf.Session() as sess:
        sess.run(train)
        trained = sess.run(v)
        assert saver.save(sess, path) == path
        sess.run(train)
    with tf.Session() as sess:
        saver.restore(sess, path)
        np.testing.assert_array_equal(sess.run(v), trained)
    assert tf.train.latest_checkpoint(str(tmp_path)) == path
    with open(path, "rb") as f:  # safetensors: a little-endian header length, then JSON
        n = int.from_bytes(f.read(8), "little")
        header = f.read(n).decode()
    assert '"layer/w"' in header and '"layer/w/Momentum"' in header
    tf.reset_default_graph()
    tf.get_variable("other", [1])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.NotFoundError, match="Key other not found in checkpoint"):
            tf.train.Saver().restore(sess, path)
        with pytest.raises(tf.errors.NotFoundError):
            tf.train.Saver().restore(sess, str(tmp_path / "missing.safetensors"))


def test_batch_normalization_layer():
    x = tf.placeholder(tf.float32, [None, 3])
    y = tf.layers.batch_normalization(x, training=True, momentum=0.5)
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    xv = np.random.RandomState(3).randn(8, 3).astype(np.float32) * 2 + 1
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out, _ = sess.run([y, updates], {x: xv})
        mean = sess.run(tf.get_default_graph().get_tensor_by_name(
            "batch_normalization/moving_mean:0"))
    np.testing.assert_allclose(out, (xv - xv.mean(0)) / np.sqrt(xv.var(0) + 1e-3), rtol=1e-4,
                               atol=1e-4)
    np.testing.assert_allclose(mean, 0.5 * xv.mean(0), rtol=1e-4, atol=1e-5)
    assert len(updates) == 2


def test_dropout_masks_change_from_run_to_run():
    x = tf.ones([1000])
    d = tf.nn.dropout(x, keep_prob=0.5)
    with tf.Session() as sess:
        a, b = sess.run(d), sess.run(d)
    assert set(np.unique(a)) == {0.0, 2.0} and not np.array_equal(a, b)


def test_dropout_keep_prob_fed_as_in_the_deep_mnist_tutorial():
    # keep_prob a placeholder: 0.5 while training, 1.0 to evaluate
    x = tf.ones([4000])
    keep_prob = tf.placeholder(tf.float32, shape=[])
    d = tf.nn.dropout(x, keep_prob)
    grad, = tf.gradients(tf.reduce_sum(d), [x])
    with tf.Session() as sess:
        train, g = sess.run([d, grad], feed_dict={keep_prob: 0.5})
        evaluate = sess.run(d, feed_dict={keep_prob: 1.0})
        quarter = sess.run(d, feed_dict={keep_prob: 0.25})
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"keep probability in \(0, 1\]"):
            sess.run(d, feed_dict={keep_prob: 0.0})
    assert set(np.unique(train)) == {0.0, 2.0}
    assert abs((train == 0).mean() - 0.5) < 0.05
    np.testing.assert_array_equal(g, train)  # the gradient is the same mask, scaled alike
    np.testing.assert_array_equal(evaluate, np.ones(4000, np.float32))
    assert set(np.unique(quarter)) == {0.0, 4.0}
    assert abs((quarter == 0).mean() - 0.75) < 0.05


def test_dropout_noise_shape_broadcasts_one_mask_element():
    # one keep-or-drop per (example, channel), the same over rows and columns,
    # as TensorFlow's dropout(x, keep_prob, noise_shape=[N, 1, 1, C])
    x = tf.placeholder(tf.float32, shape=[None, 3, 4, 50])
    keep_prob = tf.placeholder(tf.float32)
    d = tf.nn.dropout(x, keep_prob, noise_shape=[None, 1, 1, 50])
    per_row = tf.nn.dropout(x, 0.5, noise_shape=[1, 3, 4, 50])  # one mask for every example
    grad, = tf.gradients(tf.reduce_sum(d), [x])
    value = np.random.RandomState(2).rand(40, 3, 4, 50).astype(np.float32) + 1.0
    with tf.Session() as sess:
        train, g = sess.run([d, grad], {x: value, keep_prob: 0.5})
        evaluate = sess.run(d, {x: value, keep_prob: 1.0})
        shared = sess.run(per_row, {x: value})
    kept = train != 0
    assert (kept == kept[:, :1, :1, :]).all()  # the same over rows and columns
    np.testing.assert_allclose(train[kept], 2.0 * value[kept], rtol=1e-6)
    assert abs(kept[:, 0, 0, :].mean() - 0.5) < 0.06
    np.testing.assert_array_equal(g, np.where(kept, 2.0, 0.0))
    np.testing.assert_array_equal(evaluate, value)
    assert ((shared != 0) == (shared[:1] != 0)).all() and 0.4 < (shared != 0).mean() < 0.6
    with pytest.raises(ValueError, match=r"noise_shape \[2, 1, 1, 50\] does not broadcast"):
        tf.nn.dropout(tf.ones([4, 3, 4, 50]), 0.5, noise_shape=[2, 1, 1, 50])


def test_batch_normalization_training_as_a_tensor():
    # training=is_training, a bool placeholder fed True to train and False to
    # evaluate: the batch's statistics and updates of the moving averages,
    # then the moving statistics and no update, as TensorFlow's layer does
    x = tf.placeholder(tf.float32, [None, 3])
    is_training = tf.placeholder(tf.bool, [])
    y = tf.layers.batch_normalization(x, training=is_training, momentum=0.75, name="bn")
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    grad, = tf.gradients(tf.reduce_sum(y * y), [x])
    # the same layer with training as a Python bool, over the same variables
    fixed = tf.layers.batch_normalization(x, training=True, name="bn", reuse=True)
    fixed_grad, = tf.gradients(tf.reduce_sum(fixed * fixed), [x])
    moving_mean = tf.get_default_graph().get_tensor_by_name("bn/moving_mean:0")
    moving_var = tf.get_default_graph().get_tensor_by_name("bn/moving_variance:0")
    rng = np.random.RandomState(4)
    xv = rng.randn(16, 3).astype(np.float32) * 3 + 2
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out, g, want, want_g = sess.run([y, grad, fixed, fixed_grad], {x: xv, is_training: True})
        sess.run(updates, {x: xv, is_training: True})
        mean, var = sess.run([moving_mean, moving_var])
        evaluate = sess.run(y, {x: xv[:2], is_training: False})
        sess.run(updates, {x: xv, is_training: False})  # no update while not training
        still = sess.run([moving_mean, moving_var])
    np.testing.assert_array_equal(out, want)  # exactly the batch's normalization
    np.testing.assert_array_equal(g, want_g)
    # TensorFlow's update from 0 and 1: (1 - momentum) of the way to the batch's
    np.testing.assert_allclose(mean, 0.25 * xv.mean(0), rtol=1e-5)
    np.testing.assert_allclose(var, 0.75 + 0.25 * xv.var(0, ddof=1), rtol=1e-5)
    np.testing.assert_allclose(evaluate, (xv[:2] - mean) / np.sqrt(var + 1e-3), rtol=1e-5,
                               atol=1e-5)
    np.testing.assert_array_equal(still[0], mean)
    np.testing.assert_array_equal(still[1], var)
    assert len(updates) == 2


def test_batch_normalization_over_another_axis():
    # axis=1 of NCHW images: per channel over N, H and W, as TensorFlow's
    # layer normalizes them; the gradient reaches x in its own layout
    x = tf.placeholder(tf.float32, [None, 3, 4, 5])
    y = tf.layers.batch_normalization(x, axis=1, training=True, momentum=0.5, name="nchw")
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    grad, = tf.gradients(tf.reduce_sum(y * tf.constant(np.arange(60, dtype=np.float32)
                                                       .reshape(3, 4, 5))), [x])
    xv = np.random.RandomState(5).randn(6, 3, 4, 5).astype(np.float32) * 2 + 1
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out, g = sess.run([y, grad], {x: xv})
        sess.run(updates, {x: xv})
        mean = sess.run(tf.get_default_graph().get_tensor_by_name("nchw/moving_mean:0"))
    per_channel = xv.transpose(1, 0, 2, 3).reshape(3, -1)
    want = (xv - per_channel.mean(1)[None, :, None, None]) / np.sqrt(
        per_channel.var(1)[None, :, None, None] + 1e-3)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(mean, 0.5 * per_channel.mean(1), rtol=1e-5)
    assert g.shape == xv.shape and np.isfinite(g).all() and np.abs(g).max() > 0
    with pytest.raises(NotImplementedError, match="takes one axis"):
        tf.layers.batch_normalization(x, axis=[1, 2], training=True, name="two")
