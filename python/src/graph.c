/* ctower._ctower.Graph: a ct_graph, its lifetime, scopes and nodes, and the
 * type, whose methods are this file's and the builders' (graph_sources.c,
 * graph_ops.c, graph_gradients.c). An output is passed and returned as a
 * tuple (node id, output index); a node as its id. Every builder runs under
 * the graph's write lock and raises ValueError with the graph's message
 * when the op cannot be built (the graph stays usable). */
#include "graph_methods.h"

/* ---- the type ------------------------------------------------------------------------ */

static PyObject *graph_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
  (void)args, (void)kwargs;
  ct_py_graph *self = (ct_py_graph *)type->tp_alloc(type, 0);
  if (self == NULL) return NULL;
  self->graph = ct_graph_new();
  if (self->graph == NULL) {
    Py_DECREF(self);
    return PyErr_NoMemory();
  }
  pthread_rwlock_init(&self->lock, NULL);
  return (PyObject *)self;
}

static void graph_dealloc(ct_py_graph *self) {
  if (self->graph) {
    ct_graph_free(self->graph);
    pthread_rwlock_destroy(&self->lock);
  }
  Py_TYPE(self)->tp_free((PyObject *)self);
}

/* ---- scopes, seed, names -------------------------------------------------------------- */

static PyObject *g_set_seed(ct_py_graph *g, PyObject *arg) {
  unsigned long long seed = PyLong_AsUnsignedLongLongMask(arg);
  if (PyErr_Occurred()) return NULL;
  ct_graph_set_seed(g->graph, (uint64_t)seed);
  Py_RETURN_NONE;
}

/* The name scope becomes `scope` (a full name, "" for none): the C stack
 * holds at most that one entry, so that TensorFlow's absolute scopes work. */
static PyObject *g_set_name_scope(ct_py_graph *g, PyObject *args) {
  const char *scope;
  int had;
  if (!PyArg_ParseTuple(args, "sp", &scope, &had)) return NULL;
  ct_py_write_lock(g);
  if (had) ct_graph_pop_name_scope(g->graph);
  if (scope[0]) ct_graph_push_name_scope(g->graph, scope);
  ct_py_unlock(g);
  if (ct_py_graph_check(g)) return NULL;
  Py_RETURN_NONE;
}

static PyObject *g_push_device(ct_py_graph *g, PyObject *args) {
  const char *device;
  if (!PyArg_ParseTuple(args, "s", &device)) return NULL;
  ct_py_write_lock(g);
  ct_graph_push_device(g->graph, device);
  ct_py_unlock(g);
  if (ct_py_graph_check(g)) return NULL;
  Py_RETURN_NONE;
}

static PyObject *g_pop_device(ct_py_graph *g, PyObject *unused) {
  (void)unused;
  ct_py_write_lock(g);
  ct_graph_pop_device(g->graph);
  ct_py_unlock(g);
  if (ct_py_graph_check(g)) return NULL;
  Py_RETURN_NONE;
}

static PyObject *g_rename(ct_py_graph *g, PyObject *args) {
  long id;
  const char *name;
  if (!PyArg_ParseTuple(args, "ls", &id, &name)) return NULL;
  ct_node *n = ct_py_node(g, id);
  if (n == NULL) return NULL;
  ct_py_write_lock(g);
  ct_graph_rename_node(g->graph, n, name);
  ct_py_unlock(g);
  if (ct_py_graph_check(g)) return NULL;
  return PyUnicode_FromString(ct_node_name(n));
}

/* ---- nodes ------------------------------------------------------------------------------ */

static PyObject *g_node_count(ct_py_graph *g, PyObject *unused) {
  (void)unused;
  return PyLong_FromLong(ct_graph_node_count(g->graph));
}

static PyObject *g_find(ct_py_graph *g, PyObject *args) {
  const char *name;
  if (!PyArg_ParseTuple(args, "s", &name)) return NULL;
  ct_node *n = ct_graph_find(g->graph, name);
  return PyLong_FromLong(n ? ct_node_id(n) : -1);
}

/* (name, op, requested device, number of outputs, inputs, control inputs) */
static PyObject *g_node(ct_py_graph *g, PyObject *args) {
  long id;
  if (!PyArg_ParseTuple(args, "l", &id)) return NULL;
  ct_node *n = ct_py_node(g, id);
  if (n == NULL) return NULL;
  PyObject *inputs = PyList_New(ct_node_num_inputs(n));
  for (int i = 0; inputs && i < ct_node_num_inputs(n); ++i)
    PyList_SET_ITEM(inputs, i, ct_py_output_tuple(ct_node_input(n, i)));
  PyObject *control = PyList_New(ct_node_num_control_inputs(n));
  for (int i = 0; control && i < ct_node_num_control_inputs(n); ++i)
    PyList_SET_ITEM(control, i, PyLong_FromLong(ct_node_id(ct_node_control_input(n, i))));
  if (inputs == NULL || control == NULL) {
    Py_XDECREF(inputs);
    Py_XDECREF(control);
    return NULL;
  }
  return Py_BuildValue("(sssiNN)", ct_node_name(n), ct_node_op(n), ct_node_requested_device(n),
                       ct_node_num_outputs(n), inputs, control);
}

/* (shape tuple with -1 for unknown, dtype code) */
static PyObject *g_output_info(ct_py_graph *g, PyObject *args) {
  ct_output o;
  PyObject *obj;
  if (!PyArg_ParseTuple(args, "O", &obj) || ct_py_output(g, obj, &o)) return NULL;
  ct_shape s = ct_output_shape(o);
  return Py_BuildValue("(Ni)", ct_py_shape_tuple(&s), (int)ct_output_dtype(o));
}

static PyObject *g_add_control_input(ct_py_graph *g, PyObject *args) {
  long id, before;
  if (!PyArg_ParseTuple(args, "ll", &id, &before)) return NULL;
  ct_node *n = ct_py_node(g, id), *b = ct_py_node(g, before);
  if (n == NULL || b == NULL) return NULL;
  ct_py_write_lock(g);
  ct_node_add_control_input(n, b);
  ct_py_unlock(g);
  Py_RETURN_NONE;
}

static PyObject *g_group(ct_py_graph *g, PyObject *args) {
  const char *name;
  PyObject *seq;
  if (!PyArg_ParseTuple(args, "zO", &name, &seq)) return NULL;
  PyObject *fast = PySequence_Fast(seq, "expected node ids");
  if (fast == NULL) return NULL;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  ct_node **nodes = PyMem_Calloc((size_t)n + 1, sizeof *nodes);
  for (Py_ssize_t i = 0; nodes && i < n; ++i) {
    long id = PyLong_AsLong(PySequence_Fast_GET_ITEM(fast, i));
    if ((id == -1 && PyErr_Occurred()) || (nodes[i] = ct_py_node(g, id)) == NULL) {
      PyMem_Free(nodes);
      Py_DECREF(fast);
      return NULL;
    }
  }
  Py_DECREF(fast);
  if (nodes == NULL) return PyErr_NoMemory();
  ct_py_write_lock(g);
  ct_node *group = ct_group(g->graph, name, (int)n, nodes);
  ct_py_unlock(g);
  PyMem_Free(nodes);
  if (ct_py_graph_check(g)) return NULL;
  return PyLong_FromLong(ct_node_id(group));
}

static PyObject *g_update_ops(ct_py_graph *g, PyObject *unused) {
  (void)unused;
  int n = ct_graph_update_op_count(g->graph);
  PyObject *list = PyList_New(n);
  for (int i = 0; list && i < n; ++i)
    PyList_SET_ITEM(list, i, PyLong_FromLong(ct_node_id(ct_graph_update_op(g->graph, i))));
  return list;
}

static PyMethodDef graph_methods_own[] = {
    GRAPH_METHOD(set_seed, METH_O),
    GRAPH_METHOD(set_name_scope, METH_VARARGS),
    GRAPH_METHOD(push_device, METH_VARARGS),
    GRAPH_METHOD(pop_device, METH_NOARGS),
    GRAPH_METHOD(rename, METH_VARARGS),
    GRAPH_METHOD(node_count, METH_NOARGS),
    GRAPH_METHOD(find, METH_VARARGS),
    GRAPH_METHOD(node, METH_VARARGS),
    GRAPH_METHOD(output_info, METH_VARARGS),
    GRAPH_METHOD(add_control_input, METH_VARARGS),
    GRAPH_METHOD(group, METH_VARARGS),
    GRAPH_METHOD(update_ops, METH_NOARGS),
    {NULL, NULL, 0, NULL},
};

/* The type's methods: the table above and the builder files', joined once,
 * with room to spare for the ending {NULL} entry and methods to come. */
static PyMethodDef graph_methods[64];

PyTypeObject ct_py_graph_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ctower._ctower.Graph",
    .tp_basicsize = sizeof(ct_py_graph),
    .tp_new = graph_new,
    .tp_dealloc = (destructor)graph_dealloc,
    .tp_methods = graph_methods,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A ct_graph: nodes, scopes and variables (ctower/graph.h, ctower/ops.h).",
};

int ct_py_graph_type_ready(void) {
  if (ct_py_graph_type.tp_flags & Py_TPFLAGS_READY) return 0;
  const PyMethodDef *const tables[] = {graph_methods_own, ct_py_graph_source_methods,
                                       ct_py_graph_op_methods, ct_py_graph_gradient_methods};
  size_t n = 0;
  for (size_t t = 0; t < sizeof tables / sizeof tables[0]; ++t)
    for (const PyMethodDef *m = tables[t]; m->ml_name; ++m) {
      if (n + 1 >= sizeof graph_methods / sizeof graph_methods[0]) {
        PyErr_SetString(PyExc_SystemError, "the Graph type has more methods than its table holds");
        return -1;
      }
      graph_methods[n++] = *m;
    }
  return PyType_Ready(&ct_py_graph_type);
}
