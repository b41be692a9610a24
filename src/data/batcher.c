/* The batcher: per-epoch order (seeded Fisher-Yates) and batch filling. */
#include <stdlib.h>
#include <string.h>

#include "data/batcher_internal.h"
#include "data/dataset_internal.h"
#include "data/rng.h"

struct ct_batcher {
  const ct_dataset *ds; /* borrowed */
  int64_t batch_size;
  int shuffle;
  uint64_t seed;
  int64_t epoch;
  int64_t position; /* index into order of the next example */
  int64_t *order;   /* ds->n example indices */
  uint8_t *pixels;  /* one example's pixels, as read */
  int augments;     /* augment applies */
  int train;        /* augment: training's random draws, else evaluation's */
  ct_augment_options augment;
  int64_t out_h, out_w; /* the images handed out */
};

ct_batcher *ct_batcher_new(const ct_dataset *ds, int64_t batch_size, int shuffle, uint64_t seed,
                           ct_status *status) {
  if (ds == NULL || batch_size < 1) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  ds == NULL ? "a batcher needs a dataset, got NULL"
                             : "the batch size must be at least 1; set dataset.batch_size");
    return NULL;
  }
  ct_batcher *b = calloc(1, sizeof *b);
  int64_t *order = b ? malloc((size_t)(ds->n > 0 ? ds->n : 1) * sizeof *order) : NULL;
  uint8_t *pixels = order ? malloc((size_t)(ds->h * ds->w * ds->c)) : NULL;
  if (pixels == NULL) {
    free(order);
    free(b);
    ct_status_set(status, CT_RESOURCE_EXHAUSTED,
                  "out of host memory for the order of %lld examples", (long long)ds->n);
    return NULL;
  }
  b->ds = ds;
  b->batch_size = batch_size;
  b->shuffle = shuffle != 0;
  b->seed = seed;
  b->order = order;
  b->pixels = pixels;
  b->out_h = ds->h;
  b->out_w = ds->w;
  ct_batcher_start_epoch(b, 0);
  return b;
}

int64_t ct_batcher_batches_per_epoch(const ct_batcher *batcher) {
  return (batcher->ds->n + batcher->batch_size - 1) / batcher->batch_size;
}

void ct_batcher_start_epoch(ct_batcher *batcher, int64_t epoch) {
  const int64_t n = batcher->ds->n;
  int64_t *order = batcher->order;
  for (int64_t i = 0; i < n; ++i) order[i] = i;
  if (batcher->shuffle) {
    ct_xoshiro rng;
    ct_xoshiro_seed(&rng, batcher->seed, (uint64_t)epoch);
    for (int64_t i = n - 1; i > 0; --i) {
      int64_t j = (int64_t)ct_xoshiro_below(&rng, (uint64_t)i + 1);
      int64_t t = order[i];
      order[i] = order[j];
      order[j] = t;
    }
  }
  batcher->epoch = epoch;
  batcher->position = 0;
}

int64_t ct_batcher_next_size(const ct_batcher *batcher) {
  const int64_t left = batcher->ds->n - batcher->position;
  if (left <= 0) return 0;
  return left < batcher->batch_size ? left : batcher->batch_size;
}

int64_t ct_batcher_next_rows(ct_batcher *batcher, int64_t first, int64_t rows, float *images,
                             int32_t *labels, ct_status *status) {
  const ct_dataset *ds = batcher->ds;
  const int64_t count = ct_batcher_next_size(batcher);
  if (first < 0) first = 0;
  if (rows > count - first) rows = count - first;
  const int64_t pixels = batcher->out_h * batcher->out_w * ds->c;
  const int64_t *order = batcher->order + batcher->position + first;
  for (int64_t i = 0; i < rows; ++i)
    if (ct_batcher_fill(batcher, batcher->epoch, order[i], batcher->pixels, images + i * pixels,
                        &labels[i], status))
      return -1;
  batcher->position += count;
  return count;
}

int ct_batcher_fill(const ct_batcher *b, int64_t epoch, int64_t index, uint8_t *scratch,
                    float *image, int32_t *label, ct_status *status) {
  const ct_dataset *ds = b->ds;
  if (ct_dataset_read(ds, index, scratch, label, status)) return 1;
  if (!b->augments) {
    const int64_t pixels = ds->h * ds->w * ds->c;
    /* divided, not looked up in a table: the same values, and the loop
     * vectorizes */
    for (int64_t p = 0; p < pixels; ++p) image[p] = (float)scratch[p] / 255.0f;
    return 0;
  }
  const ct_augment_draw draw =
      ct_augment_draw_for(&b->augment, b->train, b->seed, epoch, index, ds->h, ds->w);
  ct_augment_apply(&b->augment, &draw, scratch, ds->h, ds->w, ds->c, image);
  return 0;
}

int ct_batcher_set_augment(ct_batcher *batcher, const ct_augment_options *augment, int train,
                           ct_status *status) {
  const ct_dataset *ds = batcher->ds;
  if (ct_augment_check(augment, ds->h, ds->w, status)) return 1;
  batcher->augments = augment != NULL;
  batcher->train = train != 0;
  if (augment) batcher->augment = *augment;
  ct_augment_shape(augment, ds->h, ds->w, &batcher->out_h, &batcher->out_w);
  (void)status;
  return 0;
}

void ct_batcher_image_shape(const ct_batcher *batcher, int64_t *h, int64_t *w, int64_t *c) {
  if (h) *h = batcher->out_h;
  if (w) *w = batcher->out_w;
  if (c) *c = batcher->ds->c;
}

int64_t ct_batcher_epoch(const ct_batcher *batcher) { return batcher->epoch; }

const ct_dataset *ct_batcher_dataset(const ct_batcher *batcher) { return batcher->ds; }

int64_t ct_batcher_batch_size(const ct_batcher *batcher) { return batcher->batch_size; }

const int64_t *ct_batcher_order(const ct_batcher *batcher) { return batcher->order; }

int64_t ct_batcher_next(ct_batcher *batcher, float *images, int32_t *labels, ct_status *status) {
  return ct_batcher_next_rows(batcher, 0, batcher->batch_size, images, labels, status);
}

int64_t ct_batcher_position(const ct_batcher *batcher) { return batcher->position; }

void ct_batcher_seek(ct_batcher *batcher, int64_t position) {
  if (position < 0) position = 0;
  if (position > batcher->ds->n) position = batcher->ds->n;
  batcher->position = position;
}

void ct_batcher_free(ct_batcher *batcher) {
  if (batcher == NULL) return;
  free(batcher->order);
  free(batcher->pixels);
  free(batcher);
}
