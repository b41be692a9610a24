/* Towers: replication of a model on N devices, batch-weighted loss, its
 * gradients, and their sums for the parameter-server and replicated
 * variable updates (the parameter server's way back across ranks:
 * parameter_server.c). */
#include "ctower/towers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph_internal.h"
#include "ops/op_list.h"
#include "parallel/parallel_internal.h"

void ct_tower_options_defaults(ct_tower_options *o) {
  memset(o, 0, sizeof *o);
  o->n_towers = 1;
  snprintf(o->devices[0], sizeof o->devices[0], "/cpu:0");
  o->variable_update = CT_VARIABLE_UPDATE_PARAMETER_SERVER;
  snprintf(o->ps_device, sizeof o->ps_device, "/cpu:0");
  o->all_reduce = CT_ALL_REDUCE_RING;
}

int ct_variable_is_original(const ct_graph *g, int index) {
  return g->variables[index].replica_of < 0;
}

const char *ct_variable_checkpoint_name(const ct_graph *g, int index) {
  int original = g->variables[index].replica_of;
  return g->variables[original >= 0 ? original : index].name;
}

static int find_variable(const ct_graph *g, const char *name) {
  for (int i = 0; i < g->n_variables; ++i)
    if (strcmp(g->variables[i].name, name) == 0) return i;
  return -1;
}

/* Tower k's variables (created after `first`) become replicas of tower 0's. */
static void link_replicas(ct_graph *g, int first, const char *prefix) {
  size_t len = strlen(prefix);
  for (int v = first; v < g->n_variables; ++v) {
    const char *name = g->variables[v].name;
    if (strncmp(name, prefix, len) != 0 || name[len] != '/') continue;
    g->variables[v].replica_of = find_variable(g, name + len + 1);
  }
}

/* Sums parts[0..n-1] (parts[k] on devices[k]) in a fixed order into
 * sums[k] for each tower, all bitwise the same.
 * ring: accumulate along the ring 0 -> 1 -> ... -> n-1;
 * tree: add pairs, then pairs of pairs, on the left device of each pair;
 *   (ring and tree leave the sum on one device: every other device reads a
 *   copy of that one tensor)
 * collective: one AllReduce op, each tower's sum on its own device, read
 *   through an Identity that also waits for `backward_done` (see
 *   all_reduce_gradients). */
static void all_reduce(ct_graph *g, int n, const ct_output *parts, char devices[][64],
                       ct_all_reduce_algorithm algorithm, ct_node *backward_done, ct_output *sums) {
  if (n == 1) {
    sums[0] = parts[0];
    return;
  }
  if (algorithm == CT_ALL_REDUCE_COLLECTIVE) {
    ct_graph_push_device(g, devices[0]);
    ct_all_reduce(g, n, parts, sums);
    ct_graph_pop_device(g);
    for (int k = 0; k < n && sums[k].node; ++k) {
      ct_graph_push_device(g, devices[k]);
      sums[k] = ct_identity(g, sums[k]);
      ct_node_add_control_input(sums[k].node, backward_done);
      ct_graph_pop_device(g);
    }
    return;
  }
  if (algorithm == CT_ALL_REDUCE_RING) {
    ct_output acc = parts[0];
    for (int k = 1; k < n; ++k) {
      ct_graph_push_device(g, devices[k]);
      acc = ct_add(g, acc, parts[k]);
      ct_graph_pop_device(g);
    }
    for (int k = 0; k < n; ++k) sums[k] = acc;
    return;
  }
  ct_output level[CT_MAX_DEVICES] = {{NULL, 0}};
  int where[CT_MAX_DEVICES];
  for (int k = 0; k < n; ++k) level[k] = parts[k], where[k] = k;
  for (int count = n; count > 1; count = (count + 1) / 2) {
    for (int k = 0; k < count / 2; ++k) {
      ct_graph_push_device(g, devices[where[2 * k]]);
      level[k] = ct_add(g, level[2 * k], level[2 * k + 1]);
      ct_graph_pop_device(g);
      where[k] = where[2 * k];
    }
    if (count % 2) level[count / 2] = level[count - 1], where[count / 2] = where[count - 1];
  }
  for (int k = 0; k < n; ++k) sums[k] = level[0];
}

/* Gradients are all-reduced in buckets of about this many floats: small
 * gradients travel together, packed into one flat tensor (as PyTorch's DDP
 * does), and a bucket starts as soon as its last gradient exists, while the
 * backward pass goes on. */
enum { BUCKET_FLOATS = 1 << 20 };
/* At most this many gradients share a bucket (a concat takes up to 63). */
enum { BUCKET_GRADIENTS = 63 };

/* Where the buckets stand while they are built. */
typedef struct bucket_state {
  ct_node *backward_done;   /* collective: the sums are read after it */
  ct_node *last_collective; /* across ranks: the previous bucket's CollectiveReduce */
  int bucket;               /* the next bucket's index */
  ct_tower_graph *to_root;  /* parameter server across ranks: the sums go to rank 0, and
                               the bucket's variables are listed as shared here */
} bucket_state;

/* One all-reduce of `count` originals' gradients: grads[copies[m * towers + k]]
 * is original m's gradient on tower k. Every copy then reads the same sum. */
static void all_reduce_bucket(ct_graph *g, const ct_tower_options *o, int count, const int *copies,
                              const int *variables, ct_output *grads, bucket_state *st) {
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
  ct_output sums[CT_MAX_DEVICES];
  all_reduce(g, towers, packed, devices, o->all_reduce, backward_done, sums);
  /* across ranks: one CollectiveReduce of this process's sum (to rank 0
   * for the parameter server), which every tower then reads; each bucket's
   * after the previous one's, so that every rank runs them in the same
   * order */
  const int across = o->across_ranks;
  if (across) {
    ct_graph_push_device(g, devices[0]);
    const ct_output total = st->to_root ? ct_collective_reduce_to(g, sums[0], CT_PS_RANK, bucket)
                                        : ct_collective_reduce(g, sums[0], bucket);
    ct_graph_pop_device(g);
    if (total.node && st->last_collective)
      ct_node_add_control_input(total.node, st->last_collective);
    st->last_collective = total.node;
    for (int k = 0; k < towers; ++k) sums[k] = total;
  }
  for (int m = 0; st->to_root && m < count; ++m) {
    ct_tower_graph *t = st->to_root;
    t->shared[t->n_shared] = variables[copies[m * towers]];
    t->shared_bucket[t->n_shared++] = bucket;
  }
  if (count == 1) {
    for (int k = 0; k < towers; ++k) grads[copies[k]] = sums[k];
  } else { /* unpack: slices shaped like tower 0's flat gradients, then the variables' shapes */
    /* one unpack of the one sum, or (collective) one per tower beside its own sum */
    const int per_tower = o->all_reduce == CT_ALL_REDUCE_COLLECTIVE && !across;
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
static void all_reduce_gradients(ct_graph *g, const ct_tower_options *o, int n,
                                 const int *variables, ct_output *grads, bucket_state *st) {
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

/* Records an INVALID_ARGUMENT in the graph for options or a model
 * description that cannot be built; returns 1 then. */
static int check_towers(ct_graph *g, const ct_tower_model *model, const ct_tower_options *o) {
  if (o->n_towers < 1 || o->n_towers > CT_MAX_DEVICES) {
    ct_graph_set_error(g, CT_INVALID_ARGUMENT, "the number of towers must be 1 to %d, got %d",
                       CT_MAX_DEVICES, o->n_towers);
    return 1;
  }
  if (o->variable_update != CT_VARIABLE_UPDATE_PARAMETER_SERVER &&
      o->variable_update != CT_VARIABLE_UPDATE_REPLICATED) {
    ct_graph_set_error(g, CT_INVALID_ARGUMENT,
                       "unknown variable update %d; use "
                       "CT_VARIABLE_UPDATE_PARAMETER_SERVER or CT_VARIABLE_UPDATE_REPLICATED",
                       (int)o->variable_update);
    return 1;
  }
  if (o->all_reduce != CT_ALL_REDUCE_RING && o->all_reduce != CT_ALL_REDUCE_TREE &&
      o->all_reduce != CT_ALL_REDUCE_COLLECTIVE) {
    ct_graph_set_error(g, CT_INVALID_ARGUMENT,
                       "unknown all-reduce algorithm %d; use "
                       "CT_ALL_REDUCE_RING, CT_ALL_REDUCE_TREE or CT_ALL_REDUCE_COLLECTIVE",
                       (int)o->all_reduce);
    return 1;
  }
  for (int a = 0; a < o->n_towers; ++a)
    for (int b = a + 1; b < o->n_towers; ++b)
      if (strcmp(o->devices[a], o->devices[b]) == 0) {
        ct_graph_set_error(g, CT_INVALID_ARGUMENT,
                           "towers %d and %d are both on '%s'; give each tower its own device", a,
                           b, o->devices[a]);
        return 1;
      }
  if (model->loss == NULL || model->n_inputs < 1 || model->n_inputs > CT_TOWER_MAX_INPUTS) {
    ct_graph_set_error(g, CT_INVALID_ARGUMENT,
                       "a tower model needs a loss function and 1 to %d inputs, got %d inputs%s",
                       CT_TOWER_MAX_INPUTS, model->n_inputs,
                       model->loss == NULL ? " and no loss function" : "");
    return 1;
  }
  for (int i = 0; i < model->n_inputs; ++i) {
    const ct_tower_input *in = &model->inputs[i];
    if (in->name == NULL || in->shape.rank < 0 || in->shape.rank >= CT_MAX_RANK) {
      ct_graph_set_error(g, CT_INVALID_ARGUMENT,
                         "tower input %d needs a name and an example shape of rank 0 to %d", i,
                         CT_MAX_RANK - 1);
      return 1;
    }
  }
  return 0;
}

/* [-1, example shape...]: a batch of any size. */
static ct_shape batch_shape(const ct_shape *example) {
  ct_shape s = {example->rank + 1, {-1}};
  for (int d = 0; d < example->rank; ++d) s.dims[d + 1] = example->dims[d];
  return s;
}

int ct_towers_build(ct_graph *g, const ct_tower_model *model, const ct_tower_options *o,
                    ct_tower_graph *out) {
  memset(out, 0, sizeof *out);
  if (check_towers(g, model, o)) return 1;
  const int replicated = o->variable_update == CT_VARIABLE_UPDATE_REPLICATED;
  out->n_towers = o->n_towers;
  out->n_inputs = model->n_inputs;
  ct_output losses[CT_MAX_DEVICES];
  if (!replicated) ct_graph_push_variable_device(g, o->ps_device);
  for (int k = 0; k < o->n_towers; ++k) {
    char scope[32];
    snprintf(scope, sizeof scope, "tower_%d", k);
    ct_tower *t = &out->towers[k];
    int first_variable = g->n_variables;
    ct_graph_push_device(g, o->devices[k]);
    ct_graph_push_name_scope(g, scope);
    /* replicated: tower k's own copies; else every tower reads tower 0's */
    if (replicated && k > 0) ct_graph_push_variable_scope(g, scope);
    if (!replicated && k > 0) ct_graph_push_variable_reuse(g);
    for (int i = 0; i < model->n_inputs; ++i)
      t->inputs[i] = ct_placeholder(g, model->inputs[i].name, model->inputs[i].dtype,
                                    batch_shape(&model->inputs[i].shape));
    t->weights = ct_placeholder(g, "weights", CT_F32, ct_shape_of(1, (int64_t)-1));
    t->first_example = ct_placeholder(g, "first_example", CT_I64, ct_shape_of(0));
    ct_graph_set_replica(g, scope, t->first_example); /* the same dropout masks on any split */
    ct_output example_losses = model->loss(g, k, t->inputs, model->user_data);
    ct_graph_set_replica(g, NULL, ct_out(NULL, 0));
    if (example_losses.node == NULL && g->status.code == CT_OK)
      ct_graph_set_error(g, CT_INVALID_ARGUMENT, "the model's loss function built no output");
    losses[k] = ct_reduce_sum(g, ct_mul(g, example_losses, t->weights), 0, 0);
    if (replicated && k > 0) {
      ct_graph_pop_variable_scope(g);
      if (g->status.code == CT_OK) link_replicas(g, first_variable, scope);
    }
    if (!replicated && k > 0) ct_graph_pop_variable_reuse(g);
    ct_graph_pop_name_scope(g);
    ct_graph_pop_device(g);
    if (g->status.code != CT_OK) {
      if (!replicated) ct_graph_pop_variable_device(g);
      ct_graph_prefix_error(g, "building tower %d on %s: ", k, o->devices[k]);
      return 1;
    }
  }
  if (!replicated) ct_graph_pop_variable_device(g);
  ct_graph_push_device(g, replicated ? o->devices[0] : o->ps_device);
  out->loss = ct_add_n(g, o->n_towers, losses);
  ct_graph_pop_device(g);

  out->variables = malloc((size_t)(g->n_variables + 1) * sizeof *out->variables);
  out->gradients = malloc((size_t)(g->n_variables + 1) * sizeof *out->gradients);
  if (out->variables == NULL || out->gradients == NULL) {
    ct_graph_set_error(g, CT_RESOURCE_EXHAUSTED, "out of memory building the towers");
    return 1;
  }
  if (ct_variable_gradients(g, out->loss, out->variables, out->gradients, &out->n_gradients) == 0 &&
      ((replicated && o->n_towers > 1) || o->across_ranks)) {
    /* parameter server across ranks: each rank's sum beside the variable,
     * sent to rank 0 in buckets, summed there as one tower's would be;
     * rank 0 alone applies the update, and ct_towers_share_variables
     * brings the variables back to every rank */
    ct_tower_options summed = *o;
    summed.n_towers = replicated ? o->n_towers : 1;
    bucket_state st = {NULL, NULL, 0, NULL};
    if (!replicated && ct_ps_listing_init(g, out) == 0) st.to_root = out;
    all_reduce_gradients(g, &summed, out->n_gradients, out->variables, out->gradients, &st);
    if (st.to_root) ct_ps_listing_finish(g, out, st.bucket, st.last_collective);
  }
  return g->status.code != CT_OK;
}

void ct_towers_free(ct_tower_graph *t) {
  free(t->variables);
  free(t->gradients);
  free(t->shared);
  free(t->shared_bucket);
  t->variables = NULL;
  t->gradients = NULL;
  t->shared = t->shared_bucket = NULL;
  t->n_gradients = t->n_shared = 0;
}

void ct_towers_split(int n_towers, int64_t n, const double *speeds, int64_t *sizes) {
  if (speeds == NULL || n < n_towers) { /* even: the first n % N towers take one more */
    for (int k = 0; k < n_towers; ++k) sizes[k] = n / n_towers + (k < n % n_towers);
    return;
  }
  /* One example each, the rest by the largest remainder of the speed shares. */
  double total = 0;
  for (int k = 0; k < n_towers; ++k) total += speeds[k] > 0 ? speeds[k] : 0;
  int64_t rest = n - n_towers, given = 0;
  double remainder[CT_MAX_DEVICES];
  for (int k = 0; k < n_towers; ++k) {
    double share = total > 0 ? (double)rest * (speeds[k] > 0 ? speeds[k] : 0) / total
                             : (double)rest / n_towers;
    sizes[k] = 1 + (int64_t)share;
    remainder[k] = share - (double)(int64_t)share;
    given += sizes[k];
  }
  while (given < n) { /* hand out what rounding left, largest remainder first */
    int best = 0;
    for (int k = 1; k < n_towers; ++k)
      if (remainder[k] > remainder[best]) best = k;
    sizes[best]++, given++;
    remainder[best] = -1;
  }
}

int ct_towers_make_feeds(const ct_tower_graph *t, const ct_tensor *const *batch, int64_t n,
                         const int64_t *sizes, const ct_batch_share *share, ct_tower_feeds *out,
                         float *weights) {
  const int towers = t->n_towers, inputs = t->n_inputs;
  int64_t even[CT_MAX_DEVICES];
  if (sizes == NULL) {
    ct_towers_split(towers, n, NULL, even);
    sizes = even;
  }
  const ct_batch_share all = {n, 0};
  if (share == NULL) share = &all;
  const float weight = share->total > 0 ? 1.0f / (float)share->total : 0.0f;
  int64_t start = 0;
  ct_feed *f = out->feeds;
  ct_tensor *v = out->views;
  for (int k = 0; k < towers; ++k) {
    int64_t size = sizes[k];
    float *w = weights + start + k; /* each tower's weights, one spare slot for padding */
    int64_t first = start;
    if (size == 0) { /* padding: example 0 with weight 0 */
      first = 0;
      w[0] = 0.0f;
    } else {
      for (int64_t i = 0; i < size; ++i) w[i] = weight;
    }
    int64_t rows = size ? size : 1;
    for (int i = 0; i < inputs; ++i) {
      *v = ct_tensor_rows(batch[i], first, rows);
      *f++ = (ct_feed){t->towers[k].inputs[i], v++};
    }
    *v = (ct_tensor){CT_F32, ct_shape_of(1, rows), w, 0};
    *f++ = (ct_feed){t->towers[k].weights, v++};
    out->first_example[k] = share->first + first;
    *v = (ct_tensor){CT_I64, ct_shape_of(0), &out->first_example[k], 0};
    *f++ = (ct_feed){t->towers[k].first_example, v++};
    start += size;
  }
  out->n_feeds = (int)(f - out->feeds);
  return out->n_feeds;
}

ct_tensor *ct_towers_concat(int n_towers, ct_tensor *const *parts, const int64_t *sizes,
                            ct_status *status) {
  int64_t rows = 0;
  for (int k = 0; k < n_towers; ++k) {
    if (sizes[k] > parts[k]->shape.dims[0] || parts[k]->shape.rank < 1 ||
        parts[k]->dtype != parts[0]->dtype) {
      ct_status_set(status, CT_INVALID_ARGUMENT,
                    "tower %d's output does not match its shard of %lld examples", k,
                    (long long)sizes[k]);
      return NULL;
    }
    rows += sizes[k];
  }
  ct_shape shape = parts[0]->shape;
  shape.dims[0] = rows;
  ct_tensor *out = ct_tensor_new(parts[0]->dtype, &shape, status);
  if (out == NULL) return NULL;
  size_t row_bytes = ct_dtype_size(out->dtype);
  for (int d = 1; d < shape.rank; ++d) row_bytes *= (size_t)shape.dims[d];
  char *dst = out->data;
  for (int k = 0; k < n_towers; ++k) { /* a padding row (size 0) is left out */
    memcpy(dst, parts[k]->data, (size_t)sizes[k] * row_bytes);
    dst += (size_t)sizes[k] * row_bytes;
  }
  return out;
}
