"""tf.layers' dense, conv2d, pooling, flatten and dropout against NumPy,
computed from the layers' own variables as the session holds them; their
variable names, shapes, regularization losses and errors."""
import numpy as np
import pytest

import ctower.compat.v1 as tf
from test_nn_windows import _naive_conv, _naive_pool


def _variables():
    return {v.name: v for v in tf.global_variables()}


def test_dense_is_x_times_its_kernel_plus_its_bias():
    x = tf.placeholder(tf.float32, [None, 6])
    y = tf.layers.dense(x, 4, activation=tf.nn.relu)
    variables = _variables()
    assert sorted(variables) == ["dense/bias:0", "dense/kernel:0"]
    assert y.name == "dense/Relu:0" and y.shape.as_list() == [None, 4]
    x_value = np.random.RandomState(0).randn(5, 6).astype(np.float32)
    with tf.Session() as sess:
        got, kernel, bias = sess.run([y, variables["dense/kernel:0"], variables["dense/bias:0"]],
                                     {x: x_value})
    assert kernel.shape == (6, 4) and not bias.any()  # zeros, TensorFlow's default bias
    np.testing.assert_allclose(got, np.maximum(x_value @ kernel + bias, 0), rtol=1e-5, atol=1e-6)


def test_dense_kernels_are_glorot_uniform():
    tf.layers.dense(tf.placeholder(tf.float32, [None, 300]), 200)
    with tf.Session() as sess:
        kernel = sess.run(_variables()["dense/kernel:0"])
    limit = np.sqrt(6.0 / (300 + 200))
    assert np.abs(kernel).max() <= limit and np.abs(kernel).max() > 0.99 * limit
    assert abs(kernel.mean()) < 0.01 * limit


def test_dense_over_the_last_axis_of_a_rank_3_input():
    x = tf.placeholder(tf.float32, [None, 3, 5])
    y = tf.layers.dense(x, 2, bias_initializer=tf.constant_initializer([0.5, -1.0]),
                        kernel_initializer=tf.constant_initializer(np.arange(10.0).reshape(5, 2)))
    assert y.shape.as_list() == [None, 3, 2]
    x_value = np.random.RandomState(1).randn(4, 3, 5).astype(np.float32)
    with tf.Session() as sess:
        got = sess.run(y, {x: x_value})
    np.testing.assert_allclose(got, x_value @ np.arange(10.0).reshape(5, 2) + [0.5, -1.0],
                               rtol=1e-5, atol=1e-5)


def test_layer_names_are_made_unique_and_name_with_reuse_shares():
    x = tf.placeholder(tf.float32, [None, 3])
    tf.layers.dense(x, 2)
    tf.layers.dense(x, 2, use_bias=False)
    first = tf.layers.dense(x, 2, name="logits")
    again = tf.layers.dense(x, 2, name="logits", reuse=True)
    assert list(_variables()) == ["dense/kernel:0", "dense/bias:0", "dense_1/kernel:0",
                                  "logits/kernel:0", "logits/bias:0"]
    assert (first.name, again.name) == ("logits/BiasAdd:0", "logits_1/BiasAdd:0")
    with pytest.raises(ValueError, match="Variable logits/kernel already exists"):
        tf.layers.dense(x, 2, name="logits")
    with tf.variable_scope("tower"):
        tf.layers.conv2d(tf.placeholder(tf.float32, [None, 4, 4, 1]), 3, 2)
    assert "tower/conv2d/kernel:0" in _variables()
    assert _variables()["tower/conv2d/kernel:0"].shape.as_list() == [2, 2, 1, 3]


@pytest.mark.parametrize("strides,padding", [((1, 1), "valid"), ((2, 1), "Same"), (2, "SAME")])
def test_conv2d_against_a_naive_loop(strides, padding):
    rng = np.random.RandomState(2)
    x_value = rng.randn(2, 7, 6, 3).astype(np.float32)
    kernel = rng.randn(3, 2, 3, 4).astype(np.float32)
    x = tf.placeholder(tf.float32, [None, 7, 6, 3])
    y = tf.layers.conv2d(x, 4, (3, 2), strides=strides, padding=padding,
                         kernel_initializer=tf.constant_initializer(kernel),
                         bias_initializer=tf.constant_initializer([1.0, 2.0, 3.0, 4.0]))
    s = (strides, strides) if isinstance(strides, int) else strides
    want = _naive_conv(x_value.astype(np.float64), kernel, s, (1, 1),
                       padding.lower() == "same") + [1.0, 2.0, 3.0, 4.0]
    assert y.name == "conv2d/BiasAdd:0" and y.shape.as_list() == [None] + list(want.shape[1:])
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(y, {x: x_value}), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("layer,is_max,padding", [
    (tf.layers.max_pooling2d, True, "same"), (tf.layers.max_pooling2d, True, "valid"),
    (tf.layers.average_pooling2d, False, "VALID"), (tf.layers.average_pooling2d, False, "same")])
def test_pooling_against_a_naive_loop(layer, is_max, padding):
    x_value = np.random.RandomState(3).randn(2, 7, 6, 3).astype(np.float32)
    y = layer(tf.constant(x_value), [2, 3], (2, 2), padding=padding)
    want, _ = _naive_pool(x_value.astype(np.float64), np.zeros((2, 4, 3, 3)) if padding.lower()
                          == "same" else np.zeros((2, 3, 2, 3)), is_max, (2, 3), (2, 2),
                          padding.lower() == "same")
    assert y.name == ("max_pooling2d/MaxPool:0" if is_max else "average_pooling2d/AvgPool:0")
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(y), want, rtol=1e-5, atol=1e-6)


def test_flatten_keeps_the_batch_and_multiplies_the_rest():
    x_value = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    x = tf.placeholder(tf.float32, [None, 3, 4, 5])
    flat = tf.layers.flatten(x)
    nchw = tf.layers.flatten(x, data_format="channels_first")
    vector = tf.layers.flatten(tf.placeholder(tf.float32, [None]))
    assert flat.shape.as_list() == [None, 60] and vector.shape.as_list() == [None, 1]
    assert flat.name == "flatten/Reshape:0"
    with tf.Session() as sess:
        got, got_nchw = sess.run([flat, nchw], {x: x_value})
    np.testing.assert_array_equal(got, x_value.reshape(2, 60))
    np.testing.assert_array_equal(got_nchw, x_value.transpose(0, 2, 3, 1).reshape(2, 60))


def test_dropout_with_a_bool_and_with_a_bool_tensor():
    x_value = np.ones((8, 500), np.float32)
    x = tf.placeholder(tf.float32, [None, 500])
    is_training = tf.placeholder(tf.bool, [])
    off = tf.layers.dropout(x, rate=0.25)
    on = tf.layers.dropout(x, rate=0.25, training=True)
    switched = tf.layers.dropout(x, rate=0.25, training=is_training)
    with tf.Session() as sess:
        got_off, got_on = sess.run([off, on], {x: x_value})
        held, dropped = (sess.run(switched, {x: x_value, is_training: t}) for t in (False, True))
    np.testing.assert_array_equal(got_off, x_value)
    np.testing.assert_array_equal(held, x_value)
    for got in (got_on, dropped):
        assert set(np.unique(got)) == {0.0, np.float32(1 / 0.75)}
        assert 0.2 < (got == 0).mean() < 0.3


def test_kernel_regularizer_adds_its_loss_once():
    x = tf.placeholder(tf.float32, [None, 4, 4, 2])
    y = tf.layers.conv2d(x, 3, 3, kernel_regularizer=lambda w: 0.5 * tf.nn.l2_loss(w),
                         name="conv", trainable=False)
    tf.layers.conv2d(x, 3, 3, kernel_regularizer=lambda w: 0.5 * tf.nn.l2_loss(w), name="conv",
                     reuse=True)
    losses = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    assert len(losses) == 1 and losses[0].name.startswith("conv/kernel/Regularizer/")
    assert tf.trainable_variables() == [] and y.shape.as_list() == [None, 2, 2, 3]
    with tf.Session() as sess:
        loss, kernel = sess.run([losses[0], _variables()["conv/kernel:0"]])
    np.testing.assert_allclose(loss, 0.25 * (kernel.astype(np.float64) ** 2).sum(), rtol=1e-5)


def test_what_the_layers_refuse():
    images = tf.placeholder(tf.float32, [None, 8, 8, 3])
    with pytest.raises(NotImplementedError, match="channels_last"):
        tf.layers.conv2d(images, 2, 3, data_format="channels_first")
    with pytest.raises(NotImplementedError, match="channels_last"):
        tf.layers.max_pooling2d(images, 2, 2, data_format="channels_first")
    with pytest.raises(ValueError, match='one of "valid", "same"'):
        tf.layers.conv2d(images, 2, 3, padding="full")
    with pytest.raises(ValueError, match="`pool_size` argument must be a tuple of 2 integers"):
        tf.layers.average_pooling2d(images, [2, 2, 2], 2)
    with pytest.raises(ValueError, match="expected ndim=4, found ndim=2"):
        tf.layers.max_pooling2d(tf.placeholder(tf.float32, [None, 8]), 2, 2)
    with pytest.raises(ValueError, match="last dimension of the inputs to a Dense layer"):
        tf.layers.dense(tf.placeholder(tf.float32, [None, None]), 2)
    with pytest.raises(ValueError, match="between 0 and 1"):
        tf.layers.dropout(images, rate=1.5, training=True)
