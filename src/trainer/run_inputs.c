/* What a run starts from: its datasets, their batches and the input
 * pipeline (run_inputs.h). */
#include <stdint.h>
#include <unistd.h>

#include "trainer/run_inputs.h"

ct_dataset *ct_trainer_open_dataset(const ct_trainer_options *o, int train, ct_status *status) {
  const ct_dataset_options *d = &o->dataset;
  const ct_dataset_request request = {
      .name = d->name,
      .path = d->path,
      .train = train,
      .examples = train ? d->train_size : d->test_size,
      .seed = (uint64_t)o->train.seed + (uint64_t)train,
      .read = {.image_shape = {d->image_shape[0], d->image_shape[1], d->image_shape[2]},
               .num_classes = d->num_classes > INT32_MAX ? INT32_MAX : (int)d->num_classes,
               .label_offset = d->label_offset,
               .coarse_labels = d->coarse_labels,
               .skip_bad_examples = d->skip_bad_examples}};
  return ct_dataset_open_named(&request, status);
}

const ct_augment_options *ct_trainer_augment(const ct_trainer_options *o) {
  const ct_augment_options *a = &o->dataset.augment;
  const int changes = a->crop[0] > 0 || a->pad > 0 || a->flip || a->brightness > 0 ||
                      a->contrast[0] != 1.0 || a->contrast[1] != 1.0 || a->standardize;
  return changes ? a : NULL;
}

void ct_trainer_image_shape(const ct_trainer_options *o, const ct_dataset *ds, int64_t *h,
                            int64_t *w, int64_t *c) {
  int64_t dh, dw;
  ct_dataset_image_shape(ds, &dh, &dw, c);
  ct_augment_shape(ct_trainer_augment(o), dh, dw, h, w);
}

int ct_batch_buffers_init(ct_batch_buffers *b, int64_t batch, int64_t h, int64_t w, int64_t ch,
                          ct_status *status) {
  ct_shape is = ct_shape_of(4, batch, h, w, ch), ls = ct_shape_of(1, batch);
  b->images = ct_tensor_new(CT_F32, &is, status);
  b->labels = ct_tensor_new(CT_I32, &ls, status);
  return b->images == NULL || b->labels == NULL;
}

void ct_batch_buffers_free(ct_batch_buffers *b) {
  ct_tensor_free(b->images);
  ct_tensor_free(b->labels);
}

/* dataset.threads: 0 means the cores the CPU devices' threads leave, at
 * least one. */
static int pipeline_threads(const ct_trainer_options *o) {
  if (o->dataset.threads > 0) return (int)o->dataset.threads;
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  const int used = o->session.intra_op_parallelism_threads;
  return used > 0 && cores > used ? (int)(cores - used) : 1;
}

ct_pipeline *ct_trainer_open_pipeline(const ct_trainer_options *o, const ct_dataset *ds,
                                      int64_t batch, int train, ct_pipeline_options rows,
                                      ct_status *status) {
  ct_batcher *batcher =
      ct_batcher_new(ds, batch, train && o->dataset.shuffle, (uint64_t)o->train.seed, status);
  if (batcher == NULL) return NULL;
  if (ct_batcher_set_augment(batcher, ct_trainer_augment(o), train, status)) {
    ct_batcher_free(batcher);
    return NULL;
  }
  rows.threads = pipeline_threads(o);
  rows.prefetch = (int)o->dataset.prefetch;
  return ct_pipeline_new(batcher, &rows, status);
}
