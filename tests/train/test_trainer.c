/* The trainer's options: a C caller's values out of range are
 * INVALID_ARGUMENT naming them, before any file is read. */
#include <string.h>

#include "test_support.h"

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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_options_out_of_range_are_rejected),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
