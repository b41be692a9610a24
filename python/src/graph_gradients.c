/* The Graph's gradients and optimizers: gradients of an output, those of
 * the variables, and the update that applies them. */
#include "graph_methods.h"

/* gradients(y, xs, stops=()) -> [gradient output or None per x] */
static PyObject *g_gradients(ct_py_graph *g, PyObject *args) {
  PyObject *oy, *seq, *stop_seq = NULL;
  ct_output y;
  if (!PyArg_ParseTuple(args, "OO|O", &oy, &seq, &stop_seq) || ct_py_output(g, oy, &y))
    return NULL;
  Py_ssize_t n = PySequence_Size(seq), n_stops = stop_seq ? PySequence_Size(stop_seq) : 0;
  if (n < 0 || n_stops < 0) return NULL;
  ct_output *xs = PyMem_Calloc((size_t)n + 1, sizeof *xs);
  ct_output *dxs = PyMem_Calloc((size_t)n + 1, sizeof *dxs);
  ct_output *stops = PyMem_Calloc((size_t)n_stops + 1, sizeof *stops);
  if (xs == NULL || dxs == NULL || stops == NULL) {
    PyMem_Free(xs), PyMem_Free(dxs), PyMem_Free(stops);
    return PyErr_NoMemory();
  }
  PyObject *list = NULL;
  if (ct_py_outputs(g, seq, xs, (int)n) >= 0 &&
      (stop_seq == NULL || ct_py_outputs(g, stop_seq, stops, (int)n_stops) >= 0)) {
    ct_py_write_lock(g);
    ct_gradients_stopping(g->graph, y, (int)n, xs, (int)n_stops, stops, dxs);
    ct_py_unlock(g);
    if (!ct_py_graph_check(g)) {
      list = PyList_New(n);
      for (Py_ssize_t i = 0; list && i < n; ++i)
        PyList_SET_ITEM(list, i, ct_py_output_tuple(dxs[i]));
    }
  }
  PyMem_Free(xs), PyMem_Free(dxs), PyMem_Free(stops);
  return list;
}

/* variable_gradients(loss) -> [(variable index, gradient output)] */
static PyObject *g_variable_gradients(ct_py_graph *g, PyObject *args) {
  PyObject *oloss;
  ct_output loss;
  if (!PyArg_ParseTuple(args, "O", &oloss) || ct_py_output(g, oloss, &loss)) return NULL;
  int cap = ct_graph_variable_count(g->graph) + 1, n = 0;
  int *vars = PyMem_Calloc((size_t)cap, sizeof *vars);
  ct_output *grads = PyMem_Calloc((size_t)cap, sizeof *grads);
  if (vars == NULL || grads == NULL) {
    PyMem_Free(vars), PyMem_Free(grads);
    return PyErr_NoMemory();
  }
  ct_py_write_lock(g);
  ct_variable_gradients(g->graph, loss, vars, grads, &n);
  ct_py_unlock(g);
  PyObject *list = NULL;
  if (!ct_py_graph_check(g)) {
    list = PyList_New(n);
    for (int i = 0; list && i < n; ++i)
      PyList_SET_ITEM(list, i, Py_BuildValue("(iN)", vars[i], ct_py_output_tuple(grads[i])));
  }
  PyMem_Free(vars), PyMem_Free(grads);
  return list;
}

/* apply_gradients(kind, momentum, nesterov, beta1, beta2, epsilon, [var index], [grad])
 * -> (train op id, learning-rate placeholder output) */
static PyObject *g_apply_gradients(ct_py_graph *g, PyObject *args) {
  int kind, nesterov;
  float momentum, beta1, beta2, epsilon;
  PyObject *var_seq, *grad_seq;
  if (!PyArg_ParseTuple(args, "ifpfffOO", &kind, &momentum, &nesterov, &beta1, &beta2, &epsilon,
                        &var_seq, &grad_seq))
    return NULL;
  Py_ssize_t n = PySequence_Size(var_seq);
  if (n < 0) return NULL;
  if (PySequence_Size(grad_seq) != n)
    return PyErr_Format(PyExc_ValueError, "as many gradients as variables");
  int *vars = PyMem_Calloc((size_t)n + 1, sizeof *vars);
  ct_output *grads = PyMem_Calloc((size_t)n + 1, sizeof *grads);
  PyObject *result = NULL;
  if (vars == NULL || grads == NULL) {
    PyErr_NoMemory();
    goto done;
  }
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject *v = PySequence_GetItem(var_seq, i);
    vars[i] = v ? (int)PyLong_AsLong(v) : -1;
    Py_XDECREF(v);
    if (PyErr_Occurred()) goto done;
  }
  if (ct_py_outputs(g, grad_seq, grads, (int)n) < 0) goto done;
  ct_optimizer_config config;
  ct_optimizer_config_defaults(&config, (ct_optimizer_kind)kind);
  config.momentum = momentum, config.nesterov = nesterov;
  config.beta1 = beta1, config.beta2 = beta2, config.epsilon = epsilon;
  ct_train_op train = {0};
  ct_py_write_lock(g);
  ct_optimizer_apply_gradients(g->graph, &config, (int)n, vars, grads, &train);
  ct_py_unlock(g);
  if (ct_py_graph_check(g)) goto done;
  result = Py_BuildValue("(iN)", ct_node_id(train.op), ct_py_output_tuple(train.learning_rate));
done:
  PyMem_Free(vars), PyMem_Free(grads);
  return result;
}

PyMethodDef ct_py_graph_gradient_methods[] = {
    GRAPH_METHOD(gradients, METH_VARARGS),
    GRAPH_METHOD(variable_gradients, METH_VARARGS),
    GRAPH_METHOD(apply_gradients, METH_VARARGS),
    {NULL, NULL, 0, NULL},
};
