/* Variable-update strategies behind one table: how the towers' gradients
 * become the update of the variables, in the graph and while training.
 * Each strategy is one file of src/parallel that fills a ct_strategy, and
 * one line of strategies.c; ct_towers_build, the trainer and `ctower plan`
 * call through the table and test no strategy.
 *
 *   replicated.c        every tower its copy of the variables; the
 *                       gradients all-reduced (exchange.c), in the process
 *                       and across ranks
 *   parameter_server.c  one set of variables on ps_device; across ranks
 *                       rank 0's, which sends them back
 *   ps_tasks.c          a cluster spec's ps tasks hold the variables and
 *                       apply every worker's gradients of a step at once
 *   async.c             the same tasks, each gradient applied as it
 *                       arrives, reads held back past max_staleness
 *   block_momentum.c    every tower learns on its own for K steps, then
 *                       the models are averaged and block momentum applied
 *
 * Adding a strategy: its file, its value of ct_variable_update
 * (include/ctower/towers.h), its line in strategies.c, and its word in the
 * config's devices.variable_update (src/config/config_schema.c). */
#ifndef CTOWER_PARALLEL_STRATEGY_H
#define CTOWER_PARALLEL_STRATEGY_H

#include <stddef.h>
#include <stdint.h>

#include "ctower/towers.h"

/* What a strategy works with while training: the trainer's, borrowed for
 * the run. */
typedef struct ct_strategy_env {
  ct_session *session;
  ct_graph *graph;
  const ct_tower_graph *towers;
  const ct_tower_options *options;
  ct_node *update;          /* the optimizer's group: control input i applies gradients[i] */
  ct_output learning_rate;  /* the optimizer's rate, fed every step */
  int (*combine_signals)(int a, int b); /* the signal a job stops with when two ranks got a
                                           and b (0: none): the trainer's rule */
} ct_strategy_env;

/* One step as the trainer hands it to a strategy and takes it back. */
typedef struct ct_strategy_step {
  int64_t step;              /* the global step, from 0 */
  float rate;                /* the learning rate the optimizer is fed */
  int signal;                /* in: the signal this rank got (0: none); out, with stop: the
                                job's, which every rank stops after */
  int stop;                  /* out: 1 when the strategy decided the job's signal */
  double sums[2];            /* the loss and the correct count: in, this process's (after
                                after_run's run); out of own_step, those of the
                                gradients it took */
  double run_seconds;        /* the session's run of the step */
  ct_tensor *const *fetched; /* the values of step_fetches, in that order */
  int epoch_done;            /* end_epoch: 1 when the epoch ran to its end (0: training
                                stopped inside it, for max_steps or a signal) */
} ct_strategy_step;

/* A strategy's own state in a checkpoint: save hands each tensor to
 * `add` (which copies it), restore finds each by name (NULL: not there). */
typedef int (*ct_strategy_add_fn)(void *sink, const char *name, const ct_tensor *value,
                                  ct_status *status);
typedef const ct_tensor *(*ct_strategy_find_fn)(void *source, const char *name);

typedef struct ct_strategy {
  const char *name;  /* devices.variable_update's word for it, and `ctower plan`'s */
  int one_copy;      /* every tower reads one set of variables, on ps_device (else each
                        tower its own copy, tower_k/<name>) */
  int on_ps_tasks;   /* its ranks are a cluster spec's ps and worker tasks, each building
                        the graph of one process: the trainer moves the values between
                        them through the runtime functions below */

  /* ---- building ---------------------------------------------------------- */
  /* Turns the towers' gradients (t->n_gradients of them: t->gradients[i] of
   * graph variable t->variables[i], every copy's) into those the optimizer
   * applies, in place. Errors go to the graph. */
  void (*build_exchange)(ct_graph *graph, const ct_tower_options *options, ct_tower_graph *t);
  /* After the optimizer's update is built: a node the step runs besides
   * it, or NULL (nothing, or an error in the graph). NULL: nothing. */
  ct_node *(*build_after_update)(ct_graph *graph, const ct_tower_graph *t);
  /* "2 towers (replicated)", "1 ps task and 2 workers": what the banner
   * and the plan say it trains on, NUL-terminated in size bytes. */
  void (*describe)(const ct_tower_options *options, char *buf, size_t size);

  /* ---- training (each NULL: nothing beyond the trainer's own step) ------- */
  /* Its state for a run, once the session exists, into *state. Returns 0
   * or fills status; run_free frees it either way. */
  int (*run_new)(const ct_strategy_env *env, void **state, ct_status *status);
  void (*run_free)(void *state);
  /* A rank that runs no tower (a ps task): its whole step instead of the
   * session's run of the towers. Sets s->sums, s->signal and s->stop. */
  int (*own_step)(void *state, ct_strategy_step *s, ct_status *status);
  /* What a tower's step runs instead of the whole update (NULL targets:
   * train_step): up to max targets into targets, the count returned; and
   * what it fetches besides the loss and logits into fetches (room for
   * every gradient), the count returned. */
  int (*step_targets)(const void *state, ct_node **targets, int max);
  int (*step_fetches)(const void *state, ct_output *fetches);
  /* After the towers' run: the exchange the graph does not do. Sets
   * s->signal and s->stop when it decides the job's signal. */
  int (*after_run)(void *state, ct_strategy_step *s, ct_status *status);
  /* Every rank, at the end of an epoch, before the evaluation (s->signal
   * in: this rank's; s->stop and s->signal out when it decides the job's). */
  int (*end_epoch)(void *state, ct_strategy_step *s, ct_status *status);
  /* The lines of the banner after the first: the job's shape and where
   * the variables live. */
  void (*print_banner)(const void *state, int global_towers);
  /* Every rank at the end of training; rank 0 prints what it counted. */
  int (*report)(void *state, ct_status *status);
  /* Whether the replicas' variables differ now (inside a block of block
   * momentum): a checkpoint then keeps every rank's, and the ranks'
   * variables are not compared. */
  int (*replicas_differ)(const void *state);
  /* Its own state for a checkpoint, each tensor through add (rank 0's is
   * saved); and back from one, with the steps of the epoch done when it
   * was saved (what is missing starts afresh, said on stderr). Each
   * returns 0 or fills status. */
  int (*save)(void *state, ct_strategy_add_fn add, void *sink, ct_status *status);
  int (*restore)(void *state, ct_strategy_find_fn find, void *source, int64_t epoch_step,
                 ct_status *status);
} ct_strategy;

/* The strategy of a variable update, or NULL for a value that is none. */
const ct_strategy *ct_strategy_of(ct_variable_update update);

#endif
