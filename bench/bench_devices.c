/* Two independent fmnist_cnn training steps (forward, backward, momentum
 * update) at batch 128: on /cpu:0 and /cpu:1 with one core each, against
 * both on one single-core device. Prints the median step times and their
 * ratio (the devices issue asks for <= 0.55). Run on an idle machine.
 *
 *   bench_devices [--steps N] [--warmup N] [--model fmnist_cnn|mlp]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctower/ctower.h"

enum { BATCH = 128 };

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int compare_doubles(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

typedef struct tower {
  ct_output images, labels;
  ct_train_op train;
} tower;

/* Median seconds per run of both towers' steps; devices[i] holds tower i. */
static double time_two_towers(const ct_model_def *model, const char *const devices[2],
                              int n_cpu_devices, int steps, int warmup) {
  ct_graph *g = ct_graph_new();
  ct_graph_set_seed(g, 1);
  tower towers[2];
  ct_optimizer_config oc;
  ct_optimizer_config_defaults(&oc, CT_OPTIMIZER_MOMENTUM);
  for (int t = 0; t < 2; ++t) {
    char scope[16];
    snprintf(scope, sizeof scope, "tower_%d", t);
    ct_graph_push_device(g, devices[t]);
    ct_graph_push_name_scope(g, scope);
    ct_graph_push_variable_scope(g, scope); /* independent models: their own variables */
    towers[t].images = ct_placeholder(g, "images", CT_F32,
                                      ct_shape_of(4, (int64_t)BATCH, (int64_t)28, (int64_t)28, (int64_t)1));
    towers[t].labels = ct_placeholder(g, "labels", CT_I32, ct_shape_of(1, (int64_t)BATCH));
    ct_output logits = model->build(g, towers[t].images, 10, 1);
    ct_output loss = ct_reduce_mean(g, ct_sparse_softmax_cross_entropy(g, logits, towers[t].labels), 0, 0);
    ct_graph_pop_variable_scope(g);
    ct_graph_pop_name_scope(g);
    ct_optimizer_minimize(g, &oc, loss, &towers[t].train);
    ct_graph_pop_device(g);
  }
  ct_status st = CT_STATUS_INIT;
  ct_session_options options;
  ct_session_options_defaults(&options);
  options.device_count_cpu = n_cpu_devices;
  options.intra_op_parallelism_threads = n_cpu_devices; /* one core per device */
  options.allow_soft_placement = 0;
  ct_session *s = ct_session_new(g, &options, &st);
  if (s == NULL) {
    fprintf(stderr, "bench_devices: %s\n", st.message);
    exit(1);
  }
  ct_shape is = ct_shape_of(4, (int64_t)BATCH, (int64_t)28, (int64_t)28, (int64_t)1);
  ct_shape ls = ct_shape_of(1, (int64_t)BATCH);
  ct_tensor *images = ct_tensor_new(CT_F32, &is, &st), *labels = ct_tensor_new(CT_I32, &ls, &st);
  for (int64_t i = 0; i < ct_tensor_elements(images); ++i)
    ct_tensor_f32(images)[i] = (float)((i * 2654435761u) % 1000) / 1000.0f;
  for (int i = 0; i < BATCH; ++i) ct_tensor_i32(labels)[i] = i % 10;
  float lr = 0.01f;
  ct_tensor lrt = {CT_F32, ct_shape_of(0), &lr, 0};
  ct_feed feeds[6] = {{towers[0].images, images}, {towers[0].labels, labels},
                      {towers[0].train.learning_rate, &lrt}, {towers[1].images, images},
                      {towers[1].labels, labels}, {towers[1].train.learning_rate, &lrt}};
  ct_node *targets[2] = {towers[0].train.op, towers[1].train.op};
  double *times = calloc((size_t)steps, sizeof *times);
  for (int i = 0; i < warmup + steps; ++i) {
    double t0 = now_seconds();
    if (ct_session_run(s, feeds, 6, NULL, 0, targets, 2, NULL, &st)) {
      fprintf(stderr, "bench_devices: %s\n", st.message);
      exit(1);
    }
    if (i >= warmup) times[i - warmup] = now_seconds() - t0;
  }
  qsort(times, (size_t)steps, sizeof *times, compare_doubles);
  double median = times[steps / 2];
  free(times);
  ct_tensor_free(images);
  ct_tensor_free(labels);
  ct_session_free(s);
  ct_graph_free(g);
  return median;
}

int main(int argc, char **argv) {
  int steps = 20, warmup = 3;
  const char *model_name = "fmnist_cnn";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--steps") == 0) steps = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--warmup") == 0) warmup = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--model") == 0) model_name = argv[i + 1];
  }
  const ct_model_def *model = ct_model_find(model_name);
  if (model == NULL || steps < 1 || warmup < 0) {
    fprintf(stderr, "usage: bench_devices [--steps N] [--warmup N] [--model fmnist_cnn|mlp]\n");
    return 2;
  }
  const char *two[2] = {"/cpu:0", "/cpu:1"}, *one[2] = {"/cpu:0", "/cpu:0"};
  double t_one = time_two_towers(model, one, 1, steps, warmup);
  double t_two = time_two_towers(model, two, 2, steps, warmup);
  printf("{\"model\":\"%s\",\"batch\":%d,\"one_device_ms\":%.1f,\"two_devices_ms\":%.1f,"
         "\"ratio\":%.3f}\n",
         model_name, BATCH, t_one * 1e3, t_two * 1e3, t_two / t_one);
  return 0;
}
