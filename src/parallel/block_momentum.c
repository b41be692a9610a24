/* Block momentum (BMUF: Chen and Huo, "Scalable training of deep learning
 * machines by incremental block training with intra-block parallel
 * optimization and blockwise model-update filtering", ICASSP 2016), as
 * CNTK trains with it: every tower of the job is a learner with its own
 * copy of the variables, updated for block_steps (K) steps by its own
 * gradient alone, the mean of its shard of each batch (the graph: no
 * exchange, the gradient scaled by the number of learners N). Then the
 * block ends: the copies of every tower and rank are averaged (a sum in
 * the process in tower order, one all-reduce of them all across the ranks,
 * divided by N), and the trainable variables take a step of block-level
 * momentum with Nesterov's look-ahead:
 *   G = mean - start          (what the block learned, from where it began)
 *   D = eta D + G             (block momentum; the block learning rate is 1)
 *   W = W + D                 (the global model)
 *   start = W + eta D         (where every learner begins the next block)
 * The other variables (batch norm's moving averages) and the optimizer's
 * slots begin the next block from their average, so every replica holds
 * the same values after it. A block also ends with each epoch (before the
 * evaluation), as CNTK's does. W and D are the strategy's own, saved in
 * the checkpoint (block_momentum/global/<name>, block_momentum/delta/<name>);
 * inside a block the replicas differ, and a checkpoint then keeps every
 * rank's (the trainer's replica_<r>/ entries), so --resume goes on
 * exactly. Every float is computed in one order on every rank: bitwise
 * the same replicas after each block, and the same run twice. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/communication.h"
#include "core/clock.h"
#include "graph/graph_internal.h"
#include "parallel/parallel_internal.h"

/* Every copy learns from its own tower's gradient, as the mean of its
 * shard: the towers weight each example by 1 / (the global batch), so a
 * tower's gradient times the number of learners is the mean over its own
 * share (even splits). */
static void build_exchange(ct_graph *g, const ct_tower_options *o, ct_tower_graph *t) {
  const int learners = o->job_towers > 0 ? o->job_towers : o->n_towers;
  if (learners == 1) return;
  for (int i = 0; i < t->n_gradients && g->status.code == CT_OK; ++i) {
    ct_graph_push_device(g, g->variables[t->variables[i]].device);
    t->gradients[i] = ct_mul(g, t->gradients[i], ct_scalar(g, (float)learners));
    ct_graph_pop_device(g);
  }
}

static int learners_of(const ct_tower_options *o) {
  return o->job_towers > 0 ? o->job_towers : o->n_towers;
}

static float momentum_of(const ct_tower_options *o) {
  return o->block_momentum >= 0 ? o->block_momentum : 1.0f - 1.0f / (float)learners_of(o);
}

static void describe(const ct_tower_options *o, char *buf, size_t size) {
  snprintf(buf, size, "%d tower%s (block momentum: %lld local steps a block, eta %g)", o->n_towers,
           o->n_towers == 1 ? "" : "s", (long long)o->block_steps, (double)momentum_of(o));
}

typedef struct block_state {
  ct_strategy_env env;
  int towers, learners;
  float eta;
  int64_t block_steps;
  int n;                   /* variables averaged: the originals (models, moving averages, slots) */
  int *copies;             /* copies[i * towers + k]: tower k's copy of original i (k = 0: it) */
  int *trainable;          /* per original: whether block momentum moves it */
  int64_t *offset;         /* per original: where its floats begin in the buffers */
  int64_t floats;
  float *mean;             /* the replicas' mean, then where the next block begins */
  float *global, *delta;   /* W and D, of the trainable originals (at their offsets) */
  int64_t since_sync;      /* steps of the block under way */
  int64_t blocks;
  double sync_s;           /* spent averaging */
} block_state;

static int out_of_memory(ct_status *status) {
  ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory for block momentum");
  return 1;
}

/* Reads variable v into out (its floats). */
static int read_into(const block_state *b, int v, float *out, ct_status *status) {
  ct_tensor *value = ct_session_read_variable(b->env.session, v, status);
  if (value == NULL) return 1;
  memcpy(out, value->data, ct_tensor_nbytes(value));
  ct_tensor_free(value);
  return 0;
}

static int run_new(const ct_strategy_env *env, void **state, ct_status *status) {
  block_state *b = calloc(1, sizeof *b);
  *state = b;
  if (b == NULL) return out_of_memory(status);
  b->env = *env;
  const ct_graph *g = env->graph;
  b->towers = env->options->n_towers;
  b->learners = learners_of(env->options);
  b->eta = momentum_of(env->options);
  b->block_steps = env->options->block_steps > 0 ? env->options->block_steps : 1;
  const int variables = ct_graph_variable_count(g);
  b->copies = malloc((size_t)(variables * b->towers + 1) * sizeof *b->copies);
  b->trainable = malloc((size_t)(variables + 1) * sizeof *b->trainable);
  b->offset = malloc((size_t)(variables + 1) * sizeof *b->offset);
  if (!b->copies || !b->trainable || !b->offset) return out_of_memory(status);
  for (int v = 0; v < variables; ++v) {
    if (g->variables[v].replica_of >= 0) continue;
    int *row = b->copies + b->n * b->towers, k = 1;
    row[0] = v;
    for (int c = 0; c < variables && k < b->towers; ++c) /* copies come in tower order */
      if (g->variables[c].replica_of == v) row[k++] = c;
    if (k != b->towers) {
      ct_status_set(status, CT_INTERNAL, "variable '%s' has %d copies for %d towers",
                    g->variables[v].name, k, b->towers);
      return 1;
    }
    b->trainable[b->n] = g->variables[v].trainable;
    b->offset[b->n] = b->floats;
    b->floats += ct_shape_elements(&g->variables[v].shape);
    b->n++;
  }
  b->mean = malloc((size_t)b->floats * sizeof *b->mean + 1);
  b->global = malloc((size_t)b->floats * sizeof *b->global + 1);
  b->delta = calloc((size_t)b->floats + 1, sizeof *b->delta);
  if (!b->mean || !b->global || !b->delta) return out_of_memory(status);
  for (int i = 0; i < b->n; ++i) /* W begins as the model, every replica's */
    if (read_into(b, b->copies[i * b->towers], b->global + b->offset[i], status)) return 1;
  return 0;
}

static void run_free(void *state) {
  block_state *b = state;
  if (b == NULL) return;
  free(b->copies), free(b->trainable), free(b->offset);
  free(b->mean), free(b->global), free(b->delta);
  free(b);
}

/* The end of a block: every replica averaged, block momentum applied to
 * the trainable variables, and every copy set to where the next block
 * begins. */
static int end_block(block_state *b, int64_t step, ct_status *status) {
  const double start = ct_monotonic_seconds();
  const ct_graph *g = b->env.graph;
  float *part = NULL;
  for (int i = 0; i < b->n; ++i) { /* this process's towers, summed in tower order */
    float *sum = b->mean + b->offset[i];
    const int64_t count = ct_shape_elements(&g->variables[b->copies[i * b->towers]].shape);
    if (read_into(b, b->copies[i * b->towers], sum, status)) return 1;
    if (b->towers > 1 && part == NULL && (part = malloc((size_t)b->floats * sizeof *part)) == NULL)
      return out_of_memory(status);
    for (int k = 1; k < b->towers; ++k) {
      if (read_into(b, b->copies[i * b->towers + k], part, status)) {
        free(part);
        return 1;
      }
      for (int64_t j = 0; j < count; ++j) sum[j] += part[j];
    }
  }
  free(part);
  if (b->env.options->across_ranks) { /* one all-reduce of every rank's sums */
    ct_cluster_progress(step, -1, "block momentum's average");
    if (ct_cluster_allreduce_f32(b->mean, b->floats, status)) return 1;
  }
  const float learners = (float)b->learners, eta = b->eta;
  for (int i = 0; i < b->n; ++i) {
    const int64_t first = b->offset[i];
    const int64_t end = i + 1 < b->n ? b->offset[i + 1] : b->floats;
    for (int64_t j = first; j < end; ++j) {
      const float mean = b->mean[j] / learners;
      if (!b->trainable[i]) { /* moving averages and slots: their mean */
        b->mean[j] = mean;
        continue;
      }
      const float begun = b->global[j] + eta * b->delta[j];
      b->delta[j] = eta * b->delta[j] + (mean - begun);
      b->global[j] += b->delta[j];
      b->mean[j] = b->global[j] + eta * b->delta[j];
    }
  }
  for (int i = 0; i < b->n; ++i) {
    const int v = b->copies[i * b->towers];
    ct_tensor value = {CT_F32, g->variables[v].shape, b->mean + b->offset[i], 0};
    for (int k = 0; k < b->towers; ++k)
      if (ct_session_assign_variable(b->env.session, b->copies[i * b->towers + k], &value, status))
        return 1;
  }
  b->since_sync = 0;
  b->blocks++;
  b->sync_s += ct_monotonic_seconds() - start;
  return 0;
}

static int after_run(void *state, ct_strategy_step *s, ct_status *status) {
  block_state *b = state;
  return ++b->since_sync == b->block_steps ? end_block(b, s->step, status) : 0;
}

/* A block ends with the epoch (not when training stops inside one: the
 * run that goes on from its checkpoint goes on with the block). */
static int end_epoch(void *state, ct_strategy_step *s, ct_status *status) {
  block_state *b = state;
  return s->epoch_done && b->since_sync > 0 ? end_block(b, -1, status) : 0;
}

static int replicas_differ(const void *state) {
  return ((const block_state *)state)->since_sync > 0;
}

/* "block_momentum/global/<name>" or ".../delta/<name>" of original i. */
static void state_name(const block_state *b, const char *what, int i, char *buf, size_t size) {
  snprintf(buf, size, "block_momentum/%s/%s", what,
           ct_graph_variable_name(b->env.graph, b->copies[i * b->towers]));
}

static int save(void *state, ct_strategy_add_fn add, void *sink, ct_status *status) {
  block_state *b = state;
  for (int i = 0; i < b->n; ++i) {
    if (!b->trainable[i]) continue;
    const ct_shape shape = ct_graph_variable_shape(b->env.graph, b->copies[i * b->towers]);
    char name[300];
    ct_tensor global = {CT_F32, shape, b->global + b->offset[i], 0};
    ct_tensor delta = {CT_F32, shape, b->delta + b->offset[i], 0};
    state_name(b, "global", i, name, sizeof name);
    if (add(sink, name, &global, status)) return 1;
    state_name(b, "delta", i, name, sizeof name);
    if (add(sink, name, &delta, status)) return 1;
  }
  return 0;
}

static int restore(void *state, ct_strategy_find_fn find, void *source, int64_t epoch_step,
                   ct_status *status) {
  block_state *b = state;
  int missing = 0;
  for (int i = 0; i < b->n; ++i) {
    if (!b->trainable[i]) continue;
    const int64_t count = ct_shape_elements(&b->env.graph->variables[b->copies[i * b->towers]].shape);
    char name[300];
    const ct_tensor *saved[2];
    state_name(b, "global", i, name, sizeof name);
    saved[0] = find(source, name);
    state_name(b, "delta", i, name, sizeof name);
    saved[1] = find(source, name);
    if (saved[0] == NULL || saved[1] == NULL || ct_tensor_elements(saved[0]) != count ||
        ct_tensor_elements(saved[1]) != count) {
      /* none: the block begins from the restored model, without momentum */
      if (read_into(b, b->copies[i * b->towers], b->global + b->offset[i], status)) return 1;
      memset(b->delta + b->offset[i], 0, (size_t)count * sizeof *b->delta);
      missing++;
      continue;
    }
    memcpy(b->global + b->offset[i], saved[0]->data, (size_t)count * sizeof(float));
    memcpy(b->delta + b->offset[i], saved[1]->data, (size_t)count * sizeof(float));
  }
  if (missing)
    fprintf(stderr,
            "%sctower: note: the checkpoint holds no block momentum for %d variable%s: their "
            "block momentum starts afresh from the restored model\n",
            ct_cluster_log_prefix(), missing, missing == 1 ? "" : "s");
  b->since_sync = epoch_step % b->block_steps;
  return 0;
}

static int report(void *state, ct_status *status) {
  (void)status;
  const block_state *b = state;
  if (ct_cluster_rank() == 0)
    printf("block momentum: %lld blocks of up to %lld local steps, %d learners, eta %g; %.3f MB "
           "averaged a block (%.1f ms each)\n",
           (long long)b->blocks, (long long)b->block_steps, b->learners, (double)b->eta,
           (double)b->floats * sizeof(float) / 1e6,
           b->blocks ? 1e3 * b->sync_s / (double)b->blocks : 0.0);
  return 0;
}

const ct_strategy ct_strategy_block_momentum = {
    .name = "block_momentum",
    .build_exchange = build_exchange,
    .describe = describe,
    .run_new = run_new,
    .run_free = run_free,
    .after_run = after_run,
    .end_epoch = end_epoch,
    .report = report,
    .replicas_differ = replicas_differ,
    .save = save,
    .restore = restore,
};
