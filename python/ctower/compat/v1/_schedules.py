"""tf.train's learning-rate schedules (exponential_decay, piecewise_constant,
...): graph tensors of the global step, with TensorFlow's arguments and
formulas, that an optimizer takes as its learning_rate (it evaluates the
tensor before each update, with the step before that update's increment,
as TensorFlow's update reads it).

The engine has no pow, comparison or select ops: rate^p is exp(p * log(rate))
(log(rate) in double precision when rate is a number), and a comparison is
an exact 0/1 float built from tf.sign (greater() below), so piecewise_constant
and polynomial_decay's min pick their value exactly, as tf.where would.
"""
import math

from ctower.compat.v1 import _framework as fw
from ctower.compat.v1 import _nn
from ctower.compat.v1 import _ops
from ctower.compat.v1 import _variables as vs


def _float(x, name=None):
    """x (a number, a tensor, a Variable such as the global step) as a float32 tensor."""
    if isinstance(x, vs.Variable):
        x = x._read
    if isinstance(x, fw.Tensor):
        return x if x.dtype is fw.float32 else _nn.cast(x, fw.float32)
    return fw.constant(float(x), dtype=fw.float32, name=name or "Const")


def greater(x, y):
    """1.0 where x > y, else 0.0, exactly: with s = sign(x - y) in {-1, 0, 1},
    (s + s*s) / 2 (float32 x and y)."""
    s = _ops.unary_math["sign"](_ops.subtract(x, y))
    return _ops.multiply(_ops.add(s, _ops.multiply(s, s)), 0.5)


def minimum(x, y):
    """min(x, y), exactly one of them: x where not x > y, else y."""
    pick_y = greater(x, y)
    return _ops.add(_ops.multiply(x, _ops.subtract(1.0, pick_y)), _ops.multiply(y, pick_y))


def _power(base, exponent):
    """base^exponent for a positive base: exp(exponent * log(base))."""
    if not isinstance(base, fw.Tensor):
        log_base = fw.constant(math.log(float(base)) if float(base) > 0 else -math.inf,
                               dtype=fw.float32)
    else:
        log_base = _ops.unary_math["log"](base)
    return _ops.unary_math["exp"](_ops.multiply(exponent, log_base))


def _need_step(global_step, schedule):
    if global_step is None:
        raise ValueError("global_step is required for %s." % schedule)


def _progress(global_step, decay_steps, staircase):
    p = _ops.divide(_float(global_step), _float(decay_steps))
    return _ops.unary_math["floor"](p) if staircase else p


def exponential_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False,
                      name=None):
    """learning_rate * decay_rate ^ (global_step / decay_steps), the exponent
    floored when staircase."""
    _need_step(global_step, "exponential_decay")
    with fw.get_default_graph().name_scope(name or "ExponentialDecay"):
        p = _progress(global_step, decay_steps, staircase)
        rate = decay_rate if not isinstance(decay_rate, (fw.Tensor, vs.Variable)) \
            else _float(decay_rate)
        return _ops.multiply(_float(learning_rate, "learning_rate"), _power(rate, p))


def natural_exp_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False,
                      name=None):
    """learning_rate * exp(-decay_rate * global_step / decay_steps)."""
    _need_step(global_step, "natural_exp_decay")
    with fw.get_default_graph().name_scope(name or "NaturalExpDecay"):
        p = _progress(global_step, decay_steps, staircase)
        exponent = _ops.unary_math["exp"](_ops.multiply(_ops.negative(_float(decay_rate)), p))
        return _ops.multiply(_float(learning_rate, "learning_rate"), exponent)


def inverse_time_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False,
                       name=None):
    """learning_rate / (1 + decay_rate * global_step / decay_steps)."""
    _need_step(global_step, "inverse_time_decay")
    with fw.get_default_graph().name_scope(name or "InverseTimeDecay"):
        p = _progress(global_step, decay_steps, staircase)
        denominator = _ops.add(fw.constant(1.0), _ops.multiply(_float(decay_rate), p))
        return _ops.divide(_float(learning_rate, "learning_rate"), denominator)


def polynomial_decay(learning_rate, global_step, decay_steps, end_learning_rate=0.0001,
                     power=1.0, cycle=False, name=None):
    """(learning_rate - end) * (1 - step / decay_steps) ^ power + end, the
    step held at decay_steps; with cycle, decay_steps times the first
    multiple of it past the step (1 at step 0)."""
    _need_step(global_step, "polynomial_decay")
    with fw.get_default_graph().name_scope(name or "PolynomialDecay"):
        step = _float(global_step)
        steps = _float(decay_steps)
        if cycle:
            at_zero = _nn.cast(_ops_equal(step, 0.0), fw.float32)
            multiplier = _ops.add(_ops.unary_math["ceil"](_ops.divide(step, steps)), at_zero)
            steps = _ops.multiply(steps, multiplier)
        else:
            step = minimum(step, steps)
        remaining = _ops.subtract(1.0, _ops.divide(step, steps))
        if not isinstance(power, (fw.Tensor, vs.Variable)) and float(power) == 1.0:
            factor = remaining
        else:
            factor = _power(remaining, _float(power))
        start, end = _float(learning_rate, "learning_rate"), _float(end_learning_rate)
        return _ops.add(_ops.multiply(_ops.subtract(start, end), factor), end)


def _ops_equal(x, y):
    from ctower.compat import v1
    return v1.equal(x, y)


def piecewise_constant(x, boundaries, values, name=None):
    """values[0] while x <= boundaries[0], values[i] while boundaries[i-1] <
    x <= boundaries[i], values[-1] past the last boundary: the sum of each
    value times its interval's exact 0/1 indicator."""
    if len(boundaries) != len(values) - 1:
        raise ValueError("The length of boundaries should be 1 less than the length of values")
    with fw.get_default_graph().name_scope(name or "PiecewiseConstant"):
        x = _float(x)
        above = [greater(x, _float(b)) for b in boundaries]  # x > boundaries[i]
        total = None
        for i, value in enumerate(values):
            inside = above[i - 1] if i > 0 else None
            if i < len(boundaries):
                below = _ops.subtract(1.0, above[i])  # x <= boundaries[i]
                inside = below if inside is None else _ops.multiply(inside, below)
            term = _ops.multiply(_float(value), inside) if inside is not None else _float(value)
            total = term if total is None else _ops.add(total, term)
        return total
