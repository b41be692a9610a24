/* Towers: replication of a model on N devices, the batch-weighted loss and
 * its gradients, handed to the strategy of the variable update (its
 * table: strategy.h) for the step's exchange. */
#include "ctower/towers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph_internal.h"
#include "parallel/parallel_internal.h"

void ct_tower_options_defaults(ct_tower_options *o) {
  memset(o, 0, sizeof *o);
  o->n_towers = 1;
  snprintf(o->devices[0], sizeof o->devices[0], "/cpu:0");
  o->variable_update = CT_VARIABLE_UPDATE_PARAMETER_SERVER;
  snprintf(o->ps_device, sizeof o->ps_device, "/cpu:0");
  o->all_reduce = CT_ALL_REDUCE_RING;
  o->ps_task = -1;
  o->max_staleness = -1;
  o->block_steps = 8;
  o->block_momentum = -1.0f;
}

/* Whether specs a and b name one device: the same type and index, and
 * the same job, replica and task where both name one. */
static int same_device(const char *a, const char *b) {
  ct_device_spec x, y;
  if (ct_device_spec_parse(a, &x, NULL) || ct_device_spec_parse(b, &y, NULL))
    return strcmp(a, b) == 0;
  return x.kind == y.kind && x.has_id == y.has_id && x.id == y.id &&
         (!x.has_job || !y.has_job || strcmp(x.job, y.job) == 0) &&
         (!x.has_replica || !y.has_replica || x.replica == y.replica) &&
         (!x.has_task || !y.has_task || x.task == y.task);
}

int ct_tower_devices_repeat(const ct_tower_options *o, int *a, int *b) {
  for (*a = 0; *a < o->n_towers; ++*a)
    for (*b = *a + 1; *b < o->n_towers; ++*b)
      if (same_device(o->devices[*a], o->devices[*b])) return 1;
  return 0;
}

int ct_variable_is_original(const ct_graph *g, int index) {
  return g->variables[index].replica_of < 0;
}

const char *ct_variable_checkpoint_name(const ct_graph *g, int index) {
  int original = g->variables[index].replica_of;
  return g->variables[original >= 0 ? original : index].name;
}

int ct_variable_tower(const ct_graph *g, int index) {
  int k = 0;
  if (g->variables[index].replica_of >= 0 && sscanf(g->variables[index].name, "tower_%d/", &k) != 1)
    k = 0;
  return k;
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

/* Records an INVALID_ARGUMENT in the graph for options or a model
 * description that cannot be built; returns 1 then. */
static int check_towers(ct_graph *g, const ct_tower_model *model, const ct_tower_options *o) {
  if (o->n_towers < 1 || o->n_towers > CT_MAX_DEVICES) {
    ct_graph_set_error(g, CT_INVALID_ARGUMENT, "the number of towers must be 1 to %d, got %d",
                       CT_MAX_DEVICES, o->n_towers);
    return 1;
  }
  if (ct_strategy_of(o->variable_update) == NULL) {
    ct_graph_set_error(g, CT_INVALID_ARGUMENT,
                       "unknown variable update %d; use CT_VARIABLE_UPDATE_PARAMETER_SERVER, "
                       "CT_VARIABLE_UPDATE_REPLICATED, CT_VARIABLE_UPDATE_PS_TASKS, "
                       "CT_VARIABLE_UPDATE_ASYNC or CT_VARIABLE_UPDATE_BLOCK_MOMENTUM",
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
  int a, b;
  if (ct_tower_devices_repeat(o, &a, &b)) {
    ct_graph_set_error(g, CT_INVALID_ARGUMENT,
                       "towers %d and %d are both on '%s'%s%s%s; give each tower its own device",
                       a, b, o->devices[a], strcmp(o->devices[a], o->devices[b]) ? " ('" : "",
                       strcmp(o->devices[a], o->devices[b]) ? o->devices[b] : "",
                       strcmp(o->devices[a], o->devices[b]) ? "' is the same device)" : "");
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
  const ct_strategy *strategy = ct_strategy_of(o->variable_update);
  const int own_copies = !strategy->one_copy;
  out->variable_update = o->variable_update;
  out->n_towers = o->n_towers;
  out->n_inputs = model->n_inputs;
  ct_output losses[CT_MAX_DEVICES];
  if (!own_copies) ct_graph_push_variable_device(g, o->ps_device);
  for (int k = 0; k < o->n_towers; ++k) {
    char scope[32];
    snprintf(scope, sizeof scope, "tower_%d", k);
    ct_tower *t = &out->towers[k];
    int first_variable = g->n_variables;
    ct_graph_push_device(g, o->devices[k]);
    ct_graph_push_name_scope(g, scope);
    /* tower k's own copies (replicated), or tower 0's read by every tower */
    if (own_copies && k > 0) ct_graph_push_variable_scope(g, scope);
    if (!own_copies && k > 0) ct_graph_push_variable_reuse(g);
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
    if (own_copies && k > 0) {
      ct_graph_pop_variable_scope(g);
      if (g->status.code == CT_OK) link_replicas(g, first_variable, scope);
    }
    if (!own_copies && k > 0) ct_graph_pop_variable_reuse(g);
    ct_graph_pop_name_scope(g);
    ct_graph_pop_device(g);
    if (g->status.code != CT_OK) {
      if (!own_copies) ct_graph_pop_variable_device(g);
      ct_graph_prefix_error(g, "building tower %d on %s: ", k, o->devices[k]);
      return 1;
    }
  }
  if (!own_copies) ct_graph_pop_variable_device(g);
  ct_graph_push_device(g, own_copies ? o->devices[0] : o->ps_device);
  out->loss = ct_add_n(g, o->n_towers, losses);
  ct_graph_pop_device(g);

  out->variables = malloc((size_t)(g->n_variables + 1) * sizeof *out->variables);
  out->gradients = malloc((size_t)(g->n_variables + 1) * sizeof *out->gradients);
  if (out->variables == NULL || out->gradients == NULL) {
    ct_graph_set_error(g, CT_RESOURCE_EXHAUSTED, "out of memory building the towers");
    return 1;
  }
  if (ct_variable_gradients(g, out->loss, out->variables, out->gradients, &out->n_gradients) == 0 &&
      strategy->build_exchange)
    strategy->build_exchange(g, o, out);
  return g->status.code != CT_OK;
}

ct_node *ct_towers_after_update(ct_graph *g, const ct_tower_graph *t) {
  const ct_strategy *strategy = ct_strategy_of(t->variable_update);
  if (strategy == NULL || strategy->build_after_update == NULL || g->status.code != CT_OK)
    return NULL;
  return strategy->build_after_update(g, t);
}

int ct_towers_is_local(const ct_tower_graph *t, int variable) {
  for (int i = 0; i < t->n_local; ++i)
    if (t->local[i] == variable) return 1;
  return 0;
}

void ct_towers_free(ct_tower_graph *t) {
  free(t->variables);
  free(t->gradients);
  free(t->shared);
  free(t->shared_bucket);
  free(t->local);
  t->variables = NULL;
  t->gradients = NULL;
  t->shared = t->shared_bucket = t->local = NULL;
  t->n_gradients = t->n_shared = t->n_local = 0;
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
