/* How the Graph's methods reach its ct_graph: the write lock that building
 * takes, nodes and outputs from and to Python, and the result of a builder. */
#include "graph_methods.h"

void ct_py_write_lock(ct_py_graph *g) {
  if (pthread_rwlock_trywrlock(&g->lock) == 0) return;
  Py_BEGIN_ALLOW_THREADS
  pthread_rwlock_wrlock(&g->lock);
  Py_END_ALLOW_THREADS
}
void ct_py_unlock(ct_py_graph *g) { pthread_rwlock_unlock(&g->lock); }

ct_node *ct_py_node(ct_py_graph *g, long id) {
  ct_node *n = ct_graph_node(g->graph, (int)id);
  if (n == NULL) PyErr_Format(PyExc_ValueError, "the graph has no node %ld", id);
  return n;
}

int ct_py_output(ct_py_graph *g, PyObject *obj, ct_output *out) {
  long id, index;
  if (obj == Py_None) {
    *out = (ct_output){NULL, 0};
    return 0;
  }
  if (!PyTuple_Check(obj) || !PyArg_ParseTuple(obj, "ll", &id, &index)) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "an output is (node id, index)");
    return -1;
  }
  ct_node *n = ct_py_node(g, id);
  if (n == NULL) return -1;
  if (index < 0 || index >= ct_node_num_outputs(n)) {
    PyErr_Format(PyExc_ValueError, "node '%s' has no output %ld", ct_node_name(n), index);
    return -1;
  }
  *out = (ct_output){n, (int)index};
  return 0;
}

int ct_py_outputs(ct_py_graph *g, PyObject *seq, ct_output *outs, int max) {
  PyObject *fast = PySequence_Fast(seq, "expected a sequence of outputs");
  if (fast == NULL) return -1;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  if (n > max) {
    Py_DECREF(fast);
    PyErr_Format(PyExc_ValueError, "at most %d inputs, got %zd", max, n);
    return -1;
  }
  for (Py_ssize_t i = 0; i < n; ++i)
    if (ct_py_output(g, PySequence_Fast_GET_ITEM(fast, i), &outs[i])) {
      Py_DECREF(fast);
      return -1;
    }
  Py_DECREF(fast);
  return (int)n;
}

PyObject *ct_py_output_tuple(ct_output o) {
  if (o.node == NULL) Py_RETURN_NONE;
  return Py_BuildValue("(ii)", ct_node_id(o.node), o.index);
}

PyObject *ct_py_built(ct_py_graph *g, ct_output o) {
  if (ct_py_graph_check(g)) return NULL;
  if (o.node == NULL) return PyErr_Format(PyExc_ValueError, "the op was not built");
  return ct_py_output_tuple(o);
}

int ct_py_graph_check(ct_py_graph *g) {
  const ct_status *status = ct_graph_status(g->graph);
  if (ct_ok(status)) return 0;
  PyErr_SetString(PyExc_ValueError, status->message);
  ct_graph_clear_error(g->graph);
  return -1;
}
