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

/* The extent of `taps` filter taps `dilation` apart (-1 unknown stays -1). */
static inline int64_t ct_dilated(int64_t taps, int64_t dilation) {
  return taps < 0 ? taps : (taps - 1) * dilation + 1;
}

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

/* The windows along H (out[0]) and W (out[1]) of a convolution of x
 * [N, H, W, C] by a filter [R, S, ...] at strides, with dilations. */
static inline void ct_conv_windows(const int64_t *x_dims, const int64_t *filter_dims,
                                   const int64_t strides[2], const int64_t dilations[2], int same,
                                   ct_window out[2]) {
  for (int d = 0; d < 2; ++d)
    out[d] = ct_window_of(x_dims[1 + d], ct_dilated(filter_dims[d], dilations[d]), strides[d],
                          same);
}

#endif
