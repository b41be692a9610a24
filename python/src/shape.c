/* Shapes from and to Python: sequences of ints, -1 for an unknown dimension. */
#include "binding.h"

/* Refuses a shape of more than 2^63 - 1 elements, as TensorFlow's shape
 * rules do: the engine counts elements in an int64_t. Returns 0, or -1 with
 * a ValueError set. */
static int check_elements(const ct_shape *shape) {
  int64_t elements = 1;
  for (int d = 0; d < shape->rank; ++d)
    if (shape->dims[d] > 0 && elements > INT64_MAX / shape->dims[d]) {
      PyObject *dims = ct_py_shape_tuple(shape);
      if (dims) PyErr_Format(PyExc_ValueError, "Shape %R is too large (more than 2**63 - 1 "
                             "entries)", dims);
      Py_XDECREF(dims);
      return -1;
    } else if (shape->dims[d] >= 0) {
      elements *= shape->dims[d];
    }
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
    PyObject *item = PySequence_Fast_GET_ITEM(fast, i);
    int overflow = 0;
    long long d = PyLong_AsLongLongAndOverflow(item, &overflow);
    if (overflow) PyErr_Format(PyExc_ValueError, "Dimension %R is out of range (more than "
                               "2**63 - 1 in magnitude)", item);
    if (overflow || (d == -1 && PyErr_Occurred())) {
      Py_DECREF(fast);
      return -1;
    }
    shape->dims[i] = (int64_t)d;
  }
  Py_DECREF(fast);
  return check_elements(shape);
}

PyObject *ct_py_shape_tuple(const ct_shape *shape) {
  PyObject *t = PyTuple_New(shape->rank);
  for (int d = 0; t && d < shape->rank; ++d)
    PyTuple_SET_ITEM(t, d, PyLong_FromLongLong((long long)shape->dims[d]));
  return t;
}
