"""Sessions and their configuration (ConfigProto, GPUOptions), as TensorFlow
1.x has them, over ctower's sessions (ctower._ctower.Session,
include/ctower/session.h).

Session.run takes TensorFlow's nested fetches (lists, tuples, namedtuples,
dicts; tensors, operations, variables, names) and feed_dict; NumPy arrays
of the placeholder's dtype are fed in place, and fetched values come back
as NumPy arrays over the engine's buffers. The placement log of
log_device_placement is printed to sys.stdout, as TensorFlow's printf does.
"""
import sys
import threading

import numpy as np

from ctower import _ctower
from ctower import errors
from ctower.compat.v1 import _framework as fw
from ctower.compat.v1._framework import Graph, Operation, Tensor, get_default_graph


# ---- configuration ---------------------------------------------------------------------

class _Message:
    """A protocol-buffer-like message: known fields only, with defaults."""
    _fields = {}

    def __init__(self, **kwargs):
        for key, default in self._fields.items():
            object.__setattr__(self, key, default() if callable(default) else default)
        for key, value in kwargs.items():
            setattr(self, key, value)

    def __setattr__(self, key, value):
        if key not in self._fields:
            raise AttributeError("Assignment not allowed (no field \"%s\" in protocol message "
                                 "object)." % key)
        object.__setattr__(self, key, value)

    def __repr__(self):
        fields = ", ".join("%s=%r" % (k, getattr(self, k)) for k in self._fields)
        return "%s(%s)" % (type(self).__name__, fields)


class GPUOptions(_Message):
    _fields = {"per_process_gpu_memory_fraction": 0.0, "allow_growth": False,
               "visible_device_list": "", "allocator_type": "",
               "deferred_deletion_bytes": 0, "polling_active_delay_usecs": 0,
               "force_gpu_compatible": False}


class GraphOptions(_Message):
    _fields = {"enable_bfloat16_sendrecv": False, "build_cost_model": 0,
               "infer_shapes": False, "place_pruned_graph": False,
               "timeline_step": 0}


class ConfigProto(_Message):
    _fields = {"device_count": dict, "intra_op_parallelism_threads": 0,
               "inter_op_parallelism_threads": 0, "use_per_session_threads": False,
               "allow_soft_placement": False, "log_device_placement": False,
               "gpu_options": GPUOptions, "graph_options": GraphOptions,
               "operation_timeout_in_ms": 0, "isolate_session_state": False}


class RunOptions(_Message):
    _fields = {"trace_level": 0, "timeout_in_ms": 0, "inter_op_thread_pool": 0,
               "output_partition_graphs": False, "report_tensor_allocations_upon_oom": False}


class RunMetadata(_Message):
    _fields = {"step_stats": None, "cost_graph": None, "partition_graphs": list}


def _engine_options(config):
    """The keyword arguments of ctower._ctower.Session for a ConfigProto."""
    config = config if config is not None else ConfigProto()
    counts = {str(k).upper(): int(v) for k, v in dict(config.device_count).items()}
    gpu = config.gpu_options
    fraction = gpu.per_process_gpu_memory_fraction
    return {
        "log_device_placement": int(bool(config.log_device_placement)),
        "allow_soft_placement": int(bool(config.allow_soft_placement)),
        "cpu": counts.get("CPU", 1),
        "gpu": counts.get("GPU", -1),
        "intra_op_parallelism_threads": int(config.intra_op_parallelism_threads),
        "inter_op_parallelism_threads": int(config.inter_op_parallelism_threads),
        "allow_growth": int(bool(gpu.allow_growth)),
        "per_process_gpu_memory_fraction": float(fraction) if fraction > 0 else 1.0,
        "visible_device_list": str(gpu.visible_device_list),
    }


# ---- fetches ----------------------------------------------------------------------------

def _flatten(fetches, graph, out):
    """Appends each leaf of the fetch structure to `out` and returns a
    function that rebuilds the structure from their values."""
    if fetches is None:
        raise TypeError("Fetch argument None has invalid type <class 'NoneType'>")
    if isinstance(fetches, dict):
        keys = list(fetches)
        builders = [_flatten(fetches[k], graph, out) for k in keys]
        cls = type(fetches)
        return lambda values: cls(zip(keys, (b(values) for b in builders)))
    if isinstance(fetches, (list, tuple)):
        builders = [_flatten(f, graph, out) for f in fetches]
        if isinstance(fetches, tuple) and hasattr(fetches, "_fields"):  # a namedtuple
            cls = type(fetches)
            return lambda values: cls(*(b(values) for b in builders))
        cls = type(fetches)
        return lambda values: cls(b(values) for b in builders)
    if hasattr(type(fetches), "_host_fetch"):  # a value made on the host (tf.summary's)
        inner, make = fetches._host_fetch()
        builder = _flatten(inner, graph, out)
        if getattr(make, "per_run", False):  # given the run's values, the same for all leaves
            return lambda values: make(builder(values), values)
        return lambda values: make(builder(values))
    try:
        element = graph.as_graph_element(fetches)
    except TypeError as e:
        raise TypeError("Fetch argument %r has invalid type %r, must be a string or Tensor. "
                        "(%s)" % (fetches, type(fetches), e))
    except (ValueError, KeyError) as e:
        raise ValueError("Fetch argument %r cannot be interpreted as a Tensor. (%s)"
                         % (fetches, e))
    position = len(out)
    out.append(element)
    return lambda values: values[position]


def _as_value(holder, dtype):
    value = np.asarray(holder)
    if dtype is fw.bool:
        value = value.view(np.bool_)
    return value[()] if value.ndim == 0 else value


# ---- sessions ---------------------------------------------------------------------------

class _DefaultSessions(threading.local):
    def __init__(self):
        self.stack = []


_default_sessions = _DefaultSessions()


def get_default_session():
    return _default_sessions.stack[-1] if _default_sessions.stack else None


def _session_for(session, graph):
    session = session if session is not None else get_default_session()
    if session is not None and not isinstance(session, Session):
        raise TypeError("session must be a tf.Session, not %s" % type(session).__name__)
    if session is None:
        raise ValueError("Cannot evaluate tensor using `eval()`: No default session is "
                         "registered. Use `with sess.as_default()` or pass an explicit session "
                         "to `eval(session=sess)`")
    if session.graph is not graph:
        raise ValueError("Cannot use the given session to evaluate tensor: the tensor's graph "
                         "is different from the session's graph.")
    return session


class _DefaultContext:
    def __init__(self, session):
        self._session = session

    def __enter__(self):
        _default_sessions.stack.append(self._session)
        return self._session

    def __exit__(self, *exc):
        _default_sessions.stack.remove(self._session)
        return False


class Session:
    """A session over a graph: its devices, placement and variables."""

    def __init__(self, target="", graph=None, config=None):
        if target not in ("", None):
            raise NotImplementedError("ctower runs in process (target ''); a job of several "
                                      "processes runs under mpirun")
        if graph is not None and not isinstance(graph, Graph):
            raise TypeError("graph must be a tf.Graph, but got %s" % type(graph).__name__)
        self._graph = graph if graph is not None else get_default_graph()
        self._config = config if config is not None else ConfigProto()
        self._c = None
        self._deferred = None
        self._steps = {}        # apply op id -> updates applied (Adam's t)
        self._given_values = set()  # indices of the graph's value variables given a value
        self._values_checked = 0    # graph._value_variables seen by _initialize_values
        self._initializing = False  # in _initialize_values, under _values_lock
        self._values_lock = threading.RLock()  # runs from other threads wait for the values
        self._context = None
        options = _engine_options(self._config)
        try:
            self._c = _ctower.Session(self._graph._c, **options)
        except errors.InvalidArgumentError as e:
            # TensorFlow places a graph when it first runs it: so does the error
            if not str(e).startswith("Cannot assign a device"):
                raise
            self._deferred = e
        self._print_log()

    @property
    def graph(self):
        return self._graph

    @property
    def graph_def(self):
        raise NotImplementedError("ctower graphs have no GraphDef")

    @property
    def sess_str(self):
        return ""

    def _print_log(self):
        if self._c is not None and self._config.log_device_placement:
            text = self._c.take_log()
            if text:
                sys.stdout.write(text)

    def _engine(self):
        if self._deferred is not None:
            raise type(self._deferred)(None, None, str(self._deferred))
        if self._c is None or self._c.closed():
            raise RuntimeError("Attempted to use a closed Session.")
        return self._c

    def as_default(self):
        return _DefaultContext(self)

    def __enter__(self):
        self._context = _DefaultContext(self)
        self._context.__enter__()
        return self

    def __exit__(self, exc_type, exc, tb):
        if self._context is not None:
            self._context.__exit__(exc_type, exc, tb)
            self._context = None
        self.close()
        return False

    def close(self):
        if self._c is not None:
            self._c.close()
        self._deferred = None
        self._closed = True

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def list_devices(self):
        return [_DeviceAttributes(name) for name in self._engine().devices()]

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        engine = self._engine()
        leaves, positions, rebuild, feeds, fetch_list, targets = self._request(fetches,
                                                                               feed_dict)
        self._initialize_values(feed_dict)
        results = engine.run(feeds, fetch_list, targets)
        self._print_log()
        values = []
        for element, position in zip(leaves, positions):
            values.append(None if position is None else _as_value(results[position],
                                                                  element.dtype))
        return rebuild(values)

    def _run_repeated(self, fetches, feed_dict, repeat):
        """For benchmarks: the run `repeat` times from C, without Python
        between the runs (each optimizer's learning rate fed as for the
        first); each run's seconds."""
        engine = self._engine()
        _, _, _, feeds, fetch_list, targets = self._request(fetches, feed_dict)
        self._initialize_values(feed_dict)
        return engine.run(feeds, fetch_list, targets, repeat)

    def _initialize_values(self, feed_dict):
        """Gives each variable whose initial value is a value (a list, an
        array, a tensor), made since the last call, that value, in the order
        they were made (an initial tensor may read an earlier variable),
        unless this session already gave it one (its initializer ran in the
        request, or a value was assigned to it). The engine initializes the
        other variables on first use by itself."""
        pending = self._graph._value_variables
        if self._values_checked == len(pending):
            return
        with self._values_lock:
            if self._initializing:  # the runs of initial tensors below
                return
            self._initializing = True
            try:
                self._give_values(pending, feed_dict)
            finally:
                self._initializing = False

    def _give_values(self, pending, feed_dict):
        # counted once given: another thread's run returns early only then
        while self._values_checked < len(pending):
            v = pending[self._values_checked]
            if v._index not in self._given_values:
                self._given_values.add(v._index)
                if isinstance(v._initial, Tensor):
                    self.run(v.initializer, feed_dict)
                else:
                    self._assign(v, v._initial)
            self._values_checked += 1

    def _request(self, fetches, feed_dict):
        graph = self._graph
        leaves = []
        rebuild = _flatten(fetches, graph, leaves)
        fetch_list, fetch_slot, targets = [], {}, []
        positions = []
        for element in leaves:
            if isinstance(element, Operation):
                targets.append(element._id)
                positions.append(None)
            else:
                key = (element._id, element._index)
                if key not in fetch_slot:
                    fetch_slot[key] = len(fetch_list)
                    fetch_list.append(key)
                positions.append(fetch_slot[key])
        feeds = self._feeds(feed_dict)
        for hook in graph._hooks_for([k[0] for k in fetch_list] + targets):
            extra = hook(self, feed_dict)
            if extra:
                feeds.extend(extra)
        return leaves, positions, rebuild, feeds, fetch_list, targets

    def _feeds(self, feed_dict):
        feeds = []
        if not feed_dict:
            return feeds
        if not isinstance(feed_dict, dict):
            raise TypeError("feed_dict must be a dictionary, not %s" % type(feed_dict).__name__)
        graph = self._graph
        for key, value in feed_dict.items():
            try:
                tensor = graph.as_graph_element(key, allow_operation=False)
            except (TypeError, ValueError, KeyError) as e:
                raise TypeError("Cannot interpret feed_dict key as Tensor: %s" % e)
            dtype = tensor.dtype
            if isinstance(value, (Tensor,)) or hasattr(value, "_read"):
                raise TypeError("The value of a feed cannot be a tf.Tensor object. Acceptable "
                                "feed values include Python scalars, strings, lists, numpy "
                                "ndarrays, or TensorHandles.")
            try:
                array = np.asarray(value, dtype=dtype.as_numpy_dtype, order="C")
            except (TypeError, ValueError, OverflowError) as e:
                raise ValueError("Cannot feed value %r to Tensor %r of dtype %s: %s"
                                 % (value, tensor.name, dtype.name, e))
            fw._take_rank(tensor, [None] * array.ndim)  # when nothing reads it yet
            shape = graph._tensor(tensor._id, tensor._index).shape
            if not shape.is_compatible_with(array.shape):
                raise ValueError("Cannot feed value of shape %r for Tensor %r, which has shape "
                                 "%r%s" % (array.shape, tensor.name, str(shape),
                                           fw._rank_note(tensor)))
            if dtype is fw.bool:
                array = array.view(np.uint8)
            feeds.append(((tensor._id, tensor._index), dtype._code, array))
        return feeds

    # -- for Variable.load, Saver and optimizers --
    def _assign(self, variable, value):
        array = np.asarray(value, dtype=np.float32, order="C")
        self._engine().assign_variable(variable._index_in(self._graph), array)
        self._given_values.add(variable._index)

    def _read(self, variable):
        index = variable._index_in(self._graph)
        self._initialize_values(None)
        return np.asarray(self._engine().read_variable(index))

    def partial_run_setup(self, *args, **kwargs):
        raise NotImplementedError("ctower has no partial runs")


class InteractiveSession(Session):
    """A Session that makes itself the default at once."""

    def __init__(self, target="", graph=None, config=None):
        super().__init__(target, graph, config)
        self._interactive = _DefaultContext(self)
        self._interactive.__enter__()

    def close(self):
        super().close()
        if getattr(self, "_interactive", None) is not None:
            try:
                self._interactive.__exit__(None, None, None)
            except ValueError:
                pass
            self._interactive = None


class _DeviceAttributes:
    def __init__(self, name):
        self.name = name
        self.device_type = name.rsplit("device:", 1)[-1].split(":")[0]

    def __repr__(self):
        return "_DeviceAttributes(%s, %s)" % (self.name, self.device_type)
