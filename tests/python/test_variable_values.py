"""Every variable is initialized on first use, whichever kind its initial
value is: an initializer function (drawn by the engine) or a value (a list,
an array, a tensor, constant_initializer of a list), which each session
gives the variable before it first runs, reads or saves anything. A program
that never runs global_variables_initializer() reads and trains from the
initial values, not from zeros."""
import numpy as np

import ctower.compat.v1 as tf


def _variables_of_both_kinds():
    return {
        "list": tf.Variable([1.0, 2.0], name="from_list"),
        "tensor": tf.get_variable("from_tensor", initializer=tf.constant([3.0, 4.0])),
        "constant_list": tf.get_variable("from_constants", [2],
                                         initializer=tf.constant_initializer([5.0, 6.0])),
        "ones": tf.get_variable("ones", [2], initializer=tf.ones_initializer()),
        "constant": tf.get_variable("sevens", [2], initializer=tf.constant_initializer(7.0)),
    }


EXPECTED = {"list": [1.0, 2.0], "tensor": [3.0, 4.0], "constant_list": [5.0, 6.0],
            "ones": [1.0, 1.0], "constant": [7.0, 7.0]}


def test_first_use_reads_the_initial_values_without_an_initializer():
    variables = _variables_of_both_kinds()
    with tf.Session() as sess:
        values = sess.run(variables)
    for key, value in values.items():
        np.testing.assert_array_equal(value, EXPECTED[key], err_msg=key)


def test_an_initial_tensor_reads_the_variables_made_before_it():
    a = tf.Variable([1.0, 2.0])
    b = tf.Variable(a * 3.0)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(b), [3.0, 6.0])


def test_training_starts_from_the_initial_values():
    v = tf.Variable([1.0, 2.0])
    w = tf.get_variable("w", [2], initializer=tf.constant_initializer([3.0, 4.0]))
    loss = tf.reduce_sum(v * v) + tf.reduce_sum(w * w)
    step = tf.train.GradientDescentOptimizer(0.25).minimize(loss)
    with tf.Session() as sess:
        sess.run(step)  # x - 0.25 * 2x
        np.testing.assert_array_equal(sess.run(v), [0.5, 1.0])
        np.testing.assert_array_equal(sess.run(w), [1.5, 2.0])


def test_variables_made_after_the_first_run():
    a = tf.constant(1.0)
    with tf.Session() as sess:
        sess.run(a)
        v = tf.Variable([8.0, 9.0])
        np.testing.assert_array_equal(sess.run(v), [8.0, 9.0])


def test_assignments_and_restores_are_kept_and_initializers_reset(tmp_path):
    variables = _variables_of_both_kinds()
    v = variables["list"]
    saver = tf.train.Saver()
    with tf.Session() as sess:  # saved before any run: the initial values
        path = saver.save(sess, str(tmp_path / "model"))
    with tf.Session() as sess:
        sess.run(v.assign([9.0, 9.0]))
        np.testing.assert_array_equal(sess.run(v), [9.0, 9.0])
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(v), [1.0, 2.0])
        v.load([4.0, 4.0], sess)
        np.testing.assert_array_equal(sess.run(v), [4.0, 4.0])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run([x.assign([0.0, 0.0]) for x in variables.values()])
        saver.restore(sess, path)
        for key, value in sess.run(variables).items():
            np.testing.assert_array_equal(value, EXPECTED[key], err_msg=key)
    with tf.Session() as sess:  # restored before any run: the checkpoint's values stay
        sess.run(v.assign([0.0, 0.0]))
        saver.save(sess, str(tmp_path / "zeros"))
    with tf.Session() as sess:
        saver.restore(sess, str(tmp_path / "zeros"))
        np.testing.assert_array_equal(sess.run(v), [0.0, 0.0])
