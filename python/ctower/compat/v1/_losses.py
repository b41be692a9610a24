"""tf.losses over ctower's ops: the cross-entropies and the mean squared
error, weighted and reduced as TensorFlow reduces them (by default the sum
of the weighted losses over the number of nonzero weights, which is the
mean for weights of 1), each added to the LOSSES collection; and the
collections' totals. Ops are named as TensorFlow names them:
`sparse_softmax_cross_entropy_loss/value`."""
from ctower.compat.v1 import _framework as fw
from ctower.compat.v1 import _nn, _ops
from ctower.compat.v1._variables import GraphKeys


class Reduction:
    """How compute_weighted_loss reduces the weighted losses."""
    NONE = "none"
    SUM = "weighted_sum"
    SUM_OVER_BATCH_SIZE = "weighted_sum_over_batch_size"
    MEAN = "weighted_mean"
    SUM_BY_NONZERO_WEIGHTS = "weighted_sum_by_nonzero_weights"
    SUM_OVER_NONZERO_WEIGHTS = SUM_BY_NONZERO_WEIGHTS

    @classmethod
    def all(cls):
        return (cls.NONE, cls.SUM, cls.MEAN, cls.SUM_OVER_BATCH_SIZE,
                cls.SUM_OVER_NONZERO_WEIGHTS, cls.SUM_BY_NONZERO_WEIGHTS)

    @classmethod
    def validate(cls, key):
        if key not in cls.all():
            raise ValueError("Invalid Reduction Key %s. Key should be one of %s."
                             % (key, cls.all()))


def _check_broadcastable(weights, losses):
    """TensorFlow's rule: weights are a scalar, or of the losses' rank with
    each dimension 1 or the losses'."""
    w, v = weights.shape.as_list(), losses.shape.as_list()
    if not w:
        return
    if len(w) != len(v):
        raise ValueError("weights can not be broadcast to values. values.rank=%d. "
                         "weights.rank=%d. values.shape=%s. weights.shape=%s."
                         % (len(v), len(w), losses.shape, weights.shape))
    for axis, (a, b) in enumerate(zip(w, v)):
        if a is not None and b is not None and a != 1 and a != b:
            raise ValueError("weights can not be broadcast to values. Mismatch at dim %d. "
                             "values.shape=%s, weights.shape=%s." % (axis, v, w))


def _safe_mean(total, count):
    """total / count, 0 where count is 0 (TensorFlow's div_no_nan)."""
    none = _nn._is_zero(count)
    return _ops.divide(_ops.multiply(total, _ops.subtract(1.0, none)), _ops.add(count, none),
                       name="value")


def compute_weighted_loss(losses, weights=1.0, scope=None, loss_collection=GraphKeys.LOSSES,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    Reduction.validate(reduction)
    graph, (losses,) = _ops._tensors([losses])
    with graph.name_scope(scope or "weighted_loss"):
        losses = _nn.cast(losses, fw.float32)
        weights = _nn.cast(fw.convert_to_tensor(weights), fw.float32)
        _check_broadcastable(weights, losses)
        loss = _ops.multiply(losses, weights)
        if reduction != Reduction.NONE:
            total = _ops.reduce_sum(loss)
            ones = _ops.ones_like(losses)
            if reduction == Reduction.MEAN:
                loss = _safe_mean(total, _ops.reduce_sum(_ops.multiply(ones, weights)))
            elif reduction == Reduction.SUM_BY_NONZERO_WEIGHTS:
                with graph.name_scope("num_present"):
                    present = _ops.multiply(ones, _ops.subtract(1.0, _nn._is_zero(weights)))
                    count = _ops.reduce_sum(present)
                loss = _safe_mean(total, count)
            elif reduction == Reduction.SUM_OVER_BATCH_SIZE:
                loss = _safe_mean(total, _ops.reduce_sum(ones))
            else:
                loss = total
        add_loss(loss, loss_collection)
        return loss


def _squeezed_weights(weights, rank):
    """Weights of one more dimension than the losses' rank lose their last
    one, which must be 1 (a [batch, 1] column of per-example weights)."""
    weights = fw.convert_to_tensor(weights)
    if weights.shape.ndims == rank + 1:
        dims = weights.shape.as_list()
        if dims[-1] not in (1, None):
            raise ValueError("Can not squeeze dim[%d], expected a dimension of 1, got %d"
                             % (len(dims) - 1, dims[-1]))
        weights = _ops.squeeze(weights, [-1])
    return weights


def _named(value, what):
    if value is None:
        raise ValueError("Argument `%s` must not be None." % what)


def sparse_softmax_cross_entropy(labels, logits, weights=1.0, scope=None,
                                 loss_collection=GraphKeys.LOSSES,
                                 reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """The softmax cross-entropy of each example's class id (labels of
    [batch], or [batch, 1]) against logits of [batch, classes]."""
    _named(labels, "labels")
    _named(logits, "logits")
    graph, (logits,) = _ops._tensors([logits])
    with graph.name_scope(scope or "sparse_softmax_cross_entropy_loss") as ns:
        labels = fw.convert_to_tensor(labels)
        if labels.shape.ndims == logits.shape.ndims and \
                labels.shape.as_list()[-1] in (1, None):
            labels = _ops.squeeze(labels, [-1])
        weights = _squeezed_weights(weights, logits.shape.ndims - 1)
        losses = _nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits,
                                                              name="xentropy")
        return compute_weighted_loss(losses, weights, ns, loss_collection, reduction)


def softmax_cross_entropy(onehot_labels, logits, weights=1.0, label_smoothing=0, scope=None,
                          loss_collection=GraphKeys.LOSSES,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """The softmax cross-entropy of one-hot (or probability) labels against
    logits, both [batch, classes]; label_smoothing moves the labels toward
    1 / classes."""
    _named(onehot_labels, "onehot_labels")
    _named(logits, "logits")
    graph, (logits,) = _ops._tensors([logits])
    with graph.name_scope(scope or "softmax_cross_entropy_loss") as ns:
        labels = _nn.cast(onehot_labels, fw.float32)
        if not logits.shape.is_compatible_with(labels.shape):
            raise ValueError("Shapes %s and %s are incompatible" % (logits.shape, labels.shape))
        if label_smoothing > 0:
            classes = logits.shape.as_list()[-1] or labels.shape.as_list()[-1]
            if classes is None:
                raise NotImplementedError("ctower's label_smoothing needs the number of "
                                          "classes in the logits' shape")
            labels = _ops.add(_ops.multiply(labels, 1.0 - label_smoothing),
                              float(label_smoothing) / classes)
        labels = _ops.stop_gradient(labels, name="labels_stop_gradient")
        losses = _nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits,
                                                          name="xentropy")
        return compute_weighted_loss(losses, weights, ns, loss_collection, reduction)


def mean_squared_error(labels, predictions, weights=1.0, scope=None,
                       loss_collection=GraphKeys.LOSSES,
                       reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """(predictions - labels)^2, weighted and reduced."""
    _named(labels, "labels")
    _named(predictions, "predictions")
    graph, (predictions, labels) = _ops._tensors([predictions, labels])
    with graph.name_scope(scope or "mean_squared_error") as ns:
        predictions = _nn.cast(predictions, fw.float32)
        labels = _nn.cast(labels, fw.float32)
        if not predictions.shape.is_compatible_with(labels.shape):
            raise ValueError("Shapes %s and %s are incompatible"
                             % (predictions.shape, labels.shape))
        difference = _ops.subtract(predictions, labels)
        losses = _ops.multiply(difference, difference, name="SquaredDifference")
        return compute_weighted_loss(losses, weights, ns, loss_collection, reduction)


def add_loss(loss, loss_collection=GraphKeys.LOSSES):
    if loss_collection:
        fw.get_default_graph().add_to_collection(loss_collection, loss)


def get_losses(scope=None, loss_collection=GraphKeys.LOSSES):
    return fw.get_default_graph().get_collection(loss_collection, scope)


def get_regularization_losses(scope=None):
    return fw.get_default_graph().get_collection(GraphKeys.REGULARIZATION_LOSSES, scope)


def get_regularization_loss(scope=None, name="total_regularization_loss"):
    """The sum of REGULARIZATION_LOSSES (under scope), 0.0 when there is none."""
    losses = get_regularization_losses(scope)
    if losses:
        return _ops.add_n(losses, name=name)
    return fw.constant(0.0)


def get_total_loss(add_regularization_losses=True, name="total_loss", scope=None):
    """The sum of LOSSES and, with add_regularization_losses, of
    REGULARIZATION_LOSSES (under scope); add_n's ValueError when there is
    none."""
    losses = get_losses(scope=scope)
    if add_regularization_losses:
        losses += get_regularization_losses(scope=scope)
    return _ops.add_n(losses, name=name)
