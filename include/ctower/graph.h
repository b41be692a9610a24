/* ctower graphs: nodes, name scopes, device scopes and shared variables.
 *
 * A graph records operations; it computes nothing. Building calls never fail
 * loudly: the first error is recorded in the graph (sticky) and later calls
 * return a null output, so model code stays readable and checks once:
 *
 *   ct_graph *g = ct_graph_new();
 *   ct_output x = ct_placeholder(g, "images", CT_F32, ct_shape_of(2, -1, 784));
 *   ct_graph_push_name_scope(g, "tower_0");
 *   ct_output y = ct_layer_dense(g, x, 10, CT_ACTIVATION_NONE, "logits");
 *   ct_graph_pop_name_scope(g);
 *   if (!ct_ok(ct_graph_status(g))) ... report ct_graph_status(g)->message ...
 *
 * The graph owns its nodes; ct_graph_free frees them all.
 */
#ifndef CTOWER_GRAPH_H
#define CTOWER_GRAPH_H

#include <stdint.h>

#include "ctower/status.h"
#include "ctower/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_graph ct_graph;
typedef struct ct_node ct_node;

/* One output of a node: what op builders take and return. node is NULL for
 * "no value" (after a graph error, or a gradient that does not exist). */
typedef struct ct_output {
  ct_node *node;
  int index;
} ct_output;

ct_graph *ct_graph_new(void);
void ct_graph_free(ct_graph *graph);

/* The first error recorded while building; CT_OK while all went well. */
const ct_status *ct_graph_status(const ct_graph *graph);
/* Records an error from model code (the first error wins). */
void ct_graph_set_error(ct_graph *graph, ct_code code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* The graph-level seed: variable initializers and dropout derive their
 * streams from it and from their own names. Default 0. */
void ct_graph_set_seed(ct_graph *graph, uint64_t seed);
uint64_t ct_graph_seed(const ct_graph *graph);

/* While a replica of the model is built under name scope `name_prefix`
 * (towers: "tower_1"), random ops draw what the original draws for the same
 * example: their streams leave the prefix out of their names, and they
 * count elements from example `first_example` (an i64 scalar, fed each step
 * with the index of the replica's first example in the global batch). So
 * dropout masks do not depend on how a batch is split. NULL ends it. */
void ct_graph_set_replica(ct_graph *graph, const char *name_prefix, ct_output first_example);

/* Name scopes prefix node names: "tower_0" + "conv1" -> "tower_0/conv1/Conv2D".
 * A scope may itself contain '/'. Pops must match pushes. */
void ct_graph_push_name_scope(ct_graph *graph, const char *scope);
void ct_graph_pop_name_scope(ct_graph *graph);

/* Device scopes record the requested device on every node built inside
 * ("/cpu:0", "/gpu:1", "/device:GPU:0", ...). The innermost scope wins; an
 * empty string clears the request. Placement itself happens in the session.
 * Under mpirun a scope may name a device of another task
 * ("/job:worker/task:1/cpu:0"; a job alone means its task 0): the node runs
 * in that task's process, and the values that cross processes are sent by
 * MPI. Every rank then builds the same graph and makes the same runs; a
 * node whose scope names no task runs in every process that needs it. */
void ct_graph_push_device(ct_graph *graph, const char *device);
void ct_graph_pop_device(ct_graph *graph);

/* Variable scopes prefix variable names (not node names), so that a second
 * tower built by the same code under another name scope gets the same
 * variables: ct_variable(g, "weights", ...) inside variable scope "conv1"
 * is the variable "conv1/weights" in every tower. */
void ct_graph_push_variable_scope(ct_graph *graph, const char *scope);
void ct_graph_pop_variable_scope(ct_graph *graph);

/* Variable reuse, as TensorFlow's variable_scope(reuse=True). The layers
 * of ctower/models.h create their variables with ct_variable_create, which
 * refuses a variable that exists already: two layers of one name would
 * otherwise share their weights without anyone asking for it. Code that
 * builds a model once more over the same variables (the towers of a
 * parameter server after the first, evaluation copies) asks for it by
 * building inside a reuse scope, where layers get the variables that exist
 * and create the others. Reuse scopes nest; pops must match pushes. */
void ct_graph_push_variable_reuse(ct_graph *graph);
void ct_graph_pop_variable_reuse(ct_graph *graph);

/* Variable device scopes decide where new variables (and so their reads,
 * updates and slots) live, whatever the device scope: the parameter-server
 * strategy creates a tower's variables on the ps device while the tower's
 * ops run on its own (TensorFlow's replica_device_setter). */
void ct_graph_push_variable_device(ct_graph *graph, const char *device);
void ct_graph_pop_variable_device(ct_graph *graph);

/* The depths of a graph's scope stacks (name, device, variable, variable
 * device, variable reuse), taken before code that builds part of a graph
 * runs, to see that it leaves every scope as it found it. */
typedef struct ct_graph_scope_mark {
  int name, device, variable, variable_device, reuse;
} ct_graph_scope_mark;
ct_graph_scope_mark ct_graph_scope_mark_now(const ct_graph *graph);

/* Whether the scopes are where `mark` found them: 0. Else 1 with the
 * first scope that is not written into what ("the device scope '/cpu:1'
 * still open", "its caller's name scope popped (more pops than pushes)"),
 * and every stack deeper than at the mark popped back to it, so that what
 * is built next is not built inside a scope left open. */
int ct_graph_scopes_return_to(ct_graph *graph, const ct_graph_scope_mark *mark, char *what,
                              size_t size);

/* Forgets the error recorded in the graph, so that building goes on: for a
 * front end that reports each failed call at once (the Python binding
 * raises it as TensorFlow raises a ValueError). A builder that fails adds
 * no node of its own; nodes and variables that a builder of several nodes
 * made before it failed stay in the graph, unused unless fetched. */
void ct_graph_clear_error(ct_graph *graph);

/* Renames `node` to "<current name scope>/<name>", made unique with _1, _2,
 * ... as the names of new nodes are: TensorFlow's name= of an op whose
 * builder takes no name. Random streams keep the seeds of the old name.
 * Returns 0, or 1 with the error recorded in the graph (an empty name, a
 * node of another graph). */
int ct_graph_rename_node(ct_graph *graph, ct_node *node, const char *name);

/* Nodes, in creation order (a topological order). */
int ct_graph_node_count(const ct_graph *graph);
ct_node *ct_graph_node(const ct_graph *graph, int index);
/* The node with that full name, or NULL. */
ct_node *ct_graph_find(const ct_graph *graph, const char *name);

/* Its index in creation order (ct_graph_node(graph, ct_node_id(node)) is node). */
int ct_node_id(const ct_node *node);
const char *ct_node_name(const ct_node *node);
const char *ct_node_op(const ct_node *node);            /* "Conv2D" */
const char *ct_node_requested_device(const ct_node *node); /* "" when none */
int ct_node_num_inputs(const ct_node *node);
ct_output ct_node_input(const ct_node *node, int index);
int ct_node_num_outputs(const ct_node *node);
/* Static shape (unknown dims are -1) and dtype of an output. */
ct_shape ct_output_shape(ct_output output);
ct_dtype ct_output_dtype(ct_output output);

/* Makes `node` run only after `before` (a control dependency). */
void ct_node_add_control_input(ct_node *node, ct_node *before);
/* Its control dependencies, in the order they were added (a group's
 * members: ct_group). */
int ct_node_num_control_inputs(const ct_node *node);
ct_node *ct_node_control_input(const ct_node *node, int index);

/* Variables: ------------------------------------------------------------ */

typedef enum ct_init_kind {
  CT_INIT_ZEROS = 0,
  CT_INIT_ONES,
  CT_INIT_CONSTANT,        /* every element = value */
  CT_INIT_UNIFORM,         /* U(-scale, scale); the three random kinds are centred on
                              the variable's mean (ct_variable_set_initializer_mean), 0 */
  CT_INIT_NORMAL,          /* N(0, scale^2) truncated at 2 scale, as TF */
  CT_INIT_GLOROT_UNIFORM,  /* U(-l, l), l = sqrt(6 / (fan_in + fan_out)) */
  CT_INIT_HE_NORMAL,       /* truncated N(0, 2 / fan_in) */
  CT_INIT_RANDOM_NORMAL,   /* N(0, scale^2), not truncated (TF's random_normal_initializer) */
  /* TensorFlow's own streams, bit for bit: its kernel's values for the variable's
     (seed, seed2) (ct_variable_set_initializer_seeds; (0, 0) unless set), times
     scale, plus the variable's mean, in float32 as TensorFlow's random ops */
  CT_INIT_TF_UNIFORM,          /* RandomUniform, [0, 1) */
  CT_INIT_TF_NORMAL,           /* RandomStandardNormal */
  CT_INIT_TF_TRUNCATED_NORMAL  /* TruncatedNormal: N(0, 1) redrawn until |x| < 2 */
} ct_init_kind;

typedef struct ct_initializer {
  ct_init_kind kind;
  float value;   /* CT_INIT_CONSTANT: the value; UNIFORM/NORMAL: the scale */
} ct_initializer;

int ct_graph_variable_count(const ct_graph *graph);
/* Full name of variable i, e.g. "conv1/weights". */
const char *ct_graph_variable_name(const ct_graph *graph, int index);
ct_shape ct_graph_variable_shape(const ct_graph *graph, int index);
int ct_graph_variable_trainable(const ct_graph *graph, int index);
/* The variable's own weight decay (ct_variable_set_weight_decay), 0 when none. */
float ct_graph_variable_weight_decay(const ct_graph *graph, int index);
/* Update ops (batch-norm moving averages...) that a training step must run;
 * layer helpers register them, the trainer runs them with the train op. */
void ct_graph_add_update_op(ct_graph *graph, ct_node *node);
int ct_graph_update_op_count(const ct_graph *graph);
ct_node *ct_graph_update_op(const ct_graph *graph, int index);

#ifdef __cplusplus
}
#endif
#endif
