/* Builds gradients and update ops for every trainable variable. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctower/optimizer.h"
#include "ops/op_list.h"
#include "ops/variables.h"

void ct_optimizer_config_defaults(ct_optimizer_config *c, ct_optimizer_kind kind) {
  memset(c, 0, sizeof *c);
  c->kind = kind;
  c->momentum = 0.9f;
  c->beta1 = 0.9f;
  c->beta2 = 0.999f;
  c->epsilon = 1e-8f;
}

const char *ct_optimizer_name(ct_optimizer_kind kind) {
  switch (kind) {
    case CT_OPTIMIZER_SGD: return "sgd";
    case CT_OPTIMIZER_MOMENTUM: return "momentum";
    case CT_OPTIMIZER_ADAM: return "adam";
  }
  return "?";
}

float ct_optimizer_learning_rate(const ct_optimizer_config *c, double rate, int64_t step) {
  if (c->kind != CT_OPTIMIZER_ADAM) return (float)rate;
  if (step < 1) step = 1;
  double t = (double)step;
  return (float)(rate * sqrt(1.0 - pow(c->beta2, t)) / (1.0 - pow(c->beta1, t)));
}

static ct_output slot(ct_graph *g, int v, const char *suffix) {
  char name[1024];
  snprintf(name, sizeof name, "%s/%s", g->variables[v].name, suffix);
  ct_initializer zeros = {CT_INIT_ZEROS, 0.0f};
  ct_output read = ct_variable_absolute(g, name, g->variables[v].shape, zeros, 0);
  if (read.node == NULL) return read;
  ct_variable_info *slot_var = &g->variables[read.node->variable];
  slot_var->colocate_with = v; /* slots live beside v */
  int original = g->variables[v].replica_of;
  if (original >= 0) { /* a replica's slot is a replica of the original's slot */
    snprintf(name, sizeof name, "%s/%s", g->variables[original].name, suffix);
    for (int i = 0; i < g->n_variables; ++i)
      if (strcmp(g->variables[i].name, name) == 0) slot_var->replica_of = i;
  }
  return read;
}

static ct_node *apply_update(ct_graph *g, const ct_optimizer_config *c, int v, ct_output lr,
                             ct_output grad) {
  ct_output var = ct_variable_read(g, v);
  /* the configured decay for every variable, plus the model's own for v */
  const float weight_decay = c->weight_decay + g->variables[v].weight_decay;
  switch (c->kind) {
    case CT_OPTIMIZER_SGD: {
      ct_attrs a = {.gradient_descent = {.weight_decay = weight_decay}};
      ct_output in[3] = {var, lr, grad};
      return ct_graph_add_node(g, &ct_op_apply_gradient_descent, NULL, 3, in, 1, &a);
    }
    case CT_OPTIMIZER_MOMENTUM: {
      ct_attrs a = {.momentum = {.momentum = c->momentum,
                                 .weight_decay = weight_decay,
                                 .nesterov = c->nesterov}};
      ct_output in[4] = {var, slot(g, v, "Momentum"), lr, grad};
      return ct_graph_add_node(g, &ct_op_apply_momentum, NULL, 4, in, 1, &a);
    }
    case CT_OPTIMIZER_ADAM: {
      ct_attrs a = {.adam = {.beta1 = c->beta1,
                             .beta2 = c->beta2,
                             .epsilon = c->epsilon,
                             .weight_decay = weight_decay}};
      ct_output in[5] = {var, slot(g, v, "Adam"), slot(g, v, "Adam_1"), lr, grad};
      return ct_graph_add_node(g, &ct_op_apply_adam, NULL, 5, in, 1, &a);
    }
  }
  return NULL;
}

int ct_optimizer_apply_gradients(ct_graph *g, const ct_optimizer_config *c, int n,
                                 const int *variables, const ct_output *grads,
                                 ct_train_op *train_op) {
  memset(train_op, 0, sizeof *train_op);
  if (g->status.code != CT_OK) return 1;
  ct_node **updates = malloc((size_t)(n + 1) * sizeof *updates);
  if (updates == NULL) {
    ct_graph_set_error(g, CT_RESOURCE_EXHAUSTED, "out of memory building the optimizer");
    return 1;
  }
  int n_updates = 0;
  ct_graph_push_name_scope(g, "train");
  train_op->learning_rate = ct_placeholder(g, "learning_rate", CT_F32, ct_shape_of(0));
  for (int i = 0; i < n; ++i) {
    int v = variables[i];
    ct_graph_push_device(g, g->variables[v].device); /* the update lives beside v */
    ct_node *update = apply_update(g, c, v, train_op->learning_rate, grads[i]);
    ct_graph_pop_device(g);
    if (update) updates[n_updates++] = update;
  }
  train_op->op = ct_group(g, "update", n_updates, updates);
  ct_graph_pop_name_scope(g);
  free(updates);
  return g->status.code != CT_OK;
}

int ct_optimizer_minimize(ct_graph *g, const ct_optimizer_config *c, ct_output loss,
                          ct_train_op *train_op) {
  memset(train_op, 0, sizeof *train_op);
  int *variables = malloc((size_t)(g->n_variables + 1) * sizeof *variables);
  ct_output *grads = malloc((size_t)(g->n_variables + 1) * sizeof *grads);
  int n = 0, failed = 1;
  if (variables && grads)
    failed = ct_variable_gradients(g, loss, variables, grads, &n) ||
             ct_optimizer_apply_gradients(g, c, n, variables, grads, train_op);
  else
    ct_graph_set_error(g, CT_RESOURCE_EXHAUSTED, "out of memory building the optimizer");
  free(variables);
  free(grads);
  return failed;
}
