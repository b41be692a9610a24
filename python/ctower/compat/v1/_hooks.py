"""tf.train's session-run hooks, as TensorFlow 1.x has them: what a hook is
given (SessionRunContext, SessionRunValues) and gives (SessionRunArgs), and
StopAtStepHook, NanTensorHook, LoggingTensorHook, CheckpointSaverHook,
StepCounterHook, SummarySaverHook and FinalOpsHook. A monitored session
(_monitored.py) calls them; they log through Python's logger "tensorflow",
as TensorFlow's do.

The global step fetched with a training op is the step after the op's
increment (TensorFlow's may be the one before): the hooks that act on it
read it again before acting, as TensorFlow's do, so they act at the same
steps. CheckpointSaverHook writes tf.train.Saver's checkpoints and no
graph or meta graph.
"""
import collections
import logging
import os
import threading
import time

import numpy as np

from ctower.compat.v1 import _framework as fw
from ctower.compat.v1 import _summary
from ctower.compat.v1 import _train

_log = logging.getLogger("tensorflow")

# TensorFlow's GraphKeys for a scaffold's parts
SAVERS, INIT_OP, LOCAL_INIT_OP, SUMMARY_OP = (
    "savers", "init_op", "local_init_op", "summary_op")


# ---- what a hook is given and gives ----------------------------------------------------

class SessionRunArgs(collections.namedtuple("SessionRunArgs", "fetches feed_dict options")):
    """What a hook's before_run adds to a run: fetches, feeds, options."""

    def __new__(cls, fetches, feed_dict=None, options=None):
        return super().__new__(cls, fetches, feed_dict, options)


class SessionRunValues(collections.namedtuple("SessionRunValues",
                                              "results options run_metadata")):
    """What after_run gets: the values of the hook's fetches."""


class SessionRunContext:
    """The run a hook sees: the caller's SessionRunArgs and the session; a
    hook may ask the loop to stop."""

    def __init__(self, original_args, session):
        self._original_args = original_args
        self._session = session
        self._stop_requested = False

    @property
    def original_args(self):
        return self._original_args

    @property
    def session(self):
        return self._session

    @property
    def stop_requested(self):
        return self._stop_requested

    def request_stop(self):
        self._stop_requested = True


class SessionRunHook:
    """The hook interface: each method does nothing unless overridden."""

    def begin(self):
        pass

    def after_create_session(self, session, coord):
        pass

    def before_run(self, run_context):
        return None

    def after_run(self, run_context, run_values):
        pass

    def end(self, session):
        pass


class NanLossDuringTrainingError(RuntimeError):
    def __str__(self):
        return "NaN loss during training."


class _Coordinator:
    """The coordinator after_create_session receives (TensorFlow's
    tf.train.Coordinator's stop flag, for one process)."""

    def __init__(self):
        self._stop = threading.Event()

    def request_stop(self, ex=None):
        self._stop.set()

    def should_stop(self):
        return self._stop.is_set()

    def clear_stop(self):
        self._stop.clear()

    def wait_for_stop(self, timeout=None):
        return self._stop.wait(timeout)

    def join(self, threads=None, stop_grace_period_secs=120, ignore_live_threads=False):
        pass

    def raise_requested_exception(self):
        pass


# ---- timers and the global step --------------------------------------------------------

class SecondOrStepTimer:
    """Triggers every `every_secs` seconds or every `every_steps` steps."""

    def __init__(self, every_secs=None, every_steps=None):
        if (every_secs is None) == (every_steps is None):
            raise ValueError("Either every_secs or every_steps should be provided.")
        self._every_secs, self._every_steps = every_secs, every_steps
        self.reset()

    def reset(self):
        self._last_step, self._last_time = None, None

    def should_trigger_for_step(self, step):
        if self._last_step is None:
            return True
        if self._last_step == step:
            return False
        if self._every_secs is not None and time.time() >= self._last_time + self._every_secs:
            return True
        return self._every_steps is not None and step >= self._last_step + self._every_steps

    def update_last_triggered_step(self, step):
        now = time.time()
        elapsed = (None, None) if self._last_time is None else \
            (now - self._last_time, step - self._last_step)
        self._last_time, self._last_step = now, step
        return elapsed

    def last_triggered_step(self):
        return self._last_step


class _NeverTriggerTimer(SecondOrStepTimer):
    def __init__(self):
        self.reset()

    def should_trigger_for_step(self, step):
        return False


def _global_step_tensor(hook):
    step = _train.get_global_step()
    if step is None:
        raise RuntimeError("Global step should be created to use %s." % hook)
    return step._read


def _step_value(value):
    return int(np.asarray(value))


# ---- the hooks -------------------------------------------------------------------------

class StopAtStepHook(SessionRunHook):
    """Asks to stop once the global step reaches last_step (or num_steps
    past the step the session started at)."""

    def __init__(self, num_steps=None, last_step=None):
        if num_steps is None and last_step is None:
            raise ValueError("One of num_steps or last_step must be specified.")
        if num_steps is not None and last_step is not None:
            raise ValueError("Only one of num_steps or last_step can be specified.")
        self._num_steps, self._last_step = num_steps, last_step

    def begin(self):
        self._global_step = _global_step_tensor("StopAtStepHook")

    def after_create_session(self, session, coord):
        if self._last_step is None:
            self._last_step = _step_value(session.run(self._global_step)) + self._num_steps

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step)

    def after_run(self, run_context, run_values):
        if _step_value(run_values.results) + 1 >= self._last_step:
            # the fetched step may precede the run's increment: read it again
            if _step_value(run_context.session.run(self._global_step)) >= self._last_step:
                run_context.request_stop()


class NanTensorHook(SessionRunHook):
    """Raises NanLossDuringTrainingError (or asks to stop) when the loss is NaN."""

    def __init__(self, loss_tensor, fail_on_nan_loss=True):
        self._loss_tensor = loss_tensor
        self._fail_on_nan_loss = fail_on_nan_loss

    def before_run(self, run_context):
        return SessionRunArgs(self._loss_tensor)

    def after_run(self, run_context, run_values):
        if np.isnan(run_values.results):
            message = "Model diverged with loss = NaN."
            if self._fail_on_nan_loss:
                _log.error(message)
                raise NanLossDuringTrainingError
            _log.warning(message)
            run_context.request_stop()


class LoggingTensorHook(SessionRunHook):
    """Logs the given tensors' values every_n_iter runs or every_n_secs (and
    at the end with at_end)."""

    def __init__(self, tensors, every_n_iter=None, every_n_secs=None, at_end=False,
                 formatter=None):
        only_at_end = at_end and every_n_iter is None and every_n_secs is None
        if not only_at_end and (every_n_iter is None) == (every_n_secs is None):
            raise ValueError("either at_end and/or exactly one of every_n_iter and every_n_secs "
                             "must be provided.")
        if every_n_iter is not None and every_n_iter <= 0:
            raise ValueError("invalid every_n_iter=%s." % every_n_iter)
        if not isinstance(tensors, dict):
            self._tag_order = list(tensors)
            tensors = {item: item for item in tensors}
        else:
            self._tag_order = sorted(tensors.keys())
        self._tensors = tensors
        self._formatter = formatter
        self._timer = _NeverTriggerTimer() if only_at_end else \
            SecondOrStepTimer(every_secs=every_n_secs, every_steps=every_n_iter)
        self._log_at_end = at_end

    def begin(self):
        self._timer.reset()
        self._iter_count = 0
        graph = fw.get_default_graph()
        self._current_tensors = {tag: graph.as_graph_element(t, allow_operation=False)
                                 for tag, t in self._tensors.items()}

    def before_run(self, run_context):
        self._should_trigger = self._timer.should_trigger_for_step(self._iter_count)
        return SessionRunArgs(self._current_tensors) if self._should_trigger else None

    def _log_tensors(self, values):
        original = np.get_printoptions()
        np.set_printoptions(suppress=True)
        try:
            elapsed, _ = self._timer.update_last_triggered_step(self._iter_count)
            if self._formatter:
                _log.info(self._formatter(values))
            else:
                stats = ", ".join("%s = %s" % (tag, values[tag]) for tag in self._tag_order)
                if elapsed is not None:
                    _log.info("%s (%.3f sec)", stats, elapsed)
                else:
                    _log.info("%s", stats)
        finally:
            np.set_printoptions(**original)

    def after_run(self, run_context, run_values):
        if self._should_trigger:
            self._log_tensors(run_values.results)
        self._iter_count += 1

    def end(self, session):
        if self._log_at_end:
            self._log_tensors(session.run(self._current_tensors))


class CheckpointSaverHook(SessionRunHook):
    """Saves a checkpoint `<checkpoint_dir>/<basename>-<global step>` when the
    session is made, every save_secs or save_steps, and at the end."""

    def __init__(self, checkpoint_dir, save_secs=None, save_steps=None, saver=None,
                 checkpoint_basename="model.ckpt", scaffold=None, listeners=None,
                 save_graph_def=True):
        if saver is not None and scaffold is not None:
            raise ValueError("You cannot provide both saver and scaffold.")
        self._saver = saver
        self._checkpoint_dir = checkpoint_dir
        self._save_path = os.path.join(checkpoint_dir, checkpoint_basename)
        self._scaffold = scaffold
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)
        self._listeners = listeners or []

    def begin(self):
        self._global_step = _global_step_tensor("CheckpointSaverHook")
        for listener in self._listeners:
            listener.begin()

    def after_create_session(self, session, coord):
        step = _step_value(session.run(self._global_step))
        self._save(session, step)
        self._timer.update_last_triggered_step(step)

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step)

    def after_run(self, run_context, run_values):
        if self._timer.should_trigger_for_step(_step_value(run_values.results) + 1):
            step = _step_value(run_context.session.run(self._global_step))
            if self._timer.should_trigger_for_step(step):
                self._timer.update_last_triggered_step(step)
                if self._save(run_context.session, step):
                    run_context.request_stop()

    def end(self, session):
        step = _step_value(session.run(self._global_step))
        if step != self._timer.last_triggered_step():
            self._save(session, step)
        for listener in self._listeners:
            listener.end(session, step)

    def _save(self, session, step):
        _log.info("Saving checkpoints for %d into %s.", step, self._save_path)
        for listener in self._listeners:
            listener.before_save(session, step)
        self._get_saver().save(session, self._save_path, global_step=step)
        stop = False
        for listener in self._listeners:
            if listener.after_save(session, step):
                stop = True
        return stop

    def _get_saver(self):
        if self._saver is not None:
            return self._saver
        if self._scaffold is not None:
            return self._scaffold.saver
        savers = fw.get_default_graph().get_collection(SAVERS)
        if not savers:
            raise RuntimeError("No items in collection %s. Please add a saver to the collection "
                               "or provide a saver or scaffold." % SAVERS)
        if len(savers) > 1:
            raise RuntimeError("More than one item in collection %s. Please indicate which one "
                               "to use by passing it to the constructor." % SAVERS)
        self._saver = savers[0]
        return self._saver


class CheckpointSaverListener:
    def begin(self):
        pass

    def before_save(self, session, global_step_value):
        pass

    def after_save(self, session, global_step_value):
        pass

    def end(self, session, global_step_value):
        pass


class StepCounterHook(SessionRunHook):
    """Logs and writes global_step/sec every_n_steps (or every_n_secs)."""

    def __init__(self, every_n_steps=100, every_n_secs=None, output_dir=None,
                 summary_writer=None):
        if (every_n_steps is None) == (every_n_secs is None):
            raise ValueError("exactly one of every_n_steps and every_n_secs should be provided.")
        self._timer = SecondOrStepTimer(every_steps=every_n_steps, every_secs=every_n_secs)
        self._summary_writer = summary_writer
        self._output_dir = output_dir
        self._tag = "global_step/sec"

    def begin(self):
        if self._summary_writer is None and self._output_dir:
            self._summary_writer = _summary.FileWriterCache.get(self._output_dir)
        self._global_step = _global_step_tensor("StepCounter")

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step)

    def after_run(self, run_context, run_values):
        step = _step_value(run_values.results)
        if self._timer.should_trigger_for_step(step):
            elapsed_time, elapsed_steps = self._timer.update_last_triggered_step(step)
            if elapsed_time is not None and elapsed_time > 0:
                rate = elapsed_steps / elapsed_time
                if self._summary_writer is not None:
                    summary = _summary.Summary(value=[_summary.Summary.Value(
                        tag=self._tag, simple_value=rate)])
                    self._summary_writer.add_summary(summary, step)
                _log.info("%s: %g", self._tag, rate)


class SummarySaverHook(SessionRunHook):
    """Writes the scaffold's (or the given) summary op every save_steps or
    save_secs to output_dir's event file."""

    def __init__(self, save_steps=None, save_secs=None, output_dir=None, summary_writer=None,
                 scaffold=None, summary_op=None):
        if (scaffold is None) == (summary_op is None):
            raise ValueError("Exactly one of scaffold or summary_op must be provided.")
        self._summary_op, self._scaffold = summary_op, scaffold
        self._summary_writer, self._output_dir = summary_writer, output_dir
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)

    def begin(self):
        if self._summary_writer is None and self._output_dir:
            self._summary_writer = _summary.FileWriterCache.get(self._output_dir)
        self._next_step = None
        self._global_step = _global_step_tensor("SummarySaver")

    def _summaries(self):
        if self._summary_op is not None:
            ops = self._summary_op if isinstance(self._summary_op, list) else [self._summary_op]
            return ops
        op = self._scaffold.summary_op
        return [op] if op is not None else []

    def before_run(self, run_context):
        self._request_summary = (self._next_step is None or
                                 self._timer.should_trigger_for_step(self._next_step))
        requests = {"global_step": self._global_step}
        if self._request_summary and self._summaries():
            requests["summary"] = self._summaries()
        return SessionRunArgs(requests)

    def after_run(self, run_context, run_values):
        if self._summary_writer is None:
            return
        stale_step = _step_value(run_values.results["global_step"])
        step = stale_step + 1
        if self._next_step is None or self._request_summary:
            step = _step_value(run_context.session.run(self._global_step))
        if self._request_summary:
            self._timer.update_last_triggered_step(step)
            for summary in run_values.results.get("summary", []):
                self._summary_writer.add_summary(summary, step)
        self._next_step = step + 1

    def end(self, session=None):
        if self._summary_writer is not None:
            self._summary_writer.flush()


class FinalOpsHook(SessionRunHook):
    """Runs final_ops at end(); their values are final_ops_values."""

    def __init__(self, final_ops, final_ops_feed_dict=None):
        self._final_ops, self._final_ops_feed_dict = final_ops, final_ops_feed_dict
        self._final_ops_values = None

    @property
    def final_ops_values(self):
        return self._final_ops_values

    def end(self, session):
        if self._final_ops is not None:
            self._final_ops_values = session.run(self._final_ops,
                                                 feed_dict=self._final_ops_feed_dict)
