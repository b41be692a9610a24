/* The parameter server: one set of variables on ps_device, which every
 * tower reads; the towers' gradients of a variable are summed beside it
 * (by the gradients themselves) and applied there once, as TensorFlow's
 * CIFAR-10 multi-GPU tutorial does. Across ranks the parameter server is
 * rank 0's: every rank sends its sums to rank 0 (exchange.c, a
 * CollectiveReduce to rank 0 per bucket), rank 0 applies the update, and
 * the variables come back (a CollectiveBroadcast per variable, assigned
 * into the other ranks' copies). */
#include <stdio.h>
#include <stdlib.h>

#include "cluster/communication.h"
#include "graph/graph_internal.h"
#include "graph/op_def.h"
#include "ops/op_list.h"
#include "parallel/parallel_internal.h"

/* Room in t for every variable of g to be listed as shared (t->n_shared
 * 0). Returns 0, or records the error in g and returns 1. */
static int listing_init(ct_graph *g, ct_tower_graph *t) {
  t->n_shared = 0;
  t->shared = malloc((size_t)(g->n_variables + 1) * sizeof *t->shared);
  t->shared_bucket = malloc((size_t)(g->n_variables + 1) * sizeof *t->shared_bucket);
  if (t->shared == NULL || t->shared_bucket == NULL) {
    ct_graph_set_error(g, CT_RESOURCE_EXHAUSTED, "out of memory building the parameter server");
    return 1;
  }
  return 0;
}

/* After the buckets (n_buckets of them, the last CollectiveReduce
 * `last_sent`): lists the variables that had no gradient, in bucket
 * n_buckets; outside rank 0, leaves no gradient to apply. */
static void listing_finish(ct_graph *g, ct_tower_graph *t, int n_buckets, ct_node *last_sent) {
  if (g->status.code != CT_OK) return;
  char *listed = calloc((size_t)g->n_variables + 1, 1);
  if (listed == NULL) {
    ct_graph_set_error(g, CT_RESOURCE_EXHAUSTED, "out of memory building the parameter server");
    return;
  }
  for (int i = 0; i < t->n_shared; ++i) listed[t->shared[i]] = 1;
  for (int v = 0; v < g->n_variables; ++v)
    if (!listed[v]) t->shared[t->n_shared] = v, t->shared_bucket[t->n_shared++] = n_buckets;
  free(listed);
  t->gradients_sent = last_sent;
  if (ct_cluster_rank() != CT_PS_RANK) t->n_gradients = 0; /* rank 0 applies them */
}

/* Whether node n writes variable v (an update, an assignment). */
static int writes(const ct_node *n, int v) {
  return (n->op->flags & CT_OP_MUTATES_INPUT0) && n->n_inputs > 0 && n->inputs[0].node &&
         n->inputs[0].node->variable == v;
}

/* Variable v from rank 0, after `previous` and after every op built so far
 * that writes v on this rank; into v outside rank 0. Returns the node that
 * finishes it. */
static ct_node *share_one(ct_graph *g, int v, int bucket, ct_node *previous, ct_node **sent) {
  const int first_node = g->n_nodes;
  char scope[48];
  snprintf(scope, sizeof scope, "parameter_server/bucket_%d", bucket);
  ct_graph_push_name_scope(g, scope);
  ct_graph_push_device(g, g->variables[v].device);
  const ct_output var = ct_variable_read(g, v);
  const ct_output value = ct_collective_broadcast(g, var, CT_PS_RANK, bucket);
  *sent = value.node;
  if (value.node && previous) ct_node_add_control_input(value.node, previous);
  for (int j = 0; value.node && j < first_node; ++j)
    if (writes(g->nodes[j], v)) ct_node_add_control_input(value.node, g->nodes[j]);
  ct_node *done = ct_cluster_rank() == CT_PS_RANK ? value.node : ct_assign(g, var, value).node;
  ct_graph_pop_device(g);
  ct_graph_pop_name_scope(g);
  for (int j = first_node; j < g->n_nodes; ++j) g->nodes[j]->all_reduce_bucket = bucket;
  return done;
}

/* Every shared variable from rank 0, after the update (see
 * ct_towers_after_update). */
static ct_node *share_variables(ct_graph *g, const ct_tower_graph *t) {
  if (t->n_shared == 0 || g->status.code != CT_OK) return NULL;
  ct_node **done = malloc((size_t)t->n_shared * sizeof *done);
  if (done == NULL) {
    ct_graph_set_error(g, CT_RESOURCE_EXHAUSTED, "out of memory building the parameter server");
    return NULL;
  }
  /* one broadcast after the other, the first once every bucket is sent:
   * every rank runs them in one order, and no read of this step's
   * variables is left (every gradient is in a bucket) */
  ct_node *previous = t->gradients_sent;
  for (int i = 0; i < t->n_shared && g->status.code == CT_OK; ++i)
    done[i] = share_one(g, t->shared[i], t->shared_bucket[i], previous, &previous);
  ct_node *all = g->status.code == CT_OK
                     ? ct_group(g, "parameter_server/variables_shared", t->n_shared, done)
                     : NULL;
  free(done);
  return all;
}

/* Across ranks: each rank's sum beside the variable, sent to rank 0 in
 * buckets, summed there as one tower's would be; rank 0 alone applies the
 * update, and share_variables brings the variables back to every rank. */
static void build_exchange(ct_graph *g, const ct_tower_options *o, ct_tower_graph *t) {
  if (!o->across_ranks) return; /* the gradients are summed beside the variables */
  ct_tower_options summed = *o;
  summed.n_towers = 1;
  ct_buckets buckets = {NULL, NULL, 0, NULL, NULL};
  if (listing_init(g, t) == 0) buckets.to_root = t;
  ct_buckets_build(g, &summed, t->n_gradients, t->variables, t->gradients, &buckets);
  if (buckets.to_root) listing_finish(g, t, buckets.bucket, buckets.last_collective);
}

static void describe(const ct_tower_options *o, char *buf, size_t size) {
  if (o->n_towers == 1)
    snprintf(buf, size, "1 tower");
  else
    snprintf(buf, size, "%d towers (parameter server on %s)", o->n_towers, o->ps_device);
}

const ct_strategy ct_strategy_parameter_server = {
    .name = "parameter_server",
    .one_copy = 1,
    .build_exchange = build_exchange,
    .build_after_update = share_variables,
    .describe = describe,
};
