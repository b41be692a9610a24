/* ctower._ctower.Session: a ct_session over a Graph it keeps alive. Runs
 * release the GIL while the engine computes; feeds are read in place from
 * the callers' buffers and fetches come back as HostTensors, which NumPy
 * reads in place. A closed session refuses every call; closing waits for
 * the run in flight. The placement log is kept in memory and handed to
 * Python (take_log), which prints it where print() writes. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "binding.h"

typedef struct {
  PyObject_HEAD
  ct_py_graph *graph;      /* held: the graph outlives the session */
  ct_session *session;     /* NULL once closed */
  pthread_mutex_t mutex;   /* a run, close and take_log one at a time */
  FILE *log;               /* the placement log, in log_text */
  char *log_text;
  size_t log_size, log_taken;
  uint64_t step;           /* runs so far: dropout masks differ from run to run */
  _Atomic double last_run_seconds; /* the engine's time in the last run (ct_session_run):
                                     * written by a run without the GIL, read without the mutex */
} ct_py_session;

static void lock_session(ct_py_session *s) {
  if (pthread_mutex_trylock(&s->mutex) == 0) return;
  Py_BEGIN_ALLOW_THREADS
  pthread_mutex_lock(&s->mutex);
  Py_END_ALLOW_THREADS
}

static int check_open(ct_py_session *s) {
  if (s->session) return 0;
  PyErr_SetString(PyExc_RuntimeError, "Attempted to use a closed Session.");
  return -1;
}

/* Takes the session's mutex and checks, under it, that the session is open:
 * a close from another thread waits for the mutex, so the session stays
 * alive until the caller unlocks. Returns 0 holding the mutex, or -1 with
 * the closed session's RuntimeError set and the mutex released. */
static int lock_open(ct_py_session *s) {
  lock_session(s);
  if (check_open(s) == 0) return 0;
  pthread_mutex_unlock(&s->mutex);
  return -1;
}

static PyObject *session_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
  PyObject *graph_obj;
  if (!PyArg_ParseTuple(args, "O!", &ct_py_graph_type, &graph_obj)) return NULL;
  ct_session_options options;
  if (ct_py_session_options(kwargs, &options)) return NULL;
  ct_py_session *self = (ct_py_session *)type->tp_alloc(type, 0);
  if (self == NULL) return NULL;
  pthread_mutex_init(&self->mutex, NULL);
  Py_INCREF(graph_obj);
  self->graph = (ct_py_graph *)graph_obj;
  if (options.log_device_placement) {
    self->log = open_memstream(&self->log_text, &self->log_size);
    if (self->log == NULL) {
      Py_DECREF(self);
      return PyErr_NoMemory();
    }
    options.log = self->log;
  }
  ct_status status = CT_STATUS_INIT;
  ct_session *session;
  ct_py_graph *g = self->graph;
  Py_BEGIN_ALLOW_THREADS
  pthread_rwlock_rdlock(&g->lock);
  session = ct_session_new(g->graph, &options, &status);
  pthread_rwlock_unlock(&g->lock);
  Py_END_ALLOW_THREADS
  if (session == NULL) {
    if (self->log) fflush(self->log);
    /* the log so far goes with the error: TensorFlow prints the mapping first */
    if (self->log_size > 0) {
      PyObject *out = PySys_GetObject("stdout");
      PyObject *r = out ? PyObject_CallMethod(out, "write", "s", self->log_text) : NULL;
      Py_XDECREF(r);
      PyErr_Clear();
    }
    Py_DECREF(self);
    return ct_py_raise(&status);
  }
  self->session = session;
  return (PyObject *)self;
}

static void close_session(ct_py_session *s) {
  ct_session *session = s->session;
  s->session = NULL;
  if (session) {
    Py_BEGIN_ALLOW_THREADS
    ct_session_free(session);
    Py_END_ALLOW_THREADS
  }
}

static void session_dealloc(ct_py_session *self) {
  close_session(self);
  if (self->log) fclose(self->log);
  free(self->log_text);
  pthread_mutex_destroy(&self->mutex);
  Py_XDECREF(self->graph);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *s_close(ct_py_session *s, PyObject *unused) {
  (void)unused;
  lock_session(s);
  close_session(s);
  pthread_mutex_unlock(&s->mutex);
  Py_RETURN_NONE;
}

static PyObject *s_closed(ct_py_session *s, PyObject *unused) {
  (void)unused;
  return PyBool_FromLong(s->session == NULL);
}

/* The placement log written since the last call. */
static PyObject *s_take_log(ct_py_session *s, PyObject *unused) {
  (void)unused;
  if (s->log == NULL) return PyUnicode_FromString("");
  lock_session(s);
  fflush(s->log);
  PyObject *text = PyUnicode_DecodeUTF8(s->log_text + s->log_taken,
                                        (Py_ssize_t)(s->log_size - s->log_taken), "replace");
  s->log_taken = s->log_size;
  pthread_mutex_unlock(&s->mutex);
  return text;
}

static double seconds_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A run's arguments read from Python (the feeds as headers over the
 * callers' buffers, the outputs to fetch, the nodes to run) and what the
 * run made. */
typedef struct {
  PyObject *feeds_fast, *fetches_fast, *targets_fast;
  Py_ssize_t n_feeds, n_views, n_fetches, n_targets;
  ct_feed *feeds;
  ct_tensor *values;   /* the feeds' headers */
  Py_buffer *views;    /* the first n_views hold the buffers under values */
  ct_output *fetches;
  ct_node **targets;
  ct_tensor **results; /* the fetched tensors, owned until handed to Python */
  int repeat;          /* runs to make (benchmarks); 0: one, and its tensors are the result */
  double *times;       /* each run's seconds, with repeat > 0 */
} run_call;

/* The sequences of a run's arguments and the arrays they are read into.
 * Returns 0, or -1 with a Python error set. */
static int run_call_open(run_call *c, PyObject *feed_seq, PyObject *fetch_seq,
                         PyObject *target_seq) {
  c->feeds_fast = PySequence_Fast(feed_seq, "feeds are a sequence");
  c->fetches_fast = PySequence_Fast(fetch_seq, "fetches are a sequence");
  c->targets_fast = PySequence_Fast(target_seq, "targets are a sequence");
  if (c->feeds_fast == NULL || c->fetches_fast == NULL || c->targets_fast == NULL) return -1;
  c->n_feeds = PySequence_Fast_GET_SIZE(c->feeds_fast);
  c->n_fetches = PySequence_Fast_GET_SIZE(c->fetches_fast);
  c->n_targets = PySequence_Fast_GET_SIZE(c->targets_fast);
  c->feeds = PyMem_Calloc((size_t)c->n_feeds + 1, sizeof *c->feeds);
  c->values = PyMem_Calloc((size_t)c->n_feeds + 1, sizeof *c->values);
  c->views = PyMem_Calloc((size_t)c->n_feeds + 1, sizeof *c->views);
  c->fetches = PyMem_Calloc((size_t)c->n_fetches + 1, sizeof *c->fetches);
  c->results = PyMem_Calloc((size_t)c->n_fetches + 1, sizeof *c->results);
  c->targets = PyMem_Calloc((size_t)c->n_targets + 1, sizeof *c->targets);
  if (!c->feeds || !c->values || !c->views || !c->fetches || !c->results || !c->targets) {
    PyErr_NoMemory();
    return -1;
  }
  return 0;
}

/* The feeds, each (output, dtype, buffer), read in place. Returns 0, or -1
 * with a Python error set. */
static int read_feeds(ct_py_graph *g, run_call *c) {
  for (Py_ssize_t i = 0; i < c->n_feeds; ++i) {
    PyObject *output, *buffer;
    int dtype;
    if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(c->feeds_fast, i), "OiO", &output, &dtype,
                          &buffer) ||
        ct_py_output(g, output, &c->feeds[i].output))
      return -1;
    if (ct_py_tensor_view(buffer, (ct_dtype)dtype, &c->views[i], &c->values[i])) return -1;
    ++c->n_views;
    c->feeds[i].value = &c->values[i];
  }
  return 0;
}

/* The outputs to fetch and the nodes to run (node ids). Returns 0, or -1
 * with a Python error set. */
static int read_fetches(ct_py_graph *g, run_call *c) {
  for (Py_ssize_t i = 0; i < c->n_fetches; ++i)
    if (ct_py_output(g, PySequence_Fast_GET_ITEM(c->fetches_fast, i), &c->fetches[i])) return -1;
  for (Py_ssize_t i = 0; i < c->n_targets; ++i) {
    long id = PyLong_AsLong(PySequence_Fast_GET_ITEM(c->targets_fast, i));
    if (id == -1 && PyErr_Occurred()) return -1;
    c->targets[i] = ct_graph_node(g->graph, (int)id);
    if (c->targets[i] == NULL) {
      PyErr_Format(PyExc_ValueError, "the graph has no node %ld", id);
      return -1;
    }
  }
  return 0;
}

/* Makes the run (`repeat` times with repeat > 0) with the GIL released,
 * under the session's mutex and the graph's read lock. Returns 0; 1 when
 * the engine failed (status filled); -1 with a Python error set when the
 * session was closed before the run could start. */
static int run_released(ct_py_session *s, run_call *c, ct_status *status) {
  ct_py_graph *g = s->graph;
  int failed = 0;
  if (lock_open(s)) return -1;
  Py_BEGIN_ALLOW_THREADS
  pthread_rwlock_rdlock(&g->lock);
  for (int k = 0; k < (c->repeat > 0 ? c->repeat : 1); ++k) {
    const double start = seconds_now();
    if (k > 0)
      for (Py_ssize_t i = 0; i < c->n_fetches; ++i) ct_tensor_free(c->results[i]);
    ct_session_set_step(s->session, s->step++);
    failed = ct_session_run(s->session, c->feeds, (int)c->n_feeds, c->fetches, (int)c->n_fetches,
                            c->targets, (int)c->n_targets, c->results, status);
    const double seconds = seconds_now() - start;
    atomic_store(&s->last_run_seconds, seconds);
    if (c->times) c->times[k] = seconds;
    if (failed) break;
  }
  pthread_rwlock_unlock(&g->lock);
  Py_END_ALLOW_THREADS
  pthread_mutex_unlock(&s->mutex);
  return failed ? 1 : 0;
}

/* What a run returns: each run's seconds with repeat > 0, else the fetched
 * tensors as HostTensors (which take them over). NULL with a Python error
 * set when a list cannot be made. */
static PyObject *run_results(run_call *c) {
  if (c->times) {
    PyObject *result = PyList_New(c->repeat);
    for (int k = 0; result && k < c->repeat; ++k)
      PyList_SET_ITEM(result, k, PyFloat_FromDouble(c->times[k]));
    return result;
  }
  PyObject *result = PyList_New(c->n_fetches);
  for (Py_ssize_t i = 0; result && i < c->n_fetches; ++i) {
    PyObject *t = ct_py_tensor_wrap(c->results[i]);
    c->results[i] = NULL;
    if (t == NULL) Py_CLEAR(result);
    else PyList_SET_ITEM(result, i, t);
  }
  return result;
}

/* Releases the callers' buffers and frees what the run's arguments and
 * results still hold. */
static void run_call_close(run_call *c) {
  for (Py_ssize_t i = 0; i < c->n_views; ++i) PyBuffer_Release(&c->views[i]);
  for (Py_ssize_t i = 0; c->results && i < c->n_fetches; ++i) ct_tensor_free(c->results[i]);
  PyMem_Free(c->feeds), PyMem_Free(c->values), PyMem_Free(c->views);
  PyMem_Free(c->fetches), PyMem_Free(c->results), PyMem_Free(c->targets), PyMem_Free(c->times);
  Py_XDECREF(c->feeds_fast), Py_XDECREF(c->fetches_fast), Py_XDECREF(c->targets_fast);
}

/* run([(output, dtype, buffer)], [output], [node id], repeat=0) -> [HostTensor]
 * With repeat > 0 (benchmarks: the same run from C, without Python between
 * the runs), the run is made `repeat` times and the result is the list of
 * each run's seconds. */
static PyObject *s_run(ct_py_session *s, PyObject *args) {
  PyObject *feed_seq, *fetch_seq, *target_seq;
  run_call c = {0};
  if (!PyArg_ParseTuple(args, "OOO|i", &feed_seq, &fetch_seq, &target_seq, &c.repeat))
    return NULL;
  if (c.repeat > 0 && (c.times = PyMem_Calloc((size_t)c.repeat, sizeof *c.times)) == NULL)
    return PyErr_NoMemory();
  ct_status status = CT_STATUS_INIT;
  int ran = -1;
  if (check_open(s) == 0 && run_call_open(&c, feed_seq, fetch_seq, target_seq) == 0 &&
      read_feeds(s->graph, &c) == 0 && read_fetches(s->graph, &c) == 0)
    ran = run_released(s, &c, &status);
  PyObject *result = NULL;
  if (ran == 1)
    ct_py_raise(&status);
  /* Ctrl-C during the run: the step has finished; the interrupt is raised now */
  else if (ran == 0 && PyErr_CheckSignals() == 0)
    result = run_results(&c);
  run_call_close(&c);
  return result;
}

/* read_variable(index) -> HostTensor; assign_variable(index, buffer);
 * initialize_variable(index) */
static PyObject *s_read_variable(ct_py_session *s, PyObject *args) {
  int index;
  if (!PyArg_ParseTuple(args, "i", &index) || lock_open(s)) return NULL;
  ct_status status = CT_STATUS_INIT;
  ct_tensor *t;
  Py_BEGIN_ALLOW_THREADS
  t = ct_session_read_variable(s->session, index, &status);
  Py_END_ALLOW_THREADS
  pthread_mutex_unlock(&s->mutex);
  return t ? ct_py_tensor_wrap(t) : ct_py_raise(&status);
}

static PyObject *s_assign_variable(ct_py_session *s, PyObject *args) {
  int index;
  PyObject *obj;
  if (!PyArg_ParseTuple(args, "iO", &index, &obj)) return NULL;
  Py_buffer view;
  ct_tensor value;
  if (ct_py_tensor_view(obj, CT_F32, &view, &value)) return NULL;
  if (lock_open(s)) {
    PyBuffer_Release(&view);
    return NULL;
  }
  ct_status status = CT_STATUS_INIT;
  int failed;
  Py_BEGIN_ALLOW_THREADS
  failed = ct_session_assign_variable(s->session, index, &value, &status);
  Py_END_ALLOW_THREADS
  pthread_mutex_unlock(&s->mutex);
  PyBuffer_Release(&view);
  if (failed) return ct_py_raise(&status);
  Py_RETURN_NONE;
}

static PyObject *s_initialize_variable(ct_py_session *s, PyObject *args) {
  int index;
  if (!PyArg_ParseTuple(args, "i", &index) || lock_open(s)) return NULL;
  ct_status status = CT_STATUS_INIT;
  int failed;
  Py_BEGIN_ALLOW_THREADS
  failed = ct_session_initialize_variable(s->session, index, &status);
  Py_END_ALLOW_THREADS
  pthread_mutex_unlock(&s->mutex);
  if (failed) return ct_py_raise(&status);
  Py_RETURN_NONE;
}

/* node_device(node id) -> canonical device name */
static PyObject *s_node_device(ct_py_session *s, PyObject *args) {
  long id;
  if (!PyArg_ParseTuple(args, "l", &id)) return NULL;
  ct_node *n = ct_graph_node(s->graph->graph, (int)id);
  if (n == NULL) return PyErr_Format(PyExc_ValueError, "the graph has no node %ld", id);
  ct_status status = CT_STATUS_INIT;
  int device = -1;
  ct_placement_reason reason = CT_PLACED_DEFAULT;
  if (lock_open(s)) return NULL;
  int failed = ct_session_node_placement(s->session, n, &device, &reason, &status);
  PyObject *result = NULL;
  if (!failed)
    result = Py_BuildValue("(ss)", ct_session_device_name(s->session, device),
                           ct_placement_reason_name(reason));
  pthread_mutex_unlock(&s->mutex);
  return failed ? ct_py_raise(&status) : result;
}

static PyObject *s_last_run_seconds(ct_py_session *s, PyObject *unused) {
  (void)unused;
  return PyFloat_FromDouble(atomic_load(&s->last_run_seconds));
}

static PyObject *s_devices(ct_py_session *s, PyObject *unused) {
  (void)unused;
  if (lock_open(s)) return NULL;
  int n = ct_session_device_count(s->session);
  PyObject *list = PyList_New(n);
  for (int i = 0; list && i < n; ++i)
    PyList_SET_ITEM(list, i, PyUnicode_FromString(ct_session_device_name(s->session, i)));
  pthread_mutex_unlock(&s->mutex);
  return list;
}

#define M(name, flags) {#name, (PyCFunction)(void (*)(void))s_##name, flags, NULL}
static PyMethodDef session_methods[] = {
    M(run, METH_VARARGS),           M(close, METH_NOARGS),
    M(closed, METH_NOARGS),         M(take_log, METH_NOARGS),
    M(read_variable, METH_VARARGS), M(assign_variable, METH_VARARGS),
    M(initialize_variable, METH_VARARGS), M(node_device, METH_VARARGS),
    M(devices, METH_NOARGS),        M(last_run_seconds, METH_NOARGS),
    {NULL, NULL, 0, NULL},
};
#undef M

PyTypeObject ct_py_session_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ctower._ctower.Session",
    .tp_basicsize = sizeof(ct_py_session),
    .tp_new = session_new,
    .tp_dealloc = (destructor)session_dealloc,
    .tp_methods = session_methods,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A ct_session over a Graph (ctower/session.h).",
};
