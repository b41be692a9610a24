/* Evaluation: the test set's loss and accuracy, after each epoch and for
 * `ctower eval`. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cluster/communication.h"
#include "trainer/evaluate.h"
#include "trainer/run_inputs.h"
#include "trainer/trainer_checkpoint.h"

enum { EVAL_BATCH = 500 };

/* The loss sum and the correct count of n examples (a batch's rows), split
 * evenly over the evaluation copies, one per device (fewer when n is
 * smaller than their count), added to sums[0] and sums[1]. */
static int evaluate_rows(ct_session *s, const ct_training_graph *tg, const ct_tensor *images,
                         const ct_tensor *labels, int64_t n, double *sums, ct_status *status) {
  const int copies = n < tg->n_eval ? (int)n : tg->n_eval;
  int64_t sizes[CT_MAX_DEVICES];
  ct_towers_split(copies, n, NULL, sizes);
  ct_tensor shard_images[CT_MAX_DEVICES], shard_labels[CT_MAX_DEVICES];
  ct_feed feeds[2 * CT_MAX_DEVICES];
  ct_output fetches[2 * CT_MAX_DEVICES];
  for (int k = 0, first = 0; k < copies; first += (int)sizes[k], ++k) {
    shard_images[k] = ct_tensor_rows(images, first, sizes[k]);
    shard_labels[k] = ct_tensor_rows(labels, first, sizes[k]);
    feeds[2 * k] = (ct_feed){tg->eval[k].images, &shard_images[k]};
    feeds[2 * k + 1] = (ct_feed){tg->eval[k].labels, &shard_labels[k]};
    fetches[2 * k] = tg->eval[k].loss_sum;
    fetches[2 * k + 1] = tg->eval[k].accuracy;
  }
  ct_tensor *out[2 * CT_MAX_DEVICES];
  if (ct_session_run(s, feeds, 2 * copies, fetches, 2 * copies, NULL, 0, out, status)) return 1;
  for (int k = 0; k < copies; ++k) {
    sums[0] += ct_tensor_f32(out[2 * k])[0];
    /* the count right, exactly: the fraction is an f32 */
    sums[1] += round(ct_tensor_f32(out[2 * k + 1])[0] * (double)sizes[k]);
    ct_tensor_free(out[2 * k]);
    ct_tensor_free(out[2 * k + 1]);
  }
  return 0;
}

int ct_trainer_evaluate(ct_session *s, const ct_training_graph *tg, const ct_trainer_options *o,
                        const ct_dataset *test, ct_eval_result *result, ct_status *status) {
  /* read by the input pipeline's workers: the central crop and
   * standardization; the loss, the correct count and the examples seen:
   * under several ranks each takes its batches and the sums are the job's */
  const int ranks = ct_cluster_size(), rank = ct_cluster_rank();
  /* under several ranks a batch of EVAL_BATCH * ranks examples gives rank
   * r its rows r * EVAL_BATCH .. (r + 1) * EVAL_BATCH - 1: the batches r,
   * r + ranks, ... of EVAL_BATCH, as if the ranks took turns */
  const ct_pipeline_options rows = {.split = {ranks, rank, 1, EVAL_BATCH}, .max_rows = EVAL_BATCH};
  ct_pipeline *p = ct_trainer_open_pipeline(o, test, (int64_t)EVAL_BATCH * ranks, 0, rows, status);
  double sums[3] = {0, 0, 0};
  int failed = p == NULL;
  for (int64_t n = 1; !failed && n > 0;) {
    ct_pipeline_batch batch;
    n = ct_pipeline_next(p, &batch, status);
    failed = n < 0;
    if (n > 0 && batch.rows > 0) {
      failed = evaluate_rows(s, tg, batch.images, batch.labels, batch.rows, sums, status);
      sums[2] += (double)batch.rows;
    }
  }
  ct_pipeline_free(p);
  ct_cluster_progress(-1, -1, "the evaluation's sums");
  if (failed || ct_cluster_allreduce_f64(sums, 3, status)) return 1;
  result->loss = sums[2] > 0 ? sums[0] / sums[2] : 0;
  result->accuracy = sums[2] > 0 ? sums[1] / sums[2] : 0;
  return 0;
}

int ct_eval_main(const ct_trainer_options *o, const char *checkpoint_path, ct_status *status) {
  const char *path = checkpoint_path ? checkpoint_path : o->train.checkpoint;
  if (path == NULL || path[0] == '\0') {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "no checkpoint to evaluate: set train.checkpoint or pass --checkpoint FILE");
    return 1;
  }
  if (ct_trainer_check_options(o, status)) return 1;
  ct_dataset *test_set = ct_trainer_open_dataset(o, 0, status);
  if (test_set == NULL) return 1;
  int64_t h, w, ch;
  ct_trainer_image_shape(o, test_set, &h, &w, &ch);
  ct_training_graph tg;
  memset(&tg, 0, sizeof tg);
  ct_session *s = NULL;
  ct_trainer_model model;
  int failed = ct_trainer_model_open(o, &model, status) ||
               ct_training_graph_build(&tg, &model.def, h, w, ch, ct_dataset_num_classes(test_set),
                                       (uint64_t)o->train.seed, NULL, NULL, status);
  if (!failed) {
    s = ct_session_new(tg.graph, &o->session, status);
    failed = s == NULL || ct_trainer_restore_checkpoint(s, &tg, o, test_set, path, NULL, NULL, NULL,
                                                                status);
  }
  ct_eval_result result;
  if (!failed) failed = ct_trainer_evaluate(s, &tg, o, test_set, &result, status);
  if (!failed)
    printf("%s on %s test set (%lld examples): accuracy %.4f, loss %.4f (checkpoint %s)\n",
           o->model, o->dataset.name, (long long)ct_dataset_size(test_set), result.accuracy,
           result.loss, path);
  ct_session_free(s);
  ct_training_graph_free(&tg);
  ct_trainer_model_close(&model);
  ct_dataset_free(test_set);
  return failed;
}
