/* The CPython extension `ctower._ctower`: a thin layer over the public C API
 * (include/ctower). It holds the library's objects and converts arguments;
 * TensorFlow's vocabulary is the Python package's (python/ctower).
 *
 * Its files use one another without a circle (scripts/check-layers.py):
 * errors.c, host_tensor.c, shape.c and graph_access.c use no other file;
 * the Graph's builder files, session_options.c, checkpoint.c, data.c,
 * summary.c and train.c use only those; graph.c joins its builders' methods; session.c
 * uses graph.c; module.c, on top, registers them all. */
#ifndef CTOWER_PYTHON_BINDING_H
#define CTOWER_PYTHON_BINDING_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pthread.h>

#include <ctower/ctower.h>

/* A ct_graph and the lock that keeps building (writers) apart from the runs
 * of sessions on it (readers, which release the GIL while they compute). */
typedef struct {
  PyObject_HEAD
  ct_graph *graph;
  pthread_rwlock_t lock;
} ct_py_graph;

/* errors.c. Raises ctower's error for a status: the exception class
 * registered for its code (ctower.errors), else RuntimeError. Returns NULL. */
PyObject *ct_py_raise(const ct_status *status);
/* _set_error_classes({code: exception class}) */
PyObject *ct_py_set_error_classes(PyObject *self, PyObject *classes);

/* host_tensor.c. A host tensor owned by Python, read through the buffer
 * protocol (numpy.asarray takes it without a copy). Takes ownership of tensor. */
PyObject *ct_py_tensor_wrap(ct_tensor *tensor);
/* Fills *out with a header over obj's buffer (C-contiguous, of dtype's
 * format), which *view keeps alive until PyBuffer_Release. Returns 0, or -1
 * with a Python error set. */
int ct_py_tensor_view(PyObject *obj, ct_dtype dtype, Py_buffer *view, ct_tensor *out);
extern PyTypeObject ct_py_tensor_type;

/* shape.c. A shape from a sequence of ints (-1: unknown). Returns 0 or -1
 * with an error. */
int ct_py_shape(PyObject *seq, ct_shape *shape);
PyObject *ct_py_shape_tuple(const ct_shape *shape);

/* graph_access.c. The output that obj, a tuple (node id, output index),
 * names; None is the null output. Returns 0, or -1 with a Python error set. */
int ct_py_output(ct_py_graph *graph, PyObject *obj, ct_output *out);

/* graph.c. The Graph type, ready once its methods are joined from the
 * files that hold them (call before using the type). Returns 0, or -1
 * with a Python error set. */
extern PyTypeObject ct_py_graph_type;
int ct_py_graph_type_ready(void);

/* session_options.c. The session options from keyword arguments
 * (ConfigProto's fields), and devices(**options). */
int ct_py_session_options(PyObject *kwargs, ct_session_options *options);
PyObject *ct_py_devices(PyObject *self, PyObject *args, PyObject *kwargs);

extern PyTypeObject ct_py_session_type; /* session.c */
extern PyTypeObject ct_py_batcher_type; /* data.c */

/* checkpoint.c */
PyObject *ct_py_checkpoint_write(PyObject *self, PyObject *args);
PyObject *ct_py_checkpoint_read(PyObject *self, PyObject *args);
PyObject *ct_py_file_write(PyObject *self, PyObject *args); /* files.c */
PyObject *ct_py_file_read(PyObject *self, PyObject *args);

PyObject *ct_py_train(PyObject *self, PyObject *args, PyObject *kwargs); /* train.c */

/* summary.c */
PyObject *ct_py_summary_scalar(PyObject *self, PyObject *args);
PyObject *ct_py_summary_histogram(PyObject *self, PyObject *args);
PyObject *ct_py_summary_images(PyObject *self, PyObject *args);
extern PyTypeObject ct_py_summary_writer_type;

#endif
