#include "ctower/tensor.h"

#include <stdarg.h>
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

int64_t ct_shape_elements(const ct_shape *shape) {
  int64_t n = 1;
  for (int i = 0; i < shape->rank; ++i) {
    if (shape->dims[i] < 0) return -1;
    n *= shape->dims[i];
  }
  return n;
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
  size_t nbytes = (size_t)ct_shape_elements(shape) * ct_dtype_size(dtype);
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
  return (size_t)ct_tensor_elements(tensor) * ct_dtype_size(tensor->dtype);
}
