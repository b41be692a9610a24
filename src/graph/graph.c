/* Graph construction: nodes, unique names, scopes, sticky errors. */
#include "graph/graph_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "graph/op_def.h"

ct_graph *ct_graph_new(void) {
  ct_graph *g = calloc(1, sizeof *g);
  if (g == NULL) return NULL;
  g->name_table_cap = 256;
  g->name_table = calloc(g->name_table_cap, sizeof *g->name_table);
  if (g->name_table == NULL) {
    free(g);
    return NULL;
  }
  return g;
}

static void free_node(ct_node *n) {
  free(n->name);
  free(n->inputs);
  free(n->control);
  free(n->shapes);
  free(n->dtypes);
  free(n->requested_device);
  ct_tensor_free(n->constant);
  free(n);
}

void ct_graph_free(ct_graph *g) {
  if (g == NULL) return;
  for (int i = 0; i < g->n_nodes; ++i) free_node(g->nodes[i]);
  for (int i = 0; i < g->n_name_scopes; ++i) free(g->name_scopes[i]);
  for (int i = 0; i < g->n_device_scopes; ++i) free(g->device_scopes[i]);
  for (int i = 0; i < g->n_variable_scopes; ++i) free(g->variable_scopes[i]);
  for (int i = 0; i < g->n_variable_device_scopes; ++i) free(g->variable_device_scopes[i]);
  for (int i = 0; i < g->n_variables; ++i) {
    free(g->variables[i].name);
    free(g->variables[i].device);
  }
  free(g->variables);
  free(g->update_ops);
  free(g->replica_prefix);
  free(g->nodes);
  free(g->name_table);
  free(g);
}

const ct_status *ct_graph_status(const ct_graph *g) { return &g->status; }

void ct_graph_set_error(ct_graph *g, ct_code code, const char *fmt, ...) {
  if (g->status.code != CT_OK) return;
  g->status.code = code;
  va_list args;
  va_start(args, fmt);
  vsnprintf(g->status.message, sizeof g->status.message, fmt, args);
  va_end(args);
}

void ct_graph_clear_error(ct_graph *g) { ct_status_clear(&g->status); }

void ct_graph_prefix_error(ct_graph *g, const char *fmt, ...) {
  if (g->status.code == CT_OK) return;
  char prefix[256];
  va_list args;
  va_start(args, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, args);
  va_end(args);
  char *message = g->status.message;
  const size_t cap = sizeof g->status.message, head = strlen(prefix);
  size_t tail = strlen(message);
  if (head + tail >= cap) tail = cap - 1 - head; /* cut the end of the old message */
  memmove(message + head, message, tail);
  memcpy(message, prefix, head);
  message[head + tail] = '\0';
}

void ct_graph_set_replica(ct_graph *g, const char *name_prefix, ct_output first_example) {
  free(g->replica_prefix);
  g->replica_prefix = NULL;
  g->replica_first_example = ct_out(NULL, 0);
  if (name_prefix == NULL) return;
  size_t len = strlen(name_prefix);
  g->replica_prefix = malloc(len + 2);
  if (g->replica_prefix == NULL) {
    ct_graph_set_error(g, CT_RESOURCE_EXHAUSTED, "out of memory building the graph");
    return;
  }
  snprintf(g->replica_prefix, len + 2, "%s/", name_prefix);
  g->replica_first_example = first_example;
}

void ct_graph_set_seed(ct_graph *g, uint64_t seed) { g->seed = seed; }
uint64_t ct_graph_seed(const ct_graph *g) { return g->seed; }

/* ---- scopes ------------------------------------------------------------ */

static char *join_scope(const char *prefix, const char *name) {
  size_t n = strlen(prefix) + strlen(name) + 2;
  char *s = malloc(n);
  if (s == NULL) return NULL;
  if (prefix[0])
    snprintf(s, n, "%s/%s", prefix, name);
  else
    snprintf(s, n, "%s", name);
  return s;
}

static int push_scope(ct_graph *g, char **stack, int *depth, const char *value, const char *what) {
  if (*depth >= 64) {
    ct_graph_set_error(g, CT_INVALID_ARGUMENT, "%s scopes nest deeper than 64", what);
    return 0;
  }
  if (value == NULL) {
    ct_graph_set_error(g, CT_INTERNAL, "out of memory pushing a %s scope", what);
    return 0;
  }
  stack[(*depth)++] = (char *)value;
  return 1;
}

static void pop_scope(ct_graph *g, char **stack, int *depth, const char *what) {
  if (*depth == 0) {
    ct_graph_set_error(g, CT_FAILED_PRECONDITION, "%s scope popped more often than pushed", what);
    return;
  }
  free(stack[--*depth]);
}

static const char *current_name_scope(const ct_graph *g) {
  return g->n_name_scopes ? g->name_scopes[g->n_name_scopes - 1] : "";
}

void ct_graph_push_name_scope(ct_graph *g, const char *scope) {
  char *full = join_scope(current_name_scope(g), scope);
  if (!push_scope(g, g->name_scopes, &g->n_name_scopes, full, "name")) free(full);
}
void ct_graph_pop_name_scope(ct_graph *g) {
  pop_scope(g, g->name_scopes, &g->n_name_scopes, "name");
}

void ct_graph_push_device(ct_graph *g, const char *device) {
  char *copy = strdup(device ? device : "");
  if (!push_scope(g, g->device_scopes, &g->n_device_scopes, copy, "device")) free(copy);
}
void ct_graph_pop_device(ct_graph *g) {
  pop_scope(g, g->device_scopes, &g->n_device_scopes, "device");
}

void ct_graph_push_variable_device(ct_graph *g, const char *device) {
  char *copy = strdup(device ? device : "");
  if (!push_scope(g, g->variable_device_scopes, &g->n_variable_device_scopes, copy,
                  "variable device"))
    free(copy);
}
void ct_graph_pop_variable_device(ct_graph *g) {
  pop_scope(g, g->variable_device_scopes, &g->n_variable_device_scopes, "variable device");
}

void ct_graph_push_variable_scope(ct_graph *g, const char *scope) {
  const char *prefix = g->n_variable_scopes ? g->variable_scopes[g->n_variable_scopes - 1] : "";
  char *full = join_scope(prefix, scope);
  if (!push_scope(g, g->variable_scopes, &g->n_variable_scopes, full, "variable")) free(full);
}
void ct_graph_pop_variable_scope(ct_graph *g) {
  pop_scope(g, g->variable_scopes, &g->n_variable_scopes, "variable");
}

void ct_graph_push_variable_reuse(ct_graph *g) { ++g->variable_reuse; }
void ct_graph_pop_variable_reuse(ct_graph *g) {
  if (g->variable_reuse == 0) {
    ct_graph_set_error(g, CT_FAILED_PRECONDITION,
                       "variable reuse scope popped more often than pushed");
    return;
  }
  --g->variable_reuse;
}

ct_graph_scope_mark ct_graph_scope_mark_now(const ct_graph *g) {
  return (ct_graph_scope_mark){g->n_name_scopes, g->n_device_scopes, g->n_variable_scopes,
                               g->n_variable_device_scopes, g->variable_reuse};
}

/* One stack against its depth at the mark: 0 when they agree; else 1, what
 * differs described once (the innermost scope left open), and the stack
 * popped back to the mark. */
static int stack_returns_to(char **stack, int *depth, int marked, const char *what, int found,
                            char *text, size_t size) {
  if (*depth == marked) return 0;
  if (!found && *depth > marked)
    snprintf(text, size, "the %s scope '%s' still open", what, stack[*depth - 1]);
  else if (!found)
    snprintf(text, size, "its caller's %s scope popped (more pops than pushes)", what);
  while (*depth > marked) free(stack[--*depth]);
  return 1;
}

int ct_graph_scopes_return_to(ct_graph *g, const ct_graph_scope_mark *mark, char *what,
                              size_t size) {
  int found = 0;
  found |= stack_returns_to(g->device_scopes, &g->n_device_scopes, mark->device, "device", found,
                            what, size);
  found |= stack_returns_to(g->variable_device_scopes, &g->n_variable_device_scopes,
                            mark->variable_device, "variable device", found, what, size);
  found |= stack_returns_to(g->name_scopes, &g->n_name_scopes, mark->name, "name", found, what,
                            size);
  found |= stack_returns_to(g->variable_scopes, &g->n_variable_scopes, mark->variable, "variable",
                            found, what, size);
  if (g->variable_reuse == mark->reuse) return found;
  if (!found)
    snprintf(what, size, g->variable_reuse > mark->reuse
                             ? "a variable reuse scope still open"
                             : "its caller's variable reuse scope popped (more pops than pushes)");
  if (g->variable_reuse > mark->reuse) g->variable_reuse = mark->reuse;
  return 1;
}

/* ---- names ------------------------------------------------------------- */

static size_t name_slot(const ct_graph *g, const char *name) {
  size_t mask = g->name_table_cap - 1;
  size_t i = (size_t)ct_hash_string(0, name) & mask;
  while (g->name_table[i] && strcmp(g->name_table[i]->name, name) != 0) i = (i + 1) & mask;
  return i;
}

ct_node *ct_graph_find(const ct_graph *g, const char *name) {
  return g->name_table[name_slot(g, name)];
}

static int grow_name_table(ct_graph *g) {
  size_t old_cap = g->name_table_cap;
  ct_node **old = g->name_table;
  g->name_table = calloc(old_cap * 2, sizeof *g->name_table);
  if (g->name_table == NULL) {
    g->name_table = old;
    return 0;
  }
  g->name_table_cap = old_cap * 2;
  for (size_t i = 0; i < old_cap; ++i)
    if (old[i]) g->name_table[name_slot(g, old[i]->name)] = old[i];
  free(old);
  return 1;
}

/* "<scope>/<base>", then "<scope>/<base>_1", "_2", ... until unused. */
static char *unique_name(const ct_graph *g, const char *base) {
  char *name = join_scope(current_name_scope(g), base);
  for (int k = 1; name && ct_graph_find(g, name); ++k) {
    size_t n = strlen(name) + 16;
    char *next = malloc(n);
    if (next) {
      char *stem = join_scope(current_name_scope(g), base);
      snprintf(next, n, "%s_%d", stem ? stem : "", k);
      free(stem);
    }
    free(name);
    name = next;
  }
  return name;
}

/* Takes `node` out of the name table: its slot emptied, and the entries
 * after it in its probe run moved back where a lookup finds them. */
static void name_table_remove(ct_graph *g, const ct_node *node) {
  const size_t mask = g->name_table_cap - 1;
  size_t hole = name_slot(g, node->name);
  if (g->name_table[hole] != node) return;
  g->name_table[hole] = NULL;
  for (size_t i = (hole + 1) & mask; g->name_table[i]; i = (i + 1) & mask) {
    size_t home = (size_t)ct_hash_string(0, g->name_table[i]->name) & mask;
    /* the entry may move into the hole when its home is not in (hole, i] */
    int stays = hole <= i ? (home > hole && home <= i) : (home > hole || home <= i);
    if (stays) continue;
    g->name_table[hole] = g->name_table[i];
    g->name_table[i] = NULL;
    hole = i;
  }
}

int ct_graph_rename_node(ct_graph *g, ct_node *node, const char *name) {
  if (node == NULL || node->id < 0 || node->id >= g->n_nodes || g->nodes[node->id] != node ||
      name == NULL || name[0] == '\0') {
    ct_graph_set_error(g, CT_INVALID_ARGUMENT,
                       "a node is renamed to a non-empty name, and only in its own graph");
    return 1;
  }
  char *unique = unique_name(g, name);
  if (unique == NULL) {
    ct_graph_set_error(g, CT_RESOURCE_EXHAUSTED, "out of memory building the graph");
    return 1;
  }
  name_table_remove(g, node);
  free(node->name);
  node->name = unique;
  g->name_table[name_slot(g, node->name)] = node;
  return 0;
}

/* ---- nodes ------------------------------------------------------------- */

ct_node *ct_graph_add_node(ct_graph *g, const ct_op_def *op, const char *base_name, int n_inputs,
                           const ct_output *inputs, int n_outputs, const ct_attrs *attrs) {
  if (g->status.code != CT_OK) return NULL;
  for (int i = 0; i < n_inputs; ++i) {
    if (inputs[i].node == NULL) {
      ct_graph_set_error(g, CT_INVALID_ARGUMENT,
                         "input %d of a new '%s' node under scope '%s' is null", i, op->name,
                         current_name_scope(g));
      return NULL;
    }
  }
  if ((size_t)(g->n_nodes + 1) * 2 > g->name_table_cap && !grow_name_table(g)) {
    ct_graph_set_error(g, CT_RESOURCE_EXHAUSTED, "out of memory building the graph");
    return NULL;
  }
  if (g->n_nodes == g->nodes_cap) {
    int cap = g->nodes_cap ? g->nodes_cap * 2 : 64;
    ct_node **nodes = realloc(g->nodes, (size_t)cap * sizeof *nodes);
    if (nodes == NULL) {
      ct_graph_set_error(g, CT_RESOURCE_EXHAUSTED, "out of memory building the graph");
      return NULL;
    }
    g->nodes = nodes;
    g->nodes_cap = cap;
  }
  ct_node *n = calloc(1, sizeof *n);
  if (n == NULL) {
    ct_graph_set_error(g, CT_RESOURCE_EXHAUSTED, "out of memory building the graph");
    return NULL;
  }
  n->op = op;
  n->variable = -1;
  n->name = unique_name(g, base_name ? base_name : op->name);
  const char *device = g->n_device_scopes ? g->device_scopes[g->n_device_scopes - 1] : "";
  n->requested_device = strdup(device);
  n->n_inputs = n_inputs;
  n->inputs = calloc((size_t)(n_inputs ? n_inputs : 1), sizeof *n->inputs);
  n->n_outputs = n_outputs;
  n->shapes = calloc((size_t)(n_outputs ? n_outputs : 1), sizeof *n->shapes);
  n->dtypes = calloc((size_t)(n_outputs ? n_outputs : 1), sizeof *n->dtypes);
  if (attrs) n->attrs = *attrs;
  n->all_reduce_bucket = -1;
  if (!n->name || !n->requested_device || !n->inputs || !n->shapes || !n->dtypes) {
    free_node(n);
    ct_graph_set_error(g, CT_RESOURCE_EXHAUSTED, "out of memory building the graph");
    return NULL;
  }
  /* a replica's random streams are its original's */
  size_t skip = g->replica_prefix ? strlen(g->replica_prefix) : 0;
  n->seed = ct_hash_string(
      g->seed, skip && strncmp(n->name, g->replica_prefix, skip) == 0 ? n->name + skip : n->name);
  if (n_inputs) memcpy(n->inputs, inputs, (size_t)n_inputs * sizeof *inputs);

  ct_shape in_shapes[64];
  ct_dtype in_dtypes[64];
  if (n_inputs > 64) {
    free_node(n);
    ct_graph_set_error(g, CT_INVALID_ARGUMENT, "a '%s' node takes at most 64 inputs, got %d",
                       op->name, n_inputs);
    return NULL;
  }
  for (int i = 0; i < n_inputs; ++i) {
    in_shapes[i] = inputs[i].node->shapes[inputs[i].index];
    in_dtypes[i] = inputs[i].node->dtypes[inputs[i].index];
  }
  ct_infer_ctx ctx = {n->name,   &n->attrs, n_inputs,  in_shapes, in_dtypes,
                      n_outputs, n->shapes, n->dtypes, &g->status};
  if (op->infer && op->infer(&ctx) != 0) {
    free_node(n);
    return NULL;
  }
  /* every byte count of the graph's values fits in a size_t from here on */
  for (int o = 0; o < n_outputs; ++o) {
    char what[320];
    snprintf(what, sizeof what, "output %d of '%s' (%s)", o, n->name, op->name);
    if (ct_shape_check_bytes(&n->shapes[o], n->dtypes[o], what, NULL, &g->status)) {
      free_node(n);
      return NULL;
    }
  }
  n->id = g->n_nodes;
  g->nodes[g->n_nodes++] = n;
  g->name_table[name_slot(g, n->name)] = n;
  return n;
}

int ct_graph_node_count(const ct_graph *g) { return g->n_nodes; }
ct_node *ct_graph_node(const ct_graph *g, int index) {
  return index >= 0 && index < g->n_nodes ? g->nodes[index] : NULL;
}
int ct_node_id(const ct_node *n) { return n->id; }
const char *ct_node_name(const ct_node *n) { return n->name; }
const char *ct_node_op(const ct_node *n) { return n->op->name; }
const char *ct_node_requested_device(const ct_node *n) { return n->requested_device; }
int ct_node_num_inputs(const ct_node *n) { return n->n_inputs; }
ct_output ct_node_input(const ct_node *n, int index) { return n->inputs[index]; }
int ct_node_num_outputs(const ct_node *n) { return n->n_outputs; }
int ct_node_num_control_inputs(const ct_node *n) { return n->n_control; }
ct_node *ct_node_control_input(const ct_node *n, int index) { return n->control[index]; }

ct_shape ct_output_shape(ct_output o) {
  if (o.node == NULL) return ct_shape_of(0);
  return o.node->shapes[o.index];
}
ct_dtype ct_output_dtype(ct_output o) { return o.node ? o.node->dtypes[o.index] : CT_F32; }

void ct_node_add_control_input(ct_node *node, ct_node *before) {
  if (node == NULL || before == NULL) return;
  ct_node **control = realloc(node->control, (size_t)(node->n_control + 1) * sizeof *control);
  if (control == NULL) return;
  node->control = control;
  node->control[node->n_control++] = before;
}

void ct_graph_add_update_op(ct_graph *g, ct_node *node) {
  if (node == NULL) return;
  if (g->n_update_ops == g->update_ops_cap) {
    int cap = g->update_ops_cap ? g->update_ops_cap * 2 : 16;
    ct_node **ops = realloc(g->update_ops, (size_t)cap * sizeof *ops);
    if (ops == NULL) {
      ct_graph_set_error(g, CT_RESOURCE_EXHAUSTED, "out of memory building the graph");
      return;
    }
    g->update_ops = ops;
    g->update_ops_cap = cap;
  }
  g->update_ops[g->n_update_ops++] = node;
}
int ct_graph_update_op_count(const ct_graph *g) { return g->n_update_ops; }
ct_node *ct_graph_update_op(const ct_graph *g, int index) { return g->update_ops[index]; }

int ct_graph_variable_count(const ct_graph *g) { return g->n_variables; }
const char *ct_graph_variable_name(const ct_graph *g, int index) {
  return g->variables[index].name;
}
ct_shape ct_graph_variable_shape(const ct_graph *g, int index) { return g->variables[index].shape; }
int ct_graph_variable_trainable(const ct_graph *g, int index) {
  return g->variables[index].trainable;
}
float ct_graph_variable_weight_decay(const ct_graph *g, int index) {
  return g->variables[index].weight_decay;
}
