"""Every API that takes tensors, operations or variables refuses those of
another tf.Graph with TensorFlow's ValueError ("must be from the same
graph"): a graph knows its nodes by index, and another graph's node of the
same index is a different node."""
import numpy as np
import pytest

import ctower.compat.v1 as tf

SAME_GRAPH = "must be from the same graph"


def _two_graphs():
    """A variable and a loss in graph g1, and the same in the default
    graph: the nodes have the same indices in both."""
    g1 = tf.Graph()
    with g1.as_default():
        v1 = tf.Variable([1.0, 2.0], name="v")
        loss1 = tf.reduce_sum(v1 * v1)
    v0 = tf.Variable([3.0, 4.0], name="v")
    loss0 = tf.reduce_sum(v0 * v0)
    return g1, v1, loss1, v0, loss0


def test_gradients_of_another_graphs_loss():
    g1, v1, loss1, v0, loss0 = _two_graphs()
    with pytest.raises(ValueError, match=SAME_GRAPH):
        tf.gradients(loss1, [v0])
    with pytest.raises(ValueError, match=SAME_GRAPH):
        tf.gradients(loss0, [v0], stop_gradients=[v1])
    with g1.as_default():
        (g,) = tf.gradients(loss1, [v1])
    with tf.Session(graph=g1) as sess:
        sess.run(tf.variables_initializer([v1]))
        np.testing.assert_array_equal(sess.run(g), [2.0, 4.0])


def test_optimizers_and_builders_refuse_other_graphs():
    g1, v1, loss1, v0, loss0 = _two_graphs()
    opt = tf.train.GradientDescentOptimizer(0.1)
    with pytest.raises(ValueError, match=SAME_GRAPH):
        opt.minimize(loss1, var_list=[v0])
    with pytest.raises(ValueError, match=SAME_GRAPH):
        opt.apply_gradients([(loss1, v0)])
    with pytest.raises(ValueError, match=SAME_GRAPH):
        v0.assign(v1.value())
    with pytest.raises(ValueError, match=SAME_GRAPH):
        tf.group(v1.initializer, v0.initializer)
    with pytest.raises(ValueError, match=SAME_GRAPH):
        with tf.control_dependencies([v1.initializer]):
            tf.identity(loss0)
    with pytest.raises(ValueError, match=SAME_GRAPH):
        tf.nn.softmax_cross_entropy_with_logits_v2(labels=tf.constant([[0.0, 1.0]]),
                                                   logits=tf.reshape(v1, [1, 2]))


def test_a_saver_of_another_graph(tmp_path):
    g1, v1, loss1, v0, loss0 = _two_graphs()
    with g1.as_default():
        saver = tf.train.Saver([v1])
    with tf.Session(graph=g1) as sess:
        sess.run(v1.initializer)
        path = saver.save(sess, str(tmp_path / "model"))
    with tf.Session() as sess:  # the default graph's session
        sess.run(tf.global_variables_initializer())
        with pytest.raises(ValueError, match=SAME_GRAPH):
            saver.save(sess, str(tmp_path / "other"))
        with pytest.raises(ValueError, match=SAME_GRAPH):
            saver.restore(sess, path)
        np.testing.assert_array_equal(sess.run(v0), [3.0, 4.0])
    assert not (tmp_path / "other").exists()
