/* The errors the extension raises: a status as the exception class that
 * ctower.errors registers for its code (TensorFlow's tf.errors), else
 * RuntimeError. */
#include "binding.h"

static PyObject *error_classes; /* {code: class}, set by ctower.errors */

PyObject *ct_py_set_error_classes(PyObject *self, PyObject *classes) {
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
