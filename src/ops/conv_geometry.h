/* Output size and padding of a convolution or pooling window, as TensorFlow
 * computes them for SAME and VALID. */
#ifndef CTOWER_CONV_GEOMETRY_H
#define CTOWER_CONV_GEOMETRY_H

#include <stdint.h>

typedef struct ct_window {
  int64_t out;        /* output size */
  int64_t pad_before; /* padding on the top/left */
  int64_t pad_after;  /* padding on the bottom/right */
} ct_window;

/* in: input size (-1 unknown gives out -1), k: window, stride, same: padding. */
static inline ct_window ct_window_of(int64_t in, int64_t k, int64_t stride, int same) {
  ct_window w = {-1, 0, 0};
  if (in < 0) return w;
  if (same) {
    w.out = (in + stride - 1) / stride;
    int64_t total = (w.out - 1) * stride + k - in;
    if (total < 0) total = 0;
    w.pad_before = total / 2;
    w.pad_after = total - w.pad_before;
  } else {
    w.out = in >= k ? (in - k) / stride + 1 : 0;
  }
  return w;
}

#endif
