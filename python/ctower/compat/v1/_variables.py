"""Variables, variable scopes and initializers, as TensorFlow 1.x names them.

A Variable is one of the C graph's variables (float32; ct_variable): the
engine initializes it from its initializer (ct_initializer: TensorFlow's
Philox stream for the seeds of TensorFlow's rules (_random) when there is a
graph or op seed, else ctower's own, of the graph seed and its name) when a
session first uses it, and `initializer` sets it to that value again. A variable whose
initial value is a value (a list, an array, a tensor) is given it by each
session before the session first runs, reads or saves anything after the
variable was made (Session._initialize_values), unless its initializer
runs or a value is assigned to it first: every variable is initialized on
first use, whichever kind its initial value is.
"""
import collections
import contextlib
import math

import numpy as np

from ctower.compat.v1 import _framework as fw
from ctower.compat.v1 import _ops
from ctower.compat.v1 import _random
from ctower.compat.v1._framework import Tensor, get_default_graph

# ct_init_kind (include/ctower/graph.h)
(_ZEROS, _ONES, _CONSTANT, _UNIFORM, _NORMAL, _GLOROT_UNIFORM, _HE_NORMAL, _RANDOM_NORMAL,
 _TF_UNIFORM, _TF_NORMAL, _TF_TRUNCATED_NORMAL) = range(11)


class GraphKeys:
    GLOBAL_VARIABLES = "variables"
    TRAINABLE_VARIABLES = "trainable_variables"
    LOCAL_VARIABLES = "local_variables"
    MODEL_VARIABLES = "model_variables"
    UPDATE_OPS = "update_ops"
    LOSSES = "losses"
    REGULARIZATION_LOSSES = "regularization_losses"
    SUMMARIES = "summaries"
    TRAIN_OP = "train_op"
    GLOBAL_STEP = "global_step"
    QUEUE_RUNNERS = "queue_runners"


# ---- initializers ----------------------------------------------------------------------

# How a variable starts: ct_initializer's kind and value, its seed (None: the graph's and
# the name's), a Tensor or array it takes instead (None), and the centre of a random kind
# (ct_variable_set_initializer_mean).
_Spec = collections.namedtuple("_Spec", "kind value seed initial mean", defaults=(0.0,))


class Initializer:
    """An initializer the engine draws from: (kind, value) of ct_initializer,
    centred on mean."""
    kind = _ZEROS
    value = 0.0
    mean = 0.0
    seed = None
    dtype = fw.float32

    def _spec(self, shape):
        return _Spec(self.kind, float(self.value), self.seed, None, float(self.mean))


class zeros_initializer(Initializer):
    def __init__(self, dtype=fw.float32):
        self.kind, self.value = _ZEROS, 0.0


class ones_initializer(Initializer):
    def __init__(self, dtype=fw.float32):
        self.kind, self.value = _ONES, 1.0


class constant_initializer(Initializer):
    def __init__(self, value=0, dtype=fw.float32, verify_shape=False):
        self.constant = value
        self.kind, self.value = _CONSTANT, 0.0

    def _spec(self, shape):
        value = np.asarray(self.constant, dtype=np.float32)
        if value.size == 1:
            return _CONSTANT, float(value.reshape(())), None, None
        if value.size != int(np.prod(shape)):
            raise ValueError("Too many elements provided. Needed at most %d, but received %d"
                             % (int(np.prod(shape)), value.size))
        return _ZEROS, 0.0, None, value.reshape(shape)


def _tensorflow_spec(kind, scale, mean, seed):
    """A random initializer on TensorFlow's stream, drawn when TensorFlow's would
    be (the variable's creation): its (seed, seed2) by TensorFlow's rules, scale
    and mean rounded to float32 as its random op's tensors. None when the graph
    draws as `ctower train` (ctower.trainer_streams), or without a graph or op
    seed (TensorFlow's seeds would be random): then the engine's own stream."""
    graph = get_default_graph()
    if graph._trainer_streams:
        return None
    seeds = _random.get_seed(seed)
    if seeds[0] is None:
        return None
    return _Spec(kind, float(np.float32(scale)), seeds, None, float(np.float32(mean)))


class truncated_normal_initializer(Initializer):
    """N(mean, stddev^2) truncated at mean +- 2 stddev."""
    def __init__(self, mean=0.0, stddev=1.0, seed=None, dtype=fw.float32):
        self.kind, self.value, self.mean, self.seed = _NORMAL, stddev, mean, seed

    def _spec(self, shape):
        return (_tensorflow_spec(_TF_TRUNCATED_NORMAL, self.value, self.mean, self.seed) or
                Initializer._spec(self, shape))


class random_normal_initializer(Initializer):
    def __init__(self, mean=0.0, stddev=1.0, seed=None, dtype=fw.float32):
        self.kind, self.value, self.mean, self.seed = _RANDOM_NORMAL, stddev, mean, seed

    def _spec(self, shape):
        return (_tensorflow_spec(_TF_NORMAL, self.value, self.mean, self.seed) or
                Initializer._spec(self, shape))


class random_uniform_initializer(Initializer):
    """U(minval, maxval): TensorFlow's rnd * (maxval - minval) + minval; the
    engine's own stream draws U(-scale, scale) centred on their midpoint."""
    def __init__(self, minval=0, maxval=None, seed=None, dtype=fw.float32):
        maxval = 1 if maxval is None else maxval
        self.minval, self.maxval = minval, maxval
        minval, maxval = float(minval), float(maxval)
        self.kind, self.seed = _UNIFORM, seed
        self.value, self.mean = (maxval - minval) / 2, (maxval + minval) / 2

    def _spec(self, shape):
        low, high = np.float32(self.minval), np.float32(self.maxval)
        return (_tensorflow_spec(_TF_UNIFORM, high - low, low, self.seed) or
                Initializer._spec(self, shape))


def _compute_fans(shape):
    """TensorFlow's fans: [in, out] for dense, [..., in, out] times the receptive field."""
    shape = [int(d) for d in shape]
    if len(shape) < 1:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    receptive = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    return shape[-2] * receptive, shape[-1] * receptive


class variance_scaling_initializer(Initializer):
    """TensorFlow 1's VarianceScaling: scale over fan_in, fan_out or their mean;
    a truncated normal of stddev sqrt(scale) / 0.8796... (the stddev of N(0, 1)
    truncated at 2), an untruncated normal of sqrt(scale), or U(-sqrt(3 scale),
    sqrt(3 scale))."""
    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None,
                 dtype=fw.float32):
        if scale <= 0.:
            raise ValueError("`scale` must be positive float.")
        if mode not in {"fan_in", "fan_out", "fan_avg"}:
            raise ValueError("Invalid `mode` argument:", mode)
        distribution = distribution.lower()
        if distribution not in {"normal", "uniform", "truncated_normal", "untruncated_normal"}:
            raise ValueError("Invalid `distribution` argument:", distribution)
        self.scale, self.mode, self.distribution, self.seed = scale, mode, distribution, seed

    def _spec(self, shape):
        fan_in, fan_out = _compute_fans(shape)
        fan = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.}
        scale = self.scale / max(1., fan[self.mode])
        if self.distribution in ("normal", "truncated_normal"):
            stddev = math.sqrt(scale) / .87962566103423978
            return truncated_normal_initializer(0.0, stddev, self.seed)._spec(shape)
        if self.distribution == "untruncated_normal":
            return random_normal_initializer(0.0, math.sqrt(scale), self.seed)._spec(shape)
        limit = math.sqrt(3.0 * scale)
        return random_uniform_initializer(-limit, limit, self.seed)._spec(shape)


class glorot_uniform_initializer(variance_scaling_initializer):
    """U(-l, l), l = sqrt(6 / (fan_in + fan_out)); the engine's own stream
    draws it as the trainer's CT_INIT_GLOROT_UNIFORM."""
    def __init__(self, seed=None, dtype=fw.float32):
        variance_scaling_initializer.__init__(self, 1.0, "fan_avg", "uniform", seed)

    def _spec(self, shape):
        fan_in, fan_out = _compute_fans(shape)
        limit = math.sqrt(3.0 * (1.0 / max(1., (fan_in + fan_out) / 2.)))
        low, high = np.float32(-limit), np.float32(limit)
        return (_tensorflow_spec(_TF_UNIFORM, high - low, low, self.seed) or
                _Spec(_GLOROT_UNIFORM, 0.0, self.seed, None))


class glorot_normal_initializer(variance_scaling_initializer):
    def __init__(self, seed=None, dtype=fw.float32):
        variance_scaling_initializer.__init__(self, 1.0, "fan_avg", "truncated_normal", seed)


def _initializer_spec(initializer, shape):
    if initializer is None:  # TensorFlow's default: glorot_uniform_initializer()
        return glorot_uniform_initializer()._spec(shape)
    if isinstance(initializer, type) and issubclass(initializer, Initializer):
        initializer = initializer()
    if isinstance(initializer, Initializer):
        return initializer._spec(shape)
    if isinstance(initializer, Tensor):
        return _ZEROS, 0.0, None, initializer
    return constant_initializer(initializer)._spec(shape)


# ---- variables -------------------------------------------------------------------------

class Variable:
    """A trainable (or not) float32 variable of the graph."""

    def __init__(self, initial_value=None, trainable=True, collections=None, name=None,
                 dtype=None, expected_shape=None, validate_shape=True, _spec=None, _shape=None,
                 _full_name=None):
        graph = get_default_graph()
        self._graph = graph
        if _spec is None:  # tf.Variable(initial_value): a value, computed by its initializer
            if initial_value is None:
                raise ValueError("initial_value must be specified.")
            if callable(initial_value):
                initial_value = initial_value()
            if isinstance(initial_value, Variable):
                initial_value = initial_value._read
            if isinstance(initial_value, Tensor):
                value = initial_value
            else:
                value = np.asarray(initial_value, dtype=np.float32)
            shape = value.shape.as_list() if isinstance(value, Tensor) else list(value.shape)
            if value is not None and isinstance(value, Tensor) and not value.shape.is_fully_defined():
                raise ValueError("initial_value must have a shape specified: %s" % value)
            spec = _spec_of_value(value)
            full = base = graph.unique_name(name or "Variable", mark_as_used=False)
            k = 0
            while full in graph._variable_store:
                k += 1
                full = "%s_%d" % (base, k)
        else:
            spec, shape, full = _spec, _shape, _full_name
        kind, value, seed, initial, mean = _Spec(*spec)
        # the read node is named as the variable ("conv1/weights"): built in its parent scope
        parent = full.rsplit("/", 1)[0] if "/" in full else ""
        saved = graph._name_scope
        graph._set_name_scope(parent)
        try:
            out, index = graph._c.variable(full, [int(d) for d in shape], kind, value, mean,
                                           builtins_bool(trainable), seed)
        finally:
            graph._set_name_scope(saved)
        self._read = graph._built(out, rename=False)
        self._index = index
        self._name = full
        self._trainable = builtins_bool(trainable)
        self._initial = initial
        self._initializer_op = None
        graph._variable_store[full] = self
        graph._variable_by_index[index] = self
        if initial is not None:
            graph._value_variables.append(self)
        for key in (collections if collections is not None else [GraphKeys.GLOBAL_VARIABLES]):
            graph.add_to_collection(key, self)
        if self._trainable and GraphKeys.TRAINABLE_VARIABLES not in (collections or []):
            graph.add_to_collection(GraphKeys.TRAINABLE_VARIABLES, self)

    # -- what TensorFlow's Variable has --
    @property
    def name(self):
        return self._name + ":0"

    @property
    def op(self):
        return self._read.op

    @property
    def graph(self):
        return self._graph

    @property
    def dtype(self):
        return fw.float32

    @property
    def shape(self):
        return self._read.shape

    @property
    def device(self):
        return self._read.op.device

    @property
    def trainable(self):
        return self._trainable

    def get_shape(self):
        return self._read.shape

    def value(self):
        return self._read

    def read_value(self):
        return _ops.identity(self._read)

    def _output(self, graph):
        return self._read._output(graph)

    def _index_in(self, graph):
        """The C graph's index of the variable, which must be of `graph`."""
        fw._check_graph(self, graph)
        return self._index

    @property
    def _id(self):
        return self._read._id

    @property
    def initial_value(self):
        return self._initial if isinstance(self._initial, Tensor) else None

    @property
    def initializer(self):
        if self._initializer_op is None:
            graph = self._graph
            with graph.as_default(), graph.control_dependencies(None):
                with graph.name_scope(self._name + "/"):
                    if self._initial is None:  # the engine's initializer, run by a hook
                        op = _ops.group(name="Initializer")
                        index = self._index
                        graph._add_run_hook(
                            op._id, lambda s, feeds: s._c.initialize_variable(index))
                    else:
                        initial = self._initial if isinstance(self._initial, Tensor) else \
                            fw.constant(self._initial, name="initial_value")
                        op = self.assign(initial).op
                        index = self._index
                        graph._add_run_hook(  # the session need not give it its value first
                            op._id, lambda s, feeds: s._given_values.add(index))
            self._initializer_op = op
        return self._initializer_op

    def assign(self, value, use_locking=None, name=None, read_value=True):
        graph = self._graph
        with graph.as_default():
            value = fw.convert_to_tensor(value, dtype=fw.float32)
            return graph._built(graph._c.binary(_ops._ASSIGN, self._read._output(graph),
                                                value._output(graph)), name)

    def assign_add(self, delta, use_locking=None, name=None, read_value=True):
        return self.assign(_ops.add(self._read, delta), name=name)

    def assign_sub(self, delta, use_locking=None, name=None, read_value=True):
        return self.assign(_ops.subtract(self._read, delta), name=name)

    def eval(self, session=None):
        return self._read.eval(session=session)

    def load(self, value, session=None):
        from ctower.compat.v1._session import _session_for
        _session_for(session, self._graph)._assign(self, value)

    def __repr__(self):
        return "<tf.Variable '%s' shape=%s dtype=float32_ref>" % (self.name, self.shape)


builtins_bool = type(True)


def _spec_of_value(value):
    return (_ZEROS, 0.0, None, value)


# the operators of Variable read it
for _name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
              "__truediv__", "__rtruediv__", "__matmul__", "__rmatmul__", "__neg__",
              "__pow__", "__rpow__", "__gt__", "__lt__", "__ge__", "__le__", "__getitem__"):
    setattr(Variable, _name, (lambda n: lambda self, *a: getattr(self._read, n)(*a))(_name))
Variable.__array_priority__ = 100


# ---- variable scopes -------------------------------------------------------------------

AUTO_REUSE = "AUTO_REUSE"


class VariableScope:
    def __init__(self, reuse, name="", initializer=None, regularizer=None,
                 name_scope=""):
        self._name = name
        self._reuse = reuse
        self.initializer = initializer
        self.regularizer = regularizer
        self.original_name_scope = name_scope

    @property
    def name(self):
        return self._name

    @property
    def reuse(self):
        return self._reuse

    def reuse_variables(self):
        self._reuse = True

    def set_initializer(self, initializer):
        self.initializer = initializer

    def get_variable(self, name, *args, **kwargs):
        return get_variable(name, *args, **kwargs)


def get_variable_scope():
    graph = get_default_graph()
    if graph._var_scope is None:
        graph._var_scope = VariableScope(False)
    return graph._var_scope


@contextlib.contextmanager
def variable_scope(name_or_scope, default_name=None, values=None, initializer=None,
                   regularizer=None, caching_device=None, partitioner=None, custom_getter=None,
                   reuse=None, dtype=None, use_resource=None, constraint=None,
                   auxiliary_name_scope=True):
    """TensorFlow's variable_scope. A default_name is made unique as
    TensorFlow makes it: `dense`, then `dense_1`, ... among the scopes opened
    under the current variable scope since it was itself opened (leaving a
    scope forgets the counts of the scopes under it, so a model function
    run twice under `variable_scope('model', reuse=True)` finds
    `model/dense` again), and its name scope is name_scope(default_name)."""
    graph = get_default_graph()
    outer = get_variable_scope()
    counts = graph._variable_scope_counts
    if isinstance(name_or_scope, VariableScope):
        full = name_or_scope.name
        inherited = name_or_scope.reuse
        scope_name = full.rsplit("/", 1)[-1] if full else ""
        name_initializer = name_or_scope.initializer
    else:
        base = name_or_scope if name_or_scope is not None else default_name
        if base is None:
            raise TypeError("If default_name is None then name_or_scope is required")
        if not isinstance(base, str):
            raise TypeError("VariableScope: name_or_scope must be a string or VariableScope.")
        scope_name = base
        if name_or_scope is None:  # default_name: made unique among the variable scopes
            prefix = outer.name + "/" if outer.name else ""
            k, candidate = 0, base
            while counts.get(prefix + candidate, 0):
                k += 1
                candidate = "%s_%d" % (base, k)
            base = candidate
        full = outer.name + "/" + base if outer.name else base
        inherited = outer.reuse
        name_initializer = outer.initializer
    counts[full] = counts.get(full, 0) + 1
    saved_counts = dict(counts) if isinstance(name_or_scope, VariableScope) else None
    new_reuse = True if inherited is True else reuse if reuse is not None else inherited
    if reuse is AUTO_REUSE or inherited is AUTO_REUSE:
        new_reuse = AUTO_REUSE if reuse is not True and inherited is not True else True
    scope = VariableScope(new_reuse, full, initializer or name_initializer, regularizer)
    graph._var_scope = scope
    try:
        if auxiliary_name_scope and scope_name:
            with graph.name_scope(scope_name) as ns:
                scope.original_name_scope = ns
                yield scope
        else:
            yield scope
    finally:
        graph._var_scope = outer
        if saved_counts is not None:  # a scope reopened: the counts as they were inside it
            counts.clear()
            counts.update(saved_counts)
        else:
            inside = full + "/"
            for key in counts:
                if key.startswith(inside):
                    counts[key] = 0


def get_variable(name, shape=None, dtype=None, initializer=None, regularizer=None,
                 trainable=None, collections=None, caching_device=None, partitioner=None,
                 validate_shape=True, use_resource=None, custom_getter=None, constraint=None):
    graph = get_default_graph()
    scope = get_variable_scope()
    full = scope.name + "/" + name if scope.name else name
    existing = graph._variable_store.get(full)
    if existing is not None:
        if scope.reuse is False or scope.reuse is None:
            raise ValueError("Variable %s already exists, disallowed. Did you mean to set "
                             "reuse=True or reuse=tf.AUTO_REUSE in VarScope?" % full)
        if shape is not None and not existing.shape.is_compatible_with(shape):
            raise ValueError("Trying to share variable %s, but specified shape %s and found "
                             "shape %s." % (full, fw.TensorShape(shape), existing.shape))
        return existing
    if scope.reuse is True:
        raise ValueError("Variable %s does not exist, or was not created with "
                         "tf.get_variable(). Did you mean to set reuse=tf.AUTO_REUSE in "
                         "VarScope?" % full)
    if dtype is not None and fw.as_dtype(dtype) is not fw.float32:
        raise TypeError("ctower's variables are float32, not %s" % fw.as_dtype(dtype).name)
    initializer = initializer if initializer is not None else scope.initializer
    if isinstance(initializer, Tensor) or (initializer is not None and not callable(initializer)
                                           and not isinstance(initializer, Initializer)):
        value = initializer if isinstance(initializer, Tensor) else np.asarray(initializer,
                                                                               np.float32)
        shape = value.shape.as_list() if isinstance(value, Tensor) else list(value.shape)
        spec = (_ZEROS, 0.0, None, value) if isinstance(value, Tensor) else \
            constant_initializer(value)._spec(shape)
    else:
        if shape is None:
            raise ValueError("Shape of a new variable (%s) must be fully defined, but instead "
                             "was None." % full)
        shape = fw._known_dims(shape, "a new variable (%s)" % full)
        spec = _initializer_spec(initializer, shape)
    v = Variable(trainable=True if trainable is None else trainable, collections=collections,
                 _spec=spec, _shape=shape, _full_name=full)
    regularizer = regularizer if regularizer is not None else scope.regularizer
    if regularizer is not None:
        with graph.name_scope(full + "/Regularizer/"):
            loss = regularizer(v)
        if loss is not None:
            graph.add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss)
    return v


# ---- collections of variables ------------------------------------------------------------

def global_variables(scope=None):
    return get_default_graph().get_collection(GraphKeys.GLOBAL_VARIABLES, scope)


def trainable_variables(scope=None):
    return get_default_graph().get_collection(GraphKeys.TRAINABLE_VARIABLES, scope)


def local_variables(scope=None):
    return get_default_graph().get_collection(GraphKeys.LOCAL_VARIABLES, scope)


def model_variables(scope=None):
    return get_default_graph().get_collection(GraphKeys.MODEL_VARIABLES, scope)


def _all_engine_variables(graph):
    """Every variable of the C graph, optimizer slots included (they are
    created by the engine, not by Python)."""
    out = []
    for index, (name, shape, trainable) in enumerate(graph._c.variables()):
        v = graph._variable_by_index.get(index)
        if v is None:
            v = _EngineVariable(graph, index, name, shape, trainable)
            graph._variable_by_index[index] = v
        out.append(v)
    return out


class _EngineVariable(Variable):
    """A variable the engine made (an optimizer's slot), seen from Python."""

    def __init__(self, graph, index, name, shape, trainable):
        self._graph = graph
        self._index = index
        self._name = name
        self._trainable = builtins_bool(trainable)
        self._initial = None
        self._initializer_op = None
        with graph.as_default():
            self._read = graph._built(graph._c.variable_read(index), rename=False)


def variables_initializer(var_list, name="init"):
    var_list = list(var_list)
    for v in var_list:
        if not isinstance(v, Variable):
            raise TypeError("variables_initializer takes Variables, not %r" % (v,))
    graph = var_list[0].graph if var_list else get_default_graph()
    with graph.as_default():
        return _ops.group(*[v.initializer for v in var_list], name=name)


def global_variables_initializer():
    graph = get_default_graph()
    return variables_initializer(_all_engine_variables(graph), name="init")


def local_variables_initializer():
    return _ops.no_op(name="init_1")


def initialize_all_variables():
    return global_variables_initializer()
