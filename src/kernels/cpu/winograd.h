/* Winograd's F(2x2, 3x3) convolution of ctower's own, for the CPUs on
 * which oneDNN has none (those without AVX-512): 3x3 filters at stride 1,
 * activations NHWC, filters HWIO, fp32, with AVX2 and FMA.
 *
 * Each 2x2 block of the output (a tile) comes from the 4x4 block of input
 * around it: y = A^T [(G g G^T) . (B^T d B)] A per channel pair, summed over
 * input channels, 16 products where direct convolution takes 36. The sum
 * over input channels, at each of the 16 positions of the 4x4 transformed
 * tile, is a matrix product of [tiles x in channels] by [in x out channels],
 * run on blocks of tiles small enough to stay in the core's cache between
 * the transforms and the product. */
#ifndef CTOWER_WINOGRAD_H
#define CTOWER_WINOGRAD_H

#include <stddef.h>
#include <stdint.h>

/* A stride-1 3x3 convolution's shapes: x [batch, in_h, in_w, in_c], y
 * [batch, out_h, out_w, out_c], x padded by pad_top rows and pad_left
 * columns (and as many at the bottom and right as out_h, out_w need). */
typedef struct ct_winograd_shape {
  int64_t batch, in_h, in_w, in_c;
  int64_t out_h, out_w, out_c;
  int64_t pad_top, pad_left;
} ct_winograd_shape;

/* Whether this build has the kernels (compiled for AVX2 and FMA) and they
 * take a layer of in_c input and out_c output channels (multiples of 16). */
int ct_winograd_supports(int64_t in_c, int64_t out_c);

/* The scratch memory each call needs on a device of `threads` threads. */
size_t ct_winograd_forward_scratch(const ct_winograd_shape *s, int threads);
size_t ct_winograd_backward_data_scratch(const ct_winograd_shape *s, int threads);
size_t ct_winograd_backward_filter_scratch(const ct_winograd_shape *s, int threads);

/* y = conv(x, filter); dx = the gradient of x given dy; dfilter = the
 * gradient of the filter given x and dy. scratch: as many bytes as the
 * matching _scratch function says, 64-byte aligned. */
void ct_winograd_forward(const ct_winograd_shape *s, const float *x, const float *filter, float *y,
                         void *scratch, int threads);
void ct_winograd_backward_data(const ct_winograd_shape *s, const float *filter, const float *dy,
                               float *dx, void *scratch, int threads);
void ct_winograd_backward_filter(const ct_winograd_shape *s, const float *x, const float *dy,
                                 float *dfilter, void *scratch, int threads);

#endif
