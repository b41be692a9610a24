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
  if (o->across_ranks && o->compression != CT_COMPRESSION_NONE) {
    /* residuals, at most two a bucket between the ranks and one a tower
     * between GPUs */
    const size_t room = (size_t)(2 + o->n_towers) * (size_t)t->n_gradients + 2;
    if ((t->local = malloc(room * sizeof *t->local)) == NULL) {
      ct_graph_set_error(g, CT_RESOURCE_EXHAUSTED, "out of memory building the all-reduce");
      return;
    }
    buckets.local = t;
  }
  ct_buckets_build(g, o, t->n_gradients, t->variables, t->gradients, &buckets);
}

static void describe(const ct_tower_options *o, char *buf, size_t size) {
  char between[96] = "";
  const int ranks = o->across_ranks && o->compression != CT_COMPRESSION_NONE;
  const int gpus = ct_towers_compress_out_of_gpus(o);
  if (ranks || gpus)
    snprintf(between, sizeof between, "gradients %s %s%s%s", ct_compression_name(o->compression),
             ranks ? "between ranks" : "", ranks && gpus ? " and " : "",
             gpus ? "out of GPUs" : "");
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
