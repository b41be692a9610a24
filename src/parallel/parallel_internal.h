/* What the files of src/parallel share: the strategies' tables, the
 * buckets of the gradients' exchange (exchange.c), the parameter server's
 * rank across a job, and device names. */
#ifndef CTOWER_PARALLEL_INTERNAL_H
#define CTOWER_PARALLEL_INTERNAL_H

#include "ctower/device_name.h"
#include "ctower/towers.h"
#include "parallel/strategy.h"

extern const ct_strategy ct_strategy_replicated;
extern const ct_strategy ct_strategy_parameter_server;
extern const ct_strategy ct_strategy_ps_tasks;
extern const ct_strategy ct_strategy_async;
extern const ct_strategy ct_strategy_block_momentum;

/* Across ranks the parameter server is rank 0's: it receives the sums,
 * applies the update, holds the optimizer's slots and writes checkpoints. */
enum { CT_PS_RANK = 0 };

/* Where the buckets stand while they are built. */
typedef struct ct_buckets {
  ct_node *backward_done;   /* collective: the sums are read after it */
  ct_node *last_collective; /* across ranks: the previous bucket's CollectiveReduce */
  int bucket;               /* the next bucket's index */
  ct_tower_graph *to_root;  /* parameter server across ranks: the sums go to rank 0, and
                               the bucket's variables are listed as shared here (room for
                               every variable) */
  ct_tower_graph *local;    /* compressed across ranks: the residuals, each rank's own, are
                               listed here (room for two a bucket and one a
                               tower) */
} ct_buckets;

/* All-reduces every original's gradient (grads[i] of graph variable
 * variables[i], n of them) with its copies' (o->n_towers copies, tower
 * order), in buckets, last layers first as the backward pass makes them,
 * and then across the ranks when o->across_ranks (compressed as
 * o->compression says); every copy then reads the same sum. Errors go to
 * the graph. */
void ct_buckets_build(ct_graph *graph, const ct_tower_options *o, int n, const int *variables,
                      ct_output *grads, ct_buckets *buckets);

/* Whether some tower of o computes on a GPU and another in other memory,
 * so that a sum between them crosses a link (ct_tower_options.memory_domain). */
int ct_towers_span_memories(const ct_tower_options *o);
/* Whether o's ring or tree sends some sum compressed from a GPU to
 * another memory: o->compression, spanning memories, not the collective. */
int ct_towers_compress_out_of_gpus(const ct_tower_options *o);

/* The name of a device spec without its job, replica and task: "/cpu:0",
 * "/gpu:1" for a concrete device, else as ct_device_spec_string writes it. */
void ct_tower_device_local_name(const ct_device_spec *spec, char *out, size_t size);

/* Whether two towers of o name one device (parsed: /cpu:0 and
 * /device:CPU:0 are one); the first such pair into *a < *b. */
int ct_tower_devices_repeat(const ct_tower_options *o, int *a, int *b);

#endif
