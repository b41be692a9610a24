/* Asynchronous updates on ps tasks (cluster: {ps: P, worker: W, updates:
 * async}), TensorFlow's default between-graph training: a ps task applies
 * each worker's gradients as they arrive. A worker about to start its step
 * c gets the variables (the ps's answer to its gradients of step c - 1)
 * once every worker's gradients of steps before c - S are applied, S =
 * max_staleness (stale-synchronous; -1: never waits; 0: bulk-synchronous).
 * The ps counts each read's staleness: c less the fewest steps of any
 * worker it has applied. The tasks, messages and the workers' side are
 * ps_tasks.c's. */
#include "parallel/ps_tasks.h"

#include "core/clock.h"

/* The next `workers` gradients to arrive, each applied at once. */
static int async_step(void *state, ct_strategy_step *s, ct_status *status) {
  ct_ps_tasks *c = state;
  s->sums[0] = s->sums[1] = 0;
  for (int k = 0; k < c->workers; ++k) {
    int source = -1;
    ct_cluster_progress(s->step, -1, "the workers' gradients");
    const double start = ct_monotonic_seconds();
    if (ct_cluster_irecv(c->in[0].bytes, c->in[0].size, CT_CLUSTER_ANY_SOURCE,
                         CT_PS_TAG_GRADIENTS, &c->recvs[0], status) ||
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
    if (ct_ps_tasks_take_header(c, &c->in[0], w, s->step, 0, s->sums, status)) return 1;
    const int64_t lag = c->applied - c->read_at[w];
    if (lag > c->max_lag) c->max_lag = lag;
    if (ct_ps_tasks_apply(c, ct_ps_payload(&c->in[0]), ct_ps_header(&c->in[0])[CT_PS_H_RATE],
                          status))
      return 1;
    c->clock[w]++;
    c->pending[w] = 1;
    if (ct_ps_tasks_answer_allowed(c, status)) return 1;
  }
  c->steps++;
  s->signal = c->stop;
  s->stop = 1;
  return 0;
}

static int async_new(const ct_strategy_env *env, void **state, ct_status *status) {
  return ct_ps_tasks_new(env, 1, state, status);
}

const ct_strategy ct_strategy_async = CT_PS_TASKS_STRATEGY("async", async_new, async_step);
