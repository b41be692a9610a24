"""TensorFlow 1.x's shortcuts over ops ctower has: tf.to_float, to_int32,
to_int64 (casts), tf.nn.zero_fraction, and contrib.framework's global
step (tf.train's)."""
import numpy as np
import pytest

import ctower.compat.v1 as tf


def test_the_to_casts_have_their_dtypes_and_names():
    x = tf.constant([1.7, -1.7, 3.0])
    as_int, as_long = tf.to_int32(x), tf.to_int64(x)
    as_float = tf.to_float(tf.constant([1, 2]))
    assert (as_int.dtype, as_long.dtype, as_float.dtype) == (tf.int32, tf.int64, tf.float32)
    assert (as_int.name, as_long.name, as_float.name) == ("ToInt32:0", "ToInt64:0", "ToFloat:0")
    with tf.Session() as sess:
        got_int, got_long, got_float = sess.run([as_int, as_long, as_float])
    np.testing.assert_array_equal(got_int, [1, -1, 3])  # toward zero, as TensorFlow's Cast
    np.testing.assert_array_equal(got_long, [1, -1, 3])
    np.testing.assert_array_equal(got_float, [1.0, 2.0])


def test_to_double_is_named_as_missing():
    with pytest.raises(NotImplementedError, match=r"tf\.to_double \(yet\); use tf\.to_float"):
        tf.to_double


def test_zero_fraction_of_floats_and_of_ints():
    values = np.array([[0.0, 1.5, 0.0], [2.0, 0.0, -0.0]], np.float32)
    x = tf.placeholder(tf.float32, [None, 3])
    fraction = tf.nn.zero_fraction(x)
    of_ints = tf.nn.zero_fraction(tf.constant([0, 3, 0, 0, 5]))
    assert fraction.name == "zero_fraction/fraction:0"
    with tf.Session() as sess:
        got, got_ints = sess.run([fraction, of_ints], {x: values})
    assert got == pytest.approx(np.mean(values == 0)) and got_ints == pytest.approx(0.6)


def test_contrib_framework_has_the_global_step_of_train():
    step = tf.contrib.framework.get_or_create_global_step()
    assert step is tf.train.get_or_create_global_step()
    assert tf.contrib.framework.get_global_step() is step
    assert not hasattr(tf.contrib.framework, "arg_scope")
    assert not hasattr(tf.contrib.layers, "conv2d")
