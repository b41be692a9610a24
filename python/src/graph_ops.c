/* The Graph's op builders: math, neural network and shape ops. The op codes
 * of unary and binary are python/ctower/compat/v1/_ops.py's. */
#include "graph_methods.h"

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
  if (kind < 0 || kind > UNARY_STOP_GRADIENT)
    return PyErr_Format(PyExc_ValueError, "no unary op %d", kind);
  ct_py_write_lock(g);
  ct_output o = table[kind](g->graph, x);
  ct_py_unlock(g);
  return ct_py_built(g, o);
}

/* unary_math(op, x): the elementwise unary math op TensorFlow names `op`
 * ("Exp"; ctower._ctower.unary_math_ops() lists them). */
static PyObject *g_unary_math(ct_py_graph *g, PyObject *args) {
  const char *op;
  PyObject *obj;
  ct_output x;
  if (!PyArg_ParseTuple(args, "sO", &op, &obj) || ct_py_output(g, obj, &x)) return NULL;
  ct_py_write_lock(g);
  ct_output o = ct_unary_math(g->graph, op, x);
  ct_py_unlock(g);
  return ct_py_built(g, o);
}

/* binary_math(op, a, b): the elementwise binary math op TensorFlow names
 * `op` ("Maximum"; ctower._ctower.binary_math_ops() lists them), or
 * compare(op, a, b) the comparison ("Greater"; compare_ops()). */
static PyObject *named_pair_op(ct_py_graph *g, PyObject *args,
                               ct_output (*build)(ct_graph *, const char *, ct_output,
                                                  ct_output)) {
  const char *op;
  PyObject *obj_a, *obj_b;
  ct_output a, b;
  if (!PyArg_ParseTuple(args, "sOO", &op, &obj_a, &obj_b) || ct_py_output(g, obj_a, &a) ||
      ct_py_output(g, obj_b, &b))
    return NULL;
  ct_py_write_lock(g);
  ct_output o = build(g->graph, op, a, b);
  ct_py_unlock(g);
  return ct_py_built(g, o);
}
static PyObject *g_binary_math(ct_py_graph *g, PyObject *args) {
  return named_pair_op(g, args, ct_binary_math);
}
static PyObject *g_compare(ct_py_graph *g, PyObject *args) {
  return named_pair_op(g, args, ct_compare);
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
  ct_py_write_lock(g);
  ct_output o = table[kind](g->graph, a, b);
  ct_py_unlock(g);
  return ct_py_built(g, o);
}

/* equal(a, b), softmax_xent(logits, labels), cast(x, dtype) */
static PyObject *pair_op(ct_py_graph *g, PyObject *args,
                         ct_output (*build)(ct_graph *, ct_output, ct_output)) {
  PyObject *oa, *ob;
  ct_output a, b;
  if (!PyArg_ParseTuple(args, "OO", &oa, &ob) || ct_py_output(g, oa, &a) || ct_py_output(g, ob, &b))
    return NULL;
  ct_py_write_lock(g);
  ct_output o = build(g->graph, a, b);
  ct_py_unlock(g);
  return ct_py_built(g, o);
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
  if (dtype < 0 || dtype >= CT_DTYPE_COUNT)
    return PyErr_Format(PyExc_ValueError, "no dtype %d", dtype);
  ct_py_write_lock(g);
  ct_output o = ct_cast(g->graph, x, (ct_dtype)dtype);
  ct_py_unlock(g);
  return ct_py_built(g, o);
}

static PyObject *g_matmul(ct_py_graph *g, PyObject *args) {
  PyObject *oa, *ob;
  int ta, tb;
  ct_output a, b;
  if (!PyArg_ParseTuple(args, "OOpp", &oa, &ob, &ta, &tb) || ct_py_output(g, oa, &a) ||
      ct_py_output(g, ob, &b))
    return NULL;
  ct_py_write_lock(g);
  ct_output o = ct_matmul(g->graph, a, b, ta, tb);
  ct_py_unlock(g);
  return ct_py_built(g, o);
}

static PyObject *g_conv2d(ct_py_graph *g, PyObject *args) {
  PyObject *ox, *of;
  int sh, sw, dh, dw, same;
  ct_output x, f;
  if (!PyArg_ParseTuple(args, "OOiiiip", &ox, &of, &sh, &sw, &dh, &dw, &same) ||
      ct_py_output(g, ox, &x) || ct_py_output(g, of, &f))
    return NULL;
  ct_py_write_lock(g);
  ct_output o = ct_conv2d_dilated(g->graph, x, f, sh, sw, dh, dw,
                                  same ? CT_PADDING_SAME : CT_PADDING_VALID);
  ct_py_unlock(g);
  return ct_py_built(g, o);
}

static PyObject *g_pool(ct_py_graph *g, PyObject *args) {
  PyObject *ox;
  int max, kh, kw, sh, sw, same;
  ct_output x;
  if (!PyArg_ParseTuple(args, "pOiiiip", &max, &ox, &kh, &kw, &sh, &sw, &same) ||
      ct_py_output(g, ox, &x))
    return NULL;
  ct_py_write_lock(g);
  ct_padding padding = same ? CT_PADDING_SAME : CT_PADDING_VALID;
  ct_output o = max ? ct_max_pool_hw(g->graph, x, kh, kw, sh, sw, padding)
                    : ct_avg_pool_hw(g->graph, x, kh, kw, sh, sw, padding);
  ct_py_unlock(g);
  return ct_py_built(g, o);
}

static PyObject *g_lrn(ct_py_graph *g, PyObject *args) {
  PyObject *ox;
  int radius;
  float bias, alpha, beta;
  ct_output x;
  if (!PyArg_ParseTuple(args, "Oifff", &ox, &radius, &bias, &alpha, &beta) ||
      ct_py_output(g, ox, &x))
    return NULL;
  ct_py_write_lock(g);
  ct_output o = ct_lrn(g->graph, x, radius, bias, alpha, beta);
  ct_py_unlock(g);
  return ct_py_built(g, o);
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
  ct_py_write_lock(g);
  ct_output y = ct_batch_norm(g->graph, in[0], in[1], in[2], in[3], in[4], training, momentum,
                              epsilon);
  ct_py_unlock(g);
  return ct_py_built(g, y);
}

static PyObject *g_dropout(ct_py_graph *g, PyObject *args) {
  PyObject *ox;
  float rate;
  ct_output x;
  if (!PyArg_ParseTuple(args, "Of", &ox, &rate) || ct_py_output(g, ox, &x)) return NULL;
  ct_py_write_lock(g);
  ct_output o = ct_dropout(g->graph, x, rate);
  ct_py_unlock(g);
  return ct_py_built(g, o);
}

static PyObject *g_reshape(ct_py_graph *g, PyObject *args) {
  PyObject *ox, *shape_seq;
  ct_output x;
  ct_shape shape;
  if (!PyArg_ParseTuple(args, "OO", &ox, &shape_seq) || ct_py_output(g, ox, &x) ||
      ct_py_shape(shape_seq, &shape))
    return NULL;
  ct_py_write_lock(g);
  ct_output o = ct_reshape(g->graph, x, shape);
  ct_py_unlock(g);
  return ct_py_built(g, o);
}

/* concat(outputs, axis) and add_n(outputs) */
static PyObject *g_concat(ct_py_graph *g, PyObject *args) {
  PyObject *seq;
  int axis;
  ct_output xs[64];
  if (!PyArg_ParseTuple(args, "Oi", &seq, &axis)) return NULL;
  int n = ct_py_outputs(g, seq, xs, 63);
  if (n < 0) return NULL;
  ct_py_write_lock(g);
  ct_output o = ct_concat(g->graph, n, xs, axis);
  ct_py_unlock(g);
  return ct_py_built(g, o);
}

static PyObject *g_add_n(ct_py_graph *g, PyObject *args) {
  PyObject *seq;
  ct_output xs[64];
  if (!PyArg_ParseTuple(args, "O", &seq)) return NULL;
  int n = ct_py_outputs(g, seq, xs, 64);
  if (n < 0) return NULL;
  ct_py_write_lock(g);
  ct_output o = ct_add_n(g->graph, n, xs);
  ct_py_unlock(g);
  return ct_py_built(g, o);
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
    if (n < 1 || n > 64)
      return PyErr_Format(PyExc_ValueError, "split makes 1 to 64 parts, not %d", n);
  }
  ct_py_write_lock(g);
  if (sized)
    ct_split_sizes(g->graph, x, axis, n, sizes, outs);
  else
    ct_split(g->graph, x, axis, n, outs);
  ct_py_unlock(g);
  if (ct_py_graph_check(g)) return NULL;
  PyObject *list = PyList_New(n);
  for (int k = 0; list && k < n; ++k) PyList_SET_ITEM(list, k, ct_py_output_tuple(outs[k]));
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
  ct_py_write_lock(g);
  ct_output o = ct_strided_slice(g->graph, x, begin.dims, end.dims, strides.dims, begin_mask,
                                 end_mask);
  ct_py_unlock(g);
  return ct_py_built(g, o);
}

/* transpose(x, perm): perm a list of x's rank */
static PyObject *g_transpose(ct_py_graph *g, PyObject *args) {
  PyObject *ox, *op;
  ct_output x;
  ct_shape perm;
  if (!PyArg_ParseTuple(args, "OO", &ox, &op) || ct_py_output(g, ox, &x) || ct_py_shape(op, &perm))
    return NULL;
  const int rank = ct_output_shape(x).rank;
  if (perm.rank != rank)
    return PyErr_Format(PyExc_ValueError, "perm of a tensor of rank %d has %d entries, not %d",
                        rank, perm.rank, rank);
  int axes[CT_MAX_RANK];
  for (int d = 0; d < rank; ++d) axes[d] = (int)perm.dims[d];
  ct_py_write_lock(g);
  ct_output o = ct_transpose(g->graph, x, axes);
  ct_py_unlock(g);
  return ct_py_built(g, o);
}

/* argmax(x, axis) */
static PyObject *g_argmax(ct_py_graph *g, PyObject *args) {
  PyObject *ox;
  int axis;
  ct_output x;
  if (!PyArg_ParseTuple(args, "Oi", &ox, &axis) || ct_py_output(g, ox, &x)) return NULL;
  ct_py_write_lock(g);
  ct_output o = ct_argmax_axis(g->graph, x, axis);
  ct_py_unlock(g);
  return ct_py_built(g, o);
}

/* reduce(kind, x, axes_mask, keep_dims): kind 0 sum, 1 mean, 2 max, 3 min. */
static PyObject *g_reduce(ct_py_graph *g, PyObject *args) {
  static ct_output (*const reductions[])(ct_graph *, ct_output, unsigned, int) = {
      ct_reduce_sum, ct_reduce_mean, ct_reduce_max, ct_reduce_min};
  PyObject *ox;
  int kind, keep;
  unsigned mask;
  ct_output x;
  if (!PyArg_ParseTuple(args, "iOIp", &kind, &ox, &mask, &keep) || ct_py_output(g, ox, &x))
    return NULL;
  if (kind < 0 || kind > 3) return PyErr_Format(PyExc_ValueError, "no reduction %d", kind);
  ct_py_write_lock(g);
  ct_output o = reductions[kind](g->graph, x, mask, keep);
  ct_py_unlock(g);
  return ct_py_built(g, o);
}

PyMethodDef ct_py_graph_op_methods[] = {
    GRAPH_METHOD(unary, METH_VARARGS),
    GRAPH_METHOD(unary_math, METH_VARARGS),
    GRAPH_METHOD(binary_math, METH_VARARGS),
    GRAPH_METHOD(compare, METH_VARARGS),
    GRAPH_METHOD(binary, METH_VARARGS),
    GRAPH_METHOD(equal, METH_VARARGS),
    GRAPH_METHOD(softmax_xent, METH_VARARGS),
    GRAPH_METHOD(cast, METH_VARARGS),
    GRAPH_METHOD(matmul, METH_VARARGS),
    GRAPH_METHOD(conv2d, METH_VARARGS),
    GRAPH_METHOD(pool, METH_VARARGS),
    GRAPH_METHOD(lrn, METH_VARARGS),
    GRAPH_METHOD(batch_norm, METH_VARARGS),
    GRAPH_METHOD(dropout, METH_VARARGS),
    GRAPH_METHOD(reshape, METH_VARARGS),
    GRAPH_METHOD(concat, METH_VARARGS),
    GRAPH_METHOD(add_n, METH_VARARGS),
    GRAPH_METHOD(split, METH_VARARGS),
    GRAPH_METHOD(strided_slice, METH_VARARGS),
    GRAPH_METHOD(transpose, METH_VARARGS),
    GRAPH_METHOD(argmax, METH_VARARGS),
    GRAPH_METHOD(reduce, METH_VARARGS),
    {NULL, NULL, 0, NULL},
};
