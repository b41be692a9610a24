"""tf.summary: summary ops fetched by Session.run as serialized Summaries,
FileWriter's event files read back by TensorBoard's own reader (in this
interpreter, or in build/venv, which scripts/test.sh makes with
TensorBoard), and the files and names around them."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import ctower.compat.v1 as tf
from ctower import errors

# Prints, as JSON, what TensorBoard's EventAccumulator reads from LOG_DIR:
# {"scalars": {tag: [[step, value]]}, "histograms": {tag: [[step, num, min,
# max, sum, sum of the bucket counts]]}, "images": {tag: [[step, width,
# height, PNG signature ok]]}}.
READER = r"""
import json, sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
acc = EventAccumulator(sys.argv[1], size_guidance={"scalars": 0, "histograms": 0, "images": 0})
acc.Reload()
tags = acc.Tags()
print(json.dumps({
    "scalars": {t: [[e.step, e.value] for e in acc.Scalars(t)] for t in tags["scalars"]},
    "histograms": {t: [[e.step, e.histogram_value.num, e.histogram_value.min,
                        e.histogram_value.max, e.histogram_value.sum,
                        sum(e.histogram_value.bucket)] for e in acc.Histograms(t)]
                   for t in tags["histograms"]},
    "images": {t: [[e.step, e.width, e.height,
                    e.encoded_image_string[:8] == b"\x89PNG\r\n\x1a\n"] for e in acc.Images(t)]
               for t in tags["images"]}}))
"""


def tensorboard_python():
    """An interpreter that imports TensorBoard: this one, else build/venv's."""
    candidates = [sys.executable,
                  os.path.join(os.environ.get("CT_BINARY_DIR", "build"), "venv", "bin", "python")]
    for python in candidates:
        if os.path.exists(python) and subprocess.run(
                [python, "-c", "import tensorboard"], capture_output=True).returncode == 0:
            return python
    pytest.skip("no TensorBoard to read the event files: neither %s nor %s imports tensorboard "
                "(scripts/test.sh makes build/venv with it)" % tuple(candidates))


def read_back(log_dir):
    python = tensorboard_python()
    done = subprocess.run([python, "-c", READER, str(log_dir)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_training_loop_writes_scalars_and_histograms_tensorboard_reads(tmp_path):
    rng = np.random.RandomState(1)
    xs = rng.rand(64, 3).astype(np.float32)
    ys = xs @ np.array([[1.0], [-2.0], [0.5]], np.float32)
    x, y = tf.placeholder(tf.float32, [None, 3]), tf.placeholder(tf.float32, [None, 1])
    w = tf.get_variable("w", [3, 1], initializer=tf.zeros_initializer())
    loss = tf.reduce_mean((tf.matmul(x, w) - y) * (tf.matmul(x, w) - y))
    with tf.name_scope("train"):
        tf.summary.scalar("loss", loss)
    tf.summary.histogram("weights", w)
    tf.summary.scalar("not_merged", loss, collections=[])
    train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
    merged = tf.summary.merge_all()
    writer = tf.summary.FileWriter(str(tmp_path / "logs"), tf.get_default_graph())
    losses, weights = [], []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for i in range(12):
            summary, value, w_value, _ = sess.run([merged, loss, w, train], {x: xs, y: ys})
            assert isinstance(summary, bytes)
            writer.add_summary(summary, 10 * i)
            losses.append(float(value))
            weights.append(np.array(w_value))
    writer.close()
    assert writer.get_logdir() == str(tmp_path / "logs")
    assert losses[-1] < losses[0]

    got = read_back(tmp_path / "logs")
    assert sorted(got["scalars"]) == ["train/loss"]
    assert [s for s, _ in got["scalars"]["train/loss"]] == [10 * i for i in range(12)]
    np.testing.assert_array_equal([v for _, v in got["scalars"]["train/loss"]],
                                  np.float32(losses))
    histograms = got["histograms"]["weights"]
    assert [h[0] for h in histograms] == [10 * i for i in range(12)]
    for (_, num, low, high, total, counted), w_value in zip(histograms, weights):
        assert num == counted == 3
        assert (low, high) == (w_value.min(), w_value.max())
        assert total == pytest.approx(float(w_value.sum().astype(np.float64)), rel=1e-6)


def test_images_and_hand_made_summaries_tensorboard_reads(tmp_path):
    pixels = np.random.RandomState(2).rand(5, 4, 6, 3).astype(np.float32) - 0.5
    images = tf.placeholder(tf.float32, [None, 4, 6, 3])
    tf.summary.image("input", images)  # max_outputs=3: input/image/0..2
    gray = tf.summary.image("gray", tf.constant(np.zeros((2, 3, 2, 1), np.uint8)), max_outputs=1)
    with tf.Session() as sess, tf.summary.FileWriter(str(tmp_path)) as writer:
        writer.add_summary(sess.run(tf.summary.merge_all(), {images: pixels}), 7)
        assert b"gray/image" in gray.eval(session=sess)
        writer.add_summary(tf.Summary(value=[tf.Summary.Value(tag="acc", simple_value=0.75)]),
                           global_step=np.int64(3))
    got = read_back(tmp_path)
    assert got["scalars"] == {"acc": [[3, 0.75]]}
    assert got["images"] == {"input/image/%d" % i: [[7, 6, 4, True]] for i in range(3)} | {
        "gray/image": [[7, 2, 3, True]]}


# Summary{value {tag: "w" histo {...}}} of [1, -2, 3, 0], as TensorFlow 2.x's
# tf.compat.v1.summary.histogram packs it: min -2, max 3, num 4, sum 2,
# sum_squares 14, and the counts 0 1 0 1 0 1 0 1 0 up to the limits -2.16,
# -1.97, 0, 1e-12, 0.917, 1.009, 2.88, 3.17, DBL_MAX (a run of empty default
# buckets written as one)
HISTOGRAM = (
    "0ac7010a01772ac1010900000000000000c0110000000000000840190000000000001040210000000000"
    "000040290000000000002c403248e011f10c744d01c0dc94cd2e8d75ffbf000000000000000011ea2d8199"
    "97713d08996919155aed3f2b14facdbe24f03f68bc10359a0707400d9cc5a029550940ffffffffffffef7f"
    "3a480000000000000000000000000000f03f0000000000000000000000000000f03f00000000000000000000"
    "00000000f03f0000000000000000000000000000f03f0000000000000000")


def test_summaries_are_tensorflows_summary_protos():
    value = tf.placeholder(tf.float32, [])
    summary = tf.summary.scalar("loss", value)
    histogram = tf.summary.histogram("w", tf.constant([1.0, -2.0, 3.0, 0.0]))
    with tf.Session() as sess:
        assert sess.run(histogram).hex() == HISTOGRAM
        # Summary{value {tag: "loss" simple_value: 2.5}}, as TensorFlow packs it
        assert sess.run(summary, {value: 2.5}).hex() == "0a0b0a046c6f73731500002040"
        assert sess.run(tf.summary.merge([summary, summary]), {value: 2.5}).hex() == \
            "0a0b0a046c6f73731500002040" * 2


def test_names_and_tags_follow_tensorflows_summary_scope():
    v = tf.constant(1.0)
    first = tf.summary.scalar("loss", v)
    again = tf.summary.scalar("loss", v)
    with tf.name_scope("eval"):
        scoped = tf.summary.scalar("acc uracy", v, family="metrics")
    assert (first.name, again.name, scoped.name) == ("loss:0", "loss_1:0",
                                                     "eval/metrics/acc_uracy:0")
    assert first.dtype == tf.string and first.op.type == "ScalarSummary"
    assert tf.get_collection(tf.GraphKeys.SUMMARIES) == [first, again, scoped]
    merged = tf.summary.merge_all()
    assert merged.name == "Merge/MergeSummary:0"
    assert tf.summary.merge_all(key="nothing") is None
    with tf.Session() as sess:
        tags = sess.run(merged)
    assert b"metrics/eval/metrics/acc_uracy" in tags and b"loss_1" in tags


def test_a_nan_in_a_histogram_is_invalid_argument():
    h = tf.summary.histogram("h", tf.constant([1.0, np.nan]))
    with tf.Session() as sess, pytest.raises(errors.InvalidArgumentError,
                                             match="Nan in summary histogram for: h"):
        sess.run(h)


def test_summaries_refuse_tensors_of_the_wrong_rank():
    with pytest.raises(ValueError, match="rank 0"):
        tf.summary.scalar("s", tf.constant([1.0, 2.0]))
    with pytest.raises(ValueError, match="rank 4"):
        tf.summary.image("i", tf.constant([[1.0]]))


def test_event_files_are_new_files_and_bad_summaries_are_refused(tmp_path):
    one, two = tf.summary.FileWriter(str(tmp_path)), tf.summary.FileWriter(str(tmp_path))
    with pytest.raises(errors.InvalidArgumentError, match="not a serialized Summary"):
        one.add_summary(b"\xff\xff\xff", 1)
    one.close()
    two.close()
    one.add_summary(b"", 2)  # after close(), written nowhere, as TensorFlow's
    names = sorted(os.listdir(tmp_path))
    assert len(names) == 2 and all(n.startswith("events.out.tfevents.") for n in names)
    (tmp_path / "a_file").write_text("x")
    with pytest.raises(errors.InvalidArgumentError, match="a_file.*not a folder"):
        tf.summary.FileWriter(str(tmp_path / "a_file"))
    assert tf.summary.FileWriterCache.get(str(tmp_path / "c")) is \
        tf.summary.FileWriterCache.get(str(tmp_path / "c"))
    tf.summary.FileWriterCache.clear()


def test_summary_names_ctower_lacks_are_named():
    with pytest.raises(NotImplementedError, match=r"tf\.summary\.audio.*tf\.summary\.image"):
        tf.summary.audio
    with pytest.raises(NotImplementedError, match=r"tf\.summary\.FileWriter.*filename_suffix"):
        tf.summary.FileWriter("unused", filename_suffix=".x")
