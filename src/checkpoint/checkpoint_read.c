/* Checkpoints in the safetensors format: strict reading. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "ctower/checkpoint.h"
#include "checkpoint/checkpoint_internal.h"

typedef struct entry {
  const char *name;  /* owned by the header tree */
  ct_tensor *tensor; /* owned */
  uint64_t begin, end;
} entry;

struct ct_checkpoint {
  ct_json *header;
  const ct_json *metadata; /* NULL when the file has none */
  entry *entries;
  int count;
};

/* Sets CT_DATA_LOSS: "checkpoint 'path' is corrupt or truncated: <detail>; ...". */
static void corrupt(ct_status *status, const char *path, const char *fmt, ...) {
  char detail[512];
  va_list args;
  va_start(args, fmt);
  vsnprintf(detail, sizeof detail, fmt, args);
  va_end(args);
  ct_status_set(status, CT_DATA_LOSS,
                "checkpoint '%s' is corrupt or truncated: %s; restore it from a backup or train "
                "again",
                path, detail);
}

/* ---- loading the bytes ------------------------------------------------------------- */

static const ct_file_role k_read_role = {
    "checkpoint", "give the path of a .safetensors file (train first to write one)"};

/* ---- checking the header ------------------------------------------------------------ */

/* Maps a safetensors dtype string; -1 unknown, -2 valid but unsupported. */
static int parse_dtype(const ct_json *v) {
  static const char *const unsupported[] = {
      "F16",  "BF16",    "F64",     "I8",      "I16",     "U16",     "U32", "U64",
      "BOOL", "F8_E4M3", "F8_E5M2", "F8_E8M0", "F6_E2M3", "F6_E3M2", "F4",  "C64"};
  /* "F32\u0000" is not F32 */
  if (v == NULL || v->type != CT_JSON_STRING || strlen(v->string) != v->length) return -1;
  for (int d = 0; d < CT_DTYPE_COUNT; ++d)
    if (strcmp(v->string, ct_safetensors_dtype_name((ct_dtype)d)) == 0) return d;
  for (size_t i = 0; i < sizeof unsupported / sizeof unsupported[0]; ++i)
    if (strcmp(v->string, unsupported[i]) == 0) return -2;
  return -1;
}

static int is_count(const ct_json *v) {
  return v != NULL && v->type == CT_JSON_NUMBER && v->is_integer && v->integer >= 0;
}

/* Checks one tensor entry and fills e (tensor not yet allocated). */
static int check_entry(const char *path, const char *name, const ct_json *v, uint64_t data_size,
                       entry *e, ct_dtype *dtype, ct_shape *shape, ct_status *status) {
  if (v->type != CT_JSON_OBJECT) {
    corrupt(status, path, "the entry of tensor '%s' is not a JSON object", name);
    return 1;
  }
  const ct_json *dt = ct_json_get(v, "dtype"), *sh = ct_json_get(v, "shape"),
                *off = ct_json_get(v, "data_offsets");
  if (dt == NULL || sh == NULL || off == NULL) {
    corrupt(status, path, "tensor '%s' lacks its '%s' field", name,
            dt == NULL   ? "dtype"
            : sh == NULL ? "shape"
                         : "data_offsets");
    return 1;
  }
  int d = parse_dtype(dt);
  if (d == -2) {
    ct_status_set(status, CT_UNIMPLEMENTED,
                  "checkpoint '%s' stores tensor '%s' as %s; ctower reads F32, I32, I64 and U8 "
                  "only, so convert it first",
                  path, name, dt->string);
    return 1;
  }
  if (d < 0) {
    corrupt(status, path, "tensor '%s' has an unknown dtype%s%.40s%s", name,
            dt->type == CT_JSON_STRING ? " '" : "", dt->type == CT_JSON_STRING ? dt->string : "",
            dt->type == CT_JSON_STRING ? "'" : "");
    return 1;
  }
  if (sh->type != CT_JSON_ARRAY) {
    corrupt(status, path, "the shape of tensor '%s' is not an array", name);
    return 1;
  }
  if (sh->count > CT_MAX_RANK) {
    ct_status_set(status, CT_UNIMPLEMENTED,
                  "checkpoint '%s' holds tensor '%s' of rank %zu; ctower tensors have rank %d at "
                  "most",
                  path, name, sh->count, CT_MAX_RANK);
    return 1;
  }
  uint64_t bytes = ct_dtype_size((ct_dtype)d);
  int overflow = 0;
  shape->rank = (int)sh->count;
  for (size_t i = 0; i < sh->count; ++i) {
    if (!is_count(&sh->items[i])) {
      corrupt(status, path, "dimension %zu of tensor '%s' is not a non-negative integer", i, name);
      return 1;
    }
    uint64_t dim = (uint64_t)sh->items[i].integer;
    shape->dims[i] = (int64_t)dim;
    if (dim != 0 && bytes > UINT64_MAX / dim) overflow = 1;
    bytes *= dim;
  }
  if (off->type != CT_JSON_ARRAY || off->count != 2 || !is_count(&off->items[0]) ||
      !is_count(&off->items[1])) {
    corrupt(status, path, "the data_offsets of tensor '%s' are not two non-negative integers",
            name);
    return 1;
  }
  e->begin = (uint64_t)off->items[0].integer;
  e->end = (uint64_t)off->items[1].integer;
  if (e->begin > e->end || e->end > data_size) {
    corrupt(status, path, "tensor '%s' spans bytes %llu..%llu, outside the %llu bytes of data",
            name, (unsigned long long)e->begin, (unsigned long long)e->end,
            (unsigned long long)data_size);
    return 1;
  }
  if (overflow || bytes != e->end - e->begin) {
    char buf[96];
    corrupt(status, path, "tensor '%s' of %s %s needs %s bytes but spans %llu", name,
            ct_safetensors_dtype_name((ct_dtype)d), ct_shape_str(shape, buf, sizeof buf),
            overflow ? "more than 2^64" : "a different number of",
            (unsigned long long)(e->end - e->begin));
    return 1;
  }
  *dtype = (ct_dtype)d;
  return 0;
}

static int check_metadata(const char *path, const ct_json *meta, ct_status *status) {
  if (meta->type != CT_JSON_OBJECT) {
    corrupt(status, path, "__metadata__ is not a JSON object");
    return 1;
  }
  for (size_t i = 0; i < meta->count; ++i) {
    const ct_json *v = &meta->items[i];
    if (v->type != CT_JSON_STRING || strlen(v->string) != v->length ||
        strlen(meta->keys[i]) != meta->key_lengths[i]) {
      corrupt(status, path, "metadata '%s' is not a string without NUL characters", meta->keys[i]);
      return 1;
    }
  }
  return 0;
}

typedef struct span {
  uint64_t begin, end;
  const char *name;
} span;

static int compare_spans(const void *a, const void *b) {
  const span *x = a, *y = b;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  if (x->end != y->end) return x->end < y->end ? -1 : 1;
  return 0;
}

/* The tensors must tile the data: no overlap, no gap, nothing left over. */
static int check_tiling(const char *path, const entry *entries, int n, uint64_t data_size,
                        ct_status *status) {
  span *spans = malloc((size_t)(n > 0 ? n : 1) * sizeof *spans);
  if (spans == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory reading '%s'", path);
    return 1;
  }
  for (int i = 0; i < n; ++i) spans[i] = (span){entries[i].begin, entries[i].end, entries[i].name};
  qsort(spans, (size_t)n, sizeof *spans, compare_spans);
  uint64_t cursor = 0;
  int failed = 0;
  for (int i = 0; i < n && !failed; ++i) {
    if (spans[i].begin < cursor) {
      corrupt(status, path, "tensors '%s' and '%s' overlap", spans[i - 1].name, spans[i].name);
      failed = 1;
    } else if (spans[i].begin > cursor) {
      corrupt(status, path, "data bytes %llu..%llu belong to no tensor", (unsigned long long)cursor,
              (unsigned long long)spans[i].begin);
      failed = 1;
    }
    cursor = spans[i].end;
  }
  if (!failed && cursor != data_size) {
    corrupt(status, path, "the last %llu data bytes belong to no tensor",
            (unsigned long long)(data_size - cursor));
    failed = 1;
  }
  free(spans);
  return failed;
}

typedef struct key_ref {
  const char *key;
  size_t length;
} key_ref;

static int compare_keys(const void *a, const void *b) {
  const key_ref *x = a, *y = b;
  size_t n = x->length < y->length ? x->length : y->length;
  int c = memcmp(x->key, y->key, n);
  if (c != 0) return c;
  return x->length < y->length ? -1 : x->length > y->length;
}

/* Fails when the header names a tensor (or __metadata__) twice. */
static int check_unique_keys(const char *path, const ct_json *root, ct_status *status) {
  key_ref *keys = malloc((root->count ? root->count : 1) * sizeof *keys);
  if (keys == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory reading '%s'", path);
    return 1;
  }
  for (size_t i = 0; i < root->count; ++i) keys[i] = (key_ref){root->keys[i], root->key_lengths[i]};
  qsort(keys, root->count, sizeof *keys, compare_keys);
  int failed = 0;
  for (size_t i = 1; i < root->count && !failed; ++i) {
    if (compare_keys(&keys[i - 1], &keys[i]) == 0) {
      corrupt(status, path, "the name '%s' appears twice in its header", keys[i].key);
      failed = 1;
    }
  }
  free(keys);
  return failed;
}

/* ---- building the checkpoint ------------------------------------------------------------ */

static void copy_le(void *dst, const unsigned char *src, size_t nbytes, size_t esize) {
  if (ct_host_is_little_endian() || esize == 1) {
    memcpy(dst, src, nbytes);
    return;
  }
  unsigned char *d = dst;
  for (size_t i = 0; i < nbytes; i += esize)
    for (size_t b = 0; b < esize; ++b) d[i + b] = src[i + esize - 1 - b];
}

/* Parses the header and builds the tensors from the file's bytes. */
static int load(ct_checkpoint *ck, const char *path, const unsigned char *file, size_t size,
                ct_status *status) {
  if (size < 8) {
    corrupt(status, path, "it has %zu bytes, fewer than the 8 of its header length", size);
    return 1;
  }
  uint64_t hlen = 0;
  for (int i = 0; i < 8; ++i) hlen |= (uint64_t)file[i] << (8 * i);
  if (hlen > size - 8) {
    corrupt(status, path, "its header length %llu runs past the end of the %zu-byte file",
            (unsigned long long)hlen, size);
    return 1;
  }
  char error[256];
  ck->header = ct_json_parse((const char *)file + 8, (size_t)hlen, error, sizeof error);
  if (ck->header == NULL) {
    corrupt(status, path, "its header is not valid JSON (%s)", error);
    return 1;
  }
  const ct_json *root = ck->header;
  if (root->type != CT_JSON_OBJECT) {
    corrupt(status, path, "its header is not a JSON object");
    return 1;
  }
  ck->entries = calloc(root->count ? root->count : 1, sizeof *ck->entries);
  if (ck->entries == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory reading '%s'", path);
    return 1;
  }
  if (check_unique_keys(path, root, status)) return 1;
  const unsigned char *data = file + 8 + hlen;
  const uint64_t data_size = size - 8 - hlen;
  for (size_t i = 0; i < root->count; ++i) {
    const char *name = root->keys[i];
    if (strlen(name) != root->key_lengths[i]) {
      corrupt(status, path, "a tensor name holds a NUL character");
      return 1;
    }
    if (strcmp(name, "__metadata__") == 0) {
      if (check_metadata(path, &root->items[i], status)) return 1;
      ck->metadata = &root->items[i];
      continue;
    }
    entry *e = &ck->entries[ck->count];
    ct_dtype dtype;
    ct_shape shape;
    memset(&shape, 0, sizeof shape);
    if (check_entry(path, name, &root->items[i], data_size, e, &dtype, &shape, status)) return 1;
    e->name = name;
    e->tensor = ct_tensor_new(dtype, &shape, status);
    if (e->tensor == NULL) return 1;
    ++ck->count;
    copy_le(e->tensor->data, data + e->begin, (size_t)(e->end - e->begin), ct_dtype_size(dtype));
  }
  return check_tiling(path, ck->entries, ck->count, data_size, status);
}

ct_checkpoint *ct_checkpoint_read(const char *path, ct_status *status) {
  if (path == NULL || path[0] == '\0') {
    ct_status_set(status, CT_INVALID_ARGUMENT, "ct_checkpoint_read needs a path, got none");
    return NULL;
  }
  size_t size = 0;
  unsigned char *file = ct_file_read_all(path, &k_read_role, &size, status);
  if (file == NULL) return NULL;
  ct_checkpoint *ck = calloc(1, sizeof *ck);
  if (ck == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory reading '%s'", path);
  } else if (load(ck, path, file, size, status) != 0) {
    ct_checkpoint_free(ck);
    ck = NULL;
  }
  free(file);
  return ck;
}

int ct_checkpoint_count(const ct_checkpoint *checkpoint) { return checkpoint->count; }

const char *ct_checkpoint_name(const ct_checkpoint *checkpoint, int i) {
  return i >= 0 && i < checkpoint->count ? checkpoint->entries[i].name : NULL;
}

const ct_tensor *ct_checkpoint_find(const ct_checkpoint *checkpoint, const char *name) {
  for (int i = 0; i < checkpoint->count; ++i)
    if (strcmp(checkpoint->entries[i].name, name) == 0) return checkpoint->entries[i].tensor;
  return NULL;
}

const char *ct_checkpoint_metadata(const ct_checkpoint *checkpoint, const char *key) {
  const ct_json *v = ct_json_get(checkpoint->metadata, key);
  return v != NULL && v->type == CT_JSON_STRING ? v->string : NULL;
}

void ct_checkpoint_free(ct_checkpoint *checkpoint) {
  if (checkpoint == NULL) return;
  for (int i = 0; i < checkpoint->count; ++i) ct_tensor_free(checkpoint->entries[i].tensor);
  free(checkpoint->entries);
  ct_json_free(checkpoint->header);
  free(checkpoint);
}
