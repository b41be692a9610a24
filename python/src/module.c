/* The module `ctower._ctower`: its types and functions, registered from the
 * files that hold them; optimizer_learning_rate and the lists of the op
 * tables (unary_math_ops, ...), small and of use to no other file, are its
 * own. */
#include "binding.h"

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

/* [(op, function)] of an op table, as its name function (ct_unary_math_name,
 * ct_binary_math_name, ct_compare_name) lists them. */
static PyObject *math_ops(const char *(*name_of)(int k, const char **function)) {
  PyObject *list = PyList_New(0);
  const char *function = NULL, *op;
  for (int k = 0; list && (op = name_of(k, &function)) != NULL; ++k) {
    PyObject *row = Py_BuildValue("(ss)", op, function);
    if (row == NULL || PyList_Append(list, row) < 0) Py_CLEAR(list);
    Py_XDECREF(row);
  }
  return list;
}

/* The unary math ops (src/ops/unary_math.h). */
static PyObject *unary_math_ops(PyObject *self, PyObject *unused) {
  (void)self, (void)unused;
  return math_ops(ct_unary_math_name);
}

/* The binary math ops (src/ops/binary_math.h). */
static PyObject *binary_math_ops(PyObject *self, PyObject *unused) {
  (void)self, (void)unused;
  return math_ops(ct_binary_math_name);
}

/* The comparisons (src/ops/compare.h). */
static PyObject *compare_ops(PyObject *self, PyObject *unused) {
  (void)self, (void)unused;
  return math_ops(ct_compare_name);
}

static PyMethodDef module_methods[] = {
    {"checkpoint_write", ct_py_checkpoint_write, METH_VARARGS, "write a safetensors checkpoint"},
    {"checkpoint_read", ct_py_checkpoint_read, METH_VARARGS, "read a safetensors checkpoint"},
    {"file_write", ct_py_file_write, METH_VARARGS, "replace a file whole (core/files)"},
    {"file_read", ct_py_file_read, METH_VARARGS, "read a regular file whole (core/files)"},
    {"_set_error_classes", ct_py_set_error_classes, METH_O, "register {code: exception class}"},
    {"devices", (PyCFunction)(void (*)(void))ct_py_devices, METH_VARARGS | METH_KEYWORDS,
     "the devices a session with these options has"},
    {"optimizer_learning_rate", optimizer_learning_rate, METH_VARARGS,
     "the rate to feed for update `step` (Adam's bias correction folded in)"},
    {"train", (PyCFunction)(void (*)(void))ct_py_train, METH_VARARGS | METH_KEYWORDS,
     "what `ctower train` runs"},
    {"unary_math_ops", unary_math_ops, METH_NOARGS,
     "[(TensorFlow's op name, its Python function's name)] of the unary math ops"},
    {"binary_math_ops", binary_math_ops, METH_NOARGS,
     "[(TensorFlow's op name, its Python function's name)] of the binary math ops"},
    {"compare_ops", compare_ops, METH_NOARGS,
     "[(TensorFlow's op name, its Python function's name)] of the comparisons but Equal"},
    {"summary_scalar", ct_py_summary_scalar, METH_VARARGS, "a serialized Summary of a scalar"},
    {"summary_histogram", ct_py_summary_histogram, METH_VARARGS,
     "a serialized Summary of a histogram"},
    {"summary_images", ct_py_summary_images, METH_VARARGS, "a serialized Summary of PNG images"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_ctower",
                                        "ctower's C library, as Python objects", -1,
                                        module_methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__ctower(void) {
  if (ct_py_graph_type_ready() < 0 || PyType_Ready(&ct_py_session_type) < 0 ||
      PyType_Ready(&ct_py_tensor_type) < 0 || PyType_Ready(&ct_py_batcher_type) < 0 ||
      PyType_Ready(&ct_py_summary_writer_type) < 0)
    return NULL;
  PyObject *m = PyModule_Create(&module_def);
  if (m == NULL) return NULL;
  Py_INCREF(&ct_py_graph_type);
  Py_INCREF(&ct_py_session_type);
  Py_INCREF(&ct_py_tensor_type);
  Py_INCREF(&ct_py_batcher_type);
  Py_INCREF(&ct_py_summary_writer_type);
  if (PyModule_AddObject(m, "Graph", (PyObject *)&ct_py_graph_type) ||
      PyModule_AddObject(m, "Session", (PyObject *)&ct_py_session_type) ||
      PyModule_AddObject(m, "HostTensor", (PyObject *)&ct_py_tensor_type) ||
      PyModule_AddObject(m, "Batcher", (PyObject *)&ct_py_batcher_type) ||
      PyModule_AddObject(m, "SummaryWriter", (PyObject *)&ct_py_summary_writer_type) ||
      PyModule_AddStringConstant(m, "version", CTOWER_VERSION)) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
