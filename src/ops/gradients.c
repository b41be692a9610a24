/* Reverse-mode automatic differentiation over the graph (ct_gradients).
 *
 * Pass 1 marks nodes that depend on some x; pass 2 marks nodes y depends on;
 * nodes in both are on the path. Pass 3 walks the path in reverse creation
 * order (a reverse topological order), sums the gradients arriving at each
 * output (none for an output held constant, ct_gradients_stopping) and asks
 * the op's gradient function for its inputs' gradients.
 * ct_variable_gradients asks it for the gradients of every trainable
 * variable's reads and sums them per variable, beside the variable. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph_internal.h"
#include "ops/op_registry.h"

/* Gradients arriving at one output, summed when the node is processed. */
typedef struct grad_list {
  ct_output *items;
  int n, cap;
} grad_list;

static int grad_list_push(grad_list *list, ct_output value) {
  if (list->n == list->cap) {
    int cap = list->cap ? list->cap * 2 : 4;
    ct_output *items = realloc(list->items, (size_t)cap * sizeof *items);
    if (items == NULL) return 0;
    list->items = items;
    list->cap = cap;
  }
  list->items[list->n++] = value;
  return 1;
}

enum { ADD_N_MAX = 64 }; /* the inputs of one AddN (ct_add_n) */

/* The sum of parts[0..n) in order: one AddN, or a chain of them past
 * ADD_N_MAX (each taking the sum so far and the next parts). */
static ct_output sum_in_order(ct_graph *g, int n, const ct_output *parts) {
  if (n == 0) return ct_out(NULL, 0);
  if (n == 1) return parts[0];
  int done = n < ADD_N_MAX ? n : ADD_N_MAX;
  ct_output sum = ct_add_n(g, done, parts);
  while (done < n && sum.node) {
    ct_output chunk[ADD_N_MAX];
    int k = 0;
    chunk[k++] = sum;
    while (k < ADD_N_MAX && done < n) chunk[k++] = parts[done++];
    sum = ct_add_n(g, k, chunk);
  }
  return sum;
}

static ct_output grad_list_sum(ct_graph *g, const grad_list *list) {
  return sum_in_order(g, list->n, list->items);
}

static int is_stopped(const ct_node *n, int output, int n_stops, const ct_output *stops) {
  for (int k = 0; k < n_stops; ++k)
    if (stops[k].node == n && stops[k].index == output) return 1;
  return 0;
}

int ct_gradients(ct_graph *g, ct_output y, int n_xs, const ct_output *xs, ct_output *dxs) {
  return ct_gradients_stopping(g, y, n_xs, xs, 0, NULL, dxs);
}

int ct_gradients_stopping(ct_graph *g, ct_output y, int n_xs, const ct_output *xs, int n_stops,
                          const ct_output *stops, ct_output *dxs) {
  for (int i = 0; i < n_xs; ++i) dxs[i] = ct_out(NULL, 0);
  if (g->status.code != CT_OK) return 1;
  if (y.node == NULL) {
    ct_graph_set_error(g, CT_INVALID_ARGUMENT, "ct_gradients: y is null");
    return 1;
  }
  if (ct_output_dtype(y) != CT_F32) {
    ct_graph_set_error(g, CT_INVALID_ARGUMENT, "ct_gradients: y ('%s') must be f32, not %s",
                       y.node->name, ct_dtype_name(ct_output_dtype(y)));
    return 1;
  }
  const int n_nodes = g->n_nodes; /* nodes added below are not walked */
  unsigned char *from_x = calloc((size_t)n_nodes, 1);
  unsigned char *to_y = calloc((size_t)n_nodes, 1);
  int *list_base = calloc((size_t)n_nodes + 1, sizeof *list_base);
  if (!from_x || !to_y || !list_base) {
    free(from_x);
    free(to_y);
    free(list_base);
    ct_graph_set_error(g, CT_RESOURCE_EXHAUSTED, "out of memory computing gradients");
    return 1;
  }
  for (int i = 0; i < n_xs; ++i)
    if (xs[i].node) from_x[xs[i].node->id] = 1;
  for (int id = 0; id < n_nodes; ++id) {
    const ct_node *n = g->nodes[id];
    for (int j = 0; j < n->n_inputs && !from_x[id]; ++j) from_x[id] = from_x[n->inputs[j].node->id];
  }
  to_y[y.node->id] = 1;
  for (int id = y.node->id; id >= 0; --id) {
    if (!to_y[id]) continue;
    const ct_node *n = g->nodes[id];
    for (int j = 0; j < n->n_inputs; ++j) to_y[n->inputs[j].node->id] = 1;
  }
  /* One grad_list per (node, output): lists of node id start at list_base[id]. */
  for (int id = 0; id < n_nodes; ++id) list_base[id + 1] = list_base[id] + g->nodes[id]->n_outputs;
  grad_list *lists = calloc((size_t)list_base[n_nodes] + 1, sizeof *lists);
  if (lists == NULL) {
    free(from_x);
    free(to_y);
    free(list_base);
    ct_graph_set_error(g, CT_RESOURCE_EXHAUSTED, "out of memory computing gradients");
    return 1;
  }

  ct_graph_push_name_scope(g, "gradients");
  grad_list_push(&lists[list_base[y.node->id] + y.index], ct_ones_like(g, y));
  ct_graph_pop_name_scope(g);

  for (int id = y.node->id; id >= 0 && g->status.code == CT_OK; --id) {
    const ct_node *n = g->nodes[id];
    if (!from_x[id] || !to_y[id] || n->n_inputs == 0) continue;
    ct_output grad_outputs[64];
    int any = 0;
    char scope[1024];
    snprintf(scope, sizeof scope, "gradients/%s_grad", n->name);
    ct_graph_push_name_scope(g, scope);
    ct_graph_push_device(g, n->requested_device);
    for (int o = 0; o < n->n_outputs && o < 64; ++o) {
      grad_outputs[o] = is_stopped(n, o, n_stops, stops)
                            ? ct_out(NULL, 0)
                            : grad_list_sum(g, &lists[list_base[id] + o]);
      any |= grad_outputs[o].node != NULL;
    }
    int wants_input_grads = 0;
    for (int j = 0; j < n->n_inputs; ++j) wants_input_grads |= from_x[n->inputs[j].node->id];
    ct_output grad_inputs[64];
    for (int j = 0; j < n->n_inputs; ++j) grad_inputs[j] = ct_out(NULL, 0);
    if (any && wants_input_grads && !(n->op->flags & CT_OP_NO_GRADIENT)) {
      if (n->op->grad == NULL)
        ct_graph_set_error(g, CT_UNIMPLEMENTED,
                           "cannot differentiate through '%s' (op %s): it has no gradient",
                           n->name, n->op->name);
      else
        n->op->grad(g, n, grad_outputs, grad_inputs);
    }
    ct_graph_pop_device(g);
    ct_graph_pop_name_scope(g);
    for (int j = 0; j < n->n_inputs; ++j) {
      const ct_output in = n->inputs[j];
      if (grad_inputs[j].node == NULL || !from_x[in.node->id]) continue;
      if (!grad_list_push(&lists[list_base[in.node->id] + in.index], grad_inputs[j]))
        ct_graph_set_error(g, CT_RESOURCE_EXHAUSTED, "out of memory computing gradients");
    }
  }

  ct_graph_push_name_scope(g, "gradients");
  for (int i = 0; i < n_xs && g->status.code == CT_OK; ++i)
    if (xs[i].node) dxs[i] = grad_list_sum(g, &lists[list_base[xs[i].node->id] + xs[i].index]);
  ct_graph_pop_name_scope(g);

  for (int i = 0; i < list_base[n_nodes]; ++i) free(lists[i].items);
  free(lists);
  free(list_base);
  free(from_x);
  free(to_y);
  if (g->status.code != CT_OK) {
    for (int i = 0; i < n_xs; ++i) dxs[i] = ct_out(NULL, 0);
    return 1;
  }
  return 0;
}

/* Adds the gradients of every read of variable v that reaches the loss. */
static ct_output variable_gradient(ct_graph *g, int v, int n_reads, ct_node **reads,
                                   const ct_output *grads, ct_output *parts) {
  int n = 0;
  for (int k = 0; k < n_reads; ++k)
    if (reads[k]->variable == v && grads[k].node) parts[n++] = grads[k];
  return sum_in_order(g, n, parts);
}

int ct_variable_gradients(ct_graph *g, ct_output loss, int *variables, ct_output *grads,
                          int *n_out) {
  *n_out = 0;
  if (g->status.code != CT_OK) return 1;
  ct_shape loss_shape = ct_output_shape(loss);
  if (loss.node == NULL || loss_shape.rank != 0) {
    ct_graph_set_error(g, CT_INVALID_ARGUMENT, "the loss to minimize must be an f32 scalar");
    return 1;
  }
  /* Every read of a trainable variable is an x; a variable's gradient sums
   * those of its reads (one per tower that uses it), beside the variable. */
  int n_reads = 0;
  ct_node **reads = malloc((size_t)(g->n_nodes + 1) * sizeof *reads);
  ct_output *xs = malloc((size_t)(g->n_nodes + 1) * sizeof *xs);
  ct_output *read_grads = malloc((size_t)(g->n_nodes + 1) * sizeof *read_grads);
  if (!reads || !xs || !read_grads) {
    free(reads), free(xs), free(read_grads);
    ct_graph_set_error(g, CT_RESOURCE_EXHAUSTED, "out of memory computing gradients");
    return 1;
  }
  for (int id = 0; id < g->n_nodes; ++id) {
    ct_node *n = g->nodes[id];
    if (n->variable >= 0 && g->variables[n->variable].trainable) {
      reads[n_reads] = n;
      xs[n_reads++] = ct_out(n, 0);
    }
  }
  const int n_variables = g->n_variables;
  if (ct_gradients(g, loss, n_reads, xs, read_grads) == 0) {
    for (int v = 0; v < n_variables; ++v) {
      if (!g->variables[v].trainable) continue;
      ct_graph_push_device(g, g->variables[v].device);
      /* xs, which ct_gradients no longer needs, holds the parts to sum */
      ct_output grad = variable_gradient(g, v, n_reads, reads, read_grads, xs);
      ct_graph_pop_device(g);
      if (grad.node == NULL) continue; /* does not affect the loss */
      variables[*n_out] = v;
      grads[(*n_out)++] = grad;
    }
    if (*n_out == 0 && g->status.code == CT_OK)
      ct_graph_set_error(g, CT_INVALID_ARGUMENT,
                         "the loss depends on no trainable variable: nothing to minimize");
  }
  free(reads), free(xs), free(read_grads);
  return g->status.code != CT_OK;
}
