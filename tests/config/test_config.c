/* ct_config: defaults, loading, errors with file:line, overrides, round trip. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/yaml_tree.h"
#include "ctower/config.h"
#include "test_support.h"

static char *g_dir;       /* one temporary directory for the whole run */
static char g_path[1024]; /* g_dir/cfg.yaml */

static int group_setup(void **state) {
  (void)state;
  g_dir = ct_test_tmpdir();
  if (g_dir == NULL) return -1;
  snprintf(g_path, sizeof g_path, "%s/cfg.yaml", g_dir);
  return 0;
}

static int group_teardown(void **state) {
  (void)state;
  unlink(g_path);
  rmdir(g_dir);
  free(g_dir);
  return 0;
}

/* Writes text to g_path and loads it over the defaults. */
static int load_text(ct_config *config, const char *text, ct_status *status) {
  assert_int_equal(ct_test_write_file(g_path, text, strlen(text)), 0);
  ct_config_defaults(config);
  ct_status_clear(status);
  return ct_config_load(config, g_path, status);
}

/* Fails unless message holds every needle (NULL-terminated). */
static void assert_message_has(const char *message, const char *const *needles) {
  for (const char *const *n = needles; *n; ++n) {
    if (strstr(message, *n) == NULL) {
      print_error("message \"%s\" lacks \"%s\"\n", message, *n);
      fail();
    }
  }
}

/* The ResNet recipe's decays: at epochs 82 and 123, by 0.1 each. */
static void test_piecewise_schedule(void **state) {
  (void)state;
  ct_config c;
  ct_status st = CT_STATUS_INIT;
  assert_int_equal(load_text(&c,
                             "train:\n  optimizer: {learning_rate: 0.1}\n"
                             "  schedule:\n    name: piecewise\n    boundaries: [82, 123]\n",
                             &st),
                   0);
  assert_int_equal(c.train.schedule.n_boundaries, 2);
  ct_trainer_options o;
  ct_config_trainer_options(&c, &o);
  assert_int_equal(o.train.schedule.kind, CT_SCHEDULE_PIECEWISE);
  assert_float_equal(ct_schedule_rate(&o.train.schedule, 81.9), 0.1, 1e-12);
  assert_float_equal(ct_schedule_rate(&o.train.schedule, 82.0), 0.01, 1e-12);
  assert_float_equal(ct_schedule_rate(&o.train.schedule, 163.0), 0.001, 1e-12);
}

/* Every YAML file of examples/ loads and names a model the zoo has, or
 * gives its own (a layer list, a model library). */
static void test_examples_load(void **state) {
  (void)state;
  const char *source = getenv("CT_SOURCE_DIR");
  if (source == NULL) skip();
  char command[1200];
  snprintf(command, sizeof command, "ls %s/examples/*.yaml", source);
  FILE *list = popen(command, "r");
  assert_non_null(list);
  char path[1024];
  int n = 0;
  while (fgets(path, sizeof path, list)) {
    path[strcspn(path, "\n")] = '\0';
    ct_config c;
    ct_status st = CT_STATUS_INIT;
    ct_config_defaults(&c);
    if (ct_config_load(&c, path, &st)) fail_msg("%s: %s", path, st.message);
    assert_true(ct_model_find(c.model.name) || c.model.layers.n > 0 || c.model.library[0]);
    printf("  %s: model %s (%d layers listed), dataset %s\n", strrchr(path, '/') + 1,
           c.model.name, c.model.layers.n, c.dataset.name);
    ++n;
  }
  pclose(list);
  assert_true(n > 0);
}

static void test_defaults(void **state) {
  (void)state;
  ct_config c;
  ct_config_defaults(&c);
  assert_string_equal(c.source, "");
  assert_string_equal(c.model.name, "fmnist_cnn");
  assert_string_equal(c.dataset.name, "fashion_mnist");
  assert_string_equal(c.dataset.path, "/usr/share/datasets/fashion-mnist");
  assert_int_equal(c.dataset.batch_size, 128);
  assert_int_equal(c.dataset.shuffle, 1);
  assert_int_equal(c.train.epochs, 10);
  assert_int_equal(c.train.max_steps, 0);
  assert_int_equal(c.train.seed, 42);
  assert_string_equal(c.train.optimizer.name, "momentum");
  assert_true(c.train.optimizer.learning_rate == 0.01);
  assert_true(c.train.optimizer.momentum == 0.9);
  assert_int_equal(c.train.optimizer.nesterov, 0);
  assert_true(c.train.optimizer.weight_decay == 0.0);
  assert_true(c.train.optimizer.beta1 == 0.9);
  assert_true(c.train.optimizer.beta2 == 0.999);
  assert_true(c.train.optimizer.epsilon == 1e-8);
  assert_string_equal(c.train.schedule.name, "constant");
  assert_int_equal(c.train.schedule.step_epochs, 3);
  assert_true(c.train.schedule.gamma == 0.1);
  assert_true(c.train.schedule.min_learning_rate == 0.0);
  assert_int_equal(c.train.schedule.warmup_epochs, 0);
  assert_string_equal(c.train.checkpoint, "runs/fmnist_cnn/model.safetensors");
  assert_int_equal(c.devices.n_towers_listed, 1);
  assert_string_equal(c.devices.towers[0], "/cpu:0");
  assert_int_equal(c.devices.n_towers, 0);
  assert_int_equal(c.devices.n_gpus, 0);
  assert_string_equal(c.devices.variable_update, "replicated");
  assert_string_equal(c.devices.ps_device, "/cpu:0");
  assert_string_equal(c.devices.all_reduce, "auto");
  assert_string_equal(c.devices.split, "even");
  assert_int_equal(c.session.log_device_placement, 0);
  assert_int_equal(c.session.allow_soft_placement, 1);
  assert_int_equal(c.session.device_count_cpu, 1);
  assert_int_equal(c.session.device_count_gpu, -1);
  assert_int_equal(c.session.intra_op_parallelism_threads, 0);
  assert_int_equal(c.session.inter_op_parallelism_threads, 0);
  assert_int_equal(c.session.memory_limit_mb_cpu, 0);
  assert_int_equal(c.session.memory_limit_mb_gpu, 0);
  assert_int_equal(c.session.gpu_options.allow_growth, 0);
  assert_true(c.session.gpu_options.per_process_gpu_memory_fraction == 1.0);
  assert_string_equal(c.session.gpu_options.visible_device_list, "");
  assert_int_equal(c.session.gpu_options.n_virtual_devices, 0);
}

static const char k_full[] =
    "# every key, none at its default\n"
    "model:\n"
    "  name: mlp\n"
    "dataset:\n"
    "  name: mnist\n"
    "  path: /data/mnist\n"
    "  batch_size: 256\n"
    "  shuffle: no\n"
    "train:\n"
    "  epochs: 3\n"
    "  max_steps: 100\n"
    "  seed: -7\n"
    "  optimizer:\n"
    "    name: adam\n"
    "    learning_rate: 1e-3\n"
    "    momentum: 0.5\n"
    "    nesterov: yes\n"
    "    weight_decay: 5e-4\n"
    "    beta1: 0.8\n"
    "    beta2: 0.99\n"
    "    epsilon: 1e-7\n"
    "  schedule:\n"
    "    name: step\n"
    "    step_epochs: 2\n"
    "    gamma: 0.5\n"
    "    min_learning_rate: 1e-5\n"
    "    warmup_epochs: 1\n"
    "  checkpoint: \"\"\n"
    "devices:\n"
    "  towers:\n"
    "    - /cpu:0\n"
    "    - /gpu:1\n"
    "  n_towers: 2\n"
    "  n_gpus: 1\n"
    "  variable_update: parameter_server\n"
    "  ps_device: /gpu:0\n"
    "  all_reduce: ring\n"
    "  split: auto\n"
    "session:\n"
    "  log_device_placement: true\n"
    "  allow_soft_placement: False\n"
    "  device_count: {cpu: 2, Gpu: 3}\n"
    "  intra_op_parallelism_threads: 4\n"
    "  inter_op_parallelism_threads: 2\n"
    "  memory_limit_mb:\n"
    "    CPU: 512\n"
    "    GPU: 1024\n"
    "  gpu_options:\n"
    "    allow_growth: true\n"
    "    per_process_gpu_memory_fraction: 0.5\n"
    "    visible_device_list: \"1,0\"\n"
    "    virtual_devices: [4096, 2048]\n";

static void test_full_file(void **state) {
  (void)state;
  ct_config c;
  ct_status st = CT_STATUS_INIT;
  assert_int_equal(load_text(&c, k_full, &st), 0);
  assert_status_ok(&st);
  assert_string_equal(c.source, g_path);
  assert_string_equal(c.model.name, "mlp");
  assert_string_equal(c.dataset.name, "mnist");
  assert_string_equal(c.dataset.path, "/data/mnist");
  assert_int_equal(c.dataset.batch_size, 256);
  assert_int_equal(c.dataset.shuffle, 0);
  assert_int_equal(c.train.epochs, 3);
  assert_int_equal(c.train.max_steps, 100);
  assert_int_equal(c.train.seed, -7);
  assert_string_equal(c.train.optimizer.name, "adam");
  assert_true(c.train.optimizer.learning_rate == 1e-3);
  assert_true(c.train.optimizer.momentum == 0.5);
  assert_int_equal(c.train.optimizer.nesterov, 1);
  assert_true(c.train.optimizer.weight_decay == 5e-4);
  assert_true(c.train.optimizer.beta1 == 0.8);
  assert_true(c.train.optimizer.beta2 == 0.99);
  assert_true(c.train.optimizer.epsilon == 1e-7);
  assert_string_equal(c.train.schedule.name, "step");
  assert_int_equal(c.train.schedule.step_epochs, 2);
  assert_true(c.train.schedule.gamma == 0.5);
  assert_true(c.train.schedule.min_learning_rate == 1e-5);
  assert_int_equal(c.train.schedule.warmup_epochs, 1);
  assert_string_equal(c.train.checkpoint, "");
  assert_int_equal(c.devices.n_towers_listed, 2);
  assert_string_equal(c.devices.towers[0], "/cpu:0");
  assert_string_equal(c.devices.towers[1], "/gpu:1");
  assert_int_equal(c.devices.n_towers, 2);
  assert_int_equal(c.devices.n_gpus, 1);
  assert_string_equal(c.devices.variable_update, "parameter_server");
  assert_string_equal(c.devices.ps_device, "/gpu:0");
  assert_string_equal(c.devices.all_reduce, "ring");
  assert_string_equal(c.devices.split, "auto");
  assert_int_equal(c.session.log_device_placement, 1);
  assert_int_equal(c.session.allow_soft_placement, 0);
  assert_int_equal(c.session.device_count_cpu, 2);
  assert_int_equal(c.session.device_count_gpu, 3);
  assert_int_equal(c.session.intra_op_parallelism_threads, 4);
  assert_int_equal(c.session.inter_op_parallelism_threads, 2);
  assert_int_equal(c.session.memory_limit_mb_cpu, 512);
  assert_int_equal(c.session.memory_limit_mb_gpu, 1024);
  assert_int_equal(c.session.gpu_options.allow_growth, 1);
  assert_true(c.session.gpu_options.per_process_gpu_memory_fraction == 0.5);
  assert_string_equal(c.session.gpu_options.visible_device_list, "1,0");
  assert_int_equal(c.session.gpu_options.n_virtual_devices, 2);
  assert_int_equal(c.session.gpu_options.virtual_devices_mb[0], 4096);
  assert_int_equal(c.session.gpu_options.virtual_devices_mb[1], 2048);
}

static void test_partial_and_empty_files(void **state) {
  (void)state;
  ct_config c, d;
  ct_status st = CT_STATUS_INIT;
  ct_config_defaults(&d);

  /* An empty file, a file of comments, and sections left empty: all defaults. */
  const char *const texts[] = {"", "# nothing here\n", "---\n",
                               "train:\nsession:\n  gpu_options:\n"};
  for (size_t i = 0; i < sizeof texts / sizeof texts[0]; ++i) {
    assert_int_equal(load_text(&c, texts[i], &st), 0);
    assert_status_ok(&st);
    assert_string_equal(c.source, g_path);
    memcpy(c.source, d.source, sizeof c.source);
    assert_memory_equal(&c, &d, sizeof c);
  }

  /* Only what differs; the rest keeps its value. */
  assert_int_equal(load_text(&c, "train:\n  optimizer: {learning_rate: 0.1}\n", &st), 0);
  assert_true(c.train.optimizer.learning_rate == 0.1);
  assert_string_equal(c.train.optimizer.name, "momentum");
  assert_int_equal(c.train.epochs, 10);

  /* A map entry left out keeps its value. */
  assert_int_equal(load_text(&c, "session:\n  device_count: {GPU: 0}\n", &st), 0);
  assert_int_equal(c.session.device_count_cpu, 1);
  assert_int_equal(c.session.device_count_gpu, 0);

  /* Anchors and aliases work. */
  assert_int_equal(load_text(&c, "devices:\n  ps_device: &d /gpu:0\n  towers: [*d, *d]\n", &st), 0);
  assert_status_ok(&st);
  assert_int_equal(c.devices.n_towers_listed, 2);
  assert_string_equal(c.devices.towers[1], "/gpu:0");

  /* Dotted keys work in a file as they do in overrides. */
  assert_int_equal(load_text(&c, "train.optimizer.name: sgd\n", &st), 0);
  assert_string_equal(c.train.optimizer.name, "sgd");
}

static void test_missing_file(void **state) {
  (void)state;
  ct_config c;
  ct_status st = CT_STATUS_INIT;
  ct_config_defaults(&c);
  assert_int_not_equal(ct_config_load(&c, "no/such/x.yaml", &st), 0);
  assert_int_equal(st.code, CT_NOT_FOUND);
  const char *const needles[] = {"config file 'no/such/x.yaml' not found", NULL};
  assert_message_has(st.message, needles);

  ct_status_clear(&st);
  assert_int_not_equal(ct_config_load(&c, g_dir, &st), 0);
  assert_int_equal(st.code, CT_INVALID_ARGUMENT);
  assert_non_null(strstr(st.message, "directory"));
}

/* Aliases are bounded in the bytes they copy, not only in nodes: a 64 KB
 * text used 1,100 times would be 70 MB; refused before it is, naming the cause. */
static void test_aliases_of_long_texts_are_bounded(void **state) {
  (void)state;
  enum { TEXT = 64 * 1024, USES = 1100 };
  const char head[] = "model:\n  name: &long ";
  char *yaml = malloc(sizeof head + TEXT + 64 + USES * 8);
  assert_non_null(yaml);
  char *w = yaml + sprintf(yaml, "%s", head);
  memset(w, 'x', TEXT);
  w += TEXT;
  w += sprintf(w, "\nextra: [");
  for (int i = 0; i < USES; ++i) w += sprintf(w, "%s*long", i ? ", " : "");
  sprintf(w, "]\n");
  ct_config c;
  ct_status st = CT_STATUS_INIT;
  assert_int_not_equal(load_text(&c, yaml, &st), 0);
  const char *const needles[] = {"cfg.yaml:3:", "more than 64 MiB after expanding aliases", NULL};
  assert_message_has(st.message, needles);
  free(yaml);
}

typedef struct error_case {
  const char *yaml;
  const char *needles[4];
} error_case;

/* Every bad file gives INVALID_ARGUMENT naming cfg.yaml:line and the key. */
static const error_case k_file_errors[] = {
    /* malformed YAML: file:line:column and libyaml's words */
    {"train:\n  epochs: [1, 2\n",
     {"cfg.yaml:3:1: malformed YAML: ", "did not find expected", NULL}},
    {"train:\n  epochs: 1\n bad: 2\n", {"cfg.yaml:3:", "malformed YAML", NULL}},
    {"a: 1\n---\nb: 2\n", {"cfg.yaml:2:", "malformed YAML", "second", NULL}},
    {"x: *nothing\n", {"cfg.yaml:1:", "malformed YAML", "alias", NULL}},
    {"model:\n  name: \xff\n", {"cfg.yaml:2:9: malformed YAML", "UTF-8", NULL}},
    /* a tag would change a value's type behind the schema's back */
    {"train:\n  epochs: !!str 3\n",
     {"cfg.yaml:2:", "YAML tags such as 'tag:yaml.org,2002:str'", NULL}},
    {"train: !!map\n  epochs: 3\n", {"cfg.yaml:1:", "YAML tags", NULL}},
    /* one key given twice, dotted and nested, or a device type in two spellings */
    {"train.epochs: 1\ntrain:\n  epochs: 2\n",
     {"cfg.yaml:3: 'train.epochs' is given twice (first on line 1); keep one", NULL}},
    {"session:\n  device_count: {CPU: 2, cpu: 3}\n",
     {"'session.device_count' gives CPU twice (as 'cpu', and before on line 2)", NULL}},
    /* [height, width, channels] and nothing else */
    {"dataset:\n  image_shape: []\n",
     {"'dataset.image_shape' needs exactly 3 entries, got 0", NULL}},
    {"dataset:\n  image_shape: [28, 28]\n", {"needs exactly 3 entries, got 2", NULL}},
    {"dataset:\n  path: \"\"\n", {"'dataset.path' is empty", NULL}},
    /* unknown keys, with suggestions */
    {"train:\n  epochs: 1\n  optimzer:\n    name: sgd\n",
     {"cfg.yaml:3: unknown key 'train.optimzer'", "did you mean 'train.optimizer'?",
      "keys under 'train': epochs, max_steps, seed, optimizer, schedule, checkpoint", NULL}},
    {"trian:\n  epochs: 1\n",
     {"cfg.yaml:1: unknown key 'trian'", "did you mean 'train'?",
      "top-level keys: model, dataset, train, devices, session", NULL}},
    {"train:\n  batch_size: 3\n",
     {"cfg.yaml:2: unknown key 'train.batch_size'", "did you mean 'dataset.batch_size'?", NULL}},
    {"model:\n  colour: red\n", {"cfg.yaml:2: unknown key 'model.colour'", NULL}},
    {"session:\n  device_count: {CPU: 1, TPU: 2}\n",
     {"cfg.yaml:2:", "'session.device_count'", "'TPU'", NULL}},
    {"train:\n  epochs: 1\n  epochs: 2\n", {"cfg.yaml:3:", "'train.epochs'", "twice", NULL}},
    /* wrong types */
    {"\n\ntrain:\n  epochs: ten\n",
     {"cfg.yaml:4: 'train.epochs' must be an integer, got 'ten'", NULL}},
    {"train:\n  epochs: 2.5\n", {"cfg.yaml:2:", "'train.epochs' must be an integer", NULL}},
    {"train:\n  epochs:\n", {"cfg.yaml:2:", "'train.epochs' must be an integer", "empty", NULL}},
    {"train:\n  optimizer:\n    learning_rate: fast\n",
     {"cfg.yaml:3: 'train.optimizer.learning_rate' must be a number, got 'fast'", NULL}},
    {"dataset:\n  shuffle: maybe\n",
     {"cfg.yaml:2: 'dataset.shuffle' must be true or false, got 'maybe'", NULL}},
    {"train:\n  epochs: {a: 1}\n", {"cfg.yaml:2:", "'train.epochs'", "got a mapping", NULL}},
    {"model:\n  name: [mlp]\n", {"cfg.yaml:2:", "'model.name'", "got a list", NULL}},
    {"train: 5\n", {"cfg.yaml:1:", "'train' must be a mapping", "got '5'", NULL}},
    {"train:\n  optimizer: adam\n",
     {"cfg.yaml:2:", "'train.optimizer' must be a mapping", "got 'adam'", NULL}},
    {"- a\n- b\n", {"cfg.yaml:1:", "must be a mapping", "got a list", NULL}},
    {"just a string\n", {"cfg.yaml:1:", "must be a mapping", NULL}},
    {"devices:\n  towers: /cpu:0\n", {"cfg.yaml:2:", "'devices.towers'", "list", NULL}},
    {"devices:\n  towers:\n    - /cpu:0\n    - cpu1\n",
     {"cfg.yaml:4:", "'devices.towers[1]'", "'cpu1'", NULL}},
    {"session:\n  gpu_options:\n    virtual_devices: [1024, big]\n",
     {"cfg.yaml:3:", "'session.gpu_options.virtual_devices[1]'", "'big'", NULL}},
    {"session:\n  device_count: 2\n", {"cfg.yaml:2:", "'session.device_count'", NULL}},
    {"session:\n  gpu_options:\n    visible_device_list: a,b\n",
     {"cfg.yaml:3:", "'session.gpu_options.visible_device_list'", NULL}},
    {"devices:\n  ps_device: cpu0\n", {"cfg.yaml:2:", "'devices.ps_device'", "device name", NULL}},
    /* out of range or not an allowed name */
    {"train:\n  optimizer:\n    name: adamw\n",
     {"cfg.yaml:3: 'train.optimizer.name' must be one of sgd, momentum, adam, got 'adamw'", NULL}},
    {"model:\n  name: resnet50\n",
     {"cfg.yaml:2:",
      "'model.name' must be one of mlp, fmnist_cnn, cifar10_cnn, resnet20, resnet32, resnet44, "
      "resnet56, resnet110",
      NULL}},
    {"train:\n  schedule: {name: piecewise, boundaries: [82, 82]}\n",
     {"cfg.yaml:2:", "'train.schedule.boundaries' must increase, but 82 follows 82", NULL}},
    {"train:\n  schedule: {boundaries: [1, 2, 3, 4, 5, 6, 7, 8, 9]}\n",
     {"cfg.yaml:2:", "'train.schedule.boundaries' holds at most 8 entries, got 9", NULL}},
    {"train:\n  precision: fp16\n",
     {"cfg.yaml:2:", "'train.precision' must be one of fp32, tf32, bf16", NULL}},
    {"dataset:\n  image_shape: [32, 0, 3]\n",
     {"cfg.yaml:2:", "'dataset.image_shape[1]' must be >= 1", NULL}},
    {"devices:\n  n_towers: -2\n", {"cfg.yaml:2:", "'devices.n_towers'", NULL}},
    {"dataset:\n  name: imagenet\n",
     {"cfg.yaml:2:",
      "'dataset.name' must be one of fashion_mnist, mnist, synthetic, cifar10, cifar100, "
      "image_folder, tfrecord",
      NULL}},
    {"train:\n  schedule: {name: linear}\n", {"cfg.yaml:2:", "'train.schedule.name'", NULL}},
    {"devices:\n  variable_update: mirrored\n", {"cfg.yaml:2:", "'devices.variable_update'", NULL}},
    {"devices:\n  all_reduce: butterfly\n", {"cfg.yaml:2:", "'devices.all_reduce'", NULL}},
    {"devices:\n  split: random\n", {"cfg.yaml:2:", "'devices.split'", NULL}},
    {"dataset:\n  batch_size: 0\n",
     {"cfg.yaml:2: 'dataset.batch_size' must be >= 1, got '0'", NULL}},
    {"train:\n  epochs: -1\n", {"cfg.yaml:2:", "'train.epochs' must be >= 0", NULL}},
    {"train:\n  max_steps: -5\n", {"cfg.yaml:2:", "'train.max_steps' must be >= 0", NULL}},
    {"train:\n  optimizer:\n    learning_rate: 0\n",
     {"cfg.yaml:3:", "'train.optimizer.learning_rate' must be > 0", NULL}},
    {"train:\n  optimizer:\n    momentum: 1.0\n",
     {"cfg.yaml:3:", "'train.optimizer.momentum' must be in [0, 1)", NULL}},
    {"train:\n  optimizer:\n    weight_decay: -0.1\n",
     {"cfg.yaml:3:", "'train.optimizer.weight_decay' must be >= 0", NULL}},
    {"train:\n  optimizer:\n    learning_rate: .nan\n",
     {"cfg.yaml:3:", "'train.optimizer.learning_rate' must be a number", NULL}},
    {"train:\n  seed: 99999999999999999999\n", {"cfg.yaml:2:", "'train.seed'", NULL}},
    {"session:\n  gpu_options:\n    per_process_gpu_memory_fraction: 0\n",
     {"cfg.yaml:3:", "'session.gpu_options.per_process_gpu_memory_fraction' must be in (0, 1]",
      NULL}},
    {"session:\n  gpu_options:\n    per_process_gpu_memory_fraction: 1.5\n",
     {"cfg.yaml:3:", "per_process_gpu_memory_fraction", NULL}},
    {"session:\n  device_count:\n    CPU: 0\n",
     {"cfg.yaml:3:", "'session.device_count.CPU' must be >= 1, got '0'", NULL}},
    {"session:\n  device_count: {GPU: -2}\n", {"cfg.yaml:2:", "'session.device_count.GPU'", NULL}},
    {"session:\n  intra_op_parallelism_threads: -1\n",
     {"cfg.yaml:2:", "'session.intra_op_parallelism_threads' must be >= 0", NULL}},
    {"session:\n  memory_limit_mb: {CPU: -1}\n",
     {"cfg.yaml:2:", "'session.memory_limit_mb.CPU'", NULL}},
};

static void test_file_errors(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof k_file_errors / sizeof k_file_errors[0]; ++i) {
    ct_config c, before;
    ct_status st = CT_STATUS_INIT;
    ct_config_defaults(&before);
    if (load_text(&c, k_file_errors[i].yaml, &st) == 0) {
      print_error("case %zu loaded without error:\n%s", i, k_file_errors[i].yaml);
      fail();
    }
    if (st.code != CT_INVALID_ARGUMENT) {
      print_error("case %zu: code %s: %s\n", i, ct_code_name(st.code), st.message);
      fail();
    }
    assert_message_has(st.message, k_file_errors[i].needles);
    assert_null(strchr(st.message, '\n')); /* one line */
    /* A failed load leaves the config as it was. */
    assert_memory_equal(&c, &before, sizeof c);
  }
}

/* A long override is echoed cut, and the reason after it is whole. */
static void test_long_overrides_keep_the_reason(void **state) {
  (void)state;
  enum { LONG = 1500 };
  static const struct {
    const char *key, *reason;
  } cases[] = {
      {"train.epochs=", "'train.epochs' must be an integer, got 'xxxx"},
      {"train.optimizer.name=", "'train.optimizer.name' must be one of sgd, momentum, adam, got"},
      {"model.name=", "'model.name' is too long: at most 63 characters, got 1500"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    char text[LONG + 64];
    const size_t k = strlen(cases[i].key);
    memcpy(text, cases[i].key, k);
    memset(text + k, 'x', LONG);
    text[k + LONG] = '\0';
    ct_config c;
    ct_status st = CT_STATUS_INIT;
    ct_config_defaults(&c);
    assert_int_not_equal(ct_config_apply_override(&c, text, &st), 0);
    char cut[64];
    snprintf(cut, sizeof cut, "...' (%zu characters): ", k + LONG);
    const char *const needles[] = {cut, cases[i].reason, NULL};
    assert_message_has(st.message, needles);
    assert_true(strlen(st.message) < 400);
  }
}

static void test_overrides(void **state) {
  (void)state;
  ct_config c;
  ct_status st = CT_STATUS_INIT;
  ct_config_defaults(&c);
  const char *const ok[] = {
      "train.optimizer.learning_rate=0.05",
      "devices.towers=[/cpu:0,/cpu:1]",
      "session.device_count={CPU: 2}",
      "session.device_count.gpu=3",
      "train.epochs = 7",
      "train.checkpoint=",
      "train.optimizer={name: adam, beta2: 0.98}",
      "session.gpu_options.virtual_devices=[4096, 4096]",
      "session.gpu_options.visible_device_list=1,0",
      "dataset.path=/tmp/with=sign",
      "train.optimizer.nesterov=yes",
  };
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; ++i) {
    ct_config_apply_override(&c, ok[i], &st);
    assert_status_ok(&st);
  }
  assert_true(c.train.optimizer.learning_rate == 0.05);
  assert_int_equal(c.devices.n_towers_listed, 2);
  assert_string_equal(c.devices.towers[0], "/cpu:0");
  assert_string_equal(c.devices.towers[1], "/cpu:1");
  assert_int_equal(c.session.device_count_cpu, 2);
  assert_int_equal(c.session.device_count_gpu, 3);
  assert_int_equal(c.train.epochs, 7);
  assert_string_equal(c.train.checkpoint, "");
  assert_string_equal(c.train.optimizer.name, "adam");
  assert_true(c.train.optimizer.beta2 == 0.98);
  assert_true(c.train.optimizer.beta1 == 0.9);
  assert_int_equal(c.session.gpu_options.n_virtual_devices, 2);
  assert_int_equal(c.session.gpu_options.virtual_devices_mb[1], 4096);
  assert_string_equal(c.session.gpu_options.visible_device_list, "1,0");
  assert_string_equal(c.dataset.path, "/tmp/with=sign");
  assert_int_equal(c.train.optimizer.nesterov, 1);
  /* A shorter list replaces the longer one. */
  ct_config_apply_override(&c, "devices.towers=[/gpu:0]", &st);
  assert_status_ok(&st);
  assert_int_equal(c.devices.n_towers_listed, 1);
  assert_string_equal(c.devices.towers[0], "/gpu:0");
}

static const error_case k_override_errors[] = {
    {"train.epochs=ten",
     {"override 'train.epochs=ten': 'train.epochs' must be an integer, got 'ten'", NULL}},
    {"train.epochs", {"override 'train.epochs'", "KEY=VALUE", NULL}},
    {"=5", {"override '=5'", "key", NULL}},
    {"train.optimzer.name=adam",
     {"override 'train.optimzer.name=adam'", "unknown key 'train.optimzer.name'",
      "did you mean 'train.optimizer.name'?", NULL}},
    {"train.batch_size=64", {"unknown key 'train.batch_size'", "'dataset.batch_size'", NULL}},
    {"nope=1", {"override 'nope=1'", "unknown key 'nope'", NULL}},
    {"train.epochs.x=1", {"unknown key 'train.epochs.x'", NULL}},
    {"devices.towers=[/cpu:0", {"override 'devices.towers=[/cpu:0'", "malformed YAML", NULL}},
    {"session.device_count={CPU: 0}", {"'session.device_count.CPU' must be >= 1", NULL}},
    /* whole numbers past their documented range, never cut to 32 bits */
    {"session.device_count={CPU: 4294967298}",
     {"'session.device_count.CPU' must be <= 64, got '4294967298'", NULL}},
    {"session.intra_op_parallelism_threads=2147483648",
     {"'session.intra_op_parallelism_threads' must be <= 4096", NULL}},
    {"dataset.num_classes=4294967306", {"'dataset.num_classes' must be <= 100000", NULL}},
    {"dataset.batch_size=9223372036854775807", {"'dataset.batch_size' must be <= 1048576", NULL}},
    {"train.max_steps=1000000000000001", {"'train.max_steps' must be <= 1000000000000000", NULL}},
    {"session.memory_limit_mb={CPU: 1073741825}",
     {"'session.memory_limit_mb.CPU' must be <= 1073741824", NULL}},
    {"session.device_count.tpu=1", {"'session.device_count'", "'tpu'", NULL}},
    {"train.optimizer.name=adamw", {"must be one of sgd, momentum, adam, got 'adamw'", NULL}},
    {"train=3", {"'train' must be a mapping", NULL}},
    {"train.optimizer={name: adam, lr: 1}", {"unknown key 'train.optimizer.lr'", NULL}},
};

static void test_override_errors(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof k_override_errors / sizeof k_override_errors[0]; ++i) {
    ct_config c, before;
    ct_status st = CT_STATUS_INIT;
    ct_config_defaults(&c);
    before = c;
    if (ct_config_apply_override(&c, k_override_errors[i].yaml, &st) == 0) {
      print_error("override '%s' was accepted\n", k_override_errors[i].yaml);
      fail();
    }
    assert_int_equal(st.code, CT_INVALID_ARGUMENT);
    assert_message_has(st.message, k_override_errors[i].needles);
    assert_null(strchr(st.message, '\n'));
    assert_memory_equal(&c, &before, sizeof c); /* unchanged on error */
  }
}

/* Writes config to g_path, loads it over the defaults, and checks the struct
 * that comes back is the same. */
static void assert_round_trip(const ct_config *config) {
  FILE *f = fopen(g_path, "w");
  assert_non_null(f);
  ct_config_write(config, f);
  assert_int_equal(fclose(f), 0);
  ct_config back;
  ct_status st = CT_STATUS_INIT;
  ct_config_defaults(&back);
  if (ct_config_load(&back, g_path, &st) != 0) {
    print_error("reading back what ct_config_write wrote: %s\n", st.message);
    fail();
  }
  assert_string_equal(back.source, g_path);
  memcpy(back.source, config->source, sizeof back.source);
  assert_memory_equal(&back, config, sizeof back);
}

static void test_write_round_trip(void **state) {
  (void)state;
  ct_config c;
  ct_status st = CT_STATUS_INIT;
  ct_config_defaults(&c);
  assert_round_trip(&c);

  assert_int_equal(load_text(&c, k_full, &st), 0);
  assert_round_trip(&c);

  /* Awkward strings and numbers. */
  const char *const tricky[] = {
      "dataset.path=\"with space: and # hash, \\\"quotes\\\" and \\\\ and \\t tab\"",
      "train.checkpoint='yes'",
      "devices.towers=['/cpu:0', \"/gpu:0, odd\", /job:localhost/replica:0/task:0/device:GPU:1]",
      "train.optimizer.learning_rate=0.1",
      "train.optimizer.epsilon=3.0000000000000004e-9",
      "train.optimizer.weight_decay=1e-300",
      "train.schedule.gamma=1e300",
      "train.seed=-9223372036854775808",
      "train.seed=9223372036854775807",
      "train.max_steps=1000000000000000",
      "session.gpu_options.visible_device_list=\"\"",
  };
  for (size_t i = 0; i < sizeof tricky / sizeof tricky[0]; ++i) {
    ct_config_apply_override(&c, tricky[i], &st);
    assert_status_ok(&st);
  }
  assert_string_equal(c.train.checkpoint, "yes");
  assert_string_equal(c.devices.towers[1], "/gpu:0, odd");
  assert_round_trip(&c);
}

/* A long list grows its arrays by doubling (appending one at a time made
 * a 100,000-entry list quadratic). */
static void test_long_lists_grow_by_doubling(void **state) {
  (void)state;
  enum { ITEMS = 5000 };
  char *text = malloc(ITEMS * 8 + 16);
  assert_non_null(text);
  size_t len = 0;
  for (int i = 0; i < ITEMS; ++i) len += (size_t)sprintf(text + len, "- %d\n", i);
  ct_ynode *root = NULL;
  ct_yaml_error err;
  assert_int_equal(ct_yaml_parse_string(text, len, &root, &err), 0);
  assert_int_equal(root->n, ITEMS);
  assert_int_equal(root->cap, 8192); /* 8, 16, ..., the first power of two past 5000 */
  assert_string_equal(root->items[ITEMS - 1]->text, "4999");
  ct_ynode_free(root);
  free(text);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_defaults),
      cmocka_unit_test(test_full_file),
      cmocka_unit_test(test_partial_and_empty_files),
      cmocka_unit_test(test_missing_file),
      cmocka_unit_test(test_aliases_of_long_texts_are_bounded),
      cmocka_unit_test(test_long_overrides_keep_the_reason),
      cmocka_unit_test(test_file_errors),
      cmocka_unit_test(test_overrides),
      cmocka_unit_test(test_override_errors),
      cmocka_unit_test(test_write_round_trip),
      cmocka_unit_test(test_long_lists_grow_by_doubling),
      cmocka_unit_test(test_piecewise_schedule),
      cmocka_unit_test(test_examples_load),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
