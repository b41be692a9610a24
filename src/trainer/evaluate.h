/* Evaluation of the test set (evaluate.c). */
#ifndef CTOWER_TRAINER_EVALUATE_H
#define CTOWER_TRAINER_EVALUATE_H

#include "ctower/data.h"
#include "ctower/session.h"
#include "ctower/trainer.h"
#include "trainer/training_graph.h"

/* Test loss and accuracy over a whole dataset, on the evaluation copies;
 * under several ranks each evaluates its share and the results are the
 * job's. */
typedef struct ct_eval_result {
  double loss, accuracy;
} ct_eval_result;

int ct_trainer_evaluate(ct_session *session, const ct_training_graph *tg,
                        const ct_trainer_options *options, const ct_dataset *test,
                        ct_eval_result *result, ct_status *status);

#endif
