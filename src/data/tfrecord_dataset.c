/* TFRecord files of tf.Example records (image/encoded, image/class/label):
 * indexed when opened (where each record starts), each record read, checked
 * and decoded when asked for. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/crc32c.h"
#include "core/files.h"
#include "core/tfrecord.h"
#include "data/dataset_internal.h"
#include "example.pb-c.h"

#define IMAGE_KEY "image/encoded"
#define LABEL_KEY "image/class/label"

typedef struct tfrecord_state {
  char **paths; /* n_files files (owned) */
  int64_t n_files;
  int64_t *first;  /* n_files + 1: the index of each file's first example */
  int64_t *offset; /* n: where each record starts in its file */
  int64_t n, capacity;
  int64_t label_offset;
  int num_classes;
} tfrecord_state;

static void free_tfrecord_state(void *p) {
  tfrecord_state *s = p;
  if (s == NULL) return;
  ct_free_names(s->paths, s->n_files);
  free(s->first);
  free(s->offset);
  free(s);
}

/* The feature `key` of ex when it is of the kind asked for, else NULL. */
static const Tensorflow__Feature *find_feature(const Tensorflow__Example *ex, const char *key,
                                               Tensorflow__Feature__KindCase kind) {
  if (ex->features == NULL) return NULL;
  for (size_t i = 0; i < ex->features->n_feature; ++i) {
    const Tensorflow__Features__FeatureEntry *e = ex->features->feature[i];
    if (e->key && strcmp(e->key, key) == 0 && e->value && e->value->kind_case == kind)
      return e->value;
  }
  return NULL;
}

static int file_of(const tfrecord_state *s, int64_t index) {
  int lo = 0, hi = (int)s->n_files - 1;
  while (lo < hi) { /* the last file whose first example is <= index */
    const int mid = (lo + hi + 1) / 2;
    if (s->first[mid] <= index)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

static int parse_example(const tfrecord_state *s, const ct_dataset *ds, const unsigned char *data,
                         size_t size, const char *where, uint8_t *pixels, int32_t *label,
                         ct_status *status) {
  Tensorflow__Example *ex = tensorflow__example__unpack(NULL, size, data);
  if (ex == NULL) {
    ct_status_set(status, CT_DATA_LOSS,
                  "%s is not a tf.Example; ctower reads TFRecord files of tf.Example records "
                  "with '" IMAGE_KEY "' and '" LABEL_KEY "'",
                  where);
    return 1;
  }
  const Tensorflow__Feature *image =
      find_feature(ex, IMAGE_KEY, TENSORFLOW__FEATURE__KIND_BYTES_LIST);
  const Tensorflow__Feature *labels =
      find_feature(ex, LABEL_KEY, TENSORFLOW__FEATURE__KIND_INT64_LIST);
  int failed = 1;
  if (image == NULL || image->bytes_list->n_value < 1 || labels == NULL ||
      labels->int64_list->n_value < 1) {
    const int no_image = image == NULL || image->bytes_list->n_value < 1;
    ct_status_set(status, CT_DATA_LOSS,
                  "%s has no feature '%s' (%s) in its tf.Example; write it, or set "
                  "dataset.skip_bad_examples: true to skip such records",
                  where, no_image ? IMAGE_KEY : LABEL_KEY,
                  no_image ? "the JPEG or PNG bytes" : "an int64 label");
  } else {
    const int64_t stored = labels->int64_list->value[0];
    const int64_t value = stored - s->label_offset;
    if (value < 0 || value >= s->num_classes) {
      ct_status_set(status, CT_DATA_LOSS,
                    "%s has label %lld, which minus dataset.label_offset (%lld) is outside the "
                    "%d classes of dataset.num_classes; set dataset.num_classes and "
                    "dataset.label_offset to match the files",
                    where, (long long)stored, (long long)s->label_offset, s->num_classes);
    } else {
      const ProtobufCBinaryData *bytes = &image->bytes_list->value[0];
      failed = ct_image_decode(bytes->data, bytes->len, where, ds->h, ds->w, ds->c, pixels, status);
      *label = (int32_t)value;
    }
  }
  tensorflow__example__free_unpacked(ex, NULL);
  return failed;
}

static const ct_file_role k_tfrecord_role = {
    "TFRecord file", "was it removed or replaced after the dataset was opened?"};

static int read_tfrecord_example(const ct_dataset *ds, int64_t index, uint8_t *pixels,
                                 int32_t *label, ct_status *status) {
  const tfrecord_state *s = ds->state;
  const int f = file_of(s, index);
  const char *path = s->paths[f];
  ct_tfrecord_reader reader = {.path = path, .offset = s->offset[index]};
  reader.file = ct_file_fopen_read(path, &k_tfrecord_role, status);
  if (reader.file == NULL) return 1;
  if (fseek(reader.file, (long)reader.offset, SEEK_SET) != 0) {
    ct_status_set(status, CT_UNAVAILABLE,
                  "cannot read '%s'; was it changed after the dataset "
                  "was opened?",
                  path);
    fclose(reader.file);
    return 1;
  }
  ct_status framing = CT_STATUS_INIT;
  int failed = ct_tfrecord_read(&reader, &framing);
  fclose(reader.file);
  if (failed)
    ct_status_set(status, framing.code == CT_OUT_OF_RANGE ? CT_DATA_LOSS : framing.code,
                  "%s (record %lld); write the file again or set dataset.skip_bad_examples: true",
                  framing.message, (long long)(index - s->first[f]));
  if (!failed) {
    char where[4200];
    snprintf(where, sizeof where, "'%s' record %lld (byte %lld)", path,
             (long long)(index - s->first[f]), (long long)s->offset[index]);
    failed = parse_example(s, ds, reader.data, reader.length, where, pixels, label, status);
  }
  ct_tfrecord_reader_free(&reader);
  return failed;
}

static const ct_dataset_source k_tfrecord_source = {read_tfrecord_example, free_tfrecord_state,
                                                    0};

static int add_record(tfrecord_state *s, int64_t offset) {
  if (s->n == s->capacity) {
    s->capacity = s->capacity ? 2 * s->capacity : 4096;
    int64_t *grown = realloc(s->offset, (size_t)s->capacity * sizeof *grown);
    if (grown == NULL) return 1;
    s->offset = grown;
  }
  s->offset[s->n++] = offset;
  return 0;
}

/* Records the offset of each record of one file, checking each length's
 * CRC and that the file holds the whole record. */
static int index_file(ct_dataset *ds, tfrecord_state *s, const char *path, ct_status *status) {
  FILE *f = ct_file_fopen_read(path, &k_tfrecord_role, status);
  if (f == NULL) return 1;
  int64_t size = -1, at = 0;
  if (fseek(f, 0, SEEK_END) == 0) size = ftell(f);
  if (size < 0) {
    ct_status_set(status, CT_UNAVAILABLE, "cannot read the TFRecord file '%s': %s", path,
                  strerror(errno));
    fclose(f);
    return 1;
  }
  int failed = 0;
  char problem[256] = "";
  while (at < size && !failed) {
    unsigned char header[12];
    uint64_t length = 0;
    if (fseek(f, (long)at, SEEK_SET) != 0 || fread(header, 1, 12, f) != 12) {
      snprintf(problem, sizeof problem, "the record at byte %lld is truncated (%lld bytes left)",
               (long long)at, (long long)(size - at));
      break;
    }
    for (int i = 0; i < 8; ++i) length |= (uint64_t)header[i] << (8 * i);
    const uint32_t crc = (uint32_t)header[8] | (uint32_t)header[9] << 8 |
                         (uint32_t)header[10] << 16 | (uint32_t)header[11] << 24;
    if (ct_crc32c_mask(ct_crc32c(header, 8)) != crc) {
      snprintf(problem, sizeof problem,
               "the length of the record at byte %lld fails its CRC (a corrupt file, or not a "
               "TFRecord file)",
               (long long)at);
      break;
    }
    if (length > (uint64_t)(size - at - CT_TFRECORD_OVERHEAD)) {
      snprintf(problem, sizeof problem,
               "the record at byte %lld is truncated: it needs %llu bytes, the file has %lld",
               (long long)at, (unsigned long long)length + CT_TFRECORD_OVERHEAD,
               (long long)(size - at));
      break;
    }
    if (add_record(s, at)) {
      ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory indexing '%s'", path);
      failed = 1;
    }
    at += (int64_t)length + CT_TFRECORD_OVERHEAD;
  }
  fclose(f);
  if (!failed && problem[0]) {
    if (ds->skip_bad) {
      ds->skipped++;
      ct_dataset_warn(ds, "'%s': %s; skipped the rest of the file", path, problem);
    } else {
      ct_status_set(status, CT_DATA_LOSS,
                    "'%s' is corrupt: %s; write the file again or set "
                    "dataset.skip_bad_examples: true to skip the rest of it",
                    path, problem);
      failed = 1;
    }
  }
  return failed;
}

/* The files of the split: dir/<prefix>* or else dir/<sub>/...*.tfrecord. */
static int64_t find_files(const char *dir, int train, char ***out, ct_status *status) {
  const char *prefix = train ? "train-" : "validation-", *sub = train ? "train" : "test";
  char **names = NULL, folder[4096];
  for (int pass = 0; pass < 2; ++pass) {
    snprintf(folder, sizeof folder, pass ? "%s/%s" : "%s", dir, sub);
    if (!ct_file_present(folder)) continue;
    const int64_t count = ct_list_folder(folder, 0, &names, status);
    if (count < 0) return -1;
    int64_t kept = 0;
    for (int64_t i = 0; i < count; ++i) {
      const size_t len = strlen(names[i]);
      const int match = pass ? len > 9 && strcmp(names[i] + len - 9, ".tfrecord") == 0
                             : strncmp(names[i], prefix, strlen(prefix)) == 0;
      char *path = match ? malloc(strlen(folder) + len + 2) : NULL;
      if (path) sprintf(path, "%s/%s", folder, names[i]);
      free(names[i]);
      if (path) names[kept++] = path;
    }
    if (kept > 0) {
      *out = names;
      return kept;
    }
    free(names);
    names = NULL;
  }
  ct_status_set(status, CT_NOT_FOUND,
                "no TFRecord file for the %s split in '%s': dataset.path must hold %s-* files "
                "(tf_cnn_benchmarks' ImageNet names) or %s/*.tfrecord",
                train ? "train" : "test", dir, train ? "train" : "validation", sub);
  return -1;
}

ct_dataset *ct_dataset_open_tfrecord(const char *dir, int train,
                                     const ct_dataset_read_options *options, ct_status *status) {
  if (ct_dataset_check_image_shape(options, "TFRecord", status)) return NULL;
  if (options->num_classes < 1) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "TFRecord datasets need dataset.num_classes (at least 1), got %d",
                  options->num_classes);
    return NULL;
  }
  char **paths = NULL;
  const int64_t n_files = find_files(dir, train, &paths, status);
  if (n_files < 0) return NULL;
  ct_dataset *ds = ct_dataset_alloc(options, status);
  tfrecord_state *s = ds ? calloc(1, sizeof *s) : NULL;
  int64_t *first = s ? malloc((size_t)(n_files + 1) * sizeof *first) : NULL;
  if (first == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory");
    ct_free_names(paths, n_files);
    free(s);
    ct_dataset_free(ds);
    return NULL;
  }
  *s = (tfrecord_state){.paths = paths,
                        .n_files = n_files,
                        .first = first,
                        .label_offset = options->label_offset,
                        .num_classes = options->num_classes};
  ds->h = options->image_shape[0], ds->w = options->image_shape[1];
  ds->c = options->image_shape[2];
  ds->num_classes = options->num_classes;
  int failed = 0;
  for (int64_t i = 0; !failed && i < n_files; ++i) {
    first[i] = s->n;
    failed = index_file(ds, s, paths[i], status);
  }
  first[n_files] = s->n;
  if (ct_dataset_set_source(ds, &k_tfrecord_source, s, s->n, status) || failed) {
    ct_dataset_free(ds);
    return NULL;
  }
  return ds;
}
