/* Training under a cluster spec with ps tasks (cluster: {ps: P, worker: W}),
 * as TensorFlow's between-graph replication over ps and worker jobs: every
 * rank builds the same graph; the workers run its towers on their shards
 * of each global batch and send the gradients; the ps tasks hold the
 * variables (each on one of them: devices.ps_device's task, or spread by
 * bytes), apply the updates, hold the optimizer's slots and send the
 * variables back.
 *
 * sync: a ps task waits for every worker's gradients of the step, sums
 *   them in worker order and applies the sum once, as SyncReplicasOptimizer
 *   does: the weights of one process with the same towers.
 * async: a ps task applies each worker's gradients as they arrive. A worker
 *   about to start its step c gets the variables (the ps's answer to its
 *   gradients of step c - 1) once every worker's gradients of steps before
 *   c - S are applied, S = max_staleness (stale-synchronous; -1: never
 *   waits; 0: bulk-synchronous). The ps counts each read's staleness: c
 *   less the fewest steps of any worker it has applied.
 *
 * Messages: a worker's to ps task p are a header (step, rate, loss, correct
 * count, interrupt) and p's gradients in order; p answers with a header
 * (stop) and the values of those variables. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/cluster.h"
#include "train/trainer_internal.h"

enum { TAG_GRADIENTS = 1001, TAG_VARIABLES = 1002 };
enum { H_STEP, H_RATE, H_LOSS, H_CORRECT, H_INTERRUPT, HEADER }; /* worker to ps */
enum { R_STOP };                                                 /* ps to worker */
#define HEADER_BYTES (HEADER * sizeof(double))

/* A message: the header's doubles, then floats. */
typedef struct message {
  char *bytes;
  size_t size;
} message;

static double *header(const message *m) { return (double *)(void *)m->bytes; }
static float *payload(const message *m) { return (float *)(void *)(m->bytes + HEADER_BYTES); }

struct ct_cluster_run {
  int ps, workers, task;     /* task: this rank's ps task, or -1 on a worker */
  int n;                     /* gradients */
  int *owner;                /* per gradient: the ps task that holds its variable */
  int64_t *offset;           /* per gradient: its floats' place in its ps task's payload */
  int64_t *floats;           /* per ps task: the floats of its payload */
  int *variable_owner;       /* per graph variable: the rank that holds it */
  message *out, *in;         /* worker: per ps task; ps: in per worker (async: [0]), out per
                                worker */
  int n_out, n_in;
  ct_cluster_request *sends, *recvs;
  /* ps */
  float *sum;                /* sync: the step's summed gradients */
  ct_feed *feeds;            /* its gradients, then the learning rate */
  ct_tensor *views;
  ct_node **targets;         /* its variables' updates */
  int n_owned;
  int64_t *clock;            /* per worker: its gradients applied */
  int *pending;              /* per worker: waits for its answer */
  int64_t *read_at;          /* per worker: updates applied when it last read */
  int64_t applied, reads, max_staleness_seen, max_lag;
  int stop; /* the signal some rank got (ct_interrupt_combine), or 0 */
  /* where a task's steps went, and what it moved */
  int64_t steps;
  double compute_s, exchange_s; /* worker: its session's run; sending and waiting for answers */
  double wait_s, apply_s;       /* ps: waiting for gradients; applying and answering */
  double bytes_sent, bytes_received;
};

static int out_of_memory(ct_status *status) {
  ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory setting up the ps tasks");
  return 1;
}

/* count messages into *m, message i of floats[i] floats (floats[0] for
 * every one when `each` is 0). Returns 1 when out of memory. */
static int alloc_messages(message **m, int count, const int64_t *floats, int each) {
  *m = calloc((size_t)count, sizeof **m);
  for (int i = 0; *m && i < count; ++i) {
    (*m)[i].size = HEADER_BYTES + (size_t)floats[each ? i : 0] * sizeof(float);
    if (((*m)[i].bytes = calloc(1, (*m)[i].size)) == NULL) return 1;
  }
  return *m == NULL;
}

static void free_messages(message *m, int count) {
  for (int i = 0; m && i < count; ++i) free(m[i].bytes);
  free(m);
}

/* Which ps task holds each gradient's variable: devices.ps_device's task,
 * or, as tf_cnn_benchmarks' greedy strategy, the one with the fewest bytes
 * so far, in the order of the gradients. Slots go with their variable; the
 * other variables (moving averages) are the first worker's. */
static void assign_owners(ct_cluster_run *c, const ct_train_run *r) {
  const ct_tower_graph *t = &r->tg.train.towers;
  const ct_graph *g = r->tg.graph;
  const int fixed = r->options->train.ps_task;
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
static int ps_setup(ct_cluster_run *c, const ct_train_run *r, ct_status *status) {
  const ct_tower_graph *t = &r->tg.train.towers;
  const ct_node *update = r->tg.train.update.op;
  if (ct_node_num_control_inputs(update) != c->n) {
    ct_status_set(status, CT_INTERNAL, "the optimizer built %d updates for %d gradients",
                  ct_node_num_control_inputs(update), c->n);
    return 1;
  }
  const size_t floats = (size_t)c->floats[c->task];
  c->n_in = r->options->train.async_updates ? 1 : c->workers;
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
    c->views[k] = (ct_tensor){CT_F32, ct_graph_variable_shape(r->tg.graph, t->variables[i]),
                              NULL, 0};
    c->feeds[k] = (ct_feed){t->gradients[i], &c->views[k]};
    c->targets[k] = ct_node_control_input(update, i);
  }
  return 0;
}

int ct_cluster_run_new(ct_train_run *r, ct_status *status) {
  r->cluster = NULL;
  if (ct_cluster_ps_tasks() == 0) return 0;
  ct_cluster_run *c = calloc(1, sizeof *c);
  if (c == NULL) return out_of_memory(status);
  r->cluster = c;
  c->ps = ct_cluster_ps_tasks();
  c->workers = ct_cluster_size() - c->ps;
  c->task = ct_cluster_is_ps() ? ct_cluster_task() : -1;
  c->n = r->tg.train.towers.n_gradients;
  c->owner = calloc((size_t)c->n + 1, sizeof *c->owner);
  c->offset = calloc((size_t)c->n + 1, sizeof *c->offset);
  c->floats = calloc((size_t)c->ps, sizeof *c->floats);
  c->variable_owner = calloc((size_t)ct_graph_variable_count(r->tg.graph) + 1,
                             sizeof *c->variable_owner);
  c->sends = calloc((size_t)(c->ps + c->workers), sizeof *c->sends);
  c->recvs = calloc((size_t)(c->ps + c->workers), sizeof *c->recvs);
  if (!c->owner || !c->offset || !c->floats || !c->variable_owner || !c->sends || !c->recvs)
    return out_of_memory(status);
  assign_owners(c, r);
  if (c->task >= 0) return ps_setup(c, r, status);
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

void ct_cluster_run_free(ct_cluster_run *c) {
  if (c == NULL) return;
  ct_status ignored = CT_STATUS_INIT;
  wait_all(c->sends, c->ps + c->workers, &ignored); /* the last answers */
  wait_all(c->recvs, c->ps + c->workers, &ignored);
  free_messages(c->out, c->n_out);
  free_messages(c->in, c->n_in);
  free(c->owner), free(c->offset), free(c->floats), free(c->variable_owner);
  free(c->sends), free(c->recvs);
  free(c->sum), free(c->feeds), free(c->views), free(c->targets);
  free(c->clock), free(c->read_at), free(c->pending);
  free(c);
}

/* ---- a worker ---------------------------------------------------------------- */

int ct_cluster_worker_exchange(ct_train_run *r, int64_t step, float rate,
                               ct_tensor *const *gradients, const double *sums,
                               ct_status *status) {
  ct_cluster_run *c = r->cluster;
  const ct_tower_graph *t = &r->tg.train.towers;
  for (int p = 0; p < c->ps; ++p) {
    double *h = header(&c->out[p]);
    h[H_STEP] = (double)step, h[H_RATE] = rate, h[H_LOSS] = sums[0];
    h[H_CORRECT] = sums[1], h[H_INTERRUPT] = ct_interrupt_requested();
  }
  for (int i = 0; i < c->n; ++i)
    memcpy(payload(&c->out[c->owner[i]]) + c->offset[i], gradients[i]->data,
           ct_tensor_nbytes(gradients[i]));
  ct_cluster_progress(step, -1, "the ps tasks' answer");
  const double start = ct_monotonic_seconds();
  int failed = 0;
  for (int p = 0; p < c->ps && !failed; ++p)
    failed = ct_cluster_irecv(c->in[p].bytes, c->in[p].size, p, TAG_VARIABLES, &c->recvs[p],
                              status) ||
             ct_cluster_isend(c->out[p].bytes, c->out[p].size, p, TAG_GRADIENTS, &c->sends[p],
                              status);
  failed = wait_all(c->sends, c->ps, failed ? &(ct_status)CT_STATUS_INIT : status) || failed;
  failed = wait_all(c->recvs, c->ps, failed ? &(ct_status)CT_STATUS_INIT : status) || failed;
  if (failed) return 1;
  c->steps++;
  c->compute_s += r->times.run_end - r->times.run_start;
  c->exchange_s += ct_monotonic_seconds() - start;
  for (int p = 0; p < c->ps; ++p)
    c->bytes_sent += (double)c->out[p].size, c->bytes_received += (double)c->in[p].size;
  r->interrupted = 0;
  for (int p = 0; p < c->ps; ++p)
    r->interrupted = ct_interrupt_combine(r->interrupted, (int)header(&c->in[p])[R_STOP]);
  for (int i = 0; i < c->n; ++i) {
    const int v = t->variables[i];
    ct_tensor value = {CT_F32, ct_graph_variable_shape(r->tg.graph, v),
                       payload(&c->in[c->owner[i]]) + c->offset[i], 0};
    if (ct_session_assign_variable(r->session, v, &value, status)) return 1;
  }
  return 0;
}

/* ---- a ps task ------------------------------------------------------------- */

/* Applies the gradients at `data` (this task's payload) at `rate`. */
static int apply(ct_train_run *r, const float *data, double rate, ct_status *status) {
  ct_cluster_run *c = r->cluster;
  const double start = ct_monotonic_seconds();
  float lr = (float)rate;
  ct_tensor lr_tensor = {CT_F32, ct_shape_of(0), &lr, 0};
  for (int i = 0, k = 0; i < c->n; ++i)
    if (c->owner[i] == c->task) c->views[k++].data = (void *)(data + c->offset[i]);
  c->feeds[c->n_owned] = (ct_feed){r->tg.train.update.learning_rate, &lr_tensor};
  if (ct_session_run(r->session, c->feeds, c->n_owned + 1, NULL, 0, c->targets, c->n_owned,
                     NULL, status))
    return 1;
  c->applied++;
  c->apply_s += ct_monotonic_seconds() - start;
  return 0;
}

/* Answers worker w (index among the workers) with this task's variables as
 * they are now. */
static int answer(ct_train_run *r, int w, ct_status *status) {
  ct_cluster_run *c = r->cluster;
  const ct_tower_graph *t = &r->tg.train.towers;
  const double start = ct_monotonic_seconds();
  if (ct_cluster_wait(&c->sends[w], NULL, status)) return 1; /* its last answer */
  message *m = &c->out[w];
  header(m)[R_STOP] = c->stop;
  for (int i = 0; i < c->n; ++i) {
    if (c->owner[i] != c->task) continue;
    ct_tensor *value = ct_session_read_variable(r->session, t->variables[i], status);
    if (value == NULL) return 1;
    memcpy(payload(m) + c->offset[i], value->data, ct_tensor_nbytes(value));
    ct_tensor_free(value);
  }
  /* staleness of this read: the steps it has done less the fewest any
   * worker has had applied */
  int64_t fewest = c->clock[0];
  for (int k = 1; k < c->workers; ++k) fewest = c->clock[k] < fewest ? c->clock[k] : fewest;
  const int64_t staleness = c->clock[w] - fewest;
  if (staleness > c->max_staleness_seen) c->max_staleness_seen = staleness;
  c->reads++;
  c->read_at[w] = c->applied;
  c->pending[w] = 0;
  c->bytes_sent += (double)m->size;
  c->apply_s += ct_monotonic_seconds() - start;
  return ct_cluster_isend(m->bytes, m->size, c->ps + w, TAG_VARIABLES, &c->sends[w], status);
}

/* Answers every waiting worker whose read the staleness bound allows. */
static int answer_allowed(ct_train_run *r, ct_status *status) {
  ct_cluster_run *c = r->cluster;
  const int64_t bound = r->options->train.max_staleness;
  int64_t fewest = c->clock[0];
  for (int k = 1; k < c->workers; ++k) fewest = c->clock[k] < fewest ? c->clock[k] : fewest;
  for (int w = 0; w < c->workers; ++w)
    if (c->pending[w] && (bound < 0 || c->clock[w] - fewest <= bound) && answer(r, w, status))
      return 1;
  return 0;
}

/* Takes in the header of a worker's gradients of `step` (sync: checked,
 * and whether it was asked to stop). */
static int take_header(ct_cluster_run *c, const message *m, int w, int64_t step, int sync,
                       double *sums, ct_status *status) {
  const double *h = header(m);
  if (sync && h[H_STEP] != (double)step) {
    ct_status_set(status, CT_INTERNAL,
                  "worker %d sent its gradients of step %.0f while ps task %d waits for step %lld",
                  w, h[H_STEP], c->task, (long long)step);
    return 1;
  }
  sums[0] += h[H_LOSS], sums[1] += h[H_CORRECT];
  /* async: the workers are at different steps; a signal stops the job at
   * the end of the epoch (ct_cluster_gather_variables) */
  if (sync) c->stop = ct_interrupt_combine(c->stop, (int)h[H_INTERRUPT]);
  return 0;
}

/* sync: every worker's gradients of the step, summed in worker order and
 * applied once at worker 0's rate. */
static int sync_step(ct_train_run *r, int64_t step, double *sums, ct_status *status) {
  ct_cluster_run *c = r->cluster;
  ct_cluster_progress(step, -1, "the workers' gradients");
  int failed = 0;
  for (int w = 0; w < c->workers && !failed; ++w)
    failed = ct_cluster_irecv(c->in[w].bytes, c->in[w].size, c->ps + w, TAG_GRADIENTS,
                              &c->recvs[w], status);
  const double start = ct_monotonic_seconds();
  failed = wait_all(c->recvs, c->workers, failed ? &(ct_status)CT_STATUS_INIT : status) || failed;
  c->wait_s += ct_monotonic_seconds() - start;
  c->bytes_received += (double)c->workers * (double)c->in[0].size;
  const int64_t floats = c->floats[c->task];
  for (int w = 0; w < c->workers && !failed; ++w) {
    failed = take_header(c, &c->in[w], w, step, 1, sums, status);
    const float *g = payload(&c->in[w]);
    if (w == 0) memcpy(c->sum, g, (size_t)floats * sizeof *g);
    for (int64_t j = 0; w > 0 && j < floats; ++j) c->sum[j] += g[j];
  }
  c->stop = ct_interrupt_combine(c->stop, ct_interrupt_requested());
  if (failed || apply(r, c->sum, header(&c->in[0])[H_RATE], status)) return 1;
  for (int w = 0; w < c->workers; ++w) c->clock[w]++, c->pending[w] = 1;
  return answer_allowed(r, status);
}

/* async: the next `workers` gradients to arrive, each applied at once. */
static int async_step(ct_train_run *r, int64_t step, double *sums, ct_status *status) {
  ct_cluster_run *c = r->cluster;
  for (int k = 0; k < c->workers; ++k) {
    int source = -1;
    ct_cluster_progress(step, -1, "the workers' gradients");
    const double start = ct_monotonic_seconds();
    if (ct_cluster_irecv(c->in[0].bytes, c->in[0].size, CT_CLUSTER_ANY_SOURCE, TAG_GRADIENTS,
                         &c->recvs[0], status) ||
        ct_cluster_wait(&c->recvs[0], &source, status))
      return 1;
    c->wait_s += ct_monotonic_seconds() - start;
    c->bytes_received += (double)c->in[0].size;
    const int w = source - c->ps;
    if (w < 0 || w >= c->workers) {
      ct_status_set(status, CT_INTERNAL, "ps task %d got gradients from rank %d, no worker",
                    c->task, source);
      return 1;
    }
    if (take_header(c, &c->in[0], w, step, 0, sums, status)) return 1;
    const int64_t lag = c->applied - c->read_at[w];
    if (lag > c->max_lag) c->max_lag = lag;
    if (apply(r, payload(&c->in[0]), header(&c->in[0])[H_RATE], status)) return 1;
    c->clock[w]++;
    c->pending[w] = 1;
    if (answer_allowed(r, status)) return 1;
  }
  return 0;
}

int ct_cluster_ps_step(ct_train_run *r, int64_t step, double *loss, double *accuracy,
                       ct_status *status) {
  double sums[2] = {0, 0};
  const int failed = r->options->train.async_updates ? async_step(r, step, sums, status)
                                                     : sync_step(r, step, sums, status);
  if (failed) return 1;
  r->cluster->steps++;
  r->interrupted = r->cluster->stop;
  *loss = sums[0];
  *accuracy = sums[1] / (double)(r->share.total > 0 ? r->share.total : 1);
  return 0;
}

void ct_cluster_print_placement(const ct_train_run *r) {
  const ct_cluster_run *c = r->cluster;
  for (int p = 0; p < c->ps; ++p) {
    int count = 0;
    for (int i = 0; i < c->n; ++i) count += c->owner[i] == p;
    printf("%s/job:ps/task:%d holds %d variable%s (%.2f MiB)", p ? ", " : "", p, count,
           count == 1 ? "" : "s", (double)c->floats[p] * sizeof(float) / (1 << 20));
  }
  printf("\n");
}

/* ---- every rank -------------------------------------------------------------- */

int ct_cluster_gather_variables(ct_train_run *r, ct_status *status) {
  ct_cluster_run *c = r->cluster;
  if (c == NULL) return 0;
  /* async: the signals any rank got during the epoch, counted by kind */
  const int sig = ct_interrupt_requested();
  double asked[2] = {sig == SIGINT, sig == SIGTERM};
  ct_cluster_progress(-1, -1, "the signals of the epoch");
  if (r->options->train.async_updates) {
    if (ct_cluster_allreduce_f64(asked, 2, status)) return 1;
    r->interrupted = ct_interrupt_combine(asked[0] > 0 ? SIGINT : 0, asked[1] > 0 ? SIGTERM : 0);
  }
  const int rank = ct_cluster_rank();
  for (int v = 0; v < ct_graph_variable_count(r->tg.graph); ++v) {
    ct_tensor *value = ct_session_read_variable(r->session, v, status);
    if (value == NULL) return 1;
    ct_cluster_progress(-1, -1, "the variables' gathering");
    const int owner = c->variable_owner[v];
    int failed = ct_cluster_broadcast(value->data, ct_tensor_nbytes(value), owner, status) ||
                 (rank != owner && ct_session_assign_variable(r->session, v, value, status));
    ct_tensor_free(value);
    if (failed) return 1;
  }
  return 0;
}

/* The bytes a task of the job's cluster sends (and receives) per step by the
 * assignment of the variables: a worker a message to each ps task, a ps
 * task one from each worker. */
static double predicted_bytes(const ct_cluster_run *c, int rank) {
  double bytes = 0;
  for (int p = 0; p < c->ps; ++p)
    if (rank >= c->ps || rank == p)
      bytes += (double)(HEADER_BYTES + (size_t)c->floats[p] * sizeof(float)) *
               (rank >= c->ps ? 1 : c->workers);
  return bytes;
}

enum { R_APPLIED, R_READS, R_STALENESS, R_LAG, R_STEPS, R_FIRST_TIME, R_SENT = R_FIRST_TIME + 2,
       R_RECEIVED, R_COUNT };

/* Rank 0's lines for rank `rank`'s figures. */
static void print_task(const ct_cluster_run *c, int rank, const double *f) {
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

int ct_cluster_report(ct_train_run *r, ct_status *status) {
  ct_cluster_run *c = r->cluster;
  if (c == NULL) return 0;
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
  const ct_train_options *t = &r->options->train;
  char bound[32] = "unbounded";
  if (t->max_staleness >= 0) snprintf(bound, sizeof bound, "%lld", (long long)t->max_staleness);
  printf("cluster: %d ps task%s, %d workers, %s updates%s%s: %.0f updates applied (by all ps "
         "tasks), %.0f reads; staleness at most %.0f; a gradient applied at most %.0f updates "
         "after its read\n",
         c->ps, c->ps == 1 ? "" : "s", c->workers, t->async_updates ? "async" : "sync",
         t->async_updates ? ", max_staleness " : "", t->async_updates ? bound : "", applied, reads,
         staleness, lag);
  for (int k = 0; k < ranks; ++k) print_task(c, k, all + R_COUNT * k);
  free(all);
  return 0;
}
