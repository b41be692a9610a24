/* ctower towers: one model trained as N synchronized replicas ("towers") on
 * N devices, as TensorFlow's multi-GPU CIFAR-10 tutorial and cxflow do.
 *
 * ct_towers_build calls the caller's loss function once per tower, under
 * name scope tower_k and the tower's device scope, each on its own shard of
 * the global batch, and returns the gradients of the batch's loss. The loss
 * is the batch mean: each example carries a weight (1/N for the N real
 * examples of the global batch, 0 for padding), so any split across towers,
 * uneven or with towers that hold only padding, gives the gradient of the
 * whole batch. The caller applies the gradients (an optimizer).
 *
 * Variable updates (strategies; each is one file of src/parallel, listed in
 * src/parallel/strategies.c):
 *   parameter_server: one set of variables on ps_device; towers read them,
 *     their gradients are summed there, to be applied there once; across
 *     ranks the sums go on to rank 0 (a CollectiveReduce to it per bucket),
 *     rank 0 alone applies them (it alone holds the optimizer's slots) and
 *     ct_towers_after_update broadcasts the variables back;
 *   replicated: each tower has its own copy (tower 0's keep the plain names,
 *     tower k's are "tower_k/<name>", starting from the same values); the
 *     gradients are all-reduced (ring, tree or one collective AllReduce op:
 *     a fixed order of additions; NCCL between physical GPUs), so the same
 *     update applied to every copy keeps the copies bitwise equal;
 *   ps_tasks, async: the parameter server's graph in every process of a
 *     cluster spec with ps tasks (ct_cluster_set_spec); the trainer moves
 *     the gradients to the ps tasks and the variables back (all of a step's
 *     gradients summed, or each applied as it arrives);
 *   block_momentum: each tower its own copy, updated by its own gradient
 *     (the mean of its shard) for block_steps steps; then the copies of
 *     every rank are averaged (one all-reduce) and the block's update
 *     applied with Nesterov block momentum (BMUF, Chen and Huo 2016), by
 *     the trainer through the strategy's table.
 * ct_towers_resolve turns what a user asks for (a ct_tower_request: the
 * `devices:` section of a config) into the options on a session's
 * devices. */
#ifndef CTOWER_TOWERS_H
#define CTOWER_TOWERS_H

#include "ctower/ops.h"
#include "ctower/session.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ct_variable_update {
  CT_VARIABLE_UPDATE_PARAMETER_SERVER = 0, /* in a process, or to rank 0 across ranks */
  CT_VARIABLE_UPDATE_REPLICATED,
  CT_VARIABLE_UPDATE_PS_TASKS,             /* on the ps tasks of a cluster spec, sync */
  CT_VARIABLE_UPDATE_ASYNC,                /* on the ps tasks, each gradient as it arrives */
  CT_VARIABLE_UPDATE_BLOCK_MOMENTUM,       /* local steps, then model averaging (BMUF) */
  CT_VARIABLE_UPDATE_COUNT
} ct_variable_update;

/* How replicated towers sum their gradients:
 *   RING: add along the towers 0 -> 1 -> ... (one Add per tower);
 *   TREE: add pairs, then pairs of pairs;
 *   COLLECTIVE: one AllReduce op across the towers (NCCL between GPUs;
 *     in input order on CPU devices), each tower keeping its own sum. */
typedef enum ct_all_reduce_algorithm {
  CT_ALL_REDUCE_RING = 0,
  CT_ALL_REDUCE_TREE,
  CT_ALL_REDUCE_COLLECTIVE
} ct_all_reduce_algorithm;

typedef struct ct_tower_options {
  int n_towers;                          /* 1 .. CT_MAX_DEVICES */
  char devices[CT_MAX_DEVICES][64];      /* tower k runs on devices[k], each its own */
  ct_variable_update variable_update;
  char ps_device[64];                    /* parameter_server: where variables live */
  ct_all_reduce_algorithm all_reduce;    /* replicated */
  int across_ranks;                      /* the sums go on across every rank of the job (a
                                            CollectiveReduce per bucket, after the sum of this
                                            process's towers): replicated, to every rank;
                                            parameter_server, to rank 0 */
  ct_compression compression;            /* replicated: how the gradients travel between
                                            the ranks (ctower/ops.h), and, in a ring or
                                            tree, from a GPU to another memory (below) */
  int memory_domain[CT_MAX_DEVICES];     /* which memory tower k's device computes in: 0
                                            the host's (every CPU device), 1 + i physical
                                            GPU i (its virtual GPUs share it). A ring or
                                            tree compresses a sum that leaves a GPU for
                                            another domain: it crosses a link (PCIe,
                                            NVLink) that packing on the GPU outruns.
                                            Within a domain a copy costs what packing
                                            would, so sums there stay exact. */
  /* block_momentum: */
  int64_t block_steps;                   /* K: local steps between the models' averaging */
  float block_momentum;                  /* eta of the block's Nesterov momentum; < 0: 1 - 1/N
                                            for N learners */
  int job_towers;                        /* the towers of every rank together (the learners;
                                            each tower's gradient is taken as the mean of its
                                            own shard); 0: n_towers */
  /* ps_tasks and async: */
  int ps_task;                           /* the ps task holding every variable; -1: spread
                                            over them by bytes */
  int64_t max_staleness;                 /* async: steps a worker may read behind the
                                            slowest; -1: unbounded */
} ct_tower_options;

/* One tower on /cpu:0, its variables there (parameter_server on /cpu:0),
 * ring all-reduce. */
void ct_tower_options_defaults(ct_tower_options *options);

/* How the towers' gradients are summed, as a user asks for it: AUTO (one
 * collective op when every tower is a GPU, else RING; RING too when the
 * towers span several physical GPUs and compression is asked for, so that
 * it applies), RING, TREE or NCCL (the collective op, every tower a GPU;
 * NCCL moves f32). */
typedef enum ct_all_reduce_request {
  CT_ALL_REDUCE_REQUEST_AUTO = 0,
  CT_ALL_REDUCE_REQUEST_RING,
  CT_ALL_REDUCE_REQUEST_TREE,
  CT_ALL_REDUCE_REQUEST_NCCL
} ct_all_reduce_request;

/* The towers a user asks for (a config's `devices:` section, and its
 * cluster's update), before they meet a session's devices. Device names
 * take any of TensorFlow's forms (/cpu:0 and /device:CPU:0 are one device)
 * and may name a task of the job: /job:worker/task:1/cpu:0 is worker 1's
 * /cpu:0, and only that rank's tower. */
typedef struct ct_tower_request {
  int n_gpus;                        /* > 0: towers on /gpu:0 .. /gpu:N-1 (cxflow's key) */
  int n_towers;                      /* else, when not 0: the first N devices of the preferred
                                        type (GPUs when the session has any, else CPU
                                        devices); -1: every device of that type */
  int n_listed;                      /* else: a tower on each of these devices */
  char listed[CT_MAX_DEVICES][64];
  ct_variable_update variable_update; /* REPLICATED, PARAMETER_SERVER or BLOCK_MOMENTUM;
                                         under a cluster spec with ps tasks,
                                         PARAMETER_SERVER becomes PS_TASKS, or ASYNC with
                                         async_updates */
  char ps_device[64];
  ct_all_reduce_request all_reduce;
  ct_compression compression;        /* replicated: how gradients travel between ranks,
                                        and between GPUs (ct_tower_options) */
  int64_t block_steps;               /* BLOCK_MOMENTUM: local steps between averagings */
  float block_momentum;              /* BLOCK_MOMENTUM: eta; < 0: 1 - 1/N for N learners */
  int async_updates;                 /* with ps tasks: each gradient applied as it arrives */
  int64_t max_staleness;             /* async: -1 unbounded */
} ct_tower_request;

/* One tower on /cpu:0, replicated, the parameter server's device /cpu:0,
 * all_reduce AUTO, sync updates, unbounded staleness. */
void ct_tower_request_defaults(ct_tower_request *request);

/* The towers of `request` on the devices a session with `session` options
 * has, for this rank of the job (ct_cluster_*): the devices this rank's
 * towers run on (a name with this rank's task becomes the local name; a
 * task the job lacks is an error, or a warning on stderr that leaves the
 * entry out under allow_soft_placement), the strategy, and the all-reduce.
 * Towers that want GPUs the session lacks go to CPU devices with a warning
 * under allow_soft_placement. Returns 0, or 1 with INVALID_ARGUMENT naming
 * the `devices.` key at fault and what to write: towers the session cannot
 * hold, a rank without a tower, two towers on one device, nccl with a
 * tower off the GPUs, a ps_device of the wrong task. *towers is unchanged
 * on failure. */
int ct_towers_resolve(const ct_tower_request *request, const ct_session_options *session,
                      ct_tower_options *towers, ct_status *status);

enum { CT_TOWER_MAX_INPUTS = 4 };

/* A per-example input of the model: each tower gets a placeholder
 * "tower_k/<name>" of this dtype and shape [n_k, shape...], fed with its
 * shard of the batch. */
typedef struct ct_tower_input {
  const char *name;   /* "images" */
  ct_dtype dtype;
  ct_shape shape;     /* one example's: [H, W, C] for images, [] for labels */
} ct_tower_input;

/* Builds the model on one tower: inputs[i] is the tower's placeholder of
 * the model's input i. Returns the f32 loss of each of the tower's examples,
 * shape [n_k], which the towers weight and sum; or records an error in the
 * graph. Called under the tower's name scope and device scope, once per
 * tower, in tower order. */
typedef ct_output (*ct_tower_loss_fn)(ct_graph *graph, int tower, const ct_output *inputs,
                                      void *user_data);

typedef struct ct_tower_model {
  int n_inputs;                              /* 1 .. CT_TOWER_MAX_INPUTS */
  ct_tower_input inputs[CT_TOWER_MAX_INPUTS];
  ct_tower_loss_fn loss;
  void *user_data;                           /* passed to loss */
} ct_tower_model;

typedef struct ct_tower {
  ct_output inputs[CT_TOWER_MAX_INPUTS]; /* placeholders [n_k, ...], as the model declares */
  ct_output weights;  /* [n_k] f32: 1/N for real examples, 0 for padding */
  ct_output first_example; /* [] i64: the index of its first example in the batch */
} ct_tower;

typedef struct ct_tower_graph {
  ct_variable_update variable_update; /* the strategy it was built for */
  int n_towers;
  int n_inputs;
  ct_tower towers[CT_MAX_DEVICES];
  ct_output loss;          /* sum over towers of weight * loss: the batch mean */
  /* What to apply: gradients[i] is the batch's gradient for graph variable
   * variables[i]. replicated: every copy's, all-reduced, on the copy's
   * device; parameter_server: each variable's once, summed beside it. The
   * arrays belong to the tower graph (ct_towers_free). */
  int n_gradients;
  int *variables;
  ct_output *gradients;
  /* The parameter server across ranks (else n_shared is 0): rank 0 holds
   * the gradients to apply; on the other ranks n_gradients is 0, and they
   * receive rank 0's variables instead. shared[i] are the graph variables
   * the towers made, in the order they travel back, in bucket
   * shared_bucket[i] (the bucket their gradients travelled in; the
   * variables without a gradient, such as moving averages, go last). */
  int n_shared;
  int *shared;
  int *shared_bucket;
  ct_node *gradients_sent; /* runs once every bucket has gone to rank 0 */
  /* Variables whose value is this rank's own, not the job's (compression's
   * residuals): not compared between ranks, and saved per rank. */
  int n_local;
  int *local;
} ct_tower_graph;

/* Builds the towers into `graph` (training mode) and their gradients.
 * Returns 0, or records an error in the graph (INVALID_ARGUMENT for bad
 * options or a bad model description) and returns 1. Free *towers
 * with ct_towers_free either way. */
int ct_towers_build(ct_graph *graph, const ct_tower_model *model,
                    const ct_tower_options *options, ct_tower_graph *towers);
void ct_towers_free(ct_tower_graph *towers);
/* Whether graph variable `variable` is one of this rank's own (listed in
 * towers->local). */
int ct_towers_is_local(const ct_tower_graph *towers, int variable);

/* After the caller has applied the gradients: what the strategy runs
 * besides the update each step, as one node to run with it; NULL when
 * there is nothing (or with the error recorded in the graph). The
 * parameter server across ranks: every shared variable broadcast from
 * rank 0 into the other ranks' copies, each once its updates on this rank
 * are done (every op that writes it), one after the other in a fixed
 * order, after every bucket has been sent, so that every rank's variables
 * are then bitwise rank 0's. */
ct_node *ct_towers_after_update(ct_graph *graph, const ct_tower_graph *towers);

/* Shard sizes for n examples over N towers, summing to n: even (speeds
 * NULL: the first n % N towers take one more), or in proportion to each
 * tower's measured speed (examples per second), each tower at least one
 * example when n >= N. */
void ct_towers_split(int n_towers, int64_t n, const double *speeds, int64_t *sizes);

/* One step's feeds and the headers and values they point to: the caller
 * keeps it (it is large: keep it off small stacks) and may reuse it. */
enum { CT_TOWER_FEEDS = CT_TOWER_MAX_INPUTS + 2 }; /* per tower: inputs, weights, first_example */
typedef struct ct_tower_feeds {
  ct_feed feeds[CT_TOWER_FEEDS * CT_MAX_DEVICES + 4]; /* room for a few of the caller's */
  int n_feeds;
  ct_tensor views[CT_TOWER_FEEDS * CT_MAX_DEVICES];
  int64_t first_example[CT_MAX_DEVICES];
} ct_tower_feeds;

/* This process's part of a global batch spread over the ranks of a job:
 * the batch has `total` examples in all, and the rows handed to
 * ct_towers_make_feeds are its examples first .. first + n - 1. */
typedef struct ct_batch_share {
  int64_t total;
  int64_t first;
} ct_batch_share;

/* Feeds for one step: the first n examples (rows) of each of the model's
 * inputs (batch[i] for input i, [capacity, shape...]) split into contiguous
 * shards, in order, of `sizes` (NULL: even), each example weighted
 * 1/share->total, and each tower's index of its first example in the global
 * batch (share: NULL for a batch that is all this process's, {n, 0}). A
 * tower left without examples gets one padding example (weight 0), so it
 * computes but adds nothing. Fills out->feeds (the inputs, weights and
 * first example of each tower; append more after out->n_feeds); `weights`
 * must hold n + N floats. Returns the feed count. The feeds borrow the
 * batch, weights and *out. */
int ct_towers_make_feeds(const ct_tower_graph *towers, const ct_tensor *const *batch,
                         int64_t n, const int64_t *sizes, const ct_batch_share *share,
                         ct_tower_feeds *out, float *weights);

/* Joins per-example outputs fetched from each tower (parts[k] from tower
 * k, e.g. its logits) into one tensor in input order, leaving out padding:
 * sizes are the shard sizes the step was fed with. The caller owns the
 * result. NULL and INVALID_ARGUMENT when a part does not match its shard. */
ct_tensor *ct_towers_concat(int n_towers, ct_tensor *const *parts, const int64_t *sizes,
                            ct_status *status);

/* Variables to save: originals only (not replicas), by their tower-free
 * names. Returns 1 for a variable a checkpoint holds, 0 for a replica. */
int ct_variable_is_original(const ct_graph *graph, int index);
/* The checkpoint name of variable i: its own, or its original's. */
const char *ct_variable_checkpoint_name(const ct_graph *graph, int index);
/* The tower (of this process) whose copy variable i is: k for tower k's
 * replica, 0 for an original. */
int ct_variable_tower(const ct_graph *graph, int index);

#ifdef __cplusplus
}
#endif
#endif
