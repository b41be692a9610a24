"""tf.train's learning-rate schedules against their NumPy formulas, step by
step as the global step moves, and as an optimizer's learning rate."""
import numpy as np
import pytest

import ctower.compat.v1 as tf

STEPS = 9


def _by_step(schedule, global_step):
    """The schedule's value at global steps 0..STEPS-1."""
    increment = global_step.assign_add(1.0)
    out = []
    with tf.Session() as sess:
        for _ in range(STEPS):
            out.append(float(sess.run(schedule)))
            sess.run(increment)
    return np.array(out)


@pytest.mark.parametrize("make, formula", [
    (lambda g: tf.train.exponential_decay(0.1, g, 3, 0.96),
     lambda s: 0.1 * 0.96 ** (s / 3)),
    (lambda g: tf.train.exponential_decay(0.1, g, 3, 0.5, staircase=True),
     lambda s: 0.1 * 0.5 ** np.floor(s / 3)),
    (lambda g: tf.train.natural_exp_decay(0.1, g, 3, 0.5),
     lambda s: 0.1 * np.exp(-0.5 * s / 3)),
    (lambda g: tf.train.inverse_time_decay(0.1, g, 2, 0.5, staircase=True),
     lambda s: 0.1 / (1 + 0.5 * np.floor(s / 2))),
    (lambda g: tf.train.polynomial_decay(0.1, g, 5, 0.01, power=2.0),
     lambda s: (0.1 - 0.01) * (1 - np.minimum(s, 5) / 5) ** 2 + 0.01),
    (lambda g: tf.train.polynomial_decay(0.1, g, 5),
     lambda s: (0.1 - 0.0001) * (1 - np.minimum(s, 5) / 5) + 0.0001),
    (lambda g: tf.train.polynomial_decay(0.1, g, 3, 0.01, cycle=True),
     lambda s: (0.1 - 0.01) * (1 - s / (3 * np.maximum(np.ceil(s / 3), 1))) + 0.01),
], ids=["exponential", "exponential-staircase", "natural-exp", "inverse-time-staircase",
        "polynomial-power-2", "polynomial-defaults", "polynomial-cycle"])
def test_schedules_follow_their_formulas(make, formula):
    g = tf.train.get_or_create_global_step()
    got = _by_step(make(g), g)
    np.testing.assert_allclose(got, formula(np.arange(STEPS, dtype=np.float64)), rtol=2e-6,
                               atol=1e-9)


def test_piecewise_constant_picks_each_value_exactly():
    g = tf.train.get_or_create_global_step()
    values = [0.1, 0.01, 0.001]
    got = _by_step(tf.train.piecewise_constant(g, [2, 5], values), g)
    want = np.array([values[0] if s <= 2 else values[1] if s <= 5 else values[2]
                     for s in range(STEPS)], dtype=np.float32)
    np.testing.assert_array_equal(got.astype(np.float32), want)


def test_piecewise_constant_of_an_int_placeholder():
    x = tf.placeholder(tf.int32, [])
    rate = tf.train.piecewise_constant(x, [10], [1.0, 0.5])
    with tf.Session() as sess:
        assert [float(sess.run(rate, {x: v})) for v in (-3, 10, 11)] == [1.0, 1.0, 0.5]


def test_wrong_arguments_raise_as_tensorflow_does():
    g = tf.train.get_or_create_global_step()
    with pytest.raises(ValueError, match="boundaries should be 1 less than"):
        tf.train.piecewise_constant(g, [1, 2], [1.0, 2.0])
    with pytest.raises(ValueError, match="global_step is required for exponential_decay"):
        tf.train.exponential_decay(0.1, None, 1, 0.5)


def test_an_optimizer_takes_a_schedule_at_the_step_before_its_increment():
    g = tf.train.get_or_create_global_step()
    w = tf.get_variable("w", [], initializer=tf.ones_initializer())
    rate = tf.train.exponential_decay(0.1, g, 2, 0.5, staircase=True)
    train = tf.train.GradientDescentOptimizer(rate).minimize(w * 1.0, global_step=g)
    with tf.Session() as sess:
        for _ in range(5):
            sess.run(train)
        got = float(sess.run(w))
    want = np.float32(1.0)
    for step in range(5):  # d(w)/dw = 1: w -= rate(step)
        want = np.float32(want - np.float32(0.1 * 0.5 ** (step // 2)))
    assert got == pytest.approx(float(want), abs=1e-7)
