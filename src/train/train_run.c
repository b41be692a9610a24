/* One training run: its datasets, graph, session and feeds, and its step. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/trainer_internal.h"

ct_dataset *ct_trainer_open_dataset(const ct_trainer_options *o, int train, ct_status *status) {
  const ct_dataset_options *d = &o->dataset;
  if (strcmp(d->name, "synthetic") == 0) {
    const int64_t *shape = d->image_shape;
    return ct_dataset_new_synthetic(train ? d->train_size : d->test_size, shape[0], shape[1],
                                    shape[2], (int)d->num_classes,
                                    (uint64_t)o->train.seed + (uint64_t)train, status);
  }
  return ct_dataset_open_mnist(d->path, train, status);
}

int ct_batch_buffers_init(ct_batch_buffers *b, int64_t batch, const ct_dataset *ds,
                          ct_status *status) {
  int64_t h, w, ch;
  ct_dataset_image_shape(ds, &h, &w, &ch);
  ct_shape is = ct_shape_of(4, batch, h, w, ch), ls = ct_shape_of(1, batch);
  b->images = ct_tensor_new(CT_F32, &is, status);
  b->labels = ct_tensor_new(CT_I32, &ls, status);
  return b->images == NULL || b->labels == NULL;
}

void ct_batch_buffers_free(ct_batch_buffers *b) {
  ct_tensor_free(b->images);
  ct_tensor_free(b->labels);
}

void ct_train_run_free(ct_train_run *r) {
  ct_run_metadata_free(r->timeline);
  free(r->feeds);
  free(r->weights);
  free(r->fetches);
  ct_batcher_free(r->batcher);
  ct_batch_buffers_free(&r->buf);
  ct_session_free(r->session);
  ct_training_graph_free(&r->tg);
  ct_dataset_free(r->train_set);
  ct_dataset_free(r->test_set);
}

int ct_train_run_setup(ct_train_run *r, const ct_trainer_options *o,
                       const ct_tower_options *towers, ct_status *status) {
  memset(r, 0, sizeof *r);
  r->options = o;
  r->towers = *towers;
  if (ct_trainer_check_options(o, status)) return 1;
  if (o->dataset.batch_size < r->towers.n_towers) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "dataset.batch_size (%lld) is smaller than the number of towers (%d); each "
                  "tower needs at least one example of every full batch",
                  (long long)o->dataset.batch_size, r->towers.n_towers);
    return 1;
  }
  r->train_set = ct_trainer_open_dataset(o, 1, status);
  if (r->train_set == NULL) return 1;
  r->test_set = ct_trainer_open_dataset(o, 0, status);
  if (r->test_set == NULL) return 1;
  int64_t h, w, ch;
  ct_dataset_image_shape(r->train_set, &h, &w, &ch);
  if (ct_training_graph_build(&r->tg, ct_model_find(o->model), h, w, ch,
                              ct_dataset_num_classes(r->train_set), (uint64_t)o->train.seed,
                              &r->towers, &o->train.optimizer, status))
    return 1;
  r->session = ct_session_new(r->tg.graph, &o->session, status);
  if (r->session == NULL) return 1;
  r->batcher = ct_batcher_new(r->train_set, o->dataset.batch_size, o->dataset.shuffle,
                              (uint64_t)o->train.seed, status);
  if (r->batcher == NULL) return 1;
  const int n_towers = r->towers.n_towers;
  r->feeds = calloc(1, sizeof *r->feeds);
  r->weights = calloc((size_t)(o->dataset.batch_size + n_towers), sizeof *r->weights);
  r->fetches = calloc((size_t)(n_towers + 1), sizeof *r->fetches);
  if (!r->feeds || !r->weights || !r->fetches) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory setting up the towers");
    return 1;
  }
  r->auto_split = o->train.split == CT_BATCH_SPLIT_AUTO && n_towers > 1;
  if (r->auto_split && (r->timeline = ct_run_metadata_new()) == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory setting up the towers");
    return 1;
  }
  r->fetches[0] = r->tg.train.towers.loss;
  for (int k = 0; k < n_towers; ++k) r->fetches[k + 1] = r->tg.train.logits[k];
  return ct_batch_buffers_init(&r->buf, o->dataset.batch_size, r->train_set, status);
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
static void update_speeds(ct_train_run *r) {
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

int ct_train_run_step(ct_train_run *r, int64_t n, int64_t global_step, double epochs_done,
                      double *loss, double *accuracy, ct_status *status) {
  const ct_train_options *t = &r->options->train;
  const int towers = r->towers.n_towers;
  int measured = r->auto_split;
  for (int k = 0; k < towers; ++k) measured = measured && r->speeds[k] > 0;
  ct_towers_split(towers, n, measured ? r->speeds : NULL, r->sizes);
  int n_feeds = ct_classifier_make_feeds(&r->tg.train, r->buf.images, r->buf.labels, n, r->sizes,
                                         r->feeds, r->weights);
  float lr = ct_optimizer_learning_rate(&t->optimizer, ct_schedule_rate(&t->schedule, epochs_done),
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
                  *loss, (long long)global_step + 1, t->schedule.base_rate);
    return 1;
  }
  return 0;
}
