/* The module `ctower._ctower`: its types, the error classes it raises, host
 * tensors read through the buffer protocol, session options and the device
 * list. */
#include <string.h>

#include "binding.h"

/* ---- errors ---------------------------------------------------------------- */

static PyObject *error_classes; /* {code: class}, set by ctower.errors */

static PyObject *set_error_classes(PyObject *self, PyObject *classes) {
  (void)self;
  if (!PyDict_Check(classes)) return PyErr_Format(PyExc_TypeError, "expected a dict");
  Py_XDECREF(error_classes);
  Py_INCREF(classes);
  error_classes = classes;
  Py_RETURN_NONE;
}

PyObject *ct_py_raise(const ct_status *status) {
  PyObject *cls = NULL;
  if (error_classes) {
    PyObject *code = PyLong_FromLong((long)status->code);
    if (code) cls = PyDict_GetItemWithError(error_classes, code);
    Py_XDECREF(code);
    if (PyErr_Occurred()) return NULL;
  }
  if (cls == NULL) {
    PyErr_Format(PyExc_RuntimeError, "%s: %s", ct_code_name(status->code), status->message);
    return NULL;
  }
  PyObject *error = PyObject_CallFunction(cls, "OOs", Py_None, Py_None, status->message);
  if (error == NULL) return NULL;
  PyErr_SetObject((PyObject *)Py_TYPE(error), error);
  Py_DECREF(error);
  return NULL;
}

int ct_py_graph_check(ct_py_graph *g) {
  const ct_status *status = ct_graph_status(g->graph);
  if (ct_ok(status)) return 0;
  PyErr_SetString(PyExc_ValueError, status->message);
  ct_graph_clear_error(g->graph);
  return -1;
}

/* ---- host tensors ------------------------------------------------------------ */

typedef struct {
  PyObject_HEAD
  ct_tensor *tensor;
  Py_ssize_t shape[CT_MAX_RANK];
  int exports; /* buffers handed out */
} ct_py_tensor;

static const char *format_of(ct_dtype dtype) {
  switch (dtype) {
    case CT_F32: return "f";
    case CT_I32: return "i";
    case CT_I64: return "q";
    case CT_U8: return "B";
    default: return NULL;
  }
}

PyObject *ct_py_tensor_wrap(ct_tensor *tensor) {
  ct_py_tensor *self = PyObject_New(ct_py_tensor, &ct_py_tensor_type);
  if (self == NULL) {
    ct_tensor_free(tensor);
    return NULL;
  }
  self->tensor = tensor;
  self->exports = 0;
  for (int d = 0; d < tensor->shape.rank; ++d) self->shape[d] = (Py_ssize_t)tensor->shape.dims[d];
  return (PyObject *)self;
}

static void tensor_dealloc(ct_py_tensor *self) {
  ct_tensor_free(self->tensor);
  PyObject_Free(self);
}

static int tensor_getbuffer(ct_py_tensor *self, Py_buffer *view, int flags) {
  const ct_tensor *t = self->tensor;
  view->obj = (PyObject *)self;
  Py_INCREF(self);
  view->buf = t->data;
  view->len = (Py_ssize_t)ct_tensor_nbytes(t);
  view->readonly = 0;
  view->itemsize = (Py_ssize_t)ct_dtype_size(t->dtype);
  view->format = (flags & PyBUF_FORMAT) ? (char *)format_of(t->dtype) : NULL;
  view->ndim = t->shape.rank;
  view->shape = (flags & PyBUF_ND) ? self->shape : NULL;
  view->strides = NULL;
  view->suboffsets = NULL;
  view->internal = NULL;
  ++self->exports;
  return 0;
}

static void tensor_releasebuffer(ct_py_tensor *self, Py_buffer *view) {
  (void)view;
  --self->exports;
}

static PyBufferProcs tensor_buffer = {(getbufferproc)tensor_getbuffer,
                                      (releasebufferproc)tensor_releasebuffer};

PyTypeObject ct_py_tensor_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ctower._ctower.HostTensor",
    .tp_basicsize = sizeof(ct_py_tensor),
    .tp_dealloc = (destructor)tensor_dealloc,
    .tp_as_buffer = &tensor_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A tensor computed by ctower; numpy.asarray reads it without a copy.",
};

int ct_py_tensor_view(PyObject *obj, ct_dtype dtype, Py_buffer *view, ct_tensor *out) {
  if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) != 0) return -1;
  const char *want = format_of(dtype), *got = view->format ? view->format : "B";
  if (got[0] == '<' || got[0] == '=' || got[0] == '@') ++got;
  /* numpy writes int64 as 'l' on LP64 and booleans as '?' */
  int same = want && (strcmp(got, want) == 0 || (dtype == CT_I64 && strcmp(got, "l") == 0) ||
                      (dtype == CT_U8 && strcmp(got, "?") == 0));
  if (!same || view->itemsize != (Py_ssize_t)ct_dtype_size(dtype) || view->ndim > CT_MAX_RANK) {
    PyErr_Format(PyExc_TypeError, "a buffer of format '%s' and rank %d cannot be read as %s",
                 got, view->ndim, ct_dtype_name(dtype));
    PyBuffer_Release(view);
    return -1;
  }
  out->dtype = dtype;
  out->shape.rank = view->ndim;
  for (int d = 0; d < view->ndim; ++d) out->shape.dims[d] = (int64_t)view->shape[d];
  out->data = view->buf;
  out->owns_data = 0;
  return 0;
}

int ct_py_shape(PyObject *seq, ct_shape *shape) {
  PyObject *fast = PySequence_Fast(seq, "a shape is a sequence of ints");
  if (fast == NULL) return -1;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  if (n > CT_MAX_RANK) {
    Py_DECREF(fast);
    PyErr_Format(PyExc_ValueError, "ctower tensors have rank 0 to %d, not %zd", CT_MAX_RANK, n);
    return -1;
  }
  shape->rank = (int)n;
  for (Py_ssize_t i = 0; i < n; ++i) {
    long long d = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(fast, i));
    if (d == -1 && PyErr_Occurred()) {
      Py_DECREF(fast);
      return -1;
    }
    shape->dims[i] = (int64_t)d;
  }
  Py_DECREF(fast);
  return 0;
}

PyObject *ct_py_shape_tuple(const ct_shape *shape) {
  PyObject *t = PyTuple_New(shape->rank);
  for (int d = 0; t && d < shape->rank; ++d)
    PyTuple_SET_ITEM(t, d, PyLong_FromLongLong((long long)shape->dims[d]));
  return t;
}

/* ---- session options and devices ---------------------------------------------- */

static int get_int(PyObject *kwargs, const char *key, int *out) {
  PyObject *v = PyDict_GetItemString(kwargs, key);
  if (v == NULL || v == Py_None) return 0;
  long x = PyLong_AsLong(v);
  if (x == -1 && PyErr_Occurred()) return -1;
  *out = (int)x;
  return 0;
}

int ct_py_session_options(PyObject *kwargs, ct_session_options *o) {
  ct_session_options_defaults(o);
  if (kwargs == NULL) return 0;
  if (get_int(kwargs, "log_device_placement", &o->log_device_placement) ||
      get_int(kwargs, "allow_soft_placement", &o->allow_soft_placement) ||
      get_int(kwargs, "cpu", &o->device_count_cpu) ||
      get_int(kwargs, "gpu", &o->device_count_gpu) ||
      get_int(kwargs, "intra_op_parallelism_threads", &o->intra_op_parallelism_threads) ||
      get_int(kwargs, "inter_op_parallelism_threads", &o->inter_op_parallelism_threads) ||
      get_int(kwargs, "allow_growth", &o->gpu_options.allow_growth))
    return -1;
  PyObject *fraction = PyDict_GetItemString(kwargs, "per_process_gpu_memory_fraction");
  if (fraction && fraction != Py_None) {
    double f = PyFloat_AsDouble(fraction);
    if (f == -1.0 && PyErr_Occurred()) return -1;
    o->gpu_options.per_process_gpu_memory_fraction = f;
  }
  PyObject *visible = PyDict_GetItemString(kwargs, "visible_device_list");
  if (visible && visible != Py_None) {
    const char *list = PyUnicode_AsUTF8(visible);
    if (list == NULL) return -1;
    if (strlen(list) >= sizeof o->gpu_options.visible_device_list) {
      PyErr_SetString(PyExc_ValueError, "visible_device_list is too long");
      return -1;
    }
    strcpy(o->gpu_options.visible_device_list, list);
  }
  return 0;
}

PyObject *ct_py_devices(PyObject *self, PyObject *args, PyObject *kwargs) {
  (void)self, (void)args;
  ct_session_options options;
  if (ct_py_session_options(kwargs, &options)) return NULL;
  options.log_device_placement = 0;
  ct_graph *graph = ct_graph_new();
  if (graph == NULL) return PyErr_NoMemory();
  ct_status status = CT_STATUS_INIT;
  ct_session *session;
  Py_BEGIN_ALLOW_THREADS
  session = ct_session_new(graph, &options, &status);
  Py_END_ALLOW_THREADS
  if (session == NULL) {
    ct_graph_free(graph);
    return ct_py_raise(&status);
  }
  PyObject *list = PyList_New(0);
  for (int i = 0; list && i < ct_session_device_count(session); ++i) {
    ct_device_info info;
    if (ct_session_device_info(session, i, &info)) continue;
    PyObject *d = Py_BuildValue("{s:s,s:s,s:i,s:n,s:s}", "name", info.name, "kind", info.kind,
                                "threads", info.threads, "memory_limit",
                                (Py_ssize_t)info.memory_limit, "description",
                                info.description ? info.description : "");
    if (d == NULL || PyList_Append(list, d)) Py_CLEAR(list);
    Py_XDECREF(d);
  }
  ct_session_free(session);
  ct_graph_free(graph);
  return list;
}

static PyObject *optimizer_learning_rate(PyObject *self, PyObject *args) {
  (void)self;
  int kind;
  double beta1, beta2, rate;
  long long step;
  if (!PyArg_ParseTuple(args, "idddL", &kind, &beta1, &beta2, &rate, &step)) return NULL;
  ct_optimizer_config config;
  ct_optimizer_config_defaults(&config, (ct_optimizer_kind)kind);
  config.beta1 = (float)beta1, config.beta2 = (float)beta2;
  return PyFloat_FromDouble((double)ct_optimizer_learning_rate(&config, rate, (int64_t)step));
}

/* checkpoint_write(path, [(name, buffer)], {key: value}) */
static PyObject *checkpoint_write(PyObject *self, PyObject *args) {
  (void)self;
  const char *path;
  PyObject *seq, *metadata;
  if (!PyArg_ParseTuple(args, "sOO!", &path, &seq, &PyDict_Type, &metadata)) return NULL;
  PyObject *fast = PySequence_Fast(seq, "tensors are a sequence of (name, array)");
  if (fast == NULL) return NULL;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(fast), n_views = 0, n_meta = PyDict_Size(metadata);
  ct_named_tensor *named = PyMem_Calloc((size_t)n + 1, sizeof *named);
  ct_tensor *values = PyMem_Calloc((size_t)n + 1, sizeof *values);
  Py_buffer *views = PyMem_Calloc((size_t)n + 1, sizeof *views);
  const char **kv = PyMem_Calloc((size_t)(2 * n_meta) + 1, sizeof *kv);
  PyObject *result = NULL;
  if (!named || !values || !views || !kv) {
    PyErr_NoMemory();
    goto done;
  }
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject *name, *array;
    if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(fast, i), "UO", &name, &array)) goto done;
    if ((named[i].name = PyUnicode_AsUTF8(name)) == NULL) goto done;
    if (ct_py_tensor_view(array, CT_F32, &views[i], &values[i])) goto done;
    ++n_views;
    named[i].tensor = &values[i];
  }
  Py_ssize_t pos = 0, k = 0;
  PyObject *key, *value;
  while (PyDict_Next(metadata, &pos, &key, &value)) {
    if ((kv[k++] = PyUnicode_AsUTF8(key)) == NULL || (kv[k++] = PyUnicode_AsUTF8(value)) == NULL)
      goto done;
  }
  ct_status status = CT_STATUS_INIT;
  int failed;
  Py_BEGIN_ALLOW_THREADS
  failed = ct_checkpoint_write(path, named, (int)n, kv, (int)n_meta, &status);
  Py_END_ALLOW_THREADS
  if (failed) ct_py_raise(&status);
  else result = Py_NewRef(Py_None);
done:
  for (Py_ssize_t i = 0; i < n_views; ++i) PyBuffer_Release(&views[i]);
  PyMem_Free(named), PyMem_Free(values), PyMem_Free(views), PyMem_Free(kv);
  Py_DECREF(fast);
  return result;
}

/* checkpoint_read(path) -> ({name: HostTensor}, {key: value}) */
static PyObject *checkpoint_read(PyObject *self, PyObject *args) {
  (void)self;
  const char *path;
  if (!PyArg_ParseTuple(args, "s", &path)) return NULL;
  ct_status status = CT_STATUS_INIT;
  ct_checkpoint *checkpoint;
  Py_BEGIN_ALLOW_THREADS
  checkpoint = ct_checkpoint_read(path, &status);
  Py_END_ALLOW_THREADS
  if (checkpoint == NULL) return ct_py_raise(&status);
  PyObject *tensors = PyDict_New(), *metadata = PyDict_New();
  for (int i = 0; tensors && i < ct_checkpoint_count(checkpoint); ++i) {
    const char *name = ct_checkpoint_name(checkpoint, i);
    ct_tensor *copy = ct_tensor_clone(ct_checkpoint_find(checkpoint, name), &status);
    PyObject *t = copy ? ct_py_tensor_wrap(copy) : ct_py_raise(&status);
    if (t == NULL || PyDict_SetItemString(tensors, name, t)) Py_CLEAR(tensors);
    Py_XDECREF(t);
  }
  static const char *const keys[] = {"global_step", "epoch", "epoch_example", "test_accuracy"};
  for (size_t i = 0; metadata && i < sizeof keys / sizeof keys[0]; ++i) {
    const char *value = ct_checkpoint_metadata(checkpoint, keys[i]);
    PyObject *v = value ? PyUnicode_FromString(value) : NULL;
    if (value && (v == NULL || PyDict_SetItemString(metadata, keys[i], v))) Py_CLEAR(metadata);
    Py_XDECREF(v);
  }
  ct_checkpoint_free(checkpoint);
  if (tensors == NULL || metadata == NULL) {
    Py_XDECREF(tensors), Py_XDECREF(metadata);
    return NULL;
  }
  return Py_BuildValue("(NN)", tensors, metadata);
}

static PyMethodDef module_methods[] = {
    {"checkpoint_write", checkpoint_write, METH_VARARGS, "write a safetensors checkpoint"},
    {"checkpoint_read", checkpoint_read, METH_VARARGS, "read a safetensors checkpoint"},
    {"_set_error_classes", set_error_classes, METH_O, "register {code: exception class}"},
    {"devices", (PyCFunction)(void (*)(void))ct_py_devices, METH_VARARGS | METH_KEYWORDS,
     "the devices a session with these options has"},
    {"optimizer_learning_rate", optimizer_learning_rate, METH_VARARGS,
     "the rate to feed for update `step` (Adam's bias correction folded in)"},
    {"train", (PyCFunction)(void (*)(void))ct_py_train, METH_VARARGS | METH_KEYWORDS,
     "what `ctower train` runs"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_ctower",
                                        "ctower's C library, as Python objects", -1,
                                        module_methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__ctower(void) {
  if (PyType_Ready(&ct_py_graph_type) < 0 || PyType_Ready(&ct_py_session_type) < 0 ||
      PyType_Ready(&ct_py_tensor_type) < 0 || PyType_Ready(&ct_py_batcher_type) < 0)
    return NULL;
  PyObject *m = PyModule_Create(&module_def);
  if (m == NULL) return NULL;
  Py_INCREF(&ct_py_graph_type);
  Py_INCREF(&ct_py_session_type);
  Py_INCREF(&ct_py_tensor_type);
  Py_INCREF(&ct_py_batcher_type);
  if (PyModule_AddObject(m, "Graph", (PyObject *)&ct_py_graph_type) ||
      PyModule_AddObject(m, "Session", (PyObject *)&ct_py_session_type) ||
      PyModule_AddObject(m, "HostTensor", (PyObject *)&ct_py_tensor_type) ||
      PyModule_AddObject(m, "Batcher", (PyObject *)&ct_py_batcher_type) ||
      PyModule_AddStringConstant(m, "version", CTOWER_VERSION)) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
