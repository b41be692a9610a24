/* The replicated update: every tower holds its own copy of the variables
 * (tower_k/<name>, from the same initial values), the gradients are
 * all-reduced between the towers and across the ranks in buckets
 * (exchange.c), and every copy applies the same sum, so the copies stay
 * bitwise equal, as tf_cnn_benchmarks' `replicated` does. */
#include <stdio.h>
#include <stdlib.h>

#include "parallel/parallel_internal.h"

static void build_exchange(ct_graph *g, const ct_tower_options *o, ct_tower_graph *t) {
  if (o->n_towers == 1 && !o->across_ranks) return; /* nothing to sum */
  ct_buckets buckets = {NULL, NULL, 0, NULL, NULL};
  if (o->across_ranks && o->compression != CT_COMPRESSION_NONE) { /* two residuals a bucket */
    if ((t->local = malloc((size_t)(2 * t->n_gradients + 2) * sizeof *t->local)) == NULL) {
      ct_graph_set_error(g, CT_RESOURCE_EXHAUSTED, "out of memory building the all-reduce");
      return;
    }
    buckets.local = t;
  }
  ct_buckets_build(g, o, t->n_gradients, t->variables, t->gradients, &buckets);
}

static void describe(const ct_tower_options *o, char *buf, size_t size) {
  char between[64] = "";
  if (o->across_ranks && o->compression != CT_COMPRESSION_NONE)
    snprintf(between, sizeof between, "gradients %s between ranks",
             ct_compression_name(o->compression));
  if (o->n_towers == 1)
    snprintf(buf, size, "1 tower%s%s%s", between[0] ? " (" : "", between, between[0] ? ")" : "");
  else
    snprintf(buf, size, "%d towers (replicated%s%s)", o->n_towers, between[0] ? ", " : "",
             between);
}

const ct_strategy ct_strategy_replicated = {
    .name = "replicated",
    .build_exchange = build_exchange,
    .describe = describe,
};
