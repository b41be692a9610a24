/* The trainer's options: a C caller's values out of range are
 * INVALID_ARGUMENT naming them, before any file is read. The split of a
 * batch over the towers: as the input pipeline hands it out, or by the
 * towers' speeds, which come from their devices' busy time. */
#include <math.h>
#include <string.h>

#include "test_support.h"
#include "trainer/batch_split.h"

static void expect_invalid(const ct_trainer_options *o, const char *message) {
  ct_status st = CT_STATUS_INIT;
  ct_tower_options towers;
  ct_tower_options_defaults(&towers);
  assert_int_not_equal(ct_train_main(o, &towers, &(ct_train_flags){0}, &st), 0);
  assert_int_equal(st.code, CT_INVALID_ARGUMENT);
  if (strstr(st.message, message) == NULL) fail_msg("lacks: %s\nin: %s", message, st.message);
}

static void test_options_out_of_range_are_rejected(void **state) {
  (void)state;
  ct_trainer_options o;
  ct_trainer_options_defaults(&o);
  snprintf(o.model, sizeof o.model, "no_such_model");
  expect_invalid(&o, "unknown model 'no_such_model'");
  ct_trainer_options_defaults(&o);
  o.dataset.batch_size = 0;
  expect_invalid(&o, "the batch size (0) must be at least 1");
  ct_trainer_options_defaults(&o);
  o.train.schedule.base_rate = 0;
  expect_invalid(&o, "the learning rate must be > 0");
  ct_trainer_options_defaults(&o);
  ct_status st = CT_STATUS_INIT;
  snprintf(o.model, sizeof o.model, "no_such_model");
  assert_int_not_equal(ct_eval_main(&o, "/nonexistent.safetensors", &st), 0);
  assert_string_equal(st.message,
                      "unknown model 'no_such_model' (the zoo has mlp, fmnist_cnn, cifar10_cnn, "
                      "resnet20, resnet32, resnet44, resnet56, resnet110); or give a layer list "
                      "or a model library");
}

/* A process on its own with three towers: the pipeline reads every row by
 * an even split over them; the towers take the rows the batch came with,
 * or, once every speed is measured, rows in proportion to the speeds. */
static void test_batch_split(void **state) {
  (void)state;
  ct_tower_options towers;
  ct_tower_options_defaults(&towers);
  towers.n_towers = 3;
  ct_tower_split split;
  ct_status st = CT_STATUS_INIT;
  assert_int_equal(ct_tower_split_place(&split, &towers, &st), 0);
  const ct_batch_parts parts = ct_tower_split_parts(&split);
  assert_true(parts.parts == 3 && parts.first == 0 && parts.mine == 3 && parts.part_rows == 0);
  const int64_t came[3] = {4, 4, 3};
  const ct_pipeline_batch batch = {11, 0, 11, NULL, NULL, came};
  ct_tower_speeds speeds;
  ct_tower_speeds_init(&speeds, 1);
  speeds.speeds[0] = 1, speeds.speeds[1] = 2; /* tower 2 not measured yet */
  ct_tower_split_take(&split, &batch, &speeds);
  assert_true(split.share.total == 11 && split.share.first == 0 && split.rows == 11);
  assert_memory_equal(split.sizes, came, sizeof came);
  speeds.speeds[2] = 1; /* one example each, then 8 shared 2:4:2 */
  ct_tower_split_take(&split, &batch, &speeds);
  assert_true(split.sizes[0] == 3 && split.sizes[1] == 5 && split.sizes[2] == 3);
  ct_tower_split_predict(&split, 11, NULL); /* as the pipeline would read it */
  assert_memory_equal(split.sizes, came, sizeof came);
}

/* Each tower's speed is its rows over the busy time of the device its
 * node runs on, smoothed from the second step on. */
static void test_tower_speeds_from_device_busy_time(void **state) {
  (void)state;
  ct_graph *g = ct_graph_new();
  ct_output x = ct_placeholder(g, "x", CT_F32, ct_shape_of(2, (int64_t)64, (int64_t)64));
  ct_node *ends[2];
  for (int d = 0; d < 2; ++d) {
    ct_graph_push_device(g, d ? "/cpu:1" : "/cpu:0");
    ct_output y = x;
    for (int k = 0; k < 2 + 4 * d; ++k) y = ct_tanh(g, ct_matmul(g, y, x, 0, 0));
    ends[d] = y.node;
    ct_graph_pop_device(g);
  }
  ct_session_options o;
  ct_session_options_defaults(&o);
  o.device_count_cpu = 2, o.device_count_gpu = 0, o.intra_op_parallelism_threads = 2;
  ct_status st = CT_STATUS_INIT;
  ct_session *s = ct_session_new(g, &o, &st);
  assert_non_null(s);
  ct_shape xs = ct_shape_of(2, (int64_t)64, (int64_t)64);
  ct_tensor *xv = ct_tensor_new(CT_F32, &xs, &st);
  ct_feed feed = {x, xv};
  ct_run_metadata *md = ct_run_metadata_new();
  const ct_tower_split split = {0, 2, 2, {10, 0}, 10, {4, 6}};
  ct_tower_speeds speeds;
  ct_tower_speeds_init(&speeds, 1);
  double first[2];
  for (int step = 0; step < 2; ++step) {
    assert_int_equal(ct_session_run_traced(s, &feed, 1, NULL, 0, ends, 2, NULL, md, &st), 0);
    ct_tower_speeds_update(&speeds, s, ends, &split, md);
    for (int k = 0; k < 2; ++k) {
      assert_int_equal(speeds.device[k], k);
      const double speed = (double)split.sizes[k] / ct_run_metadata_device_busy_us(md, k);
      const double want = step == 0 ? speed : 0.8 * first[k] + 0.2 * speed;
      assert_true(fabs(speeds.speeds[k] - want) <= 1e-12 * want);
      first[k] = speeds.speeds[k];
    }
  }
  ct_run_metadata_free(md);
  ct_tensor_free(xv);
  ct_session_free(s);
  ct_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_options_out_of_range_are_rejected),
      cmocka_unit_test(test_batch_split),
      cmocka_unit_test(test_tower_speeds_from_device_busy_time),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
