/* The Graph's sources: placeholders, constants and variables, and the list
 * of its variables. */
#include <string.h>

#include "graph_methods.h"

static PyObject *g_placeholder(ct_py_graph *g, PyObject *args) {
  const char *name;
  int dtype;
  PyObject *shape_seq;
  ct_shape shape;
  if (!PyArg_ParseTuple(args, "ziO", &name, &dtype, &shape_seq) || ct_py_shape(shape_seq, &shape))
    return NULL;
  ct_py_write_lock(g);
  ct_output o = ct_placeholder(g->graph, name ? name : "Placeholder", (ct_dtype)dtype, shape);
  ct_py_unlock(g);
  return ct_py_built(g, o);
}

/* set_placeholder_shape(node id, shape): for a placeholder nothing reads yet. */
static PyObject *g_set_placeholder_shape(ct_py_graph *g, PyObject *args) {
  long id;
  PyObject *shape_seq;
  ct_shape shape;
  if (!PyArg_ParseTuple(args, "lO", &id, &shape_seq) || ct_py_shape(shape_seq, &shape)) return NULL;
  ct_node *n = ct_py_node(g, id);
  if (n == NULL) return NULL;
  ct_py_write_lock(g);
  ct_placeholder_set_shape(g->graph, (ct_output){n, 0}, shape);
  ct_py_unlock(g);
  if (ct_py_graph_check(g)) return NULL;
  Py_RETURN_NONE;
}

/* constant(name, dtype, buffer): the graph keeps a copy of the buffer. */
static PyObject *g_constant(ct_py_graph *g, PyObject *args) {
  const char *name;
  int dtype;
  PyObject *obj;
  if (!PyArg_ParseTuple(args, "ziO", &name, &dtype, &obj)) return NULL;
  Py_buffer view;
  ct_tensor value;
  if (ct_py_tensor_view(obj, (ct_dtype)dtype, &view, &value)) return NULL;
  ct_py_write_lock(g);
  ct_output o = ct_constant(g->graph, name ? name : "Const", &value);
  ct_py_unlock(g);
  PyBuffer_Release(&view);
  return ct_py_built(g, o);
}

/* variable(full name, shape, init kind, init value, mean, trainable, seed) -> (read
 * output, variable index); seed: None, an int (ct_variable_set_initializer_seed), or
 * TensorFlow's (seed, seed2) of a CT_INIT_TF_* kind (ct_variable_set_initializer_seeds) */
static PyObject *g_variable(ct_py_graph *g, PyObject *args) {
  const char *name;
  PyObject *shape_seq, *seed;
  int kind, trainable;
  float value, mean;
  ct_shape shape;
  if (!PyArg_ParseTuple(args, "sOiffpO", &name, &shape_seq, &kind, &value, &mean, &trainable,
                        &seed) ||
      ct_py_shape(shape_seq, &shape))
    return NULL;
  unsigned long long seed_value = 0, seed2_value = 0;
  const int pair = PyTuple_Check(seed);
  if (pair && !PyArg_ParseTuple(seed, "KK", &seed_value, &seed2_value)) return NULL;
  if (!pair && seed != Py_None) {
    seed_value = PyLong_AsUnsignedLongLongMask(seed);
    if (PyErr_Occurred()) return NULL;
  }
  ct_py_write_lock(g);
  ct_initializer init = {(ct_init_kind)kind, value};
  ct_output o = ct_variable(g->graph, name, shape, init, trainable);
  if (o.node && pair) ct_variable_set_initializer_seeds(g->graph, o, seed_value, seed2_value);
  if (o.node && !pair && seed != Py_None)
    ct_variable_set_initializer_seed(g->graph, o, seed_value);
  if (o.node && mean != 0.0f) ct_variable_set_initializer_mean(g->graph, o, mean);
  int index = -1;
  for (int i = 0; o.node && i < ct_graph_variable_count(g->graph); ++i)
    if (strcmp(ct_graph_variable_name(g->graph, i), name) == 0) index = i;
  ct_py_unlock(g);
  PyObject *out = ct_py_built(g, o);
  if (out == NULL) return NULL;
  return Py_BuildValue("(Ni)", out, index);
}

static PyObject *g_variable_read(ct_py_graph *g, PyObject *args) {
  int index;
  if (!PyArg_ParseTuple(args, "i", &index)) return NULL;
  ct_py_write_lock(g);
  ct_output o = ct_variable_read(g->graph, index);
  ct_py_unlock(g);
  return ct_py_built(g, o);
}

static PyObject *g_set_weight_decay(ct_py_graph *g, PyObject *args) {
  PyObject *obj;
  float decay;
  ct_output o;
  if (!PyArg_ParseTuple(args, "Of", &obj, &decay) || ct_py_output(g, obj, &o)) return NULL;
  ct_py_write_lock(g);
  ct_variable_set_weight_decay(g->graph, o, decay);
  ct_py_unlock(g);
  if (ct_py_graph_check(g)) return NULL;
  Py_RETURN_NONE;
}

/* variables() -> [(name, shape, trainable)] */
static PyObject *g_variables(ct_py_graph *g, PyObject *unused) {
  (void)unused;
  int n = ct_graph_variable_count(g->graph);
  PyObject *list = PyList_New(n);
  for (int i = 0; list && i < n; ++i) {
    ct_shape s = ct_graph_variable_shape(g->graph, i);
    PyList_SET_ITEM(list, i, Py_BuildValue("(sNi)", ct_graph_variable_name(g->graph, i),
                                           ct_py_shape_tuple(&s),
                                           ct_graph_variable_trainable(g->graph, i)));
  }
  return list;
}

PyMethodDef ct_py_graph_source_methods[] = {
    GRAPH_METHOD(placeholder, METH_VARARGS),
    GRAPH_METHOD(set_placeholder_shape, METH_VARARGS),
    GRAPH_METHOD(constant, METH_VARARGS),
    GRAPH_METHOD(variable, METH_VARARGS),
    GRAPH_METHOD(variable_read, METH_VARARGS),
    GRAPH_METHOD(set_weight_decay, METH_VARARGS),
    GRAPH_METHOD(variables, METH_NOARGS),
    {NULL, NULL, 0, NULL},
};
