/* One training run: its datasets, graph, session and feeds, and its step. */
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster/communication.h"
#include "core/clock.h"
#include "core/hash.h"
#include "trainer/interrupt.h"
#include "trainer/train_run.h"

void ct_train_run_free(ct_train_run *r) {
  if (r->strategy && r->strategy->run_free) r->strategy->run_free(r->strategy_state);
  ct_run_metadata_free(r->observed.timeline);
  free(r->step.feeds);
  free(r->step.weights);
  free(r->step.next_feeds);
  free(r->step.next_weights);
  free(r->step.fetches);
  ct_pipeline_free(r->pipeline); /* its workers stop before the datasets go */
  ct_session_free(r->session);
  if (r->placement.file) fclose(r->placement.file); /* after the session, which writes to it */
  free(r->placement.text);
  ct_training_graph_free(&r->tg);
  ct_trainer_model_close(&r->model);
  ct_dataset_free(r->train_set);
  ct_dataset_free(r->test_set);
}

/* With a GPU in the session, room for the next step's feeds, which each
 * step stages on the GPUs (next_feeds_to_stage). Returns 1 when out of
 * host memory. */
static int stage_on_gpus(ct_train_run *r) {
  int gpus = 0;
  for (int d = 0; d < ct_session_device_count(r->session); ++d) {
    ct_device_info info;
    gpus += ct_session_device_info(r->session, d, &info) == 0 && strcmp(info.kind, "GPU") == 0;
  }
  if (gpus == 0) return 0;
  r->step.next_feeds = calloc(1, sizeof *r->step.next_feeds);
  r->step.next_weights = calloc((size_t)(r->options->dataset.batch_size + r->towers.n_towers),
                                sizeof *r->step.next_weights);
  return r->step.next_feeds == NULL || r->step.next_weights == NULL;
}

/* The session; with train.log_dir on rank 0, its placement log kept in
 * run->placement for TensorBoard, and printed as well where
 * session.log_device_placement asks. */
static ct_session *open_session(ct_train_run *r, ct_status *status) {
  const ct_trainer_options *o = r->options;
  if (o->train.log_dir[0] == '\0' || ct_cluster_rank() != 0)
    return ct_session_new(r->tg.graph, &o->session, status);
  ct_session_options options = o->session;
  r->placement.file = open_memstream(&r->placement.text, &r->placement.size);
  if (r->placement.file == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory for the placement log");
    return NULL;
  }
  options.log_device_placement = 1;
  options.log = r->placement.file;
  ct_session *session = ct_session_new(r->tg.graph, &options, status);
  fflush(r->placement.file);
  if (session && o->session.log_device_placement) {
    FILE *print = o->session.log ? o->session.log : stderr;
    fputs(r->placement.text, print);
    fflush(print);
  }
  return session;
}

/* Two towers on one device would run one after the other and sum nothing:
 * refused whether the config names a device twice (ct_towers_build says so)
 * or soft placement moved a tower whose device the session lacks onto
 * another tower's. */
static int placed_as_asked(const char *asked, const char *placed) {
  ct_device_spec want, got;
  if (ct_device_spec_parse(asked, &want, NULL) || ct_device_spec_parse(placed, &got, NULL))
    return 0;
  return ct_device_spec_matches(&want, got.job, got.task, got.kind, got.id);
}

static int check_towers_apart(const ct_train_run *r, ct_status *status) {
  const char *placed[CT_MAX_DEVICES];
  for (int k = 0; k < r->towers.n_towers; ++k) {
    placed[k] = ct_session_node_device(r->session, r->tg.train.logits[k].node, status);
    if (placed[k] == NULL) return 1;
    for (int j = 0; j < k; ++j) {
      if (strcmp(placed[j], placed[k]) != 0) continue;
      const int moved = placed_as_asked(r->towers.devices[k], placed[k]) ? j : k;
      ct_status_set(status, CT_INVALID_ARGUMENT,
                    "towers %d and %d would both run on %s: this session has no device '%s' "
                    "(tower %d's), and soft placement put it there; give each tower a device "
                    "the session has (`ctower devices` lists them; session.device_count gives "
                    "more CPU devices)",
                    j, k, placed[k], r->towers.devices[moved], moved);
      return 1;
    }
  }
  return 0;
}

/* The two splits of a dataset, against each other as soon as they are
 * open: examples in each, one image shape, one class count. */
static int check_splits(const ct_trainer_options *o, const ct_dataset *train,
                        const ct_dataset *test, ct_status *status) {
  const char *where = strcmp(o->dataset.name, "synthetic") == 0 ? "synthetic" : o->dataset.path;
  if (ct_dataset_size(train) == 0 || ct_dataset_size(test) == 0) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "the %s split of dataset '%s' has no examples; training needs both a training "
                  "and a test split",
                  ct_dataset_size(train) == 0 ? "training" : "test", where);
    return 1;
  }
  int64_t shape[2][3];
  ct_dataset_image_shape(train, &shape[0][0], &shape[0][1], &shape[0][2]);
  ct_dataset_image_shape(test, &shape[1][0], &shape[1][1], &shape[1][2]);
  if (memcmp(shape[0], shape[1], sizeof shape[0]) != 0 ||
      ct_dataset_num_classes(train) != ct_dataset_num_classes(test)) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "dataset '%s': the training images are %lldx%lldx%lld in %d classes but the "
                  "test images %lldx%lldx%lld in %d; both splits must have one shape and one set "
                  "of classes",
                  where, (long long)shape[0][0], (long long)shape[0][1], (long long)shape[0][2],
                  ct_dataset_num_classes(train), (long long)shape[1][0], (long long)shape[1][1],
                  (long long)shape[1][2], ct_dataset_num_classes(test));
    return 1;
  }
  return 0;
}

/* A batch no larger than the training split: every step is then on
 * dataset.batch_size examples, as the run says. */
static int check_batch_size(const ct_trainer_options *o, const ct_dataset *train,
                            ct_status *status) {
  const int64_t examples = ct_dataset_size(train);
  if (o->dataset.batch_size <= examples) return 0;
  ct_status_set(status, CT_INVALID_ARGUMENT,
                "dataset.batch_size (%lld) is larger than the training split of dataset '%s' "
                "(%lld examples); set dataset.batch_size to at most %lld",
                (long long)o->dataset.batch_size,
                strcmp(o->dataset.name, "synthetic") == 0 ? "synthetic" : o->dataset.path,
                (long long)examples, (long long)examples);
  return 1;
}

/* The training set's batches, run by the input pipeline. */
static int open_pipeline(ct_train_run *r, ct_status *status) {
  const ct_trainer_options *o = r->options;
  if (o->dataset.cache && ct_dataset_enable_cache(r->train_set, status)) return 1;
  /* this process's rows of every batch: the one split of it */
  ct_pipeline_options rows = {.split = ct_tower_split_parts(&r->split)};
  /* with GPU towers, batches in memory the GPUs copy from where it is */
  if (r->step.next_feeds) ct_session_host_memory(r->session, &rows.memory);
  r->pipeline = ct_trainer_open_pipeline(o, r->train_set, o->dataset.batch_size, 1, rows, status);
  return r->pipeline == NULL;
}

/* The strategy's state for the run, once the session exists. */
static int start_strategy(ct_train_run *r, ct_status *status) {
  if (r->strategy->run_new == NULL) return 0;
  const ct_strategy_env env = {r->session,          r->tg.graph,
                               &r->tg.train.towers, &r->towers,
                               r->tg.train.update.op, r->tg.train.update.learning_rate,
                               ct_interrupt_combine};
  return r->strategy->run_new(&env, &r->strategy_state, status);
}

int ct_train_run_setup_graph(ct_train_run *r, const ct_trainer_options *o,
                             const ct_tower_options *towers, ct_status *status) {
  memset(r, 0, sizeof *r);
  r->options = o;
  r->towers = *towers;
  if (ct_trainer_check_options(o, status)) return 1;
  if ((r->strategy = ct_strategy_of(towers->variable_update)) == NULL) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "unknown variable update %d; resolve the towers with ct_towers_resolve",
                  (int)towers->variable_update);
    return 1;
  }
  if (ct_tower_split_place(&r->split, towers, status)) return 1;
  r->towers.job_towers = r->split.global_towers;
  if (o->dataset.batch_size < r->split.global_towers) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "dataset.batch_size (%lld) is smaller than the number of towers (%d%s); each "
                  "tower needs at least one example of every full batch",
                  (long long)o->dataset.batch_size, r->split.global_towers,
                  ct_cluster_size() > 1 ? " over all ranks" : "");
    return 1;
  }
  r->train_set = ct_trainer_open_dataset(o, 1, status);
  if (r->train_set == NULL) return 1;
  r->test_set = ct_trainer_open_dataset(o, 0, status);
  if (r->test_set == NULL || check_splits(o, r->train_set, r->test_set, status) ||
      check_batch_size(o, r->train_set, status))
    return 1;
  int64_t h, w, ch;
  ct_trainer_image_shape(o, r->train_set, &h, &w, &ch); /* what the model sees: the crop */
  if (ct_trainer_model_open(o, &r->model, status) ||
      ct_training_graph_build(&r->tg, &r->model.def, h, w, ch,
                              ct_dataset_num_classes(r->train_set), (uint64_t)o->train.seed,
                              &r->towers, &o->train.optimizer, status))
    return 1;
  r->session = open_session(r, status);
  if (r->session == NULL || check_towers_apart(r, status) || start_strategy(r, status)) return 1;
  const int n_towers = r->towers.n_towers;
  r->step.feeds = calloc(1, sizeof *r->step.feeds);
  r->step.weights = calloc((size_t)(o->dataset.batch_size + n_towers), sizeof *r->step.weights);
  /* the loss, each tower's logits, and what the strategy fetches (at most
   * every gradient) */
  const int extra = r->tg.train.towers.n_gradients;
  r->step.fetches = calloc((size_t)(n_towers + 1 + extra), sizeof *r->step.fetches);
  if (!r->step.feeds || !r->step.weights || !r->step.fetches || stage_on_gpus(r)) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory setting up the towers");
    return 1;
  }
  /* measured speeds stay within a process: across ranks the split is even */
  ct_tower_speeds_init(&r->speeds,
                       o->train.split == CT_BATCH_SPLIT_AUTO && n_towers > 1 && ct_cluster_size() == 1);
  if ((r->observed.timeline = ct_run_metadata_new()) == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory setting up the towers");
    return 1;
  }
  r->step.fetches[0] = r->tg.train.towers.loss;
  for (int k = 0; k < n_towers; ++k) r->step.fetches[k + 1] = r->tg.train.logits[k];
  r->step.n_fetches = n_towers + 1;
  if (r->strategy->step_fetches)
    r->step.n_fetches +=
        r->strategy->step_fetches(r->strategy_state, r->step.fetches + n_towers + 1);
  return 0;
}

int ct_train_run_setup(ct_train_run *r, const ct_trainer_options *o, const ct_tower_options *towers,
                       ct_status *status) {
  return ct_train_run_setup_graph(r, o, towers, status) || open_pipeline(r, status);
}

/* Correct predictions among the first `rows` rows of logits [*, classes]. */
static int64_t count_correct(const ct_tensor *logits, const int32_t *labels, int64_t rows) {
  const int64_t classes = logits->shape.dims[1];
  int64_t correct = 0;
  for (int64_t i = 0; i < rows; ++i) {
    const float *z = ct_tensor_f32(logits) + i * classes;
    int64_t best = 0;
    for (int64_t j = 1; j < classes; ++j) best = z[j] > z[best] ? j : best;
    correct += best == labels[i];
  }
  return correct;
}

int64_t ct_train_run_next_batch(ct_train_run *r, ct_status *status) {
  /* input_start .. input_end: how long training waits for its batch */
  r->observed.times.input_start = ct_monotonic_seconds();
  ct_pipeline_batch batch;
  const int64_t n = ct_pipeline_next(r->pipeline, &batch, status);
  r->observed.times.input_end = ct_monotonic_seconds();
  if (n <= 0) return n;
  ct_tower_split_take(&r->split, &batch, &r->speeds);
  r->buf = (ct_batch_buffers){batch.images, batch.labels}; /* the pipeline's: no copy */
  r->observed.rows = r->split.rows;
  return n;
}

/* Whether a feed's tensor views rows of `batch`. */
static int views_batch(const ct_tensor *view, const ct_tensor *batch) {
  const char *data = view->data, *start = batch->data;
  return data >= start && data < start + ct_tensor_nbytes(batch);
}

/* The next step's feeds for this step to stage on the GPUs
 * (ct_session_run_staged): the towers' shards of the pipeline's next
 * batch, when it is ready now and its towers take the rows this step's
 * take; every other feed (weights, first examples, the learning rate) is
 * left to the next step (a NULL value). NULL: nothing to stage. */
static const ct_feed *next_feeds_to_stage(ct_train_run *r, int n_feeds) {
  ct_pipeline_batch next;
  if (r->step.next_feeds == NULL || ct_pipeline_peek(r->pipeline, &next) != r->split.share.total ||
      next.first != r->split.share.first || next.rows != r->split.rows)
    return NULL;
  ct_tower_feeds *f = r->step.next_feeds;
  ct_classifier_make_feeds(&r->tg.train, next.images, next.labels, r->split.rows, r->split.sizes,
                           &r->split.share, f, r->step.next_weights);
  for (int k = 0; k < n_feeds; ++k)
    if (k >= f->n_feeds ||
        !(views_batch(f->feeds[k].value, next.images) || views_batch(f->feeds[k].value, next.labels)))
      f->feeds[k] = (ct_feed){r->step.feeds->feeds[k].output, NULL};
  return f->feeds;
}

int ct_train_run_feeds(ct_train_run *r, const ct_tensor *learning_rate) {
  int n_feeds =
      ct_classifier_make_feeds(&r->tg.train, r->buf.images, r->buf.labels, r->split.rows,
                               r->split.sizes, &r->split.share, r->step.feeds, r->step.weights);
  r->step.feeds->feeds[n_feeds++] = (ct_feed){r->tg.train.update.learning_rate, learning_rate};
  return n_feeds;
}

/* FAILED_PRECONDITION when the loss is no longer finite. */
static int check_loss(const ct_train_run *r, double loss, int64_t global_step, ct_status *status) {
  const ct_train_options *t = &r->options->train;
  if (!isfinite(loss)) {
    ct_status_set(status, CT_FAILED_PRECONDITION,
                  "the loss became %g at step %lld; lower train.optimizer.learning_rate "
                  "(now %g) and train again",
                  loss, (long long)global_step + 1, t->schedule.base_rate);
    return 1;
  }
  return 0;
}

int ct_train_run_step(ct_train_run *r, int64_t global_step, double epochs_done, double *loss,
                      double *accuracy, ct_status *status) {
  const ct_train_options *t = &r->options->train;
  const int towers = r->towers.n_towers;
  const int64_t n = r->split.share.total;
  r->learning_rate = ct_schedule_rate(&t->schedule, epochs_done);
  float lr = ct_optimizer_learning_rate(&t->optimizer, r->learning_rate, global_step + 1);
  ct_tensor lr_tensor = {CT_F32, ct_shape_of(0), &lr, 0};
  r->ran = 1;
  ct_strategy_step step = {.step = global_step, .rate = lr, .signal = ct_interrupt_requested()};
  if (r->split.job_towers == 0 && r->strategy->own_step) { /* a ps task: the workers' gradients */
    r->observed.times.run_start = r->observed.times.sync_start = ct_monotonic_seconds();
    const int failed = r->strategy->own_step(r->strategy_state, &step, status);
    r->observed.times.run_end = r->observed.times.sync_end = ct_monotonic_seconds();
    if (failed) return 1;
    r->interrupted = step.signal;
    *loss = step.sums[0];
    *accuracy = step.sums[1] / (double)(n > 0 ? n : 1);
    return check_loss(r, *loss, global_step, status);
  }
  const int n_feeds = ct_train_run_feeds(r, &lr_tensor);
  /* the whole step, or what the strategy runs instead (a worker with ps
   * tasks: the model's own updates; the optimizer's are the ps tasks') */
  ct_node *targets[64] = {r->tg.train.step};
  const int n_targets =
      r->strategy->step_targets ? r->strategy->step_targets(r->strategy_state, targets, 64) : 1;
  ct_tensor **out = calloc((size_t)r->step.n_fetches, sizeof *out);
  if (out == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory for a step's results");
    return 1;
  }
  ct_session_set_step(r->session, (uint64_t)global_step);
  r->observed.times.run_start = ct_monotonic_seconds();
  ct_run_metadata *timeline =
      r->speeds.on || r->observed.record_timeline ? r->observed.timeline : NULL;
  const ct_feed *next = next_feeds_to_stage(r, n_feeds);
  if (ct_session_run_staged(r->session, r->step.feeds->feeds, next, n_feeds, r->step.fetches,
                            r->step.n_fetches, targets, n_targets, out, timeline, status)) {
    free(out);
    return 1;
  }
  r->observed.times.run_end = ct_monotonic_seconds();
  if (r->speeds.on) {
    ct_node *logits[CT_MAX_DEVICES]; /* a node on each tower's device */
    for (int k = 0; k < towers; ++k) logits[k] = r->tg.train.logits[k].node;
    ct_tower_speeds_update(&r->speeds, r->session, logits, &r->split, r->observed.timeline);
  }
  /* this process's part of the loss and of the correct count; the job's
   * are their sums over the ranks */
  /* with the signal this rank got, counted by kind: every rank then stops
   * after the same step, with the same signal */
  const int sig = step.signal;
  double sums[4] = {ct_tensor_f32(out[0])[0], 0, sig == SIGINT, sig == SIGTERM};
  ct_tensor *logits = ct_towers_concat(towers, out + 1, r->split.sizes, status);
  if (logits) sums[1] = (double)count_correct(logits, ct_tensor_i32(r->buf.labels), r->split.rows);
  ct_tensor_free(logits);
  r->observed.times.sync_start = ct_monotonic_seconds();
  int failed = status->code != CT_OK;
  if (!failed && r->strategy->after_run) {
    step.sums[0] = sums[0], step.sums[1] = sums[1];
    step.run_seconds = r->observed.times.run_end - r->observed.times.run_start;
    step.fetched = out + towers + 1;
    failed = r->strategy->after_run(r->strategy_state, &step, status);
  }
  for (int k = 0; k < r->step.n_fetches; ++k) ct_tensor_free(out[k]);
  free(out);
  if (failed) return 1;
  ct_cluster_progress(global_step, -1, "the step's loss");
  if (r->towers.across_ranks && ct_cluster_allreduce_f64(sums, 4, status)) return 1;
  r->observed.times.sync_end = ct_monotonic_seconds();
  r->interrupted = step.stop ? step.signal
                             : ct_interrupt_combine(sums[2] > 0 ? SIGINT : 0,
                                                    sums[3] > 0 ? SIGTERM : 0);
  *loss = sums[0];
  *accuracy = sums[1] / (double)n;
  return check_loss(r, *loss, global_step, status);
}

int ct_train_run_end_epoch(ct_train_run *r, int epoch_done, ct_status *status) {
  if (r->strategy->end_epoch == NULL) return 0;
  ct_strategy_step step = {.step = -1, .signal = ct_interrupt_requested(), .epoch_done = epoch_done};
  if (r->strategy->end_epoch(r->strategy_state, &step, status)) return 1;
  if (step.stop) r->interrupted = step.signal;
  return 0;
}

int ct_train_run_report(ct_train_run *r, ct_status *status) {
  return r->strategy->report ? r->strategy->report(r->strategy_state, status) : 0;
}

int ct_train_run_estimate(ct_train_run *r, ct_run_estimate *e, ct_status *status) {
  memset(e, 0, sizeof *e);
  /* a full batch, split as a step would split it; the tensors' shapes only */
  const int64_t n = r->options->dataset.batch_size;
  ct_tower_split_predict(&r->split, n, &r->speeds);
  int64_t h, w, ch;
  ct_trainer_image_shape(r->options, r->train_set, &h, &w, &ch);
  const ct_tensor images = {CT_F32, ct_shape_of(4, r->split.rows, h, w, ch), NULL, 0};
  const ct_tensor labels = {CT_I32, ct_shape_of(1, r->split.rows), NULL, 0};
  int n_feeds =
      ct_classifier_make_feeds(&r->tg.train, &images, &labels, r->split.rows, r->split.sizes,
                               &r->split.share, r->step.feeds, r->step.weights);
  float lr = 0.0f;
  ct_tensor lr_tensor = {CT_F32, ct_shape_of(0), &lr, 0};
  r->step.feeds->feeds[n_feeds++] = (ct_feed){r->tg.train.update.learning_rate, &lr_tensor};
  return ct_session_estimate_run(r->session, r->step.feeds->feeds, n_feeds, r->step.fetches,
                                 r->towers.n_towers + 1, &r->tg.train.step, 1, e, status);
}

/* A hash of every variable's bytes, in the graph's order, but those each
 * rank holds its own of (compression's residuals); under a parameter
 * server across ranks, of the variables every rank holds (rank 0 alone
 * holds the optimizer's slots). */
static int hash_variables(ct_train_run *r, uint64_t *hash, ct_status *status) {
  uint64_t h = CT_FNV1A_START;
  const ct_tower_graph *t = &r->tg.train.towers;
  const int n = t->n_shared > 0 ? t->n_shared : ct_graph_variable_count(r->tg.graph);
  for (int i = 0; i < n; ++i) {
    const int v = t->n_shared > 0 ? t->shared[i] : i;
    if (ct_towers_is_local(t, v)) continue;
    ct_tensor *value = ct_session_read_variable(r->session, v, status);
    if (value == NULL) return 1;
    h = ct_fnv1a(h, value->data, ct_tensor_nbytes(value));
    ct_tensor_free(value);
  }
  *hash = ct_mix64(h);
  return 0;
}

int ct_train_run_check_replicas(ct_train_run *r, int64_t global_step, ct_status *status) {
  const int ranks = ct_cluster_size();
  /* with ps tasks the workers hold no slots: only the start is checked */
  const int on_ps_tasks = r->strategy->on_ps_tasks;
  if (ranks == 1 || (!r->towers.across_ranks && !on_ps_tasks) || (on_ps_tasks && r->ran))
    return 0;
  if (r->strategy->replicas_differ && r->strategy->replicas_differ(r->strategy_state))
    return 0; /* inside a block of block momentum: each rank learns on its own */
  uint64_t mine, *all = calloc((size_t)ranks, sizeof *all);
  if (all == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory checking the replicas");
    return 1;
  }
  ct_cluster_progress(global_step, -1, "the replicas' hash check");
  int failed =
      hash_variables(r, &mine, status) || ct_cluster_allgather(&mine, sizeof mine, all, status);
  for (int k = 1; !failed && k < ranks; ++k)
    if (all[k] != all[0]) {
      ct_status_set(status, CT_FAILED_PRECONDITION,
                    "the variables of worker %d differ from worker 0's at step %lld (hash "
                    "%016llx, not %016llx): every rank must start from the same config, seed "
                    "and checkpoint",
                    k, (long long)global_step, (unsigned long long)all[k],
                    (unsigned long long)all[0]);
      failed = 1;
    }
  free(all);
  return failed;
}

ct_observer *ct_train_run_observe(const ct_train_run *r, const ct_observe_options *options,
                                  int64_t first_sampled, ct_status *status) {
  return ct_observer_new(r->session, options->trace_path, options->trace_first, options->trace_end,
                         first_sampled, status);
}

int ct_train_run_finish_observing(ct_train_run *r, ct_observer *observer, ct_status *status) {
  ct_status ignored = CT_STATUS_INIT; /* a report without the FLOPs is still one */
  ct_run_estimate estimate = {0};
  const int estimated =
      ct_observer_samples(observer) > 0 && ct_train_run_estimate(r, &estimate, &ignored) == 0;
  const int failed = ct_observer_finish(observer, r->session, estimated ? &estimate : NULL, status);
  ct_run_estimate_free(&estimate);
  return failed;
}
