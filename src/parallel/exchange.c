/* The step's exchange of gradients, in buckets: what the replicated
 * towers and the parameter server across ranks share. Each bucket packs
 * some originals' gradients of every tower into one flat tensor, sums the
 * towers' (ring, tree or one collective op) in a fixed order, sends the
 * sum across the ranks (a CollectiveReduce, to rank 0 for the parameter
 * server) and unpacks it into gradients shaped like the variables. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph_internal.h"
#include "ops/op_list.h"
#include "parallel/parallel_internal.h"

/* A variable of n zeros, this rank's own (listed in st->local), on the
 * device scope in force. */
static ct_output local_variable(ct_graph *g, const char *name, int64_t n, ct_buckets *st) {
  const ct_initializer zeros = {CT_INIT_ZEROS, 0.0f};
  const ct_output v = ct_variable(g, name, ct_shape_of(1, n), zeros, 0);
  if (v.node && st->local) st->local->local[st->local->n_local++] = v.node->variable;
  return v;
}

/* A bucket's sum between this process's towers, as it is built. */
typedef struct tower_sum {
  ct_graph *g;
  const ct_tower_options *o;
  char (*devices)[64]; /* tower k's device */
  int bucket;
  int64_t n;           /* the bucket's values */
  ct_shape shape;      /* theirs: flat, or the one gradient's */
  ct_buckets *st;
  int packs;           /* packings so far (they name ONEBIT's residuals) */
  int root;            /* the tower whose device holds the process's sum (ring, tree) */
} tower_sum;

/* Whether a value on tower `from`'s device leaves a GPU for another memory
 * on its way to tower `to`'s (ct_tower_options.memory_domain). */
static int leaves_a_gpu(const ct_tower_options *o, int from, int to) {
  return o->memory_domain[from] > 0 && o->memory_domain[from] != o->memory_domain[to];
}

int ct_towers_span_memories(const ct_tower_options *o) {
  for (int k = 0; k < o->n_towers; ++k)
    for (int j = 0; j < o->n_towers; ++j)
      if (leaves_a_gpu(o, k, j)) return 1;
  return 0;
}

int ct_towers_compress_out_of_gpus(const ct_tower_options *o) {
  return o->compression != CT_COMPRESSION_NONE && o->all_reduce != CT_ALL_REDUCE_COLLECTIVE &&
         ct_towers_span_memories(o);
}

/* Whether a value computed on tower `from`'s device travels compressed to
 * tower `to`'s: it leaves a GPU for another memory. */
static int compressed_way(const tower_sum *s, int from, int to) {
  return s->o->compression != CT_COMPRESSION_NONE && leaves_a_gpu(s->o, from, to);
}

/* x packed on tower `from`'s GPU (ONEBIT with a residual of its own there). */
static ct_output pack(tower_sum *s, ct_output x, int from) {
  ct_output residual = ct_out(NULL, 0);
  ct_graph_push_device(s->g, s->devices[from]);
  if (s->o->compression == CT_COMPRESSION_ONEBIT) {
    char name[96];
    snprintf(name, sizeof name, "all_reduce/bucket_%d/onebit_residual_%d", s->bucket, s->packs);
    residual = local_variable(s->g, name, s->n, s->st);
  }
  ++s->packs;
  const ct_output packed = ct_compress_gradient(s->g, x, s->o->compression, residual);
  ct_graph_pop_device(s->g);
  return packed;
}

/* packed unpacked on tower `to`'s device, in the bucket's shape. */
static ct_output unpack(tower_sum *s, ct_output packed, int to) {
  ct_graph_push_device(s->g, s->devices[to]);
  const ct_output x =
      ct_reshape(s->g, ct_decompress_gradient(s->g, packed, s->o->compression, s->n), s->shape);
  ct_graph_pop_device(s->g);
  return x;
}

/* x, computed on tower `from`'s device, as tower `to` adds it: packed and
 * unpacked on the way when it travels compressed, else x itself (the
 * partitioner copies it). */
static ct_output hop(tower_sum *s, ct_output x, int from, int to) {
  return compressed_way(s, from, to) ? unpack(s, pack(s, x, from), to) : x;
}

/* sums[k] for every tower k: the sum on tower `root`. When it travels
 * compressed to some tower, every tower reads it unpacked from one packing
 * (the root too), so that the copies stay bitwise equal; else each reads
 * the sum itself (so does the compressed exchange across ranks, which
 * packs it once for the ranks and the towers). */
static void spread(tower_sum *s, ct_output sum, int root, ct_output *sums) {
  s->root = root;
  int compressed = 0;
  for (int k = 0; k < s->o->n_towers && !s->o->across_ranks; ++k)
    compressed |= compressed_way(s, root, k);
  const ct_output packed = compressed ? pack(s, sum, root) : ct_out(NULL, 0);
  for (int k = 0; k < s->o->n_towers; ++k) sums[k] = compressed ? unpack(s, packed, k) : sum;
}

/* Sums parts[0..n-1] (parts[k] on tower k's device) in a fixed order into
 * sums[k] for each tower, all bitwise the same.
 * ring: accumulate along the ring 0 -> 1 -> ... -> n-1;
 * tree: add pairs, then pairs of pairs, on the left device of each pair;
 *   (ring and tree leave the sum on one device, which spread() hands to
 *   the others; a partial sum or the sum that leaves a GPU for another
 *   memory travels compressed, as o->compression says)
 * collective: one AllReduce op, each tower's sum on its own device, read
 *   through an Identity that also waits for `backward_done` (see
 *   ct_buckets_build). */
static void all_reduce(tower_sum *s, const ct_output *parts, ct_node *backward_done,
                       ct_output *sums) {
  ct_graph *g = s->g;
  const int n = s->o->n_towers;
  if (n == 1) {
    sums[0] = parts[0];
    return;
  }
  if (s->o->all_reduce == CT_ALL_REDUCE_COLLECTIVE) {
    ct_graph_push_device(g, s->devices[0]);
    ct_all_reduce(g, n, parts, sums);
    ct_graph_pop_device(g);
    for (int k = 0; k < n && sums[k].node; ++k) {
      ct_graph_push_device(g, s->devices[k]);
      sums[k] = ct_identity(g, sums[k]);
      ct_node_add_control_input(sums[k].node, backward_done);
      ct_graph_pop_device(g);
    }
    return;
  }
  if (s->o->all_reduce == CT_ALL_REDUCE_RING) {
    ct_output acc = parts[0];
    for (int k = 1; k < n; ++k) {
      const ct_output arrived = hop(s, acc, k - 1, k);
      ct_graph_push_device(g, s->devices[k]);
      acc = ct_add(g, arrived, parts[k]);
      ct_graph_pop_device(g);
    }
    spread(s, acc, n - 1, sums);
    return;
  }
  ct_output level[CT_MAX_DEVICES] = {{NULL, 0}};
  int where[CT_MAX_DEVICES];
  for (int k = 0; k < n; ++k) level[k] = parts[k], where[k] = k;
  for (int count = n; count > 1; count = (count + 1) / 2) {
    for (int k = 0; k < count / 2; ++k) {
      const ct_output right = hop(s, level[2 * k + 1], where[2 * k + 1], where[2 * k]);
      ct_graph_push_device(g, s->devices[where[2 * k]]);
      level[k] = ct_add(g, level[2 * k], right);
      ct_graph_pop_device(g);
      where[k] = where[2 * k];
    }
    if (count % 2) level[count / 2] = level[count - 1], where[count / 2] = where[count - 1];
  }
  spread(s, level[0], where[0], sums);
}

/* Gradients are all-reduced in buckets of about this many floats: small
 * gradients travel together, packed into one flat tensor (as PyTorch's DDP
 * does), and a bucket starts as soon as its last gradient exists, while the
 * backward pass goes on. */
enum { BUCKET_FLOATS = 1 << 20 };
/* At most this many gradients share a bucket (a concat takes up to 63). */
enum { BUCKET_GRADIENTS = 63 };

/* The sum of x (this process's n values) over the ranks, compressed on the
 * way: packed on x's device (the device scope in force) and summed by a
 * CompressedAllReduce on the host's CPU device, which returns it packed.
 * ONEBIT keeps two residuals per bucket, this rank's own: what packing x
 * lost, and what packing its stripe of the sum lost. *collective: the node
 * that meets the other ranks. */
static ct_output compressed_sum(ct_graph *g, ct_compression c, ct_output x, int64_t n, int bucket,
                                ct_buckets *st, ct_node **collective) {
  char name[96];
  ct_output residual = ct_out(NULL, 0), stripe_residual = ct_out(NULL, 0);
  if (c == CT_COMPRESSION_ONEBIT) {
    snprintf(name, sizeof name, "all_reduce/bucket_%d/onebit_residual", bucket);
    residual = local_variable(g, name, n, st);
  }
  const ct_output packed = ct_compress_gradient(g, x, c, residual);
  ct_graph_push_device(g, "/cpu:0"); /* the ranks meet in host memory */
  if (c == CT_COMPRESSION_ONEBIT) {
    snprintf(name, sizeof name, "all_reduce/bucket_%d/onebit_stripe_residual", bucket);
    stripe_residual = local_variable(g, name, n, st);
  }
  const ct_output summed = ct_compressed_all_reduce(g, packed, c, n, stripe_residual, bucket);
  ct_graph_pop_device(g);
  *collective = summed.node;
  return summed;
}

/* One all-reduce of `count` originals' gradients: grads[copies[m * towers + k]]
 * is original m's gradient on tower k. Every copy then reads the same sum. */
static void all_reduce_bucket(ct_graph *g, const ct_tower_options *o, int count, const int *copies,
                              const int *variables, ct_output *grads, ct_buckets *st) {
  const int towers = o->n_towers, bucket = st->bucket++;
  ct_node *backward_done = st->backward_done;
  const int first_node = g->n_nodes;
  char scope[32];
  snprintf(scope, sizeof scope, "all_reduce/bucket_%d", bucket);
  ct_graph_push_name_scope(g, scope);
  char devices[CT_MAX_DEVICES][64];
  ct_output packed[CT_MAX_DEVICES] = {{NULL, 0}};
  /* each tower's flat gradients: the unpack beside a tower's sum takes its
   * slice shapes from them (collective), or from tower 0's */
  ct_output(*flat)[64] = calloc((size_t)towers, sizeof *flat);
  if (flat == NULL) {
    ct_graph_set_error(g, CT_RESOURCE_EXHAUSTED, "out of memory building the all-reduce");
    ct_graph_pop_name_scope(g);
    return;
  }
  for (int k = 0; k < towers; ++k) {
    snprintf(devices[k], sizeof devices[k], "%s", g->variables[variables[copies[k]]].device);
    if (count == 1) {
      packed[k] = grads[copies[k]];
      continue;
    }
    ct_graph_push_device(g, devices[k]);
    for (int m = 0; m < count; ++m)
      flat[k][m] = ct_reshape(g, grads[copies[m * towers + k]], ct_shape_of(1, (int64_t)-1));
    packed[k] = ct_concat(g, count, flat[k], 0);
    ct_graph_pop_device(g);
  }
  int64_t n = 0;
  for (int m = 0; m < count; ++m)
    n += ct_shape_elements(&g->variables[variables[copies[m * towers]]].shape);
  tower_sum sum = {g, o, devices, bucket, n,
                   count == 1 ? g->variables[variables[copies[0]]].shape : ct_shape_of(1, n), st,
                   0, 0};
  ct_output sums[CT_MAX_DEVICES];
  all_reduce(&sum, packed, backward_done, sums);
  /* across ranks: one CollectiveReduce of this process's sum (to rank 0
   * for the parameter server), which every tower then reads; each bucket's
   * after the previous one's, so that every rank runs them in the same
   * order */
  const int across = o->across_ranks;
  if (across) {
    ct_node *collective = NULL;
    if (o->compression != CT_COMPRESSION_NONE) {
      /* packed where the process's sum is; unpacked beside each tower when
       * the towers span memories, else once on the first's device */
      ct_graph_push_device(g, devices[sum.root]);
      const ct_output summed =
          compressed_sum(g, o->compression, sums[sum.root], n, bucket, st, &collective);
      ct_graph_pop_device(g);
      const int each = ct_towers_compress_out_of_gpus(o);
      sums[0] = unpack(&sum, summed, 0);
      for (int k = 1; k < towers; ++k) sums[k] = each ? unpack(&sum, summed, k) : sums[0];
    } else {
      ct_graph_push_device(g, devices[0]);
      const ct_output total = st->to_root ? ct_collective_reduce_to(g, sums[0], CT_PS_RANK, bucket)
                                          : ct_collective_reduce(g, sums[0], bucket);
      ct_graph_pop_device(g);
      collective = total.node;
      for (int k = 0; k < towers; ++k) sums[k] = total;
    }
    if (collective && st->last_collective) ct_node_add_control_input(collective, st->last_collective);
    st->last_collective = collective;
  }
  for (int m = 0; st->to_root && m < count; ++m) {
    ct_tower_graph *t = st->to_root;
    t->shared[t->n_shared] = variables[copies[m * towers]];
    t->shared_bucket[t->n_shared++] = bucket;
  }
  if (count == 1) {
    for (int k = 0; k < towers; ++k) grads[copies[k]] = sums[k];
  } else { /* unpack: slices shaped like tower 0's flat gradients, then the variables' shapes */
    /* one unpack of the one sum where the towers share a memory, else one
     * per tower beside its own sum: the collective's, or the ring's or
     * tree's that crossed to it (so that the gradients do not cross again,
     * as slices of the first tower's unpack) */
    const int collective = o->all_reduce == CT_ALL_REDUCE_COLLECTIVE;
    const int per_tower = (!across && collective) || (!collective && ct_towers_span_memories(o));
    for (int k = 0; k < (per_tower ? towers : 1); ++k) {
      ct_graph_push_device(g, devices[k]);
      ct_output in[65];
      in[0] = sums[k];
      for (int m = 0; m < count; ++m) in[m + 1] = flat[k][m];
      ct_attrs axis0;
      memset(&axis0, 0, sizeof axis0);
      ct_node *unpack =
          ct_graph_add_node(g, &ct_op_concat_grad, "Unpack", count + 1, in, count, &axis0);
      for (int m = 0; m < count && unpack; ++m) {
        ct_output piece =
            ct_reshape(g, ct_out(unpack, m), g->variables[variables[copies[m * towers]]].shape);
        for (int j = 0; j < towers; ++j)
          if (j == k || !per_tower) grads[copies[m * towers + j]] = piece;
      }
      ct_graph_pop_device(g);
    }
  }
  free(flat);
  ct_graph_pop_name_scope(g);
  for (int i = first_node; i < g->n_nodes; ++i) g->nodes[i]->all_reduce_bucket = bucket;
}

/* Replicated update: all-reduces every original's gradient with its
 * replicas' (in buckets, last layers first as the backward pass makes
 * them); every copy is then updated with the same sum.
 *
 * On GPUs a collective AllReduce takes its sums on the GPUs' communication
 * streams, and the first reader of a sum makes its compute stream wait for
 * them. Read as soon as its bucket is summed, a sum would hold up the rest
 * of the backward pass, queued on that compute stream after the reader. So
 * the sums are read only once every gradient of the step is computed
 * (queued), `backward_done`: the backward pass runs on while the buckets
 * are summed, and the updates come after it, as in PyTorch's DDP. */
void ct_buckets_build(ct_graph *g, const ct_tower_options *o, int n,
                                 const int *variables, ct_output *grads, ct_buckets *st) {
  const int towers = o->n_towers;
  int *copies = malloc((size_t)(n * towers + 1) * sizeof *copies);
  ct_node **gradient_nodes = malloc((size_t)(n + 1) * sizeof *gradient_nodes);
  if (copies == NULL || gradient_nodes == NULL) {
    free(copies), free(gradient_nodes);
    ct_graph_set_error(g, CT_RESOURCE_EXHAUSTED, "out of memory building the all-reduce");
    return;
  }
  for (int i = 0; i < n; ++i) gradient_nodes[i] = grads[i].node;
  st->backward_done = o->all_reduce == CT_ALL_REDUCE_COLLECTIVE
                          ? ct_group(g, "all_reduce/backward_done", n, gradient_nodes)
                          : NULL;
  free(gradient_nodes);
  int count = 0;
  int64_t floats = 0;
  for (int i = n - 1; i >= 0 && g->status.code == CT_OK; --i) {
    if (g->variables[variables[i]].replica_of >= 0) continue;
    int *row = copies + count * towers, k = 1;
    row[0] = i;
    for (int j = 0; j < n && k < towers; ++j) /* replicas come in tower order */
      if (g->variables[variables[j]].replica_of == variables[i]) row[k++] = j;
    if (k != towers) {
      ct_graph_set_error(g, CT_INTERNAL, "variable '%s' has %d copies for %d towers",
                         g->variables[variables[i]].name, k, towers);
      break;
    }
    ++count;
    floats += ct_shape_elements(&g->variables[variables[i]].shape);
    if (floats >= BUCKET_FLOATS || count == BUCKET_GRADIENTS) {
      all_reduce_bucket(g, o, count, copies, variables, grads, st);
      count = 0, floats = 0;
    }
  }
  if (count > 0 && g->status.code == CT_OK)
    all_reduce_bucket(g, o, count, copies, variables, grads, st);
  free(copies);
}

