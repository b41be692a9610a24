/* Checkpoints in the safetensors format: atomic writing. Reading lives in
 * checkpoint_read.c. */
#include "ctower/checkpoint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/files.h"
#include "core/json.h"
#include "core/text.h"
#include "checkpoint/checkpoint_internal.h"

/* ---- argument checks ----------------------------------------------------------------- */

static int compare_strings(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Fails when two of names[0..n) are equal. */
static int check_unique(const char *path, const char **names, int n, const char *what,
                        ct_status *status) {
  const char **sorted = malloc((size_t)(n > 0 ? n : 1) * sizeof *sorted);
  if (sorted == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory writing '%s'", path);
    return 1;
  }
  memcpy(sorted, names, (size_t)n * sizeof *sorted);
  qsort(sorted, (size_t)n, sizeof *sorted, compare_strings);
  for (int i = 1; i < n; ++i) {
    if (strcmp(sorted[i - 1], sorted[i]) == 0) {
      ct_status_set(status, CT_INVALID_ARGUMENT,
                    "two %s are named '%s' in checkpoint '%s'; give each a unique name", what,
                    sorted[i], path);
      free(sorted);
      return 1;
    }
  }
  free(sorted);
  return 0;
}

static int check_name(const char *path, const char *name, const char *what, ct_status *status) {
  const char *problem = name == NULL                              ? "is NULL"
                        : name[0] == '\0'                         ? "is empty"
                        : !ct_json_utf8_valid(name, strlen(name)) ? "is not valid UTF-8"
                        : strcmp(name, "__metadata__") == 0       ? "is the reserved '__metadata__'"
                                                                  : NULL;
  if (problem != NULL) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "a %s for checkpoint '%s' %s; use a non-empty UTF-8 name other than "
                  "'__metadata__'",
                  what, path, problem);
    return 1;
  }
  return 0;
}

static int check_args(const char *path, const ct_named_tensor *tensors, int n_tensors,
                      const char *const *kv, int n_pairs, ct_status *status) {
  if (path == NULL || path[0] == '\0' || n_tensors < 0 || n_pairs < 0 ||
      (n_tensors > 0 && tensors == NULL) || (n_pairs > 0 && kv == NULL)) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "ct_checkpoint_write needs a path and arrays matching their counts (got %d "
                  "tensors, %d metadata pairs)",
                  n_tensors, n_pairs);
    return 1;
  }
  for (int i = 0; i < n_tensors; ++i) {
    const ct_tensor *t = tensors[i].tensor;
    if (check_name(path, tensors[i].name, "tensor name", status)) return 1;
    if (t == NULL || (int)t->dtype < 0 || t->dtype >= CT_DTYPE_COUNT || t->shape.rank < 0 ||
        t->shape.rank > CT_MAX_RANK || !ct_shape_is_known(&t->shape) ||
        (t->data == NULL && ct_tensor_elements(t) > 0)) {
      ct_status_set(status, CT_INVALID_ARGUMENT,
                    "tensor '%s' for checkpoint '%s' is missing or has no known shape, dtype or "
                    "data; pass a complete tensor",
                    tensors[i].name, path);
      return 1;
    }
  }
  for (int i = 0; i < n_pairs; ++i) {
    if (check_name(path, kv[2 * i], "metadata key", status)) return 1;
    if (kv[2 * i + 1] == NULL || !ct_json_utf8_valid(kv[2 * i + 1], strlen(kv[2 * i + 1]))) {
      ct_status_set(status, CT_INVALID_ARGUMENT,
                    "metadata '%s' for checkpoint '%s' has a NULL or non-UTF-8 value; pass a "
                    "UTF-8 string",
                    kv[2 * i], path);
      return 1;
    }
  }
  const char **names = malloc((size_t)(n_tensors + n_pairs + 1) * sizeof *names);
  if (names == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory writing '%s'", path);
    return 1;
  }
  for (int i = 0; i < n_tensors; ++i) names[i] = tensors[i].name;
  int failed = check_unique(path, names, n_tensors, "tensors", status);
  for (int i = 0; i < n_pairs; ++i) names[i] = kv[2 * i];
  failed = failed || check_unique(path, names, n_pairs, "metadata keys", status);
  free(names);
  return failed;
}

/* ---- the header ----------------------------------------------------------------------- */

/* Builds the JSON header, padded with spaces to a multiple of 8 bytes. */
static int build_header(ct_text *h, const ct_named_tensor *tensors, int n_tensors,
                        const char *const *kv, int n_pairs) {
  ct_text_str(h, "{");
  if (n_pairs > 0) {
    ct_text_str(h, "\"__metadata__\":{");
    for (int i = 0; i < n_pairs; ++i) {
      if (i) ct_text_str(h, ",");
      ct_text_json_string(h, kv[2 * i]);
      ct_text_str(h, ":");
      ct_text_json_string(h, kv[2 * i + 1]);
    }
    ct_text_str(h, "}");
  }
  uint64_t offset = 0;
  for (int i = 0; i < n_tensors; ++i) {
    const ct_tensor *t = tensors[i].tensor;
    if (i || n_pairs > 0) ct_text_str(h, ",");
    ct_text_json_string(h, tensors[i].name);
    ct_text_str(h, ":{\"dtype\":\"");
    ct_text_str(h, ct_safetensors_dtype_name(t->dtype));
    ct_text_str(h, "\",\"shape\":[");
    for (int d = 0; d < t->shape.rank; ++d) {
      if (d) ct_text_str(h, ",");
      ct_text_printf(h, "%llu", (unsigned long long)t->shape.dims[d]);
    }
    ct_text_str(h, "],\"data_offsets\":[");
    ct_text_printf(h, "%llu", (unsigned long long)offset);
    ct_text_str(h, ",");
    offset += ct_tensor_nbytes(t);
    ct_text_printf(h, "%llu", (unsigned long long)offset);
    ct_text_str(h, "]}");
  }
  ct_text_str(h, "}");
  while (!h->oom && h->len % 8 != 0) ct_text_str(h, " ");
  return h->oom;
}

/* ---- the file ------------------------------------------------------------------------ */

/* Writes a tensor's bytes little-endian, whatever the host's order. */
static int write_tensor_le(ct_file_writer *w, const ct_tensor *t, ct_status *status) {
  size_t nbytes = ct_tensor_nbytes(t), esize = ct_dtype_size(t->dtype);
  if (ct_host_is_little_endian() || esize == 1)
    return ct_file_writer_write(w, t->data, nbytes, status);
  unsigned char chunk[4096];
  const unsigned char *src = t->data;
  for (size_t done = 0; done < nbytes;) {
    size_t n = nbytes - done < sizeof chunk ? nbytes - done : sizeof chunk;
    for (size_t i = 0; i < n; i += esize)
      for (size_t b = 0; b < esize; ++b) chunk[i + b] = src[done + i + esize - 1 - b];
    if (ct_file_writer_write(w, chunk, n, status)) return 1;
    done += n;
  }
  return 0;
}

const ct_file_role ct_checkpoint_role = {"checkpoint", "set train.checkpoint to a file's path"};

int ct_checkpoint_write(const char *path, const ct_named_tensor *tensors, int n_tensors,
                        const char *const *metadata_kv, int n_metadata_pairs, ct_status *status) {
  if (check_args(path, tensors, n_tensors, metadata_kv, n_metadata_pairs, status)) return 1;
  ct_text header = {NULL, 0, 0, 0};
  if (build_header(&header, tensors, n_tensors, metadata_kv, n_metadata_pairs)) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory writing '%s'", path);
    free(header.data);
    return 1;
  }
  ct_file_writer w;
  if (ct_file_writer_open(&w, path, &ct_checkpoint_role, status)) {
    free(header.data);
    return 1;
  }
  unsigned char len_le[8];
  const uint64_t hlen = header.len;
  for (int i = 0; i < 8; ++i) len_le[i] = (unsigned char)(hlen >> (8 * i));
  int failed = ct_file_writer_write(&w, len_le, 8, status) ||
               ct_file_writer_write(&w, header.data, header.len, status);
  for (int i = 0; i < n_tensors && !failed; ++i)
    failed = write_tensor_le(&w, tensors[i].tensor, status);
  free(header.data);
  if (failed) {
    ct_file_writer_discard(&w);
    return 1;
  }
  return ct_file_writer_commit(&w, status);
}
