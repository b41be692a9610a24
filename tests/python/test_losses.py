"""tf.losses against NumPy: the cross-entropies and the mean squared error,
weighted and reduced (by default the weighted sum over the number of
nonzero weights), the LOSSES collection and the totals."""
import numpy as np
import pytest

import ctower.compat.v1 as tf

LOGITS = np.array([[1.0, 2.0, 0.5], [0.1, -1.0, 2.0], [3.0, 0.0, 0.0], [0.0, 0.5, -0.5]],
                  np.float32)
LABELS = np.array([1, 2, 0, 2])


def _xent(logits, onehot):
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_softmax = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return -(onehot * log_softmax).sum(axis=1)


def _run(*tensors):
    with tf.Session() as sess:
        return sess.run(list(tensors))


def test_sparse_softmax_cross_entropy_is_the_mean_by_default():
    loss = tf.losses.sparse_softmax_cross_entropy(LABELS, LOGITS)
    assert loss.name == "sparse_softmax_cross_entropy_loss/value:0" and loss.shape.ndims == 0
    assert tf.get_collection(tf.GraphKeys.LOSSES) == [loss]
    got, = _run(loss)
    np.testing.assert_allclose(got, _xent(LOGITS, np.eye(3)[LABELS]).mean(), rtol=1e-5)


@pytest.mark.parametrize("weights", [[1.0, 0.0, 2.0, 0.5], [[1.0], [0.0], [2.0], [0.5]]])
def test_per_example_weights_divide_by_the_nonzero_ones(weights):
    labels = tf.placeholder(tf.int32, [None])
    loss = tf.losses.sparse_softmax_cross_entropy(labels, LOGITS, weights=weights)
    with tf.Session() as sess:
        got = sess.run(loss, {labels: LABELS})
    w = np.reshape(weights, [-1])
    want = (_xent(LOGITS, np.eye(3)[LABELS]) * w).sum() / 3  # three nonzero weights
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_softmax_cross_entropy_with_a_scalar_weight_and_label_smoothing():
    onehot = np.eye(3, dtype=np.float32)[LABELS]
    weighted = tf.losses.softmax_cross_entropy(onehot, LOGITS, weights=3.0)
    smoothed = tf.losses.softmax_cross_entropy(onehot, LOGITS, label_smoothing=0.3)
    got_weighted, got_smoothed = _run(weighted, smoothed)
    np.testing.assert_allclose(got_weighted, 3 * _xent(LOGITS, onehot).mean(), rtol=1e-5)
    np.testing.assert_allclose(got_smoothed, _xent(LOGITS, onehot * 0.7 + 0.1).mean(),
                               rtol=1e-5)


def test_mean_squared_error_with_weights_broadcast_over_a_row():
    predictions = np.array([[1.5, 2.0, 0.0], [2.0, 4.0, 1.0]], np.float32)
    labels = np.array([[1.0, 2.0, 1.0], [3.0, 4.0, -1.0]], np.float32)
    plain = tf.losses.mean_squared_error(labels, predictions)
    by_row = tf.losses.mean_squared_error(labels, predictions, weights=[[2.0], [0.0]])
    got_plain, got_by_row = _run(plain, by_row)
    squares = (predictions - labels) ** 2
    np.testing.assert_allclose(got_plain, squares.mean(), rtol=1e-6)
    np.testing.assert_allclose(got_by_row, 2 * squares[0].sum() / 3, rtol=1e-6)


def test_the_other_reductions():
    weights = np.array([2.0, 0.0, 1.0, 0.5], np.float32)
    reduction = tf.losses.Reduction
    losses = [tf.losses.sparse_softmax_cross_entropy(LABELS, LOGITS, weights=weights,
                                                     reduction=r)
              for r in (reduction.NONE, reduction.SUM, reduction.MEAN,
                        reduction.SUM_OVER_BATCH_SIZE)]
    none, total, mean, over_batch = _run(*losses)
    weighted = _xent(LOGITS, np.eye(3)[LABELS]) * weights
    np.testing.assert_allclose(none, weighted, rtol=1e-5)
    np.testing.assert_allclose(total, weighted.sum(), rtol=1e-5)
    np.testing.assert_allclose(mean, weighted.sum() / weights.sum(), rtol=1e-5)
    np.testing.assert_allclose(over_batch, weighted.sum() / 4, rtol=1e-5)


def test_all_weights_zero_is_a_loss_of_zero():
    zero = tf.losses.sparse_softmax_cross_entropy(LABELS, LOGITS, weights=0.0)
    cancelling = tf.losses.sparse_softmax_cross_entropy(LABELS, LOGITS, weights=[1, -1, 0, 0],
                                                        reduction=tf.losses.Reduction.MEAN)
    assert _run(zero, cancelling) == [0.0, 0.0]


def test_total_loss_adds_the_losses_and_the_regularization_losses():
    x = tf.placeholder(tf.float32, [None, 3])
    logits = tf.layers.dense(x, 3, kernel_regularizer=lambda w: 0.1 * tf.nn.l2_loss(w))
    loss = tf.losses.sparse_softmax_cross_entropy(LABELS, logits)
    extra = tf.constant(2.0)
    tf.losses.add_loss(extra)
    assert tf.losses.get_losses() == [loss, extra]
    regularization = tf.losses.get_regularization_loss()
    total = tf.losses.get_total_loss()
    without = tf.losses.get_total_loss(add_regularization_losses=False, name="data_loss")
    assert (total.name, regularization.name) == ("total_loss:0", "total_regularization_loss:0")
    x_value = np.random.RandomState(0).randn(4, 3).astype(np.float32)
    kernel_var = [v for v in tf.global_variables() if v.name == "dense/kernel:0"][0]
    with tf.Session() as sess:
        got = sess.run([loss, regularization, total, without, kernel_var], {x: x_value})
    got_loss, got_reg, got_total, got_without, kernel = got
    np.testing.assert_allclose(got_reg, 0.05 * (kernel.astype(np.float64) ** 2).sum(), rtol=1e-5)
    np.testing.assert_allclose(got_total, got_loss + 2.0 + got_reg, rtol=1e-5)
    np.testing.assert_allclose(got_without, got_loss + 2.0, rtol=1e-5)


def test_no_regularization_is_zero_and_no_loss_is_an_error():
    assert _run(tf.losses.get_regularization_loss()) == [0.0]
    with pytest.raises(ValueError, match="at least one Tensor"):
        tf.losses.get_total_loss()


def test_what_the_losses_refuse():
    with pytest.raises(ValueError, match="weights can not be broadcast to values"):
        tf.losses.sparse_softmax_cross_entropy(LABELS, LOGITS, weights=[1.0, 2.0])
    with pytest.raises(ValueError, match="weights can not be broadcast to values"):
        tf.losses.mean_squared_error(np.ones((2, 2)), np.ones((2, 2)), weights=[1.0, 0.0])
    with pytest.raises(ValueError, match="Invalid Reduction Key"):
        tf.losses.sparse_softmax_cross_entropy(LABELS, LOGITS, reduction="mean")
    with pytest.raises(ValueError, match="incompatible"):
        tf.losses.mean_squared_error(np.ones((1, 2)), np.ones((1, 3)))
    assert tf.get_collection(tf.GraphKeys.LOSSES) == []
