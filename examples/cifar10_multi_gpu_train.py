#!/usr/bin/env python3
"""TensorFlow's CIFAR-10 multi-GPU tutorial (cifar10_multi_gpu_train.py with
the model of cifar10.py), as the tutorial structures it, on ctower:

- a tower per device, '/gpu:%d' (or '/cpu:%d' on a machine without GPUs),
  each under name_scope('tower_%d') computing its loss (tower_loss) and its
  gradients;
- every variable created on the CPU with tf.get_variable and reused by the
  towers after the first (variable_scope reuse);
- the towers' gradients averaged on the CPU (average_gradients), then
  applied once (apply_gradients).

It trains cifar10_cnn as `ctower train examples/cifar10_cnn.yaml
devices.variable_update=parameter_server` does, batch for batch: the
batches come from ctower.data.Batcher (the trainer's reader, order and
augmentation for the same seed), the variables carry the zoo's names and
initializers under the same seed, and the checkpoint is the trainer's
format. On one tower the weights after N steps are the command's, bit for
bit; on several they agree to rounding (the tutorial averages the towers'
mean gradients, each with its weight decay; the trainer sums the
examples' gradients and adds the decay once).

  PYTHONPATH=build/python /usr/bin/python3 examples/cifar10_multi_gpu_train.py \\
      --data_dir data/cifar-10-batches-bin --num_gpus 2 --max_steps 1000
"""
import argparse
import time

import numpy as np

import ctower
import ctower.compat.v1 as tf
from ctower.data import Batcher

TOWER_NAME = "tower"
NUM_CLASSES = 10
IMAGE_SIZE = 24
# The tutorial's learning rate; it decays by 0.1 every 350 epochs, later
# than the runs here go.
INITIAL_LEARNING_RATE = 0.1
# tf.nn.lrn's alpha, the tutorial's 0.001 / 9.0 computed in float32 as
# ctower's zoo computes it (in double it rounds to a float32 one ulp away).
LRN_ALPHA = np.float32(0.001) / np.float32(9.0)
# The tutorial's input: random 24x24 crops, flips, brightness and contrast,
# each image standardized (examples/cifar10_cnn.yaml's dataset.augment).
AUGMENT = {"crop": [24, 24], "flip": True, "brightness": 0.25, "contrast": [0.2, 1.8],
           "standardize": True}


def _variable_on_cpu(name, shape, initializer):
    with tf.device("/cpu:0"):
        var = tf.get_variable(name, shape, initializer=initializer, dtype=tf.float32)
    return var


def _variable_with_weight_decay(name, shape, stddev, wd):
    var = _variable_on_cpu(name, shape, tf.truncated_normal_initializer(stddev=stddev,
                                                                        dtype=tf.float32))
    if wd is not None:
        weight_decay = tf.multiply(tf.nn.l2_loss(var), wd, name="weight_loss")
        tf.add_to_collection("losses", weight_decay)
    return var


def inference(images):
    with tf.variable_scope("conv1") as scope:
        kernel = _variable_with_weight_decay("weights", shape=[5, 5, 3, 64], stddev=5e-2, wd=None)
        conv = tf.nn.conv2d(images, kernel, [1, 1, 1, 1], padding="SAME")
        biases = _variable_on_cpu("biases", [64], tf.constant_initializer(0.0))
        pre_activation = tf.nn.bias_add(conv, biases)
        conv1 = tf.nn.relu(pre_activation, name=scope.name)
    pool1 = tf.nn.max_pool(conv1, ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding="SAME",
                           name="pool1")
    norm1 = tf.nn.lrn(pool1, 4, bias=1.0, alpha=LRN_ALPHA, beta=0.75, name="norm1")
    with tf.variable_scope("conv2") as scope:
        kernel = _variable_with_weight_decay("weights", shape=[5, 5, 64, 64], stddev=5e-2,
                                             wd=None)
        conv = tf.nn.conv2d(norm1, kernel, [1, 1, 1, 1], padding="SAME")
        biases = _variable_on_cpu("biases", [64], tf.constant_initializer(0.1))
        pre_activation = tf.nn.bias_add(conv, biases)
        conv2 = tf.nn.relu(pre_activation, name=scope.name)
    norm2 = tf.nn.lrn(conv2, 4, bias=1.0, alpha=LRN_ALPHA, beta=0.75, name="norm2")
    pool2 = tf.nn.max_pool(norm2, ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding="SAME",
                           name="pool2")
    with tf.variable_scope("local3") as scope:
        reshape = tf.reshape(pool2, [images.get_shape().as_list()[0], -1])
        dim = reshape.get_shape()[1].value
        weights = _variable_with_weight_decay("weights", shape=[dim, 384], stddev=0.04, wd=0.004)
        biases = _variable_on_cpu("biases", [384], tf.constant_initializer(0.1))
        local3 = tf.nn.relu(tf.matmul(reshape, weights) + biases, name=scope.name)
    with tf.variable_scope("local4") as scope:
        weights = _variable_with_weight_decay("weights", shape=[384, 192], stddev=0.04, wd=0.004)
        biases = _variable_on_cpu("biases", [192], tf.constant_initializer(0.1))
        local4 = tf.nn.relu(tf.matmul(local3, weights) + biases, name=scope.name)
    # the tutorial's softmax_linear: named "logits" as in ctower's zoo, so
    # that checkpoints are interchangeable
    with tf.variable_scope("logits") as scope:
        weights = _variable_with_weight_decay("weights", [192, NUM_CLASSES], stddev=1 / 192.0,
                                              wd=None)
        biases = _variable_on_cpu("biases", [NUM_CLASSES], tf.constant_initializer(0.0))
        softmax_linear = tf.add(tf.matmul(local4, weights), biases, name=scope.name)
    return softmax_linear


def loss(logits, labels):
    labels = tf.cast(labels, tf.int64)
    cross_entropy = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels, logits=logits, name="cross_entropy_per_example")
    cross_entropy_mean = tf.reduce_mean(cross_entropy, name="cross_entropy")
    tf.add_to_collection("losses", cross_entropy_mean)
    return tf.add_n(tf.get_collection("losses"), name="total_loss")


def tower_loss(scope, images, labels):
    """The total loss of one tower: its cross-entropy and its weight decay."""
    _ = loss(inference(images), labels)
    losses = tf.get_collection("losses", scope)
    total_loss = tf.add_n(losses, name="total_loss")
    return total_loss


def average_gradients(tower_grads):
    """The mean of each variable's gradient over the towers."""
    average_grads = []
    for grad_and_vars in zip(*tower_grads):
        grads = []
        for g, _ in grad_and_vars:
            expanded_g = tf.expand_dims(g, 0)
            grads.append(expanded_g)
        grad = tf.concat(axis=0, values=grads)
        grad = tf.reduce_mean(grad, 0)
        v = grad_and_vars[0][1]
        average_grads.append((grad, v))
    return average_grads


def train(args):
    gpus = sum(d["kind"] == "GPU" for d in ctower.devices())
    num_towers = args.num_gpus
    device = "/gpu:%d" if gpus >= num_towers else "/cpu:%d"
    per_tower = args.batch_size // num_towers
    with tf.Graph().as_default(), tf.device("/cpu:0"):
        tf.set_random_seed(args.seed)
        ctower.trainer_streams(tf.get_default_graph())  # the command's initial weights
        global_step = tf.get_variable("global_step", [], initializer=tf.constant_initializer(0),
                                      trainable=False)
        opt = tf.train.GradientDescentOptimizer(INITIAL_LEARNING_RATE)
        tower_inputs, tower_grads = [], []
        with tf.variable_scope(tf.get_variable_scope()):
            for i in range(num_towers):
                with tf.device(device % i):
                    with tf.name_scope("%s_%d" % (TOWER_NAME, i)) as scope:
                        image_batch = tf.placeholder(tf.float32,
                                                     [per_tower, IMAGE_SIZE, IMAGE_SIZE, 3])
                        label_batch = tf.placeholder(tf.int32, [per_tower])
                        tower_inputs.append((image_batch, label_batch))
                        tower_total = tower_loss(scope, image_batch, label_batch)
                        tf.get_variable_scope().reuse_variables()
                        grads = opt.compute_gradients(tower_total)
                        tower_grads.append(grads)
        grads = average_gradients(tower_grads)
        apply_gradient_op = opt.apply_gradients(grads, global_step=global_step)
        train_op = tf.group(apply_gradient_op)
        saver = tf.train.Saver(tf.global_variables())
        init = tf.global_variables_initializer()
        config = tf.ConfigProto(allow_soft_placement=True,
                                log_device_placement=args.log_device_placement,
                                device_count={"CPU": num_towers if device == "/cpu:%d" else 1})
        with tf.Session(config=config) as sess:
            sess.run(init)
            batches = Batcher("cifar10", args.data_dir, train=True, batch_size=args.batch_size,
                              seed=args.seed, augment=AUGMENT)
            step, epoch = 0, 0
            while step < args.max_steps:
                for images, labels in batches.epoch(epoch):
                    if step == args.max_steps or len(labels) < args.batch_size:
                        break  # the tutorial's towers take whole batches
                    feed = {}
                    for i, (image_batch, label_batch) in enumerate(tower_inputs):
                        rows = slice(i * per_tower, (i + 1) * per_tower)
                        feed[image_batch], feed[label_batch] = images[rows], labels[rows]
                    start_time = time.time()
                    _, loss_value = sess.run([train_op, tower_total], feed)
                    duration = time.time() - start_time
                    assert not np.isnan(loss_value), "Model diverged with loss = NaN"
                    step += 1
                    if step % 10 == 0 or step == args.max_steps:
                        print("step %d, loss = %.2f (%.1f examples/sec; %.3f sec/batch)"
                              % (step, loss_value, args.batch_size / duration, duration))
                epoch += 1
            if args.checkpoint:
                saver.save(sess, args.checkpoint)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data_dir", default="data/cifar-10-batches-bin")
    parser.add_argument("--num_gpus", type=int, default=1, help="towers")
    parser.add_argument("--batch_size", type=int, default=128, help="the global batch")
    parser.add_argument("--max_steps", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--checkpoint", default="runs/cifar10_multi_gpu/model.safetensors")
    parser.add_argument("--log_device_placement", action="store_true")
    train(parser.parse_args())


if __name__ == "__main__":
    main()
