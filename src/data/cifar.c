/* CIFAR-10 and CIFAR-100, binary version: records of label byte(s) and three
 * 32x32 colour planes, read whole into memory as HWC images. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/files.h"
#include "data/dataset_internal.h"

enum { CIFAR_SIDE = 32, CIFAR_PIXELS = 32 * 32 * 3, CIFAR_MAX_FILES = 5 };

typedef struct cifar_layout {
  int label_bytes; /* 1 (CIFAR-10) or 2 (CIFAR-100: coarse, fine) */
  int label_at;    /* which of them is the label */
  int classes;
  const char *files[CIFAR_MAX_FILES + 1]; /* NULL-terminated */
  const char *tar_folder;                 /* the folder the download unpacks to */
} cifar_layout;

static cifar_layout layout_of(int classes, int train, int coarse) {
  cifar_layout l = {1, 0, 10, {NULL}, "cifar-10-batches-bin"};
  if (classes == 100) {
    l = (cifar_layout){2, coarse ? 0 : 1, coarse ? 20 : 100, {NULL}, "cifar-100-binary"};
    l.files[0] = train ? "train.bin" : "test.bin";
  } else if (train) {
    static const char *const batches[] = {"data_batch_1.bin", "data_batch_2.bin",
                                          "data_batch_3.bin", "data_batch_4.bin",
                                          "data_batch_5.bin"};
    for (int i = 0; i < CIFAR_MAX_FILES; ++i) l.files[i] = batches[i];
  } else {
    l.files[0] = "test_batch.bin";
  }
  return l;
}

/* dir itself, or the folder the download unpacks to inside it. */
static void cifar_folder(const char *dir, const cifar_layout *l, char *out, size_t size) {
  snprintf(out, size, "%s/%s", dir, l->files[0]);
  if (!ct_file_present(out)) {
    snprintf(out, size, "%s/%s/%s", dir, l->tar_folder, l->files[0]);
    if (ct_file_present(out)) {
      snprintf(out, size, "%s/%s", dir, l->tar_folder);
      return;
    }
  }
  snprintf(out, size, "%s", dir);
}

/* Appends the records of one file to ds (which has room for them). */
static int read_cifar_file(ct_dataset *ds, const cifar_layout *l, const ct_file_role *role,
                           const char *path, ct_status *status) {
  size_t size;
  unsigned char *data = ct_file_read_all(path, role, &size, status);
  if (data == NULL) return 1;
  const size_t record = (size_t)l->label_bytes + CIFAR_PIXELS;
  const size_t whole = size / record;
  int failed = 0;
  if (size == 0 || size % record != 0) {
    if (ds->skip_bad && whole > 0) {
      ct_dataset_warn(ds, "'%s' ends in a partial record of %zu bytes after record %zu; skipped it",
                      path, size % record, whole);
      ds->skipped++;
    } else {
      ct_status_set(status, CT_DATA_LOSS,
                    "'%s' is %zu bytes, not a whole number of %zu-byte CIFAR-%d records (%zu "
                    "whole, then %zu bytes): it is truncated or not a CIFAR binary file; "
                    "download the binary version again from "
                    "https://www.cs.toronto.edu/~kriz/cifar.html%s",
                    path, size, record, l->label_bytes == 1 ? 10 : 100, whole, size % record,
                    whole > 0 ? " or set dataset.skip_bad_examples: true" : "");
      failed = 1;
    }
  }
  uint8_t *images = ds->images->data, *labels = ds->labels->data;
  for (size_t r = 0; !failed && r < whole; ++r) {
    const unsigned char *rec = data + r * record;
    const int label = rec[l->label_at];
    if (label >= l->classes) {
      if (!ds->skip_bad) {
        ct_status_set(status, CT_DATA_LOSS,
                      "'%s' is corrupt: record %zu (byte %zu) has label %d, but the labels lie "
                      "in 0..%d; download the file again or set dataset.skip_bad_examples: true",
                      path, r, r * record, label, l->classes - 1);
        failed = 1;
      } else if (ds->skipped++ == 0) {
        ct_dataset_warn(ds, "'%s': record %zu has label %d, outside 0..%d; skipped it", path, r,
                        label, l->classes - 1);
      }
      continue;
    }
    /* planes R, G, B of 32x32 -> HWC */
    const unsigned char *planes = rec + l->label_bytes;
    uint8_t *dst = images + ds->n * CIFAR_PIXELS;
    for (int p = 0; p < CIFAR_SIDE * CIFAR_SIDE; ++p)
      for (int k = 0; k < 3; ++k) dst[3 * p + k] = planes[k * CIFAR_SIDE * CIFAR_SIDE + p];
    labels[ds->n++] = (uint8_t)label;
  }
  free(data);
  return failed;
}

/* The records in the layout's files, from their sizes. */
static int64_t count_records(const char *folder, const cifar_layout *l, const ct_file_role *role,
                             ct_status *status) {
  int64_t total = 0;
  char path[4160];
  for (int i = 0; l->files[i]; ++i) {
    snprintf(path, sizeof path, "%s/%s", folder, l->files[i]);
    struct stat st;
    const int fd = ct_file_open_read(path, role, &st, status);
    if (fd < 0) return -1;
    close(fd);
    total += (int64_t)st.st_size / (l->label_bytes + CIFAR_PIXELS);
  }
  return total;
}

ct_dataset *ct_dataset_open_cifar(const char *dir, int classes, int train,
                                  const ct_dataset_read_options *options, ct_status *status) {
  if (classes != 10 && classes != 100) {
    ct_status_set(status, CT_INVALID_ARGUMENT, "CIFAR comes with 10 or 100 classes, not %d",
                  classes);
    return NULL;
  }
  const cifar_layout l = layout_of(classes, train, options && options->coarse_labels);
  char folder[4096], path[4160], what[16], fix[256];
  cifar_folder(dir, &l, folder, sizeof folder - 64);
  snprintf(what, sizeof what, "CIFAR-%d file", classes);
  snprintf(fix, sizeof fix,
           "download the binary version from https://www.cs.toronto.edu/~kriz/cifar.html, unpack "
           "it and set dataset.path to the folder that holds %s",
           l.files[0]);
  const ct_file_role role = {what, fix};
  const int64_t records = count_records(folder, &l, &role, status);
  if (records < 0) return NULL;
  ct_dataset *ds = ct_dataset_alloc(options, status);
  if (ds == NULL) return NULL;
  ct_shape is = ct_shape_of(4, records, CIFAR_SIDE, CIFAR_SIDE, 3), ls = ct_shape_of(1, records);
  ds->images = ct_tensor_new(CT_U8, &is, status);
  ds->labels = ct_tensor_new(CT_U8, &ls, status);
  ds->h = ds->w = CIFAR_SIDE;
  ds->c = 3;
  ds->num_classes = l.classes;
  int failed = ds->images == NULL || ds->labels == NULL;
  for (int i = 0; !failed && l.files[i]; ++i) {
    snprintf(path, sizeof path, "%s/%s", folder, l.files[i]);
    failed = read_cifar_file(ds, &l, &role, path, status);
  }
  if (!failed && ds->skipped > 0)
    ct_dataset_warn(ds, "skipped %lld bad CIFAR record(s) of '%s'", (long long)ds->skipped, folder);
  if (failed) {
    ct_dataset_free(ds);
    return NULL;
  }
  return ds;
}
