"""A fuzz target for the Python front end: seeded random sequences of
`ctower.compat.v1` calls with random arguments, good and bad.

    PYTHONPATH=build/python python3 tests/python/fuzz_compat_v1.py --calls 100000 --seed 1

Sequence k of seed S draws from random.Random("S:k") alone, so one sequence
is replayed with `--seed S --sequence k` (add --verbose to print each call).
The sequences run in child processes (this script with --child): a child
that dies (a segfault, an abort) or spends longer than --timeout seconds in
one sequence is reported with the seed, the sequence and the last call it
began, and a new child goes on with the next sequence.

Any exception TensorFlow itself raises for a bad call is fine: tf.errors'
classes, TypeError, ValueError, NotImplementedError, RuntimeError (a closed
session) and the AssertionError of reset_default_graph inside a graph's
scope. Any other exception (SystemError, an AttributeError, KeyError or
IndexError from ctower's own code, a MemoryError from a small input) is a
finding, reported with its call and the last frame that raised it. The exit
status is 0 only when nothing was found.
"""
import argparse
import operator
import os
import random
import select
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

# the child's calls and the parent's report share this alphabet
_BEGIN, _CALL, _FOUND, _END, _TALLY = "B", "C", "X", "E", "T"


# ---- the child: sequences of calls -------------------------------------------------------

class _Sequence:
    """One sequence's state: what the calls made so far, to draw arguments from."""

    def __init__(self, tf, np, rng, folder):
        self.tf, self.np, self.rng, self.folder = tf, np, rng, folder
        self.tensors, self.placeholders, self.variables = [], [], []
        self.ops, self.sessions, self.savers, self.graphs = [], [], [], []
        self.scopes, self.paths = [], []

    # -- values --------------------------------------------------------------------------
    def pick(self, pool, default=None):
        return self.rng.choice(pool) if pool else default

    def small_shape(self, rank=None):
        r = self.rng
        rank = r.randint(0, 4) if rank is None else rank
        return [r.choice((1, 1, 2, 2, 3, 4, 0)) if r.random() < 0.9 else r.randint(0, 6)
                for _ in range(rank)]

    def bad_dim(self):
        return self.rng.choice((None, -1, -3, 0, 1.5, float("nan"), "2", 2**40, 2**62, 2**63,
                                2**64, -2**63, [2], True, self.np.int64(3), self.np.float32(2.0)))

    def shape(self):
        r = self.rng.random()
        if r < 0.7:
            return self.small_shape()
        if r < 0.85:
            s = self.small_shape(self.rng.randint(1, 4))
            s[self.rng.randrange(len(s))] = self.bad_dim()
            return s
        return self.rng.choice((None, [], (), "abc", 3, -1, [[2, 2]], [None, None], {2: 3},
                                self.tf.TensorShape([2, None]), self.tf.TensorShape([2, 3]),
                                [2**31, 2**31, 2**31], [-1, -1]))

    def dtype(self):
        tf = self.tf
        return self.rng.choice((tf.float32, tf.float32, tf.float32, tf.int32, tf.int64, tf.uint8,
                                tf.bool, tf.float64, tf.float16, tf.string, None, "float32",
                                "int32", "floaty", 7, self.np.float32, self.np.complex64))

    def array(self, shape=None, dtype=None):
        np, r = self.np, self.rng
        shape = self.small_shape() if shape is None else shape
        dtype = dtype or r.choice((np.float32, np.float32, np.float64, np.int32, np.int64,
                                   np.uint8, np.bool_, np.float16, np.complex64))
        a = np.asarray(np.random.RandomState(r.randrange(2**31)).standard_normal(shape) * 3)
        if r.random() < 0.1 and a.size:
            a.flat[r.randrange(a.size)] = r.choice((np.nan, np.inf, -np.inf, 1e38))
        with np.errstate(all="ignore"):
            return a.astype(dtype)

    def nested(self):
        r = self.rng
        if r.random() < 0.5:
            return self.array(dtype=self.np.float32).tolist()
        return r.choice(([[1.0, 2.0], [3.0]], [[1, 2], [3, "a"]], [None, 1.0], [[[]]], [],
                         [[1.0, float("nan")], [float("inf"), 2.0]], [1, [2]], [b"x", b"y"]))

    def bad(self):
        r = self.rng
        return r.choice((None, "x", b"\xff", float("nan"), float("inf"), -1, 0, 2**63, 2**70,
                         1.5, object(), {}, {"a": 1}, (), [None], set(), 3j, Ellipsis,
                         self.tf.float32, self.pick(self.sessions), self.pick(self.savers),
                         self.pick(self.graphs), self.pick(self.ops), self.np.empty((0, 3)),
                         self.np.array(["a", "b"]), self.np.array([object()])))

    def tensor(self, good=0.85):
        """A tensor, mostly one made before (a variable's value now and then)."""
        r = self.rng.random()
        if r < good and self.tensors:
            return self.pick(self.tensors)
        if r < good + 0.05 and self.variables:
            return self.pick(self.variables)
        if r < good + 0.1:
            return self.rng.choice((1.0, 2, -0.5, True, self.array(), self.nested()))
        return self.bad()

    def axis(self):
        r = self.rng
        if r.random() < 0.8:
            return r.choice((0, 1, -1, 2, 3, -2, None))
        return r.choice((4, -5, 1.5, "0", [0, 1], [0, 0], (1,), 2**63, self.np.int32(1), []))

    def name(self):
        r = self.rng
        return r.choice((None, None, None, "n", "a/b", "x_1", "", "bad name!", "/", 5,
                         "\u00e9", "n" * 300))

    def initializer(self):
        tf, r = self.tf, self.rng
        return r.choice((
            None, tf.zeros_initializer(), tf.ones_initializer(),
            lambda: tf.constant_initializer(r.choice((0.5, -2, [1.0, 2.0], float("nan"), "a"))),
            lambda: tf.truncated_normal_initializer(stddev=r.choice((1.0, 0.0, -1.0, 1e30)),
                                                    seed=r.choice((None, 3, -1, 2**70))),
            lambda: tf.random_normal_initializer(mean=r.choice((0.0, float("nan"))),
                                                 seed=r.choice((None, 7))),
            lambda: tf.random_uniform_initializer(minval=r.choice((-1.0, 2.0)),
                                                  maxval=r.choice((1.0, -2.0, "b"))),
            tf.glorot_uniform_initializer(), 0.5, "init", self.array(), self.tensor(),
        ))

    def feed(self):
        """A feed dict: placeholders given values of their shape or of another."""
        feeds = {}
        for _ in range(self.rng.randint(0, 3)):
            p = self.pick(self.placeholders)
            if p is None:
                break
            r = self.rng.random()
            if r < 0.6:
                try:
                    shape = [d if d is not None else self.rng.randint(1, 3)
                             for d in p.shape.as_list()]
                except ValueError:
                    shape = self.small_shape()
                if any(d > 64 for d in shape):
                    shape = self.small_shape()
                dt = p.dtype.as_numpy_dtype if r < 0.45 else None
                feeds[p] = self.array(shape, dt)
            elif r < 0.8:
                feeds[p] = self.array()
            elif r < 0.9:
                feeds[p] = self.nested()
            else:
                feeds[p] = self.bad()
        if self.rng.random() < 0.05:
            feeds[self.tensor()] = self.array()
        if self.rng.random() < 0.03:
            return self.rng.choice((None, [1, 2], "feed", {None: 1}))
        return feeds

    def fetches(self):
        r = self.rng
        c = r.random()
        if c < 0.5:
            return self.tensor(0.95)
        if c < 0.7:
            return [self.tensor(0.95) for _ in range(r.randint(0, 3))]
        if c < 0.8:
            return {"a": self.tensor(0.95), "b": (self.pick(self.ops), self.tensor(0.95))}
        if c < 0.95:
            return self.pick(self.ops, self.tensor())
        return self.bad()

    def session(self, bad=0.05):
        """A session made before (a new one when there is none), or a bad value."""
        if self.rng.random() < bad:
            return self.bad()
        if not self.sessions:
            self.sessions.append(self.tf.Session())
        return self.pick(self.sessions)

    def some_tensor(self):
        """A tensor made before, or a constant."""
        t = self.pick(self.tensors)
        return self.tf.constant(self.array()) if t is None else t

    def path(self):
        r = self.rng.random()
        if r < 0.5 or not self.paths:
            return os.path.join(self.folder, "m%d" % self.rng.randint(0, 4))
        if r < 0.8:
            return self.pick(self.paths)
        return self.rng.choice((None, "", self.folder, os.path.join(self.folder, "no", "such"),
                                os.path.join(self.folder, "garbage"), 5, b"/tmp/\xff"))

    # -- what each call made -------------------------------------------------------------
    def keep(self, result):
        tf = self.tf
        if isinstance(result, (list, tuple)):
            for x in result[:8]:
                self.keep(x)
        elif isinstance(result, tf.Variable):
            self.variables.append(result)
        elif isinstance(result, tf.Tensor):
            self.tensors.append(result)
            if result.op.type == "Placeholder":
                self.placeholders.append(result)
        elif isinstance(result, tf.Operation):
            self.ops.append(result)
        elif isinstance(result, tf.Session):
            self.sessions.append(result)
        elif isinstance(result, tf.train.Saver):
            self.savers.append(result)
        elif isinstance(result, tf.Graph):
            self.graphs.append(result)
        elif isinstance(result, str) and result.startswith(self.folder):
            self.paths.append(result)

    def finish(self):
        """Leaves the graphs entered, closes the sessions: the next sequence starts bare."""
        while self.scopes:
            try:
                self.scopes.pop().__exit__(None, None, None)
            except Exception:
                pass
        for s in self.sessions:
            s.close()
        self.tf.reset_default_graph()


def _calls(q):
    """The calls a sequence draws from: (weight, name, maker); a maker returns
    (function, args, kwargs) with the arguments drawn."""
    tf, np, r = q.tf, q.np, q.rng
    T, S, A, N = q.tensor, q.shape, q.axis, q.name

    def enter(graph):
        ctx = graph.as_default()
        ctx.__enter__()
        q.scopes.append(ctx)
        return graph

    def leave():
        if q.scopes:
            q.scopes.pop().__exit__(None, None, None)

    def write_garbage():
        with open(os.path.join(q.folder, "garbage"), "wb") as f:
            f.write(bytes(r.randrange(256) for _ in range(r.randint(0, 64))))
        good = q.pick([p for p in q.paths if os.path.exists(p)])
        if good is not None and r.random() < 0.5:
            data = bytearray(open(good, "rb").read())
            for _ in range(r.randint(1, 4)):
                if data:
                    data[r.randrange(len(data))] = r.randrange(256)
            if r.random() < 0.3:
                data = data[:r.randint(0, len(data))]
            with open(os.path.join(q.folder, "garbage"), "wb") as f:
                f.write(bytes(data))

    def nn_window():
        return r.choice(([1, 2, 2, 1], [1, 1, 1, 1], [1, 3, 3, 1], [2, 2], [1, 0, 2, 1],
                         [1, -1, 2, 1], [1, 2**40, 1, 1], None, 2, "a"))

    def padding():
        return r.choice(("SAME", "VALID", "SAME", "valid", "FULL", None, 3))

    def image():
        if r.random() < 0.3:
            return tf.placeholder(tf.float32, [r.choice((None, 1, 2)), r.randint(1, 6),
                                               r.randint(1, 6), r.randint(1, 3)])
        return T()

    def session():
        config = None
        if r.random() < 0.3:
            config = tf.ConfigProto(
                log_device_placement=r.random() < 0.2,
                allow_soft_placement=r.choice((True, False)),
                intra_op_parallelism_threads=r.choice((0, 1, 2, -1, 2**40)),
                inter_op_parallelism_threads=r.choice((0, 1)))
        graph = q.pick(q.graphs) if r.random() < 0.2 else (q.bad() if r.random() < 0.03 else None)
        return tf.Session, (), {"graph": graph, "config": config}

    def run():
        s = q.session(0)
        if s._c is not None and s._c.closed() and r.random() < 0.8:
            s = tf.Session()  # mostly runs of open sessions
            q.sessions.append(s)
        fetches = q.fetches()
        if r.random() < 0.7:
            # mostly fetches of the session's own graph
            own = [t for t in q.tensors if t.graph is s.graph]
            fetches = r.choice(own) if own else fetches
        return s.run, (fetches, q.feed()), {}

    def optimizer():
        lr = r.choice((0.1, 0.01, 0.0, -1.0, float("nan"), "lr", None, 1e30))
        kind = r.randrange(3)
        if kind == 0:
            return tf.train.GradientDescentOptimizer(lr)
        if kind == 1:
            return tf.train.MomentumOptimizer(lr, r.choice((0.9, 0.0, -1.0, "m")),
                                              use_nesterov=r.random() < 0.5)
        return tf.train.AdamOptimizer(lr, beta1=r.choice((0.9, 1.0, 2.0)))

    def minimize():
        loss = T(0.9)
        var_list = None
        if r.random() < 0.3:
            var_list = [q.pick(q.variables, T()) for _ in range(r.randint(0, 2))]
        step = None
        if r.random() < 0.2:
            step = r.choice((tf.train.get_or_create_global_step, lambda: q.bad()))()
        return optimizer().minimize, (loss,), {"var_list": var_list, "global_step": step}

    def saver():
        var_list = None
        if r.random() < 0.5:
            var_list = [q.pick(q.variables, T()) for _ in range(r.randint(0, 3))]
        if r.random() < 0.1:
            var_list = {"v": q.pick(q.variables, T()), "w": q.bad()}
        return tf.train.Saver, (), {"var_list": var_list, "max_to_keep": r.choice((5, 1, 0))}

    def save():
        s = q.pick(q.savers) or tf.train.Saver()
        return s.save, (q.session(), q.path()), {
            "global_step": r.choice((None, None, 3, -1, 2**70, q.pick(q.tensors))),
            "write_state": r.random() < 0.5}

    def restore():
        s = q.pick(q.savers) or tf.train.Saver()
        if r.random() < 0.3:
            write_garbage()
        return s.restore, (q.session(), q.path()), {}

    def variable():
        shape = S() if r.random() < 0.8 else q.small_shape()
        if r.random() < 0.5:
            return tf.get_variable, ("v%d" % r.randint(0, 5),), {
                "shape": shape, "dtype": r.choice((None, tf.float32, tf.int32, q.dtype())),
                "initializer": q.initializer() if r.random() < 0.8 else None,
                "trainable": r.choice((True, False))}
        value = r.choice((lambda: q.array(q.small_shape(), np.float32), q.nested, T,
                          lambda: tf.zeros(q.small_shape()), q.bad))()
        return tf.Variable, (value,), {"name": N(), "trainable": r.random() < 0.8,
                                       "dtype": r.choice((None, None, q.dtype()))}

    def slicing():
        x = q.some_tensor()
        keys = [r.choice((0, 1, -1, 5, slice(None), slice(1, None), slice(None, None, -1),
                          slice(0, 2), None, Ellipsis, 1.5, "a", tf.newaxis, [0, 1],
                          slice(2**63, None)))
                for _ in range(r.randint(1, 3))]
        return (lambda v, k: v[k]), (x, tuple(keys) if len(keys) > 1 else keys[0]), {}

    def operators():
        x = q.some_tensor()
        if r.random() < 0.3:
            return r.choice((operator.neg, abs, bool, iter, len, hash, operator.invert)), (x,), {}
        f = r.choice((operator.add, operator.sub, operator.mul, operator.truediv,
                      operator.matmul, operator.pow, operator.floordiv, operator.mod,
                      operator.lt, operator.eq, operator.and_))
        return f, ((x, T()) if r.random() < 0.7 else (T(), x)), {}

    def batch_norm():
        return tf.layers.batch_normalization, (T(0.9),), {
            "axis": A(), "momentum": r.choice((0.99, 0.0, 1.5, float("nan"))),
            "epsilon": r.choice((1e-3, 0.0, -1.0)), "center": r.random() < 0.7,
            "scale": r.random() < 0.7,
            "training": r.choice((False, True, q.pick(q.placeholders), "yes"))}

    def split():
        return tf.split, (T(0.95), r.choice((2, 1, 3, 0, -1, [1, 1], [1, -1], [0, 5], 1.5,
                                             None))), {"axis": A()}

    def graph_call():
        c = r.random()
        if c < 0.35:
            return enter, (q.pick(q.graphs, tf.Graph()) if r.random() < 0.5 else tf.Graph(),), {}
        if c < 0.7:
            return leave, (), {}
        if c < 0.9:
            return tf.reset_default_graph, (), {}
        return tf.get_default_graph, (), {}

    def tensor_method():
        x = q.some_tensor()
        m = r.choice(("shape", "get_shape", "dtype", "name", "op", "graph", "consumers",
                      "set_shape", "eval", "device"))
        if m == "set_shape":
            return (lambda v, s: v.set_shape(s)), (x, S()), {}
        if m == "eval":
            return (lambda v, f, s: v.eval(feed_dict=f, session=s)), (x, q.feed(), q.session()), {}
        return (lambda v: getattr(v, m)() if callable(getattr(v, m)) else getattr(v, m)), (x,), {}

    return [
        (6, "placeholder", lambda: (tf.placeholder, (q.dtype() if r.random() < 0.3 else
                                                     tf.float32, S()), {"name": N()})),
        (6, "constant", lambda: (tf.constant, (r.choice((q.array, q.nested, lambda: 1.5,
                                                         q.bad))(),),
                                 {"dtype": r.choice((None, None, q.dtype())),
                                  "shape": r.choice((None, None, S()))})),
        (5, "variable", variable),
        (2, "zeros/ones/fill", lambda: (r.choice((tf.zeros, tf.ones)), (S(),),
                                        {"dtype": r.choice((tf.float32, q.dtype()))})
         if r.random() < 0.7 else (tf.fill, (S(), r.choice((1.0, float("nan"), "a", T()))), {})),
        (2, "*_like", lambda: (r.choice((tf.zeros_like, tf.ones_like)), (T(),), {})),
        (8, "binary", lambda: (r.choice((tf.add, tf.subtract, tf.multiply, tf.divide,
                                         tf.truediv, tf.equal)), (T(), T()), {"name": N()})),
        (6, "operator", operators),
        (3, "unary", lambda: (r.choice((tf.negative, tf.identity, tf.stop_gradient,
                                        tf.nn.relu, tf.nn.sigmoid, tf.nn.tanh, tf.nn.l2_loss)),
                              (T(),), {})),
        (2, "add_n", lambda: (tf.add_n, ([T() for _ in range(r.randint(0, 3))]
                                         if r.random() < 0.9 else q.bad(),), {})),
        (5, "matmul", lambda: (tf.matmul, (T(), T()), {"transpose_a": r.random() < 0.3,
                                                       "transpose_b": r.random() < 0.3})),
        (5, "reduce", lambda: (r.choice((tf.reduce_sum, tf.reduce_mean)), (T(),),
                               {"axis": A(), "keepdims": r.choice((None, True, False))})),
        (2, "argmax", lambda: (tf.argmax, (T(),), {"axis": A()})),
        (4, "reshape", lambda: (tf.reshape, (T(), S() if r.random() < 0.8 else
                                             [r.choice((-1, 2, 1))] + q.small_shape(1)), {})),
        (3, "concat", lambda: (tf.concat, ([T() for _ in range(r.randint(0, 3))], A()), {})),
        (3, "split", split),
        (2, "stack/unstack", lambda: (tf.stack, ([T() for _ in range(r.randint(0, 3))],),
                                      {"axis": A()})
         if r.random() < 0.5 else (tf.unstack, (T(),), {"axis": A()})),
        (3, "slice", lambda: (tf.slice, (T(), r.choice((q.small_shape, S))(),
                                         r.choice((q.small_shape, S))()), {})),
        (4, "getitem", slicing),
        (3, "transpose", lambda: (tf.transpose, (T(),), {"perm": r.choice((
            None, [1, 0], [0, 1, 2], [2, 0, 1], [0, 0], [3, 1, 2, 0], [1.5, 0], "ab", [5, 0]))})),
        (2, "expand/squeeze", lambda: (r.choice((tf.expand_dims, tf.squeeze)), (T(), A()), {})),
        (2, "cast", lambda: (tf.cast, (T(), q.dtype()), {})),
        (3, "conv2d", lambda: (tf.nn.conv2d, (image(), r.choice((
            lambda: tf.get_variable("f%d" % r.randint(0, 3), [r.randint(1, 3), r.randint(1, 3),
                                                              r.randint(1, 3), r.randint(1, 3)]),
            T))(), nn_window(), padding()), {})),
        (2, "bias_add", lambda: (tf.nn.bias_add, (T(), T()), {})),
        (3, "pool", lambda: (r.choice((tf.nn.max_pool, tf.nn.avg_pool)),
                             (image(), nn_window(), nn_window(), padding()), {})),
        (1, "lrn", lambda: (tf.nn.lrn, (image(),), {"depth_radius": r.choice((5, 0, -1, 2.5))})),
        (2, "dropout", lambda: (tf.nn.dropout, (T(),), r.choice((
            {"keep_prob": r.choice((0.5, 1.0, 0.0, 1.5, -0.1, float("nan"), T()))},
            {"rate": r.choice((0.5, 0.0, 1.0, "a"))}, {},
            {"keep_prob": 0.5, "noise_shape": S()})))),
        (3, "softmax xent", lambda: (r.choice((
            tf.nn.softmax_cross_entropy_with_logits, tf.nn.softmax_cross_entropy_with_logits_v2,
            tf.nn.sparse_softmax_cross_entropy_with_logits)), (),
            {"labels": T(), "logits": T()})),
        (2, "batch_normalization", batch_norm),
        (1, "fused_batch_norm", lambda: (tf.nn.fused_batch_norm, (image(), T(), T()),
                                         {"is_training": r.random() < 0.5})),
        (4, "gradients", lambda: (tf.gradients, (
            [T(0.95) for _ in range(r.randint(1, 2))] if r.random() < 0.5 else T(0.95),
            [q.pick(q.variables, T()) for _ in range(r.randint(0, 2))]
            if r.random() < 0.7 else q.pick(q.variables, T())),
            {"stop_gradients": r.choice((None, None, T()))})),
        (3, "minimize", minimize),
        (1, "assign", lambda: (r.choice((tf.assign, tf.assign_add, tf.assign_sub)),
                               (q.pick(q.variables, T()), T()), {})),
        (2, "initializer", lambda: (r.choice((
            tf.global_variables_initializer, tf.local_variables_initializer,
            lambda: tf.variables_initializer(r.choice((q.variables, [q.bad()], [])))
        )), (), {})),
        (1, "group/no_op", lambda: (tf.group, tuple(r.choice((q.pick(q.ops), T()))
                                                    for _ in range(r.randint(0, 3))), {})),
        (1, "control_dependencies", lambda: (lambda deps, x: _with(tf.control_dependencies(deps),
                                                                   lambda: tf.identity(x)),
                                             ([r.choice((q.pick(q.ops), T()))], T()), {})),
        (1, "name_scope/device", lambda: (lambda ctx, x: _with(ctx, lambda: tf.negative(x)), (
            r.choice((lambda: tf.name_scope(N()), lambda: tf.device(r.choice((
                "/cpu:0", "/gpu:0", "/gpu:7", "/job:x", "bad device", None, "/CPU:0")))))(),
            T()), {})),
        (1, "variable_scope", lambda: (lambda name, reuse: _with(
            tf.variable_scope(name, reuse=reuse), lambda: tf.get_variable("w", [2, 2])),
            (r.choice(("s", "s", "t/u", None, 5)), r.choice((None, True, tf.AUTO_REUSE))), {})),
        (2, "tensor methods", tensor_method),
        (3, "Session", session),
        (12, "run", run),
        (2, "close", lambda: (q.session(0).close, (), {})),
        (2, "Saver", saver),
        (3, "save", save),
        (3, "restore", restore),
        (1, "latest_checkpoint", lambda: (tf.train.latest_checkpoint, (q.folder,), {})),
        (3, "graph", graph_call),
    ]


def _with(ctx, build):
    with ctx:
        return build()


def _describe(function, args, kwargs):
    def short(v):
        text = repr(v)
        return text if len(text) <= 120 else text[:117] + "..."
    name = getattr(function, "__qualname__", repr(function))
    parts = [short(a) for a in args] + ["%s=%s" % (k, short(v)) for k, v in kwargs.items()]
    return "%s(%s)" % (name, ", ".join(parts))


def _expected(error, tf):
    """Whether TensorFlow itself raises an exception of this class for a bad call."""
    if isinstance(error, (SystemError, KeyError, IndexError, AttributeError, RecursionError)):
        return False
    if isinstance(error, (tf.errors.OpError, TypeError, ValueError, NotImplementedError,
                          RuntimeError)):
        return True
    return isinstance(error, AssertionError) and "reset_default_graph" in str(error)


def _child(args):
    import warnings
    import numpy as np
    import resource
    # a call that would take more memory than this fails with MemoryError
    # (a finding) instead of crowding the machine
    limit = args.memory_gb << 30
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    warnings.simplefilter("ignore")
    import ctower.compat.v1 as tf
    out = sys.stdout
    folder = tempfile.mkdtemp(prefix="ctower-fuzz-")
    os.chdir(folder)  # a relative or odd save path is written here too
    done = 0
    tally = {}  # (call, outcome) -> calls, reported at each sequence's end
    sequence = args.first
    try:
        while done < args.calls:
            rng = random.Random("%d:%d" % (args.seed, sequence))
            np.random.seed(rng.randrange(2**32))
            q = _Sequence(tf, np, rng, folder)
            table = _calls(q)
            weights = [w for w, _, _ in table]
            length = min(rng.randint(10, 60), args.calls - done)
            out.write("%s %d\n" % (_BEGIN, sequence))
            out.flush()
            for k in range(length):
                _, label, maker = rng.choices(table, weights)[0]
                try:
                    function, call_args, kwargs = maker()
                    text = _describe(function, call_args, kwargs)
                except Exception as e:
                    # drawing the arguments may itself call the API (a placeholder, a variable)
                    function, call_args, kwargs, text = None, (), {}, "drawing %s: %r" % (label, e)
                    if not _expected(e, tf):
                        _report(out, sequence, k, text, e)
                out.write("%s %d %d %s\n" % (_CALL, sequence, k, text.replace("\n", " ")))
                out.flush()
                if args.verbose:
                    sys.stderr.write("%d.%d %s\n" % (sequence, k, text))
                if function is None:
                    tally[label, "drawing failed"] = tally.get((label, "drawing failed"), 0) + 1
                    continue
                outcome = "ok"
                try:
                    q.keep(function(*call_args, **kwargs))
                except Exception as e:
                    outcome = type(e).__name__
                    if not _expected(e, tf):
                        _report(out, sequence, k, text, e)
                    elif args.verbose:
                        sys.stderr.write("    %s: %s\n" % (type(e).__name__, str(e)[:200]))
                tally[label, outcome] = tally.get((label, outcome), 0) + 1
            try:
                q.finish()
            except Exception as e:
                _report(out, sequence, length, "finishing the sequence", e)
            done += length
            for (label, outcome), n in tally.items():
                out.write("%s %d %s|%s\n" % (_TALLY, n, label, outcome))
            tally.clear()
            out.write("%s %d %d\n" % (_END, sequence, length))
            out.flush()
            if args.sequence is not None:
                break
            sequence += 1
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _report(out, sequence, k, text, error):
    frame = traceback.extract_tb(error.__traceback__)[-1]
    where = "%s:%d in %s" % (os.path.basename(frame.filename), frame.lineno, frame.name)
    out.write("%s %d %d %s: %s [%s] in %s\n" % (
        _FOUND, sequence, k, type(error).__name__, str(error).replace("\n", " ")[:300], where,
        text.replace("\n", " ")))
    out.flush()


# ---- the parent: children, their deaths and their findings --------------------------------

def fuzz(calls, seed, timeout=30.0, first=0, sequence=None, verbose=False, memory_gb=6,
         log=sys.stdout, tally=None):
    """Runs `calls` calls from sequence `first` of `seed` in child processes.
    Returns (findings, calls made): each finding a line naming the seed,
    the sequence and the call. `tally`, a dict, counts (call, outcome)."""
    findings, made = [], 0
    tally = {} if tally is None else tally
    next_sequence = first if sequence is None else sequence
    while made < calls:
        command = [sys.executable, os.path.abspath(__file__), "--child", "--seed", str(seed),
                   "--first", str(next_sequence), "--calls", str(calls - made),
                   "--memory-gb", str(memory_gb)]
        if sequence is not None:
            command += ["--sequence", str(sequence)]
        if verbose:
            command.append("--verbose")
        child = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, bufsize=1)
        current, last_call, started = None, "", time.monotonic()
        hung = False
        while True:
            ready, _, _ = select.select([child.stdout], [], [], 1.0)
            if ready:
                line = child.stdout.readline()
                if not line:
                    break
                kind, _, rest = line.rstrip("\n").partition(" ")
                if kind == _BEGIN:
                    current, started, last_call = int(rest), time.monotonic(), ""
                elif kind == _CALL:
                    last_call = rest
                elif kind == _FOUND:
                    findings.append("seed %d sequence %s" % (seed, rest))
                    log.write("finding: %s\n" % findings[-1])
                elif kind == _TALLY:
                    n, _, key = rest.partition(" ")
                    tally[key] = tally.get(key, 0) + int(n)
                elif kind == _END:
                    made += int(rest.split()[1])
                    next_sequence = current + 1
                    current = None
            if current is not None and time.monotonic() - started > timeout:
                hung = True
                child.kill()
        rc = child.wait()
        if current is None and rc == 0:
            if sequence is not None:
                break
            continue
        what = ("hung (over %gs in one sequence)" % timeout if hung else
                "died (%s)" % ("signal %d" % -rc if rc < 0 else "exit status %d" % rc))
        findings.append("seed %d sequence %s: the interpreter %s at call %s" % (
            seed, current, what, last_call or "(before the first call)"))
        log.write("finding: %s\n" % findings[-1])
        if current is None or sequence is not None:
            break
        # skip the sequence that killed the child; count its calls as made
        made += int(last_call.split()[1]) + 1 if last_call.split() else 1
        next_sequence = current + 1
    return findings, made


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=10000, help="calls in all")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--first", type=int, default=0, help="the first sequence")
    parser.add_argument("--sequence", type=int, help="replay this sequence alone")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds for one sequence")
    parser.add_argument("--memory-gb", type=int, default=6, help="a child's address space")
    parser.add_argument("--verbose", action="store_true", help="print each call (stderr)")
    parser.add_argument("--stats", action="store_true", help="print each call's outcomes")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args)
        return 0
    start = time.monotonic()
    tally = {}
    findings, made = fuzz(args.calls, args.seed, args.timeout, args.first, args.sequence,
                          args.verbose, args.memory_gb, tally=tally)
    if args.stats:
        for key in sorted(tally):
            print("%8d  %s" % (tally[key], key.replace("|", ": ")))
    print("%d calls from seed %d in %.1f s: %d findings" % (made, args.seed,
                                                            time.monotonic() - start,
                                                            len(findings)))
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
