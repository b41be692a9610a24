"""Host tensors: the per-example part of a TensorFlow 1.x input pipeline
(reader output, decode_raw, slicing, reshape, transpose, cast, the image
ops), which ctower computes with NumPy on the input threads rather than as
engine ops (the engine has no string tensors and no queues).

A HostTensor records one NumPy computation and its inputs, a small DAG.
tf.cast, tf.reshape, tf.transpose, tf.slice, tf.strided_slice, indexing and
the arithmetic operators return a HostTensor when their input is one;
tf.train.batch and its kin (_input.py) evaluate the DAG once per example
and hand the batches to the graph through placeholders.

One evaluation is an Example: it caches each tensor's value, so a reader's
key and value come from the same record, and carries the example's number
(the reader's count of records read), from which each random op draws its
numbers: an example's distortion depends on the seeds and on which record
it is, not on which thread computed it.
"""
import itertools
import operator

import numpy as np

from ctower import errors
from ctower.compat.v1 import _framework as fw
from ctower.compat.v1._framework import TensorShape

# TensorFlow's default graph-level seed when only an op seed is given
_DEFAULT_GRAPH_SEED = 87654321


class Example:
    """One evaluation of the DAG: cached values, the example's number and
    the session's input state (readers' files, producers' epochs)."""

    def __init__(self, state, number=0):
        self.state = state      # _input.SessionState: stateful nodes keep theirs there
        self.number = number    # set by the reader to its record's count
        self.values = {}        # id(HostTensor) -> value


class HostTensor:
    """A tensor of the input pipeline computed on the host, per example:
    compute(example, *input values) gives its value (a NumPy array, or bytes
    for a scalar string)."""

    __array_priority__ = 200  # NumPy defers to our operators
    _names = itertools.count()

    def __init__(self, inputs, compute, shape, dtype, name):
        self._inputs = list(inputs)
        self._compute = compute
        self._shape = shape if isinstance(shape, TensorShape) else TensorShape(shape)
        self._dtype = fw.as_dtype(dtype)
        self._graph = fw.get_default_graph()
        scope = self._graph._name_scope
        self._name = "%s%s_%d" % (scope + "/" if scope else "", name, next(self._names))

    @property
    def graph(self):
        return self._graph

    @property
    def dtype(self):
        return self._dtype

    @property
    def shape(self):
        return self._shape

    def get_shape(self):
        return self._shape

    @property
    def name(self):
        return self._name + ":0"

    @property
    def op(self):
        return None

    def set_shape(self, shape):
        shape = TensorShape(shape)
        if not self._shape.is_compatible_with(shape):
            raise ValueError("Shapes %s and %s are incompatible" % (self._shape, shape))
        if self._shape.ndims is None:
            self._shape = shape
        elif shape.ndims is not None:
            self._shape = TensorShape([a if a is not None else b for a, b in
                                       zip(self._shape.as_list(), shape.as_list())])

    def evaluate(self, example):
        """This tensor's value for the example, checked against its static
        shape (an InvalidArgumentError where it disagrees)."""
        key = id(self)
        if key in example.values:
            return example.values[key]
        args = [t.evaluate(example) if isinstance(t, HostTensor) else t for t in self._inputs]
        try:
            value = self._compute(example, *args)
        except errors.OpError:
            raise
        except (ValueError, IndexError, TypeError) as e:
            raise errors.InvalidArgumentError(None, None, "%s: %s" % (self._name, e))
        if not isinstance(value, (bytes, tuple)):  # a string, a reader's (key, value)
            value = np.asarray(value)
            dims = self._shape.as_list() if self._shape.ndims is not None else None
            if dims is not None and (len(dims) != value.ndim or any(
                    d is not None and d != n for d, n in zip(dims, value.shape))):
                raise errors.InvalidArgumentError(
                    None, None, "%s: a value of shape %s where its shape is %s (set with "
                    "set_shape, or inferred)" % (self._name, list(value.shape), self._shape))
        example.values[key] = value
        return value

    def _host_fetch(self):
        """Session.run of host tensors: one example per run computed in the
        caller's thread (a reader reads its next record), as TensorFlow runs it."""
        from ctower.compat.v1 import _input

        def make(_, run):
            return _input.evaluate_once(self, run)
        make.per_run = True
        return [], make

    def __array__(self, dtype=None):
        raise TypeError("%s is computed per example by the input pipeline on the host; batch "
                        "it with tf.train.batch or tf.train.shuffle_batch to use it in the graph"
                        % self.name)

    def __bool__(self):
        raise TypeError("Using a `tf.Tensor` as a Python `bool` is not allowed.")

    def __repr__(self):
        return "<tf.Tensor '%s' shape=%s dtype=%s (host)>" % (self.name, self._shape,
                                                            self._dtype.name)

    def __getitem__(self, key):
        return getitem(self, key)

    def __neg__(self):
        return _unary(self, operator.neg, "Neg")

    # the binary operators are installed below


def is_host(*values):
    """Whether any of values (or of the tensors in a list among them) is a HostTensor."""
    for v in values:
        if isinstance(v, HostTensor):
            return True
        if isinstance(v, (list, tuple)) and any(isinstance(x, HostTensor) for x in v):
            return True
    return False


def as_host(value, dtype=None):
    """A HostTensor for a host tensor or a Python/NumPy value (a constant)."""
    if isinstance(value, HostTensor):
        return value
    if isinstance(value, fw.Tensor) or hasattr(value, "_read"):
        raise TypeError("%s is a tensor of the graph, computed by the engine: the input "
                        "pipeline's host ops take host tensors (a reader's output and what is "
                        "made of it) or values" % (value,))
    array, dt = fw._numpy_value(value, dtype)
    return HostTensor([], lambda ex: array, array.shape, dt, "Const")


def seeds(graph, seed):
    """(graph seed, op seed) as TensorFlow's get_seed picks them; with neither
    set, fresh entropy (a different sequence per graph built)."""
    graph_seed = getattr(graph, "_seed", None)
    if graph_seed is None and seed is None:
        return tuple(np.random.SeedSequence().generate_state(2))
    if graph_seed is None:
        graph_seed = _DEFAULT_GRAPH_SEED
    if seed is None:
        seed = graph._c.node_count() + next(_op_counter)
    return int(graph_seed), int(seed)


_op_counter = itertools.count()


def rng(op_seeds, example):
    """The generator of a random op for one example: Philox keyed by the
    op's seeds and the example's number."""
    key = (op_seeds[0] & 0xFFFFFFFF) << 32 | op_seeds[1] & 0xFFFFFFFF
    return np.random.Generator(np.random.Philox(key=[key, example.number]))


# ---- shapes ---------------------------------------------------------------------------------

def _dims(x):
    return x.shape.as_list() if x.shape.ndims is not None else None


def _shape_of(make, x):
    """The static shape of make(array of x's shape), unknown dims staying unknown."""
    dims = _dims(x)
    if dims is None:
        return TensorShape(None)
    probe = [7 if d is None else d for d in dims]
    out = make(np.zeros(probe, np.bool_)).shape
    if None in dims:
        probe2 = [11 if d is None else d for d in dims]
        out2 = make(np.zeros(probe2, np.bool_)).shape
        out = [a if a == b else None for a, b in zip(out, out2)]
    return TensorShape(list(out))


# ---- the ops --------------------------------------------------------------------------------

def _unary(x, fn, name, dtype=None):
    return HostTensor([x], lambda ex, v: fn(v), x.shape, dtype or x.dtype, name)


def cast(x, dtype, name=None):
    dtype = fw._engine_dtype(dtype, "cast")
    np_dtype = dtype.as_numpy_dtype
    return _unary(x, lambda v: np.asarray(v).astype(np_dtype), name or "Cast", dtype)


def reshape(x, shape, name=None):
    if isinstance(shape, (fw.Tensor, HostTensor)):
        raise TypeError("ctower takes shapes as Python lists: a shape computed by the graph "
                        "is not supported")
    dims = [-1 if d is None else int(d) for d in shape]
    known = int(np.prod([d for d in dims if d != -1])) if dims else 1

    def compute(ex, v):
        if -1 not in dims and v.size != known:
            raise errors.InvalidArgumentError(
                None, None, "Input to reshape is a tensor with %d values, but the requested "
                "shape has %d" % (v.size, known))
        return v.reshape(dims)
    return HostTensor([x], compute, [None if d == -1 else d for d in dims], x.dtype,
                      name or "Reshape")


def transpose(x, perm=None, name=None):
    rank = x.shape.ndims
    perm = None if perm is None else [int(p) for p in perm]
    if perm is not None and rank is not None and sorted(perm) != list(range(rank)):
        raise ValueError("transpose: perm %s is not a permutation of the %d axes of a tensor of "
                         "rank %d" % (perm, rank, rank))
    dims = _dims(x)
    shape = (None if dims is None else
             [dims[p] for p in perm] if perm is not None else dims[::-1])
    return HostTensor([x], lambda ex, v: np.transpose(v, perm), TensorShape(shape), x.dtype,
                      name or "transpose")


def getitem(x, key):
    keys = key if isinstance(key, tuple) else (key,)
    for k in keys:
        if isinstance(k, (fw.Tensor, HostTensor)):
            raise TypeError("ctower indexes tensors with Python integers, slices, ellipsis and "
                            "tf.newaxis, got %r" % (k,))
    return HostTensor([x], lambda ex, v: v[key], _shape_of(lambda a: a[key], x), x.dtype,
                      "strided_slice")


def strided_slice(x, begin, end, strides=None, begin_mask=0, end_mask=0, ellipsis_mask=0,
                  new_axis_mask=0, shrink_axis_mask=0, name=None):
    """TensorFlow's StridedSlice as NumPy indexing: per index d, begin[d]:end[d]:strides[d]
    (the begin/end masks open a side, shrink_axis takes begin[d] and drops the
    axis, new_axis adds one, ellipsis stands for the axes not indexed)."""
    begin, end = [int(b) for b in begin], [int(e) for e in end]
    strides = [1] * len(begin) if strides is None else [int(s) for s in strides]
    key = []
    for d, (b, e, s) in enumerate(zip(begin, end, strides)):
        bit = 1 << d
        if ellipsis_mask & bit:
            key.append(Ellipsis)
        elif new_axis_mask & bit:
            key.append(None)
        elif shrink_axis_mask & bit:
            key.append(b)
        else:
            key.append(slice(None if begin_mask & bit else b, None if end_mask & bit else e, s))
    key = tuple(key)
    out = getitem(x, key)
    out._name = out._name.replace("strided_slice", name, 1) if name else out._name
    return out


def slice_(x, begin, size, name=None):
    key = tuple(slice(int(b), None if int(s) == -1 else int(b) + int(s))
                for b, s in zip(begin, size))
    return getitem(x, key)


def decode_raw(input_bytes, out_type, little_endian=True, name=None):
    """The bytes of a scalar string as a vector of out_type."""
    out_type = fw._engine_dtype(out_type, "decode_raw")
    dtype = np.dtype(out_type.as_numpy_dtype).newbyteorder("<" if little_endian else ">")
    native = out_type.as_numpy_dtype
    source = as_host(input_bytes) if not isinstance(input_bytes, HostTensor) else input_bytes
    if source.dtype is not fw.string:
        raise TypeError("decode_raw takes a string tensor (a reader's value), not %s"
                        % source.dtype.name)

    def compute(ex, value):
        if len(value) % dtype.itemsize:
            raise errors.InvalidArgumentError(
                None, None, "Input to DecodeRaw has length %d that is not a multiple of %d, the "
                "size of %s" % (len(value), dtype.itemsize, out_type.name))
        return np.frombuffer(value, dtype).astype(native)
    return HostTensor([source], compute, [None], out_type, name or "DecodeRaw")


def _binary(fn, name):
    def op(a, b):
        if isinstance(a, fw.Tensor) or isinstance(b, fw.Tensor):
            return NotImplemented
        x = a if isinstance(a, HostTensor) else None
        y = b if isinstance(b, HostTensor) else None
        like = (x or y).dtype
        if x is not None and y is not None and x.dtype is not y.dtype:
            raise TypeError("%s of host tensors of %s and %s: cast one first"
                            % (name, x.dtype.name, y.dtype.name))
        xa = x if x is not None else as_host(a, like)
        yb = y if y is not None else as_host(b, like)
        np_dtype = like.as_numpy_dtype
        shape = TensorShape(None)
        if xa.shape.ndims is not None and yb.shape.ndims is not None:
            try:
                shape = _broadcast_shape(xa.shape.as_list(), yb.shape.as_list())
            except ValueError:
                raise ValueError("Dimensions must be equal, but are %s and %s for '%s'"
                                 % (xa.shape, yb.shape, name))
        return HostTensor([xa, yb], lambda ex, u, v: fn(u, v).astype(np_dtype, copy=False),
                          shape, like, name)
    return op


def _broadcast_shape(a, b):
    n = max(len(a), len(b))
    a, b = [1] * (n - len(a)) + a, [1] * (n - len(b)) + b
    out = []
    for p, q in zip(a, b):
        if p == 1:
            out.append(q)
        elif q == 1 or q is None or p is None or p == q:
            out.append(p if p is not None else (q if q != 1 else None))
        else:
            raise ValueError("shapes do not broadcast")
    return TensorShape(out)


for _name, _fn, _tf_name in (("add", np.add, "add"), ("sub", np.subtract, "sub"),
                             ("mul", np.multiply, "mul"), ("truediv", np.divide, "truediv")):
    _forward = _binary(_fn, _tf_name)
    setattr(HostTensor, "__%s__" % _name, _forward)
    setattr(HostTensor, "__r%s__" % _name,
            (lambda f: lambda a, b: f(b, a))(_forward))
