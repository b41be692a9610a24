"""A TensorFlow name that ctower.compat.v1 lacks raises NotImplementedError
naming it in full (also an AttributeError, so hasattr() is False); names
of `_` raise a plain AttributeError; every name it has still resolves."""
import pickle
import traceback

import pytest

import ctower.compat.v1 as tf


@pytest.mark.parametrize("path", [
    "contrib.slim.arg_scope",
    "contrib.slim.queues.QueueRunners",
    "train.Supervisor",
    "keras.layers.Dense",
    "nn.rnn_cell.LSTMCell",
    "errors.NoSuchError",
    "io.read_file",
    "app.no_such_thing",
    "no_such_function",
])
def test_a_missing_name_is_named_in_full(path):
    with pytest.raises(NotImplementedError) as caught:
        obj = tf
        for part in path.split("."):
            obj = getattr(obj, part)
    assert str(caught.value).startswith("ctower does not implement tf.%s (yet); " % path)
    assert isinstance(caught.value, AttributeError)


def test_a_name_with_an_equivalent_says_what_to_use():
    with pytest.raises(NotImplementedError, match=r"tf\.contrib\.layers\.flatten \(yet\); "
                       r"use tf\.layers\.flatten"):
        tf.contrib.layers.flatten
    with pytest.raises(NotImplementedError, match=r"use tf\.Session with tf\.train\.Saver"):
        tf.train.Supervisor


def test_hasattr_and_getattr_with_a_default_keep_working():
    assert not hasattr(tf, "no_such_function")
    assert not hasattr(tf.train, "Supervisor")
    assert not hasattr(tf.contrib.slim, "arg_scope")
    assert getattr(tf.nn, "no_such_op", "default") == "default"
    assert hasattr(tf.train, "AdamOptimizer") and hasattr(tf, "Session")


def test_no_near_name_is_suggested():
    try:
        tf.nn.relu7
    except AttributeError as error:
        text = "".join(traceback.format_exception(error))
    assert "Did you mean" not in text
    assert "tf.nn.relu7" in text


@pytest.mark.parametrize("owner, name", [
    (tf, "__wrapped__"), (tf, "_private"), (tf.nn, "__wrapped__"), (tf.contrib, "_fields"),
    (tf.gfile, "__array_interface__")])
def test_private_names_are_plain_attribute_errors(owner, name):
    with pytest.raises(AttributeError) as caught:
        getattr(owner, name)
    assert not isinstance(caught.value, NotImplementedError)


def test_probes_of_pickle_and_pytest_still_work():
    assert pickle.loads(pickle.dumps(tf.nn.relu)) is tf.nn.relu
    assert "relu" in dir(tf.nn)


@pytest.mark.parametrize("path", [
    "Session", "placeholder", "nn.relu", "nn.softmax_cross_entropy_with_logits_v2",
    "layers.batch_normalization", "train.AdamOptimizer", "train.Saver",
    "train.MonitoredTrainingSession", "train.exponential_decay", "initializers.zeros",
    "math.add", "dtypes.float32", "errors.NotFoundError", "errors.OpError", "app.run",
    "app.flags.DEFINE_string", "flags.FLAGS", "gfile.GFile", "gfile.Exists", "io.gfile.exists",
    "io.gfile.GFile"])
def test_names_ctower_has_resolve(path):
    obj = tf
    for part in path.split("."):
        obj = getattr(obj, part)
    assert obj is not None


def test_errors_keep_their_classes():
    from ctower import errors
    assert tf.errors.NotFoundError is errors.NotFoundError
    assert tf.errors.NOT_FOUND == 5
