"""TensorFlow 1.x's names, argument names and defaults over ctower:

    import ctower.compat.v1 as tf
    with tf.device('/cpu:0'):
        a = tf.constant([1.0, 2.0, 3.0, 4.0], shape=[2, 2], name='a')
    sess = tf.Session(config=tf.ConfigProto(log_device_placement=True))
"""
from ctower import errors
from ctower.compat.v1 import _framework, _nn, _ops, _session, _train, _variables
from ctower.compat.v1 import _app, _flags, _gfile, _moving_averages, _names, _random, _schedules
from ctower.compat.v1 import _hooks, _layers, _losses, _monitored, _summary
from ctower.compat.v1 import examples  # noqa: F401 (tf.examples.tutorials.mnist.input_data)
from ctower.compat.v1 import _host, _image, _input
from ctower.compat.v1._framework import (DType, Dimension, Graph, Operation, Tensor, TensorShape,
                                         as_dtype, bool, constant, convert_to_tensor, float16,
                                         float32, float64, get_default_graph, int32, int64,
                                         placeholder, reset_default_graph, string, uint8)
from ctower.compat.v1._nn import cast, to_float, to_int32, to_int64
from ctower.compat.v1._ops import (add, add_n, argmax, clip_by_value, concat, divide,
                                   expand_dims, fill, group, identity, matmul, multiply,
                                   negative, no_op, ones, ones_like, reduce_max, reduce_mean,
                                   reduce_min, reduce_sum, reshape, slice_, split, squeeze,
                                   stack, stop_gradient, strided_slice, subtract, transpose,
                                   truediv, unstack,
                                   zeros, zeros_like)
from ctower.compat.v1._session import (ConfigProto, GPUOptions, GraphOptions, InteractiveSession,
                                       RunMetadata, RunOptions, Session, get_default_session)
from ctower.compat.v1._variables import (AUTO_REUSE, GraphKeys, Variable, VariableScope,
                                         constant_initializer, get_variable, get_variable_scope,
                                         global_variables, global_variables_initializer,
                                         glorot_normal_initializer,
                                         glorot_uniform_initializer, initialize_all_variables,
                                         local_variables, local_variables_initializer,
                                         model_variables, ones_initializer,
                                         random_normal_initializer, random_uniform_initializer,
                                         trainable_variables, truncated_normal_initializer,
                                         variable_scope, variance_scaling_initializer,
                                         variables_initializer,
                                         zeros_initializer)

_Namespace = _names.Namespace
globals().update(_ops.unary_math)  # tf.exp, tf.log, ... (src/ops/unary_math.h)
globals().update(_ops.binary_math)  # tf.maximum, tf.pow, ... (src/ops/binary_math.h)
globals().update(_ops.compare)  # tf.greater, tf.less, ... (src/ops/compare.h)
newaxis = None
slice = slice_
sub = subtract
mul = multiply
div = divide
neg = negative
pack = stack
unpack = unstack


def device(device_name_or_function):
    return get_default_graph().device(device_name_or_function)


def name_scope(name, default_name=None, values=None):
    return get_default_graph().name_scope(name if name is not None else default_name)


def control_dependencies(control_inputs):
    return get_default_graph().control_dependencies(control_inputs)


def add_to_collection(name, value):
    get_default_graph().add_to_collection(name, value)


def add_to_collections(names, value):
    get_default_graph().add_to_collections(names, value)


def get_collection(key, scope=None):
    return get_default_graph().get_collection(key, scope)


def get_collection_ref(key):
    return get_default_graph().get_collection_ref(key)


def set_random_seed(seed):
    get_default_graph().seed = seed


get_seed = _random.get_seed


def equal(x, y, name=None):
    graph, (a, b) = _ops._tensors([x, y], ranks=_ops._BROADCAST)
    out = graph._built(graph._c.equal(a._output(graph), b._output(graph)), name)
    out._dtype = bool
    return out


def gradients(ys, xs, grad_ys=None, name="gradients", colocate_gradients_with_ops=False,
              gate_gradients=False, aggregation_method=None, stop_gradients=None):
    """d(sum of ys)/d(xs), by ctower's reverse-mode differentiation: one list
    entry per x, None where ys do not depend on it; stop_gradients are held
    constant."""
    ys = list(ys) if isinstance(ys, (list, tuple)) else [ys]
    single = not isinstance(xs, (list, tuple))
    xs = [xs] if single else list(xs)
    graph, ys_t = _ops._tensors(ys)
    xs_t = [x._read if isinstance(x, Variable) else convert_to_tensor(x) for x in xs]
    if stop_gradients is None:
        stop_gradients = []
    elif not isinstance(stop_gradients, (list, tuple)):
        stop_gradients = [stop_gradients]
    stops = [(s._read if isinstance(s, Variable) else convert_to_tensor(s))._output(graph)
             for s in stop_gradients]
    if grad_ys is not None:
        grad_ys = grad_ys if isinstance(grad_ys, (list, tuple)) else [grad_ys]
        with graph.as_default():
            ys_t = [y if g is None else _ops.reduce_sum(_ops.multiply(y, g))
                    for y, g in zip(ys_t, grad_ys)]
    per_x = [[] for _ in xs_t]
    for y in ys_t:
        for k, g in enumerate(graph._c.gradients(y._output(graph), [x._output(graph) for x in xs_t],
                                                 stops)):
            if g is not None:
                per_x[k].append(graph._built(g, rename=False))
    with graph.as_default():
        return [None if not gs else gs[0] if len(gs) == 1 else _ops.add_n(gs) for gs in per_x]


def _variable_ref(ref):
    if not isinstance(ref, Variable):
        raise TypeError("Assignment needs a Variable to assign to, not %r" % (ref,))
    return ref


def assign(ref, value, validate_shape=None, use_locking=None, name=None):
    return _variable_ref(ref).assign(value, name=name)


def assign_add(ref, value, use_locking=None, name=None):
    return _variable_ref(ref).assign_add(value, name=name)


def assign_sub(ref, value, use_locking=None, name=None):
    return _variable_ref(ref).assign_sub(value, name=name)


def shape_of(x):
    return convert_to_tensor(x).shape


nn = _Namespace(
    "nn", relu=_nn.relu, sigmoid=_nn.sigmoid, tanh=_nn.tanh, conv2d=_nn.conv2d,
    bias_add=_nn.bias_add,
    max_pool=_nn.max_pool, avg_pool=_nn.avg_pool, lrn=_nn.lrn,
    local_response_normalization=_nn.lrn, dropout=_nn.dropout, l2_loss=_nn.l2_loss,
    sparse_softmax_cross_entropy_with_logits=_nn.sparse_softmax_cross_entropy_with_logits,
    softmax_cross_entropy_with_logits=_nn.softmax_cross_entropy_with_logits,
    softmax_cross_entropy_with_logits_v2=_nn.softmax_cross_entropy_with_logits_v2,
    fused_batch_norm=_nn.fused_batch_norm, zero_fraction=_nn.zero_fraction,
    softmax=_nn.softmax, log_softmax=_nn.log_softmax)
layers = _Namespace(
    "layers", batch_normalization=_nn.batch_normalization, dense=_layers.dense,
    conv2d=_layers.conv2d, max_pooling2d=_layers.max_pooling2d,
    average_pooling2d=_layers.average_pooling2d, flatten=_layers.flatten,
    dropout=_layers.dropout)
losses = _Namespace("losses", Reduction=_losses.Reduction, **{n: getattr(_losses, n) for n in (
    "add_loss", "compute_weighted_loss", "get_losses", "get_regularization_loss",
    "get_regularization_losses", "get_total_loss", "mean_squared_error", "softmax_cross_entropy",
    "sparse_softmax_cross_entropy")})
random = _Namespace("random", set_random_seed=set_random_seed, get_seed=get_seed)
train = _Namespace(
    "train", Optimizer=_train.Optimizer,
    GradientDescentOptimizer=_train.GradientDescentOptimizer,
    MomentumOptimizer=_train.MomentumOptimizer, AdamOptimizer=_train.AdamOptimizer,
    Saver=_train.Saver, latest_checkpoint=_train.latest_checkpoint,
    get_global_step=_train.get_global_step, create_global_step=_train.create_global_step,
    get_or_create_global_step=_train.get_or_create_global_step, global_step=_train.global_step,
    ExponentialMovingAverage=_moving_averages.ExponentialMovingAverage,
    **{n: getattr(_schedules, n) for n in (
        "exponential_decay", "natural_exp_decay", "inverse_time_decay", "polynomial_decay",
        "piecewise_constant")},
    **{n: getattr(_hooks, n) for n in (
        "SessionRunHook", "SessionRunArgs", "SessionRunContext", "SessionRunValues",
        "StopAtStepHook", "NanTensorHook", "NanLossDuringTrainingError", "LoggingTensorHook",
        "CheckpointSaverHook", "CheckpointSaverListener", "StepCounterHook", "SummarySaverHook",
        "FinalOpsHook", "SecondOrStepTimer")},
    **{n: getattr(_input, n) for n in (
        "string_input_producer", "batch", "shuffle_batch", "Coordinator", "QueueRunner",
        "add_queue_runner", "start_queue_runners")},
    queue_runner=_Namespace("train.queue_runner", QueueRunner=_input.QueueRunner,
                            add_queue_runner=_input.add_queue_runner,
                            start_queue_runners=_input.start_queue_runners),
    **{n: getattr(_monitored, n) for n in (
        "Scaffold", "SessionCreator", "ChiefSessionCreator", "WorkerSessionCreator",
        "MonitoredSession", "SingularMonitoredSession", "MonitoredTrainingSession",
        "get_checkpoint_state", "CheckpointState")})
moving_average_variables = _moving_averages.moving_average_variables
contrib = _Namespace("contrib", framework=_Namespace(
    "contrib.framework", get_or_create_global_step=_train.get_or_create_global_step,
    get_global_step=_train.get_global_step, create_global_step=_train.create_global_step),
    slim=_Namespace("contrib.slim", prefetch_queue=_Namespace(
        "contrib.slim.prefetch_queue", prefetch_queue=_input.prefetch_queue)))
initializers = _Namespace(
    "initializers", zeros=zeros_initializer, ones=ones_initializer,
    constant=constant_initializer,
    truncated_normal=truncated_normal_initializer, random_normal=random_normal_initializer,
    random_uniform=random_uniform_initializer, glorot_uniform=glorot_uniform_initializer,
    glorot_normal=glorot_normal_initializer, variance_scaling=variance_scaling_initializer,
    global_variables=global_variables_initializer, variables=variables_initializer)
math = _Namespace("math", add=add, subtract=subtract, multiply=multiply, divide=divide,
                  add_n=add_n, reduce_sum=reduce_sum, reduce_mean=reduce_mean,
                  reduce_max=reduce_max, reduce_min=reduce_min,
                  argmax=argmax, equal=equal, negative=negative, **_ops.unary_math,
                  **_ops.binary_math, **_ops.compare)
dtypes = _Namespace("dtypes", float32=float32, int32=int32, int64=int64, uint8=uint8,
                    bool=bool, float64=float64, as_dtype=as_dtype, DType=DType)
errors = _Namespace("errors", **{n: getattr(errors, n) for n in dir(errors)
                                 if not n.startswith("_")})
flags = _Namespace("flags", **{n: getattr(_flags, n) for n in dir(_flags)
                               if n.startswith("DEFINE") or n in ("FLAGS", "Flag", "FlagValues")
                               or n.endswith("Error")})
app = _Namespace("app", run=_app.run, flags=flags)
gfile = _Namespace("gfile", **{n: getattr(_gfile, n) for n in (
    "Copy", "DeleteRecursively", "Exists", "FastGFile", "GFile", "Glob", "IsDirectory",
    "ListDirectory", "MakeDirs", "MkDir", "Open", "Remove", "Rename", "Stat", "Walk")})
io = _Namespace("io", gfile=_Namespace(
    "io.gfile", GFile=_gfile.GFile, copy=_gfile.Copy, exists=_gfile.Exists, glob=_gfile.Glob,
    isdir=_gfile.IsDirectory, join=_gfile.join, listdir=_gfile.ListDirectory,
    makedirs=_gfile.MakeDirs, mkdir=_gfile.MkDir, remove=_gfile.Remove, rename=_gfile.Rename,
    rmtree=_gfile.DeleteRecursively, stat=_gfile.Stat, walk=_gfile.walk))
summary = _Namespace("summary", **{n: getattr(_summary, n) for n in (
    "scalar", "histogram", "image", "merge", "merge_all", "FileWriter", "FileWriterCache",
    "Summary")})
Summary = _summary.Summary
# the input pipeline (_input.py: queues and readers; _host.py, _image.py: the host tensors' ops)
FixedLengthRecordReader = _input.FixedLengthRecordReader
decode_raw = _host.decode_raw
random_crop = _image.random_crop
image = _Namespace("image", **{n: getattr(_image, n) for n in (
    "random_flip_left_right", "random_flip_up_down", "flip_left_right", "flip_up_down",
    "random_brightness", "random_contrast", "adjust_brightness", "adjust_contrast",
    "per_image_standardization", "resize_image_with_crop_or_pad")},
    resize_with_crop_or_pad=_image.resize_image_with_crop_or_pad)


def __getattr__(name):
    """A TensorFlow name ctower lacks: NotImplementedError naming it
    (_names.missing), an empty namespace for one of TensorFlow's."""
    value = _names.lookup(name)
    globals()[name] = value
    return value
