/* What defines an op, as the graph sees it: its name, its shape rule, its
 * gradient, its flags and its FLOPs rule. The ops themselves are defined in src/ops (the
 * list: ops/op_list.h); kernels are registered separately per device type
 * (src/kernels). */
#ifndef CTOWER_GRAPH_OP_DEF_H
#define CTOWER_GRAPH_OP_DEF_H

#include "graph/graph_internal.h"

/* The shape rule's view of a node: input shapes in, output shapes out. The
 * same rule runs when the node is built (unknown dims are -1) and before
 * every kernel call (all dims known). */
typedef struct ct_infer_ctx {
  const char *node_name;
  const ct_attrs *attrs;
  int n_inputs;
  const ct_shape *in_shapes;
  const ct_dtype *in_dtypes;
  int n_outputs;
  ct_shape *out_shapes;
  ct_dtype *out_dtypes;
  ct_status *status;
} ct_infer_ctx;

/* Returns 0, or fills ctx->status (INVALID_ARGUMENT naming the node). */
typedef int (*ct_shape_fn)(ct_infer_ctx *ctx);

/* Builds the gradient of `node`: given the gradient of each output
 * (grad_outputs[i].node NULL when that output does not reach y), fills
 * grad_inputs[j] for each input (leave NULL for no gradient). */
typedef void (*ct_grad_fn)(ct_graph *g, const ct_node *node, const ct_output *grad_outputs,
                           ct_output *grad_inputs);

/* Floating-point operations of one run of the op with these attributes,
 * input and output shapes (all dims known), for `ctower plan`'s cost model.
 * Convolutions and matmuls count 2 per multiply-accumulate; ops/op_cost.h
 * has the rules most ops share (none, one per element). */
typedef double (*ct_flops_fn)(const ct_attrs *attrs, int n_inputs, const ct_shape *in_shapes,
                              int n_outputs, const ct_shape *out_shapes);

enum ct_op_flags {
  CT_OP_ALIAS_INPUT0 = 1u << 0,    /* output 0 is a view of input 0's buffer */
  CT_OP_MUTATES_INPUT0 = 1u << 1,  /* writes into input 0 (a variable) */
  CT_OP_STATEFUL = 1u << 2,        /* has effects beyond its outputs */
  CT_OP_NO_GRADIENT = 1u << 3,     /* outputs are not differentiable (integer, metrics) */
  CT_OP_INPLACE = 1u << 4,         /* elementwise: output 0 may take input 0's buffer when
                                      input 0 dies here and has output 0's shape */
  CT_OP_MULTI_DEVICE = 1u << 5,    /* a collective: input k is read on its own device
                                      when that is of the op's kind (else copied to the
                                      op's device), and output k lives where it is read */
  CT_OP_WAITS_FOR_PEERS = 1u << 6, /* blocks until other processes reach it (a collective
                                      across ranks): runs on its device's communication
                                      worker, so that the device computes meanwhile */
  CT_OP_DENSE = 1u << 7 /* limited by arithmetic rather than memory (convolutions, matmuls):
                           the cost model times it at the device's dense rate */
};

typedef struct ct_op_def {
  const char *name; /* TensorFlow's name where one exists: "Conv2D" */
  ct_shape_fn infer;
  ct_grad_fn grad; /* NULL for ops with CT_OP_NO_GRADIENT or backward-only ops */
  unsigned flags;
  ct_flops_fn flops; /* every op names one (ct_flops_none for ops that only move data) */
} ct_op_def;

#endif
