"""tf.train: the optimizers (ctower's SGD, momentum and Adam updates,
include/ctower/optimizer.h), the global step and Saver (ctower's
safetensors checkpoints, include/ctower/checkpoint.h)."""
import os

import numpy as np

from ctower import _ctower
from ctower import errors
from ctower.compat.v1 import _framework as fw
from ctower.compat.v1 import _ops
from ctower.compat.v1 import _variables as vs
from ctower.compat.v1._framework import Tensor, get_default_graph

_SGD, _MOMENTUM, _ADAM = 0, 1, 2  # ct_optimizer_kind


class Optimizer:
    """The TensorFlow optimizer interface over ct_variable_gradients and
    ct_optimizer_apply_gradients. The learning rate is fed at each run that
    applies the update (with Adam's bias correction folded in, counting the
    updates each session applied)."""
    GATE_NONE, GATE_OP, GATE_GRAPH = 0, 1, 2

    def __init__(self, kind, learning_rate, name, momentum=0.0, nesterov=False, beta1=0.9,
                 beta2=0.999, epsilon=1e-8):
        self._kind = kind
        self._learning_rate = learning_rate
        self._name = name
        self._momentum = momentum
        self._nesterov = nesterov
        self._beta1, self._beta2, self._epsilon = beta1, beta2, epsilon

    def get_name(self):
        return self._name

    def compute_gradients(self, loss, var_list=None, gate_gradients=GATE_OP,
                          aggregation_method=None, colocate_gradients_with_ops=False,
                          grad_loss=None):
        if isinstance(loss, vs.Variable):
            loss = loss._read
        if not isinstance(loss, Tensor):
            raise TypeError("The loss to minimize is a Tensor, not %s" % type(loss).__name__)
        graph = loss.graph
        if grad_loss is not None:  # the gradient of sum(loss * grad_loss), as tf.gradients' grad_ys
            with graph.as_default():
                loss = _ops.reduce_sum(_ops.multiply(loss, grad_loss))
        if var_list is None:
            var_list = vs.trainable_variables() if graph is get_default_graph() else \
                graph.get_collection(vs.GraphKeys.TRAINABLE_VARIABLES)
        var_list = list(var_list)
        if not var_list:
            raise ValueError("No variables to optimize.")
        grads = dict(graph._c.variable_gradients(loss._output(graph)))
        out = []
        for v in var_list:
            g = grads.get(v._index_in(graph))
            out.append((None if g is None else graph._built(g, rename=False), v))
        return out

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        if global_step is not None and not isinstance(global_step, vs.Variable):
            raise TypeError("global_step is a Variable, not %r" % (global_step,))
        pairs = [(g, v) for g, v in grads_and_vars if g is not None]
        if not pairs:
            raise ValueError("No gradients provided for any variable: %s."
                             % ([str(v) for _, v in grads_and_vars],))
        graph = pairs[0][1].graph
        with graph.as_default():
            grads = [fw.convert_to_tensor(g) for g, _ in pairs]
            op_id, lr = graph._c.apply_gradients(
                self._kind, float(self._momentum), bool(self._nesterov), float(self._beta1),
                float(self._beta2), float(self._epsilon), [v._index_in(graph) for _, v in pairs],
                [g._output(graph) for g in grads])
            graph._c.rename(op_id, name or self._name)
            train_op = graph._operation(op_id)
            graph._add_run_hook(op_id, self._feeder(op_id, lr))
            if global_step is not None:
                with graph.control_dependencies([train_op]):
                    increment = global_step.assign_add(1.0)
                train_op = _ops.group(train_op, increment, name=(name or self._name) + "_step")
            graph.add_to_collection(vs.GraphKeys.TRAIN_OP, train_op)
        return train_op

    def _feeder(self, op_id, lr_output):
        def feed(session, feed_dict):
            step = session._steps.get(op_id, 0) + 1
            session._steps[op_id] = step
            rate = self._learning_rate
            if isinstance(rate, (Tensor, vs.Variable)):
                rate = session.run(rate, feed_dict)
            value = _ctower.optimizer_learning_rate(self._kind, float(self._beta1),
                                                    float(self._beta2), float(rate), step)
            return [(lr_output, 0, np.asarray(value, dtype=np.float32))]
        return feed

    def minimize(self, loss, global_step=None, var_list=None, gate_gradients=GATE_OP,
                 aggregation_method=None, colocate_gradients_with_ops=False, name=None,
                 grad_loss=None):
        grads_and_vars = self.compute_gradients(loss, var_list=var_list, grad_loss=grad_loss)
        return self.apply_gradients(grads_and_vars, global_step=global_step, name=name)

    def get_slot_names(self):
        return {_SGD: [], _MOMENTUM: ["momentum"], _ADAM: ["m", "v"]}[self._kind]

    def get_slot(self, var, name):
        suffix = {"momentum": "Momentum", "m": "Adam", "v": "Adam_1"}.get(name)
        graph = var.graph
        for v in vs._all_engine_variables(graph):
            if v._name == "%s/%s" % (var._name, suffix):
                return v
        return None


class GradientDescentOptimizer(Optimizer):
    def __init__(self, learning_rate, use_locking=False, name="GradientDescent"):
        super().__init__(_SGD, learning_rate, name)


class MomentumOptimizer(Optimizer):
    def __init__(self, learning_rate, momentum, use_locking=False, name="Momentum",
                 use_nesterov=False):
        super().__init__(_MOMENTUM, learning_rate, name, momentum=momentum,
                         nesterov=use_nesterov)


class AdamOptimizer(Optimizer):
    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-08,
                 use_locking=False, name="Adam"):
        super().__init__(_ADAM, learning_rate, name, beta1=beta1, beta2=beta2, epsilon=epsilon)


# ---- the global step -----------------------------------------------------------------------

def get_global_step(graph=None):
    graph = graph or get_default_graph()
    steps = graph.get_collection(vs.GraphKeys.GLOBAL_STEP)
    return steps[0] if steps else None


def create_global_step(graph=None):
    graph = graph or get_default_graph()
    if get_global_step(graph) is not None:
        raise ValueError("\"global_step\" already exists.")
    with graph.as_default():
        return vs.get_variable("global_step", [], initializer=vs.zeros_initializer(),
                               trainable=False, collections=[vs.GraphKeys.GLOBAL_VARIABLES,
                                                             vs.GraphKeys.GLOBAL_STEP])


def get_or_create_global_step(graph=None):
    return get_global_step(graph) or create_global_step(graph)


def global_step(sess, global_step_tensor):
    return int(sess.run(global_step_tensor))


# ---- Saver ---------------------------------------------------------------------------------

def _check_session(sess):
    from ctower.compat.v1._session import Session
    if not isinstance(sess, Session):
        raise TypeError("'sess' must be a Session; %r" % (sess,))


class Saver:
    """Saves and restores variables by name in ctower's safetensors
    checkpoints, the files `ctower train` writes (optimizer slots included)."""

    def __init__(self, var_list=None, reshape=False, sharded=False, max_to_keep=5,
                 keep_checkpoint_every_n_hours=10000.0, name=None, restore_sequentially=False,
                 saver_def=None, builder=None, defer_build=False, allow_empty=False,
                 write_version=None, pad_step_number=False, save_relative_paths=False,
                 filename=None):
        self._var_list = var_list
        self._graph = get_default_graph()
        self._max_to_keep = max_to_keep
        self._last = []

    def _variables(self):
        if self._var_list is None:
            return {v._name: v for v in vs._all_engine_variables(self._graph)}
        given = (self._var_list.values() if isinstance(self._var_list, dict)
                 else self._var_list)
        for v in given:
            if not isinstance(v, vs.Variable):
                raise TypeError("Variable to save is not a Variable: %r" % (v,))
        if isinstance(self._var_list, dict):
            return dict(self._var_list)
        return {v._name: v for v in self._var_list}

    def save(self, sess, save_path, global_step=None, latest_filename=None,
             meta_graph_suffix="meta", write_meta_graph=True, write_state=True,
             strip_default_attrs=False):
        _check_session(sess)
        if global_step is not None:
            if not isinstance(global_step, int):
                value = sess.run(global_step)
                if not np.all(np.isfinite(value)):
                    raise ValueError("global_step is %s, not a step number" % (value,))
                global_step = int(value)
            save_path = "%s-%d" % (save_path, global_step)
        tensors = [(name, sess._read(v)) for name, v in sorted(self._variables().items())]
        steps = max(sess._steps.values()) if sess._steps else 0
        _ctower.checkpoint_write(save_path, tensors, {"global_step": str(steps)})
        if write_state:
            self._last = [p for p in self._last if p != save_path] + [save_path]
            while self._max_to_keep and len(self._last) > self._max_to_keep:
                old = self._last.pop(0)
                if os.path.exists(old):
                    os.remove(old)
            folder = os.path.dirname(os.path.abspath(save_path))
            lines = ["model_checkpoint_path: \"%s\"\n" % os.path.basename(save_path)]
            lines += ["all_model_checkpoint_paths: \"%s\"\n" % os.path.basename(p)
                      for p in self._last]
            _ctower.file_write(os.path.join(folder, latest_filename or "checkpoint"),
                               "".join(lines).encode(), *_STATE_FILE)
        return save_path

    def recover_last_checkpoints(self, checkpoint_paths):
        """Takes the checkpoints of an earlier Saver (a CheckpointState's
        all_model_checkpoint_paths) as its own, those still on disk, to keep
        and delete by max_to_keep."""
        self._last = [p for p in checkpoint_paths if os.path.exists(p)]

    def restore(self, sess, save_path):
        _check_session(sess)
        if save_path is None:
            raise ValueError("Can't load save_path when it is None.")
        tensors, metadata = _ctower.checkpoint_read(save_path)
        for name, v in self._variables().items():
            if name not in tensors:
                raise errors.NotFoundError(None, None, "Key %s not found in checkpoint %s"
                                           % (name, save_path))
            value = np.asarray(tensors[name])
            if list(value.shape) != v.shape.as_list():
                raise errors.InvalidArgumentError(
                    None, None, "Assign requires shapes of both tensors to match. lhs shape= %s "
                    "rhs shape= %s (variable %s of checkpoint %s)"
                    % (v.shape.as_list(), list(value.shape), name, save_path))
            sess._assign(v, value)
        step = int(metadata.get("global_step", "0") or 0)
        for op_id in self._graph._run_hooks:
            sess._steps[op_id] = step


# what the checkpoint state file is to the user, for core/files' messages
_STATE_FILE = ("checkpoint state file", "remove it or give Saver another latest_filename")


def latest_checkpoint(checkpoint_dir, latest_filename=None):
    path = os.path.join(checkpoint_dir, latest_filename or "checkpoint")
    try:
        text = _ctower.file_read(path, *_STATE_FILE).decode("utf-8", "replace")
    except errors.NotFoundError:
        return None
    for line in text.splitlines():
        if line.startswith("model_checkpoint_path:"):
            name = line.split(":", 1)[1].strip().strip('"')
            return os.path.join(checkpoint_dir, name)
    return None
