/* ct_config to the library's options: the trainer's, the session's and
 * the towers' request (which the library resolves on the session's
 * devices: ct_towers_resolve). Ranges are the schema's (config_schema.c). */
#include <stdio.h>
#include <string.h>

#include "cluster/communication.h"
#include "ctower/config.h"

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
  ct_config_session_options(c, &o->session);
}

void ct_config_tower_request(const ct_config *c, ct_tower_request *r) {
  ct_tower_request_defaults(r);
  r->n_gpus = (int)c->devices.n_gpus;
  r->n_towers = (int)c->devices.n_towers;
  r->n_listed = c->devices.n_towers_listed;
  for (int k = 0; k < r->n_listed && k < CT_MAX_DEVICES; ++k)
    snprintf(r->listed[k], sizeof r->listed[k], "%s", c->devices.towers[k]);
  const char *update = c->devices.variable_update;
  r->variable_update = strcmp(update, "parameter_server") == 0 ? CT_VARIABLE_UPDATE_PARAMETER_SERVER
                       : strcmp(update, "block_momentum") == 0 ? CT_VARIABLE_UPDATE_BLOCK_MOMENTUM
                                                               : CT_VARIABLE_UPDATE_REPLICATED;
  r->block_steps = c->devices.block_steps;
  r->block_momentum = (float)c->devices.block_momentum;
  snprintf(r->ps_device, sizeof r->ps_device, "%s", c->devices.ps_device);
  const char *algorithm = c->devices.all_reduce;
  r->all_reduce = strcmp(algorithm, "ring") == 0   ? CT_ALL_REDUCE_REQUEST_RING
                  : strcmp(algorithm, "tree") == 0 ? CT_ALL_REDUCE_REQUEST_TREE
                  : strcmp(algorithm, "nccl") == 0 ? CT_ALL_REDUCE_REQUEST_NCCL
                                                   : CT_ALL_REDUCE_REQUEST_AUTO;
  for (int k = 0; k < CT_COMPRESSION_COUNT; ++k)
    if (strcmp(c->devices.compression, ct_compression_name((ct_compression)k)) == 0)
      r->compression = (ct_compression)k;
  r->async_updates = strcmp(c->cluster.updates, "async") == 0;
  r->max_staleness = c->cluster.max_staleness;
}
