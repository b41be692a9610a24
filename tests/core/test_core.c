/* src/core: statuses (the first error wins), shapes, tensors and the
 * hashes that seed random streams, against values computed independently
 * (the hash values by a Python transcription of FNV-1a and splitmix64), and
 * the median, against sorting. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/hash.h"
#include "core/median.h"
#include "ctower/status.h"
#include "ctower/tensor.h"
#include "data/rng.h"

static void test_status_keeps_the_first_error(void **state) {
  (void)state;
  ct_status st = CT_STATUS_INIT;
  assert_true(ct_ok(&st));
  ct_status_set(&st, CT_NOT_FOUND, "no file '%s'", "a.yaml");
  ct_status_set(&st, CT_INTERNAL, "a later failure");
  assert_int_equal(st.code, CT_NOT_FOUND);
  assert_string_equal(st.message, "no file 'a.yaml'");
  assert_string_equal(ct_code_name(st.code), "NOT_FOUND");

  ct_status dst = CT_STATUS_INIT, ok = CT_STATUS_INIT;
  ct_status_propagate(&dst, &ok);
  assert_true(ct_ok(&dst));
  ct_status_propagate(&dst, &st);
  assert_int_equal(dst.code, CT_NOT_FOUND);
  ct_status_clear(&dst);
  assert_true(ct_ok(&dst));
  assert_string_equal(dst.message, "");
  ct_status_set(NULL, CT_INTERNAL, "a NULL status is ignored");
}

static void test_shapes(void **state) {
  (void)state;
  ct_shape s = ct_shape_of(3, (int64_t)2, (int64_t)3, (int64_t)4);
  const int64_t dims[3] = {2, 3, 4};
  ct_shape t = ct_shape_make(3, dims);
  assert_true(ct_shape_equal(&s, &t));
  assert_int_equal(ct_shape_elements(&s), 24);
  assert_true(ct_shape_is_known(&s));
  char buf[64];
  assert_string_equal(ct_shape_str(&s, buf, sizeof buf), "[2, 3, 4]");
  ct_shape u = ct_shape_of(2, (int64_t)-1, (int64_t)10);
  assert_false(ct_shape_is_known(&u));
  assert_int_equal(ct_shape_elements(&u), -1);
  assert_string_equal(ct_shape_str(&u, buf, sizeof buf), "[?, 10]");
  ct_shape scalar = ct_shape_of(0);
  assert_int_equal(ct_shape_elements(&scalar), 1);
  assert_false(ct_shape_equal(&s, &u));
}

/* Element and byte counts never wrap: [2^31, 2^31] of f32 is 2^62
 * elements, whose 2^64 bytes a plain size_t product makes 0. */
static void test_counts_never_wrap(void **state) {
  (void)state;
  int64_t n = 7;
  assert_int_equal(ct_count_mul((int64_t)1 << 31, (int64_t)1 << 31, &n), 1);
  assert_int_equal(n, (int64_t)1 << 62);
  assert_int_equal(ct_count_mul((int64_t)1 << 32, (int64_t)1 << 31, &n), 0);
  assert_int_equal(n, (int64_t)1 << 62); /* unchanged */
  assert_int_equal(ct_count_mul(-1, 2, &n), 0);
  const ct_shape huge = ct_shape_of(2, (int64_t)1 << 31, (int64_t)1 << 31);
  const ct_shape half = ct_shape_of(2, (int64_t)1 << 31, (int64_t)1 << 30);
  const ct_shape past = ct_shape_of(3, (int64_t)1 << 31, (int64_t)1 << 31, (int64_t)4);
  size_t bytes = 0;
  assert_int_equal(ct_shape_bytes(&huge, CT_U8, &bytes), 1);
  assert_true(bytes == (size_t)1 << 62);
  assert_int_equal(ct_shape_bytes(&huge, CT_F32, &bytes), 0);
  assert_int_equal(ct_shape_bytes(&half, CT_F32, &bytes), 1);
  assert_true(bytes == (size_t)1 << 63);
  assert_int_equal(ct_shape_bytes(&past, CT_U8, &bytes), 0);
  assert_int_equal(ct_shape_elements(&past), -1);
  const ct_shape batch = ct_shape_of(2, (int64_t)-1, (int64_t)1 << 62); /* ? counts as 1 */
  assert_int_equal(ct_shape_bytes(&batch, CT_U8, &bytes), 1);
  assert_int_equal(ct_shape_bytes(&batch, CT_F32, &bytes), 0);
  ct_status st = CT_STATUS_INIT;
  assert_null(ct_tensor_new(CT_F32, &huge, &st));
  printf("  %s\n", st.message);
  assert_int_equal(st.code, CT_INVALID_ARGUMENT);
  assert_non_null(strstr(st.message, "a tensor of shape [2147483648, 2147483648] (f32) takes "
                                     "more bytes than 64 bits count"));
  ct_status_clear(&st);
  assert_int_equal(ct_shape_check_bytes(&half, CT_F32, "x", &bytes, &st), 0);
  assert_true(bytes == (size_t)1 << 63);
}

static void test_tensors_are_zeroed_aligned_and_owned(void **state) {
  (void)state;
  ct_status st = CT_STATUS_INIT;
  ct_shape shape = ct_shape_of(2, (int64_t)4, (int64_t)3);
  ct_tensor *t = ct_tensor_new(CT_F32, &shape, &st);
  assert_non_null(t);
  assert_int_equal((uintptr_t)t->data % 64, 0);
  assert_int_equal(ct_tensor_nbytes(t), 12 * sizeof(float));
  for (int i = 0; i < 12; ++i) {
    assert_true(ct_tensor_f32(t)[i] == 0.0f);
    ct_tensor_f32(t)[i] = (float)i;
  }
  ct_tensor rows = ct_tensor_rows(t, 1, 2);
  assert_int_equal(rows.shape.dims[0], 2);
  assert_true(ct_tensor_f32(&rows)[0] == 3.0f);
  ct_tensor *copy = ct_tensor_clone(t, &st);
  assert_non_null(copy);
  ct_tensor_f32(t)[0] = 99.0f;
  assert_true(ct_tensor_f32(copy)[0] == 0.0f);
  ct_tensor_free(copy);
  ct_tensor_free(t);

  ct_shape unknown = ct_shape_of(2, (int64_t)-1, (int64_t)3);
  assert_null(ct_tensor_new(CT_F32, &unknown, &st));
  assert_int_equal(st.code, CT_INVALID_ARGUMENT);
}

static void test_hashes_match_their_definition(void **state) {
  (void)state;
  assert_true(ct_mix64(0) == 0xe220a8397b1dcdafull);
  assert_true(ct_mix64(1) == 0x910a2dec89025cc1ull);
  assert_true(ct_hash_string(0, "conv1/weights") == 0x761976b82746e1b4ull);
  assert_true(ct_hash_string(42, "conv1/weights") == 0x8bc78ddf241e8f00ull);
  /* the data pipeline's splitmix64 stream is ct_mix64 of 0, G, 2G, ... */
  uint64_t stream = 0;
  assert_true(ct_splitmix64(&stream) == ct_mix64(0));
  assert_true(ct_splitmix64(&stream) == ct_mix64(0x9E3779B97F4A7C15ull));
}

static int compare_doubles(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Every length from 1 to 40, values all different or drawn from a few
 * (runs of equal values), in random order, sorted and reversed. */
static void test_median_is_the_middle_of_the_sorted_values(void **state) {
  (void)state;
  uint64_t stream = 7;
  for (int n = 1; n <= 40; ++n)
    for (int trial = 0; trial < 300; ++trial) {
      double values[40], sorted[40];
      const int kinds = trial % 3 == 0 ? 3 : 1 << 20;
      for (int i = 0; i < n; ++i)
        values[i] = sorted[i] = (double)(ct_splitmix64(&stream) % (uint64_t)kinds);
      qsort(sorted, (size_t)n, sizeof *sorted, compare_doubles);
      if (trial == 1 || trial == 2)
        for (int i = 0; i < n; ++i) values[i] = sorted[trial == 1 ? i : n - 1 - i];
      const double want = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
      assert_true(ct_median(values, n) == want);
    }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_status_keeps_the_first_error),
      cmocka_unit_test(test_shapes),
      cmocka_unit_test(test_counts_never_wrap),
      cmocka_unit_test(test_tensors_are_zeroed_aligned_and_owned),
      cmocka_unit_test(test_hashes_match_their_definition),
      cmocka_unit_test(test_median_is_the_middle_of_the_sorted_values),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
