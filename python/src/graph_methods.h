/* What the files of the Graph type's methods share (graph.c and the
 * builders: graph_sources.c, graph_ops.c, graph_gradients.c): the graph's
 * write lock, nodes and outputs from and to Python (graph_access.c), and
 * each file's table of methods, which graph.c joins into the type's. */
#ifndef CTOWER_PYTHON_GRAPH_METHODS_H
#define CTOWER_PYTHON_GRAPH_METHODS_H

#include "binding.h"

/* The graph's write lock, taken for building: without the GIL while a run
 * of a session on the graph holds the lock to read. */
void ct_py_write_lock(ct_py_graph *graph);
void ct_py_unlock(ct_py_graph *graph);

/* The node with that id, or NULL with ValueError set. */
ct_node *ct_py_node(ct_py_graph *graph, long id);
/* Up to max outputs from a sequence into outs. Returns their count, or -1
 * with a Python error set. */
int ct_py_outputs(ct_py_graph *graph, PyObject *seq, ct_output *outs, int max);
/* An output as Python sees it: (node id, output index), None for the null output. */
PyObject *ct_py_output_tuple(ct_output output);
/* The result of a builder: its output's tuple, or NULL with ValueError set
 * when the graph holds an error (cleared) or the op was not built. */
PyObject *ct_py_built(ct_py_graph *graph, ct_output output);
/* Raises ValueError with the graph's recorded error and clears it, as
 * TensorFlow raises when an op cannot be built. Returns -1 when the graph
 * holds an error, 0 when not. */
int ct_py_graph_check(ct_py_graph *graph);

/* A method of the Graph type: g_NAME, of the file that lists it. */
#define GRAPH_METHOD(name, flags) {#name, (PyCFunction)(void (*)(void))g_##name, flags, NULL}

/* Each builder file's methods, ended by a {NULL} entry. */
extern PyMethodDef ct_py_graph_source_methods[];
extern PyMethodDef ct_py_graph_op_methods[];
extern PyMethodDef ct_py_graph_gradient_methods[];

#endif
