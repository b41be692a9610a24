"""tf.layers' functions (dense, conv2d, max_pooling2d, average_pooling2d,
flatten, dropout) over ctower's ops, with TensorFlow's arguments and
defaults. Each builds under variable_scope(name, default_name=<layer>), as
TensorFlow's functional layers do: variables `dense/kernel`, `dense/bias`
(`dense_1/...` for the next unnamed one; `name=` and `reuse=` share them),
ops `dense/MatMul`, `dense/BiasAdd`. Kernels start from glorot_uniform
(TensorFlow's bounds, ctower's random numbers) unless the scope has an
initializer, biases from zeros; a regularizer's loss goes to
REGULARIZATION_LOSSES once, when its variable is made. Images are
channels_last (NHWC), ctower's only layout."""
from ctower.compat.v1 import _framework as fw
from ctower.compat.v1 import _nn, _ops
from ctower.compat.v1 import _variables as vs
from ctower.compat.v1._ops import _tensors


def _pair(value, what):
    """(a, b) of an int or of a list or tuple of two ints, as TensorFlow's
    layers take kernel_size, strides, pool_size and dilation_rate."""
    values = (value, value) if isinstance(value, int) else value
    if not isinstance(values, (list, tuple)) or len(values) != 2 or \
            not all(isinstance(v, int) for v in values):
        raise ValueError("The `%s` argument must be a tuple of 2 integers. Received: %s"
                         % (what, value))
    return tuple(values)


def _layer_padding(padding):
    """'SAME' or 'VALID' for TensorFlow's 'same' and 'valid', in any case."""
    if not isinstance(padding, str) or padding.lower() not in ("valid", "same"):
        raise ValueError('The `padding` argument must be a list/tuple or one of "valid", "same" '
                         '(or "causal", only for `Conv1D). Received: %s' % (padding,))
    return padding.upper()


def _channels_last(data_format, layer):
    if data_format == "channels_first":
        raise NotImplementedError("ctower's tf.layers.%s takes channels_last (NHWC) images "
                                  "only, not channels_first: transpose the input to NHWC "
                                  "(tf.transpose(x, [0, 2, 3, 1]))" % layer)
    if data_format != "channels_last":
        raise ValueError('The `data_format` argument must be one of "channels_first", '
                         '"channels_last". Received: %s' % (data_format,))


def _unsupported(layer, **arguments):
    for argument, value in arguments.items():
        if value is not None:
            raise NotImplementedError("ctower's tf.layers.%s does not take %s" % (layer, argument))


def _layer_input(x, ndim=None, min_ndim=None):
    """Refuses x of another rank with TensorFlow's message, which names the
    layer as its variable scope does."""
    rank = x.shape.ndims
    if rank is None:
        raise ValueError("ctower's layers need the rank of their input: give the placeholder "
                         "a shape")
    if (ndim is not None and rank != ndim) or (min_ndim is not None and rank < min_ndim):
        layer = vs.get_variable_scope().name.rsplit("/", 1)[-1]
        raise ValueError('Input 0 of layer "%s" is incompatible with the layer: expected '
                         '%s=%d, found ndim=%d. Full shape received: %s'
                         % (layer, "ndim" if ndim is not None else "min_ndim",
                            ndim if ndim is not None else min_ndim, rank,
                            tuple(x.shape.as_list())))


def _bias_and_activation(y, units, use_bias, bias_initializer, bias_regularizer, trainable,
                         activation):
    if use_bias:
        bias = vs.get_variable("bias", [units], initializer=bias_initializer,
                               regularizer=bias_regularizer, trainable=trainable)
        y = _nn.bias_add(y, bias)
    return activation(y) if activation is not None else y


def dense(inputs, units, activation=None, use_bias=True, kernel_initializer=None,
          bias_initializer=vs.zeros_initializer(), kernel_regularizer=None,
          bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
          bias_constraint=None, trainable=True, name=None, reuse=None):
    """inputs @ kernel + bias over the last axis: an input of rank above 2
    is reshaped to [-1, n] and back (at most one of its other dimensions
    unknown)."""
    _unsupported("dense", activity_regularizer=activity_regularizer,
                 kernel_constraint=kernel_constraint, bias_constraint=bias_constraint)
    units = int(units)
    graph, (x,) = _tensors([inputs])
    with vs.variable_scope(name, default_name="dense", reuse=reuse):
        _layer_input(x, min_ndim=2)
        if x.dtype is not fw.float32:
            raise TypeError("A Dense layer can only be built with a floating-point dtype. "
                            "Received: dtype=<dtype: '%s'>" % x.dtype.name)
        dims = x.shape.as_list()
        if dims[-1] is None:
            raise ValueError("The last dimension of the inputs to a Dense layer should be "
                             "defined. Found None. Full input shape received: %s"
                             % (tuple(dims),))
        kernel = vs.get_variable("kernel", [dims[-1], units], initializer=kernel_initializer,
                                 regularizer=kernel_regularizer, trainable=trainable)
        if len(dims) == 2:
            y = _ops.matmul(x, kernel)
        else:
            outer = dims[:-1]
            if outer.count(None) > 1:
                raise NotImplementedError("ctower's tf.layers.dense takes an input of rank "
                                          "above 2 with at most one unknown dimension besides "
                                          "the last, not %s" % (x.shape,))
            y = _ops.matmul(_ops.reshape(x, [-1, dims[-1]]), kernel)
            y = _ops.reshape(y, [-1 if d is None else d for d in outer] + [units])
        return _bias_and_activation(y, units, use_bias, bias_initializer, bias_regularizer,
                                    trainable, activation)


def conv2d(inputs, filters, kernel_size, strides=(1, 1), padding="valid",
           data_format="channels_last", dilation_rate=(1, 1), activation=None, use_bias=True,
           kernel_initializer=None, bias_initializer=vs.zeros_initializer(),
           kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
           kernel_constraint=None, bias_constraint=None, trainable=True, name=None, reuse=None):
    """A 2-D convolution of NHWC inputs by a kernel of
    [kernel_h, kernel_w, in_channels, filters], plus bias."""
    _unsupported("conv2d", activity_regularizer=activity_regularizer,
                 kernel_constraint=kernel_constraint, bias_constraint=bias_constraint)
    filters = int(filters)
    kernel_size = _pair(kernel_size, "kernel_size")
    strides = _pair(strides, "strides")
    dilation_rate = _pair(dilation_rate, "dilation_rate")
    padding = _layer_padding(padding)
    _channels_last(data_format, "conv2d")
    if max(strides) > 1 and max(dilation_rate) > 1:
        raise ValueError("`strides > 1` not supported in conjunction with `dilation_rate > 1`. "
                         "Received: strides=%s and dilation_rate=%s" % (strides, dilation_rate))
    graph, (x,) = _tensors([inputs])
    with vs.variable_scope(name, default_name="conv2d", reuse=reuse):
        _layer_input(x, min_ndim=4)
        if x.shape.ndims != 4:
            raise NotImplementedError("ctower's tf.layers.conv2d takes inputs of rank 4, not %s"
                                      % (x.shape,))
        channels = x.shape.as_list()[-1]
        if channels is None:
            raise ValueError("The channel dimension of the inputs should be defined. The "
                             "input_shape received is %s, where axis -1 (0-based) is the "
                             "channel dimension, which found to be `None`."
                             % (tuple(x.shape.as_list()),))
        kernel = vs.get_variable("kernel", list(kernel_size) + [channels, filters],
                                 initializer=kernel_initializer, regularizer=kernel_regularizer,
                                 trainable=trainable)
        y = _nn.conv2d(x, kernel, strides=[1, strides[0], strides[1], 1], padding=padding,
                       dilations=[1, dilation_rate[0], dilation_rate[1], 1])
        return _bias_and_activation(y, filters, use_bias, bias_initializer, bias_regularizer,
                                    trainable, activation)


def _pooling2d(is_max, layer, inputs, pool_size, strides, padding, data_format, name):
    pool_size = _pair(pool_size, "pool_size")
    strides = _pair(strides, "strides")
    padding = _layer_padding(padding)
    _channels_last(data_format, layer)
    graph, (x,) = _tensors([inputs])
    with vs.variable_scope(name, default_name=layer):
        _layer_input(x, ndim=4)
        return _nn._pool(is_max, x, pool_size, strides, padding, "NHWC", None)


def max_pooling2d(inputs, pool_size, strides, padding="valid", data_format="channels_last",
                  name=None):
    return _pooling2d(True, "max_pooling2d", inputs, pool_size, strides, padding, data_format,
                      name)


def average_pooling2d(inputs, pool_size, strides, padding="valid",
                      data_format="channels_last", name=None):
    return _pooling2d(False, "average_pooling2d", inputs, pool_size, strides, padding,
                      data_format, name)


def flatten(inputs, name=None, data_format="channels_last"):
    """[batch, the product of the other dimensions] (channels_first inputs
    have their channels moved last first, as TensorFlow does); a rank-1
    input becomes [batch, 1]. The other dimensions must be known unless
    the batch's is."""
    if data_format not in ("channels_last", "channels_first"):
        _channels_last(data_format, "flatten")
    graph, (x,) = _tensors([inputs])
    with vs.variable_scope(name, default_name="flatten"):
        _layer_input(x, min_ndim=1)
        if data_format == "channels_first" and x.shape.ndims > 2:
            rank = x.shape.ndims
            x = _ops.transpose(x, [0] + list(range(2, rank)) + [1])
        dims = x.shape.as_list()
        if len(dims) == 1:
            return _ops.expand_dims(x, 1)
        rest = dims[1:]
        if None not in rest:
            size = 1
            for d in rest:
                size *= d
            return _ops.reshape(x, [-1 if dims[0] is None else dims[0], size])
        if dims[0] is None:
            raise NotImplementedError("ctower's tf.layers.flatten needs the sizes of the "
                                      "dimensions after the first, or the first's: %s"
                                      % (x.shape,))
        return _ops.reshape(x, [dims[0], -1])


def dropout(inputs, rate=0.5, noise_shape=None, seed=None, training=False, name=None):
    """tf.nn.dropout(inputs, rate) while `training`, else inputs as they
    are. `training` is a Python bool, or a bool tensor (a placeholder): then
    the rate is rate times training's 1 or 0, and a rate of 0 passes every
    element through unchanged. ctower draws its own masks: `seed` is not
    used."""
    if not isinstance(rate, fw.Tensor) and not hasattr(rate, "_read"):
        if not 0 <= float(rate) <= 1:
            raise ValueError("Invalid value %s received for `rate`, expected a value between "
                             "0 and 1." % (rate,))
        if float(rate) == 1 and training is not False:
            raise ValueError("`rate` must be a scalar tensor or a float in the range [0, 1). "
                             "Received: rate=%s" % (rate,))
    graph, (x,) = _tensors([inputs])
    with vs.variable_scope(name, default_name="dropout"):
        if isinstance(training, fw.Tensor) or hasattr(training, "_read"):
            rate = _ops.multiply(_nn.cast(training, fw.float32), rate)
        elif not training:
            return _ops.identity(x)
        return _nn.dropout(x, rate=rate, noise_shape=noise_shape)
