/* The dataset readers by name (ct_dataset_open_named): one list, from
 * which both the names config accepts (ct_dataset_names) and the readers
 * come. A new format: its reader (a file of this folder with its
 * ct_dataset_open_* in ctower/data.h), an opener below, and its line in
 * DATASET_READERS. */
#include <stdio.h>
#include <string.h>

#include "ctower/data.h"

typedef ct_dataset *(*open_fn)(const ct_dataset_request *request, ct_status *status);

static ct_dataset *open_mnist(const ct_dataset_request *r, ct_status *status) {
  return ct_dataset_open_mnist(r->path, r->train, status);
}

static ct_dataset *open_synthetic(const ct_dataset_request *r, ct_status *status) {
  const int64_t *shape = r->read.image_shape;
  return ct_dataset_new_synthetic(r->examples, shape[0], shape[1], shape[2], r->read.num_classes,
                                  r->seed, status);
}

static ct_dataset *open_cifar10(const ct_dataset_request *r, ct_status *status) {
  return ct_dataset_open_cifar(r->path, 10, r->train, &r->read, status);
}

static ct_dataset *open_cifar100(const ct_dataset_request *r, ct_status *status) {
  return ct_dataset_open_cifar(r->path, 100, r->train, &r->read, status);
}

static ct_dataset *open_image_folder(const ct_dataset_request *r, ct_status *status) {
  return ct_dataset_open_image_folder(r->path, r->train, &r->read, status);
}

static ct_dataset *open_tfrecord(const ct_dataset_request *r, ct_status *status) {
  return ct_dataset_open_tfrecord(r->path, r->train, &r->read, status);
}

/* Every format: its name and its opener. */
#define DATASET_READERS(X)            \
  X("fashion_mnist", open_mnist)      \
  X("mnist", open_mnist)              \
  X("synthetic", open_synthetic)      \
  X("cifar10", open_cifar10)          \
  X("cifar100", open_cifar100)        \
  X("image_folder", open_image_folder) \
  X("tfrecord", open_tfrecord)

#define READER_NAME(name, open) name,
#define READER_OPEN(name, open) open,
const char *const ct_dataset_names[] = {DATASET_READERS(READER_NAME) NULL};
static const open_fn k_openers[] = {DATASET_READERS(READER_OPEN)};

ct_dataset *ct_dataset_open_named(const ct_dataset_request *r, ct_status *status) {
  for (int i = 0; ct_dataset_names[i]; ++i)
    if (r->name && strcmp(r->name, ct_dataset_names[i]) == 0) return k_openers[i](r, status);
  char known[256] = "";
  size_t used = 0;
  for (int i = 0; ct_dataset_names[i] && used < sizeof known; ++i)
    used += (size_t)snprintf(known + used, sizeof known - used, "%s%s", i ? ", " : "",
                             ct_dataset_names[i]);
  ct_status_set(status, CT_INVALID_ARGUMENT, "no reader for a dataset named '%s'; known: %s",
                r->name ? r->name : "(null)", known);
  return NULL;
}
