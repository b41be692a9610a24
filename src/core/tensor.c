#include "ctower/tensor.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *ct_dtype_name(ct_dtype dtype) {
  switch (dtype) {
    case CT_F32: return "f32";
    case CT_I32: return "i32";
    case CT_I64: return "i64";
    case CT_U8: return "u8";
    default: return "?";
  }
}

size_t ct_dtype_size(ct_dtype dtype) {
  switch (dtype) {
    case CT_F32: return 4;
    case CT_I32: return 4;
    case CT_I64: return 8;
    case CT_U8: return 1;
    default: return 0;
  }
}

ct_shape ct_shape_make(int rank, const int64_t *dims) {
  ct_shape shape;
  memset(&shape, 0, sizeof shape);
  shape.rank = rank;
  for (int i = 0; i < rank && i < CT_MAX_RANK; ++i) shape.dims[i] = dims[i];
  return shape;
}

ct_shape ct_shape_of(int rank, ...) {
  ct_shape shape;
  memset(&shape, 0, sizeof shape);
  shape.rank = rank;
  va_list args;
  va_start(args, rank);
  for (int i = 0; i < rank && i < CT_MAX_RANK; ++i) shape.dims[i] = va_arg(args, int64_t);
  va_end(args);
  return shape;
}

int ct_count_mul(int64_t a, int64_t b, int64_t *out) {
  int64_t product;
  if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &product)) return 0;
  *out = product;
  return 1;
}

int64_t ct_shape_elements(const ct_shape *shape) {
  int64_t n = 1;
  for (int i = 0; i < shape->rank; ++i)
    if (shape->dims[i] < 0 || !ct_count_mul(n, shape->dims[i], &n)) return -1;
  return n;
}

int ct_shape_bytes(const ct_shape *shape, ct_dtype dtype, size_t *bytes) {
  int64_t n = 1;
  for (int i = 0; i < shape->rank; ++i)
    if (!ct_count_mul(n, shape->dims[i] < 0 ? 1 : shape->dims[i], &n)) return 0;
  size_t total;
  if (__builtin_mul_overflow((size_t)n, ct_dtype_size(dtype), &total)) return 0;
  *bytes = total;
  return 1;
}

int ct_shape_check_bytes(const ct_shape *shape, ct_dtype dtype, const char *what, size_t *bytes,
                         ct_status *status) {
  size_t counted;
  if (ct_shape_bytes(shape, dtype, &counted)) {
    if (bytes) *bytes = counted;
    return 0;
  }
  char dims[96];
  ct_status_set(status, CT_INVALID_ARGUMENT,
                "%s of shape %s (%s) takes more bytes than 64 bits count (%zu bytes at most), "
                "more than any device holds; make it smaller",
                what, ct_shape_str(shape, dims, sizeof dims), ct_dtype_name(dtype),
                (size_t)SIZE_MAX);
  return 1;
}

int ct_shape_equal(const ct_shape *a, const ct_shape *b) {
  if (a->rank != b->rank) return 0;
  for (int i = 0; i < a->rank; ++i)
    if (a->dims[i] != b->dims[i]) return 0;
  return 1;
}

int ct_shape_is_known(const ct_shape *shape) { return ct_shape_elements(shape) >= 0; }

const char *ct_shape_str(const ct_shape *shape, char *buf, size_t size) {
  size_t used = 0;
  used += (size_t)snprintf(buf + used, size - used, "[");
  for (int i = 0; i < shape->rank && used < size; ++i) {
    const char *sep = i ? ", " : "";
    if (shape->dims[i] < 0)
      used += (size_t)snprintf(buf + used, size - used, "%s?", sep);
    else
      used += (size_t)snprintf(buf + used, size - used, "%s%lld", sep, (long long)shape->dims[i]);
  }
  if (used < size) snprintf(buf + used, size - used, "]");
  return buf;
}

void *ct_aligned_alloc(size_t nbytes) {
  void *ptr = NULL;
  if (posix_memalign(&ptr, 64, nbytes ? nbytes : 64) != 0) return NULL;
  return ptr;
}

void ct_aligned_free(void *ptr) { free(ptr); }

static int check_shape(ct_dtype dtype, const ct_shape *shape, ct_status *status) {
  if ((int)dtype < 0 || dtype >= CT_DTYPE_COUNT) {
    ct_status_set(status, CT_INVALID_ARGUMENT, "unknown dtype %d", (int)dtype);
    return 0;
  }
  if (shape->rank < 0 || shape->rank > CT_MAX_RANK) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "a tensor has rank 0 to %d, not %d", CT_MAX_RANK, shape->rank);
    return 0;
  }
  if (ct_shape_check_bytes(shape, dtype, "a tensor", NULL, status)) return 0;
  if (!ct_shape_is_known(shape)) {
    char buf[96];
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "a tensor needs every dimension known, got %s",
                  ct_shape_str(shape, buf, sizeof buf));
    return 0;
  }
  return 1;
}

ct_tensor *ct_tensor_new(ct_dtype dtype, const ct_shape *shape, ct_status *status) {
  if (!check_shape(dtype, shape, status)) return NULL;
  ct_tensor *t = calloc(1, sizeof *t);
  size_t nbytes = 0;
  ct_shape_bytes(shape, dtype, &nbytes); /* check_shape saw that it counts */
  void *data = t ? ct_aligned_alloc(nbytes) : NULL;
  if (data == NULL) {
    free(t);
    ct_status_set(status, CT_RESOURCE_EXHAUSTED,
                  "out of host memory allocating a tensor of %zu bytes", nbytes);
    return NULL;
  }
  memset(data, 0, nbytes);
  t->dtype = dtype;
  t->shape = *shape;
  t->data = data;
  t->owns_data = 1;
  return t;
}

ct_tensor *ct_tensor_wrap(ct_dtype dtype, const ct_shape *shape, void *data,
                          ct_status *status) {
  if (!check_shape(dtype, shape, status)) return NULL;
  ct_tensor *t = calloc(1, sizeof *t);
  if (t == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory");
    return NULL;
  }
  t->dtype = dtype;
  t->shape = *shape;
  t->data = data;
  return t;
}

ct_tensor ct_tensor_rows(const ct_tensor *tensor, int64_t first, int64_t rows) {
  ct_tensor view = *tensor;
  size_t row_bytes = ct_dtype_size(tensor->dtype);
  for (int d = 1; d < tensor->shape.rank; ++d) row_bytes *= (size_t)tensor->shape.dims[d];
  /* a tensor of shape only (no data, as a plan's feeds) gives views of shape only */
  view.data = tensor->data ? (char *)tensor->data + (size_t)first * row_bytes : NULL;
  view.shape.dims[0] = rows;
  view.owns_data = 0;
  return view;
}

ct_tensor *ct_tensor_clone(const ct_tensor *tensor, ct_status *status) {
  ct_tensor *t = ct_tensor_new(tensor->dtype, &tensor->shape, status);
  if (t) memcpy(t->data, tensor->data, ct_tensor_nbytes(tensor));
  return t;
}

void ct_tensor_free(ct_tensor *tensor) {
  if (tensor == NULL) return;
  if (tensor->owns_data) ct_aligned_free(tensor->data);
  free(tensor);
}

int64_t ct_tensor_elements(const ct_tensor *tensor) { return ct_shape_elements(&tensor->shape); }

size_t ct_tensor_nbytes(const ct_tensor *tensor) {
  size_t bytes = 0; /* a tensor's shape was counted when it was made */
  ct_shape_bytes(&tensor->shape, tensor->dtype, &bytes);
  return bytes;
}
