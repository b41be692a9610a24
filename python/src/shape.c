/* Shapes from and to Python: sequences of ints, -1 for an unknown dimension. */
#include "binding.h"

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
