/* Image augmentation: padding, random crop, flip, brightness, contrast and
 * per-image standardization, drawn per (seed, epoch, example). */
#include <math.h>
#include <string.h>

#include "data/dataset_internal.h"
#include "data/rng.h"

void ct_augment_shape(const ct_augment_options *a, int64_t h, int64_t w, int64_t *out_h,
                      int64_t *out_w) {
  const int crops = a && a->crop[0] > 0 && a->crop[1] > 0;
  *out_h = crops ? a->crop[0] : h;
  *out_w = crops ? a->crop[1] : w;
}

/* Brightness and contrast within their ranges: beyond them an image is
 * washed out or blown up past any use, and far beyond them the model's
 * values overflow to NaN. */
static int check_ranges(const ct_augment_options *a, ct_status *status) {
  if (!(a->brightness >= 0 && a->brightness <= CT_AUGMENT_MAX_BRIGHTNESS)) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "dataset.augment.brightness must lie in [0, %g] (the largest delta added to "
                  "pixels in [0, 1]; TensorFlow's CIFAR-10 tutorial uses about 0.25), got %g",
                  CT_AUGMENT_MAX_BRIGHTNESS, a->brightness);
    return 1;
  }
  if (!(a->contrast[0] >= 0 && a->contrast[1] >= a->contrast[0] &&
        a->contrast[1] <= CT_AUGMENT_MAX_CONTRAST)) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "dataset.augment.contrast must be [lo, hi] with 0 <= lo <= hi <= %g (factors "
                  "on each pixel's distance from its channel's mean; the tutorial uses [0.2, "
                  "1.8]), got [%g, %g]",
                  CT_AUGMENT_MAX_CONTRAST, a->contrast[0], a->contrast[1]);
    return 1;
  }
  return 0;
}

int ct_augment_check(const ct_augment_options *a, int64_t h, int64_t w, ct_status *status) {
  if (a == NULL) return 0;
  if (check_ranges(a, status)) return 1;
  int64_t ch, cw;
  ct_augment_shape(a, h, w, &ch, &cw);
  if (ch > h || cw > w) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "dataset.augment.crop [%lld, %lld] is larger than the %lldx%lld images; "
                  "evaluation takes their central crop, so the crop must fit in them",
                  (long long)ch, (long long)cw, (long long)h, (long long)w);
    return 1;
  }
  /* a pad as wide as the crop lets a crop land on padding alone */
  const int64_t side = ch < cw ? ch : cw;
  if (a->pad < 0 || a->pad >= side) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "dataset.augment.pad must lie in [0, %lld): a pad of %lld around %lldx%lld "
                  "crops lets a crop hold padding alone, no pixel of the image (ResNet's CIFAR "
                  "training pads 4 around 32x32)",
                  (long long)side, (long long)a->pad, (long long)ch, (long long)cw);
    return 1;
  }
  return 0;
}

/* A uniform float in [lo, hi]. */
static float uniform(ct_xoshiro *rng, double lo, double hi) {
  const double u = (double)(ct_xoshiro_next(rng) >> 11) * 0x1.0p-53;
  return (float)(lo + (hi - lo) * u);
}

ct_augment_draw ct_augment_draw_for(const ct_augment_options *a, int train, uint64_t seed,
                                    int64_t epoch, int64_t index, int64_t h, int64_t w) {
  int64_t ch, cw;
  ct_augment_shape(a, h, w, &ch, &cw);
  ct_augment_draw d = {0, (h - ch) / 2, (w - cw) / 2, 0, 0.0f, 1.0f};
  if (a == NULL || !train) return d;
  /* a stream per (epoch, example); the same draws in the same order always */
  ct_xoshiro rng;
  ct_xoshiro_seed(&rng, seed ^ 0xA0761D6478BD642Full,
                  ct_mix64((uint64_t)epoch * 0x9E3779B97F4A7C15ull ^ (uint64_t)index));
  const int64_t pad = a->pad;
  d.pad = pad;
  d.top = (int64_t)ct_xoshiro_below(&rng, (uint64_t)(h + 2 * pad - ch + 1));
  d.left = (int64_t)ct_xoshiro_below(&rng, (uint64_t)(w + 2 * pad - cw + 1));
  const int flip = (int)(ct_xoshiro_next(&rng) >> 63);
  const float brightness = uniform(&rng, -a->brightness, a->brightness);
  const float contrast = uniform(&rng, a->contrast[0], a->contrast[1]);
  d.flip = a->flip ? flip : 0;
  d.brightness = a->brightness > 0 ? brightness : 0.0f;
  d.contrast = a->contrast[0] != 1.0 || a->contrast[1] != 1.0 ? contrast : 1.0f;
  return d;
}

/* Row y of the crop: the source row's pixels [x0, x1) of the output (those
 * inside the image), in order or flipped, as pixel / 255; zeros around. */
static void crop_row(const float *scale, const uint8_t *row, int64_t base, int64_t ow, int64_t w,
                     int64_t c, int flip, float *o) {
  /* output x reads source column base + x, or base + ow - 1 - x flipped */
  int64_t x0 = flip ? base + ow - w : -base, x1 = flip ? base + ow : w - base;
  x0 = x0 < 0 ? 0 : x0 > ow ? ow : x0;
  x1 = x1 < x0 ? x0 : x1 > ow ? ow : x1;
  for (int64_t i = 0; i < x0 * c; ++i) o[i] = 0.0f;
  for (int64_t i = x1 * c; i < ow * c; ++i) o[i] = 0.0f;
  if (!flip) {
    const uint8_t *p = row + (base + x0) * c;
    for (int64_t i = 0; i < (x1 - x0) * c; ++i) o[x0 * c + i] = scale[p[i]];
  } else if (c == 3) {
    for (int64_t x = x0; x < x1; ++x) {
      const uint8_t *p = row + (base + ow - 1 - x) * 3;
      o[3 * x] = scale[p[0]], o[3 * x + 1] = scale[p[1]], o[3 * x + 2] = scale[p[2]];
    }
  } else {
    for (int64_t x = x0; x < x1; ++x)
      for (int64_t k = 0; k < c; ++k) o[x * c + k] = scale[row[(base + ow - 1 - x) * c + k]];
  }
}

void ct_augment_apply(const ct_augment_options *a, const ct_augment_draw *d, const uint8_t *pixels,
                      int64_t h, int64_t w, int64_t c, float *out) {
  int64_t oh, ow;
  ct_augment_shape(a, h, w, &oh, &ow);
  float scale[256]; /* pixel -> pixel / 255, as a table: the same values, no division each */
  for (int v = 0; v < 256; ++v) scale[v] = (float)v / 255.0f;
  for (int64_t y = 0; y < oh; ++y) {
    const int64_t sy = d->top + y - d->pad;
    float *o = out + y * ow * c;
    if (sy < 0 || sy >= h)
      for (int64_t i = 0; i < ow * c; ++i) o[i] = 0.0f;
    else
      crop_row(scale, pixels + sy * w * c, d->left - d->pad, ow, w, c, d->flip, o);
  }
  const int64_t n = oh * ow * c;
  if (d->brightness != 0.0f)
    for (int64_t i = 0; i < n; ++i) out[i] += d->brightness;
  if (d->contrast != 1.0f) {
    for (int64_t k = 0; k < c; ++k) {
      double sum = 0;
      for (int64_t i = k; i < n; i += c) sum += out[i];
      const float mean = (float)(sum / (double)(oh * ow));
      for (int64_t i = k; i < n; i += c) out[i] = (out[i] - mean) * d->contrast + mean;
    }
  }
  if (a && a->standardize) {
    double sum = 0, sq = 0;
    for (int64_t i = 0; i < n; ++i) sum += out[i];
    const double mean = sum / (double)n;
    for (int64_t i = 0; i < n; ++i) sq += (out[i] - mean) * (out[i] - mean);
    double sd = sqrt(sq / (double)n);
    const double least = 1.0 / sqrt((double)n);
    if (sd < least) sd = least;
    const float m = (float)mean, inv = (float)(1.0 / sd);
    for (int64_t i = 0; i < n; ++i) out[i] = (out[i] - m) * inv;
  }
}
