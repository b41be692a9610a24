/* Winograd's F(2x2, 3x3) and F(2x2, 5x5) convolutions of ctower's own,
 * for the layers oneDNN has none for (3x3 on CPUs without AVX-512, 5x5
 * everywhere): filters of 3x3 or 5x5 taps at stride 1, activations NHWC,
 * filters HWIO, fp32, in a build for AVX2 and FMA (vectors of 8 floats) or
 * AVX-512 (16).
 *
 * Each 2x2 block of the output (a tile) comes from the (r+1)x(r+1) block of
 * input around it (r the filter's taps a side): y = A^T [(G g G^T) .
 * (B^T d B)] A per channel pair, summed over input channels; (r+1)^2
 * products where direct convolution takes 4 r^2 (16 against 36 for 3x3, 36
 * against 100 for 5x5). The sum over input channels, at each position of
 * the transformed tile, is a matrix product of [tiles x in channels] by
 * [in x out channels], run on blocks of tiles small enough to stay in the
 * core's cache between the transforms and the product. */
#ifndef CTOWER_WINOGRAD_H
#define CTOWER_WINOGRAD_H

#include <stddef.h>
#include <stdint.h>

/* A stride-1 convolution's shapes: x [batch, in_h, in_w, in_c], a filter
 * of taps x taps (3 or 5), y [batch, out_h, out_w, out_c], x padded by
 * pad_top rows and pad_left columns (and as many at the bottom and right as
 * out_h, out_w need). */
typedef struct ct_winograd_shape {
  int64_t taps;
  int64_t batch, in_h, in_w, in_c;
  int64_t out_h, out_w, out_c;
  int64_t pad_top, pad_left;
} ct_winograd_shape;

/* The channel counts the kernels take are multiples of this: 16 in a build
 * for AVX2, 32 for AVX-512; 0 where the build has no kernels (no AVX2 and
 * FMA). */
int64_t ct_winograd_channel_multiple(void);

/* Whether this build has the kernels and they take a filter of taps x taps
 * (3 or 5) from in_c input to out_c output channels (multiples of
 * ct_winograd_channel_multiple()). */
int ct_winograd_supports(int64_t taps, int64_t in_c, int64_t out_c);

/* The scratch memory each call needs on a device of `threads` threads. */
size_t ct_winograd_forward_scratch(const ct_winograd_shape *s, int threads);
size_t ct_winograd_backward_data_scratch(const ct_winograd_shape *s, int threads);
size_t ct_winograd_backward_filter_scratch(const ct_winograd_shape *s, int threads);

/* What the forward pass adds to each output as it writes it: bias[o]
 * (NULL: none), then max(0, y) with relu; the bits of a separate Add and
 * Relu after it. */
typedef struct ct_winograd_epilogue {
  const float *bias;
  int relu;
} ct_winograd_epilogue;

/* y = conv(x, filter) with epilogue e (NULL: none); dx = the gradient of x
 * given dy; dfilter = the gradient of the filter given x and dy. scratch:
 * as many bytes as the matching _scratch function says, 64-byte aligned. */
void ct_winograd_forward(const ct_winograd_shape *s, const float *x, const float *filter,
                         const ct_winograd_epilogue *e, float *y, void *scratch, int threads);
void ct_winograd_backward_data(const ct_winograd_shape *s, const float *filter, const float *dy,
                               float *dx, void *scratch, int threads);
void ct_winograd_backward_filter(const ct_winograd_shape *s, const float *x, const float *dy,
                                 float *dfilter, void *scratch, int threads);

#endif
