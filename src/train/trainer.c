/* `ctower train` and `ctower eval`: data, graph, session, the loop, the
 * progress line, evaluation and checkpoints. */
#include "ctower/trainer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctower/checkpoint.h"
#include "ctower/data.h"
#include "ctower/device_name.h"
#include "ctower/session.h"
#include "train/training_graph.h"

enum { EVAL_BATCH = 500 };

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- config to library settings ----------------------------------------- */

static void optimizer_from_config(const ct_config *c, ct_optimizer_config *o) {
  const char *name = c->train.optimizer.name;
  ct_optimizer_kind kind = strcmp(name, "sgd") == 0    ? CT_OPTIMIZER_SGD
                           : strcmp(name, "adam") == 0 ? CT_OPTIMIZER_ADAM
                                                       : CT_OPTIMIZER_MOMENTUM;
  ct_optimizer_config_defaults(o, kind);
  o->momentum = (float)c->train.optimizer.momentum;
  o->nesterov = c->train.optimizer.nesterov;
  o->weight_decay = (float)c->train.optimizer.weight_decay;
  o->beta1 = (float)c->train.optimizer.beta1;
  o->beta2 = (float)c->train.optimizer.beta2;
  o->epsilon = (float)c->train.optimizer.epsilon;
}

static void schedule_from_config(const ct_config *c, ct_schedule *s) {
  memset(s, 0, sizeof *s);
  const char *name = c->train.schedule.name;
  s->kind = strcmp(name, "step") == 0     ? CT_SCHEDULE_STEP
            : strcmp(name, "cosine") == 0 ? CT_SCHEDULE_COSINE
                                          : CT_SCHEDULE_CONSTANT;
  s->base_rate = c->train.optimizer.learning_rate;
  s->step_epochs = (double)c->train.schedule.step_epochs;
  s->gamma = c->train.schedule.gamma;
  s->min_rate = c->train.schedule.min_learning_rate;
  s->total_epochs = (double)c->train.epochs;
  s->warmup_epochs = (double)c->train.schedule.warmup_epochs;
}

void ct_session_options_from_config(const ct_config *c, ct_session_options *o) {
  ct_session_options_defaults(o);
  o->log_device_placement = c->session.log_device_placement;
  o->allow_soft_placement = c->session.allow_soft_placement;
  o->device_count_cpu = (int)c->session.device_count_cpu;
  o->device_count_gpu = (int)c->session.device_count_gpu;
  o->intra_op_parallelism_threads = (int)c->session.intra_op_parallelism_threads;
  o->inter_op_parallelism_threads = (int)c->session.inter_op_parallelism_threads;
  o->cpu_memory_limit = (size_t)c->session.memory_limit_mb_cpu << 20;
  if (c->session.n_cpu_virtual_devices > 0) { /* logical CPU devices with their own limits */
    o->device_count_cpu = c->session.n_cpu_virtual_devices;
    for (int i = 0; i < c->session.n_cpu_virtual_devices && i < CT_MAX_DEVICES; ++i)
      o->cpu_device_memory_limit[i] = (size_t)c->session.cpu_virtual_devices_mb[i] << 20;
  }
  o->gpu_memory_limit = (size_t)c->session.memory_limit_mb_gpu << 20;
  o->gpu_options.allow_growth = c->session.gpu_options.allow_growth;
  o->gpu_options.per_process_gpu_memory_fraction =
      c->session.gpu_options.per_process_gpu_memory_fraction;
  snprintf(o->gpu_options.visible_device_list, sizeof o->gpu_options.visible_device_list, "%s",
           c->session.gpu_options.visible_device_list);
  o->gpu_options.n_virtual_devices = c->session.gpu_options.n_virtual_devices;
  o->gpu_precision = strcmp(c->train.precision, "tf32") == 0   ? CT_PRECISION_TF32
                     : strcmp(c->train.precision, "bf16") == 0 ? CT_PRECISION_BF16
                                                               : CT_PRECISION_FP32;
  for (int i = 0; i < o->gpu_options.n_virtual_devices && i < CT_MAX_DEVICES; ++i)
    o->gpu_options.virtual_devices_mb[i] = c->session.gpu_options.virtual_devices_mb[i];
}

/* The train (train = 1) or test split the config names. */
static ct_dataset *open_dataset(const ct_config *c, int train, ct_status *status) {
  if (strcmp(c->dataset.name, "synthetic") == 0) {
    if (c->dataset.n_image_dims != 3) {
      ct_status_set(status, CT_INVALID_ARGUMENT,
                    "dataset.image_shape has %d entries; give [height, width, channels], "
                    "e.g. [32, 32, 3]",
                    c->dataset.n_image_dims);
      return NULL;
    }
    const int64_t *shape = c->dataset.image_shape;
    return ct_dataset_new_synthetic(train ? c->dataset.train_size : c->dataset.test_size,
                                    shape[0], shape[1], shape[2], (int)c->dataset.num_classes,
                                    (uint64_t)c->train.seed + (uint64_t)train, status);
  }
  return ct_dataset_open_mnist(c->dataset.path, train, status);
}

/* ---- running batches ------------------------------------------------------ */

typedef struct batch_buffers {
  ct_tensor *images, *labels; /* sized for the largest batch */
} batch_buffers;

static int batch_buffers_init(batch_buffers *b, int64_t batch, const ct_dataset *ds,
                              ct_status *status) {
  int64_t h, w, ch;
  ct_dataset_image_shape(ds, &h, &w, &ch);
  ct_shape is = ct_shape_of(4, batch, h, w, ch), ls = ct_shape_of(1, batch);
  b->images = ct_tensor_new(CT_F32, &is, status);
  b->labels = ct_tensor_new(CT_I32, &ls, status);
  return b->images == NULL || b->labels == NULL;
}

static void batch_buffers_free(batch_buffers *b) {
  ct_tensor_free(b->images);
  ct_tensor_free(b->labels);
}

typedef struct eval_result {
  double loss, accuracy;
} eval_result;

static int evaluate(ct_session *s, const ct_training_graph *tg, const ct_dataset *test,
                    eval_result *result, ct_status *status) {
  ct_batcher *batcher = ct_batcher_new(test, EVAL_BATCH, 0, 0, status);
  batch_buffers buf = {0};
  if (batcher == NULL || batch_buffers_init(&buf, EVAL_BATCH, test, status)) {
    ct_batcher_free(batcher);
    batch_buffers_free(&buf);
    return 1;
  }
  ct_batcher_start_epoch(batcher, 0);
  double loss_sum = 0, correct = 0;
  int64_t seen = 0, n;
  int failed = 0;
  /* each batch is split evenly over the evaluation copies, one per device;
   * a batch smaller than their count uses the first n */
  while (!failed && (n = ct_batcher_next(batcher, ct_tensor_f32(buf.images), ct_tensor_i32(buf.labels))) > 0) {
    const int copies = n < tg->n_eval ? (int)n : tg->n_eval;
    int64_t sizes[CT_MAX_DEVICES];
    ct_towers_split(copies, n, NULL, sizes);
    ct_tensor shard_images[CT_MAX_DEVICES], shard_labels[CT_MAX_DEVICES];
    ct_feed feeds[2 * CT_MAX_DEVICES];
    ct_output fetches[2 * CT_MAX_DEVICES];
    for (int k = 0, first = 0; k < copies; first += (int)sizes[k], ++k) {
      shard_images[k] = ct_tensor_rows(buf.images, first, sizes[k]);
      shard_labels[k] = ct_tensor_rows(buf.labels, first, sizes[k]);
      feeds[2 * k] = (ct_feed){tg->eval[k].images, &shard_images[k]};
      feeds[2 * k + 1] = (ct_feed){tg->eval[k].labels, &shard_labels[k]};
      fetches[2 * k] = tg->eval[k].loss_sum;
      fetches[2 * k + 1] = tg->eval[k].accuracy;
    }
    ct_tensor *out[2 * CT_MAX_DEVICES];
    failed = ct_session_run(s, feeds, 2 * copies, fetches, 2 * copies, NULL, 0, out, status);
    if (failed) break;
    for (int k = 0; k < copies; ++k) {
      loss_sum += ct_tensor_f32(out[2 * k])[0];
      /* the count right, exactly: the fraction is an f32 */
      correct += round(ct_tensor_f32(out[2 * k + 1])[0] * (double)sizes[k]);
      ct_tensor_free(out[2 * k]);
      ct_tensor_free(out[2 * k + 1]);
    }
    seen += n;
  }
  ct_batcher_free(batcher);
  batch_buffers_free(&buf);
  if (failed) return 1;
  result->loss = seen ? loss_sum / (double)seen : 0;
  result->accuracy = seen ? correct / (double)seen : 0;
  return 0;
}

/* ---- checkpoints ------------------------------------------------------------ */

/* Where training stands: the global step, the epochs done, and the index
 * of the next example within the epoch under way (0 between epochs; a run
 * stopped by max_steps stops inside one). */
typedef struct train_position {
  int64_t step, epoch, example;
} train_position;

static int save_checkpoint(ct_session *s, const ct_training_graph *tg, const ct_config *c,
                           const train_position *at, double test_accuracy, ct_status *status) {
  /* Replicas hold the same values as their originals: only originals are
   * saved, under their tower-free names, so any tower count restores them. */
  const ct_graph *g = tg->graph;
  ct_named_tensor *tensors = calloc((size_t)ct_graph_variable_count(g) + 1, sizeof *tensors);
  if (tensors == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory saving a checkpoint");
    return 1;
  }
  int n = 0;
  for (int i = 0; i < ct_graph_variable_count(g); ++i) {
    if (!ct_variable_is_original(g, i)) continue;
    tensors[n].name = ct_variable_checkpoint_name(g, i);
    tensors[n].tensor = ct_session_read_variable(s, i, status);
    if (tensors[n++].tensor == NULL) break;
  }
  char step_text[32], epoch_text[32], example_text[32], accuracy_text[32];
  snprintf(step_text, sizeof step_text, "%lld", (long long)at->step);
  snprintf(epoch_text, sizeof epoch_text, "%lld", (long long)at->epoch);
  snprintf(example_text, sizeof example_text, "%lld", (long long)at->example);
  snprintf(accuracy_text, sizeof accuracy_text, "%.4f", test_accuracy);
  const char *metadata[] = {"format",        "ctower",       "ctower_version", CTOWER_VERSION,
                            "model",         c->model.name,  "dataset",        c->dataset.name,
                            "global_step",   step_text,      "epoch",          epoch_text,
                            "epoch_example", example_text,   "test_accuracy",  accuracy_text};
  int failed = status->code != CT_OK ||
               ct_checkpoint_write(c->train.checkpoint, tensors, n, metadata,
                                   (int)(sizeof metadata / sizeof metadata[0] / 2), status);
  for (int i = 0; i < n; ++i) ct_tensor_free((ct_tensor *)tensors[i].tensor);
  free(tensors);
  return failed;
}

/* A count the checkpoint's metadata holds under `key`; 0 when it lacks it. */
static int64_t metadata_count(const ct_checkpoint *ck, const char *key) {
  const char *text = ct_checkpoint_metadata(ck, key);
  return text ? strtoll(text, NULL, 10) : 0;
}

/* Copies every variable the graph has (replicas from their original's
 * entry) from the checkpoint; fills *at from its metadata when not NULL
 * (what a checkpoint lacks is 0). */
static int restore_checkpoint(ct_session *s, const ct_graph *g, const char *path,
                              const char *model_name, train_position *at, ct_status *status) {
  ct_checkpoint *ck = ct_checkpoint_read(path, status);
  if (ck == NULL) return 1;
  const char *saved_model = ct_checkpoint_metadata(ck, "model");
  if (saved_model && strcmp(saved_model, model_name) != 0) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "checkpoint '%s' holds model '%s' but the config asks for '%s'; set "
                  "model.name: %s or pass the matching checkpoint",
                  path, saved_model, model_name, saved_model);
    ct_checkpoint_free(ck);
    return 1;
  }
  if (at) {
    at->step = metadata_count(ck, "global_step");
    at->epoch = metadata_count(ck, "epoch");
    at->example = metadata_count(ck, "epoch_example");
  }
  for (int i = 0; i < ct_graph_variable_count(g); ++i) {
    const char *name = ct_variable_checkpoint_name(g, i);
    const ct_tensor *saved = ct_checkpoint_find(ck, name);
    ct_shape shape = ct_graph_variable_shape(g, i);
    if (saved == NULL || saved->dtype != CT_F32 || !ct_shape_equal(&saved->shape, &shape)) {
      char want[96];
      ct_status_set(status, CT_INVALID_ARGUMENT,
                    "checkpoint '%s' has no f32 variable '%s' of shape %s; was it written for "
                    "another model?",
                    path, name, ct_shape_str(&shape, want, sizeof want));
      break;
    }
    if (ct_session_assign_variable(s, i, saved, status)) break;
  }
  ct_checkpoint_free(ck);
  return status->code != CT_OK;
}

/* ---- progress ------------------------------------------------------------------ */

typedef struct progress {
  int tty;
  double last_print;
  char shards[128];   /* "towers 64+64" when there are several */
} progress;

static void format_duration(double seconds, char *buf, size_t size) {
  if (!(seconds >= 0) || seconds > 1e7) seconds = 0;
  long s = (long)(seconds + 0.5);
  if (s >= 3600)
    snprintf(buf, size, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  else
    snprintf(buf, size, "%ld:%02ld", s / 60, s % 60);
}

static void progress_update(progress *p, int64_t epoch, int64_t epochs, int64_t batch,
                            int64_t batches, double loss, double accuracy, double images_per_sec,
                            double eta, int force) {
  double t = now_seconds();
  int every_tenth = batches >= 10 && batch % (batches / 10) == 0;
  if (!force && (p->tty ? t - p->last_print < 0.2 : !every_tenth)) return;
  p->last_print = t;
  enum { WIDTH = 24 };
  char bar[WIDTH + 1];
  int filled = (int)(WIDTH * batch / (batches ? batches : 1));
  for (int i = 0; i < WIDTH; ++i) bar[i] = i < filled ? '=' : (i == filled ? '>' : ' ');
  bar[WIDTH] = '\0';
  char eta_text[32];
  format_duration(eta, eta_text, sizeof eta_text);
  printf("%sepoch %lld/%lld [%s] %lld/%lld loss %.4f acc %.4f %.0f img/s%s%s ETA %s%s",
         p->tty ? "\r" : "", (long long)epoch, (long long)epochs, bar, (long long)batch,
         (long long)batches, loss, accuracy, images_per_sec, p->shards[0] ? " " : "", p->shards,
         eta_text, p->tty ? "\033[K" : "\n");
  fflush(stdout);
}

/* --memory-stats: every device's allocator, exactly. */
static void print_memory_stats(ct_session *s) {
  for (int d = 0; d < ct_session_device_count(s); ++d) {
    ct_memory_stats m;
    ct_session_memory_stats(s, d, &m);
    char limit[32] = "none";
    if (m.limit) snprintf(limit, sizeof limit, "%zu", m.limit);
    printf("memory %s: in use %zu bytes, peak %zu, reserved %zu, largest free chunk %zu, "
           "allocations %llu, limit %s\n",
           ct_session_device_name(s, d), m.bytes_in_use, m.peak_bytes_in_use, m.bytes_reserved,
           m.largest_free_chunk, (unsigned long long)m.allocations, limit);
  }
}

/* ---- train ---------------------------------------------------------------------- */

typedef struct train_run {
  const ct_config *config;
  const ct_train_flags *flags;
  ct_dataset *train_set, *test_set;
  ct_training_graph tg;
  ct_session *session;
  ct_batcher *batcher;
  batch_buffers buf;
  ct_optimizer_config optimizer;
  ct_schedule schedule;
  ct_tower_options towers;
  ct_tower_feeds *feeds;  /* per tower, then the learning rate */
  float *weights;         /* batch + towers */
  ct_output *fetches;     /* loss, then each tower's logits */
  int64_t sizes[CT_MAX_DEVICES];  /* the last step's shard sizes */
  int auto_split;                 /* devices.split: auto */
  double speeds[CT_MAX_DEVICES];  /* auto: examples/s of each tower, smoothed; 0 until measured */
  ct_run_metadata *timeline;      /* auto: where the speeds come from */
} train_run;

static void train_run_free(train_run *r) {
  ct_run_metadata_free(r->timeline);
  free(r->feeds);
  free(r->weights);
  free(r->fetches);
  ct_batcher_free(r->batcher);
  batch_buffers_free(&r->buf);
  ct_session_free(r->session);
  ct_training_graph_free(&r->tg);
  ct_dataset_free(r->train_set);
  ct_dataset_free(r->test_set);
}

/* Puts towers [first, first + count) on /KIND:0, /KIND:1, ... */
static void towers_on(ct_tower_options *t, int first, int count, const char *kind) {
  for (int k = 0; k < count; ++k)
    snprintf(t->devices[first + k], sizeof t->devices[first + k], "/%s:%d", kind, k);
}

/* The tower devices: devices.n_gpus (cxflow's key: /gpu:0 ..), else
 * devices.n_towers (the first N devices of the preferred type: GPUs when
 * the session has any, else CPU devices; -1: all of them), else the
 * devices.towers list. Towers that want a GPU the session lacks go to CPU
 * devices with a warning under soft placement, else it is an error. */
static int tower_devices(const ct_config *c, const ct_session_options *so, ct_tower_options *t,
                         ct_status *status) {
  const int cpus = so->device_count_cpu, gpus = ct_gpu_device_count(so);
  int64_t n = c->devices.n_gpus > 0 ? c->devices.n_gpus : c->devices.n_towers;
  if (n == 0) {
    t->n_towers = c->devices.n_towers_listed;
    for (int k = 0; k < t->n_towers; ++k)
      snprintf(t->devices[k], sizeof t->devices[k], "%s", c->devices.towers[k]);
    return 0;
  }
  if (n < 0) n = gpus > 0 ? gpus : cpus;
  const int want_gpus = c->devices.n_gpus > 0 || gpus > 0;
  const int64_t on_gpus = want_gpus ? (n < gpus ? n : gpus) : 0, on_cpus = n - on_gpus;
  if (want_gpus && on_cpus > 0) {
    if (!so->allow_soft_placement) {
      ct_status_set(status, CT_INVALID_ARGUMENT,
                    "%lld towers want GPUs but this session has %d GPU%s; set "
                    "session.allow_soft_placement: true to train the other towers on CPU "
                    "devices, or ask for fewer towers",
                    (long long)n, gpus, gpus == 1 ? "" : "s");
      return 1;
    }
    fprintf(stderr, "ctower: warning: %d GPU%s for %lld towers: towers %lld .. %lld run on CPU "
                    "devices /cpu:0 .. /cpu:%lld\n", gpus, gpus == 1 ? "" : "s", (long long)n,
            (long long)on_gpus, (long long)n - 1, (long long)on_cpus - 1);
  }
  if (on_cpus > cpus) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "%lld towers need %lld CPU devices but the session has %d; set "
                  "session.device_count: {CPU: %lld}",
                  (long long)n, (long long)on_cpus, cpus, (long long)on_cpus);
    return 1;
  }
  if (n > CT_MAX_DEVICES) {
    ct_status_set(status, CT_INVALID_ARGUMENT, "%lld towers asked for; at most %d", (long long)n,
                  CT_MAX_DEVICES);
    return 1;
  }
  t->n_towers = (int)n;
  towers_on(t, 0, (int)on_gpus, "gpu");
  towers_on(t, (int)on_gpus, (int)on_cpus, "cpu");
  return 0;
}

static int is_gpu_name(const char *name) {
  ct_device_spec spec;
  ct_status ignored = CT_STATUS_INIT;
  return ct_device_spec_parse(name, &spec, &ignored) == 0 && spec.kind == CT_DEVICE_KIND_GPU;
}

/* The towers and their variable update from the config's devices section. */
static int towers_from_config(const ct_config *c, const ct_session_options *so,
                              ct_tower_options *t, ct_status *status) {
  memset(t, 0, sizeof *t);
  t->variable_update = strcmp(c->devices.variable_update, "parameter_server") == 0
                           ? CT_VARIABLE_UPDATE_PARAMETER_SERVER
                           : CT_VARIABLE_UPDATE_REPLICATED;
  snprintf(t->ps_device, sizeof t->ps_device, "%s", c->devices.ps_device);
  if (tower_devices(c, so, t, status)) return 1;
  int all_gpus = 1, first_cpu = -1;
  for (int k = 0; k < t->n_towers; ++k)
    if (!is_gpu_name(t->devices[k])) {
      all_gpus = 0;
      if (first_cpu < 0) first_cpu = k;
    }
  const char *algorithm = c->devices.all_reduce;
  if (strcmp(algorithm, "nccl") == 0 && !all_gpus) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "devices.all_reduce: nccl needs every tower on a GPU, but tower %d is on %s%s; "
                  "use ring, tree or auto",
                  first_cpu, t->devices[first_cpu],
                  ct_gpu_device_count(so) == 0 ? " (this session has no GPU)" : "");
    return 1;
  }
  t->all_reduce = strcmp(algorithm, "tree") == 0  ? CT_ALL_REDUCE_TREE
                  : strcmp(algorithm, "ring") == 0 ? CT_ALL_REDUCE_RING
                  : all_gpus                       ? CT_ALL_REDUCE_COLLECTIVE /* nccl, auto */
                                                   : CT_ALL_REDUCE_RING;
  return 0;
}

static int train_run_setup(train_run *r, ct_status *status) {
  const ct_config *c = r->config;
  const ct_model_def *model = ct_model_find(c->model.name);
  if (model == NULL) {
    ct_status_set(status, CT_INVALID_ARGUMENT, "unknown model '%s'", c->model.name);
    return 1;
  }
  ct_session_options options;
  ct_session_options_from_config(c, &options);
  if (towers_from_config(c, &options, &r->towers, status)) return 1;
  if (c->dataset.batch_size < r->towers.n_towers) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "dataset.batch_size (%lld) is smaller than the number of towers (%d); each "
                  "tower needs at least one example of every full batch",
                  (long long)c->dataset.batch_size, r->towers.n_towers);
    return 1;
  }
  r->train_set = open_dataset(c, 1, status);
  if (r->train_set == NULL) return 1;
  r->test_set = open_dataset(c, 0, status);
  if (r->test_set == NULL) return 1;
  int64_t h, w, ch;
  ct_dataset_image_shape(r->train_set, &h, &w, &ch);
  optimizer_from_config(c, &r->optimizer);
  schedule_from_config(c, &r->schedule);
  if (ct_training_graph_build(&r->tg, model, h, w, ch, ct_dataset_num_classes(r->train_set),
                              (uint64_t)c->train.seed, &r->towers, &r->optimizer, status))
    return 1;
  r->session = ct_session_new(r->tg.graph, &options, status);
  if (r->session == NULL) return 1;
  r->batcher = ct_batcher_new(r->train_set, c->dataset.batch_size, c->dataset.shuffle,
                              (uint64_t)c->train.seed, status);
  if (r->batcher == NULL) return 1;
  const int towers = r->towers.n_towers;
  r->feeds = calloc(1, sizeof *r->feeds);
  r->weights = calloc((size_t)(c->dataset.batch_size + towers), sizeof *r->weights);
  r->fetches = calloc((size_t)(towers + 1), sizeof *r->fetches);
  if (!r->feeds || !r->weights || !r->fetches) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory setting up the towers");
    return 1;
  }
  r->auto_split = strcmp(c->devices.split, "auto") == 0 && towers > 1;
  if (r->auto_split && (r->timeline = ct_run_metadata_new()) == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory setting up the towers");
    return 1;
  }
  r->fetches[0] = r->tg.train.towers.loss;
  for (int k = 0; k < towers; ++k) r->fetches[k + 1] = r->tg.train.logits[k];
  return batch_buffers_init(&r->buf, c->dataset.batch_size, r->train_set, status);
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

/* split: auto. Each tower's speed is its shard over the kernel time of its
 * nodes (tower_k/... and their gradients) in the last step, smoothed. */
static void update_speeds(train_run *r) {
  double busy[CT_MAX_DEVICES] = {0};
  for (int i = 0; i < ct_run_metadata_event_count(r->timeline); ++i) {
    ct_timeline_event e = ct_run_metadata_event(r->timeline, i);
    const char *name = strncmp(e.node, "gradients/", 10) == 0 ? e.node + 10 : e.node;
    int k;
    if (sscanf(name, "tower_%d/", &k) == 1 && k >= 0 && k < r->towers.n_towers)
      busy[k] += e.end_us - e.start_us;
  }
  for (int k = 0; k < r->towers.n_towers; ++k) {
    if (busy[k] <= 0 || r->sizes[k] == 0) continue;
    double speed = (double)r->sizes[k] / busy[k];
    r->speeds[k] = r->speeds[k] > 0 ? 0.8 * r->speeds[k] + 0.2 * speed : speed;
  }
}

/* "1 tower", "2 towers (replicated)", "2 towers (parameter server on /cpu:0)". */
static const char *tower_summary(const ct_tower_options *t, char *buf, size_t size) {
  if (t->n_towers == 1)
    snprintf(buf, size, "1 tower");
  else if (t->variable_update == CT_VARIABLE_UPDATE_REPLICATED)
    snprintf(buf, size, "%d towers (replicated)", t->n_towers);
  else
    snprintf(buf, size, "%d towers (parameter server on %s)", t->n_towers, t->ps_device);
  return buf;
}

/* One optimizer step over all towers; fills the batch's loss and accuracy. */
static int train_step(train_run *r, int64_t n, int64_t global_step, double epochs_done,
                      double *loss, double *accuracy, ct_status *status) {
  const int towers = r->towers.n_towers;
  int measured = r->auto_split;
  for (int k = 0; k < towers; ++k) measured = measured && r->speeds[k] > 0;
  ct_towers_split(towers, n, measured ? r->speeds : NULL, r->sizes);
  int n_feeds = ct_classifier_make_feeds(&r->tg.train, r->buf.images, r->buf.labels, n, r->sizes,
                                         r->feeds, r->weights);
  float lr = ct_optimizer_learning_rate(&r->optimizer, ct_schedule_rate(&r->schedule, epochs_done),
                                        global_step + 1);
  ct_tensor lr_tensor = {CT_F32, ct_shape_of(0), &lr, 0};
  r->feeds->feeds[n_feeds++] = (ct_feed){r->tg.train.update.learning_rate, &lr_tensor};
  ct_tensor *out[CT_MAX_DEVICES + 1];
  ct_session_set_step(r->session, (uint64_t)global_step);
  if (ct_session_run_traced(r->session, r->feeds->feeds, n_feeds, r->fetches, towers + 1,
                            &r->tg.train.step, 1, out, r->timeline, status))
    return 1;
  if (r->auto_split) update_speeds(r);
  *loss = ct_tensor_f32(out[0])[0];
  ct_tensor *logits = ct_towers_concat(towers, out + 1, r->sizes, status);
  if (logits) *accuracy = (double)count_correct(logits, ct_tensor_i32(r->buf.labels), n) / (double)n;
  ct_tensor_free(logits);
  for (int k = 0; k <= towers; ++k) ct_tensor_free(out[k]);
  if (status->code != CT_OK) return 1;
  if (!isfinite(*loss)) {
    ct_status_set(status, CT_FAILED_PRECONDITION,
                  "the loss became %g at step %lld; lower train.optimizer.learning_rate "
                  "(now %g) and train again",
                  *loss, (long long)global_step + 1, r->config->train.optimizer.learning_rate);
    return 1;
  }
  return 0;
}

int ct_train_main(const ct_config *c, const ct_train_flags *flags, ct_status *status) {
  char summary[128];
  train_run r;
  memset(&r, 0, sizeof r);
  r.config = c;
  r.flags = flags;
  if (train_run_setup(&r, status)) {
    train_run_free(&r);
    return 1;
  }
  const int64_t batches = ct_batcher_batches_per_epoch(r.batcher);
  const int64_t epochs = c->train.epochs;
  progress prog = {isatty(STDOUT_FILENO) && !flags->quiet, 0, ""};
  printf("ctower %s: training %s on %s (%lld train / %lld test examples), batch %lld, %lld "
         "epochs, %s lr %g, seed %lld\n",
         CTOWER_VERSION, c->model.name, c->dataset.name, (long long)ct_dataset_size(r.train_set),
         (long long)ct_dataset_size(r.test_set), (long long)c->dataset.batch_size,
         (long long)epochs, c->train.optimizer.name, c->train.optimizer.learning_rate,
         (long long)c->train.seed);
  printf("%s:", tower_summary(&r.towers, summary, sizeof summary));
  for (int k = 0; k < r.towers.n_towers; ++k) {
    ct_status ignored = CT_STATUS_INIT;
    const char *device = ct_session_node_device(r.session, r.tg.train.logits[k].node, &ignored);
    ct_device_info info = {0};
    for (int d = 0; d < ct_session_device_count(r.session); ++d)
      if (device && strcmp(ct_session_device_name(r.session, d), device) == 0)
        ct_session_device_info(r.session, d, &info);
    const int gpu = info.kind && strcmp(info.kind, "GPU") == 0;
    printf("%s %s (%d %s%s)", k ? "," : "", device ? device : "?", info.threads,
           gpu ? "SM" : "thread", info.threads == 1 ? "" : "s");
  }
  printf("\n");
  fflush(stdout);
  const double start = now_seconds();
  train_position at = {0, 0, 0};
  int failed = 0, stop = 0, evaluated = 0;
  if (flags->resume && c->train.checkpoint[0] && access(c->train.checkpoint, F_OK) == 0) {
    failed = restore_checkpoint(r.session, r.tg.graph, c->train.checkpoint, c->model.name, &at,
                                status);
    if (!failed && at.example > 0)
      printf("resumed from %s: epoch %lld at example %lld, step %lld\n", c->train.checkpoint,
             (long long)at.epoch + 1, (long long)at.example, (long long)at.step);
    else if (!failed)
      printf("resumed from %s: epoch %lld done, step %lld\n", c->train.checkpoint,
             (long long)at.epoch, (long long)at.step);
  }
  int64_t global_step = at.step;
  if (c->train.max_steps > 0 && global_step >= c->train.max_steps) stop = 1; /* resumed, done */
  eval_result test = {0, 0};
  for (int64_t epoch = at.epoch; epoch < epochs && !failed && !stop; ++epoch) {
    ct_batcher_start_epoch(r.batcher, epoch);
    int64_t batch = 0;
    if (epoch == at.epoch && at.example > 0) { /* a checkpoint from inside this epoch */
      ct_batcher_seek(r.batcher, at.example);
      batch = at.example / c->dataset.batch_size;
    }
    const double epoch_start = now_seconds();
    double loss_sum = 0, accuracy_sum = 0;
    int64_t examples = 0, first_batch = batch, n;
    while (!failed && (n = ct_batcher_next(r.batcher, ct_tensor_f32(r.buf.images),
                                           ct_tensor_i32(r.buf.labels))) > 0) {
      double loss, accuracy;
      failed = train_step(&r, n, global_step, (double)epoch + (double)batch / (double)batches,
                          &loss, &accuracy, status);
      if (failed) break;
      ++global_step, ++batch;
      loss_sum += loss * (double)n;
      accuracy_sum += accuracy * (double)n;
      examples += n;
      double elapsed = now_seconds() - epoch_start;
      double rate = (double)examples / (elapsed > 0 ? elapsed : 1e-9);
      double eta = elapsed / (double)(batch - first_batch) * (double)(batches - batch);
      if (r.towers.n_towers > 1) /* the shard sizes of this step */
        for (int k = 0, used = 0; k < r.towers.n_towers && used < (int)sizeof prog.shards; ++k)
          used += snprintf(prog.shards + used, sizeof prog.shards - (size_t)used, "%s%lld",
                           k ? "+" : "towers ", (long long)r.sizes[k]);
      if (!flags->quiet)
        progress_update(&prog, epoch + 1, epochs, batch, batches, loss_sum / (double)examples,
                        accuracy_sum / (double)examples, rate, eta, 0);
      if (c->train.max_steps > 0 && global_step >= c->train.max_steps) {
        stop = 1;
        break;
      }
    }
    if (failed) break;
    double epoch_time = now_seconds() - epoch_start;
    failed = evaluate(r.session, &r.tg, r.test_set, &test, status);
    if (failed) break;
    evaluated = 1;
    if (prog.tty) printf("\r\033[K");
    printf("epoch %lld/%lld: train loss %.4f acc %.4f | test loss %.4f acc %.4f | %.1f s, %.0f "
           "img/s\n",
           (long long)epoch + 1, (long long)epochs, loss_sum / (double)(examples ? examples : 1),
           accuracy_sum / (double)(examples ? examples : 1), test.loss, test.accuracy,
           epoch_time, (double)examples / (epoch_time > 0 ? epoch_time : 1e-9));
    fflush(stdout);
    if (c->train.checkpoint[0]) {
      /* stopped by max_steps inside the epoch: the checkpoint says where */
      const int64_t position = ct_batcher_position(r.batcher);
      const int inside = stop && position < ct_dataset_size(r.train_set);
      const train_position now = {global_step, inside ? epoch : epoch + 1, inside ? position : 0};
      failed = save_checkpoint(r.session, &r.tg, c, &now, test.accuracy, status);
    }
  }
  /* nothing left to train (a resumed run that was done): the accuracy shown
   * is still the model's */
  if (!failed && !evaluated) failed = evaluate(r.session, &r.tg, r.test_set, &test, status);
  if (!failed) {
    printf("done: %lld steps in %.1f s; test accuracy %.4f", (long long)global_step,
           now_seconds() - start, test.accuracy);
    if (c->train.checkpoint[0]) printf("; checkpoint %s", c->train.checkpoint);
    /* the devices that held anything (with towers on GPUs, not the CPU) */
    printf("\npeak memory:");
    for (int d = 0, listed = 0; d < ct_session_device_count(r.session); ++d) {
      ct_memory_stats m;
      ct_session_memory_stats(r.session, d, &m);
      if (m.peak_bytes_in_use == 0) continue;
      const char *name = ct_session_device_name(r.session, d);
      const char *short_name = strstr(name, "device:");
      printf("%s %s %.1f MiB", listed++ ? "," : "", short_name ? short_name + 7 : name,
             (double)m.peak_bytes_in_use / 1048576.0);
    }
    printf("\n");
    if (flags->memory_stats) print_memory_stats(r.session);
  }
  train_run_free(&r);
  return failed;
}

/* ---- bench ---------------------------------------------------------------------- */

static int compare_doubles(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int ct_bench_main(const ct_config *c, int steps, int warmup, ct_status *status) {
  train_run r;
  memset(&r, 0, sizeof r);
  r.config = c;
  double *times = calloc((size_t)steps, sizeof *times);
  if (times == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory");
    return 1;
  }
  int failed = train_run_setup(&r, status);
  int64_t epoch = 0, step = 0;
  if (!failed) ct_batcher_start_epoch(r.batcher, epoch);
  while (!failed && step < warmup + steps) {
    int64_t n = ct_batcher_next(r.batcher, ct_tensor_f32(r.buf.images), ct_tensor_i32(r.buf.labels));
    if (n < c->dataset.batch_size) { /* only full batches are timed */
      ct_batcher_start_epoch(r.batcher, ++epoch);
      continue;
    }
    double loss, accuracy, t0 = now_seconds();
    failed = train_step(&r, n, step, 0.0, &loss, &accuracy, status);
    if (!failed && step >= warmup) times[step - warmup] = now_seconds() - t0;
    ++step;
  }
  if (!failed) {
    qsort(times, (size_t)steps, sizeof *times, compare_doubles);
    double median = times[steps / 2];
    char summary[128];
    printf("%s, batch %lld, %s: %.1f images/sec, %.2f ms/step (median of %d steps after %d "
           "warm-up)\n",
           c->model.name, (long long)c->dataset.batch_size,
           tower_summary(&r.towers, summary, sizeof summary), (double)c->dataset.batch_size / median,
           median * 1e3, steps, warmup);
    print_memory_stats(r.session);
  }
  free(times);
  train_run_free(&r);
  return failed;
}

/* ---- eval --------------------------------------------------------------------- */

int ct_eval_main(const ct_config *c, const char *checkpoint_path, ct_status *status) {
  const char *path = checkpoint_path ? checkpoint_path : c->train.checkpoint;
  if (path == NULL || path[0] == '\0') {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "no checkpoint to evaluate: set train.checkpoint or pass --checkpoint FILE");
    return 1;
  }
  const ct_model_def *model = ct_model_find(c->model.name);
  if (model == NULL) {
    ct_status_set(status, CT_INVALID_ARGUMENT, "unknown model '%s'", c->model.name);
    return 1;
  }
  ct_dataset *test_set = open_dataset(c, 0, status);
  if (test_set == NULL) return 1;
  int64_t h, w, ch;
  ct_dataset_image_shape(test_set, &h, &w, &ch);
  ct_training_graph tg;
  ct_session *s = NULL;
  int failed = ct_training_graph_build(&tg, model, h, w, ch, ct_dataset_num_classes(test_set),
                                       (uint64_t)c->train.seed, NULL, NULL, status);
  if (!failed) {
    ct_session_options options;
    ct_session_options_from_config(c, &options);
    s = ct_session_new(tg.graph, &options, status);
    failed = s == NULL || restore_checkpoint(s, tg.graph, path, c->model.name, NULL, status);
  }
  eval_result result;
  if (!failed) failed = evaluate(s, &tg, test_set, &result, status);
  if (!failed)
    printf("%s on %s test set (%lld examples): accuracy %.4f, loss %.4f (checkpoint %s)\n",
           c->model.name, c->dataset.name, (long long)ct_dataset_size(test_set), result.accuracy,
           result.loss, path);
  ct_session_free(s);
  ct_training_graph_free(&tg);
  ct_dataset_free(test_set);
  return failed;
}
