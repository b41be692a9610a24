"""TensorFlow 1.x's queue-based input pipeline (string_input_producer,
FixedLengthRecordReader, decode_raw, the image ops, shuffle_batch, batch,
prefetch_queue, start_queue_runners, Coordinator) over a small file of
CIFAR-10's binary format: one label byte and 3072 bytes of image
(channels, rows, columns) per record."""
import time

import numpy as np
import pytest

import ctower.compat.v1 as tf
from ctower import errors
from conftest import run_script

RECORDS = 20
LABELS = np.arange(RECORDS, dtype=np.uint8) % 5 * 2  # even labels only: 0, 2, 4, 6, 8


@pytest.fixture
def cifar_file(tmp_path):
    images = np.random.default_rng(7).integers(0, 256, (RECORDS, 3, 32, 32), dtype=np.uint8)
    path = tmp_path / "data_batch_1.bin"
    path.write_bytes(np.concatenate([LABELS[:, None], images.reshape(RECORDS, -1)], 1).tobytes())
    return str(path), images.transpose(0, 2, 3, 1)  # [record, row, column, channel]


def read_record(filename_queue):
    """The per-example part of the pipeline, as the CIFAR-10 tutorial builds it."""
    reader = tf.FixedLengthRecordReader(record_bytes=1 + 3072)
    key, value = reader.read(filename_queue)
    record = tf.decode_raw(value, tf.uint8)
    label = tf.cast(tf.strided_slice(record, [0], [1]), tf.int32)
    depth_major = tf.reshape(tf.strided_slice(record, [1], [3073]), [3, 32, 32])
    image = tf.cast(tf.transpose(depth_major, [1, 2, 0]), tf.float32)
    label.set_shape([1])
    return key, label, image


def distorted_batch(filename, batch_size=8, num_epochs=None, seed=None, num_threads=2,
                    capacity=30):
    queue = tf.train.string_input_producer([filename], num_epochs=num_epochs, seed=seed)
    _, label, image = read_record(queue)
    image = tf.random_crop(image, [24, 24, 3], seed=seed)
    image = tf.image.random_flip_left_right(image, seed=seed)
    image = tf.image.random_brightness(image, max_delta=63, seed=seed)
    image = tf.image.random_contrast(image, lower=0.2, upper=1.8, seed=seed)
    image = tf.image.per_image_standardization(image)
    images, labels = tf.train.shuffle_batch([image, label], batch_size=batch_size,
                                            capacity=capacity, min_after_dequeue=10,
                                            num_threads=num_threads, seed=seed)
    return images, tf.reshape(labels, [batch_size])


def eval_batch(filename, batch_size, num_epochs=None):
    queue = tf.train.string_input_producer([filename], num_epochs=num_epochs, shuffle=False)
    _, label, image = read_record(queue)
    image = tf.image.per_image_standardization(
        tf.image.resize_image_with_crop_or_pad(image, 24, 24))
    images, labels = tf.train.batch([image, label], batch_size=batch_size, num_threads=1,
                                    capacity=16)
    return images, tf.reshape(labels, [batch_size])


def test_distorted_batches_have_the_files_labels_and_standardized_images(cifar_file):
    images, labels = distorted_batch(cifar_file[0], seed=3)
    assert images.shape.as_list() == [8, 24, 24, 3] and images.dtype == tf.float32
    with tf.Session() as sess:
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess=sess, coord=coord)
        for _ in range(4):
            im, lb = sess.run([images, labels])
            assert im.shape == (8, 24, 24, 3) and im.dtype == np.float32
            assert lb.shape == (8,) and lb.dtype == np.int32
            assert set(lb.tolist()) <= set(LABELS.tolist())
            np.testing.assert_allclose(im.mean(axis=(1, 2, 3)), 0, atol=1e-5)
            np.testing.assert_allclose(im.std(axis=(1, 2, 3)), 1, atol=1e-4)
        coord.request_stop()
        coord.join(threads)


def test_the_evaluation_path_equals_numpy(cifar_file):
    filename, raw = cifar_file
    images, labels = eval_batch(filename, batch_size=6)
    crop = raw[:, 4:28, 4:28, :].astype(np.float64)
    mean = crop.mean(axis=(1, 2, 3), keepdims=True)
    std = np.maximum(crop.std(axis=(1, 2, 3), keepdims=True), 1 / np.sqrt(24 * 24 * 3))
    want = ((crop - mean) / std).astype(np.float32)
    with tf.Session() as sess:
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        for k in range(5):  # past the end of the file: the next epoch from its start
            im, lb = sess.run([images, labels])
            rows = [(6 * k + i) % RECORDS for i in range(6)]
            np.testing.assert_array_equal(im, want[rows])
            np.testing.assert_array_equal(lb, LABELS[rows])
        coord.request_stop()
        coord.join(threads)


def test_one_epoch_then_out_of_range(cifar_file):
    images, labels = eval_batch(cifar_file[0], batch_size=8, num_epochs=1)
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        got = [sess.run(labels) for _ in range(2)]  # 16 of the 20 records
        np.testing.assert_array_equal(np.concatenate(got), LABELS[:16])
        with pytest.raises(errors.OutOfRangeError, match="insufficient elements"):
            sess.run(labels)
        coord.request_stop()
        coord.join(threads)  # OutOfRangeError is a clean stop: not raised again


def test_a_missing_file_is_not_found_in_the_run_and_at_join(tmp_path):
    images, _ = eval_batch(str(tmp_path / "missing.bin"), batch_size=4)
    with tf.Session() as sess:
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        with pytest.raises(errors.NotFoundError, match="missing.bin; No such file"):
            sess.run(images)
        assert coord.should_stop()
        with pytest.raises(errors.NotFoundError):
            coord.join(threads)


def test_a_record_that_does_not_decode_is_an_invalid_argument(tmp_path):
    path = tmp_path / "short.bin"
    path.write_bytes(bytes(3072 * 3))  # records of 3072 bytes: one short of label + image
    queue = tf.train.string_input_producer([str(path)])
    reader = tf.FixedLengthRecordReader(record_bytes=3072)
    _, value = reader.read(queue)
    image = tf.reshape(tf.strided_slice(tf.decode_raw(value, tf.uint8), [1], [3073]), [3, 32, 32])
    batch = tf.train.batch([image], batch_size=2)
    with tf.Session() as sess:
        tf.train.start_queue_runners(sess)
        with pytest.raises(errors.InvalidArgumentError, match="3071 values"):
            sess.run(batch)


def test_the_threads_stop_at_request_stop_and_at_close(cifar_file):
    images, _ = distorted_batch(cifar_file[0], num_threads=3)
    sess = tf.Session()
    coord = tf.train.Coordinator()
    threads = tf.train.start_queue_runners(sess, coord)
    assert len(threads) == 3 and all(t.daemon for t in threads)
    sess.run(images)
    time.sleep(0.2)  # the queue full: the threads wait to put
    start = time.monotonic()
    coord.request_stop()
    coord.join(threads, stop_grace_period_secs=5)
    assert time.monotonic() - start < 2 and not any(t.is_alive() for t in threads)
    threads = tf.train.start_queue_runners(sess)  # no coordinator: closing the session stops them
    sess.close()
    for t in threads:
        t.join(2)
    assert not any(t.is_alive() for t in threads)


def test_the_interpreter_exits_with_the_threads_running(cifar_file):
    code, out, err = run_script(
        "import sys; sys.path.insert(0, %r)\n" % __file__.rsplit("/", 1)[0] +
        "import test_input_pipeline as t, ctower.compat.v1 as tf\n"
        "images, _ = t.distorted_batch(%r)\n" % cifar_file[0] +
        "sess = tf.Session(); tf.train.start_queue_runners(sess)\n"
        "print(sess.run(images).shape)\n", timeout=60)
    assert code == 0, err
    assert "(8, 24, 24, 3)" in out


def test_a_dequeue_without_runner_threads_is_refused(cifar_file):
    images, _ = distorted_batch(cifar_file[0])
    with tf.Session() as sess:
        with pytest.raises(errors.FailedPreconditionError, match="start_queue_runners"):
            sess.run(images)


def test_the_same_seeds_give_the_same_batches(cifar_file):
    def batches():
        tf.reset_default_graph()
        # a queue that is full whenever a batch leaves it: the same examples to choose from
        images, labels = distorted_batch(cifar_file[0], seed=11, num_threads=1, capacity=18)
        with tf.Session() as sess:
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess, coord)
            out = [sess.run([images, labels]) for _ in range(3)]
            coord.request_stop()
            coord.join(threads)
        return out
    first, second = batches(), batches()
    for (a, la), (b, lb) in zip(first, second):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(la, lb)
    assert not np.array_equal(first[0][0], first[1][0])


def test_the_random_image_ops_stay_in_their_ranges():
    base = np.arange(4 * 5 * 3, dtype=np.float32).reshape(4, 5, 3)
    crop = tf.random_crop(base, [2, 3, 3], seed=1)
    flip = tf.image.random_flip_left_right(base, seed=2)
    bright = tf.image.random_brightness(base, max_delta=10, seed=3)
    contrast = tf.image.random_contrast(base, lower=0.5, upper=1.5, seed=4)
    batch = tf.train.batch([crop, flip, bright, contrast], batch_size=32, capacity=64)
    with tf.Session() as sess:
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        crops, flips, brights, contrasts = sess.run(batch)
        coord.request_stop()
        coord.join(threads)
    windows = {(r, c): base[r:r + 2, c:c + 3] for r in range(3) for c in range(3)}
    seen = {next(k for k, w in windows.items() if np.array_equal(w, one)) for one in crops}
    assert len(seen) > 1
    flipped = [np.array_equal(f, base[:, ::-1]) for f in flips]
    assert all(f or np.array_equal(g, base) for f, g in zip(flipped, flips))
    assert 0 < sum(flipped) < 32
    deltas = (brights - base).reshape(32, -1)
    np.testing.assert_allclose(deltas, deltas[:, :1] * np.ones_like(deltas), atol=1e-4)
    assert np.all(np.abs(deltas) <= 10) and len(set(np.round(deltas[:, 0], 3))) > 1
    mean = base.mean(axis=(0, 1))
    factors = (contrasts - mean)[:, 0, 0, 0] / (base - mean)[0, 0, 0]
    assert np.all((factors >= 0.5 - 1e-5) & (factors < 1.5 + 1e-5))


def test_a_training_step_fed_by_the_queue(cifar_file):
    images, labels = distorted_batch(cifar_file[0], seed=5)
    logits = tf.layers.dense(tf.reshape(images, [8, -1]), 10)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                                        logits=logits))
    step = tf.train.get_or_create_global_step()
    train = tf.train.GradientDescentOptimizer(0.01).minimize(loss, global_step=step)
    losses = []
    with tf.train.MonitoredTrainingSession(
            hooks=[tf.train.StopAtStepHook(last_step=6)]) as sess:  # starts the queue runners
        while not sess.should_stop():
            losses.append(sess.run([train, loss])[1])
    assert len(losses) == 6 and np.all(np.isfinite(losses))
    assert len(set(losses)) == 6  # a new batch (and new weights) each step


def test_prefetch_queue_gives_each_dequeue_its_own_batch(cifar_file):
    images, labels = eval_batch(cifar_file[0], batch_size=4)
    prefetch = tf.contrib.slim.prefetch_queue.prefetch_queue([images, labels], capacity=2)
    towers = [prefetch.dequeue() for _ in range(2)]
    with tf.Session() as sess:
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        (im0, lb0), (im1, lb1) = sess.run(towers)
        lb2 = sess.run(towers[0][1])
        coord.request_stop()
        coord.join(threads)
    assert im0.shape == (4, 24, 24, 3)
    np.testing.assert_array_equal(np.concatenate([lb0, lb1, lb2]), LABELS[:12])


def test_strided_slice_of_graph_tensors_indexes_as_numpy():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t = tf.constant(x)
    cases = [(tf.strided_slice(t, [0, 1], [2, 3]), x[0:2, 1:3]),
             (tf.strided_slice(t, [0, 0, 0], [2, 3, 4], [1, 1, 2]), x[:, :, ::2]),
             (tf.strided_slice(t, [1], [2], shrink_axis_mask=1), x[1]),
             (tf.strided_slice(t, [-1, 0], [0, 2], shrink_axis_mask=1), x[-1, 0:2]),
             (tf.strided_slice(t, [0, 2], [0, 0], begin_mask=1, end_mask=3), x[:, 2:])]
    with tf.Session() as sess:
        for got, want in zip(sess.run([c[0] for c in cases]), [c[1] for c in cases]):
            np.testing.assert_array_equal(got, want)


def test_a_run_of_host_tensors_reads_one_record_for_all_of_them(cifar_file):
    filename, raw = cifar_file
    queue = tf.train.string_input_producer([filename], shuffle=False)
    key, label, image = read_record(queue)
    with tf.Session() as sess:
        assert sess.run(key) == filename.encode() + b":0"
        k, lb, im = sess.run([key, label, image])
        assert k == filename.encode() + b":1"
        assert lb.tolist() == [LABELS[1]]
        np.testing.assert_array_equal(im, raw[1])
