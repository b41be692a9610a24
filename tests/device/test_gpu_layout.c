/* The rules that make GPUs into a session's devices, checked against GPUs
 * described by numbers: which CUDA ordinals become /gpu:0, /gpu:1, ... under
 * visible_device_list, device_count and virtual devices, and the memory
 * limit of each under fraction, byte limit, growth and what is free. The
 * same functions run on real GPUs in the CUDA device (tests/gpu runs them). */
#include <string.h>

#include "device/gpu_layout.h"
#include "test_support.h"

static const size_t MiB = (size_t)1 << 20;

static ct_session_options options_with_list(const char *visible_device_list) {
  ct_session_options o;
  ct_session_options_defaults(&o);
  snprintf(o.gpu_options.visible_device_list, sizeof o.gpu_options.visible_device_list, "%s",
           visible_device_list);
  return o;
}

static ct_gpu_layout layout_ok(const ct_session_options *o, int available) {
  ct_gpu_layout layout;
  ct_status st = CT_STATUS_INIT;
  assert_int_equal(ct_gpu_layout_make(o, available, &layout, &st), 0);
  assert_status_ok(&st);
  return layout;
}

static void expect_invalid_list(const char *list, int available, const char *fragment) {
  ct_session_options o = options_with_list(list);
  ct_gpu_layout layout;
  ct_status st = CT_STATUS_INIT;
  assert_int_equal(ct_gpu_layout_make(&o, available, &layout, &st), 1);
  assert_int_equal(st.code, CT_INVALID_ARGUMENT);
  if (strstr(st.message, fragment) == NULL || strstr(st.message, list) == NULL)
    fail_msg("'%s' on %d GPUs: \"%s\" should quote the list and say \"%s\"", list, available,
             st.message, fragment);
}

static void test_all_gpus_in_order_by_default(void **state) {
  (void)state;
  ct_session_options o = options_with_list("");
  ct_gpu_layout layout = layout_ok(&o, 4);
  assert_int_equal(layout.n_physical, 4);
  assert_int_equal(layout.per_physical, 1);
  for (int i = 0; i < 4; ++i) assert_int_equal(layout.ordinals[i], i);
  assert_int_equal(ct_gpu_layout_devices(&layout), 4);
}

static void test_visible_device_list_picks_and_orders(void **state) {
  (void)state;
  ct_session_options o = options_with_list("1,0");
  ct_gpu_layout layout = layout_ok(&o, 2); /* physical 1 is /gpu:0 */
  assert_int_equal(layout.n_physical, 2);
  assert_int_equal(layout.ordinals[0], 1);
  assert_int_equal(layout.ordinals[1], 0);
  o = options_with_list("3");
  layout = layout_ok(&o, 4);
  assert_int_equal(layout.n_physical, 1);
  assert_int_equal(layout.ordinals[0], 3);
  o = options_with_list("2,0,3");
  layout = layout_ok(&o, 4);
  assert_int_equal(layout.n_physical, 3);
  assert_int_equal(layout.ordinals[2], 3);
}

static void test_bad_visible_device_lists(void **state) {
  (void)state;
  expect_invalid_list("2", 2, "names GPU 2, but this machine has 2 visible GPUs (0 to 1)");
  expect_invalid_list("0,1", 1, "names GPU 1, but this machine has 1 visible GPU (0 to 0)");
  expect_invalid_list("-1", 2, "names GPU -1");
  expect_invalid_list("0,0", 2, "names GPU 0 twice");
  expect_invalid_list("gpu0", 2, "is not a comma-separated list");
  expect_invalid_list("0;1", 2, "is not a comma-separated list");
  expect_invalid_list("0,", 2, "is not a comma-separated list");
  expect_invalid_list(",0", 2, "is not a comma-separated list");
  expect_invalid_list("0,,1", 2, "is not a comma-separated list");
}

static void test_no_gpu_means_nothing_to_pick(void **state) {
  (void)state;
  /* A configuration written for a GPU machine still runs without one: the
   * GPUs are absent, and soft placement moves their ops. */
  ct_session_options o = options_with_list("1,0");
  ct_gpu_layout layout = layout_ok(&o, 0);
  assert_int_equal(ct_gpu_layout_devices(&layout), 0);
}

static void test_device_count_caps_and_hides(void **state) {
  (void)state;
  ct_session_options o = options_with_list("");
  o.device_count_gpu = 0;
  assert_int_equal(ct_gpu_layout_devices((ct_gpu_layout[]){layout_ok(&o, 4)}), 0);
  o.device_count_gpu = 2;
  ct_gpu_layout layout = layout_ok(&o, 4);
  assert_int_equal(layout.n_physical, 2);
  assert_int_equal(layout.ordinals[1], 1);
  o = options_with_list("3,1,2");
  o.device_count_gpu = 1; /* the first of the list */
  layout = layout_ok(&o, 4);
  assert_int_equal(layout.n_physical, 1);
  assert_int_equal(layout.ordinals[0], 3);
  o.device_count_gpu = 8; /* more than there are: all of them */
  assert_int_equal(ct_gpu_layout_devices((ct_gpu_layout[]){layout_ok(&o, 4)}), 3);
}

static void test_virtual_devices_split_each_gpu(void **state) {
  (void)state;
  ct_session_options o = options_with_list("1,0");
  o.gpu_options.n_virtual_devices = 3;
  ct_gpu_layout layout = layout_ok(&o, 2);
  assert_int_equal(layout.per_physical, 3);
  assert_int_equal(ct_gpu_layout_devices(&layout), 6); /* /gpu:0..2 on physical 1, /gpu:3..5 on 0 */
}

static size_t limit_ok(const ct_session_options *o, int virtual_index, size_t free_bytes,
                       size_t total) {
  size_t limit = 0;
  ct_status st = CT_STATUS_INIT;
  assert_int_equal(
      ct_gpu_memory_limit(o, "/gpu:0", 0, virtual_index, free_bytes, total, &limit, &st), 0);
  assert_status_ok(&st);
  return limit;
}

static void test_memory_limit_precedence(void **state) {
  (void)state;
  const size_t total = 81559 * MiB, free_bytes = 80000 * MiB;
  ct_session_options o = options_with_list("");
  /* the default: what is free, less 5% (more than 256 MiB here) */
  assert_int_equal(limit_ok(&o, 0, free_bytes, total), free_bytes - free_bytes / 20);
  /* on a small GPU the 256 MiB floor is left instead */
  assert_int_equal(limit_ok(&o, 0, 1000 * MiB, 2000 * MiB), 744 * MiB);
  o.gpu_options.per_process_gpu_memory_fraction = 0.4;
  assert_int_equal(limit_ok(&o, 0, free_bytes, total), (size_t)((double)total * 0.4));
  o.gpu_memory_limit = 3 * MiB + 5; /* bytes, over the fraction */
  assert_int_equal(limit_ok(&o, 0, free_bytes, total), 3 * MiB + 5);
  o.gpu_options.n_virtual_devices = 2; /* over both */
  o.gpu_options.virtual_devices_mb[0] = 1024;
  o.gpu_options.virtual_devices_mb[1] = 2048;
  assert_int_equal(limit_ok(&o, 0, free_bytes, total), 1024 * MiB);
  assert_int_equal(limit_ok(&o, 1, free_bytes, total), 2048 * MiB);
}

/* The seed's two programs at fraction 0.4 each: each session reserves its
 * share when it starts, so a third finds too little free and says which
 * setting asked for too much. */
static void test_three_sessions_at_fraction_0_4(void **state) {
  (void)state;
  const size_t total = 81559 * MiB;
  size_t free_bytes = total - 500 * MiB; /* the driver's own */
  ct_session_options o = options_with_list("");
  o.gpu_options.per_process_gpu_memory_fraction = 0.4;
  for (int session = 0; session < 2; ++session) free_bytes -= limit_ok(&o, 0, free_bytes, total);
  size_t limit = 0;
  ct_status st = CT_STATUS_INIT;
  assert_int_equal(ct_gpu_memory_limit(&o, "/job:localhost/replica:0/task:0/device:GPU:0", 0, 0,
                                       free_bytes, total, &limit, &st),
                   1);
  assert_int_equal(st.code, CT_RESOURCE_EXHAUSTED);
  char expected[512];
  snprintf(expected, sizeof expected,
           "GPU 0 has %zu MiB free but per_process_gpu_memory_fraction 0.40 of 81559 MiB asks "
           "for %zu MiB for /job:localhost/replica:0/task:0/device:GPU:0; another session or "
           "process holds the rest: ask for less, or set gpu_options.allow_growth: true",
           free_bytes / MiB, (size_t)((double)total * 0.4) / MiB);
  assert_string_equal(st.message, expected);
  /* with growth nothing is reserved up front: the third session starts, and
   * its allocations fail later, as out-of-memory statuses */
  o.gpu_options.allow_growth = 1;
  assert_int_equal(limit_ok(&o, 0, free_bytes, total), (size_t)((double)total * 0.4));
}

static void test_full_gpu_is_a_clear_error(void **state) {
  (void)state;
  ct_session_options o = options_with_list("");
  size_t limit = 0;
  ct_status st = CT_STATUS_INIT;
  assert_int_equal(ct_gpu_memory_limit(&o, "/gpu:0", 2, 0, 100 * MiB, 2000 * MiB, &limit, &st), 1);
  assert_int_equal(st.code, CT_RESOURCE_EXHAUSTED);
  assert_non_null(strstr(st.message, "GPU 2 has 100 MiB free, no more than the 256 MiB"));
  assert_non_null(strstr(st.message, "device_count: {GPU: 0}"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_all_gpus_in_order_by_default),
      cmocka_unit_test(test_visible_device_list_picks_and_orders),
      cmocka_unit_test(test_bad_visible_device_lists),
      cmocka_unit_test(test_no_gpu_means_nothing_to_pick),
      cmocka_unit_test(test_device_count_caps_and_hides),
      cmocka_unit_test(test_virtual_devices_split_each_gpu),
      cmocka_unit_test(test_memory_limit_precedence),
      cmocka_unit_test(test_three_sessions_at_fraction_0_4),
      cmocka_unit_test(test_full_gpu_is_a_clear_error),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
