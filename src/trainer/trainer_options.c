/* The trainer's options: their defaults, the checks a caller's values
 * must pass, and the model they name. */
#include <stdio.h>
#include <string.h>

#include "ctower/models.h"
#include "trainer/run_inputs.h"

void ct_trainer_options_defaults(ct_trainer_options *o) {
  memset(o, 0, sizeof *o);
  snprintf(o->model, sizeof o->model, "fmnist_cnn");
  ct_dataset_options *d = &o->dataset;
  snprintf(d->name, sizeof d->name, "fashion_mnist");
  snprintf(d->path, sizeof d->path, "/usr/share/datasets/fashion-mnist");
  d->batch_size = 128;
  d->shuffle = 1;
  d->image_shape[0] = 28, d->image_shape[1] = 28, d->image_shape[2] = 1;
  d->num_classes = 10;
  d->train_size = 60000, d->test_size = 10000;
  d->prefetch = 2;
  d->augment.contrast[0] = d->augment.contrast[1] = 1.0;
  ct_train_options *t = &o->train;
  t->epochs = 10;
  t->seed = 42;
  ct_optimizer_config_defaults(&t->optimizer, CT_OPTIMIZER_MOMENTUM);
  t->schedule.kind = CT_SCHEDULE_CONSTANT;
  t->schedule.base_rate = 0.01;
  t->schedule.step_epochs = 3;
  t->schedule.gamma = 0.1;
  t->schedule.total_epochs = (double)t->epochs;
  t->split = CT_BATCH_SPLIT_EVEN;
  t->log_every_n_steps = 10;
  ct_session_options_defaults(&o->session);
}

int ct_trainer_check_options(const ct_trainer_options *o, ct_status *status) {
  if (o->layers.n == 0 && o->model_library[0] == '\0' && ct_model_find(o->model) == NULL) {
    char names[256] = "";
    size_t used = 0;
    for (int i = 0; i < ct_model_count() && used < sizeof names; ++i)
      used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "",
                               ct_model_at(i)->name);
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "unknown model '%s' (the zoo has %s); or give a layer list or a model library",
                  o->model, names);
    return 1;
  }
  if (o->dataset.batch_size < 1 || o->train.epochs < 0 || o->train.max_steps < 0) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "the batch size (%lld) must be at least 1, and the epochs (%lld) and the "
                  "step limit (%lld) at least 0",
                  (long long)o->dataset.batch_size, (long long)o->train.epochs,
                  (long long)o->train.max_steps);
    return 1;
  }
  if (o->train.log_every_n_steps < 1) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "the steps between TensorBoard points (train.log_every_n_steps) must be at "
                  "least 1, got %lld",
                  (long long)o->train.log_every_n_steps);
    return 1;
  }
  const ct_augment_options *a = &o->dataset.augment;
  if ((a->crop[0] > 0) != (a->crop[1] > 0) || a->crop[0] < 0 || a->crop[1] < 0) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "dataset.augment.crop must be [height, width] (or [] for no crop), got "
                  "[%lld, %lld]",
                  (long long)a->crop[0], (long long)a->crop[1]);
    return 1;
  }
  if (o->dataset.threads < 0 || o->dataset.threads > 4096 || o->dataset.prefetch < 1 ||
      o->dataset.prefetch > 64) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "dataset.threads must lie in 0..4096 and dataset.prefetch in 1..64, got %lld "
                  "and %lld",
                  (long long)o->dataset.threads, (long long)o->dataset.prefetch);
    return 1;
  }
  /* before any image is read: the ranges, and the pad against a crop (the
   * images' own size, when there is none, is checked when they are read) */
  if (ct_augment_check(a, a->crop[0] ? a->crop[0] : INT32_MAX, a->crop[1] ? a->crop[1] : INT32_MAX,
                       status))
    return 1;
  if (!(o->train.schedule.base_rate > 0)) {
    ct_status_set(status, CT_INVALID_ARGUMENT, "the learning rate must be > 0, got %g",
                  o->train.schedule.base_rate);
    return 1;
  }
  return 0;
}

int ct_trainer_model_open(const ct_trainer_options *o, ct_trainer_model *m, ct_status *status) {
  memset(m, 0, sizeof *m);
  if (o->layers.n > 0) {
    m->def = (ct_model_def){o->model, "a list of layers", NULL, &o->layers};
    return 0;
  }
  const ct_model_def *def = NULL;
  if (o->model_library[0] != '\0') {
    m->library = ct_model_library_open(o->model_library, status);
    def = m->library ? ct_model_library_find(m->library, o->model, status) : NULL;
  } else if ((def = ct_model_find(o->model)) == NULL) {
    ct_trainer_check_options(o, status); /* names the zoo's models */
  }
  if (def) m->def = *def;
  return def == NULL;
}

void ct_trainer_model_close(ct_trainer_model *m) {
  ct_model_library_close(m->library);
  memset(m, 0, sizeof *m);
}
