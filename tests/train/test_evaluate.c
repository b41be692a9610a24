/* Evaluation reads the test set through the input pipeline: its loss and
 * accuracy are bitwise the same for any dataset.threads and
 * dataset.prefetch, over several batches and a short last one. */
#include <string.h>

#include "ctower/models.h"
#include "test_support.h"
#include "trainer/evaluate.h"
#include "trainer/run_inputs.h"
#include "trainer/trainer_checkpoint.h"

enum { TEST_EXAMPLES = 1234 }; /* batches of 500, 500 and 234 */

static ct_eval_result evaluate(ct_session *s, const ct_training_graph *tg,
                               const ct_trainer_options *o, const ct_dataset *test) {
  ct_status st = CT_STATUS_INIT;
  ct_eval_result result = {-1, -1};
  assert_int_equal(ct_trainer_evaluate(s, tg, o, test, &result, &st), 0);
  assert_status_ok(&st);
  return result;
}

static void test_the_same_results_for_any_threads_and_prefetch(void **state) {
  (void)state;
  ct_status st = CT_STATUS_INIT;
  ct_trainer_options o;
  ct_trainer_options_defaults(&o);
  snprintf(o.model, sizeof o.model, "mlp");
  o.dataset.augment.crop[0] = 6, o.dataset.augment.crop[1] = 5;
  o.dataset.augment.standardize = 1;
  o.session.intra_op_parallelism_threads = 1;
  ct_dataset *test = ct_dataset_new_synthetic(TEST_EXAMPLES, 8, 7, 3, 10, 5, &st);
  assert_non_null(test);
  ct_training_graph tg;
  assert_int_equal(
      ct_training_graph_build(&tg, ct_model_find("mlp"), 6, 5, 3, 10, 3, NULL, NULL, &st), 0);
  ct_session *s = ct_session_new(tg.graph, &o.session, &st);
  assert_non_null(s);
  o.dataset.threads = 1, o.dataset.prefetch = 1;
  const ct_eval_result first = evaluate(s, &tg, &o, test);
  assert_true(first.accuracy >= 0 && first.accuracy <= 1 && first.loss > 0);
  static const int64_t settings[][2] = {{2, 1}, {4, 3}, {8, 2}, {3, 64}};
  for (size_t i = 0; i < sizeof settings / sizeof settings[0]; ++i) {
    o.dataset.threads = settings[i][0], o.dataset.prefetch = settings[i][1];
    const ct_eval_result again = evaluate(s, &tg, &o, test);
    assert_memory_equal(&again, &first, sizeof first);
  }
  ct_session_free(s);
  ct_training_graph_free(&tg);
  ct_dataset_free(test);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_the_same_results_for_any_threads_and_prefetch),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
