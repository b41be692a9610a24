"""The names of TensorFlow 1.x that ctower has not got, and what a missing
one does: `tf.contrib.slim.arg_scope` raises

    NotImplementedError: ctower does not implement tf.contrib.slim.arg_scope (yet); ...

naming it in full, with what to use instead where ctower has an
equivalent. The error is an AttributeError too, so that `hasattr(tf.train,
'MonitoredTrainingSession')` is False and `getattr(tf, name, default)`
gives the default, as they do for code that probes which TensorFlow it
runs on. Names starting with `_` (`__wrapped__`, `_fields`: what pytest,
pickle and NumPy look for) raise a plain AttributeError.

TensorFlow's namespaces that ctower lacks (tf.keras.layers,
tf.summary.experimental, tf.contrib's but contrib.framework's global step)
are empty namespaces, so that a name under them is named in full;
`hasattr(tf, 'keras')` is therefore True.
"""

# TensorFlow 1.x's namespaces, every one ctower has not filled (the
# TensorFlow 1.15 tree, tf.contrib's best-known parts among them)
_NAMESPACES = frozenset("""
audio autograph bitwise config config.experimental config.optimizer config.threading data
data.experimental debugging distribute distribute.cluster_resolver distribute.experimental
distributions estimator estimator.export experimental feature_column graph_util io
keras keras.activations keras.applications keras.backend keras.callbacks keras.datasets
keras.initializers keras.layers keras.losses keras.metrics keras.models keras.optimizers
keras.preprocessing keras.regularizers keras.utils linalg lite logging lookup manip
metrics mixed_precision nest nn.experimental nn.rnn_cell profiler python_io quantization queue
ragged random resource_loader saved_model saved_model.builder saved_model.loader
saved_model.signature_constants saved_model.signature_def_utils saved_model.tag_constants
saved_model.utils sets signal sparse spectral strings summary.experimental sysconfig test
tpu
train.experimental user_ops version xla
contrib.layers contrib.learn contrib.learn.datasets
contrib.learn.datasets.mnist contrib.losses contrib.metrics contrib.rnn contrib.seq2seq
contrib.slim.nets contrib.slim.queues
contrib.tensorboard contrib.training contrib.distribute contrib.opt contrib.data
contrib.image contrib.keras contrib.eager contrib.summary contrib.tpu

""".split())

# a TensorFlow name -> what to use in ctower instead
INSTEAD = {
    "contrib.layers.flatten": "tf.layers.flatten",
    "contrib.layers.xavier_initializer": "tf.glorot_uniform_initializer",
    "contrib.layers.batch_norm": "tf.layers.batch_normalization",
    "contrib.slim.batch_norm": "tf.layers.batch_normalization",
    "keras.initializers.glorot_uniform": "tf.glorot_uniform_initializer",
    "to_double": "tf.to_float (ctower has no float64: README.md's Python section)",
    "initialize_variables": "tf.variables_initializer",
    "initialize_local_variables": "tf.local_variables_initializer",
    "all_variables": "tf.global_variables",
    "train.Supervisor": "tf.Session with tf.train.Saver",
    "train.checkpoint_exists": "tf.train.latest_checkpoint(folder) is not None",
    "summary.audio": "tf.summary.image or tf.summary.histogram",
    "summary.text": "print(), or ctower train's TensorBoard text (ctower.train(config))",
    "summary.tensor_summary": "tf.summary.histogram",
    "train.SummaryWriter": "tf.summary.FileWriter",
    "data.Dataset": "ctower.data.Batcher, or ctower.train(config) with a dataset section",
    "contrib.learn.datasets.mnist.read_data_sets":
        "tf.examples.tutorials.mnist.input_data.read_data_sets",
    "math.truediv": "tf.truediv",
    "math.reduce_sum": "tf.reduce_sum",
    "math.reduce_mean": "tf.reduce_mean",
}


class MissingNameError(NotImplementedError, AttributeError):
    """A TensorFlow name ctower does not implement. Being an AttributeError,
    hasattr() is False for it and getattr() with a default gives the default."""

    # AttributeError's name, which the interpreter fills in and Python 3.12's
    # traceback reads to suggest a near name ("Did you mean"): a near name
    # of ctower is no substitute for the one asked for, so none is offered
    name = property(lambda self: None, lambda self, value: None)


def missing(dotted):
    """The error for tf.<dotted>: NotImplementedError naming it in full (and
    AttributeError: hasattr() is False); a plain AttributeError for a name
    of `_`."""
    last = dotted.rsplit(".", 1)[-1]
    if last.startswith("_"):
        return AttributeError("tf.%s has no attribute %r" % (dotted.rsplit(".", 1)[0], last)
                              if "." in dotted else "module 'ctower.compat.v1' has no attribute %r"
                              % last)
    instead = INSTEAD.get(dotted)
    message = "ctower does not implement tf.%s (yet); " % dotted
    if instead:
        message += "use %s instead" % instead
    else:
        message += "see docs/python.md for what ctower.compat.v1 has"
    return MissingNameError(message + " (this error is also an AttributeError, for hasattr)")


def lookup(dotted):
    """What tf.<dotted> is when ctower has not defined it: an empty
    Namespace for one of TensorFlow's namespaces, else raises missing()."""
    if dotted in _NAMESPACES:
        return Namespace(dotted)
    raise missing(dotted)


class Namespace:
    """One of TensorFlow's namespaces (tf.nn, tf.train.queue_runner): the
    names given, and for any other name lookup()'s answer under its dotted
    name."""

    def __init__(self, dotted, **names):
        self.__dict__["_dotted"] = dotted
        self.__dict__.update(names)

    def __getattr__(self, name):
        value = lookup(self._dotted + "." + name)
        self.__dict__[name] = value
        return value

    def __repr__(self):
        return "<namespace tf.%s of ctower.compat.v1>" % self._dotted

    def __dir__(self):
        return sorted(n for n in self.__dict__ if not n.startswith("_"))
