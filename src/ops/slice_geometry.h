/* Which elements of one axis a strided slice takes, as Python's
 * slice.indices (and TensorFlow's StridedSlice) resolve begin, end and
 * stride against the axis' size. */
#ifndef CTOWER_SLICE_GEOMETRY_H
#define CTOWER_SLICE_GEOMETRY_H

#include <stdint.h>

typedef struct ct_slice_range {
  int64_t first; /* the first index taken */
  int64_t count; /* how many: first, first + stride, ... (-1 when the size is unknown) */
} ct_slice_range;

static inline int64_t ct_slice_clamp(int64_t i, int64_t lo, int64_t hi) {
  return i < lo ? lo : i > hi ? hi : i;
}

/* size: the axis' size (-1 unknown); begin and end count back from the end
 * when negative, and are clamped to the axis; begin_from_start: begin is
 * the start (the end for a negative stride), end_to_end likewise; stride
 * is not 0. */
static inline ct_slice_range ct_slice_range_of(int64_t size, int64_t begin, int64_t end,
                                               int64_t stride, int begin_from_start,
                                               int end_to_end) {
  ct_slice_range r = {0, -1};
  if (size < 0) return r;
  const int64_t lo = stride > 0 ? 0 : -1, hi = stride > 0 ? size : size - 1;
  const int64_t b = begin_from_start ? (stride > 0 ? lo : hi)
                                     : ct_slice_clamp(begin < 0 ? begin + size : begin, lo, hi);
  const int64_t e = end_to_end ? (stride > 0 ? hi : lo)
                               : ct_slice_clamp(end < 0 ? end + size : end, lo, hi);
  const int64_t span = stride > 0 ? e - b : b - e, step = stride > 0 ? stride : -stride;
  r.first = b;
  r.count = span > 0 ? (span + step - 1) / step : 0;
  return r;
}

#endif
