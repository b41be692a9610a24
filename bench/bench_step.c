/* Times training steps (forward, backward, momentum update) of a zoo model
 * on random data and prints one JSON line. bench/bench_train.py runs it
 * beside PyTorch doing the same work.
 *
 *   bench_step --model fmnist_cnn --batch 128 --threads 2 --steps 30 --warmup 5
 *   bench_step --profile ...   also prints, on stderr, where a step's time goes
 *                              (kernel time per op type, from the run timeline)
 *   bench_step --towers 2 --update replicated|parameter_server ...
 *                              the global batch split over towers on /cpu:0 ..
 *                              /cpu:N-1, each with --threads threads
 *   bench_step --precision bf16 --conv-algorithm direct ...
 *                              train.precision and train.conv_algorithm
 * Each model trains on images of the shape its dataset has: 28x28x1 for mlp
 * and fmnist_cnn, 24x24x3 crops for cifar10_cnn, 32x32x3 for the ResNets.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctower/ctower.h"
#include "trainer/training_graph.h"

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Peak resident set size of this process (VmHWM), in MiB. */
static double peak_rss_mb(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  double kb = 0;
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, "VmHWM:", 6) == 0) kb = atof(line + 6);
  if (f) fclose(f);
  return kb / 1024.0;
}

static int compare_doubles(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Sums kernel time per op type over `runs` traced steps and prints the
 * table, largest first, in milliseconds per step. */
static void print_profile(ct_session *s, const ct_feed *feeds, int n_feeds, ct_output loss,
                          ct_node *step, int runs) {
  enum { MAX_OPS = 128 };
  const char *ops[MAX_OPS];
  double total[MAX_OPS];
  int n_ops = 0;
  double step_sum = 0, busy[16] = {0}, all_reduce = 0, copies = 0;
  ct_run_metadata *md = ct_run_metadata_new();
  ct_status st = CT_STATUS_INIT;
  for (int r = 0; r < runs; ++r) {
    ct_tensor *out = NULL;
    double t0 = now_seconds();
    if (ct_session_run_traced(s, feeds, n_feeds, &loss, 1, &step, 1, &out, md, &st)) break;
    step_sum += now_seconds() - t0;
    ct_tensor_free(out);
    for (int i = 0; i < ct_run_metadata_event_count(md); ++i) {
      ct_timeline_event e = ct_run_metadata_event(md, i);
      int k = 0;
      while (k < n_ops && strcmp(ops[k], e.op) != 0) ++k;
      if (k == n_ops && n_ops < MAX_OPS) ops[n_ops] = e.op, total[n_ops++] = 0;
      double ms = (e.end_us - e.start_us) / 1e3;
      if (k < n_ops) total[k] += ms;
      if (e.device >= 0 && e.device < 16) busy[e.device] += ms;
      if (strncmp(e.node, "all_reduce/", 11) == 0) all_reduce += ms;
      if (strcmp(e.op, "_Copy") == 0) copies += ms;
    }
  }
  for (int i = 0; i < n_ops; ++i) /* selection sort, largest first */
    for (int j = i + 1; j < n_ops; ++j)
      if (total[j] > total[i]) {
        double t = total[i];
        const char *o = ops[i];
        total[i] = total[j], ops[i] = ops[j];
        total[j] = t, ops[j] = o;
      }
  double kernels = 0;
  for (int i = 0; i < n_ops; ++i) kernels += total[i];
  fprintf(stderr, "%-36s %10s %7s\n", "op", "ms/step", "share");
  for (int i = 0; i < n_ops; ++i)
    fprintf(stderr, "%-36s %10.2f %6.1f%%\n", ops[i], total[i] / runs, 100 * total[i] / kernels);
  fprintf(stderr, "%-36s %10.2f\n%-36s %10.2f\n", "all kernels", kernels / runs,
          "whole step (wall)", step_sum * 1e3 / runs);
  const double wall = step_sum * 1e3 / runs;
  for (int d = 0; d < ct_session_device_count(s) && d < 16; ++d)
    fprintf(stderr, "device %d: busy %.2f ms/step, waiting %.2f ms/step (%.1f%%)\n", d,
            busy[d] / runs, wall - busy[d] / runs, 100 * (wall - busy[d] / runs) / wall);
  fprintf(stderr, "all-reduce additions %.2f ms/step (%.1f%% of the wall), copies between "
                  "devices %.2f ms/step\n",
          all_reduce / runs, 100 * all_reduce / runs / wall, copies / runs);
  ct_run_metadata_free(md);
}

static void usage(void) {
  fprintf(stderr,
          "usage: bench_step [--model NAME] [--batch N] [--threads T] [--steps N] [--warmup N] "
          "[--towers N] [--update replicated|parameter_server] [--precision fp32|bf16] "
          "[--conv-algorithm auto|direct|winograd] [--profile]\n");
}

/* The image shape (height, width, channels) a zoo model is trained on. */
static void model_input_shape(const char *model, int64_t shape[3]) {
  const int cifar_crop = strcmp(model, "cifar10_cnn") == 0;
  const int cifar = cifar_crop || strncmp(model, "resnet", 6) == 0;
  shape[0] = shape[1] = cifar_crop ? 24 : cifar ? 32 : 28;
  shape[2] = cifar ? 3 : 1;
}

int main(int argc, char **argv) {
  const char *model_name = "fmnist_cnn";
  int64_t batch = 128;
  int threads = 1, steps = 30, warmup = 5, profile = 0, n_towers = 1;
  const char *update = "replicated", *precision = "fp32", *conv_algorithm = "auto";
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--profile") == 0) {
      profile = 1;
      continue;
    }
    const char *value = i + 1 < argc ? argv[i + 1] : NULL;
    if (value == NULL) {
      usage();
      return 2;
    }
    if (strcmp(argv[i], "--model") == 0) model_name = value;
    else if (strcmp(argv[i], "--batch") == 0) batch = atoll(value);
    else if (strcmp(argv[i], "--threads") == 0) threads = atoi(value);
    else if (strcmp(argv[i], "--steps") == 0) steps = atoi(value);
    else if (strcmp(argv[i], "--warmup") == 0) warmup = atoi(value);
    else if (strcmp(argv[i], "--towers") == 0) n_towers = atoi(value);
    else if (strcmp(argv[i], "--update") == 0) update = value;
    else if (strcmp(argv[i], "--precision") == 0) precision = value;
    else if (strcmp(argv[i], "--conv-algorithm") == 0) conv_algorithm = value;
    else {
      usage();
      return 2;
    }
    ++i;
  }
  const ct_model_def *model = ct_model_find(model_name);
  if (model == NULL || batch < 1 || threads < 1 || steps < 1 || warmup < 0 || n_towers < 1 ||
      n_towers > 16) {
    usage();
    return 2;
  }
  ct_status st = CT_STATUS_INIT;
  ct_optimizer_config oc;
  ct_optimizer_config_defaults(&oc, CT_OPTIMIZER_MOMENTUM);
  ct_training_graph tg;
  ct_tower_options towers;
  ct_tower_options_defaults(&towers);
  towers.n_towers = n_towers;
  for (int k = 0; k < n_towers; ++k) snprintf(towers.devices[k], sizeof towers.devices[k], "/cpu:%d", k);
  towers.variable_update = strcmp(update, "parameter_server") == 0
                               ? CT_VARIABLE_UPDATE_PARAMETER_SERVER
                               : CT_VARIABLE_UPDATE_REPLICATED;
  int64_t in[3];
  model_input_shape(model_name, in);
  if (ct_training_graph_build(&tg, model, in[0], in[1], in[2], 10, 1, &towers, &oc, &st)) {
    fprintf(stderr, "bench_step: %s\n", st.message);
    return 1;
  }
  ct_session_options options;
  ct_session_options_defaults(&options);
  options.device_count_cpu = n_towers;
  options.intra_op_parallelism_threads = threads * n_towers;
  options.precision = strcmp(precision, "bf16") == 0 ? CT_PRECISION_BF16 : CT_PRECISION_FP32;
  options.conv_algorithm = strcmp(conv_algorithm, "direct") == 0     ? CT_CONV_DIRECT
                           : strcmp(conv_algorithm, "winograd") == 0 ? CT_CONV_WINOGRAD
                                                                      : CT_CONV_AUTO;
  ct_session *s = ct_session_new(tg.graph, &options, &st);
  ct_shape is = ct_shape_of(4, batch, in[0], in[1], in[2]);
  ct_shape ls = ct_shape_of(1, batch);
  ct_tensor *images = ct_tensor_new(CT_F32, &is, &st);
  ct_tensor *labels = ct_tensor_new(CT_I32, &ls, &st);
  if (!ct_ok(&st)) {
    fprintf(stderr, "bench_step: %s\n", st.message);
    return 1;
  }
  uint64_t rng = 12345;
  for (int64_t i = 0; i < ct_tensor_elements(images); ++i) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    ct_tensor_f32(images)[i] = (float)(rng >> 40) / 16777216.0f;
  }
  for (int64_t i = 0; i < batch; ++i) ct_tensor_i32(labels)[i] = (int32_t)(i % 10);
  float lr = 0.01f;
  ct_tensor lr_tensor = {CT_F32, ct_shape_of(0), &lr, 0};
  static ct_tower_feeds step_feeds;
  float *weights = calloc((size_t)(batch + n_towers), sizeof *weights);
  int n_feeds = ct_classifier_make_feeds(&tg.train, images, labels, batch, NULL, NULL, &step_feeds, weights);
  ct_feed *feeds = step_feeds.feeds;
  feeds[n_feeds++] = (ct_feed){tg.train.update.learning_rate, &lr_tensor};
  double *times = calloc((size_t)steps, sizeof *times);
  double rss_before = peak_rss_mb();
  for (int i = 0; i < warmup + steps; ++i) {
    double t0 = now_seconds();
    ct_tensor *loss = NULL;
    ct_session_set_step(s, (uint64_t)i);
    if (ct_session_run(s, feeds, n_feeds, &tg.train.towers.loss, 1, &tg.train.step, 1, &loss, &st)) {
      fprintf(stderr, "bench_step: %s\n", st.message);
      return 1;
    }
    ct_tensor_free(loss);
    if (i >= warmup) times[i - warmup] = now_seconds() - t0;
  }
  double rss_growth = peak_rss_mb() - rss_before;
  qsort(times, (size_t)steps, sizeof *times, compare_doubles);
  double median = times[steps / 2];
  size_t peak = 0;
  ct_session_memory(s, NULL, &peak);
  printf("{\"framework\":\"ctower\",\"model\":\"%s\",\"batch\":%lld,\"threads\":%d,"
         "\"towers\":%d,\"update\":\"%s\",\"images_per_sec\":%.1f,\"step_ms_median\":%.3f,\"peak_rss_growth_mb\":%.1f,"
         "\"allocator_peak_mb\":%.1f}\n",
         model_name, (long long)batch, threads, n_towers, update, (double)batch / median, median * 1e3, rss_growth,
         (double)peak / 1048576.0);
  if (profile) print_profile(s, feeds, n_feeds, tg.train.towers.loss, tg.train.step, 10);
  free(weights);
  free(times);
  ct_tensor_free(images);
  ct_tensor_free(labels);
  ct_session_free(s);
  ct_training_graph_free(&tg);
  return 0;
}
