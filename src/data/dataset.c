/* Datasets: MNIST-format IDX pairs, and what
 * every dataset shares (reading an example, skipping bad ones). */
#include <limits.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/files.h"
#include "data/dataset_internal.h"

#define MNIST_CLASSES 10

enum { PATH_MAX_LEN = 4096 };

ct_dataset *ct_dataset_alloc(const ct_dataset_read_options *options, ct_status *status) {
  ct_dataset *ds = calloc(1, sizeof *ds);
  if (ds == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory");
    return NULL;
  }
  ds->skip_bad = options && options->skip_bad_examples;
  ds->log = options && options->log ? options->log : stderr;
  atomic_init(&ds->skipped, 0);
  return ds;
}

int ct_dataset_set_source(ct_dataset *ds, const ct_dataset_source *source, void *state, int64_t n,
                          ct_status *status) {
  ds->source = source;
  ds->state = state;
  ds->n = n;
  if (!ds->skip_bad) return 0;
  ds->bad = calloc((size_t)(n > 0 ? n : 1), sizeof *ds->bad);
  if (ds->bad == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory for %lld examples",
                  (long long)n);
    return 1;
  }
  return 0;
}

void ct_dataset_warn(const ct_dataset *ds, const char *format, ...) {
  char line[CT_STATUS_MESSAGE_MAX + 256];
  va_list args;
  va_start(args, format);
  vsnprintf(line, sizeof line, format, args);
  va_end(args);
  fprintf(ds->log, "ctower: warning: %s\n", line); /* one call: lines of threads do not mix */
  fflush(ds->log);
}

int ct_dataset_check_image_shape(const ct_dataset_read_options *options, const char *what,
                                 ct_status *status) {
  const int64_t *s = options ? options->image_shape : NULL;
  if (s == NULL || s[0] < 1 || s[1] < 1 || s[0] > 4096 || s[1] > 4096 || (s[2] != 1 && s[2] != 3)) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "%s images are converted to dataset.image_shape, which must be [height, width, "
                  "channels] with height and width in 1..4096 and 1 (gray) or 3 (RGB) channels, "
                  "got [%lld, %lld, %lld]",
                  what, s ? (long long)s[0] : 0, s ? (long long)s[1] : 0, s ? (long long)s[2] : 0);
    return 1;
  }
  return 0;
}

/* Chooses dir/name.gz when anything is there (a broken link included: the
 * open says what is wrong with it), else dir/name. 0 on success. */
static int find_file(const char *dir, const char *name, char *out, ct_status *status) {
  int len = snprintf(out, PATH_MAX_LEN, "%s/%s.gz", dir, name);
  if (len < 0 || len >= PATH_MAX_LEN) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "the dataset path '%.200s...' is too long; use a path under %d bytes", dir,
                  PATH_MAX_LEN - 64);
    return 1;
  }
  if (ct_file_present(out)) return 0;
  out[len - 3] = '\0'; /* drop ".gz" */
  if (ct_file_present(out)) return 0;
  int is_default = strcmp(dir, CT_FASHION_MNIST_DIR) == 0;
  ct_status_set(status, CT_NOT_FOUND, "the dataset file '%s.gz' (or '%s') does not exist; %s", out,
                out,
                is_default ? "install Fashion-MNIST with `apt-get install dataset-fashion-mnist`"
                           : "set dataset.path to the folder that holds the MNIST-format files");
  return 1;
}

/* Checks images u8 [N, H, W] and labels u8 [N] with labels below 10. */
static int check_mnist(const ct_tensor *images, const ct_tensor *labels, const char *image_path,
                       const char *label_path, ct_status *status) {
  char buf[96];
  if (images->dtype != CT_U8 || images->shape.rank != 3) {
    ct_status_set(status, CT_DATA_LOSS,
                  "'%s' holds %s %s, not u8 images [N, H, W]; is it an MNIST images file?",
                  image_path, ct_dtype_name(images->dtype),
                  ct_shape_str(&images->shape, buf, sizeof buf));
    return 1;
  }
  if (labels->dtype != CT_U8 || labels->shape.rank != 1) {
    ct_status_set(status, CT_DATA_LOSS,
                  "'%s' holds %s %s, not u8 labels [N]; is it an MNIST labels file?", label_path,
                  ct_dtype_name(labels->dtype), ct_shape_str(&labels->shape, buf, sizeof buf));
    return 1;
  }
  if (images->shape.dims[0] != labels->shape.dims[0]) {
    ct_status_set(status, CT_DATA_LOSS,
                  "'%s' holds %lld images but '%s' holds %lld labels; the two files must come "
                  "from the same split",
                  image_path, (long long)images->shape.dims[0], label_path,
                  (long long)labels->shape.dims[0]);
    return 1;
  }
  const uint8_t *l = labels->data;
  for (int64_t i = 0; i < labels->shape.dims[0]; ++i) {
    if (l[i] >= MNIST_CLASSES) {
      ct_status_set(status, CT_DATA_LOSS,
                    "'%s' is corrupt: label %lld is %d, but MNIST labels lie in 0..9", label_path,
                    (long long)i, l[i]);
      return 1;
    }
  }
  return 0;
}

ct_dataset *ct_dataset_open_mnist(const char *dir, int train, ct_status *status) {
  if (dir == NULL || dir[0] == '\0') dir = CT_FASHION_MNIST_DIR;
  const char *prefix = train ? "train" : "t10k";
  char image_name[64], label_name[64];
  snprintf(image_name, sizeof image_name, "%s-images-idx3-ubyte", prefix);
  snprintf(label_name, sizeof label_name, "%s-labels-idx1-ubyte", prefix);
  char *image_path = malloc(PATH_MAX_LEN), *label_path = malloc(PATH_MAX_LEN);
  ct_dataset *ds = NULL;
  ct_tensor *images = NULL, *labels = NULL;
  if (image_path == NULL || label_path == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory");
  } else if (find_file(dir, image_name, image_path, status) == 0 &&
             find_file(dir, label_name, label_path, status) == 0 &&
             (images = ct_idx_read(image_path, status)) != NULL &&
             (labels = ct_idx_read(label_path, status)) != NULL &&
             check_mnist(images, labels, image_path, label_path, status) == 0 &&
             (ds = ct_dataset_alloc(NULL, status)) != NULL) {
    ds->n = images->shape.dims[0];
    ds->h = images->shape.dims[1];
    ds->w = images->shape.dims[2];
    ds->c = 1;
    ds->num_classes = MNIST_CLASSES;
    ds->images = images;
    ds->labels = labels;
    images = labels = NULL;
  }
  ct_tensor_free(images);
  ct_tensor_free(labels);
  free(image_path);
  free(label_path);
  return ds;
}

static int read_example(const ct_dataset *ds, int64_t i, uint8_t *pixels, int32_t *label,
                        ct_status *status) {
  if (ds->source) return ds->source->read(ds, i, pixels, label, status);
  const size_t bytes = (size_t)(ds->h * ds->w * ds->c);
  memcpy(pixels, (const uint8_t *)ds->images->data + (size_t)i * bytes, bytes);
  *label = ((const uint8_t *)ds->labels->data)[i];
  return 0;
}

static int read_checked(const ct_dataset *ds, int64_t index, uint8_t *pixels, int32_t *label,
                        ct_status *status);

int ct_dataset_enable_cache(ct_dataset *ds, ct_status *status) {
  if (ds->source == NULL || ds->source->held_in_memory || ds->cache != NULL)
    return 0; /* in memory already */
  const size_t bytes = (size_t)(ds->h * ds->w * ds->c);
  const size_t n = (size_t)(ds->n > 0 ? ds->n : 1);
  ds->cache = bytes <= SIZE_MAX / n ? malloc(n * bytes) : NULL;
  ds->cache_labels = malloc(n * sizeof *ds->cache_labels);
  ds->cached = calloc(n, sizeof *ds->cached);
  if (ds->cache == NULL || ds->cache_labels == NULL || ds->cached == NULL) {
    free(ds->cache);
    free(ds->cache_labels);
    free((void *)ds->cached);
    ds->cache = NULL, ds->cache_labels = NULL, ds->cached = NULL;
    ct_status_set(status, CT_RESOURCE_EXHAUSTED,
                  "dataset.cache: %lld decoded examples of %zu bytes do not fit in host memory; "
                  "set dataset.cache: false",
                  (long long)ds->n, bytes);
    return 1;
  }
  return 0;
}

int ct_dataset_read(const ct_dataset *ds, int64_t index, uint8_t *pixels, int32_t *label,
                    ct_status *status) {
  if (index < 0 || index >= ds->n) {
    ct_status_set(status, CT_INVALID_ARGUMENT, "example %lld is not in 0..%lld", (long long)index,
                  (long long)ds->n - 1);
    return 1;
  }
  if (ds->cache == NULL) return read_checked(ds, index, pixels, label, status);
  const size_t bytes = (size_t)(ds->h * ds->w * ds->c);
  _Atomic unsigned char *state = &ds->cached[index];
  if (atomic_load_explicit(state, memory_order_acquire) == 2) {
    memcpy(pixels, ds->cache + (size_t)index * bytes, bytes);
    *label = ds->cache_labels[index];
    return 0;
  }
  if (read_checked(ds, index, pixels, label, status)) return 1;
  unsigned char empty = 0; /* one thread stores it; the others read it again meanwhile */
  if (atomic_compare_exchange_strong(state, &empty, 1)) {
    memcpy(ds->cache + (size_t)index * bytes, pixels, bytes);
    ds->cache_labels[index] = *label;
    atomic_store_explicit(state, 2, memory_order_release);
  }
  return 0;
}

static int read_checked(const ct_dataset *ds, int64_t index, uint8_t *pixels, int32_t *label,
                        ct_status *status) {
  if (ds->bad == NULL) return read_example(ds, index, pixels, label, status);
  /* skip_bad_examples: the first good example from index on takes its place */
  ct_dataset *shared = (ct_dataset *)ds; /* only its atomics change */
  for (int64_t tries = 0; tries < ds->n; ++tries) {
    const int64_t i = (index + tries) % ds->n;
    if (atomic_load(&ds->bad[i])) continue;
    ct_status why = CT_STATUS_INIT;
    if (read_example(ds, i, pixels, label, &why) == 0) return 0;
    if (atomic_exchange(&shared->bad[i], 1) == 0) {
      const int64_t count = atomic_fetch_add(&shared->skipped, 1) + 1;
      ct_dataset_warn(ds, "skipped a bad example (%lld skipped so far): %s", (long long)count,
                      why.message);
    }
  }
  ct_status_set(status, CT_DATA_LOSS,
                "every one of the %lld examples is bad (see the warnings above); check "
                "dataset.path",
                (long long)ds->n);
  return 1;
}

const char *ct_dataset_class_name(const ct_dataset *ds, int k) {
  return ds->class_names && k >= 0 && k < ds->num_classes ? ds->class_names[k] : NULL;
}

int64_t ct_dataset_skipped(const ct_dataset *ds) { return atomic_load(&ds->skipped); }

int64_t ct_dataset_size(const ct_dataset *dataset) { return dataset->n; }

void ct_dataset_image_shape(const ct_dataset *dataset, int64_t *h, int64_t *w, int64_t *c) {
  if (h) *h = dataset->h;
  if (w) *w = dataset->w;
  if (c) *c = dataset->c;
}

int ct_dataset_num_classes(const ct_dataset *dataset) { return dataset->num_classes; }

void ct_dataset_free(ct_dataset *dataset) {
  if (dataset == NULL) return;
  ct_tensor_free(dataset->images);
  ct_tensor_free(dataset->labels);
  if (dataset->source) dataset->source->free_state(dataset->state);
  if (dataset->class_names) ct_free_names(dataset->class_names, dataset->num_classes);
  free((void *)dataset->bad);
  free(dataset->cache);
  free(dataset->cache_labels);
  free((void *)dataset->cached);
  free(dataset);
}
