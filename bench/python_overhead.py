#!/usr/bin/env python3
"""The cost of Python around a training step: fmnist_cnn (conv 5x5x32,
pool, conv 5x5x64, pool, dense 1024, dropout 0.4, dense 10; Adam), batch
128, built with ctower.compat.v1, one step through Session.run with NumPy
feeds against the same run of the same session made from C (a loop around
ct_session_run, no Python between the steps), side by side in one process:
each round times --steps pairs of steps, one of each way after the other
(so that a busy machine slows both alike), and compares the medians.

  PYTHONPATH=build/python /usr/bin/python3 bench/python_overhead.py [--rounds 7] [--steps 10]

Prints one line per round (the median of its pairs' ratios) and a JSON
line: the medians of all steps (ms) and Python's overhead in percent (of
those medians, and the median of the rounds'), and the time Session.run
spends around the engine's ct_session_run within the same call (its
median, in ms and in percent of the step from C), which the machine's load
between two steps does not blur.
"""
import argparse
import json
import statistics
import time

import numpy as np

import ctower.compat.v1 as tf


def fmnist_cnn(images):
    def conv(x, name, filters):
        with tf.variable_scope(name):
            w = tf.get_variable("weights", [5, 5, x.shape.as_list()[-1], filters],
                                initializer=tf.glorot_uniform_initializer())
            b = tf.get_variable("bias", [filters], initializer=tf.zeros_initializer())
            return tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME"), b))

    def dense(x, name, units):
        with tf.variable_scope(name):
            w = tf.get_variable("weights", [x.shape.as_list()[-1], units])
            b = tf.get_variable("bias", [units], initializer=tf.zeros_initializer())
            return tf.matmul(x, w) + b

    x = tf.nn.max_pool(conv(images, "conv1", 32), [1, 2, 2, 1], [1, 2, 2, 1], "SAME")
    x = tf.nn.max_pool(conv(x, "conv2", 64), [1, 2, 2, 1], [1, 2, 2, 1], "SAME")
    x = tf.nn.relu(dense(tf.reshape(x, [-1, 7 * 7 * 64]), "dense1", 1024))
    return dense(tf.nn.dropout(x, rate=0.4), "logits", 10)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--batch", type=int, default=128)
    args = parser.parse_args()
    images = tf.placeholder(tf.float32, [None, 28, 28, 1])
    labels = tf.placeholder(tf.int32, [None])
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels, logits=fmnist_cnn(images)))
    train = tf.train.AdamOptimizer(0.001).minimize(loss)
    rng = np.random.RandomState(0)
    feed = {images: rng.rand(args.batch, 28, 28, 1).astype(np.float32),
            labels: rng.randint(0, 10, args.batch).astype(np.int32)}
    python_steps, c_steps, ratios, around = [], [], [], []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(5):
            sess.run([loss, train], feed)
        for r in range(args.rounds):
            times, from_c, pair_ratios = [], [], []
            for _ in range(args.steps):  # pairs, so that the machine's load hits both alike
                start = time.perf_counter()
                sess.run([loss, train], feed)
                times.append(time.perf_counter() - start)
                around.append(times[-1] - sess._c.last_run_seconds())
                from_c += sess._run_repeated([loss, train], feed, 1)
                pair_ratios.append(times[-1] / from_c[-1])
            python_steps += times
            c_steps += from_c
            ratio = statistics.median(pair_ratios)
            ratios.append(ratio)
            print("round %d: Session.run %.2f ms, from C %.2f ms, +%.2f%%"
                  % (r + 1, 1e3 * statistics.median(times), 1e3 * statistics.median(from_c),
                     100 * (ratio - 1)), flush=True)
    py, c = statistics.median(python_steps), statistics.median(c_steps)
    print(json.dumps({"model": "fmnist_cnn", "batch": args.batch, "steps": len(c_steps),
                      "session_run_ms": round(1e3 * py, 3), "from_c_ms": round(1e3 * c, 3),
                      "overhead_percent": round(100 * (py / c - 1), 2),
                      "median_round_overhead_percent":
                          round(100 * (statistics.median(ratios) - 1), 2),
                      "python_around_engine_ms": round(1e3 * statistics.median(around), 3),
                      "python_around_engine_percent":
                          round(100 * statistics.median(around) / c, 3)}))


if __name__ == "__main__":
    main()
