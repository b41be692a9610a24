"""Graphs, tensors, operations, dtypes and scopes, as TensorFlow 1.x names
them, over ctower's graph (ctower._ctower.Graph, include/ctower/graph.h).

A Graph holds a ct_graph; a Tensor is one output of one of its nodes (node
id, output index); an Operation is a node. Name scopes, device scopes and
control dependencies live here and are handed to the C graph as each node is
built; the nodes' names, shapes and dtypes are the engine's.
"""
import contextlib
import threading

import numpy as np

from ctower import _ctower
from ctower import errors


# ---- dtypes --------------------------------------------------------------------------------

class DType:
    """A tensor's element type. `code` is ctower's ct_dtype (None: not one ctower has)."""

    def __init__(self, name, np_dtype, code):
        self.name = name
        self.as_numpy_dtype = np_dtype
        self._code = code

    @property
    def base_dtype(self):
        return self

    @property
    def is_floating(self):
        return self.name.startswith("float")

    @property
    def is_integer(self):
        return self.name.startswith("int") or self.name.startswith("uint")

    def __repr__(self):
        return "tf.%s" % self.name

    def __reduce__(self):
        return (as_dtype, (self.name,))


float32 = DType("float32", np.float32, 0)
int32 = DType("int32", np.int32, 1)
int64 = DType("int64", np.int64, 2)
uint8 = DType("uint8", np.uint8, 3)
bool = DType("bool", np.bool_, 3)  # held by the engine as u8 0 or 1
float64 = DType("float64", np.float64, None)
float16 = DType("float16", np.float16, None)
string = DType("string", np.object_, None)
_BY_CODE = {0: float32, 1: int32, 2: int64, 3: uint8}
_ALL = {d.name: d for d in (float32, int32, int64, uint8, bool, float64, float16, string)}
_ALL.update(float=float32, double=float64, half=float16)  # TensorFlow's other names


def as_dtype(value):
    """A DType from a DType, its name, or a NumPy dtype."""
    if isinstance(value, DType):
        return value
    if isinstance(value, str) and value in _ALL:
        return _ALL[value]
    try:
        name = np.dtype(value).name
    except TypeError:
        raise TypeError("Cannot convert value %r to a TensorFlow DType." % (value,))
    if name in _ALL:
        return _ALL[name]
    raise TypeError("Cannot convert value %r to a TensorFlow DType." % (value,))


def _engine_dtype(dtype, what):
    """The DType the engine computes in for a requested one."""
    dtype = as_dtype(dtype)
    if dtype._code is None:
        raise TypeError("%s: ctower has no %s tensors (it computes in float32, int32, int64, "
                        "uint8 and bool)" % (what, dtype.name))
    return dtype


# ---- shapes --------------------------------------------------------------------------------

class Dimension:
    def __init__(self, value):
        self.value = value

    def __int__(self):
        return self.value

    def __index__(self):
        return self.value

    def __eq__(self, other):
        other = other.value if isinstance(other, Dimension) else other
        return self.value == other

    def __hash__(self):
        return hash(self.value)

    def __repr__(self):
        return "Dimension(%s)" % self.value

    def __str__(self):
        return "?" if self.value is None else str(self.value)


def _dimension_value(d):
    """A dimension as TensorFlow's Dimension takes it: None, or an integer >= 0."""
    if isinstance(d, Dimension):
        d = d.value
    if d is None:
        return None
    if not hasattr(d, "__index__"):
        raise TypeError("Dimension value must be integer or None or have an __index__ method, "
                        "got value %r with type %r" % (d, type(d)))
    value = int(d.__index__())
    if value < 0:
        raise ValueError("Dimension %d must be >= 0 (None is a dimension of any size)" % value)
    return value


class TensorShape:
    """A static shape: dims are ints, None where unknown."""

    def __init__(self, dims):
        if isinstance(dims, TensorShape):
            dims = dims._dims
        if dims is not None and not hasattr(dims, "__iter__"):
            dims = [dims]  # TensorFlow reads a bare int as a rank-1 shape
        self._dims = None if dims is None else [_dimension_value(d) for d in dims]

    @classmethod
    def _from_engine(cls, dims):
        """The shape the engine reports: -1 where a dimension is unknown."""
        return cls(None if dims is None else [None if d < 0 else d for d in dims])

    @property
    def ndims(self):
        return None if self._dims is None else len(self._dims)

    @property
    def dims(self):
        return None if self._dims is None else [Dimension(d) for d in self._dims]

    def as_list(self):
        if self._dims is None:
            raise ValueError("as_list() is not defined on an unknown TensorShape.")
        return list(self._dims)

    def is_fully_defined(self):
        return self._dims is not None and all(d is not None for d in self._dims)

    def num_elements(self):
        if not self.is_fully_defined():
            return None
        return int(np.prod(self._dims, dtype=np.int64))

    def is_compatible_with(self, other):
        other = TensorShape(other)
        if self._dims is None or other._dims is None:
            return True
        return len(self._dims) == len(other._dims) and all(
            a is None or b is None or a == b for a, b in zip(self._dims, other._dims))

    def __len__(self):
        return len(self._dims)

    def __iter__(self):
        return iter(Dimension(d) for d in self._dims)

    def __getitem__(self, key):
        if isinstance(key, slice):
            return TensorShape(self._dims[key])
        return Dimension(self._dims[key])

    def __eq__(self, other):
        try:
            return self._dims == TensorShape(other)._dims
        except TypeError:
            return NotImplemented

    def __repr__(self):
        return "TensorShape(%s)" % self._dims

    def __str__(self):
        if self._dims is None:
            return "<unknown>"
        if len(self._dims) == 1:
            return "(%s,)" % ("?" if self._dims[0] is None else self._dims[0])
        return "(%s)" % ", ".join("?" if d is None else str(d) for d in self._dims)


def _known_dims(shape, what):
    """The dims of a shape that must be fully known (a constant's, a new
    variable's): integers >= 0, as TensorFlow's Dimension takes them."""
    shape = TensorShape(shape)
    if not shape.is_fully_defined():
        raise ValueError("Shape of %s must be fully defined, but instead was %s." % (what, shape))
    return shape.as_list()


def _c_shape(shape):
    """A shape for the C API: -1 where unknown."""
    return [-1 if d is None else int(d) for d in TensorShape(shape).as_list()]


# ---- tensors and operations ----------------------------------------------------------------

def _check_graph(element, graph):
    """Refuses a Tensor, Operation or Variable of a graph other than `graph`:
    the C graphs know their nodes by index alone."""
    if element.graph is not graph:
        raise ValueError("%r must be from the same graph as the others: it belongs to %r, not "
                         "%r." % (element, element.graph, graph))

class Operation:
    """A node of a graph."""

    def __init__(self, graph, node_id):
        self._graph = graph
        self._id = node_id
        info = graph._c.node(node_id)
        self._name, self._type, self._device = info[0], info[1], info[2]
        self._n_outputs = info[3]

    @property
    def graph(self):
        return self._graph

    @property
    def name(self):
        return self._graph._c.node(self._id)[0]

    @property
    def type(self):
        return self._type

    @property
    def device(self):
        return self._device

    @property
    def inputs(self):
        return [None if i is None else self._graph._tensor(i[0], i[1])
                for i in self._graph._c.node(self._id)[4]]

    @property
    def control_inputs(self):
        return [self._graph._operation(i) for i in self._graph._c.node(self._id)[5]]

    @property
    def outputs(self):
        return [self._graph._tensor(self._id, k) for k in range(self._n_outputs)]

    def values(self):
        return tuple(self.outputs)

    def run(self, feed_dict=None, session=None):
        from ctower.compat.v1._session import _session_for
        _session_for(session, self._graph).run(self, feed_dict)

    def __repr__(self):
        return "<tf.Operation '%s' type=%s>" % (self.name, self._type)


class Tensor:
    """One output of an operation."""

    __array_priority__ = 100  # NumPy defers to our operators

    def __init__(self, graph, node_id, index):
        self._graph = graph
        self._id = node_id
        self._index = index
        shape, code = graph._c.output_info((node_id, index))
        self._shape = TensorShape._from_engine(None if node_id in graph._open_ranks else shape)
        self._dtype = _BY_CODE[code]

    @property
    def graph(self):
        return self._graph

    @property
    def op(self):
        return self._graph._operation(self._id)

    @property
    def name(self):
        return "%s:%d" % (self._graph._c.node(self._id)[0], self._index)

    @property
    def value_index(self):
        return self._index

    @property
    def dtype(self):
        return self._dtype

    @property
    def shape(self):
        if self._shape.ndims is None and self._id not in self._graph._open_ranks:
            shape = self._graph._c.output_info(self._output(self._graph))[0]
            self._shape = TensorShape._from_engine(shape)
        return self._shape

    @property
    def device(self):
        return self.op.device

    def get_shape(self):
        return self.shape

    def set_shape(self, shape):
        _take_rank(self, shape)
        if not self.shape.is_compatible_with(shape):
            raise ValueError("Shapes %s and %s are incompatible" % (self._shape, TensorShape(shape)))

    def consumers(self):
        out = []
        for i in range(self._graph._c.node_count()):
            if (self._id, self._index) in self._graph._c.node(i)[4]:
                out.append(self._graph._operation(i))
        return out

    def eval(self, feed_dict=None, session=None):
        from ctower.compat.v1._session import _session_for
        return _session_for(session, self._graph).run(self, feed_dict)

    def _output(self, graph):
        """(node id, output index) for a builder or a run of `graph`: a
        tensor of another graph is refused, as TensorFlow refuses it."""
        _check_graph(self, graph)
        if self._id in self._graph._open_ranks:
            raise ValueError(
                "Placeholder %r was made without a shape, and ctower needs the rank of an op's "
                "inputs when it builds the op: it gives such a placeholder the rank of its "
                "first use where that use tells it (elementwise arithmetic with a tensor of "
                "known rank, matmul, conv2d, pooling, dropout's keep_prob, a fed value), and "
                "this op does not. Give the placeholder a shape, e.g. "
                "tf.placeholder(tf.float32, shape=[None, 784]) (None: a dimension of any "
                "size; shape=[] for a scalar), or call set_shape on it first." % self.name)
        return (self._id, self._index)

    def __repr__(self):
        return "<tf.Tensor '%s' shape=%s dtype=%s>" % (self.name, self._shape, self._dtype.name)

    def __bool__(self):
        raise TypeError("Using a `tf.Tensor` as a Python `bool` is not allowed. Use `if t is not "
                        "None:` instead of `if t:` to test if a tensor is defined, and use "
                        "TensorFlow ops such as tf.cond to execute subgraphs conditioned on the "
                        "value of a tensor.")

    def __iter__(self):
        if self._shape.ndims is None or not self._shape.ndims or self._shape[0].value is None:
            raise TypeError("Tensor objects are only iterable when eager execution is enabled "
                            "or the first dimension is known.")
        from ctower.compat.v1 import _ops
        return iter(_ops.unstack(self))

    # the operators are installed by _ops (+ - * / @, unary -, indexing)


# ---- the default graph and scopes ----------------------------------------------------------

class _DefaultStack(threading.local):
    def __init__(self):
        self.stack = []


_graph_stack = _DefaultStack()
_global_default = None


class Graph:
    """A TensorFlow graph over a ct_graph."""

    def __init__(self):
        self._c = _ctower.Graph()
        self._name_scope = ""
        self._scope_names = set()
        self._device_stack = []
        self._control_stack = []
        self._ops = {}
        self._collections = {}
        self._seed = None
        self._seed_count = 0           # seedless random ops so far: their op seeds (_random)
        self._trainer_streams = False  # initializers draw as `ctower train` (ctower.trainer_streams)
        self._variable_store = {}      # full name -> Variable
        self._variable_scope_counts = {}  # variable scope's full name -> times opened
        self._variable_by_index = {}   # C index -> Variable
        self._run_hooks = {}           # node id -> hook(session, feed_dict), run before a run of it
        self._hook_cache = {}
        self._open_ranks = set()       # placeholders made without a shape, no rank yet
        self._ranked_on_use = set()    # those that took their rank where first used
        self._finalized = False
        self._var_scope = None         # the current VariableScope (set by _variables)
        self._value_variables = []     # Variables whose initial value is a value, as made
        self._lock = threading.RLock()

    # -- elements --
    def _tensor(self, node_id, index=0):
        return Tensor(self, node_id, index)

    def _operation(self, node_id):
        op = self._ops.get(node_id)
        if op is None:
            op = self._ops[node_id] = Operation(self, node_id)
        return op

    def get_operations(self):
        return [self._operation(i) for i in range(self._c.node_count())]

    def get_operation_by_name(self, name):
        node = self._c.find(name)
        if node < 0:
            raise KeyError("The name %r refers to an Operation not in the graph." % name)
        return self._operation(node)

    def get_tensor_by_name(self, name):
        if ":" not in name:
            raise ValueError("The name %r looks a like an Operation name, not a Tensor. Tensor "
                             "names must be of the form \"<op_name>:<output_index>\"." % name)
        op_name, index = name.rsplit(":", 1)
        op = self.get_operation_by_name(op_name)
        index = int(index)
        if index >= op._n_outputs:
            raise KeyError("The name %r refers to a Tensor which does not exist. The operation, "
                           "%r, exists but only has %d outputs." % (name, op_name, op._n_outputs))
        return self._tensor(op._id, index)

    def as_graph_element(self, obj, allow_tensor=True, allow_operation=True):
        from ctower.compat.v1._variables import Variable
        if isinstance(obj, Variable):
            obj = obj._read
        if isinstance(obj, (Tensor, Operation)):
            if obj.graph is not self:
                raise ValueError("%s is not an element of this graph." % (obj,))
            if isinstance(obj, Tensor) and not allow_tensor:
                raise ValueError("Can not convert a Tensor into an Operation.")
            if isinstance(obj, Operation) and not allow_operation:
                raise ValueError("Can not convert an Operation into a Tensor.")
            return obj
        if isinstance(obj, str):
            if ":" in obj and allow_tensor:
                return self.get_tensor_by_name(obj)
            if allow_operation:
                return self.get_operation_by_name(obj)
        raise TypeError("Can not convert a %s into a %s." % (type(obj).__name__,
                        "Tensor or Operation" if allow_operation else "Tensor"))

    # -- collections --
    def add_to_collection(self, name, value):
        self._collections.setdefault(name, []).append(value)

    def add_to_collections(self, names, value):
        for name in ([names] if isinstance(names, str) else names):
            self.add_to_collection(name, value)

    def get_collection(self, name, scope=None):
        items = list(self._collections.get(name, []))
        if scope is None:
            return items
        import re
        pattern = re.compile(scope)
        return [x for x in items if hasattr(x, "name") and pattern.match(x.name)]

    def get_collection_ref(self, name):
        return self._collections.setdefault(name, [])

    def get_all_collection_keys(self):
        return list(self._collections)

    # -- seed, finalize --
    @property
    def seed(self):
        return self._seed

    @seed.setter
    def seed(self, value):
        self._seed = value
        self._c.set_seed(0 if value is None else int(value))

    def finalize(self):
        self._finalized = True

    @property
    def finalized(self):
        return self._finalized

    # -- defaults --
    @contextlib.contextmanager
    def as_default(self):
        _graph_stack.stack.append(self)
        try:
            yield self
        finally:
            _graph_stack.stack.pop()

    # -- name scopes --
    def _unique_scope(self, name):
        full = self._name_scope + "/" + name if self._name_scope else name
        candidate, k = full, 1
        while candidate in self._scope_names or self._c.find(candidate) >= 0:
            candidate = "%s_%d" % (full, k)
            k += 1
        self._scope_names.add(candidate)
        return candidate

    def unique_name(self, name, mark_as_used=True):
        full = self._name_scope + "/" + name if self._name_scope else name
        candidate, k = full, 1
        while candidate in self._scope_names or self._c.find(candidate) >= 0:
            candidate = "%s_%d" % (full, k)
            k += 1
        if mark_as_used:
            self._scope_names.add(candidate)
        return candidate

    def get_name_scope(self):
        return self._name_scope

    def _set_name_scope(self, scope):
        self._c.set_name_scope(scope, builtins_bool(self._name_scope))
        self._name_scope = scope

    @contextlib.contextmanager
    def name_scope(self, name):
        """TensorFlow's name_scope: a new unique scope under the current one; a
        name ending in '/' is taken as it is; None or '' returns to the top."""
        old = self._name_scope
        if name is None or name == "":
            new = ""
        elif not isinstance(name, str):
            raise TypeError("A name scope is a string, not %s" % type(name).__name__)
        elif name.endswith("/"):
            new = name[:-1]
        else:
            new = self._unique_scope(name)
        self._set_name_scope(new)
        try:
            yield new + "/" if new else ""
        finally:
            self._set_name_scope(old)

    # -- devices --
    @contextlib.contextmanager
    def device(self, device_name_or_function):
        spec = device_name_or_function
        if callable(spec):
            raise NotImplementedError("device functions are not supported by ctower; give a "
                                      "device name such as '/gpu:0'")
        spec = "" if spec is None else str(spec)
        self._c.push_device(spec)
        self._device_stack.append(spec)
        try:
            yield
        finally:
            self._device_stack.pop()
            self._c.pop_device()

    # -- control dependencies --
    @contextlib.contextmanager
    def control_dependencies(self, control_inputs):
        if control_inputs is None:
            saved, self._control_stack = self._control_stack, []
            try:
                yield
            finally:
                self._control_stack = saved
            return
        ops = []
        for c in control_inputs:
            c = _as_op(self, c)
            if c is not None:
                ops.append(c)
        self._control_stack.append(ops)
        try:
            yield
        finally:
            self._control_stack.pop()

    # -- building --
    def _built(self, output, name=None, rename=True):
        """The Tensor for a builder's output tuple: renamed to `name` (TF's
        name=) and given the control dependencies in force."""
        node_id, index = output
        if self._finalized:
            raise RuntimeError("Graph is finalized and cannot be modified.")
        if name and rename:
            self._c.rename(node_id, name)
        for ops in self._control_stack:
            for op in ops:
                self._c.add_control_input(node_id, op._id)
        self._hook_cache.clear()
        return self._tensor(node_id, index)

    def _add_run_hook(self, node_id, hook):
        """hook(session, feed_dict), called before each run that runs the
        node, returns extra feeds (or None)."""
        self._run_hooks[node_id] = hook
        self._hook_cache.clear()

    def _hooks_for(self, node_ids):
        """The run hooks of the nodes a run of node_ids runs (inputs and
        control inputs, followed back), cached per request."""
        if not self._run_hooks:
            return ()
        key = (tuple(node_ids), self._c.node_count())
        hooks = self._hook_cache.get(key)
        if hooks is None:
            seen, stack, found = set(), list(node_ids), []
            while stack:
                n = stack.pop()
                if n in seen:
                    continue
                seen.add(n)
                if n in self._run_hooks:
                    found.append(n)
                info = self._c.node(n)
                stack.extend(i[0] for i in info[4] if i is not None)
                stack.extend(info[5])
            # a hook shared by several nodes (a dequeue's placeholders) runs once
            hooks = tuple(dict.fromkeys(self._run_hooks[n] for n in sorted(found)))
            self._hook_cache[key] = hooks
        return hooks


builtins_bool = type(True)


def get_default_graph():
    global _global_default
    if _graph_stack.stack:
        return _graph_stack.stack[-1]
    if _global_default is None:
        _global_default = Graph()
    return _global_default


def reset_default_graph():
    global _global_default
    if _graph_stack.stack:
        raise AssertionError("Do not use tf.reset_default_graph() to clear nested graphs. If "
                             "you need a cleared graph, exit the nesting and create a new graph.")
    _global_default = Graph()


def _as_op(graph, x):
    from ctower.compat.v1._variables import Variable
    if x is None:
        return None
    if isinstance(x, Variable):
        x = x._read
    if isinstance(x, Tensor):
        x = x.op
    if not isinstance(x, Operation):
        raise TypeError("Can not convert a %s into an Operation." % type(x).__name__)
    if x.graph is not graph:
        raise ValueError("%s must be from the same graph as the others." % (x,))
    return x


# ---- conversion ---------------------------------------------------------------------------

def _numpy_value(value, dtype=None):
    """A NumPy array of the engine's dtype for a Python or NumPy value; a
    value the dtype cannot hold (2**70, infinity as an integer) is a ValueError."""
    try:
        return _numpy_value_of(value, dtype)
    except OverflowError as e:
        raise ValueError("Cannot make a tensor of %s from %.80r: %s"
                         % ("its values" if dtype is None else dtype, value, e))


def _numpy_value_of(value, dtype):
    if value is None or (isinstance(value, (list, tuple)) and
                         np.asarray(value, dtype=object).dtype == object and
                         any(v is None for v in np.asarray(value, dtype=object).reshape(-1))):
        raise ValueError("None values not supported.")
    if dtype is not None:
        dtype = _engine_dtype(dtype, "constant")
        return np.asarray(value, dtype=dtype.as_numpy_dtype), dtype
    array = np.asarray(value)
    if array.dtype == np.bool_:
        return array, bool
    if array.dtype.kind == "f":
        return array.astype(np.float32, copy=False), float32
    if array.dtype == np.int64 and not isinstance(value, np.ndarray):
        # Python ints become int32 as in TensorFlow, unless they need more
        if array.size == 0 or (array.min() >= -2**31 and array.max() < 2**31):
            return array.astype(np.int32), int32
        return array, int64
    if array.dtype.kind in "iu":
        dt = as_dtype(array.dtype.name) if array.dtype.name in _ALL else int64
        if dt._code is None:
            dt = int64
        return array.astype(dt.as_numpy_dtype, copy=False), dt
    raise TypeError("ctower cannot hold a constant of NumPy dtype %s" % array.dtype)


def _host_array(dims, make):
    """make() (a NumPy array of shape dims), or ResourceExhaustedError when the
    host cannot hold it: a constant is kept in host memory as it is built."""
    try:
        return make()
    except MemoryError:
        raise errors.ResourceExhaustedError(
            None, None, "A constant of shape %s does not fit in host memory" % (list(dims),))


def constant(value, dtype=None, shape=None, name="Const", verify_shape=False):
    graph = get_default_graph()
    array, dtype = _numpy_value(value, dtype)
    if shape is not None:
        shape = _known_dims(shape, "a constant")
        if array.size == 1 and int(np.prod(shape)) != 1:
            array = _host_array(shape, lambda: np.full(shape, array.reshape(()),
                                                       dtype=array.dtype))
        elif array.size == int(np.prod(shape)):
            array = array.reshape(shape)
        elif verify_shape or array.size != 1:
            raise TypeError("Expected Tensor's shape: %s, got %s." % (tuple(shape), array.shape))
    array = np.asarray(array, order="C")
    engine = array.view(np.uint8) if dtype is bool else array
    out = graph._c.constant(name, dtype._code, engine)
    t = graph._built(out, rename=False)
    if dtype is bool:
        t._dtype = bool
    return t


def placeholder(dtype, shape=None, name=None):
    """A placeholder; one made without a shape takes its rank where it is
    first used (_take_rank), as the engine needs every tensor's rank."""
    graph = get_default_graph()
    dtype = _engine_dtype(dtype, "placeholder")
    c_shape = [] if shape is None else _c_shape(shape)
    output = graph._c.placeholder(name or "Placeholder", dtype._code, c_shape)
    if shape is None:
        graph._open_ranks.add(output[0])
    t = graph._built(output, rename=False)
    if dtype is bool:
        t._dtype = bool
    return t


def _take_rank(tensor, shape):
    """Gives `tensor`, when it is a placeholder made without a shape that
    nothing reads yet, the static shape `shape` (a rank: dims of any size):
    its first use fixes its rank, and values fed to it must have that rank."""
    graph = tensor._graph
    if tensor._id not in graph._open_ranks:
        return
    shape = TensorShape(shape)
    graph._c.set_placeholder_shape(tensor._id, _c_shape(shape))
    graph._open_ranks.discard(tensor._id)
    graph._ranked_on_use.add(tensor._id)
    tensor._shape = shape


def _rank_note(tensor):
    """Why a placeholder made without a shape has the rank it has, for
    errors about feeding it."""
    if tensor._id not in tensor._graph._ranked_on_use:
        return ""
    users = tensor.consumers()
    where = ("its first use, %r (%s)" % (users[0].name, users[0].type) if users
             else "the first value fed to it")
    return ("; ctower gave placeholder %r, made without a shape, the rank of %s: give it a "
            "shape (None for a dimension of any size) to feed values of other ranks"
            % (tensor.op.name, where))


def convert_to_tensor(value, dtype=None, name=None, preferred_dtype=None):
    from ctower.compat.v1._variables import Variable
    if isinstance(value, Variable):
        return value._read
    if isinstance(value, Tensor):
        if dtype is not None and as_dtype(dtype) is not value.dtype:
            raise ValueError("Tensor conversion requested dtype %s for Tensor with dtype %s: %r"
                             % (as_dtype(dtype).name, value.dtype.name, value))
        return value
    if isinstance(value, (list, tuple)) and any(isinstance(v, (Tensor, Variable)) for v in value):
        from ctower.compat.v1 import _ops
        return _ops.stack(list(value), name=name or "packed")
    if dtype is None and preferred_dtype is not None:
        try:
            return constant(value, dtype=preferred_dtype, name=name or "Const")
        except (TypeError, ValueError):
            pass
    return constant(value, dtype=dtype, name=name or "Const")
