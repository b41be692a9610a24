"""tf.train.MonitoredTrainingSession and its hooks: the order hooks are
called in, what before_run's fetches bring back, stopping at a step, the
NaN hook, checkpoints written, resumed by a second session, and read back
by get_checkpoint_state; the loop of TensorFlow's cifar10_train.py."""
import os

import numpy as np
import pytest

import ctower.compat.v1 as tf


def _model():
    step = tf.train.get_or_create_global_step()
    w = tf.get_variable("w", [2], initializer=tf.constant_initializer([1.0, 2.0]))
    loss = tf.reduce_sum(w * w)
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
    return step, w, loss, train


class _Recorder(tf.train.SessionRunHook):
    """Records each call; asks for the loss in before_run, as cifar10's _LoggerHook."""

    def __init__(self, calls, loss, tag=""):
        self.calls, self.loss, self.tag, self.losses = calls, loss, tag, []

    def begin(self):
        self.calls.append(self.tag + "begin")

    def after_create_session(self, session, coord):
        assert not coord.should_stop()
        self.calls.append(self.tag + "after_create_session")

    def before_run(self, run_context):
        self.calls.append(self.tag + "before_run")
        return tf.train.SessionRunArgs(self.loss)

    def after_run(self, run_context, run_values):
        self.calls.append(self.tag + "after_run")
        self.losses.append(float(run_values.results))

    def end(self, session):
        self.calls.append(self.tag + "end")


def test_hooks_are_called_in_tensorflows_order_and_get_their_fetches():
    step, w, loss, train = _model()
    calls = []
    first, second = _Recorder(calls, loss, "a."), _Recorder(calls, loss, "b.")
    with tf.train.MonitoredTrainingSession(hooks=[first, second]) as sess:
        assert calls == ["a.begin", "b.begin", "a.after_create_session", "b.after_create_session"]
        del calls[:]
        assert sess.run(loss) == pytest.approx(5.0)
        assert sess.run([train, loss])[1] == pytest.approx(5.0)
        assert calls == ["a.before_run", "b.before_run", "a.after_run", "b.after_run"] * 2
        del calls[:]
    assert calls == ["a.end", "b.end"]
    # the loss before each update: w scales by 0.8 per step
    assert first.losses == pytest.approx([5.0, 5.0])
    assert second.losses == first.losses


def test_stop_at_step_hook_stops_at_the_last_step_and_counts_num_steps_from_the_start():
    step, w, loss, train = _model()
    runs, final = 0, tf.train.FinalOpsHook(step)
    with tf.train.MonitoredTrainingSession(
            hooks=[tf.train.StopAtStepHook(last_step=4), final]) as sess:
        while not sess.should_stop():
            sess.run(train)
            runs += 1
        with pytest.raises(RuntimeError, match="Run called even after should_stop"):
            sess.run(train)
    assert runs == 4 and int(final.final_ops_values) == 4
    with pytest.raises(ValueError, match="One of num_steps or last_step"):
        tf.train.StopAtStepHook()


def test_nan_tensor_hook_raises_or_stops():
    step, w, loss, train = _model()
    nan_loss = tf.log(loss - 100.0)
    with pytest.raises(tf.train.NanLossDuringTrainingError, match="NaN loss during training"):
        with tf.train.MonitoredTrainingSession(hooks=[tf.train.NanTensorHook(nan_loss)]) as sess:
            sess.run(train)
    hook = tf.train.NanTensorHook(nan_loss, fail_on_nan_loss=False)
    with tf.train.MonitoredTrainingSession(hooks=[hook]) as sess:
        sess.run(train)
        assert sess.should_stop()


def test_checkpoints_are_written_resumed_and_listed(tmp_path):
    folder = str(tmp_path)
    step, w, loss, train = _model()
    final = tf.train.FinalOpsHook(w)
    with tf.train.MonitoredTrainingSession(checkpoint_dir=folder, save_checkpoint_steps=2,
                                           hooks=[tf.train.StopAtStepHook(last_step=3), final]) \
            as sess:
        while not sess.should_stop():
            sess.run(train)
    trained = final.final_ops_values
    np.testing.assert_allclose(trained, np.array([1.0, 2.0]) * 0.8 ** 3, rtol=1e-6)
    state = tf.train.get_checkpoint_state(folder)
    assert state.model_checkpoint_path == os.path.join(folder, "model.ckpt-3")
    assert state.all_model_checkpoint_paths == [os.path.join(folder, "model.ckpt-%d" % k)
                                                for k in (0, 2, 3)]
    assert tf.train.get_checkpoint_state(str(tmp_path / "nothing")) is None

    tf.reset_default_graph()  # a new process: the same model, resumed from step 3
    step, w, loss, train = _model()
    with tf.train.MonitoredTrainingSession(checkpoint_dir=folder,
                                           hooks=[tf.train.StopAtStepHook(num_steps=2)]) as sess:
        assert int(sess.run(step)) == 3
        np.testing.assert_array_equal(sess.run(w), trained)
        while not sess.should_stop():
            sess.run(train)
    state = tf.train.get_checkpoint_state(folder)
    assert state.model_checkpoint_path == os.path.join(folder, "model.ckpt-5")
    assert state.all_model_checkpoint_paths[-2:] == [os.path.join(folder, "model.ckpt-3"),
                                                     state.model_checkpoint_path]


def test_saving_checkpoints_needs_a_global_step(tmp_path):
    w = tf.get_variable("w", [1])
    with pytest.raises(RuntimeError, match="Global step should be created"):
        tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path))


def test_the_cifar10_train_loop(tmp_path, capsys):
    step = tf.train.get_or_create_global_step()
    w = tf.get_variable("w", [2], initializer=tf.constant_initializer([1.0, 2.0]))
    loss = tf.reduce_sum(w * w)
    rate = tf.train.exponential_decay(0.1, step, 2, 0.5, staircase=True)
    train_op = tf.train.GradientDescentOptimizer(rate).minimize(loss, global_step=step)

    class _LoggerHook(tf.train.SessionRunHook):
        def begin(self):
            self._step = -1

        def before_run(self, run_context):
            self._step += 1
            return tf.train.SessionRunArgs(loss)

        def after_run(self, run_context, run_values):
            print("step %d, loss = %.4f" % (self._step, run_values.results))

    with tf.train.MonitoredTrainingSession(
            checkpoint_dir=str(tmp_path),
            hooks=[tf.train.StopAtStepHook(last_step=3), tf.train.NanTensorHook(loss),
                   _LoggerHook()],
            config=tf.ConfigProto(log_device_placement=False)) as mon_sess:
        while not mon_sess.should_stop():
            mon_sess.run(train_op)
    assert capsys.readouterr().out.splitlines() == [
        "step 0, loss = 5.0000", "step 1, loss = 3.2000", "step 2, loss = 2.0480"]
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("model.ckpt-3")


def test_logging_tensor_hook_logs_every_n_iter(caplog):
    step, w, loss, train = _model()
    hook = tf.train.LoggingTensorHook({"loss": loss}, every_n_iter=2)
    with caplog.at_level("INFO", logger="tensorflow"):
        with tf.train.MonitoredTrainingSession(hooks=[hook]) as sess:
            for _ in range(4):
                sess.run(train)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("loss = ")]
    assert len(lines) == 2 and lines[0] == "loss = 5.0"
