/* What ps_tasks.c (sync updates) and async.c share: a cluster spec's ps
 * tasks and workers exchanging gradients and variables in MPI messages.
 * Private to src/parallel. */
#ifndef CTOWER_PARALLEL_PS_TASKS_H
#define CTOWER_PARALLEL_PS_TASKS_H

#include "cluster/communication.h"
#include "parallel/parallel_internal.h"

enum { CT_PS_TAG_GRADIENTS = 1001, CT_PS_TAG_VARIABLES = 1002 };
enum { CT_PS_H_STEP, CT_PS_H_RATE, CT_PS_H_LOSS, CT_PS_H_CORRECT, CT_PS_H_INTERRUPT,
       CT_PS_HEADER };                 /* worker to ps: the header's doubles */
enum { CT_PS_R_STOP };                 /* ps to worker */
#define CT_PS_HEADER_BYTES (CT_PS_HEADER * sizeof(double))

/* A message: the header's doubles, then floats. */
typedef struct ct_ps_message {
  char *bytes;
  size_t size;
} ct_ps_message;

static inline double *ct_ps_header(const ct_ps_message *m) { return (double *)(void *)m->bytes; }
static inline float *ct_ps_payload(const ct_ps_message *m) {
  return (float *)(void *)(m->bytes + CT_PS_HEADER_BYTES);
}

typedef struct ct_ps_tasks {
  ct_strategy_env env;
  int async;                 /* async.c's: each gradient applied as it arrives */
  int ps, workers, task;     /* task: this rank's ps task, or -1 on a worker */
  int n;                     /* gradients */
  int *owner;                /* per gradient: the ps task that holds its variable */
  int64_t *offset;           /* per gradient: its floats' place in its ps task's payload */
  int64_t *floats;           /* per ps task: the floats of its payload */
  int *variable_owner;       /* per graph variable: the rank that holds it */
  ct_ps_message *out, *in;   /* worker: per ps task; ps: in per worker (async: [0]), out per
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
  int stop; /* the signal some rank got (combine_signals), or 0 */
  /* where a task's steps went, and what it moved */
  int64_t steps;
  double compute_s, exchange_s; /* worker: its session's run; sending and waiting for answers */
  double wait_s, apply_s;       /* ps: waiting for gradients; applying and answering */
  double bytes_sent, bytes_received;
} ct_ps_tasks;

/* The tables' shared functions (state: a ct_ps_tasks). */
int ct_ps_tasks_new(const ct_strategy_env *env, int async, void **state, ct_status *status);
void ct_ps_tasks_free(void *state);
int ct_ps_tasks_targets(const void *state, ct_node **targets, int max);
int ct_ps_tasks_fetches(const void *state, ct_output *fetches);
int ct_ps_tasks_worker_exchange(void *state, ct_strategy_step *s, ct_status *status);
int ct_ps_tasks_end_epoch(void *state, ct_strategy_step *s, ct_status *status);
void ct_ps_tasks_print_banner(const void *state, int global_towers);
int ct_ps_tasks_report(void *state, ct_status *status);
void ct_ps_tasks_describe(const ct_tower_options *o, char *buf, size_t size);

/* The table of a strategy on ps tasks: the shared functions above, with
 * its own name, run_new and step. */
#define CT_PS_TASKS_STRATEGY(strategy_name, new_fn, step_fn)                                    \
  {                                                                                             \
    .name = strategy_name, .one_copy = 1, .on_ps_tasks = 1, .describe = ct_ps_tasks_describe,   \
    .run_new = new_fn, .run_free = ct_ps_tasks_free, .own_step = step_fn,                       \
    .step_targets = ct_ps_tasks_targets, .step_fetches = ct_ps_tasks_fetches,                   \
    .after_run = ct_ps_tasks_worker_exchange, .end_epoch = ct_ps_tasks_end_epoch,               \
    .print_banner = ct_ps_tasks_print_banner, .report = ct_ps_tasks_report,                     \
  }

/* A ps task's parts of a step: applying the gradients at `data` (this
 * task's payload) at `rate`; answering every waiting worker whose read
 * the staleness bound allows; taking in the header of worker w's
 * gradients of `step` (sync: checked, and whether it was asked to stop)
 * into sums (loss, correct count). Each returns 0 or fills status. */
int ct_ps_tasks_apply(ct_ps_tasks *c, const float *data, double rate, ct_status *status);
int ct_ps_tasks_answer_allowed(ct_ps_tasks *c, ct_status *status);
int ct_ps_tasks_take_header(ct_ps_tasks *c, const ct_ps_message *m, int w, int64_t step, int sync,
                            double *sums, ct_status *status);

#endif
