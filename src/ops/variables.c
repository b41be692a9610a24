/* Variables as ops: get-or-create a variable of the graph's table by its
 * full name inside variable scopes, read by a "Variable" node. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph_internal.h"
#include "ops/op_registry.h"
#include "ops/variables.h"

static int find_variable(const ct_graph *g, const char *full_name) {
  for (int i = 0; i < g->n_variables; ++i)
    if (strcmp(g->variables[i].name, full_name) == 0) return i;
  return -1;
}

/* The node is named after the variable's last path component, under the
 * current name scope ("tower_0/conv1/weights"). */
ct_output ct_variable_read(ct_graph *g, int index) {
  if (g->status.code != CT_OK) return ct_out(NULL, 0);
  if (index < 0 || index >= g->n_variables) {
    ct_graph_set_error(g, CT_INVALID_ARGUMENT, "no variable with index %d", index);
    return ct_out(NULL, 0);
  }
  const ct_variable_info *var = &g->variables[index];
  const char *base = strrchr(var->name, '/');
  base = base ? base + 1 : var->name;
  ct_attrs attrs = {.source = {.shape = var->shape, .dtype = CT_F32}};
  ct_node *n = ct_graph_add_node(g, ct_op_find("Variable"), base, 0, NULL, 1, &attrs);
  if (n) n->variable = index;
  return ct_out(n, 0);
}

ct_output ct_variable_absolute(ct_graph *g, const char *full_name, ct_shape shape,
                                     ct_initializer init, int trainable) {
  if (g->status.code != CT_OK) return ct_out(NULL, 0);
  char what[320];
  snprintf(what, sizeof what, "variable '%s'", full_name);
  if (shape.rank >= 0 && shape.rank <= CT_MAX_RANK &&
      ct_shape_check_bytes(&shape, CT_F32, what, NULL, &g->status))
    return ct_out(NULL, 0);
  if (!ct_shape_is_known(&shape) || shape.rank > CT_MAX_RANK) {
    char buf[96];
    ct_graph_set_error(g, CT_INVALID_ARGUMENT, "variable '%s' needs a known shape, got %s",
                       full_name, ct_shape_str(&shape, buf, sizeof buf));
    return ct_out(NULL, 0);
  }
  int index = find_variable(g, full_name);
  if (index >= 0) {
    if (!ct_shape_equal(&g->variables[index].shape, &shape)) {
      char have[96], want[96];
      ct_graph_set_error(g, CT_INVALID_ARGUMENT,
                         "variable '%s' exists with shape %s but was requested with shape %s",
                         full_name, ct_shape_str(&g->variables[index].shape, have, sizeof have),
                         ct_shape_str(&shape, want, sizeof want));
      return ct_out(NULL, 0);
    }
    return ct_variable_read(g, index);
  }
  if (g->n_variables == g->variables_cap) {
    int cap = g->variables_cap ? g->variables_cap * 2 : 32;
    ct_variable_info *vars = realloc(g->variables, (size_t)cap * sizeof *vars);
    if (vars == NULL) {
      ct_graph_set_error(g, CT_RESOURCE_EXHAUSTED, "out of memory creating variable '%s'",
                         full_name);
      return ct_out(NULL, 0);
    }
    g->variables = vars;
    g->variables_cap = cap;
  }
  ct_variable_info *var = &g->variables[g->n_variables];
  var->name = strdup(full_name);
  if (var->name == NULL) {
    ct_graph_set_error(g, CT_RESOURCE_EXHAUSTED, "out of memory creating variable '%s'",
                       full_name);
    return ct_out(NULL, 0);
  }
  var->shape = shape;
  var->init = init;
  var->trainable = trainable;
  var->colocate_with = -1;
  var->replica_of = -1;
  var->weight_decay = 0.0f;
  var->has_seed = 0;
  var->seed = 0;
  var->seed2 = 0;
  var->init_mean = 0.0f;
  var->device = strdup(g->n_variable_device_scopes
                           ? g->variable_device_scopes[g->n_variable_device_scopes - 1]
                       : g->n_device_scopes ? g->device_scopes[g->n_device_scopes - 1]
                                            : "");
  if (var->device == NULL) {
    free(var->name);
    ct_graph_set_error(g, CT_RESOURCE_EXHAUSTED, "out of memory creating variable '%s'",
                       full_name);
    return ct_out(NULL, 0);
  }
  return ct_variable_read(g, g->n_variables++);
}

/* "<variable scopes>/<name>" into full. */
static void full_name(const ct_graph *g, const char *name, char *full, size_t size) {
  const char *prefix = g->n_variable_scopes ? g->variable_scopes[g->n_variable_scopes - 1] : "";
  snprintf(full, size, "%s%s%s", prefix, prefix[0] ? "/" : "", name);
}

ct_output ct_variable(ct_graph *g, const char *name, ct_shape shape, ct_initializer init,
                      int trainable) {
  char full[1024];
  full_name(g, name, full, sizeof full);
  return ct_variable_absolute(g, full, shape, init, trainable);
}

ct_output ct_variable_create(ct_graph *g, const char *name, ct_shape shape, ct_initializer init,
                             int trainable) {
  if (g->status.code != CT_OK) return ct_out(NULL, 0);
  char full[1024];
  full_name(g, name, full, sizeof full);
  if (g->variable_reuse == 0 && find_variable(g, full) >= 0) {
    ct_graph_set_error(g, CT_INVALID_ARGUMENT,
                       "variable '%s' exists already, so the layer of name scope '%s' would "
                       "share it by accident; give each layer its own name, or build the "
                       "second inside ct_graph_push_variable_reuse to share it on purpose",
                       full, g->n_name_scopes ? g->name_scopes[g->n_name_scopes - 1] : "");
    return ct_out(NULL, 0);
  }
  return ct_variable_absolute(g, full, shape, init, trainable);
}

void ct_variable_set_weight_decay(ct_graph *g, ct_output variable, float decay) {
  if (g->status.code != CT_OK) return;
  if (variable.node == NULL || variable.node->variable < 0 || !(decay >= 0.0f)) {
    ct_graph_set_error(g, CT_INVALID_ARGUMENT,
                       "a weight decay needs a variable read and a factor >= 0 (got %g)",
                       (double)decay);
    return;
  }
  g->variables[variable.node->variable].weight_decay = decay;
}

void ct_variable_set_initializer_seed(ct_graph *g, ct_output variable, uint64_t seed) {
  if (g->status.code != CT_OK) return;
  if (variable.node == NULL || variable.node->variable < 0) {
    ct_graph_set_error(g, CT_INVALID_ARGUMENT, "an initializer seed needs a variable read");
    return;
  }
  g->variables[variable.node->variable].has_seed = 1;
  g->variables[variable.node->variable].seed = seed;
}

static int tf_kind(ct_init_kind kind) {
  return kind == CT_INIT_TF_UNIFORM || kind == CT_INIT_TF_NORMAL ||
         kind == CT_INIT_TF_TRUNCATED_NORMAL;
}

void ct_variable_set_initializer_seeds(ct_graph *g, ct_output variable, uint64_t seed,
                                       uint64_t seed2) {
  if (g->status.code != CT_OK) return;
  if (variable.node == NULL || variable.node->variable < 0) {
    ct_graph_set_error(g, CT_INVALID_ARGUMENT, "initializer seeds need a variable read");
    return;
  }
  ct_variable_info *var = &g->variables[variable.node->variable];
  if (!tf_kind(var->init.kind)) {
    ct_graph_set_error(g, CT_INVALID_ARGUMENT,
                       "variable '%s': only a TensorFlow-stream initializer takes (seed, seed2)",
                       var->name);
    return;
  }
  var->seed = seed;
  var->seed2 = seed2;
}

void ct_variable_set_initializer_mean(ct_graph *g, ct_output variable, float mean) {
  if (g->status.code != CT_OK) return;
  if (variable.node == NULL || variable.node->variable < 0) {
    ct_graph_set_error(g, CT_INVALID_ARGUMENT, "an initializer mean needs a variable read");
    return;
  }
  ct_variable_info *var = &g->variables[variable.node->variable];
  const ct_init_kind kind = var->init.kind;
  if (kind != CT_INIT_UNIFORM && kind != CT_INIT_NORMAL && kind != CT_INIT_RANDOM_NORMAL &&
      !tf_kind(kind)) {
    ct_graph_set_error(g, CT_INVALID_ARGUMENT,
                       "variable '%s': only a uniform or normal initializer takes a mean",
                       var->name);
    return;
  }
  var->init_mean = mean;
}
