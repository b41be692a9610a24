/* Synthetic datasets: deterministic random examples, generated when the
 * first example is read, so what only asks a dataset its size and shape
 * (ctower plan) allocates nothing for them. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "data/dataset_internal.h"
#include "data/rng.h"

#define SYNTHETIC_MAX_BYTES (1ll << 34)

typedef struct synthetic_state {
  uint64_t seed;
  pthread_mutex_t generating;
  _Atomic int generated;
  uint8_t *images; /* n * h * w * c, example-major */
  uint8_t *labels; /* n */
} synthetic_state;

static void free_synthetic_state(void *p) {
  synthetic_state *s = p;
  if (s == NULL) return;
  pthread_mutex_destroy(&s->generating);
  free(s->images);
  free(s->labels);
  free(s);
}

/* Every example, from one stream in example order (so the values do not
 * depend on which example is read first). 0, or 1 when memory ran out. */
static int generate(const ct_dataset *ds, synthetic_state *s) {
  const int64_t n = ds->n, pixels = ds->h * ds->w * ds->c;
  const int num_classes = ds->num_classes;
  s->images = malloc((size_t)(n > 0 ? n : 1) * (size_t)pixels);
  s->labels = malloc((size_t)(n > 0 ? n : 1));
  if (s->images == NULL || s->labels == NULL) return 1;
  ct_xoshiro rng;
  ct_xoshiro_seed(&rng, s->seed, 0x5EED);
  for (int64_t i = 0; i < n; ++i) {
    const int label = (int)ct_xoshiro_below(&rng, (uint64_t)num_classes);
    s->labels[i] = (uint8_t)label;
    /* Class k owns pixels [k * pixels / classes, (k + 1) * pixels / classes). */
    const int64_t band_lo = label * pixels / num_classes;
    const int64_t band_hi = (label + 1) * pixels / num_classes;
    uint8_t *x = s->images + i * pixels;
    for (int64_t p = 0; p < pixels; p += 8) {
      uint64_t r = ct_xoshiro_next(&rng);
      for (int64_t k = p; k < p + 8 && k < pixels; ++k, r >>= 8)
        x[k] = (uint8_t)((r & 0x7F) + (k >= band_lo && k < band_hi ? 128 : 0));
    }
  }
  return 0;
}

/* The first read generates every example (the other readers wait for it). */
static int read_synthetic_example(const ct_dataset *ds, int64_t index, uint8_t *pixels,
                                  int32_t *label, ct_status *status) {
  synthetic_state *s = ds->state;
  if (!atomic_load_explicit(&s->generated, memory_order_acquire)) {
    pthread_mutex_lock(&s->generating);
    int failed = 0;
    if (!atomic_load_explicit(&s->generated, memory_order_relaxed)) {
      failed = s->images == NULL && generate(ds, s);
      if (!failed) atomic_store_explicit(&s->generated, 1, memory_order_release);
    }
    pthread_mutex_unlock(&s->generating);
    if (failed) {
      ct_status_set(status, CT_RESOURCE_EXHAUSTED,
                    "out of host memory generating the synthetic dataset's %lld examples of "
                    "%lldx%lldx%lld; make dataset.train_size or dataset.image_shape smaller",
                    (long long)ds->n, (long long)ds->h, (long long)ds->w, (long long)ds->c);
      return 1;
    }
  }
  const size_t bytes = (size_t)(ds->h * ds->w * ds->c);
  memcpy(pixels, s->images + (size_t)index * bytes, bytes);
  *label = s->labels[index];
  return 0;
}

static const ct_dataset_source k_synthetic_source = {read_synthetic_example, free_synthetic_state,
                                                     1};

ct_dataset *ct_dataset_new_synthetic(int64_t n, int64_t h, int64_t w, int64_t c, int num_classes,
                                     uint64_t seed, ct_status *status) {
  if (n < 0 || h < 1 || w < 1 || c < 1 || num_classes < 1 || num_classes > 256) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "a synthetic dataset needs n >= 0, h, w, c >= 1 and 1..256 classes, got n=%lld "
                  "h=%lld w=%lld c=%lld classes=%d",
                  (long long)n, (long long)h, (long long)w, (long long)c, num_classes);
    return NULL;
  }
  if (h > SYNTHETIC_MAX_BYTES / w || h * w > SYNTHETIC_MAX_BYTES / c ||
      (n > 0 && h * w * c > SYNTHETIC_MAX_BYTES / n)) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "a synthetic dataset of %lld images of %lldx%lldx%lld is over 2^34 bytes; "
                  "make it smaller",
                  (long long)n, (long long)h, (long long)w, (long long)c);
    return NULL;
  }
  synthetic_state *s = calloc(1, sizeof *s);
  ct_dataset *ds = s ? ct_dataset_alloc(NULL, status) : NULL;
  if (ds == NULL) {
    free(s);
    if (status->code == CT_OK) ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory");
    return NULL;
  }
  s->seed = seed;
  pthread_mutex_init(&s->generating, NULL);
  atomic_init(&s->generated, 0);
  ds->h = h, ds->w = w, ds->c = c;
  ds->num_classes = num_classes;
  if (ct_dataset_set_source(ds, &k_synthetic_source, s, n, status)) {
    ct_dataset_free(ds);
    return NULL;
  }
  return ds;
}
