/* ct_config to the library's options: the trainer's, the towers' and the
 * session's. Ranges are the schema's (config_schema.c); what is left to
 * check here is what only the YAML can get wrong. */
#include <stdio.h>
#include <string.h>

#include "cluster/cluster.h"
#include "ctower/config.h"
#include "ctower/device_name.h"

static void optimizer_options(const ct_config *c, ct_optimizer_config *o) {
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

static void schedule_options(const ct_config *c, ct_schedule *s) {
  memset(s, 0, sizeof *s);
  const char *name = c->train.schedule.name;
  s->kind = strcmp(name, "step") == 0        ? CT_SCHEDULE_STEP
            : strcmp(name, "piecewise") == 0 ? CT_SCHEDULE_PIECEWISE
            : strcmp(name, "cosine") == 0    ? CT_SCHEDULE_COSINE
                                             : CT_SCHEDULE_CONSTANT;
  s->base_rate = c->train.optimizer.learning_rate;
  s->step_epochs = (double)c->train.schedule.step_epochs;
  s->n_boundaries = c->train.schedule.n_boundaries;
  for (int i = 0; i < s->n_boundaries; ++i)
    s->boundaries[i] = (double)c->train.schedule.boundaries[i];
  s->gamma = c->train.schedule.gamma;
  s->min_rate = c->train.schedule.min_learning_rate;
  s->total_epochs = (double)c->train.epochs;
  s->warmup_epochs = (double)c->train.schedule.warmup_epochs;
}

void ct_config_session_options(const ct_config *c, ct_session_options *o) {
  ct_session_options_defaults(o);
  o->log_device_placement = c->session.log_device_placement;
  o->allow_soft_placement = c->session.allow_soft_placement;
  o->check_numerics = c->train.check_numerics;
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
  o->precision = strcmp(c->train.precision, "tf32") == 0   ? CT_PRECISION_TF32
                 : strcmp(c->train.precision, "bf16") == 0 ? CT_PRECISION_BF16
                                                           : CT_PRECISION_FP32;
  o->conv_algorithm = strcmp(c->train.conv_algorithm, "direct") == 0     ? CT_CONV_DIRECT
                      : strcmp(c->train.conv_algorithm, "winograd") == 0 ? CT_CONV_WINOGRAD
                                                                          : CT_CONV_AUTO;
  for (int i = 0; i < o->gpu_options.n_virtual_devices && i < CT_MAX_DEVICES; ++i)
    o->gpu_options.virtual_devices_mb[i] = c->session.gpu_options.virtual_devices_mb[i];
  if (ct_cluster_size() > 1) {
    snprintf(o->job, sizeof o->job, "%s", ct_cluster_job());
    o->task = ct_cluster_task();
    o->local_process = ct_cluster_local_rank();
    o->local_processes = ct_cluster_local_size();
    /* the ranks on a machine share its GPUs: local rank r takes GPU r (of
     * those there are, round the ring), unless visible_device_list says */
    const int gpus = o->gpu_options.visible_device_list[0] || o->local_processes < 2
                         ? 0
                         : ct_device_count(o, CT_DEVICE_KIND_GPU);
    if (gpus > 0)
      snprintf(o->gpu_options.visible_device_list, sizeof o->gpu_options.visible_device_list, "%d",
               o->local_process % gpus);
  }
}

void ct_config_trainer_options(const ct_config *c, ct_trainer_options *o) {
  ct_trainer_options_defaults(o);
  snprintf(o->model, sizeof o->model, "%s", c->model.name);
  o->layers = c->model.layers;
  snprintf(o->model_library, sizeof o->model_library, "%s", c->model.library);
  ct_dataset_options *d = &o->dataset;
  snprintf(d->name, sizeof d->name, "%s", c->dataset.name);
  snprintf(d->path, sizeof d->path, "%s", c->dataset.path);
  d->batch_size = c->dataset.batch_size;
  d->shuffle = c->dataset.shuffle;
  for (int i = 0; i < 3 && i < c->dataset.n_image_dims; ++i) /* the schema asks for 3 */
    d->image_shape[i] = c->dataset.image_shape[i];
  d->num_classes = c->dataset.num_classes;
  d->train_size = c->dataset.train_size;
  d->test_size = c->dataset.test_size;
  d->coarse_labels = strcmp(c->dataset.label, "coarse") == 0;
  d->label_offset = c->dataset.label_offset;
  d->skip_bad_examples = c->dataset.skip_bad_examples;
  d->threads = c->dataset.threads;
  d->prefetch = c->dataset.prefetch;
  d->cache = c->dataset.cache;
  ct_augment_options *a = &d->augment;
  /* one entry of crop stays one: the trainer's check asks for both */
  for (int i = 0; i < 2 && i < c->dataset.augment.n_crop; ++i)
    a->crop[i] = c->dataset.augment.crop[i];
  a->pad = c->dataset.augment.pad;
  a->flip = c->dataset.augment.flip;
  a->brightness = c->dataset.augment.brightness;
  a->contrast[0] = c->dataset.augment.contrast[0];
  a->contrast[1] = c->dataset.augment.contrast[1];
  a->standardize = c->dataset.augment.standardize;
  ct_train_options *t = &o->train;
  t->epochs = c->train.epochs;
  t->max_steps = c->train.max_steps;
  t->seed = c->train.seed;
  optimizer_options(c, &t->optimizer);
  schedule_options(c, &t->schedule);
  snprintf(t->checkpoint, sizeof t->checkpoint, "%s", c->train.checkpoint);
  snprintf(t->log_dir, sizeof t->log_dir, "%s", c->train.log_dir);
  t->log_every_n_steps = c->train.log_every_n_steps;
  t->split = strcmp(c->devices.split, "auto") == 0 ? CT_BATCH_SPLIT_AUTO : CT_BATCH_SPLIT_EVEN;
  t->check_every = c->cluster.check_every;
  t->async_updates = strcmp(c->cluster.updates, "async") == 0;
  t->max_staleness = t->async_updates ? c->cluster.max_staleness : 0;
  ct_device_spec ps;
  ct_status ignored = CT_STATUS_INIT;
  t->ps_task = ct_device_spec_parse(c->devices.ps_device, &ps, &ignored) == 0 && ps.has_task
                   ? ps.task
                   : -1;
  ct_config_session_options(c, &o->session);
}

/* Puts towers [first, first + count) on /KIND:0, /KIND:1, ... */
static void towers_on(ct_tower_options *t, int first, int count, const char *kind) {
  for (int k = 0; k < count; ++k)
    snprintf(t->devices[first + k], sizeof t->devices[first + k], "/%s:%d", kind, k);
}

/* The rank a device name's job and task name (a task without a job is a
 * worker's), or -1 for a task the job does not have; every rank for a name
 * without a task: -2. */
static int rank_named(const ct_device_spec *spec) {
  if (!spec->has_task) return -2;
  const char *job = spec->has_job ? spec->job : "worker";
  return ct_cluster_rank_of(job, spec->task);
}

/* A device name of the config on this rank: a name with a job or task
 * (under mpirun, /job:worker/task:1/cpu:0 is that task's /cpu:0) becomes
 * the local name; *mine (when not NULL) says whether the task is this
 * rank's (a name without one is every worker's). A task the job does not
 * have is an error naming `key` (TensorFlow's words), or with soft
 * placement a warning, and then *mine is 0. Returns 0 or fills status. */
static int local_name(const char *key, const char *text, int soft, char *out, size_t size,
                      int *mine, ct_status *status) {
  ct_device_spec spec;
  if (ct_device_spec_parse(text, &spec, status)) return 1;
  const int rank = rank_named(&spec);
  if (mine) *mine = rank == -2 ? !ct_cluster_is_ps() : rank == ct_cluster_rank();
  if (spec.has_task && rank < 0 && ct_cluster_size() > 1) {
    const char *job = spec.has_job ? spec.job : "worker";
    const int tasks = ct_cluster_job_tasks(job);
    char known[96] = "no task";
    if (tasks > 0) snprintf(known, sizeof known, "tasks 0 to %d", tasks - 1);
    if (!soft) {
      ct_status_set(status, CT_INVALID_ARGUMENT,
                    "%s: cannot assign a device to '%s': /job:%s/task:%d does not exist (job %s "
                    "has %s in this cluster of %d ranks); name an existing task, or set "
                    "session.allow_soft_placement: true to leave it out",
                    key, text, job, spec.task, job, known, ct_cluster_size());
      return 1;
    }
    fprintf(stderr, "%sctower: warning: %s: /job:%s/task:%d does not exist (job %s has %s); "
            "'%s' is left out\n", ct_cluster_log_prefix(), key, job, spec.task, job, known, text);
  }
  if (spec.has_job || spec.has_replica || spec.has_task) {
    spec.has_job = spec.has_replica = spec.has_task = 0;
    ct_device_spec_string(&spec, out, size);
  } else {
    snprintf(out, size, "%s", text);
  }
  return 0;
}

/* devices.towers: the entries that name this rank's task, and those that
 * name no task, which every rank has. */
static int listed_towers(const ct_config *c, ct_tower_options *t, ct_status *status) {
  t->n_towers = 0;
  for (int k = 0; k < c->devices.n_towers_listed; ++k) {
    int mine;
    if (local_name("devices.towers", c->devices.towers[k], c->session.allow_soft_placement,
                   t->devices[t->n_towers], sizeof t->devices[0], &mine, status))
      return 1;
    t->n_towers += mine;
  }
  if (t->n_towers == 0) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "devices.towers lists no device of /job:worker/task:%d (this rank); give "
                  "every worker a tower, e.g. /job:worker/task:%d/cpu:0",
                  ct_cluster_task(), ct_cluster_task());
    return 1;
  }
  return 0;
}

/* The tower devices: devices.n_gpus (cxflow's key: /gpu:0 ..), else
 * devices.n_towers (the first N devices of the preferred type: GPUs when
 * the session has any, else CPU devices; -1: all of them), else the
 * devices.towers list. Towers that want a GPU the session lacks go to CPU
 * devices with a warning under soft placement, else it is an error. */
static int tower_devices(const ct_config *c, const ct_session_options *so, ct_tower_options *t,
                         ct_status *status) {
  const int cpus = so->device_count_cpu, gpus = ct_device_count(so, CT_DEVICE_KIND_GPU);
  int64_t n = c->devices.n_gpus > 0 ? c->devices.n_gpus : c->devices.n_towers;
  if (n == 0) return listed_towers(c, t, status);
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
    fprintf(stderr,
            "ctower: warning: %d GPU%s for %lld towers: towers %lld .. %lld run on CPU "
            "devices /cpu:0 .. /cpu:%lld\n",
            gpus, gpus == 1 ? "" : "s", (long long)n, (long long)on_gpus, (long long)n - 1,
            (long long)on_cpus - 1);
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

/* Under a cluster spec with ps tasks: the variables live on the ps tasks
 * (devices.ps_device names one, /job:ps/task:0/cpu:0, or no task: spread
 * over them all), the workers compute (each rank's graph keeps them on its
 * own device of that name), and the update needs the parameter server. */
static int cluster_ps_device(const ct_config *c, ct_tower_options *t, ct_status *status) {
  ct_device_spec spec;
  if (ct_device_spec_parse(c->devices.ps_device, &spec, status)) return 1;
  if (spec.has_job && strcmp(spec.job, "ps") != 0) {
    const int async = strcmp(c->cluster.updates, "async") == 0;
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "devices.ps_device '%s' puts the variables on a %s task, but %s; write "
                  "/job:ps/task:0%s (or /job:ps%s to spread them over the %d ps tasks)",
                  c->devices.ps_device, spec.job,
                  async ? "with cluster.updates: async each worker's gradients are applied as "
                          "they arrive, by the ps tasks that hold the variables"
                        : "with cluster.ps the ps tasks hold the variables and apply the updates",
                  t->ps_device, t->ps_device, ct_cluster_ps_tasks());
    return 1;
  }
  if (t->variable_update != CT_VARIABLE_UPDATE_PARAMETER_SERVER) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "cluster.ps is %d, but devices.variable_update is replicated; ps tasks hold the "
                  "variables of devices.variable_update: parameter_server",
                  ct_cluster_ps_tasks());
    return 1;
  }
  return 0;
}

/* devices.ps_device, as a device of this process. Across ranks the
 * parameter server is rank 0's (task 0): it applies the updates, holds the
 * optimizer's slots and writes the checkpoints; a device of another task is
 * an error that says what to write. */
static int ps_device(const ct_config *c, ct_tower_options *t, ct_status *status) {
  const char *name = c->devices.ps_device;
  if (local_name("devices.ps_device", name, 0, t->ps_device, sizeof t->ps_device, NULL, status))
    return 1;
  if (ct_cluster_ps_tasks() > 0) return cluster_ps_device(c, t, status);
  ct_device_spec spec;
  if (t->variable_update == CT_VARIABLE_UPDATE_PARAMETER_SERVER && ct_cluster_size() > 1 &&
      ct_device_spec_parse(name, &spec, status) == 0 && spec.has_task && spec.task != 0) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "devices.ps_device '%s' is on task %d, but across ranks the parameter server "
                  "is task 0's (rank 0 applies the updates, holds the optimizer's slots and "
                  "writes the checkpoints); write /job:worker/task:0/%s, or %s for the same "
                  "device",
                  name, spec.task, t->ps_device + 1, t->ps_device);
    return 1;
  }
  return status->code != CT_OK;
}

int ct_config_tower_options(const ct_config *c, const ct_session_options *so, ct_tower_options *t,
                            ct_status *status) {
  memset(t, 0, sizeof *t);
  t->variable_update = strcmp(c->devices.variable_update, "parameter_server") == 0
                           ? CT_VARIABLE_UPDATE_PARAMETER_SERVER
                           : CT_VARIABLE_UPDATE_REPLICATED;
  /* across ranks every rank keeps the ps variables on its own device of
   * that name; rank 0 applies the job's summed gradients to its copy and
   * sends the variables back to the others */
  if (ps_device(c, t, status)) return 1;
  /* with ps tasks each rank's graph is its own: the trainer moves the
   * gradients and variables between the tasks */
  t->across_ranks = ct_cluster_size() > 1 && ct_cluster_ps_tasks() == 0;
  if (ct_cluster_is_ps()) { /* one tower that never runs: the graph's variables and updates */
    t->n_towers = 1;
    snprintf(t->devices[0], sizeof t->devices[0], "/cpu:0");
  } else if (tower_devices(c, so, t, status)) {
    return 1;
  }
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
                  ct_device_count(so, CT_DEVICE_KIND_GPU) == 0 ? " (this session has no GPU)" : "");
    return 1;
  }
  t->all_reduce = strcmp(algorithm, "tree") == 0   ? CT_ALL_REDUCE_TREE
                  : strcmp(algorithm, "ring") == 0 ? CT_ALL_REDUCE_RING
                  : all_gpus                       ? CT_ALL_REDUCE_COLLECTIVE /* nccl, auto */
                                                   : CT_ALL_REDUCE_RING;
  return 0;
}
