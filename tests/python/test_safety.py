"""No misuse from Python crashes the interpreter: each raises a Python
exception (TensorFlow's, where TensorFlow raises one) and the session and
graph stay usable."""
import gc
import os
import signal
import textwrap
import threading
import time

import numpy as np
import pytest

import ctower.compat.v1 as tf
from conftest import run_script


def test_feeds_of_the_wrong_shape_or_dtype():
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    y = x * 2.0
    with tf.Session() as sess:
        with pytest.raises(ValueError, match=r"Cannot feed value of shape \(3,\) for Tensor "
                                             r"'x:0', which has shape '\(\?, 2\)'"):
            sess.run(y, {x: np.zeros(3)})
        with pytest.raises(ValueError, match="Cannot feed value"):
            sess.run(y, {x: [["a", "b"]]})
        with pytest.raises(TypeError, match="value of a feed cannot be a tf.Tensor"):
            sess.run(y, {x: y})
        with pytest.raises(TypeError, match="Cannot interpret feed_dict key"):
            sess.run(y, {"nothing:0": [[1.0, 2.0]]})
        with pytest.raises(tf.errors.InvalidArgumentError, match="must feed a value for "
                                                                 "placeholder 'x'"):
            sess.run(y)
        # float64 and strided arrays are converted; the session goes on
        fed = np.arange(8.0).reshape(4, 2)[::2]
        np.testing.assert_array_equal(sess.run(y, {x: fed}), fed * 2)


def test_bad_labels_are_invalid_argument():
    logits = tf.placeholder(tf.float32, [None, 3])
    labels = tf.placeholder(tf.int32, [None])
    loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="label 7 of example 1"):
            sess.run(loss, {logits: np.zeros((2, 3)), labels: [0, 7]})
        assert sess.run(loss, {logits: np.zeros((1, 3)), labels: [2]}).shape == (1,)


def test_int64_labels_out_of_the_int32_range_are_invalid_argument():
    logits = tf.placeholder(tf.float32, [None, 3])
    labels = tf.placeholder(tf.int64, [None])
    loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    with tf.Session() as sess:
        for bad in (2**32 + 1, -2**32 + 2, 2**62):  # 1 and 2 when wrapped to 32 bits
            with pytest.raises(tf.errors.InvalidArgumentError, match="of example 1 is outside"):
                sess.run(loss, {logits: np.zeros((2, 3)), labels: np.array([0, bad])})
        assert sess.run(loss, {logits: np.zeros((2, 3)), labels: [2, 1]}).shape == (2,)


def test_integer_casts_saturate_rather_than_wrap():
    big = tf.constant([2**33 + 1, -2**33 + 1, 5], tf.int64)
    floats = tf.constant([1e10, -1e10, float("nan"), 3.7, 1e30], tf.float32)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(tf.cast(big, tf.int32)), [2**31 - 1, -2**31, 5])
        np.testing.assert_array_equal(sess.run(tf.cast(big, tf.uint8)), [255, 0, 5])
        np.testing.assert_array_equal(sess.run(tf.cast(floats, tf.int32)),
                                      [2**31 - 1, -2**31, 0, 3, 2**31 - 1])
        np.testing.assert_array_equal(sess.run(tf.cast(floats, tf.int64)),
                                      [10**10, -10**10, 0, 3, 2**63 - 1])
        assert sess.run(tf.cast(big, tf.int64)).tolist() == [2**33 + 1, -2**33 + 1, 5]


def test_variables_too_large_to_address():
    # 2^62 floats are 2^64 bytes; in a process of its own, so that a crash fails this test alone
    code, out, err = run_script(textwrap.dedent("""
        import ctower.compat.v1 as tf
        try:
            v = tf.get_variable("v", [2**61, 2])
        except ValueError as e:
            print(e)
    """))
    assert code == 0, err[-2000:]
    assert "variable 'v' of shape [2305843009213693952, 2] (f32) takes more bytes than 64 bits" in out
    with pytest.raises(ValueError, match=r"too large \(more than 2\*\*63 - 1 entries\)"):
        tf.get_variable("w", [2**62, 2])
    with pytest.raises(ValueError, match="too large"):
        tf.placeholder(tf.float32, [None, 2**40, 2**40])
    w = tf.get_variable("w", [2], initializer=tf.ones_initializer())
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(w), [1.0, 1.0])


def test_a_closed_session_refuses_to_run():
    a = tf.constant(1.0)
    sess = tf.Session()
    sess.close()
    with pytest.raises(RuntimeError, match="Attempted to use a closed Session."):
        sess.run(a)
    sess.close()  # twice is fine
    with tf.Session() as s:
        pass
    with pytest.raises(RuntimeError, match="closed Session"):
        s.run(a)


def test_a_tensor_of_another_graph():
    a = tf.constant(1.0)
    other = tf.Graph()
    with other.as_default():
        b = tf.constant(2.0)
        with pytest.raises(ValueError, match="must be from the same graph"):
            tf.add(a, b)
    with tf.Session() as sess:
        with pytest.raises(ValueError, match="is not an element of this graph"):
            sess.run(b)
        with pytest.raises(TypeError, match="Cannot interpret feed_dict key"):
            sess.run(a, {b: 1.0})


def test_the_session_holds_its_graph():
    def make():
        g = tf.Graph()
        with g.as_default():
            x = tf.placeholder(tf.float32, [2])
            y = x + 1.0
        return tf.Session(graph=g), y.name, x.name

    sess, y, x = make()
    gc.collect()
    np.testing.assert_array_equal(sess.run(y, {x: [1.0, 2.0]}), [2.0, 3.0])
    sess.close()
    del sess
    gc.collect()


def test_nodes_added_after_the_session_is_made():
    a = tf.constant(2.0)
    with tf.Session() as sess:
        assert sess.run(a) == 2.0
        b = a * 3.0
        assert sess.run(b) == 6.0


def _heavy_graph():
    x = tf.placeholder(tf.float32, [1200, 1200])
    y = x
    for _ in range(12):
        y = tf.matmul(y, x) / 1200.0
    return x, y, np.full((1200, 1200), 0.5, np.float32)


def test_the_gil_is_released_while_the_engine_computes():
    x, y, value = _heavy_graph()
    ticks = [0]
    stop = threading.Event()

    def count():
        while not stop.is_set():
            ticks[0] += 1
            time.sleep(0.001)

    with tf.Session() as sess:
        sess.run(y, {x: value})
        thread = threading.Thread(target=count)
        thread.start()
        start = time.monotonic()
        sess.run(y, {x: value})
        elapsed = time.monotonic() - start
        stop.set()
        thread.join()
    # the counter ran during the run (it would not move with the GIL held)
    assert elapsed > 0.05 and ticks[0] >= 10


def test_keyboard_interrupt_during_run():
    x, y, value = _heavy_graph()
    v = tf.Variable(0.0)
    step = tf.group(y, v.assign_add(1.0))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        done = 0
        timer = threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGINT))
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            for _ in range(1000):  # the interrupt lands in a run (or between two)
                sess.run(step, {x: value})
                done += 1
        timer.join()
        # a run that was interrupted finished its step; the session goes on
        steps = sess.run(v)
        assert steps in (done, done + 1)
        sess.run(step, {x: value})
        assert sess.run(v) == steps + 1


def test_runs_from_threads_and_close_during_a_run():
    x, y, value = _heavy_graph()
    sess = tf.Session()
    errors = []

    def work():
        try:
            for _ in range(3):
                sess.run(y, {x: value})
        except RuntimeError as e:  # closed meanwhile
            errors.append(str(e))

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    time.sleep(0.05)
    sess.close()  # waits for the run in flight
    for t in threads:
        t.join()
    assert all("closed Session" in e for e in errors)


def test_building_while_another_thread_runs():
    x, y, value = _heavy_graph()
    sess = tf.Session()
    thread = threading.Thread(target=lambda: sess.run(y, {x: value}))
    thread.start()
    extra = [tf.constant(float(i)) + 1.0 for i in range(200)]
    thread.join()
    assert sess.run(extra[-1]) == 200.0
    sess.close()


def test_bad_configs_raise():
    with pytest.raises(AttributeError, match="no field \"nothing\""):
        tf.ConfigProto(nothing=1)
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.Session(config=tf.ConfigProto(intra_op_parallelism_threads=-1))
    with pytest.raises(ValueError, match="was made without a shape"):
        tf.reduce_sum(tf.placeholder(tf.float32))
    with pytest.raises(TypeError, match="no float64 tensors"):
        tf.placeholder(tf.float64, [2])
