"""Placeholders made without a shape (tf.placeholder(tf.float32)): each takes
the rank of its first use, as the engine needs every tensor's rank; where a
use cannot tell it, or a value of another rank is fed, a clear error."""
import numpy as np
import pytest

import ctower.compat.v1 as tf


def _weight(name, shape):
    return tf.get_variable(name, shape, initializer=tf.truncated_normal_initializer(
        stddev=0.1, seed=1))


def _bias(name, shape):
    return tf.get_variable(name, shape, initializer=tf.constant_initializer(0.1))


def _deep_mnist(side=8, classes=4):
    """The Deep MNIST tutorial's model, smaller: keep_prob and the learning
    rate are placeholders without a shape."""
    x = tf.placeholder(tf.float32, shape=[None, side * side])
    y_ = tf.placeholder(tf.float32, shape=[None, classes])
    keep_prob = tf.placeholder(tf.float32)
    learning_rate = tf.placeholder(tf.float32)
    image = tf.reshape(x, [-1, side, side, 1])
    h_conv = tf.nn.relu(tf.nn.conv2d(image, _weight("w_conv", [3, 3, 1, 4]), strides=[1, 1, 1, 1],
                                     padding="SAME") + _bias("b_conv", [4]))
    h_pool = tf.nn.max_pool(h_conv, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME")
    flat = tf.reshape(h_pool, [-1, (side // 2) ** 2 * 4])
    h_fc1 = tf.nn.relu(tf.matmul(flat, _weight("w_fc1", [(side // 2) ** 2 * 4, 32]))
                       + _bias("b_fc1", [32]))
    h_fc1_drop = tf.nn.dropout(h_fc1, keep_prob)
    y_conv = tf.matmul(h_fc1_drop, _weight("w_fc2", [32, classes])) + _bias("b_fc2", [classes])
    loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=y_, logits=y_conv))
    train_step = tf.train.AdamOptimizer(learning_rate).minimize(loss)
    correct = tf.equal(tf.argmax(y_conv, 1), tf.argmax(y_, 1))
    accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))
    return x, y_, keep_prob, learning_rate, loss, train_step, accuracy


def test_deep_mnist_keep_prob_and_learning_rate_without_shapes():
    x, y_, keep_prob, learning_rate, loss, train_step, accuracy = _deep_mnist()
    assert keep_prob.shape.ndims is not None  # dropout gave it its rank: a scalar
    rng = np.random.RandomState(0)
    images = rng.rand(32, 64).astype(np.float32)
    labels = np.eye(4, dtype=np.float32)[rng.randint(0, 4, 32)]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        before = sess.run(tf.trainable_variables())
        sess.run(train_step, {x: images, y_: labels, keep_prob: 0.5, learning_rate: 0.0})
        unchanged = sess.run(tf.trainable_variables())
        first = sess.run(loss, {x: images, y_: labels, keep_prob: 1.0})
        for _ in range(150):
            sess.run(train_step, {x: images, y_: labels, keep_prob: 0.5, learning_rate: 1e-2})
        last = sess.run(loss, {x: images, y_: labels, keep_prob: 1.0})
        again = sess.run(loss, {x: images, y_: labels, keep_prob: 1.0})
        trained = sess.run(accuracy, {x: images, y_: labels, keep_prob: 1.0})
    for a, b in zip(before, unchanged):  # a learning rate of 0 fed: no step
        np.testing.assert_array_equal(a, b)
    assert last < 0.5 * first
    assert last == again  # keep_prob 1.0: no dropout in evaluation
    assert trained > 0.9


def test_rank_from_elementwise_partner_matmul_and_feed():
    a = tf.placeholder(tf.float32)
    y = a * tf.ones([2, 3]) + 1.0  # broadcasts to the other operand's rank
    m = tf.placeholder(tf.float32)
    w = tf.constant(np.arange(6, dtype=np.float32).reshape(3, 2))
    product = tf.matmul(m, w)
    alone = tf.placeholder(tf.float32)
    assert alone.shape.ndims is None and str(alone.shape) == "<unknown>"
    column = np.array([[1.0], [2.0]], np.float32)
    matrix = np.arange(12, dtype=np.float32).reshape(4, 3)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(y, {a: column}), column * np.ones((2, 3)) + 1)
        np.testing.assert_array_equal(sess.run(product, {m: matrix}), matrix @ w.eval())
        np.testing.assert_array_equal(sess.run(alone, {alone: matrix}), matrix)
        with pytest.raises(ValueError, match=r"rank of its first use, 'MatMul'"):
            sess.run(product, {m: np.ones(3, np.float32)})
        with pytest.raises(ValueError, match=r"rank of the first value fed to it"):
            sess.run(alone, {alone: 1.0})
    assert a.shape.ndims == 2 and m.shape.ndims == 2


def test_a_use_that_cannot_tell_the_rank_is_refused():
    p = tf.placeholder(tf.float32, name="p")
    with pytest.raises(ValueError, match=r"Placeholder 'p:0' was made without a shape.*"
                                         r"shape=\[None, 784\]"):
        tf.nn.relu(p)
    with pytest.raises(ValueError, match="was made without a shape"):
        tf.placeholder(tf.float32) + tf.placeholder(tf.float32)
    p.set_shape([None, 3])  # as TensorFlow scripts give a rank later
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(tf.nn.relu(p), {p: [[-1.0, 0.0, 2.0]]}),
                                      [[0.0, 0.0, 2.0]])


def test_linear_regression_tutorial_feeding_one_example_at_a_time():
    # X = tf.placeholder("float") of the TensorFlow examples' linear
    # regression: scalars fed one example at a time
    X, Y = tf.placeholder("float"), tf.placeholder("float")
    W, b = tf.Variable(0.3, name="weight"), tf.Variable(0.1, name="bias")
    pred = tf.add(tf.multiply(X, W), b)
    cost = (pred - Y) * (pred - Y) / 2.0
    step = tf.train.GradientDescentOptimizer(0.05).minimize(cost)
    xs = np.linspace(-1.0, 1.0, 21, dtype=np.float32)
    ys = 2.0 * xs - 0.5
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(60):
            for x, y in zip(xs, ys):
                sess.run(step, feed_dict={X: x, Y: y})
        w_value, b_value = sess.run([W, b])
        # the tutorial's cost over every example at once needs X's rank 1
        with pytest.raises(ValueError, match=r"the rank of its first use, 'Mul' \(Mul\)"):
            sess.run(cost, feed_dict={X: xs, Y: ys})
    assert X.dtype == tf.float32
    assert abs(w_value - 2.0) < 1e-2 and abs(b_value + 0.5) < 1e-2
