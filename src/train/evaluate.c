/* Evaluation: the test set's loss and accuracy, after each epoch and for
 * `ctower eval`. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cluster/cluster.h"
#include "train/trainer_internal.h"

enum { EVAL_BATCH = 500 };

int ct_trainer_evaluate(ct_session *s, const ct_training_graph *tg, const ct_trainer_options *o,
                        const ct_dataset *test, ct_eval_result *result, ct_status *status) {
  ct_batcher *batcher = ct_batcher_new(test, EVAL_BATCH, 0, 0, status);
  ct_batch_buffers buf = {0};
  int64_t h, w, ch;
  /* evaluation: the central crop and standardization */
  if (batcher && ct_batcher_set_augment(batcher, ct_trainer_augment(o), 0, status) == 0)
    ct_batcher_image_shape(batcher, &h, &w, &ch);
  if (batcher == NULL || status->code != CT_OK ||
      ct_batch_buffers_init(&buf, EVAL_BATCH, h, w, ch, status)) {
    ct_batcher_free(batcher);
    ct_batch_buffers_free(&buf);
    return 1;
  }
  ct_batcher_start_epoch(batcher, 0);
  /* the loss, the correct count and the examples seen: under several ranks,
   * rank r takes batches r, r + ranks, ... and the sums are the job's */
  double sums[3] = {0, 0, 0};
  const int ranks = ct_cluster_size(), rank = ct_cluster_rank();
  int64_t n;
  int failed = 0;
  /* each batch is split evenly over the evaluation copies, one per device;
   * a batch smaller than their count uses the first n */
  for (int64_t batch = 0; !failed; ++batch) {
    const int mine = batch % ranks == rank;
    n = ct_batcher_next_rows(batcher, 0, mine ? EVAL_BATCH : 0, ct_tensor_f32(buf.images),
                             ct_tensor_i32(buf.labels), status);
    if (n < 0) failed = 1;
    if (n <= 0) break;
    if (!mine) continue;
    const int copies = n < tg->n_eval ? (int)n : tg->n_eval;
    int64_t sizes[CT_MAX_DEVICES];
    ct_towers_split(copies, n, NULL, sizes);
    ct_tensor shard_images[CT_MAX_DEVICES], shard_labels[CT_MAX_DEVICES];
    ct_feed feeds[2 * CT_MAX_DEVICES];
    ct_output fetches[2 * CT_MAX_DEVICES];
    for (int k = 0, first = 0; k < copies; first += (int)sizes[k], ++k) {
      shard_images[k] = ct_tensor_rows(buf.images, first, sizes[k]);
      shard_labels[k] = ct_tensor_rows(buf.labels, first, sizes[k]);
      feeds[2 * k] = (ct_feed){tg->eval[k].images, &shard_images[k]};
      feeds[2 * k + 1] = (ct_feed){tg->eval[k].labels, &shard_labels[k]};
      fetches[2 * k] = tg->eval[k].loss_sum;
      fetches[2 * k + 1] = tg->eval[k].accuracy;
    }
    ct_tensor *out[2 * CT_MAX_DEVICES];
    failed = ct_session_run(s, feeds, 2 * copies, fetches, 2 * copies, NULL, 0, out, status);
    if (failed) break;
    for (int k = 0; k < copies; ++k) {
      sums[0] += ct_tensor_f32(out[2 * k])[0];
      /* the count right, exactly: the fraction is an f32 */
      sums[1] += round(ct_tensor_f32(out[2 * k + 1])[0] * (double)sizes[k]);
      ct_tensor_free(out[2 * k]);
      ct_tensor_free(out[2 * k + 1]);
    }
    sums[2] += (double)n;
  }
  ct_batcher_free(batcher);
  ct_batch_buffers_free(&buf);
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
    failed = s == NULL || ct_trainer_restore_checkpoint(s, &tg, path, o->model, NULL, status);
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
