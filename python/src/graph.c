/* ctower._ctower.Graph: a ct_graph and its op builders. An output is passed
 * and returned as a tuple (node id, output index); a node as its id. Every
 * builder runs under the graph's write lock and raises ValueError with the
 * graph's message when the op cannot be built (the graph stays usable). */
#include <string.h>

#include "binding.h"

/* ---- locking and conversions ---------------------------------------------------- */

static void write_lock(ct_py_graph *g) {
  if (pthread_rwlock_trywrlock(&g->lock) == 0) return;
  Py_BEGIN_ALLOW_THREADS
  pthread_rwlock_wrlock(&g->lock);
  Py_END_ALLOW_THREADS
}
static void unlock(ct_py_graph *g) { pthread_rwlock_unlock(&g->lock); }

static ct_node *node_of(ct_py_graph *g, long id) {
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
  ct_node *n = node_of(g, id);
  if (n == NULL) return -1;
  if (index < 0 || index >= ct_node_num_outputs(n)) {
    PyErr_Format(PyExc_ValueError, "node '%s' has no output %ld", ct_node_name(n), index);
    return -1;
  }
  *out = (ct_output){n, (int)index};
  return 0;
}

/* outputs from a sequence; returns the count or -1. */
static int get_outputs(ct_py_graph *g, PyObject *seq, ct_output *outs, int max) {
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

static PyObject *output_tuple(ct_output o) {
  if (o.node == NULL) Py_RETURN_NONE;
  return Py_BuildValue("(ii)", ct_node_id(o.node), o.index);
}

/* The result of a builder: its output, or ValueError with the graph's error. */
static PyObject *built(ct_py_graph *g, ct_output o) {
  if (ct_py_graph_check(g)) return NULL;
  if (o.node == NULL) return PyErr_Format(PyExc_ValueError, "the op was not built");
  return output_tuple(o);
}

int ct_py_graph_check(ct_py_graph *g) {
  const ct_status *status = ct_graph_status(g->graph);
  if (ct_ok(status)) return 0;
  PyErr_SetString(PyExc_ValueError, status->message);
  ct_graph_clear_error(g->graph);
  return -1;
}

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
  write_lock(g);
  if (had) ct_graph_pop_name_scope(g->graph);
  if (scope[0]) ct_graph_push_name_scope(g->graph, scope);
  unlock(g);
  if (ct_py_graph_check(g)) return NULL;
  Py_RETURN_NONE;
}

static PyObject *g_push_device(ct_py_graph *g, PyObject *args) {
  const char *device;
  if (!PyArg_ParseTuple(args, "s", &device)) return NULL;
  write_lock(g);
  ct_graph_push_device(g->graph, device);
  unlock(g);
  if (ct_py_graph_check(g)) return NULL;
  Py_RETURN_NONE;
}

static PyObject *g_pop_device(ct_py_graph *g, PyObject *unused) {
  (void)unused;
  write_lock(g);
  ct_graph_pop_device(g->graph);
  unlock(g);
  if (ct_py_graph_check(g)) return NULL;
  Py_RETURN_NONE;
}

static PyObject *g_rename(ct_py_graph *g, PyObject *args) {
  long id;
  const char *name;
  if (!PyArg_ParseTuple(args, "ls", &id, &name)) return NULL;
  ct_node *n = node_of(g, id);
  if (n == NULL) return NULL;
  write_lock(g);
  ct_graph_rename_node(g->graph, n, name);
  unlock(g);
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
  ct_node *n = node_of(g, id);
  if (n == NULL) return NULL;
  PyObject *inputs = PyList_New(ct_node_num_inputs(n));
  for (int i = 0; inputs && i < ct_node_num_inputs(n); ++i)
    PyList_SET_ITEM(inputs, i, output_tuple(ct_node_input(n, i)));
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
  ct_node *n = node_of(g, id), *b = node_of(g, before);
  if (n == NULL || b == NULL) return NULL;
  write_lock(g);
  ct_node_add_control_input(n, b);
  unlock(g);
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
    if ((id == -1 && PyErr_Occurred()) || (nodes[i] = node_of(g, id)) == NULL) {
      PyMem_Free(nodes);
      Py_DECREF(fast);
      return NULL;
    }
  }
  Py_DECREF(fast);
  if (nodes == NULL) return PyErr_NoMemory();
  write_lock(g);
  ct_node *group = ct_group(g->graph, name, (int)n, nodes);
  unlock(g);
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

/* ---- sources and variables ---------------------------------------------------------------- */

static PyObject *g_placeholder(ct_py_graph *g, PyObject *args) {
  const char *name;
  int dtype;
  PyObject *shape_seq;
  ct_shape shape;
  if (!PyArg_ParseTuple(args, "ziO", &name, &dtype, &shape_seq) || ct_py_shape(shape_seq, &shape))
    return NULL;
  write_lock(g);
  ct_output o = ct_placeholder(g->graph, name ? name : "Placeholder", (ct_dtype)dtype, shape);
  unlock(g);
  return built(g, o);
}

/* set_placeholder_shape(node id, shape): for a placeholder nothing reads yet. */
static PyObject *g_set_placeholder_shape(ct_py_graph *g, PyObject *args) {
  long id;
  PyObject *shape_seq;
  ct_shape shape;
  if (!PyArg_ParseTuple(args, "lO", &id, &shape_seq) || ct_py_shape(shape_seq, &shape)) return NULL;
  ct_node *n = node_of(g, id);
  if (n == NULL) return NULL;
  write_lock(g);
  ct_placeholder_set_shape(g->graph, (ct_output){n, 0}, shape);
  unlock(g);
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
  write_lock(g);
  ct_output o = ct_constant(g->graph, name ? name : "Const", &value);
  unlock(g);
  PyBuffer_Release(&view);
  return built(g, o);
}

/* variable(full name, shape, init kind, init value, trainable, seed or None)
 * -> (read output, variable index) */
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
  unsigned long long seed_value = 0;
  if (seed != Py_None) {
    seed_value = PyLong_AsUnsignedLongLongMask(seed);
    if (PyErr_Occurred()) return NULL;
  }
  write_lock(g);
  ct_initializer init = {(ct_init_kind)kind, value};
  ct_output o = ct_variable(g->graph, name, shape, init, trainable);
  if (o.node && seed != Py_None) ct_variable_set_initializer_seed(g->graph, o, seed_value);
  if (o.node && mean != 0.0f) ct_variable_set_initializer_mean(g->graph, o, mean);
  int index = -1;
  for (int i = 0; o.node && i < ct_graph_variable_count(g->graph); ++i)
    if (strcmp(ct_graph_variable_name(g->graph, i), name) == 0) index = i;
  unlock(g);
  PyObject *out = built(g, o);
  if (out == NULL) return NULL;
  return Py_BuildValue("(Ni)", out, index);
}

static PyObject *g_variable_read(ct_py_graph *g, PyObject *args) {
  int index;
  if (!PyArg_ParseTuple(args, "i", &index)) return NULL;
  write_lock(g);
  ct_output o = ct_variable_read(g->graph, index);
  unlock(g);
  return built(g, o);
}

static PyObject *g_set_weight_decay(ct_py_graph *g, PyObject *args) {
  PyObject *obj;
  float decay;
  ct_output o;
  if (!PyArg_ParseTuple(args, "Of", &obj, &decay) || ct_py_output(g, obj, &o)) return NULL;
  write_lock(g);
  ct_variable_set_weight_decay(g->graph, o, decay);
  unlock(g);
  if (ct_py_graph_check(g)) return NULL;
  Py_RETURN_NONE;
}

/* ---- ops ----------------------------------------------------------------------------------- */

enum { UNARY_IDENTITY, UNARY_NEG, UNARY_RELU, UNARY_SIGMOID, UNARY_TANH, UNARY_ZEROS_LIKE,
       UNARY_ONES_LIKE, UNARY_L2_LOSS, UNARY_STOP_GRADIENT };

static PyObject *g_unary(ct_py_graph *g, PyObject *args) {
  int kind;
  PyObject *obj;
  ct_output x;
  if (!PyArg_ParseTuple(args, "iO", &kind, &obj) || ct_py_output(g, obj, &x)) return NULL;
  ct_output (*const table[])(ct_graph *, ct_output) = {
      ct_identity, ct_neg,        ct_relu,    ct_sigmoid,      ct_tanh,
      ct_zeros_like, ct_ones_like, ct_l2_loss, ct_stop_gradient};
  if (kind < 0 || kind > UNARY_STOP_GRADIENT) return PyErr_Format(PyExc_ValueError, "no unary op %d", kind);
  write_lock(g);
  ct_output o = table[kind](g->graph, x);
  unlock(g);
  return built(g, o);
}

enum { BINARY_ADD, BINARY_SUB, BINARY_MUL, BINARY_DIV, BINARY_SPARSE_XENT, BINARY_ACCURACY,
       BINARY_ASSIGN, BINARY_DROPOUT };

static PyObject *g_binary(ct_py_graph *g, PyObject *args) {
  int kind;
  PyObject *oa, *ob;
  ct_output a, b;
  if (!PyArg_ParseTuple(args, "iOO", &kind, &oa, &ob) || ct_py_output(g, oa, &a) ||
      ct_py_output(g, ob, &b))
    return NULL;
  ct_output (*const table[])(ct_graph *, ct_output, ct_output) = {
      ct_add,    ct_sub,       ct_mul,   ct_div, ct_sparse_softmax_cross_entropy,
      ct_accuracy, ct_assign, ct_dropout_tensor};
  if (kind < 0 || kind > BINARY_DROPOUT)
    return PyErr_Format(PyExc_ValueError, "no binary op %d", kind);
  write_lock(g);
  ct_output o = table[kind](g->graph, a, b);
  unlock(g);
  return built(g, o);
}

/* equal(a, b), softmax_xent(logits, labels), cast(x, dtype) */
static PyObject *pair_op(ct_py_graph *g, PyObject *args,
                         ct_output (*build)(ct_graph *, ct_output, ct_output)) {
  PyObject *oa, *ob;
  ct_output a, b;
  if (!PyArg_ParseTuple(args, "OO", &oa, &ob) || ct_py_output(g, oa, &a) || ct_py_output(g, ob, &b))
    return NULL;
  write_lock(g);
  ct_output o = build(g->graph, a, b);
  unlock(g);
  return built(g, o);
}
static PyObject *g_equal(ct_py_graph *g, PyObject *args) { return pair_op(g, args, ct_equal); }
static PyObject *g_softmax_xent(ct_py_graph *g, PyObject *args) {
  return pair_op(g, args, ct_softmax_cross_entropy);
}
static PyObject *g_cast(ct_py_graph *g, PyObject *args) {
  PyObject *ox;
  int dtype;
  ct_output x;
  if (!PyArg_ParseTuple(args, "Oi", &ox, &dtype) || ct_py_output(g, ox, &x)) return NULL;
  if (dtype < 0 || dtype >= CT_DTYPE_COUNT) return PyErr_Format(PyExc_ValueError, "no dtype %d", dtype);
  write_lock(g);
  ct_output o = ct_cast(g->graph, x, (ct_dtype)dtype);
  unlock(g);
  return built(g, o);
}

static PyObject *g_matmul(ct_py_graph *g, PyObject *args) {
  PyObject *oa, *ob;
  int ta, tb;
  ct_output a, b;
  if (!PyArg_ParseTuple(args, "OOpp", &oa, &ob, &ta, &tb) || ct_py_output(g, oa, &a) ||
      ct_py_output(g, ob, &b))
    return NULL;
  write_lock(g);
  ct_output o = ct_matmul(g->graph, a, b, ta, tb);
  unlock(g);
  return built(g, o);
}

static PyObject *g_conv2d(ct_py_graph *g, PyObject *args) {
  PyObject *ox, *of;
  int sh, sw, dh, dw, same;
  ct_output x, f;
  if (!PyArg_ParseTuple(args, "OOiiiip", &ox, &of, &sh, &sw, &dh, &dw, &same) ||
      ct_py_output(g, ox, &x) || ct_py_output(g, of, &f))
    return NULL;
  write_lock(g);
  ct_output o = ct_conv2d_dilated(g->graph, x, f, sh, sw, dh, dw,
                                  same ? CT_PADDING_SAME : CT_PADDING_VALID);
  unlock(g);
  return built(g, o);
}

static PyObject *g_pool(ct_py_graph *g, PyObject *args) {
  PyObject *ox;
  int max, kh, kw, sh, sw, same;
  ct_output x;
  if (!PyArg_ParseTuple(args, "pOiiiip", &max, &ox, &kh, &kw, &sh, &sw, &same) ||
      ct_py_output(g, ox, &x))
    return NULL;
  write_lock(g);
  ct_padding padding = same ? CT_PADDING_SAME : CT_PADDING_VALID;
  ct_output o = max ? ct_max_pool_hw(g->graph, x, kh, kw, sh, sw, padding)
                    : ct_avg_pool_hw(g->graph, x, kh, kw, sh, sw, padding);
  unlock(g);
  return built(g, o);
}

static PyObject *g_lrn(ct_py_graph *g, PyObject *args) {
  PyObject *ox;
  int radius;
  float bias, alpha, beta;
  ct_output x;
  if (!PyArg_ParseTuple(args, "Oifff", &ox, &radius, &bias, &alpha, &beta) ||
      ct_py_output(g, ox, &x))
    return NULL;
  write_lock(g);
  ct_output o = ct_lrn(g->graph, x, radius, bias, alpha, beta);
  unlock(g);
  return built(g, o);
}

/* batch_norm(x, gamma, beta, moving_mean|None, moving_var|None, training, momentum, epsilon) */
static PyObject *g_batch_norm(ct_py_graph *g, PyObject *args) {
  PyObject *o[5];
  ct_output in[5];
  int training;
  float momentum, epsilon;
  if (!PyArg_ParseTuple(args, "OOOOOpff", &o[0], &o[1], &o[2], &o[3], &o[4], &training,
                        &momentum, &epsilon))
    return NULL;
  for (int i = 0; i < 5; ++i)
    if (ct_py_output(g, o[i], &in[i])) return NULL;
  write_lock(g);
  ct_output y = ct_batch_norm(g->graph, in[0], in[1], in[2], in[3], in[4], training, momentum,
                              epsilon);
  unlock(g);
  return built(g, y);
}

static PyObject *g_dropout(ct_py_graph *g, PyObject *args) {
  PyObject *ox;
  float rate;
  ct_output x;
  if (!PyArg_ParseTuple(args, "Of", &ox, &rate) || ct_py_output(g, ox, &x)) return NULL;
  write_lock(g);
  ct_output o = ct_dropout(g->graph, x, rate);
  unlock(g);
  return built(g, o);
}

static PyObject *g_reshape(ct_py_graph *g, PyObject *args) {
  PyObject *ox, *shape_seq;
  ct_output x;
  ct_shape shape;
  if (!PyArg_ParseTuple(args, "OO", &ox, &shape_seq) || ct_py_output(g, ox, &x) ||
      ct_py_shape(shape_seq, &shape))
    return NULL;
  write_lock(g);
  ct_output o = ct_reshape(g->graph, x, shape);
  unlock(g);
  return built(g, o);
}

/* concat(outputs, axis) and add_n(outputs) */
static PyObject *g_concat(ct_py_graph *g, PyObject *args) {
  PyObject *seq;
  int axis;
  ct_output xs[64];
  if (!PyArg_ParseTuple(args, "Oi", &seq, &axis)) return NULL;
  int n = get_outputs(g, seq, xs, 63);
  if (n < 0) return NULL;
  write_lock(g);
  ct_output o = ct_concat(g->graph, n, xs, axis);
  unlock(g);
  return built(g, o);
}

static PyObject *g_add_n(ct_py_graph *g, PyObject *args) {
  PyObject *seq;
  ct_output xs[64];
  if (!PyArg_ParseTuple(args, "O", &seq)) return NULL;
  int n = get_outputs(g, seq, xs, 64);
  if (n < 0) return NULL;
  write_lock(g);
  ct_output o = ct_add_n(g->graph, n, xs);
  unlock(g);
  return built(g, o);
}

/* sizes (a sequence of up to 64 ints) into sizes[]; returns the count or -1. */
static int get_sizes(PyObject *seq, int64_t *sizes) {
  PyObject *fast = PySequence_Fast(seq, "split sizes are a sequence of integers");
  if (fast == NULL) return -1;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  if (n < 1 || n > 64) {
    Py_DECREF(fast);
    PyErr_Format(PyExc_ValueError, "split makes 1 to 64 parts, not %zd", n);
    return -1;
  }
  for (Py_ssize_t i = 0; i < n; ++i) {
    sizes[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(fast, i));
    if (sizes[i] == -1 && PyErr_Occurred()) {
      Py_DECREF(fast);
      return -1;
    }
  }
  Py_DECREF(fast);
  return (int)n;
}

/* split(x, axis, n) into equal parts, or split(x, axis, sizes) */
static PyObject *g_split(ct_py_graph *g, PyObject *args) {
  PyObject *ox, *parts;
  int axis, n;
  int64_t sizes[64];
  ct_output x, outs[64];
  if (!PyArg_ParseTuple(args, "OiO", &ox, &axis, &parts) || ct_py_output(g, ox, &x)) return NULL;
  const int sized = !PyLong_Check(parts);
  if (sized) {
    if ((n = get_sizes(parts, sizes)) < 0) return NULL;
  } else {
    n = (int)PyLong_AsLong(parts);
    if (PyErr_Occurred()) return NULL;
    if (n < 1 || n > 64) return PyErr_Format(PyExc_ValueError, "split makes 1 to 64 parts, not %d", n);
  }
  write_lock(g);
  if (sized)
    ct_split_sizes(g->graph, x, axis, n, sizes, outs);
  else
    ct_split(g->graph, x, axis, n, outs);
  unlock(g);
  if (ct_py_graph_check(g)) return NULL;
  PyObject *list = PyList_New(n);
  for (int k = 0; list && k < n; ++k) PyList_SET_ITEM(list, k, output_tuple(outs[k]));
  return list;
}

/* strided_slice(x, begin, end, strides, begin_mask, end_mask): three lists
 * of x's rank (read as shapes: up to CT_MAX_RANK ints) */
static PyObject *g_strided_slice(ct_py_graph *g, PyObject *args) {
  PyObject *ox, *ob, *oe, *os;
  unsigned begin_mask, end_mask;
  ct_output x;
  ct_shape begin, end, strides;
  if (!PyArg_ParseTuple(args, "OOOOII", &ox, &ob, &oe, &os, &begin_mask, &end_mask) ||
      ct_py_output(g, ox, &x) || ct_py_shape(ob, &begin) || ct_py_shape(oe, &end) ||
      ct_py_shape(os, &strides))
    return NULL;
  const int rank = ct_output_shape(x).rank;
  if (begin.rank != rank || end.rank != rank || strides.rank != rank)
    return PyErr_Format(PyExc_ValueError, "a slice of a tensor of rank %d takes %d begins, "
                        "ends and strides", rank, rank);
  write_lock(g);
  ct_output o = ct_strided_slice(g->graph, x, begin.dims, end.dims, strides.dims, begin_mask,
                                 end_mask);
  unlock(g);
  return built(g, o);
}

/* argmax(x, axis) */
static PyObject *g_argmax(ct_py_graph *g, PyObject *args) {
  PyObject *ox;
  int axis;
  ct_output x;
  if (!PyArg_ParseTuple(args, "Oi", &ox, &axis) || ct_py_output(g, ox, &x)) return NULL;
  write_lock(g);
  ct_output o = ct_argmax_axis(g->graph, x, axis);
  unlock(g);
  return built(g, o);
}

static PyObject *g_reduce(ct_py_graph *g, PyObject *args) {
  PyObject *ox;
  int mean, keep;
  unsigned mask;
  ct_output x;
  if (!PyArg_ParseTuple(args, "pOIp", &mean, &ox, &mask, &keep) || ct_py_output(g, ox, &x))
    return NULL;
  write_lock(g);
  ct_output o = mean ? ct_reduce_mean(g->graph, x, mask, keep) : ct_reduce_sum(g->graph, x, mask, keep);
  unlock(g);
  return built(g, o);
}

/* ---- gradients and optimizers --------------------------------------------------------------- */

/* gradients(y, xs, stops=()) -> [gradient output or None per x] */
static PyObject *g_gradients(ct_py_graph *g, PyObject *args) {
  PyObject *oy, *seq, *stop_seq = NULL;
  ct_output y;
  if (!PyArg_ParseTuple(args, "OO|O", &oy, &seq, &stop_seq) || ct_py_output(g, oy, &y))
    return NULL;
  Py_ssize_t n = PySequence_Size(seq), n_stops = stop_seq ? PySequence_Size(stop_seq) : 0;
  if (n < 0 || n_stops < 0) return NULL;
  ct_output *xs = PyMem_Calloc((size_t)n + 1, sizeof *xs), *dxs = PyMem_Calloc((size_t)n + 1, sizeof *dxs);
  ct_output *stops = PyMem_Calloc((size_t)n_stops + 1, sizeof *stops);
  if (xs == NULL || dxs == NULL || stops == NULL) {
    PyMem_Free(xs), PyMem_Free(dxs), PyMem_Free(stops);
    return PyErr_NoMemory();
  }
  PyObject *list = NULL;
  if (get_outputs(g, seq, xs, (int)n) >= 0 &&
      (stop_seq == NULL || get_outputs(g, stop_seq, stops, (int)n_stops) >= 0)) {
    write_lock(g);
    ct_gradients_stopping(g->graph, y, (int)n, xs, (int)n_stops, stops, dxs);
    unlock(g);
    if (!ct_py_graph_check(g)) {
      list = PyList_New(n);
      for (Py_ssize_t i = 0; list && i < n; ++i) PyList_SET_ITEM(list, i, output_tuple(dxs[i]));
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
  write_lock(g);
  ct_variable_gradients(g->graph, loss, vars, grads, &n);
  unlock(g);
  PyObject *list = NULL;
  if (!ct_py_graph_check(g)) {
    list = PyList_New(n);
    for (int i = 0; list && i < n; ++i)
      PyList_SET_ITEM(list, i, Py_BuildValue("(iN)", vars[i], output_tuple(grads[i])));
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
  if (get_outputs(g, grad_seq, grads, (int)n) < 0) goto done;
  ct_optimizer_config config;
  ct_optimizer_config_defaults(&config, (ct_optimizer_kind)kind);
  config.momentum = momentum, config.nesterov = nesterov;
  config.beta1 = beta1, config.beta2 = beta2, config.epsilon = epsilon;
  ct_train_op train = {0};
  write_lock(g);
  ct_optimizer_apply_gradients(g->graph, &config, (int)n, vars, grads, &train);
  unlock(g);
  if (ct_py_graph_check(g)) goto done;
  result = Py_BuildValue("(iN)", ct_node_id(train.op), output_tuple(train.learning_rate));
done:
  PyMem_Free(vars), PyMem_Free(grads);
  return result;
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

#define M(name, flags) {#name, (PyCFunction)(void (*)(void))g_##name, flags, NULL}
static PyMethodDef graph_methods[] = {
    M(set_seed, METH_O),           M(set_name_scope, METH_VARARGS), M(push_device, METH_VARARGS),
    M(pop_device, METH_NOARGS),    M(rename, METH_VARARGS),         M(node_count, METH_NOARGS),
    M(find, METH_VARARGS),         M(node, METH_VARARGS),           M(output_info, METH_VARARGS),
    M(add_control_input, METH_VARARGS), M(group, METH_VARARGS),     M(update_ops, METH_NOARGS),
    M(placeholder, METH_VARARGS),  M(constant, METH_VARARGS),       M(variable, METH_VARARGS),
    M(set_placeholder_shape, METH_VARARGS), M(variable_read, METH_VARARGS), M(set_weight_decay, METH_VARARGS), M(unary, METH_VARARGS),
    M(binary, METH_VARARGS),       M(matmul, METH_VARARGS),         M(conv2d, METH_VARARGS),
    M(pool, METH_VARARGS),         M(lrn, METH_VARARGS),            M(batch_norm, METH_VARARGS),
    M(dropout, METH_VARARGS),      M(reshape, METH_VARARGS),        M(concat, METH_VARARGS),
    M(add_n, METH_VARARGS),        M(split, METH_VARARGS),          M(reduce, METH_VARARGS),
    M(gradients, METH_VARARGS),    M(variable_gradients, METH_VARARGS),
    M(apply_gradients, METH_VARARGS), M(variables, METH_NOARGS),
    M(equal, METH_VARARGS),        M(softmax_xent, METH_VARARGS),   M(cast, METH_VARARGS),
    M(argmax, METH_VARARGS),       M(strided_slice, METH_VARARGS),
    {NULL, NULL, 0, NULL},
};
#undef M

PyTypeObject ct_py_graph_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ctower._ctower.Graph",
    .tp_basicsize = sizeof(ct_py_graph),
    .tp_new = graph_new,
    .tp_dealloc = (destructor)graph_dealloc,
    .tp_methods = graph_methods,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A ct_graph: nodes, scopes and variables (ctower/graph.h, ctower/ops.h).",
};
