/* `ctower plan`'s predictions against a real step: for every zoo model on
 * one and two towers (CPU devices, synthetic data, small batches), each
 * device's predicted peak memory is within 10% of the allocator's measured
 * peak after the step; FLOPs follow the per-op rules; the cost model's
 * calibration file reads back what was written, and its ring all-reduce
 * follows 2(n-1) latencies and 2(n-1)/n of the bytes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec/estimate.h"
#include "test_support.h"
#include "observe/cost_model.h"
#include "trainer/train_run.h"

enum { BATCH = 16 };

static void plan_options(const char *model, int towers, ct_variable_update update,
                         ct_trainer_options *o, ct_tower_options *t) {
  ct_trainer_options_defaults(o);
  snprintf(o->model, sizeof o->model, "%s", model);
  snprintf(o->dataset.name, sizeof o->dataset.name, "synthetic");
  o->dataset.batch_size = BATCH;
  o->dataset.train_size = 4 * BATCH;
  o->dataset.test_size = BATCH;
  o->dataset.image_shape[0] = 28, o->dataset.image_shape[1] = 28, o->dataset.image_shape[2] = 1;
  o->dataset.num_classes = 10;
  o->session.device_count_cpu = towers;
  ct_tower_options_defaults(t);
  t->n_towers = towers;
  for (int k = 0; k < towers; ++k) snprintf(t->devices[k], sizeof t->devices[k], "/cpu:%d", k);
  t->variable_update = update;
}

/* Predicts a step, runs it, and compares every device's peaks. */
static void check_peaks_in(const char *model, int towers, ct_variable_update update,
                           ct_precision precision) {
  ct_trainer_options o;
  ct_tower_options t;
  plan_options(model, towers, update, &o, &t);
  o.session.precision = precision;
  ct_status st = CT_STATUS_INIT;
  ct_train_run r;
  ct_run_estimate e;
  memset(&e, 0, sizeof e);
  if (ct_train_run_setup(&r, &o, &t, &st) || ct_train_run_estimate(&r, &e, &st))
    fail_msg("%s on %d towers: %s", model, towers, st.message);
  double loss, accuracy;
  if (ct_train_run_next_batch(&r, &st) != BATCH || ct_train_run_step(&r, 0, 0.0, &loss, &accuracy, &st))
    fail_msg("%s", st.message);
  for (int d = 0; d < ct_session_device_count(r.session); ++d) {
    ct_memory_stats m;
    ct_session_memory_stats(r.session, d, &m);
    const double predicted = (double)e.devices[d].peak_bytes,
                 measured = (double)m.peak_bytes_in_use;
    const double error = measured > 0 ? fabs(predicted - measured) / measured : predicted;
    print_message("%-10s %d tower(s) %s%s device %d: predicted peak %.0f, measured %.0f "
                  "(%+.1f%%)\n",
                  model, towers, update == CT_VARIABLE_UPDATE_REPLICATED ? "replicated" : "ps",
                  precision == CT_PRECISION_BF16 ? " bf16" : "", d,
                  predicted, measured,
                  100 * (predicted - measured) / (measured > 0 ? measured : 1));
    assert_true(measured > 0);
    if (error > 0.10)
      fail_msg("%s on %d towers, device %d: predicted %.0f bytes, measured %.0f", model, towers, d,
               predicted, measured);
  }
  ct_run_estimate_free(&e);
  ct_train_run_free(&r);
}

static void check_peaks(const char *model, int towers, ct_variable_update update) {
  check_peaks_in(model, towers, update, CT_PRECISION_FP32);
}

/* Every zoo model in fp32 (3x3 layers in Winograd's layouts where the CPU
 * has it), and in bf16 (its convolutions and matmuls converting their
 * inputs, where the CPU has bf16). */
static void test_predicted_peak_matches_every_zoo_model(void **state) {
  (void)state;
  for (int i = 0; i < ct_model_count(); ++i)
    for (int towers = 1; towers <= 2; ++towers)
      check_peaks(ct_model_at(i)->name, towers, CT_VARIABLE_UPDATE_REPLICATED);
  check_peaks("fmnist_cnn", 2, CT_VARIABLE_UPDATE_PARAMETER_SERVER);
  const char *bf16_models[] = {"fmnist_cnn", "cifar10_cnn", "resnet20"};
  for (int i = 0; i < 3; ++i)
    check_peaks_in(bf16_models[i], 1, CT_VARIABLE_UPDATE_REPLICATED, CT_PRECISION_BF16);
}

/* mlp: 784-256-128-10. Forward matmuls 2*B*(784*256 + 256*128 + 128*10);
 * the backward pass has one matmul for each weight's gradient and one for
 * each input's but the first layer's (its input is the images). */
static void test_flops_follow_the_per_op_rules(void **state) {
  (void)state;
  ct_trainer_options o;
  ct_tower_options t;
  plan_options("mlp", 1, CT_VARIABLE_UPDATE_REPLICATED, &o, &t);
  ct_status st = CT_STATUS_INIT;
  ct_train_run r;
  ct_run_estimate e;
  memset(&e, 0, sizeof e);
  if (ct_train_run_setup(&r, &o, &t, &st) || ct_train_run_estimate(&r, &e, &st))
    fail_msg("%s", st.message);
  const double forward = 2.0 * BATCH * (784 * 256 + 256 * 128 + 128 * 10);
  const double input_grads = 2.0 * BATCH * (256 * 128 + 128 * 10);
  assert_float_equal(e.devices[0].dense_flops, 2 * forward + input_grads, 1.0);
  assert_true(e.devices[0].flops > e.devices[0].dense_flops);
  const size_t params = (784 * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10) * sizeof(float);
  assert_int_equal(e.devices[0].parameter_bytes, params);
  assert_int_equal(e.devices[0].optimizer_bytes, params); /* momentum */
  assert_true(e.copied_bytes == 0 && e.collective_bytes == 0);
  ct_run_estimate_free(&e);
  ct_train_run_free(&r);
}

static void test_calibration_round_trip_and_ring_cost(void **state) {
  (void)state;
  char dir[] = "/tmp/ct_calibration_XXXXXX", path[256];
  assert_non_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/sub/calibration.json", dir);
  ct_status st = CT_STATUS_INIT;
  ct_calibration c, back;
  ct_calibration_defaults(&back);
  assert_int_not_equal(ct_calibration_load(path, &back, &st), 0);
  assert_int_equal(st.code, CT_NOT_FOUND);
  assert_int_equal(back.measured, 0);
  ct_calibration_defaults(&c);
  snprintf(c.cpu, sizeof c.cpu, "a \"quoted\" CPU");
  ct_kind_rates *k = &c.kinds[CT_DEVICE_KIND_CPU];
  k->measured = 1, k->threads = 2, k->n_points = 2;
  k->flops[0] = 1e6, k->rate[0] = 1e10, k->flops[1] = 1e9, k->rate[1] = 1e11;
  k->memory_bytes_per_s = 3e10, k->op_overhead_s = 2e-6;
  c.in_process = (ct_link){4e-5, 8e9};
  ct_status_clear(&st);
  assert_int_equal(ct_calibration_save(path, &c, &st), 0); /* makes the folder */
  ct_calibration_defaults(&back);
  assert_int_equal(ct_calibration_load(path, &back, &st), 0);
  assert_int_equal(back.measured, 1);
  assert_string_equal(back.cpu, "a \"quoted\" CPU");
  const ct_kind_rates *r = &back.kinds[CT_DEVICE_KIND_CPU];
  assert_int_equal(r->n_points, 2);
  assert_int_equal(r->threads, 2);
  assert_float_equal(r->rate[1], 1e11, 1e5);
  assert_float_equal(r->op_overhead_s, 2e-6, 1e-12);
  assert_float_equal(back.in_process.bytes_per_s, 8e9, 1e3);
  assert_int_equal(back.mpi_ranks, 0);
  const ct_link link = {1e-5, 1e9};
  assert_float_equal(ct_cost_ring_seconds(1e9, 1, &link), 0, 0);
  assert_float_equal(ct_cost_ring_seconds(1e9, 4, &link), 6 * 1e-5 + 1.5, 1e-9);
  remove(path);
  snprintf(path, sizeof path, "%s/sub", dir);
  rmdir(path);
  rmdir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_predicted_peak_matches_every_zoo_model),
      cmocka_unit_test(test_flops_follow_the_per_op_rules),
      cmocka_unit_test(test_calibration_round_trip_and_ring_cost),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
