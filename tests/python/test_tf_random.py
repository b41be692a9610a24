"""Seeded initializers draw TensorFlow's values bit for bit: its Philox
streams, its (graph seed, op seed) rules and its float math. The literals
are the float32 bits TensorFlow 2's tf.compat.v1 prints for the same
programs (a variable "v" of that shape and initializer, run through
global_variables_initializer)."""
import numpy as np
import pytest

import ctower
import ctower.compat.v1 as tf


def bits(value, indices):
    flat = np.asarray(value, np.float32).ravel()
    return [int(flat[i].view(np.uint32)) for i in indices]


def initial(make, shape, indices, graph_seed=None):
    with tf.Graph().as_default():
        if graph_seed is not None:
            tf.set_random_seed(graph_seed)
        v = tf.get_variable("v", shape, initializer=make())
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            return bits(sess.run(v), indices)


# (initializer, shape, element indices, graph seed, TensorFlow's bits there)
CASES = [
    (lambda: tf.truncated_normal_initializer(stddev=0.1, seed=1), [3, 3], range(9), None,
     [3181783153, 1041761758, 1003885120, 1008901068, 1031996045, 1042609158, 1015412712,
      3189454160, 1040917385]),
    (lambda: tf.random_normal_initializer(mean=0.5, stddev=2.0, seed=7), [5, 7], range(4), None,
     [1053814136, 3220452082, 1077238491, 1077270244]),
    (lambda: tf.random_uniform_initializer(-1, 3, seed=3), [4, 4, 3], range(4), None,
     [1057765176, 1054954864, 1077548232, 3207030848]),
    (lambda: tf.glorot_uniform_initializer(seed=2), [5, 5, 3, 8], range(4), None,
     [1029196368, 1031901376, 3155302208, 3148777952]),
    # values 4 and 5: the second group of four, from counter 256
    (lambda: tf.glorot_normal_initializer(seed=4), [30, 20], range(6), None,
     [1032452245, 3152677600, 3159084833, 1007431630, 3196319681, 3144457471]),
    (lambda: tf.variance_scaling_initializer(2.0, "fan_out", "untruncated_normal", seed=9),
     [7, 9], range(4), None, [1057711304, 3194817237, 1045860112, 3214090569]),
    (lambda: tf.variance_scaling_initializer(seed=11), [64, 10], range(4), None,
     [1045187577, 3195395680, 3170240308, 1042767341]),
    # graph seed 0 and op seed 0: TensorFlow's (0, 2**31 - 1)
    (lambda: tf.random_normal_initializer(seed=0), [9], range(3), 0,
     [1040042296, 1077092125, 3219515646]),
    # the last values of a tensor TensorFlow fills in shards
    (lambda: tf.truncated_normal_initializer(mean=1.0, stddev=0.02, seed=12), [300, 500],
     [149997, 149998, 149999], None, [1065499639, 1065375650, 1065140777]),
]


@pytest.mark.parametrize("make,shape,indices,graph_seed,want", CASES)
def test_initializers_draw_tensorflows_values(make, shape, indices, graph_seed, want):
    assert initial(make, shape, indices, graph_seed) == want


def test_graph_seed_alone_numbers_the_ops():
    # op seeds 0, 1, 2 for the three random initializers; a constant takes none
    with tf.Graph().as_default():
        tf.set_random_seed(1234)
        a = tf.get_variable("a", [3, 4])
        tf.get_variable("b", [2], initializer=tf.constant_initializer(0.1))
        c = tf.get_variable("c", [3, 3], initializer=tf.truncated_normal_initializer(stddev=0.1))
        d = tf.get_variable("d", [8, 8], initializer=tf.random_uniform_initializer())
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got = [bits(x, range(3)) for x in sess.run([a, c, d])]
    assert got == [[3207539195, 1063366054, 3211212705], [3171193088, 1044265860, 1025640063],
                   [1057428142, 1062503406, 1028636608]]


def test_seed_rules():
    # TensorFlow's tf.get_seed for the same calls
    with tf.Graph().as_default():
        assert tf.get_seed(None) == (None, None)
        assert tf.get_seed(5) == (87654321, 5)
        tf.random.set_random_seed(2**40 + 5)
        got = [tf.get_seed(None), tf.get_seed(None), tf.get_seed(3), tf.get_seed(None)]
        assert got == [(517, 0), (517, 1), (517, 3), (517, 2)]
    with tf.Graph().as_default():
        tf.set_random_seed(0)
        assert tf.get_seed(0) == (0, 2**31 - 1)


def test_trainer_streams_keep_the_commands_stream():
    def draw():
        with tf.Graph().as_default() as graph:
            ctower.trainer_streams(graph)
            v = tf.get_variable("v", [3, 3],
                                initializer=tf.truncated_normal_initializer(stddev=0.1, seed=1))
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                return bits(sess.run(v), range(9))
    first = draw()
    assert first == draw()
    assert first != CASES[0][4]
