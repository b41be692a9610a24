"""tf.train.ExponentialMovingAverage: a shadow variable per variable or
tensor, named `<name>/<ema name>`, non-trainable, moved by apply()'s op as
TensorFlow moves it: shadow -= (shadow - value) * (1 - decay), the decay
min(decay, (1 + n) / (10 + n)) when num_updates n is given.

A variable's shadow starts at the variable's initial value (the engine's
initializer, or its initial tensor), a tensor's at zeros. Differences from
TensorFlow: zero_debias (which TensorFlow applies to tensors only) is not
implemented and raises NotImplementedError when it would apply.
"""
from ctower.compat.v1 import _framework as fw
from ctower.compat.v1 import _ops
from ctower.compat.v1 import _schedules
from ctower.compat.v1 import _variables as vs

MOVING_AVERAGE_VARIABLES = "moving_average_variables"  # TensorFlow's GraphKeys


def moving_average_variables(scope=None):
    return fw.get_default_graph().get_collection(MOVING_AVERAGE_VARIABLES, scope)


def _base_name(x):
    """The op name TensorFlow names a shadow after ("conv1/weights", "loss")."""
    return x._name if isinstance(x, vs.Variable) else x.op.name


class ExponentialMovingAverage:
    def __init__(self, decay, num_updates=None, zero_debias=False,
                 name="ExponentialMovingAverage"):
        self._decay = decay
        self._num_updates = num_updates
        self._zero_debias = zero_debias
        self._name = name
        self._averages = {}  # id of the variable or tensor -> (it, its shadow)

    @property
    def name(self):
        return self._name

    def _shadow(self, x):
        graph = x.graph
        if not isinstance(x, vs.Variable) and self._zero_debias:
            raise NotImplementedError("ctower's ExponentialMovingAverage has no zero_debias "
                                      "for tensors (%s); give zero_debias=False" % x.name)
        if not isinstance(x, vs.Variable):
            initial = None  # the engine's zeros
        elif x._initial is not None:  # its initial value, not a read racing its initializer
            initial = x._initial
        else:  # the engine initializes it before any run that reads it
            initial = x._read
        with graph.as_default(), graph.control_dependencies(None):
            shadow = vs.Variable(trainable=False, _spec=(vs._ZEROS, 0.0, None, initial),
                                 _shape=x.shape.as_list(), _full_name=self.average_name(x))
        if isinstance(x, vs.Variable):
            graph.add_to_collection(MOVING_AVERAGE_VARIABLES, x)
        return shadow

    def apply(self, var_list=None):
        """The op that moves each shadow one step toward its variable's (or
        tensor's) value, making the shadows on first use."""
        if var_list is None:
            var_list = vs.trainable_variables()
        var_list = list(var_list)
        for x in var_list:
            if not isinstance(x, (vs.Variable, fw.Tensor)):
                raise TypeError("ExponentialMovingAverage averages Variables and Tensors, "
                                "not %r" % (x,))
            if x.dtype is not fw.float32:
                raise TypeError("The variables must be half, float, or double: %s" % x.name)
            if id(x) not in self._averages:
                self._averages[id(x)] = (x, self._shadow(x))
        graph = var_list[0].graph if var_list else fw.get_default_graph()
        with graph.as_default(), graph.name_scope(self._name) as scope:
            decay = fw.constant(float(self._decay), name="decay") \
                if not isinstance(self._decay, (fw.Tensor, vs.Variable)) \
                else _schedules._float(self._decay)
            if self._num_updates is not None:
                n = _schedules._float(self._num_updates)
                decay = _schedules.minimum(decay, _ops.divide(_ops.add(1.0, n),
                                                              _ops.add(10.0, n)))
            complement = _ops.subtract(1.0, decay)
            updates = []
            for x in var_list:
                shadow = self._averages[id(x)][1]
                value = x._read if isinstance(x, vs.Variable) else x
                updates.append(shadow.assign_sub(
                    _ops.multiply(_ops.subtract(shadow._read, value), complement)))
            return _ops.group(*updates, name=scope.rstrip("/") if scope else self._name)

    def average(self, var):
        """The shadow variable of var, None before apply() made it."""
        entry = self._averages.get(id(var))
        return entry[1] if entry is not None else None

    def average_name(self, var):
        return _base_name(var) + "/" + self._name

    def variables_to_restore(self, moving_avg_variables=None):
        """Saver's var_list that restores each moving-averaged variable from
        its shadow's name, and every other global variable from its own."""
        if moving_avg_variables is None:
            moving_avg_variables = vs.trainable_variables() + moving_average_variables()
        name_map = {}
        averaged = set()
        for v in moving_avg_variables:
            name_map[self.average_name(v)] = v
            averaged.add(v.name)
        for v in vs.global_variables():
            if v.name not in averaged and v._name not in name_map:
                name_map[v._name] = v
        return name_map
