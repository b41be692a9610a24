"""tf.nn and tf.layers.batch_normalization over ctower's ops (NHWC images,
HWIO filters)."""
from ctower.compat.v1 import _framework as fw
from ctower.compat.v1 import _host
from ctower.compat.v1 import _ops
from ctower.compat.v1 import _variables as vs
from ctower.compat.v1._ops import _BROADCAST, _tensors


def relu(features, name=None):
    return _ops._unary(_ops._RELU, features, name)


def sigmoid(x, name=None):
    return _ops._unary(_ops._SIGMOID, x, name)


def tanh(x, name=None):
    return _ops._unary(_ops._TANH, x, name)


def _nhwc(data_format):
    if data_format not in ("NHWC", None):
        raise NotImplementedError("ctower's images are NHWC, not %s" % data_format)


def _window(values, what):
    """[h, w] of [1, h, w, 1], [h, w], [k] or k."""
    values = [values] if isinstance(values, int) else [int(v) for v in values]
    for v in values:
        if not -2**31 <= v < 2**31:
            raise ValueError("%s of %d are out of range" % (what, v))
    if len(values) == 1:
        return values * 2
    if len(values) == 4:
        if values[0] != 1 or values[3] != 1:
            raise ValueError("%s over the batch or channels (%s) is not supported" % (what, values))
        values = values[1:3]
    if len(values) != 2:
        raise ValueError("%s needs 1, 2 or 4 values, got %s" % (what, values))
    return values


def _padding(padding):
    padding = padding.upper() if isinstance(padding, str) else padding
    if padding not in ("SAME", "VALID"):
        raise ValueError("padding must be 'SAME' or 'VALID', got %r" % (padding,))
    return padding == "SAME"


def conv2d(input, filter=None, strides=None, padding=None, use_cudnn_on_gpu=True,
           data_format="NHWC", dilations=(1, 1, 1, 1), name=None, filters=None):
    _nhwc(data_format)
    filter = filters if filter is None else filter
    sh, sw = _window(strides, "strides")
    dh, dw = _window(dilations or 1, "dilations")
    graph, (x, f) = _tensors([input, filter], ranks=[4, 4])
    return graph._built(graph._c.conv2d(x._output(graph), f._output(graph), sh, sw, dh, dw,
                                        _padding(padding)), name)


def bias_add(value, bias, data_format=None, name=None):
    _nhwc(data_format)
    return _ops.add(value, bias, name=name or "BiasAdd")


def _pool(is_max, value, ksize, strides, padding, data_format, name):
    _nhwc(data_format)
    (kh, kw), (sh, sw) = _window(ksize, "ksize"), _window(strides, "strides")
    graph, (x,) = _tensors([value], ranks=[4])
    return graph._built(graph._c.pool(is_max, x._output(graph), kh, kw, sh, sw, _padding(padding)),
                        name)


def max_pool(value, ksize, strides, padding, data_format="NHWC", name=None, input=None):
    return _pool(True, value if input is None else input, ksize, strides, padding, data_format,
                 name)


def avg_pool(value, ksize, strides, padding, data_format="NHWC", name=None, input=None):
    return _pool(False, value if input is None else input, ksize, strides, padding, data_format,
                 name)


def lrn(input, depth_radius=5, bias=1, alpha=1, beta=0.5, name=None):
    graph, (x,) = _tensors([input])
    return graph._built(graph._c.lrn(x._output(graph), int(depth_radius), float(bias), float(alpha),
                                     float(beta)), name)


local_response_normalization = lrn


def _keep_rate(keep_prob, rate):
    """Dropout's rate: a float, or a tensor (1 - keep_prob for a tensor
    keep_prob, as a placeholder fed 0.5 in training and 1.0 in evaluation)."""
    if rate is not None:
        return rate
    if keep_prob is None:
        raise ValueError("dropout needs keep_prob or rate")
    if isinstance(keep_prob, fw.Tensor) or hasattr(keep_prob, "_read"):
        return _ops.subtract(1.0, keep_prob)
    return 1.0 - float(keep_prob)


def _noise_like(x, noise_shape):
    """Ones of noise_shape, which broadcasts to x: x cut to its first element
    along the axes where noise_shape has 1 and x more, then OnesLike (so an
    axis of unknown size keeps the size x has when it runs). None where
    noise_shape is x's shape."""
    dims = x.shape.as_list()
    if not isinstance(noise_shape, (list, tuple)) or \
            not all(n is None or isinstance(n, int) for n in noise_shape):
        raise TypeError("ctower takes dropout's noise_shape as a list of Python ints (None or "
                        "-1 for x's size), got %r" % (noise_shape,))
    if len(noise_shape) != len(dims) or any(
            n not in (None, -1, 1) and d is not None and n != d for n, d in zip(noise_shape, dims)):
        raise ValueError("noise_shape %s does not broadcast to x's shape %s: each of its "
                         "dimensions must be 1 or x's" % (list(noise_shape), x.shape))
    cut = [n == 1 and d != 1 for n, d in zip(noise_shape, dims)]
    if not any(cut):
        return None
    return _ops.ones_like(_ops.slice_(x, [0] * len(dims), [1 if c else -1 for c in cut]))


def _dropout(x, rate, name):
    if isinstance(rate, fw.Tensor) or hasattr(rate, "_read"):
        return _ops._binary(_ops._DROPOUT, x, rate, name, ranks=[None, 0])
    graph, (t,) = _tensors([x])
    return graph._built(graph._c.dropout(t._output(graph), float(rate)), name)


def dropout(x, keep_prob=None, noise_shape=None, seed=None, name=None, rate=None):
    """TensorFlow's dropout; with noise_shape, one mask element for each
    element of noise_shape, broadcast over x's axes where it has 1: the
    engine's Dropout of ones of noise_shape, times x."""
    rate = _keep_rate(keep_prob, rate)
    graph, (t,) = _tensors([x])
    if not isinstance(rate, fw.Tensor) and not hasattr(rate, "_read") and rate == 0.0:
        return _ops.identity(t, name=name)
    noise = None if noise_shape is None else _noise_like(t, noise_shape)
    if noise is None:
        return _dropout(t, rate, name)
    return _ops.multiply(t, _dropout(noise, rate, None), name=name)


def sparse_softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None,
                                             name=None):
    if _sentinel is not None:
        raise ValueError("Only call `sparse_softmax_cross_entropy_with_logits` with named "
                         "arguments (labels=..., logits=..., ...)")
    graph, (logits_t,) = _tensors([logits])
    graph, (labels_t,) = _tensors([labels], ranks=[logits_t.shape.ndims - 1])
    if labels_t.dtype is fw.int64:
        labels_t = cast(labels_t, fw.int32)
    return graph._built(graph._c.binary(_ops._SPARSE_XENT, logits_t._output(graph),
                                        labels_t._output(graph)), name)


def softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, dim=-1,
                                      name=None, axis=None):
    if _sentinel is not None:
        raise ValueError("Only call `softmax_cross_entropy_with_logits` with named arguments "
                         "(labels=..., logits=..., ...)")
    graph, (logits_t, labels_t) = _tensors([logits, labels], ranks=_BROADCAST)
    return graph._built(graph._c.softmax_xent(logits_t._output(graph),
                                              labels_t._output(graph)), name)


softmax_cross_entropy_with_logits_v2 = softmax_cross_entropy_with_logits


def l2_loss(t, name=None):
    return _ops._unary(_ops._L2_LOSS, t, name)


def cast(x, dtype, name=None):
    if _host.is_host(x): return _host.cast(x, dtype, name)  # noqa: E701
    graph, (t,) = _tensors([x])
    dtype = fw._engine_dtype(dtype, "cast")
    if dtype is t.dtype:
        return t
    out = graph._built(graph._c.cast(t._output(graph), dtype._code), name or "Cast")
    out._dtype = dtype
    return out


def to_float(x, name="ToFloat"):
    return cast(x, fw.float32, name=name)


def to_int32(x, name="ToInt32"):
    return cast(x, fw.int32, name=name)


def to_int64(x, name="ToInt64"):
    return cast(x, fw.int64, name=name)


def _is_zero(x):
    """1.0 where x is 0, else 0.0."""
    from ctower.compat.v1 import equal  # defined with the package's names
    return cast(equal(x, 0), fw.float32)


def zero_fraction(value, name=None):
    """The fraction of value's elements that are 0."""
    graph, (x,) = _tensors([value])
    with graph.name_scope(name or "zero_fraction"):
        return _ops.reduce_mean(_is_zero(x), name="fraction")


def fused_batch_norm(x, scale, offset, mean=None, variance=None, epsilon=0.001,
                     data_format="NHWC", is_training=True, name=None):
    _nhwc(data_format)
    graph, (t, s, o) = _tensors([x, scale, offset])
    if not is_training and (mean is None or variance is None):
        raise ValueError("Both 'mean' and 'variance' must be a 1-D tensor when is_training is "
                         "False.")
    m = None if mean is None else fw.convert_to_tensor(mean)._output(graph)
    v = None if variance is None else fw.convert_to_tensor(variance)._output(graph)
    y = graph._built(graph._c.batch_norm(t._output(graph), s._output(graph), o._output(graph),
                                         m if not is_training else None,
                                         v if not is_training else None, bool(is_training),
                                         0.0, float(epsilon)), name)
    return y, None, None


def batch_normalization(inputs, axis=-1, momentum=0.99, epsilon=0.001, center=True, scale=True,
                        beta_initializer=None, gamma_initializer=None,
                        moving_mean_initializer=None, moving_variance_initializer=None,
                        training=False, trainable=True, name=None, reuse=None, **unused):
    """tf.layers.batch_normalization: gamma, beta and the moving statistics
    as variables of scope `name`; in training the batch statistics, with
    update ops in tf.GraphKeys.UPDATE_OPS. `training` is a Python bool, or
    a bool tensor (_batch_norm_switched)."""
    graph, (x,) = _tensors([inputs])
    rank = x.shape.ndims
    if isinstance(axis, (list, tuple)):
        if len(axis) != 1:
            raise NotImplementedError("ctower's batch normalization takes one axis, not %r" %
                                      (axis,))
        axis = axis[0]
    axis = _ops._axis(axis, rank)
    if axis != rank - 1:  # the engine normalizes the last axis: move `axis` there and back
        to_last = [d for d in range(rank) if d != axis] + [axis]
        back = sorted(range(rank), key=to_last.__getitem__)
        y = batch_normalization(_ops.transpose(x, to_last), -1, momentum, epsilon, center, scale,
                                beta_initializer, gamma_initializer, moving_mean_initializer,
                                moving_variance_initializer, training, trainable, name, reuse)
        return _ops.transpose(y, back)
    switched = isinstance(training, fw.Tensor) or hasattr(training, "_read")
    channels = x.shape.as_list()[-1]
    before = len(graph._c.update_ops())
    with vs.variable_scope(name, default_name="batch_normalization", reuse=reuse):
        gamma = vs.get_variable("gamma", [channels], initializer=gamma_initializer or
                                vs.ones_initializer(), trainable=trainable and scale)
        beta = vs.get_variable("beta", [channels], initializer=beta_initializer or
                               vs.zeros_initializer(), trainable=trainable and center)
        moving_mean = vs.get_variable("moving_mean", [channels], trainable=False,
                                      initializer=moving_mean_initializer or
                                      vs.zeros_initializer())
        moving_var = vs.get_variable("moving_variance", [channels], trainable=False,
                                     initializer=moving_variance_initializer or
                                     vs.ones_initializer())
        if switched:
            return _batch_norm_switched(graph, x, gamma, beta, moving_mean, moving_var,
                                        training, float(momentum), float(epsilon))
        outputs = [t._output(graph) for t in (x, gamma, beta, moving_mean, moving_var)]
        y = graph._built(graph._c.batch_norm(*outputs, bool(training), float(momentum),
                                             float(epsilon)))
    for node in graph._c.update_ops()[before:]:
        graph.add_to_collection(vs.GraphKeys.UPDATE_OPS, graph._operation(node))
    return y


def _batch_norm_switched(graph, x, gamma, beta, moving_mean, moving_var, training, momentum,
                         epsilon):
    """Batch normalization whose `training` is a bool tensor, as TensorFlow's
    layer decides with a conditional: the batch's statistics while it is
    true, the moving ones while it is false, and update ops that move the
    averages only while it is true. ctower's graphs have no conditionals, so
    both normalizations run and a factor f (1.0 or 0.0) picks one:
    f * batch + (1 - f) * moving is either one exactly (a finite value times
    0 adds 0). The updates are TensorFlow's, variable -= (variable - value)
    * (1 - momentum), with the step times f: 0 leaves the average as it is."""
    f = cast(training, fw.float32)
    outputs = [t._output(graph) for t in (x, gamma, beta, moving_mean, moving_var)]
    by_batch = graph._built(graph._c.batch_norm(*outputs[:3], None, None, True, momentum,
                                                epsilon))
    by_moving = graph._built(graph._c.batch_norm(*outputs, False, momentum, epsilon))
    y = _ops.add(_ops.multiply(f, by_batch), _ops.multiply(_ops.subtract(1.0, f), by_moving))
    batch_mean, batch_var = by_batch.op.outputs[1:3]
    step = _ops.multiply(f, 1.0 - momentum)
    for average, value in ((moving_mean, batch_mean), (moving_var, batch_var)):
        update = average.assign_sub(_ops.multiply(step, _ops.subtract(average.value(), value)))
        graph.add_to_collection(vs.GraphKeys.UPDATE_OPS, update.op)
    return y


def _shifted_logits(logits, axis, dim, function):
    """logits less their max along the axis (which the result does not depend
    on, so no gradient flows through it), the axis resolved; TensorFlow 1.x
    names it `dim` too."""
    if axis is not None and dim is not None:
        raise ValueError("tf.nn.%s: give axis or dim, not both" % function)
    axis = -1 if axis is None and dim is None else (dim if axis is None else axis)
    graph, (x,) = _tensors([logits])
    axis = _ops._axis(axis, x.shape.ndims)
    peak = _ops.stop_gradient(_ops.reduce_max(x, axis=axis, keepdims=True))
    return _ops.subtract(x, peak), axis


def softmax(logits, axis=None, name=None, dim=None):
    """exp(logits) / sum(exp(logits)) along axis (the last by default), from
    the logits less their max so that exp does not overflow."""
    shifted, axis = _shifted_logits(logits, axis, dim, "softmax")
    e = _ops.unary_math["exp"](shifted)
    return _ops.divide(e, _ops.reduce_sum(e, axis=axis, keepdims=True), name=name)


def log_softmax(logits, axis=None, name=None, dim=None):
    """logits - log(sum(exp(logits))) along axis (the last by default), from
    the logits less their max."""
    shifted, axis = _shifted_logits(logits, axis, dim, "log_softmax")
    total = _ops.reduce_sum(_ops.unary_math["exp"](shifted), axis=axis, keepdims=True)
    return _ops.subtract(shifted, _ops.unary_math["log"](total), name=name)
