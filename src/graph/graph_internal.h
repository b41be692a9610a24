/* The graph's private structures, shared by src/graph, src/ops and src/exec. */
#ifndef CTOWER_GRAPH_INTERNAL_H
#define CTOWER_GRAPH_INTERNAL_H

#include "ctower/graph.h"
#include "graph/op_attrs.h"

struct ct_op_def;

typedef struct ct_variable_info {
  char *name;           /* full name, "conv1/weights" */
  ct_shape shape;
  ct_initializer init;
  int trainable;
  char *device;         /* device scope in force when it was created (or the
                           variable device scope, which wins) */
  int replica_of;       /* a copy of another variable (replicated towers): that
                           one's index, whose name seeds the initializer; else -1 */
  int colocate_with;    /* an optimizer slot: the variable it lives beside; else -1 */
  float weight_decay;   /* the model's own L2 decay, added to the optimizer's; 0 */
  int has_seed;         /* an op-level seed (ct_variable_set_initializer_seed) ... */
  uint64_t seed;        /* ... which seeds the initializer instead of the name;
                           a CT_INIT_TF_* kind's TensorFlow seed, 0 */
  uint64_t seed2;       /* a CT_INIT_TF_* kind's TensorFlow seed2, 0 */
  float init_mean;      /* added to a random initializer's draws: the centre of its
                           distribution (ct_variable_set_initializer_mean); 0 */
} ct_variable_info;

struct ct_node {
  int id;                       /* index in graph->nodes, creation order */
  char *name;                   /* full name with scopes */
  const struct ct_op_def *op;
  int n_inputs;
  ct_output *inputs;
  int n_control;                /* control dependencies: run after these */
  ct_node **control;
  int n_outputs;
  ct_shape *shapes;             /* static shapes, -1 where unknown */
  ct_dtype *dtypes;
  ct_attrs attrs;
  char *requested_device;       /* from the device scope, "" if none */
  int variable;                 /* Variable nodes: index into graph->variables; else -1 */
  ct_tensor *constant;          /* Const nodes: the value */
  uint64_t seed;                /* per-node random stream (hash of graph seed and name) */
  int all_reduce_bucket;        /* packs, sums or unpacks this all-reduce bucket of
                                   gradients (traced and reported as communication); -1 */
};

struct ct_graph {
  ct_node **nodes;
  int n_nodes, nodes_cap;
  ct_status status;             /* first building error, sticky */
  uint64_t seed;
  char *name_scopes[64];        /* each entry: the full prefix, "tower_0/conv1" */
  int n_name_scopes;
  char *device_scopes[64];
  int n_device_scopes;
  char *variable_scopes[64];    /* full prefixes */
  int n_variable_scopes;
  char *variable_device_scopes[64]; /* where new variables go, whatever the device scope */
  int n_variable_device_scopes;
  int variable_reuse; /* reuse scopes in force (ct_graph_push_variable_reuse) */
  ct_variable_info *variables;
  int n_variables, variables_cap;
  ct_node **update_ops;
  int n_update_ops, update_ops_cap;
  /* the replica being built (ct_graph_set_replica): its name prefix, which
   * node seeds leave out, and the index of its first example */
  char *replica_prefix;
  ct_output replica_first_example;
  /* name -> node, open addressing; capacity is a power of two */
  ct_node **name_table;
  size_t name_table_cap;
};

/* Adds a node of `op` named "<scope>/<base_name>" (made unique with _1, _2,
 * ... as TensorFlow does), with static shapes from the op's shape rule.
 * Returns NULL (and records the error) when the graph already failed, an
 * input is null, or the shape rule rejects the inputs. */
ct_node *ct_graph_add_node(ct_graph *g, const struct ct_op_def *op, const char *base_name,
                           int n_inputs, const ct_output *inputs, int n_outputs,
                           const ct_attrs *attrs);

/* Puts context in front of the recorded error's message (a no-op without one). */
void ct_graph_prefix_error(ct_graph *g, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* {node, 0}, or the null output when node is NULL. */
static inline ct_output ct_out(ct_node *node, int index) {
  ct_output o;
  o.node = node;
  o.index = node ? index : 0;
  return o;
}

#endif
