/* The rows of ct_config's schema: see config_schema.h. */
#include "config/config_schema.h"

#include <math.h>
#include <string.h>

/* The models this build knows. Add a name here when its model code lands. */
const char *const ct_config_zoo_models[] = {"mlp",      "fmnist_cnn", "cifar10_cnn",
                                       "resnet20", "resnet32",   "resnet44",
                                       "resnet56", "resnet110",  NULL};
static const char *const k_labels[] = {"fine", "coarse", NULL};
static const char *const k_optimizers[] = {"sgd", "momentum", "adam", NULL};
static const char *const k_schedules[] = {"constant", "step", "piecewise", "cosine", NULL};
static const char *const k_variable_updates[] = {"replicated", "parameter_server", "block_momentum",
                                                 NULL};
static const char *const k_updates[] = {"sync", "async", NULL};
static const char *const k_all_reduces[] = {"auto", "ring", "tree", "nccl", NULL};
static const char *const k_compressions[] = {"none", "bf16", "fp16", "onebit", NULL};
static const char *const k_splits[] = {"even", "auto", NULL};
static const char *const k_precisions[] = {"fp32", "tf32", "bf16", NULL};
static const char *const k_conv_algorithms[] = {"auto", "direct", "winograd", NULL};

#define OFF(member) offsetof(ct_config, member)
#define SZ(member) sizeof(((ct_config *)0)->member)
#define CAP(member) (sizeof(((ct_config *)0)->member) / sizeof(((ct_config *)0)->member[0]))

#define STR(p, m, d) \
  { .path = p, .type = CT_FIELD_STR, .offset = OFF(m), .size = SZ(m), .def = d }
#define ENUM(p, m, names, d) \
  { .path = p, .type = CT_FIELD_STR, .offset = OFF(m), .size = SZ(m), .allowed = names, .def = d }
#define DEVICE(p, m, d)                                                                         \
  {                                                                                             \
    .path = p, .type = CT_FIELD_STR, .offset = OFF(m), .size = SZ(m), .flags = CT_FIELD_DEVICE, \
    .def = d                                                                                    \
  }
/* Every whole number has a documented range: none is cut to 32 bits or
 * overflows what is computed from it. */
#define MAX_COUNT 1000000000LL       /* epochs, examples, steps between events */
#define MAX_TASKS 1000000 /* ranks a launcher may start (launcher.c) */
#define MAX_STEPS 1000000000000000LL /* steps: what a checkpoint's metadata may hold */
#define MAX_MEMORY_MB (1LL << 30)    /* a mebibyte count: 1 PiB */
#define MAX_THREADS 4096             /* and at run time 4 per core (device.c) */
#define INT(p, m, min, max, d) \
  { .path = p, .type = CT_FIELD_INT, .offset = OFF(m), .imin = min, .imax = max, .def = d }
#define FLOAT(p, m, l, h, fl, d) \
  { .path = p, .type = CT_FIELD_FLOAT, .offset = OFF(m), .lo = l, .hi = h, .flags = fl, .def = d }
#define BOOL(p, m, d) \
  { .path = p, .type = CT_FIELD_BOOL, .offset = OFF(m), .def = d }
#define KINDMAP(p, cpu, gpu, min_cpu, min_gpu, max, d)                                             \
  {                                                                                                \
    .path = p, .type = CT_FIELD_KINDMAP, .offset = OFF(cpu), .offset2 = OFF(gpu), .imin = min_cpu, \
    .imax = max, .imin2 = min_gpu, .def = d                                                        \
  }

const ct_config_field ct_config_fields[] = {
    {.path = "model.name",
     .type = CT_FIELD_STR,
     .offset = OFF(model.name),
     .size = SZ(model.name),
     .flags = CT_FIELD_NONEMPTY,
     .def = "fmnist_cnn"},
    {.path = "model.layers", .type = CT_FIELD_LAYERS, .offset = OFF(model.layers), .def = "[]"},
    STR("model.library", model.library, "\"\""),

    ENUM("dataset.name", dataset.name, ct_dataset_names, "fashion_mnist"),
    {.path = "dataset.path",
     .type = CT_FIELD_STR,
     .offset = OFF(dataset.path),
     .size = SZ(dataset.path),
     .flags = CT_FIELD_NONEMPTY,
     .def = "/usr/share/datasets/fashion-mnist"},
    INT("dataset.batch_size", dataset.batch_size, 1, 1 << 20, "128"),
    BOOL("dataset.shuffle", dataset.shuffle, "true"),
    {.path = "dataset.image_shape",
     .type = CT_FIELD_INT_LIST,
     .offset = OFF(dataset.image_shape),
     .offset2 = OFF(dataset.n_image_dims),
     .cap = CAP(dataset.image_shape),
     .imin = 1,
     .imax = 4096,
     .flags = CT_FIELD_ALL,
     .def = "[28, 28, 1]"},
    INT("dataset.num_classes", dataset.num_classes, 2, 100000, "10"),
    INT("dataset.train_size", dataset.train_size, 1, MAX_COUNT, "60000"),
    INT("dataset.test_size", dataset.test_size, 1, MAX_COUNT, "10000"),
    ENUM("dataset.label", dataset.label, k_labels, "fine"),
    INT("dataset.label_offset", dataset.label_offset, -MAX_COUNT, MAX_COUNT, "0"),
    BOOL("dataset.skip_bad_examples", dataset.skip_bad_examples, "false"),
    INT("dataset.threads", dataset.threads, 0, MAX_THREADS, "0"),
    INT("dataset.prefetch", dataset.prefetch, 1, 64, "2"),
    BOOL("dataset.cache", dataset.cache, "false"),
    {.path = "dataset.augment.crop",
     .type = CT_FIELD_INT_LIST,
     .offset = OFF(dataset.augment.crop),
     .offset2 = OFF(dataset.augment.n_crop),
     .cap = CAP(dataset.augment.crop),
     .imin = 1,
     .imax = 4096,
     .def = "[]"},
    INT("dataset.augment.pad", dataset.augment.pad, 0, 4096, "0"),
    BOOL("dataset.augment.flip", dataset.augment.flip, "false"),
    FLOAT("dataset.augment.brightness", dataset.augment.brightness, 0, CT_AUGMENT_MAX_BRIGHTNESS, 0,
          "0.0"),
    {.path = "dataset.augment.contrast",
     .type = CT_FIELD_FLOAT_LIST,
     .offset = OFF(dataset.augment.contrast),
     .offset2 = OFF(dataset.augment.n_contrast),
     .cap = CAP(dataset.augment.contrast),
     .lo = 0,
     .hi = CT_AUGMENT_MAX_CONTRAST,
     .flags = CT_FIELD_ALL | CT_FIELD_NONDECREASING,
     .def = "[1.0, 1.0]"},
    BOOL("dataset.augment.standardize", dataset.augment.standardize, "false"),

    INT("train.epochs", train.epochs, 0, MAX_COUNT, "10"),
    INT("train.max_steps", train.max_steps, 0, MAX_STEPS, "0"),
    INT("train.seed", train.seed, INT64_MIN, INT64_MAX, "42"),
    ENUM("train.optimizer.name", train.optimizer.name, k_optimizers, "momentum"),
    FLOAT("train.optimizer.learning_rate", train.optimizer.learning_rate, 0, INFINITY,
          CT_FIELD_LO_OPEN, "0.01"),
    FLOAT("train.optimizer.momentum", train.optimizer.momentum, 0, 1, CT_FIELD_HI_OPEN, "0.9"),
    BOOL("train.optimizer.nesterov", train.optimizer.nesterov, "false"),
    FLOAT("train.optimizer.weight_decay", train.optimizer.weight_decay, 0, INFINITY, 0, "0.0"),
    FLOAT("train.optimizer.beta1", train.optimizer.beta1, 0, 1, CT_FIELD_HI_OPEN, "0.9"),
    FLOAT("train.optimizer.beta2", train.optimizer.beta2, 0, 1, CT_FIELD_HI_OPEN, "0.999"),
    FLOAT("train.optimizer.epsilon", train.optimizer.epsilon, 0, INFINITY, CT_FIELD_LO_OPEN,
          "1e-8"),
    ENUM("train.schedule.name", train.schedule.name, k_schedules, "constant"),
    INT("train.schedule.step_epochs", train.schedule.step_epochs, 1, MAX_COUNT, "3"),
    {.path = "train.schedule.boundaries",
     .type = CT_FIELD_INT_LIST,
     .offset = OFF(train.schedule.boundaries),
     .offset2 = OFF(train.schedule.n_boundaries),
     .cap = CAP(train.schedule.boundaries),
     .imin = 1,
     .imax = MAX_COUNT,
     .flags = CT_FIELD_INCREASING,
     .def = "[]"},
    FLOAT("train.schedule.gamma", train.schedule.gamma, 0, INFINITY, CT_FIELD_LO_OPEN, "0.1"),
    FLOAT("train.schedule.min_learning_rate", train.schedule.min_learning_rate, 0, INFINITY, 0,
          "0.0"),
    INT("train.schedule.warmup_epochs", train.schedule.warmup_epochs, 0, MAX_COUNT, "0"),
    STR("train.checkpoint", train.checkpoint, "runs/fmnist_cnn/model.safetensors"),
    ENUM("train.precision", train.precision, k_precisions, "fp32"),
    ENUM("train.conv_algorithm", train.conv_algorithm, k_conv_algorithms, "auto"),
    STR("train.log_dir", train.log_dir, "\"\""),
    BOOL("train.check_numerics", train.check_numerics, "false"),
    INT("train.log_every_n_steps", train.log_every_n_steps, 1, MAX_COUNT, "10"),

    {.path = "devices.towers",
     .type = CT_FIELD_STR_LIST,
     .offset = OFF(devices.towers),
     .size = SZ(devices.towers[0]),
     .offset2 = OFF(devices.n_towers_listed),
     .cap = CAP(devices.towers),
     .flags = CT_FIELD_DEVICE,
     .def = "[/cpu:0]"},
    INT("devices.n_towers", devices.n_towers, -1, CT_MAX_DEVICES, "0"),
    INT("devices.n_gpus", devices.n_gpus, 0, CT_MAX_DEVICES, "0"),
    ENUM("devices.variable_update", devices.variable_update, k_variable_updates, "replicated"),
    DEVICE("devices.ps_device", devices.ps_device, "/cpu:0"),
    ENUM("devices.all_reduce", devices.all_reduce, k_all_reduces, "auto"),
    ENUM("devices.compression", devices.compression, k_compressions, "none"),
    INT("devices.block_steps", devices.block_steps, 1, MAX_STEPS, "8"),
    FLOAT("devices.block_momentum", devices.block_momentum, -1, 1, CT_FIELD_HI_OPEN, "-1"),
    ENUM("devices.split", devices.split, k_splits, "even"),

    BOOL("session.log_device_placement", session.log_device_placement, "false"),
    BOOL("session.allow_soft_placement", session.allow_soft_placement, "true"),
    KINDMAP("session.device_count", session.device_count_cpu, session.device_count_gpu, 1, -1,
            CT_MAX_DEVICES, "{CPU: 1, GPU: -1}"),
    {.path = "session.cpu_virtual_devices",
     .type = CT_FIELD_INT_LIST,
     .offset = OFF(session.cpu_virtual_devices_mb),
     .offset2 = OFF(session.n_cpu_virtual_devices),
     .cap = CAP(session.cpu_virtual_devices_mb),
     .imin = 0,
     .imax = MAX_MEMORY_MB,
     .def = "[]"},
    INT("session.intra_op_parallelism_threads", session.intra_op_parallelism_threads, 0,
        MAX_THREADS, "0"),
    INT("session.inter_op_parallelism_threads", session.inter_op_parallelism_threads, 0,
        MAX_THREADS, "0"),
    KINDMAP("session.memory_limit_mb", session.memory_limit_mb_cpu, session.memory_limit_mb_gpu, 0,
            0, MAX_MEMORY_MB, "{CPU: 0, GPU: 0}"),
    BOOL("session.gpu_options.allow_growth", session.gpu_options.allow_growth, "false"),
    FLOAT("session.gpu_options.per_process_gpu_memory_fraction",
          session.gpu_options.per_process_gpu_memory_fraction, 0, 1, CT_FIELD_LO_OPEN, "1.0"),
    {.path = "session.gpu_options.visible_device_list",
     .type = CT_FIELD_STR,
     .offset = OFF(session.gpu_options.visible_device_list),
     .size = SZ(session.gpu_options.visible_device_list),
     .flags = CT_FIELD_GPU_IDS,
     .def = "\"\""},
    {.path = "session.gpu_options.virtual_devices",
     .type = CT_FIELD_INT_LIST,
     .offset = OFF(session.gpu_options.virtual_devices_mb),
     .offset2 = OFF(session.gpu_options.n_virtual_devices),
     .cap = CAP(session.gpu_options.virtual_devices_mb),
     .imin = 1,
     .imax = MAX_MEMORY_MB,
     .def = "[]"},

    FLOAT("cluster.stall_timeout_s", cluster.stall_timeout_s, 0, INFINITY, 0, "60.0"),
    INT("cluster.check_every", cluster.check_every, 0, MAX_STEPS, "0"),
    INT("cluster.ps", cluster.ps, 0, MAX_TASKS, "0"),
    INT("cluster.worker", cluster.worker, 0, MAX_TASKS, "0"),
    ENUM("cluster.updates", cluster.updates, k_updates, "sync"),
    INT("cluster.max_staleness", cluster.max_staleness, -1, MAX_STEPS, "-1"),
};

const size_t ct_config_n_fields = sizeof ct_config_fields / sizeof ct_config_fields[0];

const ct_config_field *ct_config_find_field(const char *path) {
  for (size_t i = 0; i < ct_config_n_fields; ++i)
    if (strcmp(ct_config_fields[i].path, path) == 0) return &ct_config_fields[i];
  return NULL;
}

int ct_config_is_section(const char *path) {
  const size_t len = strlen(path);
  if (len == 0) return 1;
  for (size_t i = 0; i < ct_config_n_fields; ++i)
    if (strncmp(ct_config_fields[i].path, path, len) == 0 && ct_config_fields[i].path[len] == '.')
      return 1;
  return 0;
}

size_t ct_config_section_children(const char *section, char names[][64], size_t max) {
  const size_t len = strlen(section);
  size_t n = 0;
  for (size_t i = 0; i < ct_config_n_fields; ++i) {
    const char *p = ct_config_fields[i].path;
    if (len > 0) {
      if (strncmp(p, section, len) != 0 || p[len] != '.') continue;
      p += len + 1;
    }
    size_t clen = strcspn(p, ".");
    if (clen >= 64) continue;
    int seen = 0;
    for (size_t j = 0; j < n && !seen; ++j)
      seen = strlen(names[j]) == clen && strncmp(names[j], p, clen) == 0;
    if (seen || n == max) continue;
    memcpy(names[n], p, clen);
    names[n][clen] = '\0';
    ++n;
  }
  return n;
}
