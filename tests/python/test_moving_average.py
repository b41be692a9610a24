"""tf.train.ExponentialMovingAverage against the NumPy recurrence
shadow -= (shadow - value) * (1 - decay): its shadows' names, their start,
num_updates' decay, and the Saver's dict of variables_to_restore."""
import os

import numpy as np

import ctower.compat.v1 as tf


def test_shadows_are_named_untrainable_and_start_at_the_variable():
    w = tf.get_variable("layer/w", [2], initializer=tf.constant_initializer([1.0, 2.0]))
    v = tf.get_variable("v", [1], initializer=tf.ones_initializer())
    ema = tf.train.ExponentialMovingAverage(0.9)
    ema.apply([w, v])
    shadow = ema.average(w)
    assert shadow.name == "layer/w/ExponentialMovingAverage:0"
    assert ema.average_name(w) == "layer/w/ExponentialMovingAverage"
    assert not shadow.trainable
    assert shadow not in tf.trainable_variables() and shadow in tf.global_variables()
    assert tf.moving_average_variables() == [w, v]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(shadow), [1.0, 2.0])
        np.testing.assert_array_equal(sess.run(ema.average(v)), [1.0])


def test_the_average_follows_the_numpy_recurrence_with_num_updates():
    step = tf.train.get_or_create_global_step()
    w = tf.get_variable("w", [3], initializer=tf.constant_initializer([1.0, -2.0, 4.0]))
    train = tf.train.GradientDescentOptimizer(0.1).minimize(tf.reduce_sum(w * w),
                                                            global_step=step)
    ema = tf.train.ExponentialMovingAverage(0.99, num_updates=step)
    with tf.control_dependencies([train]):
        update = ema.apply([w])
    loss = tf.identity(tf.reduce_sum(w), name="loss")
    loss_ema = tf.train.ExponentialMovingAverage(0.5, name="avg")
    loss_update = loss_ema.apply([loss])
    assert loss_ema.average(loss).name == "loss/avg:0"
    shadow = np.array([1.0, -2.0, 4.0], np.float32)
    w_np = shadow.copy()
    loss_shadow = np.float32(0.0)
    with tf.Session() as sess:
        for n in range(6):
            # the step after the run's increment, as apply() runs after train's
            decay = np.float32(min(0.99, (2.0 + n) / (11.0 + n)))
            w_np = np.float32(w_np - np.float32(0.1) * 2 * w_np)
            shadow = shadow - (shadow - w_np) * (np.float32(1) - decay)
            sess.run(update)
            np.testing.assert_allclose(sess.run(ema.average(w)), shadow, rtol=1e-6)
            value = sess.run(loss)
            loss_shadow = loss_shadow - (loss_shadow - value) * np.float32(0.5)
            sess.run(loss_update)
            np.testing.assert_allclose(sess.run(loss_ema.average(loss)), loss_shadow,
                                       rtol=1e-6)


def test_variables_to_restore_maps_shadow_names_to_variables(tmp_path):
    step = tf.train.get_or_create_global_step()
    w = tf.get_variable("w", [2], initializer=tf.ones_initializer())
    ema = tf.train.ExponentialMovingAverage(0.9, num_updates=step)
    update = ema.apply([w])
    restore = ema.variables_to_restore()
    assert restore == {"w/ExponentialMovingAverage": w, "global_step": step}
    assert ema.variables_to_restore([]) == {"w": w, "global_step": step,
                                            "w/ExponentialMovingAverage": ema.average(w)}
    # an evaluation restores the averages into the variables, as cifar10_eval does
    folder = str(tmp_path)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(w.assign([5.0, 7.0]))
        sess.run(update)  # shadow = 1 - (1 - w) * (1 - min(0.9, 1/10)) = 1 + 0.9 * (w - 1)
        path = tf.train.Saver().save(sess, os.path.join(folder, "model.ckpt"))
        tf.train.Saver(restore).restore(sess, path)
        np.testing.assert_allclose(sess.run(w), [4.6, 6.4], rtol=1e-6)
