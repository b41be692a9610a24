/* A small model built and trained through ctower's public C API alone:
 * a 2-16-16-2 network learns whether a point lies inside a circle.
 *
 *   build/train_circle
 *   mpirun -np 2 build/train_circle    # its layers on the tasks' devices
 *
 * Under mpirun the layers are spread over the processes (model
 * parallelism across tasks): fc1 on /job:worker/task:0/cpu:0, fc2 on task
 * 1, the logits on the last task; every rank builds the same graph and
 * makes the same runs, and the activations and gradients that cross tasks
 * are sent between the processes. The printed figures are those of one
 * process, bit for bit.
 */
#include <stdio.h>
#include <stdlib.h>

#include <ctower/ctower.h>

enum { BATCH = 256, STEPS = 600 };

/* Points in [-1, 1]^2, label 1 inside the circle of radius 0.6. */
static void make_batch(uint64_t *rng, float *points, int32_t *labels) {
  for (int i = 0; i < BATCH; ++i) {
    for (int d = 0; d < 2; ++d) {
      *rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
      points[2 * i + d] = (float)((*rng >> 40) / 8388608.0 - 1.0);
    }
    float x = points[2 * i], y = points[2 * i + 1];
    labels[i] = x * x + y * y < 0.36f;
  }
}

/* A layer on task `task`'s CPU (under mpirun; a process on its own has
 * only its own). */
static ct_output dense(ct_graph *g, ct_output x, int64_t in, int64_t out, const char *name,
                       int relu, int task) {
  char device[64] = "";
  if (ct_cluster_size() > 1) snprintf(device, sizeof device, "/job:worker/task:%d/cpu:0", task);
  ct_graph_push_device(g, device);
  ct_graph_push_name_scope(g, name);
  ct_graph_push_variable_scope(g, name);
  ct_initializer glorot = {CT_INIT_GLOROT_UNIFORM, 0.0f}, zeros = {CT_INIT_ZEROS, 0.0f};
  ct_output w = ct_variable(g, "weights", ct_shape_of(2, in, out), glorot, 1);
  ct_output b = ct_variable(g, "biases", ct_shape_of(1, out), zeros, 1);
  ct_output y = ct_add(g, ct_matmul(g, x, w, 0, 0), b);
  if (relu) y = ct_relu(g, y);
  ct_graph_pop_variable_scope(g);
  ct_graph_pop_name_scope(g);
  ct_graph_pop_device(g);
  return y;
}

int main(int argc, char **argv) {
  ct_status status = CT_STATUS_INIT;
  if (ct_cluster_init(&argc, &argv, &status)) {
    fprintf(stderr, "%s\n", status.message);
    return 1;
  }
  const int last_task = ct_cluster_size() - 1, printing = ct_cluster_rank() == 0;
  ct_graph *g = ct_graph_new();
  ct_graph_set_seed(g, 7);
  ct_output points = ct_placeholder(g, "points", CT_F32, ct_shape_of(2, (int64_t)-1, (int64_t)2));
  ct_output labels = ct_placeholder(g, "labels", CT_I32, ct_shape_of(1, (int64_t)-1));
  ct_output h = dense(g, points, 2, 16, "fc1", 1, 0);
  h = dense(g, h, 16, 16, "fc2", 1, last_task > 0 ? 1 : 0);
  ct_output logits = dense(g, h, 16, 2, "logits", 0, last_task);
  ct_output loss = ct_reduce_mean(g, ct_sparse_softmax_cross_entropy(g, logits, labels), 0, 0);
  ct_output accuracy = ct_accuracy(g, logits, labels);
  ct_optimizer_config adam;
  ct_optimizer_config_defaults(&adam, CT_OPTIMIZER_ADAM);
  ct_train_op train;
  ct_optimizer_minimize(g, &adam, loss, &train);
  if (!ct_ok(ct_graph_status(g))) {
    fprintf(stderr, "building the model failed: %s\n", ct_graph_status(g)->message);
    return 1;
  }

  ct_session *session = ct_session_new(g, NULL, &status);
  if (session == NULL) {
    fprintf(stderr, "%s\n", status.message);
    return 1;
  }
  float point_data[2 * BATCH];
  int32_t label_data[BATCH];
  ct_tensor point_tensor = {CT_F32, ct_shape_of(2, (int64_t)BATCH, (int64_t)2), point_data, 0};
  ct_tensor label_tensor = {CT_I32, ct_shape_of(1, (int64_t)BATCH), label_data, 0};
  uint64_t rng = 1;
  double final_accuracy = 0;
  for (int step = 1; step <= STEPS; ++step) {
    make_batch(&rng, point_data, label_data);
    float lr = ct_optimizer_learning_rate(&adam, 0.01, step);
    ct_tensor lr_tensor = {CT_F32, ct_shape_of(0), &lr, 0};
    ct_feed feeds[3] = {{points, &point_tensor}, {labels, &label_tensor},
                        {train.learning_rate, &lr_tensor}};
    ct_output fetches[2] = {loss, accuracy};
    ct_tensor *results[2];
    if (ct_session_run(session, feeds, 3, fetches, 2, &train.op, 1, results, &status)) {
      fprintf(stderr, "step %d failed: %s\n", step, status.message);
      return 1;
    }
    final_accuracy = ct_tensor_f32(results[1])[0];
    if (step % 100 == 0 && printing)
      printf("step %4d  loss %.4f  accuracy %.3f\n", step, ct_tensor_f32(results[0])[0],
             final_accuracy);
    ct_tensor_free(results[0]);
    ct_tensor_free(results[1]);
  }
  ct_session_free(session);
  ct_graph_free(g);
  ct_cluster_finalize();
  return final_accuracy > 0.9 ? 0 : 1;
}
