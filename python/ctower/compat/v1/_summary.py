"""tf.summary over ctower: summary ops, FileWriter and FileWriterCache, with
TensorFlow 1.x's signatures, names and tags.

ctower's engine has no string tensors, so a summary op is not a node of the
graph: tf.summary.scalar (histogram, image, merge) returns a SummaryTensor,
which Session.run fetches as TensorFlow's summary tensors are fetched. Its
run fetches the tensor it summarizes and turns the value, on the host, into
a serialized Summary (bytes, TensorFlow's summary.proto), packed by ctower's
C library (src/observe/summary_values.c) as TensorFlow's kernels pack it. A
FileWriter writes those bytes as events to the event file `ctower train`
writes (src/observe/summary_writer.c), which TensorBoard reads.

Where it differs from TensorFlow:
- A SummaryTensor has a name, dtype tf.string, shape [], graph and op
  (name, type), but it is no input of other ops, and the graph has no node
  of its name (the name is reserved: a later op of that name is renamed).
- A summary's tensor of known shape that the op cannot take (scalar's of
  rank > 0, image's of rank other than 4) is a ValueError when it is built
  (TensorFlow's InvalidArgumentError comes at the run).
- tf.summary.merge takes the SummaryTensors of tf.summary's ops only (no
  other string tensors), and does not look for duplicate tags (TensorFlow's
  run fails on one).
- FileWriter writes as add_summary is called (the file's buffer is handed
  to the system every flush_secs, checked at each add_*, and at flush() and
  close()): there is no queue (max_queue) or writing thread. add_graph and
  add_run_metadata write nothing (ctower's graphs have no GraphDef, its runs
  no RunMetadata); filename_suffix and session are NotImplementedError.
"""
import re
import time
import weakref

import numpy as np

from ctower import _ctower
from ctower.compat.v1 import _framework as fw
from ctower.compat.v1 import _ops
from ctower.compat.v1._variables import GraphKeys


# ---- summary tensors ------------------------------------------------------------------

class _SummaryOp:
    """What a SummaryTensor's .op tells: its name, type and graph."""

    def __init__(self, graph, name, op_type, inputs):
        self.graph = graph
        self.name = name
        self.type = op_type
        self.inputs = inputs
        self.device = ""

    @property
    def outputs(self):
        return [self._output]

    def __repr__(self):
        return "<tf.Operation '%s' type=%s>" % (self.name, self.type)


class SummaryTensor:
    """A summary op's output: Session.run (and eval) gives a serialized
    Summary, bytes, made on the host from the run's values of `inputs`
    (tensors, or other SummaryTensors) by `make(values)`."""

    dtype = fw.string

    def __init__(self, graph, name, op_type, inputs, make):
        self._graph = graph
        self._inputs = list(inputs)
        self._make = make
        self._op = _SummaryOp(graph, name, op_type, self._inputs)
        self._op._output = self

    graph = property(lambda self: self._graph)
    op = property(lambda self: self._op)
    name = property(lambda self: self._op.name + ":0")
    shape = property(lambda self: fw.TensorShape([]))
    device = property(lambda self: "")
    value_index = 0

    def get_shape(self):
        return self.shape

    def _host_fetch(self):
        """For Session.run: what to fetch, and the function of their values
        that is this tensor's value."""
        return self._inputs, self._make

    def eval(self, feed_dict=None, session=None):
        from ctower.compat.v1._session import _session_for
        return _session_for(session, self._graph).run(self, feed_dict)

    def __repr__(self):
        return "<tf.Tensor '%s' shape=() dtype=string>" % self.name


_INVALID_TAG_CHARACTERS = re.compile(r"[^-/\w\.]")


def _clean_tag(name):
    """TensorFlow's: characters other than letters, digits, _ - / . become
    _, and leading slashes go."""
    if name is not None:
        name = _INVALID_TAG_CHARACTERS.sub("_", name).lstrip("/")
    return name


def _summary(name, family, values, rank, collections, op_type, make):
    """A summary op of `values`: its tag and name as TensorFlow's
    summary_scope makes them (the unique name scope of family/name, the tag
    prefixed by family again), added to `collections`."""
    graph, (tensor,) = _ops._tensors([values], ranks=[rank])
    ndims = tensor.shape.ndims
    if rank is not None and ndims is not None and ndims != rank:
        raise ValueError("%s needs a tensor of rank %d, not %r of shape %s"
                         % (op_type, rank, tensor.name, tensor.shape))
    name, family = _clean_tag(name), _clean_tag(family)
    scope = graph.unique_name(name if family is None else "%s/%s" % (family, name))
    tag = scope if family is None else "%s/%s" % (family, scope)
    summary = SummaryTensor(graph, scope, op_type, [tensor], lambda v: make(tag, v[0]))
    for key in ([GraphKeys.SUMMARIES] if collections is None else collections):
        graph.add_to_collection(key, summary)
    return summary


def scalar(name, tensor, collections=None, family=None):
    """A summary of one value (a tensor of shape []), shown as a chart."""
    return _summary(name, family, tensor, 0, collections, "ScalarSummary",
                    lambda tag, v: _ctower.summary_scalar(tag, float(v)))


def _histogram(tag, values):
    return _ctower.summary_histogram(tag, np.ascontiguousarray(values, dtype=np.float64))


def histogram(name, values, collections=None, family=None):
    """A summary of the distribution of values (any shape): TensorFlow's
    histogram in its default buckets. A NaN or an infinity among them is
    InvalidArgumentError at the run, as TensorFlow has it."""
    return _summary(name, family, values, None, collections, "HistogramSummary", _histogram)


def _as_uint8(image):
    """TensorFlow's image summary's pixels of a float image [h, w, c]:
    scaled by 255/max if no finite value is negative, else by 127/max|x|
    and offset by 128, truncated; a pixel with a non-finite channel is red."""
    finite = np.isfinite(image).all(axis=-1)
    good = image[finite]
    low = float(good.min()) if good.size else np.inf
    high = float(good.max()) if good.size else -np.inf
    if low < 0:
        bound = max(abs(low), abs(high))
        scale, offset = (0.0 if bound < 1e-6 else 127.0 / bound), 128.0
    else:
        scale, offset = (0.0 if high < 1e-6 else 255.0 / high), 0.0
    with np.errstate(invalid="ignore"):
        out = (image.astype(np.float32) * np.float32(scale) + np.float32(offset))
    out = np.where(finite[..., None], out, 0).astype(np.uint8)
    out[~finite] = np.array([255, 0, 0, 255], np.uint8)[:image.shape[-1]]
    return out


def image(name, tensor, max_outputs=3, collections=None, family=None):
    """A summary of up to max_outputs images of a [batch, height, width,
    channels] tensor (channels 1, 3 or 4), each encoded as PNG under
    '<tag>/image/<i>' ('<tag>/image' when max_outputs is 1). uint8 pixels
    are taken as they are; a float image is scaled into 0..255 as
    TensorFlow scales it (_as_uint8)."""
    max_outputs = int(max_outputs)
    if max_outputs < 1:
        raise ValueError("max_outputs must be positive, not %d" % max_outputs)

    def make(tag, value):
        value = np.asarray(value)
        if value.ndim != 4 or value.shape[-1] not in (1, 3, 4):
            from ctower import errors
            raise errors.InvalidArgumentError(
                None, None, "Tensor must be 4-D with last dim 1, 3, or 4, not %s"
                % (list(value.shape),))
        images = value[:max_outputs]
        if images.dtype != np.uint8:
            images = np.stack([_as_uint8(i) for i in images]) if len(images) else images
        tags = ["%s/image/%d" % (tag, i) if max_outputs > 1 else tag + "/image"
                for i in range(len(images))]
        _, height, width, channels = value.shape
        return _ctower.summary_images(tags, np.ascontiguousarray(images, np.uint8).tobytes(),
                                      height, width, channels)

    return _summary(name, family, tensor, 4, collections, "ImageSummary", make)


def merge(inputs, collections=None, name=None):
    """One summary of the values of all the summaries in inputs (their
    serialized Summaries joined, which protobuf reads as one)."""
    inputs = list(inputs)
    for s in inputs:
        if not isinstance(s, SummaryTensor):
            raise TypeError("tf.summary.merge takes the summaries that tf.summary ops return, "
                            "not %r" % (s,))
    graph = inputs[0].graph if inputs else fw.get_default_graph()
    for s in inputs:
        if s.graph is not graph:
            raise ValueError("%s must be from the same graph as %s." % (s, inputs[0]))
    scope = graph.unique_name(name or "Merge")
    merged = SummaryTensor(graph, "%s/%s" % (scope, name or "MergeSummary"), "MergeSummary",
                           inputs, lambda values: b"".join(values))
    for key in (collections or []):
        graph.add_to_collection(key, merged)
    return merged


def merge_all(key=GraphKeys.SUMMARIES, scope=None, name=None):
    """merge() of the summaries in collection `key` of the default graph
    (those whose name `scope` matches), or None when there is none."""
    summaries = fw.get_default_graph().get_collection(key, scope=scope)
    return merge(summaries, name=name) if summaries else None


# ---- Summary protos made by hand -------------------------------------------------------

class Summary:
    """tf.Summary, for summaries made in Python: Summary(value=[
    Summary.Value(tag=..., simple_value=...)]) given to add_summary.
    Only simple_value values can be serialized."""

    class Value:
        def __init__(self, tag="", simple_value=None, **others):
            if others:
                raise NotImplementedError("ctower's tf.Summary.Value holds a tag and a "
                                          "simple_value, not %s" % ", ".join(sorted(others)))
            self.tag, self.simple_value = tag, simple_value

    def __init__(self, value=None):
        self.value = list(value or [])

    def SerializeToString(self):
        for v in self.value:
            if v.simple_value is None:
                raise NotImplementedError("ctower serializes a tf.Summary.Value of a "
                                          "simple_value only (the tag %r has none)" % v.tag)
        return b"".join(_ctower.summary_scalar(v.tag, float(v.simple_value))
                        for v in self.value)


# ---- writing ---------------------------------------------------------------------------

class FileWriter:
    """Writes summaries to a new TensorBoard event file in logdir
    (events.out.tfevents.<seconds>.<hostname>, created, never through a
    link, as `ctower train`'s are; logdir is made if missing)."""

    def __init__(self, logdir, graph=None, max_queue=10, flush_secs=120, graph_def=None,
                 filename_suffix=None, session=None):
        if session is not None:
            raise NotImplementedError("ctower's tf.summary.FileWriter has no session= (the "
                                      "summary ops of TensorFlow 2); leave it out")
        if filename_suffix:
            raise NotImplementedError("ctower's tf.summary.FileWriter names its files "
                                      "events.out.tfevents.<seconds>.<hostname>, without a "
                                      "filename_suffix; leave it out")
        self._logdir = str(logdir)
        self._flush_secs = float(flush_secs)
        self._c = None
        self.reopen()
        if graph is not None or graph_def is not None:
            self.add_graph(graph, graph_def=graph_def)

    def get_logdir(self):
        return self._logdir

    def reopen(self):
        """Opens a new event file after close() (does nothing while open)."""
        if self._c is None:
            self._c = _ctower.SummaryWriter(self._logdir)
            self._flushed = time.monotonic()
            # what was written reaches the file at exit, close() or not
            self._finalizer = weakref.finalize(self, self._c.close)

    def add_summary(self, summary, global_step=None):
        """Writes a Summary, the bytes of a summary op's run (or a tf.Summary),
        as an event at global_step (0 when None). Nothing is written after
        close(), as TensorFlow's writer writes nothing then."""
        if isinstance(summary, Summary):
            summary = summary.SerializeToString()
        if not isinstance(summary, (bytes, bytearray, memoryview)):
            raise TypeError("add_summary takes a Summary, the bytes that a summary op's run "
                            "returns, not %s" % type(summary).__name__)
        if self._c is None:
            return
        self._c.write(0 if global_step is None else int(global_step), bytes(summary))
        self._maybe_flush()

    def add_graph(self, graph, global_step=None, graph_def=None):
        """Writes nothing: ctower's graphs have no GraphDef for TensorBoard's
        graph view."""

    def add_run_metadata(self, run_metadata, tag, global_step=None):
        """Writes nothing: ctower's runs fill no RunMetadata."""

    def _maybe_flush(self):
        if time.monotonic() - self._flushed >= self._flush_secs:
            self.flush()

    def flush(self):
        """Hands what was written to the system."""
        if self._c is not None:
            self._c.flush()
            self._flushed = time.monotonic()

    def close(self):
        """Flushes and closes the event file; reopen() opens a new one."""
        if self._c is not None:
            c, self._c = self._c, None
            self._finalizer.detach()
            c.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


class FileWriterCache:
    """One FileWriter per logdir, for the whole process."""
    _writers = {}

    @staticmethod
    def get(logdir):
        writers = FileWriterCache._writers
        if logdir not in writers:
            writers[logdir] = FileWriter(logdir)
        return writers[logdir]

    @staticmethod
    def clear():
        """Closes the writers and forgets them."""
        writers, FileWriterCache._writers = FileWriterCache._writers, {}
        for w in writers.values():
            w.close()
