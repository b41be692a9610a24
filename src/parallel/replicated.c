/* The replicated update: every tower holds its own copy of the variables
 * (tower_k/<name>, from the same initial values), the gradients are
 * all-reduced between the towers and across the ranks in buckets
 * (exchange.c), and every copy applies the same sum, so the copies stay
 * bitwise equal, as tf_cnn_benchmarks' `replicated` does. */
#include <stdio.h>

#include "parallel/parallel_internal.h"

static void build_exchange(ct_graph *g, const ct_tower_options *o, ct_tower_graph *t) {
  if (o->n_towers == 1 && !o->across_ranks) return; /* nothing to sum */
  ct_buckets buckets = {NULL, NULL, 0, NULL};
  ct_buckets_build(g, o, t->n_gradients, t->variables, t->gradients, &buckets);
}

static void describe(const ct_tower_options *o, char *buf, size_t size) {
  if (o->n_towers == 1)
    snprintf(buf, size, "1 tower");
  else
    snprintf(buf, size, "%d towers (replicated)", o->n_towers);
}

const ct_strategy ct_strategy_replicated = {
    .name = "replicated",
    .build_exchange = build_exchange,
    .describe = describe,
};
