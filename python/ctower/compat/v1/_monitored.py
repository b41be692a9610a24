"""tf.train's monitored sessions and session-run hooks, as TensorFlow 1.x
calls them:

    with tf.train.MonitoredTrainingSession(checkpoint_dir=folder,
            hooks=[tf.train.StopAtStepHook(last_step=1000)]) as sess:
        while not sess.should_stop():
            sess.run(train_op)

A MonitoredSession calls each hook's begin(), makes the session (restoring
the newest checkpoint of checkpoint_dir, else running the scaffold's
init_op), finalizes the graph, calls after_create_session(session, coord),
then around each run before_run (whose SessionRunArgs' fetches and feeds are
run with the caller's) and after_run (with those fetches' values), and
end(session) at a close without an exception; an OutOfRangeError or
StopIteration ends a `with` quietly. The hooks are in _hooks.py.

Differences from TensorFlow: one process only (is_chief=False and master
are accepted and ignored; no recovery from a lost worker, no ready_op
check); the global step is float32, as ctower's variables are.
"""

import logging
import os

from ctower import _ctower
from ctower import errors
from ctower.compat.v1 import _framework as fw
from ctower.compat.v1 import _input
from ctower.compat.v1 import _session
from ctower.compat.v1 import _summary
from ctower.compat.v1 import _train
from ctower.compat.v1 import _variables as vs
from ctower.compat.v1._hooks import (INIT_OP, LOCAL_INIT_OP, SAVERS, SUMMARY_OP,
                                     CheckpointSaverHook, SessionRunArgs, SessionRunContext,
                                     SessionRunValues, StepCounterHook, SummarySaverHook,
                                     _Coordinator)

_log = logging.getLogger("tensorflow")


# ---- checkpoint state ------------------------------------------------------------------

class CheckpointState:
    """The `checkpoint` state file Saver writes: the newest checkpoint and
    those kept, as paths under the checkpoint folder."""

    def __init__(self, model_checkpoint_path="", all_model_checkpoint_paths=()):
        self.model_checkpoint_path = model_checkpoint_path
        self.all_model_checkpoint_paths = list(all_model_checkpoint_paths)

    def __repr__(self):
        lines = ["model_checkpoint_path: \"%s\"" % self.model_checkpoint_path]
        lines += ["all_model_checkpoint_paths: \"%s\"" % p
                  for p in self.all_model_checkpoint_paths]
        return "\n".join(lines) + "\n"


def _unquote(text):
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] == '"':
        text = text[1:-1]
    return text.encode("latin-1", "backslashreplace").decode("unicode_escape")


def get_checkpoint_state(checkpoint_dir, latest_filename=None):
    """The CheckpointState of checkpoint_dir's state file, relative paths
    joined to checkpoint_dir; None when there is no state file or it names
    no checkpoint (logged as a warning)."""
    path = os.path.join(checkpoint_dir, latest_filename or "checkpoint")
    try:
        text = _ctower.file_read(path, *_train._STATE_FILE).decode("utf-8", "replace")
    except errors.NotFoundError:
        return None
    state = CheckpointState()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model_checkpoint_path":
            state.model_checkpoint_path = _unquote(value)
        elif key.strip() == "all_model_checkpoint_paths":
            state.all_model_checkpoint_paths.append(_unquote(value))
    if not state.model_checkpoint_path:
        _log.warning("%s: Checkpoint ignored (it names no model_checkpoint_path)", path)
        return None
    join = lambda p: p if os.path.isabs(p) else os.path.join(checkpoint_dir, p)
    state.model_checkpoint_path = join(state.model_checkpoint_path)
    state.all_model_checkpoint_paths = [join(p) for p in state.all_model_checkpoint_paths]
    return state


# ---- scaffold and session creators -----------------------------------------------------

class Scaffold:
    """What a monitored session needs of the graph: init_op (default: all
    variables' initializer), saver (default: a Saver of every variable, put
    in the graph's "savers" collection), summary_op (tf.summary.merge_all)."""

    def __init__(self, init_op=None, init_feed_dict=None, init_fn=None, ready_op=None,
                 ready_for_local_init_op=None, local_init_op=None, summary_op=None, saver=None,
                 copy_from_scaffold=None, local_init_feed_dict=None):
        if copy_from_scaffold is not None:
            if not isinstance(copy_from_scaffold, Scaffold):
                raise TypeError("copy_from_scaffold is not a Scaffold instance.")
            pick = lambda mine, theirs: mine if mine is not None else theirs
            init_op = pick(init_op, copy_from_scaffold.init_op)
            init_feed_dict = pick(init_feed_dict, copy_from_scaffold._init_feed_dict)
            init_fn = pick(init_fn, copy_from_scaffold._user_init_fn)
            local_init_op = pick(local_init_op, copy_from_scaffold.local_init_op)
            summary_op = pick(summary_op, copy_from_scaffold.summary_op)
            saver = pick(saver, copy_from_scaffold.saver)
        self._init_op, self._init_feed_dict = init_op, init_feed_dict
        self._user_init_fn = init_fn
        self._init_fn = (lambda sess: init_fn(self, sess)) if init_fn else None
        self._ready_op, self._local_init_op = ready_op, local_init_op
        self._local_init_feed_dict = local_init_feed_dict
        self._summary_op, self._saver = summary_op, saver

    def finalize(self):
        """Makes the missing parts from the graph's collections (or their
        defaults), then finalizes the graph."""
        graph = fw.get_default_graph()
        if self._init_op is None:
            self._init_op = _get_or_default(graph, INIT_OP, vs.global_variables_initializer)
        if self._local_init_op is None:
            self._local_init_op = _get_or_default(graph, LOCAL_INIT_OP,
                                                  vs.local_variables_initializer)
        if self._summary_op is None:
            self._summary_op = _get_or_default(graph, SUMMARY_OP, _summary.merge_all)
        if self._saver is None:
            self._saver = _get_or_default(graph, SAVERS, _train.Saver)
        vs._all_engine_variables(graph)  # every variable's reader exists before the graph is final
        graph.finalize()
        return self

    init_op = property(lambda self: self._init_op)
    init_feed_dict = property(lambda self: self._init_feed_dict)
    init_fn = property(lambda self: self._init_fn)
    ready_op = property(lambda self: self._ready_op)
    ready_for_local_init_op = property(lambda self: None)
    local_init_op = property(lambda self: self._local_init_op)
    local_init_feed_dict = property(lambda self: self._local_init_feed_dict)
    summary_op = property(lambda self: self._summary_op)
    saver = property(lambda self: self._saver)

    @staticmethod
    def get_or_default(arg_name, collection_key, default_constructor):
        return _get_or_default(fw.get_default_graph(), collection_key, default_constructor)

    @staticmethod
    def default_local_init_op():
        return vs.local_variables_initializer()


def _get_or_default(graph, key, make):
    items = graph.get_collection(key)
    if items:
        if len(items) > 1:
            raise RuntimeError("More than one item in the collection \"%s\". Please indicate "
                               "which one to use by passing it to the tf.Scaffold constructor "
                               "as:  tf.Scaffold(%s=item to use)" % (key, key))
        return items[0]
    item = make()
    if item is not None:
        graph.add_to_collection(key, item)
    return item


class SessionCreator:
    def create_session(self):
        raise NotImplementedError("create_session is not implemented for %s." % self)


class ChiefSessionCreator(SessionCreator):
    """A Session restored from checkpoint_filename_with_path, or from
    checkpoint_dir's newest checkpoint, else initialized by the scaffold."""

    def __init__(self, scaffold=None, master="", config=None, checkpoint_dir=None,
                 checkpoint_filename_with_path=None):
        self._scaffold = scaffold or Scaffold()
        self._config = config
        self._checkpoint_dir = checkpoint_dir
        self._checkpoint_filename_with_path = checkpoint_filename_with_path

    def create_session(self):
        scaffold = self._scaffold.finalize()
        sess = _session.Session(config=self._config)
        path = self._checkpoint_filename_with_path
        if path is None and self._checkpoint_dir:
            state = get_checkpoint_state(self._checkpoint_dir)
            if state is not None:
                path = state.model_checkpoint_path
                scaffold.saver.recover_last_checkpoints(state.all_model_checkpoint_paths)
        if path is not None:
            scaffold.saver.restore(sess, path)
        else:
            if scaffold.init_op is None and not scaffold.init_fn and \
                    scaffold.local_init_op is None:
                raise RuntimeError("Model is not initialized and no init_op or init_fn or "
                                   "local_init_op was given")
            if scaffold.init_op is not None:
                sess.run(scaffold.init_op, feed_dict=scaffold.init_feed_dict)
            if scaffold.init_fn:
                scaffold.init_fn(sess)
        if scaffold.local_init_op is not None:
            sess.run(scaffold.local_init_op, feed_dict=scaffold.local_init_feed_dict)
        return sess


WorkerSessionCreator = ChiefSessionCreator


# ---- monitored sessions ----------------------------------------------------------------

class _MonitoredSession:
    def __init__(self, session_creator, hooks, stop_grace_period_secs=120):
        self._hooks = list(hooks or [])
        for hook in self._hooks:
            hook.begin()
        self._coord = _Coordinator()
        self._tf_sess = None
        self._tf_sess = session_creator.create_session()
        _input.start_queue_runners(self._tf_sess, self._coord)  # as TensorFlow's, before the hooks
        for hook in self._hooks:
            hook.after_create_session(self._tf_sess, self._coord)
        self._should_stop = False

    @property
    def graph(self):
        return self._tf_sess.graph if self._tf_sess is not None else None

    def __enter__(self):
        return self

    def __exit__(self, exception_type, exception_value, traceback):
        if exception_type in (errors.OutOfRangeError, StopIteration):
            exception_type = None
        self._close_internal(exception_type)
        return exception_type is None

    def should_stop(self):
        return self._tf_sess is None or self._should_stop or self._coord.should_stop()

    def close(self):
        self._close_internal()

    def _close_internal(self, exception_type=None):
        try:
            if not exception_type and self._tf_sess is not None:
                for hook in self._hooks:
                    hook.end(self._tf_sess)
        finally:
            if self._tf_sess is not None:
                self._tf_sess.close()
            self._tf_sess = None

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        if self._tf_sess is None:
            raise RuntimeError("Session is already closed.")
        if self._should_stop:
            raise RuntimeError("Run called even after should_stop requested.")
        context = SessionRunContext(SessionRunArgs(fetches, feed_dict), self._tf_sess)
        requests = {"caller": fetches}
        hook_feeds = {}
        for hook in self._hooks:
            request = hook.before_run(context)
            if request is None:
                continue
            if request.fetches is not None:
                requests[hook] = request.fetches
            if request.feed_dict:
                _no_shared_feeds(hook_feeds, request.feed_dict, "Same tensor is fed by two hooks.")
                hook_feeds.update(request.feed_dict)
        if hook_feeds and feed_dict:
            _no_shared_feeds(feed_dict, hook_feeds,
                             "Same tensor is fed by a SessionRunHook and user.")
        if hook_feeds:
            feed_dict = {**hook_feeds, **(feed_dict or {})}
        outputs = self._tf_sess.run(requests, feed_dict=feed_dict, options=options,
                                    run_metadata=run_metadata)
        for hook in self._hooks:
            hook.after_run(context, SessionRunValues(results=outputs.get(hook), options=options,
                                                     run_metadata=run_metadata))
        self._should_stop = self._should_stop or context.stop_requested
        return outputs["caller"]

    def run_step_fn(self, step_fn):
        """step_fn(step_context): step_context.session is the raw session,
        run_with_hooks runs through the hooks, request_stop() stops."""
        context = _StepContext(self)
        try:
            return step_fn(context)
        except _StopRequested:
            self._should_stop = True
            return None


def _no_shared_feeds(feeds1, feeds2, message):
    shared = set(feeds1) & set(feeds2)
    if shared:
        raise RuntimeError(message + " Conflict(s): " + str(list(shared)))


class _StopRequested(Exception):
    pass


class _StepContext:
    def __init__(self, monitored):
        self._monitored = monitored

    @property
    def session(self):
        return self._monitored._tf_sess

    def run_with_hooks(self, *args, **kwargs):
        return self._monitored.run(*args, **kwargs)

    def request_stop(self):
        raise _StopRequested()


class MonitoredSession(_MonitoredSession):
    """A session with hooks around each run, made by session_creator
    (default: ChiefSessionCreator())."""

    def __init__(self, session_creator=None, hooks=None, stop_grace_period_secs=120):
        super().__init__(session_creator or ChiefSessionCreator(), hooks,
                         stop_grace_period_secs)


class SingularMonitoredSession(_MonitoredSession):
    """A MonitoredSession made from a scaffold and checkpoint options; its
    raw_session() is the Session under the hooks."""

    def __init__(self, hooks=None, scaffold=None, master="", config=None, checkpoint_dir=None,
                 stop_grace_period_secs=120, checkpoint_filename_with_path=None):
        creator = ChiefSessionCreator(scaffold=scaffold, master=master, config=config,
                                      checkpoint_dir=checkpoint_dir,
                                      checkpoint_filename_with_path=checkpoint_filename_with_path)
        super().__init__(creator, hooks, stop_grace_period_secs)

    def raw_session(self):
        return self._tf_sess


class _UseDefault:
    def __repr__(self):
        return "<default>"


USE_DEFAULT = _UseDefault()


def MonitoredTrainingSession(master="", is_chief=True, checkpoint_dir=None, scaffold=None,
                             hooks=None, chief_only_hooks=None,
                             save_checkpoint_secs=USE_DEFAULT,
                             save_summaries_steps=USE_DEFAULT, save_summaries_secs=USE_DEFAULT,
                             config=None, stop_grace_period_secs=120, log_step_count_steps=100,
                             max_wait_secs=7200, save_checkpoint_steps=USE_DEFAULT,
                             summary_dir=None, save_graph_def=True):
    """A MonitoredSession for training: the hooks of chief_only_hooks, then
    a StepCounterHook and a SummarySaverHook writing to summary_dir (default
    checkpoint_dir), a CheckpointSaverHook (checkpoints every
    save_checkpoint_secs, default 600, or save_checkpoint_steps), then
    hooks; restoring checkpoint_dir's newest checkpoint when it has one."""
    if save_summaries_steps is USE_DEFAULT and save_summaries_secs is USE_DEFAULT:
        save_summaries_steps, save_summaries_secs = 100, None
    elif save_summaries_secs is USE_DEFAULT:
        save_summaries_secs = None
    elif save_summaries_steps is USE_DEFAULT:
        save_summaries_steps = None
    if save_checkpoint_steps is USE_DEFAULT and save_checkpoint_secs is USE_DEFAULT:
        save_checkpoint_steps, save_checkpoint_secs = None, 600
    elif save_checkpoint_secs is USE_DEFAULT:
        save_checkpoint_secs = None
    elif save_checkpoint_steps is USE_DEFAULT:
        save_checkpoint_steps = None
    scaffold = scaffold or Scaffold()
    all_hooks = list(chief_only_hooks or []) if is_chief else []
    creator = ChiefSessionCreator(scaffold=scaffold, checkpoint_dir=checkpoint_dir, config=config)
    summary_dir = summary_dir or checkpoint_dir
    if is_chief and summary_dir:
        if log_step_count_steps and log_step_count_steps > 0:
            all_hooks.append(StepCounterHook(output_dir=summary_dir,
                                             every_n_steps=log_step_count_steps))
        if (save_summaries_steps and save_summaries_steps > 0) or \
                (save_summaries_secs and save_summaries_secs > 0):
            all_hooks.append(SummarySaverHook(scaffold=scaffold, save_steps=save_summaries_steps,
                                              save_secs=save_summaries_secs,
                                              output_dir=summary_dir))
    if is_chief and checkpoint_dir:
        if (save_checkpoint_secs and save_checkpoint_secs > 0) or \
                (save_checkpoint_steps and save_checkpoint_steps > 0):
            all_hooks.append(CheckpointSaverHook(checkpoint_dir, save_steps=save_checkpoint_steps,
                                                 save_secs=save_checkpoint_secs,
                                                 scaffold=scaffold))
    all_hooks.extend(hooks or [])
    return MonitoredSession(session_creator=creator, hooks=all_hooks,
                            stop_grace_period_secs=stop_grace_period_secs)
