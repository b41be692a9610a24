/* ctower tensors: a dtype, a shape of rank 0..5 and a buffer.
 *
 * Shape letters used in comments across ctower: N batch, H height, W width,
 * C channels (images are NHWC), K output channels, R/S filter height/width.
 * Dimensions are int64_t, byte counts size_t.
 */
#ifndef CTOWER_TENSOR_H
#define CTOWER_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "ctower/status.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { CT_MAX_RANK = 5 };

typedef enum ct_dtype {
  CT_F32 = 0,
  CT_I32,
  CT_I64,
  CT_U8,
  CT_DTYPE_COUNT
} ct_dtype;

/* A shape. A dimension of -1 is unknown (graph building only, e.g. the batch
 * of a placeholder); tensors always have known shapes. */
typedef struct ct_shape {
  int rank;                     /* 0 (scalar) .. CT_MAX_RANK */
  int64_t dims[CT_MAX_RANK];    /* dims[0] is the outermost */
} ct_shape;

/* A tensor. The struct is plain data: kernels read its fields directly.
 * `data` is owned by the tensor when `owns_data` is set (ct_tensor_new), and
 * borrowed otherwise (ct_tensor_wrap, or a buffer of a device allocator). */
typedef struct ct_tensor {
  ct_dtype dtype;
  ct_shape shape;
  void *data;      /* 64-byte aligned when ctower allocated it */
  int owns_data;   /* freed with the tensor */
} ct_tensor;

/* "f32", "i32", "i64", "u8". */
const char *ct_dtype_name(ct_dtype dtype);
size_t ct_dtype_size(ct_dtype dtype);

/* Shape helpers. ct_shape_make takes rank and up to CT_MAX_RANK dims. */
ct_shape ct_shape_make(int rank, const int64_t *dims);
ct_shape ct_shape_of(int rank, ...); /* ct_shape_of(2, 128, 784) */
/* -1 if any dim unknown, or when the count does not fit in int64_t */
int64_t ct_shape_elements(const ct_shape *shape);
int ct_shape_equal(const ct_shape *a, const ct_shape *b);
int ct_shape_is_known(const ct_shape *shape);
/* Element and byte counts, computed without overflow. ct_count_mul: a * b
 * (both >= 0) into *out and 1; 0, *out unchanged, when the product does
 * not fit in int64_t. */
int ct_count_mul(int64_t a, int64_t b, int64_t *out);
/* The bytes of a tensor of that dtype and shape, its unknown dimensions
 * counted as 1, into *bytes and 1; 0, *bytes unchanged, when its elements
 * do not fit in int64_t or its bytes in size_t. */
int ct_shape_bytes(const ct_shape *shape, ct_dtype dtype, size_t *bytes);
/* 0 and its bytes into *bytes (when not NULL) when ct_shape_bytes can
 * count the tensor `what` ("variable 'w'"); else 1 and INVALID_ARGUMENT:
 * "<what> of shape [...] (f32) takes more bytes than 64 bits count ...;
 * make it smaller". */
int ct_shape_check_bytes(const ct_shape *shape, ct_dtype dtype, const char *what, size_t *bytes,
                         ct_status *status);
/* Writes "[128, 28, 28, 1]" (unknown dims as "?") into buf. */
const char *ct_shape_str(const ct_shape *shape, char *buf, size_t size);

/* Host memory from an allocator of the caller's: pinned memory, say,
 * which a GPU copies from directly (ct_session_host_memory). */
typedef struct ct_host_memory {
  void *(*alloc)(size_t bytes, void *context); /* NULL when out of memory */
  void (*free)(void *ptr, size_t bytes, void *context);
  void *context;
} ct_host_memory;

/* A new tensor with an owned, zeroed, 64-byte aligned buffer.
 * Returns NULL and fills status on a bad shape or when memory runs out.
 * The caller owns the result and frees it with ct_tensor_free. */
ct_tensor *ct_tensor_new(ct_dtype dtype, const ct_shape *shape, ct_status *status);
/* A tensor header over a buffer the caller keeps alive (not copied). */
ct_tensor *ct_tensor_wrap(ct_dtype dtype, const ct_shape *shape, void *data,
                          ct_status *status);
/* A deep copy, owned by the caller. */
ct_tensor *ct_tensor_clone(const ct_tensor *tensor, ct_status *status);
void ct_tensor_free(ct_tensor *tensor);

int64_t ct_tensor_elements(const ct_tensor *tensor);
size_t ct_tensor_nbytes(const ct_tensor *tensor);
/* A header over rows [first, first + rows) of `tensor` along dim 0,
 * borrowing its data (rank >= 1; the caller keeps the range inside); of a
 * tensor without data (NULL), a header without data. */
ct_tensor ct_tensor_rows(const ct_tensor *tensor, int64_t first, int64_t rows);
static inline float *ct_tensor_f32(const ct_tensor *t) { return (float *)t->data; }
static inline int32_t *ct_tensor_i32(const ct_tensor *t) { return (int32_t *)t->data; }

/* Aligned host memory used for tensors (64 bytes). NULL when out of memory. */
void *ct_aligned_alloc(size_t nbytes);
void ct_aligned_free(void *ptr);

#ifdef __cplusplus
}
#endif
#endif
