/* Augmentation against a naive reference written from the TensorFlow
 * definitions (pad, crop, flip, brightness, contrast, per-image
 * standardization), evaluation's central crop, and draws that depend only
 * on (seed, epoch, example). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/dataset_internal.h"
#include "test_support.h"

enum { H = 7, W = 6, C = 3 };

static void known_image(uint8_t *img) {
  for (int i = 0; i < H * W * C; ++i) img[i] = (uint8_t)((i * 37 + 11) % 256);
}

/* The reference: the padded image as doubles, cropped, flipped, adjusted
 * and standardized one step at a time, as tf.image does. */
static void reference(const ct_augment_options *a, const ct_augment_draw *d, const uint8_t *img,
                      int64_t oh, int64_t ow, double *out) {
  const int64_t ph = H + 2 * d->pad, pw = W + 2 * d->pad;
  double *padded = calloc((size_t)(ph * pw * C), sizeof *padded);
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x)
      for (int k = 0; k < C; ++k)
        padded[((y + d->pad) * pw + x + d->pad) * C + k] = img[(y * W + x) * C + k] / 255.0;
  for (int64_t y = 0; y < oh; ++y)
    for (int64_t x = 0; x < ow; ++x)
      for (int k = 0; k < C; ++k) /* crop, then flip the crop */
        out[(y * ow + (d->flip ? ow - 1 - x : x)) * C + k] =
            padded[((d->top + y) * pw + d->left + x) * C + k];
  free(padded);
  const int64_t n = oh * ow * C;
  for (int64_t i = 0; i < n; ++i) out[i] += d->brightness;
  for (int k = 0; k < C; ++k) {
    double mean = 0;
    for (int64_t p = 0; p < oh * ow; ++p) mean += out[p * C + k];
    mean /= (double)(oh * ow);
    for (int64_t p = 0; p < oh * ow; ++p)
      out[p * C + k] = (out[p * C + k] - mean) * d->contrast + mean;
  }
  if (!a->standardize) return;
  double mean = 0, var = 0;
  for (int64_t i = 0; i < n; ++i) mean += out[i];
  mean /= (double)n;
  for (int64_t i = 0; i < n; ++i) var += (out[i] - mean) * (out[i] - mean);
  const double sd = fmax(sqrt(var / (double)n), 1.0 / sqrt((double)n));
  for (int64_t i = 0; i < n; ++i) out[i] = (out[i] - mean) / sd;
}

static double max_difference(const float *got, const double *want, int64_t n) {
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) worst = fmax(worst, fabs((double)got[i] - want[i]));
  return worst;
}

static void test_training_matches_the_reference(void **state) {
  (void)state;
  const ct_augment_options a = {{4, 5}, 2, 1, 0.25, {0.2, 1.8}, 1};
  uint8_t img[H * W * C];
  known_image(img);
  float got[4 * 5 * C];
  double want[4 * 5 * C];
  int flips = 0, corners[H + 4][W + 4] = {{0}};
  for (int64_t index = 0; index < 400; ++index) {
    const ct_augment_draw d = ct_augment_draw_for(&a, 1, 42, 3, index, H, W);
    assert_int_equal(d.pad, 2);
    assert_true(d.top >= 0 && d.top <= H + 4 - 4 && d.left >= 0 && d.left <= W + 4 - 5);
    assert_true(fabsf(d.brightness) <= 0.25f && d.contrast >= 0.2f && d.contrast <= 1.8f);
    flips += d.flip, corners[d.top][d.left] = 1;
    ct_augment_apply(&a, &d, img, H, W, C, got);
    reference(&a, &d, img, 4, 5, want);
    const double diff = max_difference(got, want, 4 * 5 * C);
    if (index == 0) printf("training, example 0: max |difference| %.3g\n", diff);
    assert_true(diff < 1e-4);
  }
  assert_true(flips > 150 && flips < 250); /* about half */
  for (int y = 0; y <= H + 4 - 4; ++y)     /* every crop corner comes up */
    for (int x = 0; x <= W + 4 - 5; ++x) assert_int_equal(corners[y][x], 1);
}

static void test_evaluation_takes_the_central_crop(void **state) {
  (void)state;
  const ct_augment_options a = {{4, 3}, 2, 1, 0.25, {0.2, 1.8}, 0};
  uint8_t img[H * W * C];
  known_image(img);
  const ct_augment_draw d = ct_augment_draw_for(&a, 0, 42, 3, 17, H, W);
  assert_int_equal(d.pad, 0);
  assert_int_equal(d.top, (H - 4) / 2);
  assert_int_equal(d.left, (W - 3) / 2);
  assert_int_equal(d.flip, 0);
  float got[4 * 3 * C];
  ct_augment_apply(&a, &d, img, H, W, C, got);
  for (int y = 0; y < 4; ++y) /* rows 1..4, columns 1..3, unchanged */
    for (int x = 0; x < 3; ++x)
      for (int k = 0; k < C; ++k)
        assert_float_equal(got[(y * 3 + x) * C + k], img[((y + 1) * W + x + 1) * C + k] / 255.0,
                           1e-7);
  const ct_augment_options s = {{4, 3}, 0, 0, 0, {1, 1}, 1}; /* standardized: mean 0, sd 1 */
  ct_augment_apply(&s, &d, img, H, W, C, got);
  double mean = 0, sq = 0;
  for (int i = 0; i < 4 * 3 * C; ++i) mean += got[i], sq += (double)got[i] * got[i];
  mean /= 4 * 3 * C;
  assert_true(fabs(mean) < 1e-5 && fabs(sq / (4 * 3 * C) - 1) < 1e-4);
  double want[4 * 3 * C];
  reference(&s, &d, img, 4, 3, want);
  assert_true(max_difference(got, want, 4 * 3 * C) < 1e-5);
}

static void test_a_flat_image_is_not_blown_up(void **state) {
  (void)state;
  /* stddev 0: divided by 1 / sqrt(N), so the image stays 0 */
  const ct_augment_options a = {{0, 0}, 0, 0, 0, {1, 1}, 1};
  uint8_t img[H * W * C];
  memset(img, 200, sizeof img);
  float got[H * W * C];
  const ct_augment_draw d = ct_augment_draw_for(&a, 1, 1, 0, 0, H, W);
  ct_augment_apply(&a, &d, img, H, W, C, got);
  for (int i = 0; i < H * W * C; ++i) assert_float_equal(got[i], 0.0f, 1e-6);
}

static void test_draws_depend_on_seed_epoch_and_index_only(void **state) {
  (void)state;
  const ct_augment_options a = {{4, 4}, 3, 1, 0.5, {0.5, 1.5}, 1};
  int differ_epoch = 0, differ_index = 0;
  for (int64_t i = 0; i < 50; ++i) {
    ct_augment_draw x = ct_augment_draw_for(&a, 1, 9, 2, i, H, W);
    ct_augment_draw y = ct_augment_draw_for(&a, 1, 9, 2, i, H, W);
    assert_memory_equal(&x, &y, sizeof x);
    ct_augment_draw e = ct_augment_draw_for(&a, 1, 9, 3, i, H, W);
    ct_augment_draw n = ct_augment_draw_for(&a, 1, 9, 2, i + 1, H, W);
    differ_epoch += e.brightness != x.brightness;
    differ_index += n.brightness != x.brightness;
  }
  assert_true(differ_epoch > 45 && differ_index > 45);
}

static void test_bad_options(void **state) {
  (void)state;
  ct_status st = CT_STATUS_INIT;
  const ct_augment_options big = {{8, 6}, 4, 0, 0, {1, 1}, 0};
  assert_int_equal(ct_augment_check(&big, H, W, &st), 1); /* fits padded, not the test image */
  assert_int_equal(st.code, CT_INVALID_ARGUMENT);
  assert_non_null(strstr(st.message, "dataset.augment.crop"));
  ct_status_clear(&st);
  const ct_augment_options contrast = {{0, 0}, 0, 0, 0, {1.5, 0.5}, 0};
  assert_int_equal(ct_augment_check(&contrast, H, W, &st), 1);
  ct_status_clear(&st);
  /* past their ranges: washed out, blown up, NaN; a crop of padding alone */
  const ct_augment_options absurd[] = {{{0, 0}, 0, 0, 1e30, {1, 1}, 0},
                                       {{0, 0}, 0, 0, 1.5, {1, 1}, 0},
                                       {{0, 0}, 0, 0, 0, {0.2, 1e30}, 0},
                                       {{0, 0}, 0, 0, NAN, {1, 1}, 0},
                                       {{7, 6}, 6, 0, 0, {1, 1}, 0}};
  const char *const named[] = {"brightness must lie in [0, 1]", "brightness must lie in [0, 1]",
                               "hi <= 10", "brightness", "pad must lie in [0, 6)"};
  for (size_t i = 0; i < sizeof absurd / sizeof absurd[0]; ++i) {
    ct_status_clear(&st);
    assert_int_equal(ct_augment_check(&absurd[i], H, W, &st), 1);
    printf("  %s\n", st.message);
    assert_int_equal(st.code, CT_INVALID_ARGUMENT);
    assert_non_null(strstr(st.message, named[i]));
  }
  ct_status_clear(&st);
  const ct_augment_options fine = {{7, 6}, 4, 1, 0.1, {0.5, 1.5}, 1};
  assert_int_equal(ct_augment_check(&fine, H, W, &st), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_training_matches_the_reference),
      cmocka_unit_test(test_evaluation_takes_the_central_crop),
      cmocka_unit_test(test_a_flat_image_is_not_blown_up),
      cmocka_unit_test(test_draws_depend_on_seed_epoch_and_index_only),
      cmocka_unit_test(test_bad_options),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
