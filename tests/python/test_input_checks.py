"""Values a program passes that TensorFlow refuses: shapes that do not fit
tf.add_n, integers past a field's range, None as a value, and dimensions
that are negative or not integers. Each is TensorFlow's exception."""
import numpy as np
import pytest

import ctower
import ctower.compat.v1 as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def test_add_n_takes_one_shape():
    with pytest.raises(ValueError, match=r"input 0 is f32 \[8\], input 1 is f32 \[1\]"):
        tf.add_n([tf.zeros([8]), tf.ones([1])])
    # unknown dimensions are checked again with the values fed
    a = tf.placeholder(tf.float32, [None])
    b = tf.placeholder(tf.float32, [None])
    total = tf.add_n([a, b, a])
    with tf.Session() as sess:
        got = sess.run(total, {a: [1.0, 2.0], b: [10.0, 20.0]})
        np.testing.assert_array_equal(got, [12.0, 24.0])
        with pytest.raises(tf.errors.InvalidArgumentError, match="AddN inputs must have one shape"):
            sess.run(total, {a: np.ones(8, np.float32), b: [1.0]})


@pytest.mark.parametrize("config", [
    dict(device_count={"CPU": 2**32 + 3}),
    dict(device_count={"GPU": -2**31 - 1}),
    dict(intra_op_parallelism_threads=2**32 + 1),
    dict(inter_op_parallelism_threads=2**40),
])
def test_integers_past_32_bits_are_refused(config):
    with pytest.raises(ValueError, match="out of range"):
        tf.Session(config=tf.ConfigProto(**config))


def test_devices_refuses_integers_past_32_bits():
    with pytest.raises(ValueError, match=r"device_count\['CPU'\] = 4294967299 is out of range"):
        ctower.devices(device_count={"CPU": 2**32 + 3})
    assert len(ctower.devices(device_count={"CPU": 3})) >= 3


def test_none_is_not_a_value():
    x = tf.constant([1.0, 2.0])
    for make in (lambda: x + None, lambda: None * x, lambda: tf.constant(None),
                 lambda: tf.constant([1.0, None]), lambda: tf.add(x, None)):
        with pytest.raises(ValueError, match="None values not supported"):
            make()


@pytest.mark.parametrize("make", [
    lambda dims: tf.placeholder(tf.float32, dims),
    lambda dims: tf.zeros(dims),
    lambda dims: tf.ones(dims),
    lambda dims: tf.fill(dims, 1.0),
    lambda dims: tf.get_variable("v", dims),
    lambda dims: tf.constant(0.0, shape=dims),
])
def test_dimensions_are_integers_of_at_least_zero(make):
    with pytest.raises(ValueError, match="Dimension -1 must be >= 0"):
        make([2, -1])
    with pytest.raises(TypeError, match="Dimension value must be integer"):
        make([2.5, 3])
    with pytest.raises(TypeError, match="Dimension value must be integer"):
        make([2.0])


def test_a_bare_int_is_a_shape_of_rank_one():
    # TensorFlow reads shape=(7) (an int) as [7]
    p = tf.placeholder(tf.int32, shape=(7))
    assert p.shape.as_list() == [7]
    assert tf.placeholder(tf.float32, [None, np.int64(3)]).shape.as_list() == [None, 3]


@pytest.mark.parametrize("make", [
    lambda dims: tf.placeholder(tf.float32, dims),
    lambda dims: tf.get_variable("v", dims),
])
def test_shapes_whose_bytes_overflow_64_bits_are_refused(make):
    # 2^62 f32 elements: 2^64 bytes, which a size_t count wraps to 0
    with pytest.raises(ValueError, match="takes more bytes than 64 bits count"):
        make([2**31, 2**31])
