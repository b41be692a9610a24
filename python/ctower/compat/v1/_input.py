"""TensorFlow 1.x's queue-based input pipeline: string_input_producer,
FixedLengthRecordReader, tf.train.batch and shuffle_batch, the
prefetch_queue of tf.contrib.slim, QueueRunner, start_queue_runners and
Coordinator.

The per-example part of the pipeline is made of host tensors (_host.py):
NumPy computations that the queue's runner threads evaluate, one example
at a time, into a bounded buffer of `capacity` examples. The batches come
out of the graph's side of the queue: placeholders, which Session.run
feeds with the next batch (one batch per run, the same one for all of a
dequeue's tensors) whenever a fetch depends on them (the graph's run
hooks). The threads run while the engine computes the step (it releases
the GIL), so the next batches are ready when it ends.

A queue's contents, its readers' files and its producers' epochs belong to
a session (SessionState), as TensorFlow's queues are the session's
resources: a new session starts the epochs again. The runner threads are
daemon threads that stop at coord.request_stop(), when their session is
closed or collected, and when their source runs out (num_epochs): the
queue is then closed, and a run that needs more than it holds raises
OutOfRangeError. A reader's error (NotFoundError for a missing file, an
InvalidArgumentError for a record that does not decode) is raised by the
run that needs the batch, and given to the coordinator, whose join raises it.

Where ctower differs: a dequeue whose queue has no runner threads in the
session raises FailedPreconditionError at once (TensorFlow would wait for
ever); runner threads are always daemon threads; the random ops' numbers
are not TensorFlow's (the same for the same seeds); batch's enqueue_many,
dynamic_pad and allow_smaller_final_batch, the other readers and producers
(TFRecordReader, slice_input_producer) and tf.data are not here; the
image ops take host tensors only, not tensors of the graph.
"""
import itertools
import threading
import time
import weakref

import numpy as np

from ctower import errors
from ctower.compat.v1 import _framework as fw
from ctower.compat.v1 import _host
from ctower.compat.v1._host import Example, HostTensor

QUEUE_RUNNERS = "queue_runners"  # GraphKeys.QUEUE_RUNNERS
_POLL = 0.05  # seconds between a waiting thread's checks of its stop conditions


# ---- a session's input state ----------------------------------------------------------------

class SessionState:
    """What the input pipeline of one graph holds for one session: each
    queue's buffer, each reader's file, each producer's epoch."""

    def __init__(self):
        self.lock = threading.Lock()
        self.of = {}  # a stateful object (queue, reader, producer) -> its state in the session


def _states(graph):
    states = graph.__dict__.get("_input_states")
    if states is None:
        states = graph.__dict__["_input_states"] = weakref.WeakKeyDictionary()
    return states


def state_of(session):
    """The input state of a session (or of a graph: for host tensors run
    outside their graph's default session)."""
    graph = session if isinstance(session, fw.Graph) else session.graph
    states = _states(graph)
    with graph._lock:
        state = states.get(session)
        if state is None:
            state = states[session] = SessionState()
    return state


def _stateful(state, owner, make):
    with state.lock:
        value = state.of.get(owner)
        if value is None:
            value = state.of[owner] = make()
    return value


class _LastRun(threading.local):
    run, example = None, None


_last_run = _LastRun()


def evaluate_once(tensor, run=None):
    """A host tensor's value for the example of a run (`run`: the run's
    values, the same object for all it fetches), in the caller's thread
    (the default session's input state, when there is one)."""
    from ctower.compat.v1._session import get_default_session
    if run is None or _last_run.run is not run:
        session = get_default_session()
        state = state_of(session if session is not None and session.graph is tensor.graph
                         else tensor.graph)  # no default session: the graph's own state
        _last_run.run, _last_run.example = run, Example(state)
    return tensor.evaluate(_last_run.example)


def _closed(session_ref):
    session = session_ref()
    return session is None or getattr(session, "_closed", False)


# ---- producers and readers ------------------------------------------------------------------

class _ProducerState:
    def __init__(self):
        self.lock = threading.Lock()
        self.order, self.epoch = [], 0


class StringInputProducer:
    """tf.train.string_input_producer's queue of file names: each epoch the
    names in order or shuffled, num_epochs times (None: for ever)."""

    def __init__(self, strings, num_epochs, shuffle, seed, capacity, name):
        self._strings = list(strings)
        self._num_epochs = num_epochs
        self._shuffle = shuffle
        self._seeds = _host.seeds(fw.get_default_graph(), seed)
        self.capacity = capacity
        self.name = name

    def next(self, state):
        """The next name, or OutOfRangeError after num_epochs epochs."""
        own = _stateful(state, self, _ProducerState)
        with own.lock:
            if not own.order:
                if self._num_epochs is not None and own.epoch >= self._num_epochs:
                    raise errors.OutOfRangeError(
                        None, None, "FIFOQueue '%s' is closed and has insufficient elements "
                        "(requested 1, current size 0)" % self.name)
                order = list(self._strings)
                if self._shuffle:
                    g = np.random.default_rng([self._seeds[0], self._seeds[1], own.epoch])
                    order = [order[i] for i in g.permutation(len(order))]
                own.order = order[::-1]
                own.epoch += 1
            return own.order.pop()

    # what code asks of TensorFlow's FIFOQueue
    def size(self, name=None):
        raise NotImplementedError("ctower's string_input_producer has no size op")


def string_input_producer(string_tensor, num_epochs=None, shuffle=True, seed=None, capacity=32,
                          shared_name=None, name=None, cancel_op=None):
    strings = [s.decode() if isinstance(s, bytes) else str(s)
               for s in np.asarray(string_tensor, dtype=object).reshape(-1)]
    if not strings:
        raise ValueError("string_input_producer requires a non-null input tensor")
    if num_epochs is not None and num_epochs <= 0:
        raise ValueError("num_epochs must be > 0 not %s" % num_epochs)
    return StringInputProducer(strings, num_epochs, shuffle, seed, capacity,
                               name or "input_producer")


class _ReaderState:
    def __init__(self):
        self.lock = threading.Lock()
        self.file, self.name, self.index, self.limit, self.count = None, None, 0, 0, 0


class FixedLengthRecordReader:
    """Records of record_bytes bytes after header_bytes, before
    footer_bytes, of each file its queue names; a last record shorter than
    record_bytes is skipped, as TensorFlow skips it."""

    def __init__(self, record_bytes, header_bytes=None, footer_bytes=None, hop_bytes=None,
                 name=None, encoding=None):
        if hop_bytes or encoding:
            raise NotImplementedError("ctower's FixedLengthRecordReader has no hop_bytes or "
                                      "encoding")
        self._record, self._header, self._footer = (int(record_bytes), int(header_bytes or 0),
                                                    int(footer_bytes or 0))
        if self._record <= 0:
            raise ValueError("record_bytes must be > 0")

    def read(self, queue, name=None):
        """(key, value) host tensors of one record: b'file:index' and its bytes."""
        if not isinstance(queue, StringInputProducer):
            raise TypeError("ctower's readers read from tf.train.string_input_producer's queue")
        read = HostTensor([], lambda ex: self._next(queue, ex), [2], fw.string, name or "Read")
        key = HostTensor([read], lambda ex, kv: kv[0], [], fw.string, "ReaderRead_key")
        value = HostTensor([read], lambda ex, kv: kv[1], [], fw.string, "ReaderRead_value")
        read._shape = fw.TensorShape(None)
        return key, value

    def _open(self, own, filename):
        try:
            f = open(filename, "rb")
        except FileNotFoundError:
            raise errors.NotFoundError(None, None, "%s; No such file or directory" % filename)
        except OSError as e:
            raise errors.UnknownError(None, None, "%s; %s" % (filename, e.strerror))
        f.seek(0, 2)
        size = f.tell()
        f.seek(self._header)
        own.file, own.name, own.index = f, filename, 0
        own.limit = size - self._footer

    def _next(self, queue, example):
        own = _stateful(example.state, self, _ReaderState)
        with own.lock:
            while True:
                if own.file is None:
                    self._open(own, queue.next(example.state))
                f = own.file
                if f.tell() + self._record <= own.limit:
                    value = f.read(self._record)
                    if len(value) == self._record:
                        break
                f.close()
                own.file = None
            key = ("%s:%d" % (own.name, own.index)).encode()
            own.index += 1
            example.number = own.count
            own.count += 1
        return key, value


# ---- queues ---------------------------------------------------------------------------------

class _Buffer:
    """One session's contents of a queue: a bounded buffer its runner
    threads fill and the session's runs take from."""

    def __init__(self, seeds):
        self.cond = threading.Condition()
        self.items = []
        self.closed = False
        self.error = None
        self.threads = []
        self.live = 0
        self.started = False
        self.stop = False
        self.numbers = itertools.count()  # examples' numbers where no reader gives one
        self.rng = np.random.default_rng(list(seeds)) if seeds is not None else None


class InputQueue:
    """A queue of the graph: its source (host tensors, one example per
    item; or graph tensors, fetched by runs of the session), its capacity
    and its order (FIFO, or random with min_after_dequeue left behind)."""

    def __init__(self, components, capacity, num_threads, name, min_after_dequeue=None,
                 seed=None):
        self.components = components
        self.host = all(isinstance(c, HostTensor) for c in components)
        self.capacity = int(capacity)
        self.num_threads = max(1, int(num_threads))
        self.name = name
        self.min_after_dequeue = min_after_dequeue
        self.seeds = None if min_after_dequeue is None else _host.seeds(fw.get_default_graph(),
                                                                       seed)
        self.count = 0

    def buffer(self, session):
        return _stateful(state_of(session), self, lambda: _Buffer(self.seeds))

    # -- the runner threads --
    def start_threads(self, session, coord):
        """The runner threads for session (none while those started earlier run)."""
        buf = self.buffer(session)
        with buf.cond:
            if any(t.is_alive() for t in buf.threads):
                return []
            buf.started, buf.stop, buf.closed, buf.error = True, False, False, None
            buf.live = self.num_threads
            ref = weakref.ref(session)
            state = state_of(session)
            buf.threads = [threading.Thread(target=self._run, args=(ref, state, buf, coord),
                                            name="%s_runner_%d" % (self.name, k), daemon=True)
                           for k in range(self.num_threads)]
        if coord is not None and hasattr(coord, "register_thread"):
            for t in buf.threads:
                coord.register_thread(t)
        return list(buf.threads)

    def _stopping(self, ref, buf, coord):
        return buf.stop or _closed(ref) or (coord is not None and coord.should_stop())

    def _run(self, ref, state, buf, coord):
        try:
            while not self._stopping(ref, buf, coord):
                try:
                    item = self._produce(ref, state, buf)
                except errors.OutOfRangeError:
                    return
                except Exception as e:  # the run that needs the batch raises it
                    with buf.cond:
                        if buf.error is None:
                            buf.error = e
                        buf.cond.notify_all()
                    if coord is not None:
                        coord.request_stop(e)
                    return
                with buf.cond:
                    while len(buf.items) >= self.capacity:
                        if self._stopping(ref, buf, coord):
                            return
                        buf.cond.wait(_POLL)
                    buf.items.append(item)
                    buf.cond.notify_all()
        finally:
            with buf.cond:
                buf.live -= 1
                if buf.live == 0:
                    buf.closed = True
                buf.cond.notify_all()

    def _produce(self, ref, state, buf):
        if self.host:
            ex = Example(state, next(buf.numbers))
            values = []
            for c in self.components:
                v = c.evaluate(ex)
                values.append(np.asarray(v, dtype=c.dtype.as_numpy_dtype))
            return values
        session = ref()
        if session is None:
            raise errors.CancelledError(None, None, "the session was closed")
        values = session.run(list(self.components))
        del session
        return [np.array(v, copy=True) for v in values]

    # -- the session's side --
    def take(self, session, n, what):
        """n items (1 for a prefetch queue), in the queue's order, waiting
        for them; OutOfRangeError once the queue is closed with fewer."""
        buf = self.buffer(session)
        with buf.cond:
            while True:
                if buf.error is not None:
                    e = buf.error
                    raise type(e)(None, None, str(e)) if isinstance(e, errors.OpError) else e
                if not buf.started:
                    raise errors.FailedPreconditionError(
                        None, None, "%s: the queue %r has no runner threads in this session "
                        "(TensorFlow would wait for ever): call "
                        "tf.train.start_queue_runners(sess) before running what needs its "
                        "batches" % (what, self.name))
                need = n + (0 if buf.closed else self.min_after_dequeue or 0)
                if len(buf.items) >= need:
                    break
                if buf.closed:
                    kind = "RandomShuffleQueue" if self.min_after_dequeue is not None else \
                        "FIFOQueue"
                    raise errors.OutOfRangeError(
                        None, None, "%s '%s' is closed and has insufficient elements "
                        "(requested %d, current size %d)" % (kind, self.name, n,
                                                             len(buf.items)))
                if _closed(weakref.ref(session)):
                    raise RuntimeError("Attempted to use a closed Session.")
                buf.cond.wait(_POLL)
            if buf.rng is None:
                taken, buf.items = buf.items[:n], buf.items[n:]
            else:
                taken = []
                for _ in range(n):
                    i = int(buf.rng.integers(len(buf.items)))
                    buf.items[i], buf.items[-1] = buf.items[-1], buf.items[i]
                    taken.append(buf.items.pop())
            buf.cond.notify_all()
        return taken


class Dequeue:
    """A dequeue of a queue in the graph: placeholders that each run needing
    any of them gets the next n items in (stacked into a batch for n > 0)."""

    def __init__(self, queue, shapes, dtypes, n, name):
        self.queue, self.n = queue, n
        graph = fw.get_default_graph()
        with graph.name_scope(name) as scope:
            self.outputs = [fw.placeholder(dt, shape, name="component_%d" % k)
                            for k, (shape, dt) in enumerate(zip(shapes, dtypes))]
        self.name = scope[:-1]
        hook = self._feeds  # one object for all placeholders: one batch per run
        for t in self.outputs:
            graph._add_run_hook(t._id, hook)

    def _feeds(self, session, feed_dict):
        keys = {(k._id, k._index) for k in (feed_dict or {}) if isinstance(k, fw.Tensor)}
        if any((t._id, t._index) in keys for t in self.outputs):
            return None
        items = self.queue.take(session, self.n or 1, self.name)
        feeds = []
        for k, t in enumerate(self.outputs):
            array = (np.stack([item[k] for item in items]) if self.n else items[0][k])
            array = np.ascontiguousarray(array, dtype=t.dtype.as_numpy_dtype)
            if t.dtype is fw.bool:
                array = array.view(np.uint8)
            feeds.append(((t._id, t._index), t.dtype._code, array))
        return feeds


class QueueRunner:
    """TensorFlow's QueueRunner for ctower's queues: create_threads starts
    the queue's runner threads for a session."""

    def __init__(self, queue=None, enqueue_ops=None, close_op=None, cancel_op=None,
                 queue_closed_exception_types=None, queue_runner_def=None, import_scope=None):
        if not isinstance(queue, InputQueue):
            raise NotImplementedError("ctower's QueueRunner runs the queues of tf.train.batch, "
                                      "shuffle_batch and prefetch_queue; ctower has no FIFOQueue "
                                      "and enqueue ops")
        self._queue = queue

    @property
    def queue(self):
        return self._queue

    @property
    def name(self):
        return self._queue.name

    def create_threads(self, sess, coord=None, daemon=False, start=False):
        threads = self._queue.start_threads(sess, coord)
        if start:
            for t in threads:
                t.start()
        return threads


def add_queue_runner(qr, collection=QUEUE_RUNNERS):
    fw.get_default_graph().add_to_collection(collection, qr)


def start_queue_runners(sess=None, coord=None, daemon=True, start=True,
                        collection=QUEUE_RUNNERS):
    """Starts the threads of the graph's queue runners for sess (the
    default session); their list."""
    from ctower.compat.v1._session import get_default_session
    sess = sess if sess is not None else get_default_session()
    if sess is None:
        raise ValueError("Cannot start queue runners: No default session is registered. Use "
                         "`with sess.as_default()` or pass an explicit session to "
                         "tf.start_queue_runners(sess=sess)")
    sess = getattr(sess, "_tf_sess", sess)  # a MonitoredSession
    threads = []
    for qr in sess.graph.get_collection(collection):
        threads.extend(qr.create_threads(sess, coord=coord, daemon=daemon, start=start))
    return threads


# ---- batching -------------------------------------------------------------------------------

def _flat(tensors):
    """(list of tensors, rebuild) for a list, tuple, dict or single tensor."""
    if isinstance(tensors, dict):
        keys = list(tensors)
        return [tensors[k] for k in keys], lambda xs: dict(zip(keys, xs))
    if isinstance(tensors, (list, tuple)):
        return list(tensors), lambda xs: list(xs)
    return [tensors], lambda xs: xs[0]


def _example_shapes(components, shapes, what):
    out = []
    for k, c in enumerate(components):
        shape = fw.TensorShape(shapes[k]) if shapes is not None else c.shape
        if not shape.is_fully_defined():
            raise ValueError("All shapes must be fully defined: %s (%s's tensor %s; give it "
                             "set_shape or shapes=)" % (shape, what, c.name))
        out.append(shape.as_list())
    return out


def _components(tensors, what):
    flat, rebuild = _flat(tensors)
    if not flat:
        raise ValueError("%s needs at least one tensor" % what)
    from ctower.compat.v1._variables import Variable
    items = []
    for t in flat:
        if isinstance(t, Variable):
            t = t._read
        if not isinstance(t, (HostTensor, fw.Tensor)):
            t = _host.as_host(t)
        items.append(t)
    kinds = {isinstance(t, HostTensor) for t in items}
    if len(kinds) > 1:
        raise NotImplementedError("ctower's %s takes either the input pipeline's host tensors "
                                  "or tensors of the graph, not both" % what)
    for t in items:
        if t.dtype._code is None:
            raise TypeError("%s: ctower's graph has no %s tensors (%s)"
                            % (what, t.dtype.name, t.name))
    return items, rebuild


def _queue_and_dequeue(tensors, batch_size, capacity, num_threads, shapes, what, name,
                       min_after_dequeue=None, seed=None, enqueue_many=False,
                       allow_smaller_final_batch=False, dynamic_pad=False):
    if enqueue_many or dynamic_pad or allow_smaller_final_batch:
        raise NotImplementedError("ctower's %s has no enqueue_many, dynamic_pad or "
                                  "allow_smaller_final_batch" % what)
    components, rebuild = _components(tensors, what)
    example = _example_shapes(components, shapes, what)
    batch_size = int(batch_size)
    graph = fw.get_default_graph()
    with graph.name_scope(name or what) as scope:
        queue = InputQueue(components, capacity, num_threads, scope + "queue",
                           min_after_dequeue=min_after_dequeue, seed=seed)
        add_queue_runner(QueueRunner(queue))
    dq = Dequeue(queue, [[batch_size] + s for s in example], [c.dtype for c in components],
                 batch_size, scope)
    return rebuild(dq.outputs)


def batch(tensors, batch_size, num_threads=1, capacity=32, enqueue_many=False, shapes=None,
          dynamic_pad=False, allow_smaller_final_batch=False, shared_name=None, name=None):
    return _queue_and_dequeue(tensors, batch_size, capacity, num_threads, shapes, "batch", name,
                              enqueue_many=enqueue_many, dynamic_pad=dynamic_pad,
                              allow_smaller_final_batch=allow_smaller_final_batch)


def shuffle_batch(tensors, batch_size, capacity, min_after_dequeue, num_threads=1, seed=None,
                  enqueue_many=False, shapes=None, allow_smaller_final_batch=False,
                  shared_name=None, name=None):
    if min_after_dequeue >= capacity:
        raise ValueError("capacity (%d) must be larger than min_after_dequeue (%d)"
                         % (capacity, min_after_dequeue))
    return _queue_and_dequeue(tensors, batch_size, capacity, num_threads, shapes,
                              "shuffle_batch", name, min_after_dequeue=int(min_after_dequeue),
                              seed=seed, enqueue_many=enqueue_many,
                              allow_smaller_final_batch=allow_smaller_final_batch)


class PrefetchQueue:
    """tf.contrib.slim.prefetch_queue's queue: runs of the session fetch its
    tensors into it ahead of the steps; each dequeue() gives placeholders
    fed with the next item."""

    def __init__(self, tensors, capacity, num_threads, name):
        components, self._rebuild = _components(tensors, "prefetch_queue")
        self._shapes = [c.shape.as_list() if c.shape.ndims is not None else None
                        for c in components]
        self._dtypes = [c.dtype for c in components]
        graph = fw.get_default_graph()
        with graph.name_scope(name) as scope:
            self._queue = InputQueue(components, capacity, num_threads, scope + "fifo_queue")
            add_queue_runner(QueueRunner(self._queue))
        self._scope = scope[:-1]
        self.name = self._queue.name

    def dequeue(self, name=None):
        dq = Dequeue(self._queue, self._shapes, self._dtypes, 0, name or self._scope + "_dequeue")
        return self._rebuild(dq.outputs)


def prefetch_queue(tensors, capacity=8, num_threads=1, dynamic_pad=False, shared_name=None,
                   name=None):
    if dynamic_pad:
        raise NotImplementedError("ctower's prefetch_queue has no dynamic_pad")
    return PrefetchQueue(tensors, capacity, num_threads, name or "prefetch_queue")


# ---- the coordinator ------------------------------------------------------------------------

class Coordinator:
    """TensorFlow's tf.train.Coordinator: a stop flag shared by threads, the
    first exception given to request_stop (raised again by join), and join."""

    def __init__(self, clean_stop_exception_types=None):
        self._clean = tuple(clean_stop_exception_types or (errors.OutOfRangeError,))
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._exc = None
        self._joined = False
        self._threads = set()

    def request_stop(self, ex=None):
        with self._lock:
            if ex is not None and self._exc is None and not self._joined:
                if isinstance(ex, tuple):
                    ex = ex[1]
                if not isinstance(ex, self._clean):
                    self._exc = ex
            self._stop.set()

    def should_stop(self):
        return self._stop.is_set()

    def clear_stop(self):
        with self._lock:
            self._joined, self._exc = False, None
            self._stop.clear()

    def wait_for_stop(self, timeout=None):
        return self._stop.wait(timeout)

    @property
    def joined(self):
        return self._joined

    def register_thread(self, thread):
        with self._lock:
            self._threads.add(thread)

    class _StopOnException:
        def __init__(self, coord):
            self._coord = coord

        def __enter__(self):
            return self

        def __exit__(self, exc_type, exc, tb):
            if exc_type is None:
                return False
            self._coord.request_stop(exc)
            return True

    def stop_on_exception(self):
        return Coordinator._StopOnException(self)

    def raise_requested_exception(self):
        with self._lock:
            if self._exc is not None:
                raise self._exc

    def join(self, threads=None, stop_grace_period_secs=120, ignore_live_threads=False):
        """Waits for the threads (and those registered) to end once a stop is
        requested, up to stop_grace_period_secs after it; raises the
        exception given to request_stop, else RuntimeError naming threads
        still running."""
        with self._lock:
            threads = set(self._threads) | set(threads or [])
        threads = [t for t in threads if t.ident is not None]
        while any(t.is_alive() for t in threads) and not self.wait_for_stop(1.0):
            pass
        deadline = time.monotonic() + max(0.0, stop_grace_period_secs)
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
        stragglers = [t.name for t in threads if t.is_alive()]
        with self._lock:
            self._joined = True
            self._threads = set()
            if self._exc is not None:
                raise self._exc
        if stragglers and not ignore_live_threads:
            raise RuntimeError("Coordinator stopped with threads still running: %s"
                               % " ".join(stragglers))

