/* The parameter server on ps tasks (cluster: {ps: P, worker: W}), as
 * TensorFlow's between-graph replication over ps and worker jobs: every
 * rank builds the same one-process parameter-server graph; the workers run
 * its towers on their shards of each global batch and send the gradients;
 * the ps tasks hold the variables (each on one of them: ps_device's task,
 * or spread by bytes), apply the updates, hold the optimizer's slots and
 * send the variables back.
 *
 * Sync updates (this file's strategy): a ps task waits for every worker's
 * gradients of the step, sums them in worker order and applies the sum
 * once, as SyncReplicasOptimizer does: the weights of one process with the
 * same towers. async.c applies each as it arrives, with what this file's
 * functions give it.
 *
 * Messages: a worker's to ps task p are a header (step, rate, loss, correct
 * count, interrupt) and p's gradients in order; p answers with a header
 * (stop) and the values of those variables. */
#include "parallel/ps_tasks.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"

static int out_of_memory(ct_status *status) {
  ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory setting up the ps tasks");
  return 1;
}

/* count messages into *m, message i of floats[i] floats (floats[0] for
 * every one when `each` is 0). Returns 1 when out of memory. */
static int alloc_messages(ct_ps_message **m, int count, const int64_t *floats, int each) {
  *m = calloc((size_t)count, sizeof **m);
  for (int i = 0; *m && i < count; ++i) {
    (*m)[i].size = CT_PS_HEADER_BYTES + (size_t)floats[each ? i : 0] * sizeof(float);
    if (((*m)[i].bytes = calloc(1, (*m)[i].size)) == NULL) return 1;
  }
  return *m == NULL;
}

static void free_messages(ct_ps_message *m, int count) {
  for (int i = 0; m && i < count; ++i) free(m[i].bytes);
  free(m);
}

/* Which ps task holds each gradient's variable: ps_device's task, or, as
 * tf_cnn_benchmarks' greedy strategy, the one with the fewest bytes so
 * far, in the order of the gradients. Slots go with their variable; the
 * other variables (moving averages) are the first worker's. */
static void assign_owners(ct_ps_tasks *c) {
  const ct_tower_graph *t = c->env.towers;
  const ct_graph *g = c->env.graph;
  const int fixed = c->env.options->ps_task;
  for (int i = 0; i < c->n; ++i) {
    const ct_shape shape = ct_graph_variable_shape(g, t->variables[i]);
    int best = fixed >= 0 && fixed < c->ps ? fixed : 0;
    for (int p = 1; fixed < 0 && p < c->ps; ++p)
      if (c->floats[p] < c->floats[best]) best = p;
    c->owner[i] = best;
    c->offset[i] = c->floats[best];
    c->floats[best] += ct_shape_elements(&shape);
  }
  const int variables = ct_graph_variable_count(g);
  for (int v = 0; v < variables; ++v) c->variable_owner[v] = c->ps; /* the first worker */
  for (int i = 0; i < c->n; ++i) c->variable_owner[t->variables[i]] = c->owner[i];
  static const char *const slots[] = {"Momentum", "Adam", "Adam_1"}; /* ctower/optimizer.h */
  for (int v = 0; v < variables; ++v) { /* a slot: "<variable>/Momentum", ... */
    const char *name = ct_graph_variable_name(g, v);
    for (int i = 0; i < c->n; ++i) {
      const char *of = ct_graph_variable_name(g, t->variables[i]);
      const size_t len = strlen(of);
      for (size_t k = 0; k < sizeof slots / sizeof *slots; ++k)
        if (strncmp(name, of, len) == 0 && name[len] == '/' && strcmp(name + len + 1, slots[k]) == 0)
          c->variable_owner[v] = c->owner[i];
    }
  }
}

/* The ps task's feeds (views into the gradients it applies) and targets. */
static int ps_setup(ct_ps_tasks *c, ct_status *status) {
  const ct_tower_graph *t = c->env.towers;
  const ct_node *update = c->env.update;
  if (ct_node_num_control_inputs(update) != c->n) {
    ct_status_set(status, CT_INTERNAL, "the optimizer built %d updates for %d gradients",
                  ct_node_num_control_inputs(update), c->n);
    return 1;
  }
  const size_t floats = (size_t)c->floats[c->task];
  c->n_in = c->async ? 1 : c->workers;
  c->n_out = c->workers;
  c->feeds = calloc((size_t)c->n + 1, sizeof *c->feeds);
  c->views = calloc((size_t)c->n + 1, sizeof *c->views);
  c->targets = calloc((size_t)c->n + 1, sizeof *c->targets);
  c->sum = calloc(floats + 1, sizeof *c->sum);
  c->clock = calloc((size_t)c->workers, sizeof *c->clock);
  c->read_at = calloc((size_t)c->workers, sizeof *c->read_at);
  c->pending = calloc((size_t)c->workers, sizeof *c->pending);
  if (!c->feeds || !c->views || !c->targets || !c->sum || !c->clock || !c->read_at ||
      !c->pending ||
      alloc_messages(&c->in, c->n_in, &c->floats[c->task], 0) ||
      alloc_messages(&c->out, c->n_out, &c->floats[c->task], 0))
    return out_of_memory(status);
  for (int i = 0; i < c->n; ++i) {
    if (c->owner[i] != c->task) continue;
    const int k = c->n_owned++;
    c->views[k] = (ct_tensor){CT_F32, ct_graph_variable_shape(c->env.graph, t->variables[i]),
                              NULL, 0};
    c->feeds[k] = (ct_feed){t->gradients[i], &c->views[k]};
    c->targets[k] = ct_node_control_input(update, i);
  }
  return 0;
}

int ct_ps_tasks_new(const ct_strategy_env *env, int async, void **state, ct_status *status) {
  ct_ps_tasks *c = calloc(1, sizeof *c);
  *state = c;
  if (c == NULL) return out_of_memory(status);
  c->env = *env;
  c->async = async;
  c->ps = ct_cluster_ps_tasks();
  c->workers = ct_cluster_size() - c->ps;
  c->task = ct_cluster_is_ps() ? ct_cluster_task() : -1;
  c->n = env->towers->n_gradients;
  c->owner = calloc((size_t)c->n + 1, sizeof *c->owner);
  c->offset = calloc((size_t)c->n + 1, sizeof *c->offset);
  c->floats = calloc((size_t)c->ps, sizeof *c->floats);
  c->variable_owner = calloc((size_t)ct_graph_variable_count(env->graph) + 1,
                             sizeof *c->variable_owner);
  c->sends = calloc((size_t)(c->ps + c->workers), sizeof *c->sends);
  c->recvs = calloc((size_t)(c->ps + c->workers), sizeof *c->recvs);
  if (!c->owner || !c->offset || !c->floats || !c->variable_owner || !c->sends || !c->recvs)
    return out_of_memory(status);
  assign_owners(c);
  if (c->task >= 0) return ps_setup(c, status);
  /* a worker: one message each way per ps task */
  c->n_in = c->n_out = c->ps;
  if (alloc_messages(&c->out, c->ps, c->floats, 1) || alloc_messages(&c->in, c->ps, c->floats, 1))
    return out_of_memory(status);
  return 0;
}

/* Waits for every request of `requests` (count of them); the first failure
 * into status. Returns 0 or 1. */
static int wait_all(ct_cluster_request *requests, int count, ct_status *status) {
  int failed = 0;
  for (int i = 0; i < count; ++i) {
    ct_status mine = CT_STATUS_INIT;
    if (ct_cluster_wait(&requests[i], NULL, &mine) && !failed) {
      *status = mine;
      failed = 1;
    }
  }
  return failed;
}

void ct_ps_tasks_free(void *state) {
  ct_ps_tasks *c = state;
  if (c == NULL) return;
  ct_status ignored = CT_STATUS_INIT;
  if (c->sends) wait_all(c->sends, c->ps + c->workers, &ignored); /* the last answers */
  if (c->recvs) wait_all(c->recvs, c->ps + c->workers, &ignored);
  free_messages(c->out, c->n_out);
  free_messages(c->in, c->n_in);
  free(c->owner), free(c->offset), free(c->floats), free(c->variable_owner);
  free(c->sends), free(c->recvs);
  free(c->sum), free(c->feeds), free(c->views), free(c->targets);
  free(c->clock), free(c->read_at), free(c->pending);
  free(c);
}

/* ---- a worker ---------------------------------------------------------------- */

/* A worker runs its towers and the model's own updates (moving averages),
 * not the optimizer's: the ps tasks apply those. */
int ct_ps_tasks_targets(const void *state, ct_node **targets, int max) {
  const ct_ps_tasks *c = state;
  int n = 0;
  for (; n < ct_graph_update_op_count(c->env.graph) && n < max; ++n)
    targets[n] = ct_graph_update_op(c->env.graph, n);
  return n;
}

/* ... and fetches the gradients it sends. */
int ct_ps_tasks_fetches(const void *state, ct_output *fetches) {
  const ct_ps_tasks *c = state;
  for (int i = 0; i < c->n; ++i) fetches[i] = c->env.towers->gradients[i];
  return c->n;
}

/* After the run that fetched its gradients: sends them with the step's
 * rate, sums (loss, correct count) and the signal it got to the ps tasks,
 * and assigns the variables they answer with; the job's signal comes back
 * with them. */
int ct_ps_tasks_worker_exchange(void *state, ct_strategy_step *s, ct_status *status) {
  ct_ps_tasks *c = state;
  const ct_tower_graph *t = c->env.towers;
  ct_tensor *const *gradients = s->fetched;
  for (int p = 0; p < c->ps; ++p) {
    double *h = ct_ps_header(&c->out[p]);
    h[CT_PS_H_STEP] = (double)s->step, h[CT_PS_H_RATE] = s->rate, h[CT_PS_H_LOSS] = s->sums[0];
    h[CT_PS_H_CORRECT] = s->sums[1], h[CT_PS_H_INTERRUPT] = s->signal;
  }
  for (int i = 0; i < c->n; ++i)
    memcpy(ct_ps_payload(&c->out[c->owner[i]]) + c->offset[i], gradients[i]->data,
           ct_tensor_nbytes(gradients[i]));
  ct_cluster_progress(s->step, -1, "the ps tasks' answer");
  const double start = ct_monotonic_seconds();
  int failed = 0;
  for (int p = 0; p < c->ps && !failed; ++p)
    failed = ct_cluster_irecv(c->in[p].bytes, c->in[p].size, p, CT_PS_TAG_VARIABLES,
                              &c->recvs[p], status) ||
             ct_cluster_isend(c->out[p].bytes, c->out[p].size, p, CT_PS_TAG_GRADIENTS,
                              &c->sends[p], status);
  failed = wait_all(c->sends, c->ps, failed ? &(ct_status)CT_STATUS_INIT : status) || failed;
  failed = wait_all(c->recvs, c->ps, failed ? &(ct_status)CT_STATUS_INIT : status) || failed;
  if (failed) return 1;
  c->steps++;
  c->compute_s += s->run_seconds;
  c->exchange_s += ct_monotonic_seconds() - start;
  for (int p = 0; p < c->ps; ++p)
    c->bytes_sent += (double)c->out[p].size, c->bytes_received += (double)c->in[p].size;
  s->signal = 0;
  s->stop = 1;
  for (int p = 0; p < c->ps; ++p)
    s->signal =
        c->env.combine_signals(s->signal, (int)ct_ps_header(&c->in[p])[CT_PS_R_STOP]);
  for (int i = 0; i < c->n; ++i) {
    const int v = t->variables[i];
    ct_tensor value = {CT_F32, ct_graph_variable_shape(c->env.graph, v),
                       ct_ps_payload(&c->in[c->owner[i]]) + c->offset[i], 0};
    if (ct_session_assign_variable(c->env.session, v, &value, status)) return 1;
  }
  return 0;
}

/* ---- a ps task ------------------------------------------------------------- */

int ct_ps_tasks_apply(ct_ps_tasks *c, const float *data, double rate, ct_status *status) {
  const double start = ct_monotonic_seconds();
  float lr = (float)rate;
  ct_tensor lr_tensor = {CT_F32, ct_shape_of(0), &lr, 0};
  for (int i = 0, k = 0; i < c->n; ++i)
    if (c->owner[i] == c->task) c->views[k++].data = (void *)(data + c->offset[i]);
  c->feeds[c->n_owned] = (ct_feed){c->env.learning_rate, &lr_tensor};
  if (ct_session_run(c->env.session, c->feeds, c->n_owned + 1, NULL, 0, c->targets, c->n_owned,
                     NULL, status))
    return 1;
  c->applied++;
  c->apply_s += ct_monotonic_seconds() - start;
  return 0;
}

/* The fewest gradients of any worker applied. */
static int64_t fewest_applied(const ct_ps_tasks *c) {
  int64_t fewest = c->clock[0];
  for (int k = 1; k < c->workers; ++k) fewest = c->clock[k] < fewest ? c->clock[k] : fewest;
  return fewest;
}

/* Answers worker w (index among the workers) with this task's variables as
 * they are now. */
static int answer(ct_ps_tasks *c, int w, ct_status *status) {
  const ct_tower_graph *t = c->env.towers;
  const double start = ct_monotonic_seconds();
  if (ct_cluster_wait(&c->sends[w], NULL, status)) return 1; /* its last answer */
  ct_ps_message *m = &c->out[w];
  ct_ps_header(m)[CT_PS_R_STOP] = c->stop;
  for (int i = 0; i < c->n; ++i) {
    if (c->owner[i] != c->task) continue;
    ct_tensor *value = ct_session_read_variable(c->env.session, t->variables[i], status);
    if (value == NULL) return 1;
    memcpy(ct_ps_payload(m) + c->offset[i], value->data, ct_tensor_nbytes(value));
    ct_tensor_free(value);
  }
  /* staleness of this read: the steps it has done less the fewest any
   * worker has had applied */
  const int64_t staleness = c->clock[w] - fewest_applied(c);
  if (staleness > c->max_staleness_seen) c->max_staleness_seen = staleness;
  c->reads++;
  c->read_at[w] = c->applied;
  c->pending[w] = 0;
  c->bytes_sent += (double)m->size;
  c->apply_s += ct_monotonic_seconds() - start;
  return ct_cluster_isend(m->bytes, m->size, c->ps + w, CT_PS_TAG_VARIABLES, &c->sends[w], status);
}

int ct_ps_tasks_answer_allowed(ct_ps_tasks *c, ct_status *status) {
  const int64_t bound = c->async ? c->env.options->max_staleness : 0;
  const int64_t fewest = fewest_applied(c);
  for (int w = 0; w < c->workers; ++w)
    if (c->pending[w] && (bound < 0 || c->clock[w] - fewest <= bound) && answer(c, w, status))
      return 1;
  return 0;
}

int ct_ps_tasks_take_header(ct_ps_tasks *c, const ct_ps_message *m, int w, int64_t step, int sync,
                            double *sums, ct_status *status) {
  const double *h = ct_ps_header(m);
  if (sync && h[CT_PS_H_STEP] != (double)step) {
    ct_status_set(status, CT_INTERNAL,
                  "worker %d sent its gradients of step %.0f while ps task %d waits for step %lld",
                  w, h[CT_PS_H_STEP], c->task, (long long)step);
    return 1;
  }
  sums[0] += h[CT_PS_H_LOSS], sums[1] += h[CT_PS_H_CORRECT];
  /* async: the workers are at different steps; a signal stops the job at
   * the end of the epoch (ct_ps_tasks_end_epoch) */
  if (sync) c->stop = c->env.combine_signals(c->stop, (int)h[CT_PS_H_INTERRUPT]);
  return 0;
}

/* sync: every worker's gradients of the step, summed in worker order and
 * applied once at worker 0's rate. */
static int sync_step(void *state, ct_strategy_step *s, ct_status *status) {
  ct_ps_tasks *c = state;
  const int64_t step = s->step;
  ct_cluster_progress(step, -1, "the workers' gradients");
  int failed = 0;
  for (int w = 0; w < c->workers && !failed; ++w)
    failed = ct_cluster_irecv(c->in[w].bytes, c->in[w].size, c->ps + w, CT_PS_TAG_GRADIENTS,
                              &c->recvs[w], status);
  const double start = ct_monotonic_seconds();
  failed = wait_all(c->recvs, c->workers, failed ? &(ct_status)CT_STATUS_INIT : status) || failed;
  c->wait_s += ct_monotonic_seconds() - start;
  c->bytes_received += (double)c->workers * (double)c->in[0].size;
  const int64_t floats = c->floats[c->task];
  s->sums[0] = s->sums[1] = 0;
  for (int w = 0; w < c->workers && !failed; ++w) {
    failed = ct_ps_tasks_take_header(c, &c->in[w], w, step, 1, s->sums, status);
    const float *g = ct_ps_payload(&c->in[w]);
    if (w == 0) memcpy(c->sum, g, (size_t)floats * sizeof *g);
    for (int64_t j = 0; w > 0 && j < floats; ++j) c->sum[j] += g[j];
  }
  c->stop = c->env.combine_signals(c->stop, s->signal);
  if (failed || ct_ps_tasks_apply(c, c->sum, ct_ps_header(&c->in[0])[CT_PS_H_RATE], status))
    return 1;
  for (int w = 0; w < c->workers; ++w) c->clock[w]++, c->pending[w] = 1;
  if (ct_ps_tasks_answer_allowed(c, status)) return 1;
  c->steps++;
  s->signal = c->stop;
  s->stop = 1;
  return 0;
}

/* ---- every rank -------------------------------------------------------------- */

/* At the end of an epoch, every variable from the rank that holds it, so
 * that every rank evaluates and rank 0 saves the job's model; under async
 * updates, the signals any rank got during the epoch, counted by kind. */
int ct_ps_tasks_end_epoch(void *state, ct_strategy_step *s, ct_status *status) {
  ct_ps_tasks *c = state;
  double asked[2] = {s->signal == SIGINT, s->signal == SIGTERM};
  ct_cluster_progress(-1, -1, "the signals of the epoch");
  if (c->async) {
    if (ct_cluster_allreduce_f64(asked, 2, status)) return 1;
    s->signal = c->env.combine_signals(asked[0] > 0 ? SIGINT : 0, asked[1] > 0 ? SIGTERM : 0);
    s->stop = 1;
  }
  const int rank = ct_cluster_rank();
  for (int v = 0; v < ct_graph_variable_count(c->env.graph); ++v) {
    ct_tensor *value = ct_session_read_variable(c->env.session, v, status);
    if (value == NULL) return 1;
    ct_cluster_progress(-1, -1, "the variables' gathering");
    const int owner = c->variable_owner[v];
    int failed = ct_cluster_broadcast(value->data, ct_tensor_nbytes(value), owner, status) ||
                 (rank != owner && ct_session_assign_variable(c->env.session, v, value, status));
    ct_tensor_free(value);
    if (failed) return 1;
  }
  return 0;
}

void ct_ps_tasks_describe(const ct_tower_options *o, char *buf, size_t size) {
  (void)o;
  const int ps = ct_cluster_ps_tasks();
  snprintf(buf, size, "%d ps task%s and %d workers", ps, ps == 1 ? "" : "s",
           ct_cluster_size() - ps);
}

/* rank 0 is ps task 0: what the job does, not its own unused tower */
void ct_ps_tasks_print_banner(const void *state, int global_towers) {
  const ct_ps_tasks *c = state;
  printf("cluster: %d ps task%s (/job:ps) holding the variables, %d worker%s (/job:worker) "
         "with %d tower%s in all, %s updates\n",
         c->ps, c->ps == 1 ? "" : "s", c->workers, c->workers == 1 ? "" : "s", global_towers,
         global_towers == 1 ? "" : "s", c->async ? "async" : "sync");
  for (int p = 0; p < c->ps; ++p) {
    int count = 0;
    for (int i = 0; i < c->n; ++i) count += c->owner[i] == p;
    printf("%s/job:ps/task:%d holds %d variable%s (%.2f MiB)", p ? ", " : "", p, count,
           count == 1 ? "" : "s", (double)c->floats[p] * sizeof(float) / (1 << 20));
  }
  printf("\n");
}

/* The bytes a task of the job's cluster sends (and receives) per step by the
 * assignment of the variables: a worker a message to each ps task, a ps
 * task one from each worker. */
static double predicted_bytes(const ct_ps_tasks *c, int rank) {
  double bytes = 0;
  for (int p = 0; p < c->ps; ++p)
    if (rank >= c->ps || rank == p)
      bytes += (double)(CT_PS_HEADER_BYTES + (size_t)c->floats[p] * sizeof(float)) *
               (rank >= c->ps ? 1 : c->workers);
  return bytes;
}

enum { R_APPLIED, R_READS, R_STALENESS, R_LAG, R_STEPS, R_FIRST_TIME, R_SENT = R_FIRST_TIME + 2,
       R_RECEIVED, R_COUNT };

/* Rank 0's lines for rank `rank`'s figures. */
static void print_task(const ct_ps_tasks *c, int rank, const double *f) {
  const double steps = f[R_STEPS] > 0 ? f[R_STEPS] : 1, mb = 1e6;
  const int ps = rank < c->ps;
  printf("  /job:%s/task:%d: %s %.1f ms, %s %.1f ms a step; %.3f MB sent, %.3f MB received a "
         "step (the variables' assignment predicts %.3f MB each way)\n",
         ps ? "ps" : "worker", ps ? rank : rank - c->ps,
         ps ? "waiting for gradients" : "computing", 1e3 * f[R_FIRST_TIME] / steps,
         ps ? "applying and answering" : "sending and waiting for the ps", 
         1e3 * f[R_FIRST_TIME + 1] / steps, f[R_SENT] / steps / mb, f[R_RECEIVED] / steps / mb,
         predicted_bytes(c, rank) / mb);
}

int ct_ps_tasks_report(void *state, ct_status *status) {
  ct_ps_tasks *c = state;
  const int ranks = ct_cluster_size(), on_ps = c->task >= 0;
  const double mine[R_COUNT] = {
      [R_APPLIED] = (double)c->applied, [R_READS] = (double)c->reads,
      [R_STALENESS] = (double)c->max_staleness_seen, [R_LAG] = (double)c->max_lag,
      [R_STEPS] = (double)c->steps, [R_FIRST_TIME] = on_ps ? c->wait_s : c->compute_s,
      [R_FIRST_TIME + 1] = on_ps ? c->apply_s : c->exchange_s, [R_SENT] = c->bytes_sent,
      [R_RECEIVED] = c->bytes_received};
  double *all = calloc((size_t)ranks * R_COUNT, sizeof *all);
  if (all == NULL) return out_of_memory(status);
  ct_cluster_progress(-1, -1, "the ps tasks' counts");
  if (ct_cluster_allgather(mine, sizeof mine, all, status)) {
    free(all);
    return 1;
  }
  double applied = 0, reads = 0, staleness = 0, lag = 0;
  for (int p = 0; p < c->ps; ++p) {
    const double *f = all + R_COUNT * p;
    applied += f[R_APPLIED], reads += f[R_READS];
    staleness = f[R_STALENESS] > staleness ? f[R_STALENESS] : staleness;
    lag = f[R_LAG] > lag ? f[R_LAG] : lag;
  }
  char bound[32] = "unbounded";
  const int64_t max_staleness = c->env.options->max_staleness;
  if (max_staleness >= 0) snprintf(bound, sizeof bound, "%lld", (long long)max_staleness);
  printf("cluster: %d ps task%s, %d workers, %s updates%s%s: %.0f updates applied (by all ps "
         "tasks), %.0f reads; staleness at most %.0f; a gradient applied at most %.0f updates "
         "after its read\n",
         c->ps, c->ps == 1 ? "" : "s", c->workers, c->async ? "async" : "sync",
         c->async ? ", max_staleness " : "", c->async ? bound : "", applied, reads, staleness,
         lag);
  for (int k = 0; k < ranks; ++k) print_task(c, k, all + R_COUNT * k);
  free(all);
  return 0;
}

static int sync_new(const ct_strategy_env *env, void **state, ct_status *status) {
  return ct_ps_tasks_new(env, 0, state, status);
}

const ct_strategy ct_strategy_ps_tasks = CT_PS_TASKS_STRATEGY("ps_tasks", sync_new, sync_step);
