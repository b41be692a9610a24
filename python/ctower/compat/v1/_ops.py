"""Math and array ops under TensorFlow 1.x's names, each one of ctower's ops
(include/ctower/ops.h) or a few of them (stack is expand_dims and concat, as
TensorFlow's Pack computes; indexing a StridedSlice and a Reshape). The
operators of Tensor and Variable."""
import operator

import numpy as np

from ctower import _ctower
from ctower.compat.v1 import _framework as fw
from ctower.compat.v1 import _host
from ctower.compat.v1._framework import Tensor, convert_to_tensor, get_default_graph

# the extension's op codes (python/src/graph_ops.c)
(_IDENTITY, _NEG, _RELU, _SIGMOID, _TANH, _ZEROS_LIKE, _ONES_LIKE, _L2_LOSS,
 _STOP_GRADIENT) = range(9)
_ADD, _SUB, _MUL, _DIV, _SPARSE_XENT, _ACCURACY, _ASSIGN, _DROPOUT = range(8)


def _graph_of(*values):
    """The graph the tensors among values share (the default graph when none
    is a tensor): TensorFlow refuses to mix graphs."""
    from ctower.compat.v1._variables import Variable
    graph = None
    for v in values:
        g = v.graph if isinstance(v, (Tensor, Variable, fw.Operation)) else None
        if g is not None:
            if graph is not None and g is not graph:
                raise ValueError("Tensor(s) %s must be from the same graph as the others."
                                 % (v,))
            graph = g
    return graph or get_default_graph()


# for _tensors: the inputs broadcast to the highest rank among them
_BROADCAST = "broadcast"


def _tensors(values, dtype=None, ranks=None):
    """The graph and the tensors for values. `ranks` gives a placeholder
    made without a shape among them the rank this use needs: one per value
    (None: this use does not tell), or _BROADCAST for the highest rank
    among the others; one whose rank stays open is refused."""
    graph = _graph_of(*values)
    out = []
    with graph.as_default():
        first = next((v for v in values if isinstance(v, Tensor) or hasattr(v, "_read")), None)
        like = convert_to_tensor(first).dtype if first is not None and dtype is None else dtype
        for v in values:
            out.append(convert_to_tensor(v, dtype=None if isinstance(v, Tensor) else like))
    if ranks == _BROADCAST:
        known = [t.shape.ndims for t in out if t.shape.ndims is not None]
        ranks = [max(known) if known else None] * len(out)
    for t, rank in zip(out, ranks or [None] * len(out)):
        if rank is not None:
            fw._take_rank(t, [None] * rank)
        t._output(graph)  # refuses a placeholder whose rank is still open
    return graph, out


def _unary(kind, x, name):
    graph, (x,) = _tensors([x])
    return graph._built(graph._c.unary(kind, x._output(graph)), name)


def _binary(kind, x, y, name, ranks=_BROADCAST):
    graph, (x, y) = _tensors([x, y], ranks=ranks)
    return graph._built(graph._c.binary(kind, x._output(graph), y._output(graph)), name)


# TensorFlow's unary math ops that take integers too (tf.round(x) of an
# integer x is x): ctower's kernels are float32 alone
_INTEGER_UNARY_MATH = ("Abs", "Sign", "Square", "Reciprocal")


def _unary_math_function(op, function):
    """tf.<function>(x, name=None): ctower's op `op` (src/ops/unary_math.h)."""
    def unary_math(x, name=None):
        graph, (x,) = _tensors([x])
        if x.dtype is not fw.float32:
            if op == "Round" and x.dtype.is_integer:
                return x
            if x.dtype.is_integer and op not in _INTEGER_UNARY_MATH:
                raise TypeError("Value passed to parameter 'x' has DataType %s not in list of "
                                "allowed values: float16, float32, float64 (tf.%s)"
                                % (x.dtype.name, function))
            raise TypeError("tf.%s of %s: ctower's %s takes float32 only; tf.cast(x, tf.float32) "
                            "first" % (function, x.dtype.name, op))
        return graph._built(graph._c.unary_math(op, x._output(graph)), name)
    unary_math.__name__ = unary_math.__qualname__ = function
    unary_math.__doc__ = "TensorFlow's tf.%s: ctower's elementwise %s of a float32 x." % (
        function, op)
    return unary_math


# {function: tf.<function>} of every unary math op ctower has (tf.exp, tf.log, ...)
unary_math = {function: _unary_math_function(op, function)
              for op, function in _ctower.unary_math_ops()}


def _binary_math_function(op, function):
    """tf.<function>(x, y, name=None): ctower's op `op` (src/ops/binary_math.h),
    x and y broadcast as tf.add's."""
    def binary_math(x, y, name=None):
        graph, (x, y) = _tensors([x, y], ranks=_BROADCAST)
        for t in (x, y):
            if t.dtype is not fw.float32:
                raise TypeError("tf.%s of %s: ctower's %s takes float32 only; "
                                "tf.cast(x, tf.float32) first" % (function, t.dtype.name, op))
        return graph._built(graph._c.binary_math(op, x._output(graph), y._output(graph)), name)
    binary_math.__name__ = binary_math.__qualname__ = function
    binary_math.__doc__ = ("TensorFlow's tf.%s: ctower's elementwise %s of float32 x and y, "
                           "broadcast." % (function, op))
    return binary_math


# {function: tf.<function>} of every binary math op ctower has (tf.maximum, tf.pow, ...)
binary_math = {function: _binary_math_function(op, function)
               for op, function in _ctower.binary_math_ops()}


def _compare_function(op, function):
    """tf.<function>(x, y, name=None): ctower's comparison `op`
    (src/ops/compare.h), a bool tensor; x and y of one shape, or one a scalar."""
    def compare(x, y, name=None):
        graph, (x, y) = _tensors([x, y], ranks=_BROADCAST)
        out = graph._built(graph._c.compare(op, x._output(graph), y._output(graph)), name)
        out._dtype = fw.bool
        return out
    compare.__name__ = compare.__qualname__ = function
    compare.__doc__ = "TensorFlow's tf.%s: ctower's elementwise %s, a bool tensor." % (
        function, op)
    return compare


# {function: tf.<function>} of every comparison but tf.equal (tf.greater, ...)
compare = {function: _compare_function(op, function) for op, function in _ctower.compare_ops()}


def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    """TensorFlow's tf.clip_by_value, composed as TensorFlow composes it:
    maximum(minimum(t, hi), lo), so lo wins where lo > hi, and the gradient
    passes where t is within [lo, hi], at either bound too."""
    high = binary_math["minimum"](t, clip_value_max)
    return binary_math["maximum"](high, clip_value_min, name=name)


def identity(input, name=None):
    return _unary(_IDENTITY, input, name)


def stop_gradient(input, name=None):
    return _unary(_STOP_GRADIENT, input, name or "StopGradient")


def negative(x, name=None):
    return _unary(_NEG, x, name)


def add(x, y, name=None):
    return _binary(_ADD, x, y, name)


def subtract(x, y, name=None):
    return _binary(_SUB, x, y, name)


def multiply(x, y, name=None):
    return _binary(_MUL, x, y, name)


def divide(x, y, name=None):
    return _binary(_DIV, x, y, name)


def truediv(x, y, name=None):
    return _binary(_DIV, x, y, name)


def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False,
           a_is_sparse=False, b_is_sparse=False, name=None):
    graph, (a, b) = _tensors([a, b], ranks=[2, 2])
    out = graph._c.matmul(a._output(graph), b._output(graph), bool(transpose_a or adjoint_a),
                          bool(transpose_b or adjoint_b))
    return graph._built(out, name)


def add_n(inputs, name=None):
    if not inputs:
        raise ValueError("inputs must be a list of at least one Tensor with the same dtype "
                         "and shape")
    graph, xs = _tensors(list(inputs), ranks=_BROADCAST)
    if len(xs) == 1 and not name:
        return xs[0]
    return graph._built(graph._c.add_n([x._output(graph) for x in xs]), name)


def zeros_like(tensor, dtype=None, name=None, optimize=True):
    return _unary(_ZEROS_LIKE, tensor, name)


def ones_like(tensor, dtype=None, name=None, optimize=True):
    return _unary(_ONES_LIKE, tensor, name)


def zeros(shape, dtype=fw.float32, name=None):
    dtype = fw.as_dtype(dtype)
    dims = fw._known_dims(shape, "zeros")
    value = fw._host_array(dims, lambda: np.zeros(dims, dtype.as_numpy_dtype))
    return fw.constant(value, dtype=dtype, name=name or "zeros")


def ones(shape, dtype=fw.float32, name=None):
    dtype = fw.as_dtype(dtype)
    dims = fw._known_dims(shape, "ones")
    value = fw._host_array(dims, lambda: np.ones(dims, dtype.as_numpy_dtype))
    return fw.constant(value, dtype=dtype, name=name or "ones")


def fill(dims, value, name=None):
    dims = fw._known_dims(dims, "fill")
    return fw.constant(fw._host_array(dims, lambda: np.full(dims, value)), name=name or "Fill")


# ---- shapes -------------------------------------------------------------------------------

def _static_shape(shape):
    if isinstance(shape, Tensor):
        raise TypeError("ctower takes shapes as Python lists: a shape computed by the graph "
                        "(%s) is not supported" % shape.name)
    return [-1 if d is None else int(d) for d in shape]


def reshape(tensor, shape, name=None):
    if _host.is_host(tensor): return _host.reshape(tensor, shape, name)  # noqa: E701
    graph, (x,) = _tensors([tensor])
    return graph._built(graph._c.reshape(x._output(graph), _static_shape(shape)), name)


def transpose(a, perm=None, name="transpose", conjugate=False):
    """tf.transpose: output axis d is axis perm[d] of a; perm defaults to the
    axes reversed."""
    if _host.is_host(a): return _host.transpose(a, perm, name)  # noqa: E701
    graph, (x,) = _tensors([a])
    rank = x.shape.ndims
    perm = list(range(rank))[::-1] if perm is None else [int(p) for p in perm]
    if sorted(perm) != list(range(rank)):
        raise ValueError("transpose: perm %s is not a permutation of the %d axes of a tensor of "
                         "rank %d" % (perm, rank, rank))
    return graph._built(graph._c.transpose(x._output(graph), perm), name)


def _axis(axis, rank):
    axis = int(axis)
    if axis < 0:
        axis += rank
    if not 0 <= axis < rank:
        raise ValueError("axis %d is out of range for a tensor of rank %d" % (axis, rank))
    return axis


def expand_dims(input, axis=None, name=None, dim=None):
    axis = dim if axis is None else axis
    graph, (x,) = _tensors([input])
    dims = x.shape.as_list()
    axis = _axis(axis, len(dims) + 1)
    dims.insert(axis, 1)
    if sum(d is None for d in dims) > 1:
        raise ValueError("ctower's expand_dims needs all dimensions but one known, got %s"
                         % x.shape)
    return graph._built(graph._c.reshape(x._output(graph), [-1 if d is None else d for d in dims]),
                        name or "ExpandDims")


def squeeze(input, axis=None, name=None, squeeze_dims=None):
    axis = squeeze_dims if axis is None else axis
    graph, (x,) = _tensors([input])
    dims = x.shape.as_list()
    if axis is None:
        axes = [i for i, d in enumerate(dims) if d == 1]
    else:
        axes = [_axis(a, len(dims)) for a in (axis if isinstance(axis, (list, tuple)) else [axis])]
    kept = [d for i, d in enumerate(dims) if i not in axes]
    return graph._built(graph._c.reshape(x._output(graph), [-1 if d is None else d for d in kept]),
                        name or "Squeeze")


def _some(values, what):
    """values as a list, refused when empty: TensorFlow's ops of a list need one."""
    values = list(values)
    if not values:
        raise ValueError("%s needs at least one tensor" % what)
    return values


def concat(values, axis, name="concat"):
    graph, xs = _tensors(_some(values, "concat"), ranks=_BROADCAST)
    if len(xs) == 1:
        return identity(xs[0], name=name)
    axis = _axis(axis, xs[0].shape.ndims)
    return graph._built(graph._c.concat([x._output(graph) for x in xs], axis), name)


def split(value, num_or_size_splits, axis=0, num=None, name="split"):
    graph, (x,) = _tensors([value])
    axis = _axis(axis, x.shape.ndims)
    if isinstance(num_or_size_splits, Tensor):
        raise TypeError("ctower takes split sizes as a Python list: sizes computed by the "
                        "graph (%s) are not supported" % num_or_size_splits.name)
    if np.ndim(num_or_size_splits) == 0:
        parts = int(num_or_size_splits)
    else:
        parts = [int(s) for s in np.asarray(num_or_size_splits).reshape(-1)]
        if num is not None and int(num) != len(parts):
            raise ValueError("num (%d) is not the number of sizes (%d)" % (num, len(parts)))
    outs = graph._c.split(x._output(graph), axis, parts)
    if name:
        graph._c.rename(outs[0][0], name)
    return [graph._built(o, rename=False) for o in outs]


def slice_(input_, begin, size, name=None):
    """input_[begin[d] : begin[d] + size[d]] on every axis d; a size of -1 takes
    the rest of the axis."""
    if _host.is_host(input_): return _host.slice_(input_, begin, size, name)  # noqa: E701
    graph, (x,) = _tensors([input_])
    begin, size = _static_shape(begin), _static_shape(size)
    if len(begin) != x.shape.ndims or len(size) != x.shape.ndims:
        raise ValueError("slice of a tensor of rank %d takes %d begins and sizes, got %s and %s"
                         % (x.shape.ndims, x.shape.ndims, begin, size))
    if any(b < 0 for b in begin) or any(s < -1 for s in size):
        raise ValueError("slice takes begins >= 0 and sizes >= -1, got %s and %s"
                         % (begin, size))
    end = [b + s for b, s in zip(begin, size)]
    to_end = sum(1 << d for d, s in enumerate(size) if s == -1)
    out = graph._c.strided_slice(x._output(graph), begin, end, [1] * len(begin), 0, to_end)
    return graph._built(out, name or "Slice")


def strided_slice(input_, begin, end, strides=None, begin_mask=0, end_mask=0, ellipsis_mask=0,
                  new_axis_mask=0, shrink_axis_mask=0, var=None, name=None):
    """TensorFlow's StridedSlice: the engine's, with shrink_axis_mask's axes
    then dropped by a Reshape (an input pipeline's host tensor: NumPy's)."""
    if _host.is_host(input_):
        return _host.strided_slice(input_, begin, end, strides, begin_mask, end_mask,
                                   ellipsis_mask, new_axis_mask, shrink_axis_mask, name)
    if ellipsis_mask or new_axis_mask:
        raise NotImplementedError("ctower's strided_slice has no ellipsis_mask or new_axis_mask: "
                                  "index the tensor (x[..., tf.newaxis]) instead")
    graph, (x,) = _tensors([input_])
    begin, end = _static_shape(begin), _static_shape(end)
    strides = [1] * len(begin) if strides is None else _static_shape(strides)
    rank = x.shape.ndims
    if not len(begin) == len(end) == len(strides) or len(begin) > rank:
        raise ValueError("strided_slice of a tensor of rank %d takes as many begins, ends and "
                         "strides, at most %d, got %s, %s and %s" % (rank, rank, begin, end,
                                                                     strides))
    whole = ((1 << rank) - 1) & ~((1 << len(begin)) - 1)  # the axes not indexed
    extra = rank - len(begin)
    begin, end, strides = begin + [0] * extra, end + [0] * extra, strides + [1] * extra
    begin_mask, end_mask = (begin_mask | whole) & ~shrink_axis_mask, end_mask | whole
    for d in range(rank):
        if shrink_axis_mask >> d & 1:  # begin[d] alone; -1 is the last
            end[d] = begin[d] + 1
            end_mask = end_mask | 1 << d if end[d] == 0 else end_mask & ~(1 << d)
    with graph.name_scope(name or "strided_slice"):
        out = graph._built(graph._c.strided_slice(x._output(graph), begin, end, strides,
                                                  begin_mask, end_mask))
        if not shrink_axis_mask:
            return out
        dims = [d for i, d in enumerate(out.shape.as_list()) if not shrink_axis_mask >> i & 1]
        return reshape(out, [-1 if d is None else d for d in dims])


def stack(values, axis=0, name="stack"):
    graph, xs = _tensors(_some(values, "stack"), ranks=_BROADCAST)
    rank = xs[0].shape.ndims
    axis = _axis(axis, rank + 1)
    with graph.name_scope(name) as scope:
        parts = [expand_dims(x, axis) for x in xs]
    if len(parts) == 1:
        return identity(parts[0], name=name)
    return graph._built(graph._c.concat([p._output(graph) for p in parts], axis), scope[:-1])


def unstack(value, num=None, axis=0, name="unstack"):
    graph, (x,) = _tensors([value])
    dims = x.shape.as_list()
    axis = _axis(axis, len(dims))
    n = dims[axis] if num is None else num
    if n is None:
        raise ValueError("Cannot infer num from shape %s" % x.shape)
    with graph.name_scope(name):
        parts = split(x, n, axis) if n > 1 else [x]
        kept = [d for i, d in enumerate(dims) if i != axis]
        return [reshape(p, [-1 if d is None else d for d in kept]) for p in parts]


# ---- reductions and comparisons ----------------------------------------------------------

# the extension's reductions (graph_ops.c's g_reduce)
_SUM, _MEAN, _MAX, _MIN = range(4)


def _reduce(kind, input_tensor, axis, keepdims, name, reduction_indices, keep_dims):
    graph, (x,) = _tensors([input_tensor])
    axis = reduction_indices if axis is None else axis
    keep = bool(keepdims if keepdims is not None else keep_dims)
    mask = 0
    if axis is not None:
        for a in (axis if isinstance(axis, (list, tuple, np.ndarray)) else [axis]):
            mask |= 1 << _axis(a, x.shape.ndims)
        if mask == 0:
            return identity(x, name=name)
    return graph._built(graph._c.reduce(kind, x._output(graph), mask, keep), name)


def reduce_sum(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
               keep_dims=None):
    return _reduce(_SUM, input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_mean(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
                keep_dims=None):
    return _reduce(_MEAN, input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_max(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
               keep_dims=None):
    """The largest value over the axes: NaN where one is NaN; its gradient
    divides dy among the positions equal to it, as TensorFlow's."""
    return _reduce(_MAX, input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_min(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
               keep_dims=None):
    """The smallest value over the axes, as reduce_max's."""
    return _reduce(_MIN, input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def argmax(input, axis=None, name=None, dimension=None, output_type=fw.int64):
    if axis is not None and dimension is not None:
        raise ValueError("Cannot specify both 'axis' and 'dimension'")
    graph, (x,) = _tensors([input])
    axis = dimension if axis is None else axis
    axis = _axis(0 if axis is None else axis, x.shape.ndims)
    output_type = fw.as_dtype(output_type)
    if output_type is not fw.int32 and output_type is not fw.int64:
        raise TypeError("argmax's output_type is int32 or int64, not %s" % output_type.name)
    if output_type is fw.int32:
        return graph._built(graph._c.argmax(x._output(graph), axis), name)
    # the engine's ArgMax gives int32: TensorFlow's default int64 is its Cast
    index = graph._built(graph._c.argmax(x._output(graph), axis))
    out = graph._built(graph._c.cast(index._output(graph), fw.int64._code), name)
    out._dtype = fw.int64
    return out


# ---- grouping -----------------------------------------------------------------------------

def group(*inputs, **kwargs):
    name = kwargs.pop("name", None)
    if kwargs:
        raise TypeError("Unknown keyword arguments: " + ", ".join(kwargs))
    flat = []
    for x in inputs:
        flat.extend(x if isinstance(x, (list, tuple)) else [x])
    graph = _graph_of(*flat)
    ops = [fw._as_op(graph, x) for x in flat if x is not None]
    node = graph._c.group(name or "NoOp", [op._id for op in ops])
    for deps in graph._control_stack:
        for op in deps:
            graph._c.add_control_input(node, op._id)
    graph._hook_cache.clear()
    return graph._operation(node)


def no_op(name=None):
    return group(name=name)


# ---- operators ----------------------------------------------------------------------------

def _slice_of_key(key, size, axis):
    """(begin, end, stride, begin from the start, end at the end) of one
    axis' index: a slice, or an integer (a slice of one, whose axis goes)."""
    if isinstance(key, slice):
        step = 1 if key.step is None else operator.index(key.step)
        if step == 0:
            raise ValueError("slice step cannot be zero")
        begin = 0 if key.start is None else operator.index(key.start)
        end = 0 if key.stop is None else operator.index(key.stop)
        return begin, end, step, key.start is None, key.stop is None
    k = operator.index(key)
    if size is not None and not -size <= k < size:
        raise ValueError("slice index %d of dimension %d out of bounds." % (k, axis))
    return k, k + 1, 1, False, k == -1


def _expand_ellipsis(keys, rank):
    if sum(k is Ellipsis for k in keys) > 1:
        raise ValueError("Multiple ellipses in slice spec not allowed")
    n_axes = sum(k is not None and k is not Ellipsis for k in keys)
    if n_axes > rank:
        raise ValueError("Index out of range using input dim %d" % rank)
    fill = (slice(None),) * (rank - n_axes)
    if Ellipsis in keys:
        at = keys.index(Ellipsis)
        return keys[:at] + fill + keys[at + 1:]
    return keys + fill


def _check_index(k):
    if isinstance(k, (Tensor, bool, np.bool_)) or not (
            k is None or k is Ellipsis or isinstance(k, slice) or hasattr(k, "__index__")):
        raise TypeError("ctower indexes tensors with Python integers, slices (`:`), ellipsis "
                        "(`...`) and tf.newaxis (`None`), got %r" % (k,))


def _getitem(tensor, key):
    """x[...] as NumPy indexes it by integers, slices start:stop:step (negative
    indices count back), tf.newaxis (None) and '...': the engine's
    StridedSlice, then a Reshape that drops the axes of integers and adds
    the new ones."""
    keys = key if isinstance(key, tuple) else (key,)
    for k in keys:
        _check_index(k)
    graph, (x,) = _tensors([tensor])
    dims = x.shape.as_list()
    keys = _expand_ellipsis(keys, len(dims))
    ranges, kept, axis = [], [], 0  # kept: per key of the result, its axis or None (new)
    for k in keys:
        if k is None:
            kept.append(None)
            continue
        ranges.append(_slice_of_key(k, dims[axis], axis))
        if isinstance(k, slice):
            kept.append(axis)
        axis += 1
    with graph.name_scope("strided_slice"):
        out = x
        if any(r != (0, 0, 1, True, True) for r in ranges):
            begin, end, strides, from_start, to_end = zip(*ranges)
            masks = [sum(1 << d for d, bit in enumerate(bits) if bit) for bits in (from_start,
                                                                                  to_end)]
            out = graph._built(graph._c.strided_slice(x._output(graph), list(begin), list(end),
                                                      list(strides), *masks))
        sliced = out.shape.as_list()
        shape = [1 if a is None else sliced[a] for a in kept]
        if shape == sliced:
            return out if out is not x else identity(x)
        if sum(d is None for d in shape) > 1:
            raise ValueError("ctower's indexing needs all dimensions of the result but one "
                             "known, got %s" % shape)
        return reshape(out, [-1 if d is None else d for d in shape])


def _install_operators(cls):
    cls.__add__ = lambda a, b: add(a, b)
    cls.__radd__ = lambda a, b: add(b, a)
    cls.__sub__ = lambda a, b: subtract(a, b)
    cls.__rsub__ = lambda a, b: subtract(b, a)
    cls.__mul__ = lambda a, b: multiply(a, b)
    cls.__rmul__ = lambda a, b: multiply(b, a)
    cls.__truediv__ = lambda a, b: divide(a, b)
    cls.__rtruediv__ = lambda a, b: divide(b, a)
    cls.__matmul__ = lambda a, b: matmul(a, b)
    cls.__rmatmul__ = lambda a, b: matmul(b, a)
    cls.__neg__ = lambda a: negative(a)
    cls.__pow__ = lambda a, b: binary_math["pow"](a, b)
    cls.__gt__ = lambda a, b: compare["greater"](a, b)
    cls.__lt__ = lambda a, b: compare["less"](a, b)
    cls.__ge__ = lambda a, b: compare["greater_equal"](a, b)
    cls.__le__ = lambda a, b: compare["less_equal"](a, b)
    cls.__rpow__ = lambda a, b: binary_math["pow"](b, a)
    cls.__getitem__ = _getitem


_install_operators(Tensor)
