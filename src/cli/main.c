/* The `ctower` command: parses the command line, builds the effective config
 * (defaults, then the file, then KEY=VALUE overrides) and hands it to the
 * trainer. Exit status: 0 success, 1 runtime failure, 2 bad usage or config.
 *
 * Under mpirun each rank runs the command: rank 0 prints, the others only
 * their errors and warnings, each error prefixed with "[worker k] ". Every
 * rank checks that it was started with rank 0's config; a rank that fails
 * otherwise ends the whole job, so that no rank waits for it forever. */
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/command_stack.h"
#include "cluster/communication.h"
#include "config/suggest.h"
#include "ctower/config.h"
#include "ctower/trainer.h"

#ifndef CTOWER_VERSION
#define CTOWER_VERSION "unknown"
#endif

enum { EXIT_OK = 0, EXIT_RUNTIME = 1, EXIT_USAGE = 2 };
/* What the commands return besides exit statuses: done early (help
 * printed), exit 0; and a bad config that every rank of the job reported
 * alike, exit 2 without ending the others (main). */
enum { DONE = -1, USAGE_ON_EVERY_RANK = -2 };

static const char k_overview[] =
    "ctower " CTOWER_VERSION
    ": train neural networks on every device a machine has\n"
    "\n"
    "Usage:\n"
    "  ctower train CONFIG.yaml [KEY=VALUE ...]   train; KEY=VALUE overrides, e.g. "
    "dataset.batch_size=256\n"
    "  ctower eval  CONFIG.yaml [--checkpoint F]  test accuracy and loss of a checkpoint\n"
    "  ctower devices [CONFIG.yaml]               every device: canonical name, kind, cores or "
    "SMs, memory limit\n"
    "  ctower bench ...                           throughput of a model on given devices "
    "(tf_cnn_benchmarks-like)\n"
    "  ctower plan  CONFIG.yaml [KEY=VALUE ...]   before a run: the model, placement with "
    "reasons,\n"
    "                                             memory, FLOPs, bytes, predicted speed\n"
    "  ctower --help | CMD --help | --version\n"
    "\n"
    "An override's VALUE is read as YAML, so lists and maps work too:\n"
    "  devices.towers=[/cpu:0,/cpu:1]   'session.device_count={CPU: 2}'\n"
    "Options such as --checkpoint F or --memory-stats may come before or after the overrides.\n"
    "Every config key with its type and default: docs/config.md.\n"
    "\n"
    "Under mpirun (mpirun -np N ctower train ...), rank k is /job:worker/replica:0/task:k;\n"
    "with cluster: {ps: P, worker: W} (P + W = N), ranks 0..P-1 are /job:ps/task:0..P-1\n"
    "(they hold the variables and apply the updates: cluster.updates sync or async) and\n"
    "the others /job:worker/task:0..W-1. Every rank must be given the same config;\n"
    "rank 0 prints, the others only errors. Between ranks the gradients can travel\n"
    "compressed (devices.compression: bf16, fp16, or onebit: 1-bit SGD with error\n"
    "feedback), or the ranks learn on their own and average their models every\n"
    "devices.block_steps steps (devices.variable_update: block_momentum).\n"
    "\n"
    "Exit status: 0 success, 1 runtime failure (out of memory, NaN loss, I/O),\n"
    "             2 bad usage or bad config.\n";

static const char k_train_help[] =
    "Usage: ctower train CONFIG.yaml [KEY=VALUE ...] [--memory-stats] [--quiet] [--resume]\n"
    "                    [--trace FILE [--trace-steps A:B]]\n"
    "\n"
    "Trains the model CONFIG.yaml describes on the devices it names, printing progress\n"
    "and writing the checkpoint (train.checkpoint) after each epoch. With train.log_dir\n"
    "set, writes TensorBoard event files there (see them with tensorboard --logdir DIR).\n"
    "\n"
    "Arguments:\n"
    "  CONFIG.yaml      the config file; every key it leaves out keeps its default\n"
    "  KEY=VALUE        override one key; VALUE is read as YAML, e.g. train.epochs=5,\n"
    "                   devices.towers=[/cpu:0,/cpu:1], 'session.device_count={CPU: 2}'\n"
    "Options (before or after the overrides):\n"
    "  --memory-stats   print each device's allocator statistics\n"
    "  --quiet          no progress bar, only one line per epoch\n"
    "  --resume         continue from train.checkpoint when it exists (its step, epoch\n"
    "                   and place in the epoch, where train.max_steps stopped a run);\n"
    "                   the result is bitwise that of an uninterrupted run\n"
    "  --trace FILE     write a Chrome trace (open it in Perfetto or chrome://tracing)\n"
    "                   of the steps --trace-steps names: a process per rank, a track\n"
    "                   per device (and its copies and all-reduces), the input\n"
    "                   pipeline and the host's waits; each op with its shapes\n"
    "  --trace-steps A:B  the steps traced, A to B-1 counted from 0 (default 5:8)\n"
    "  -h, --help       show this help\n"
    "\n"
    "At the end it prints where each device's time went, from every tenth step from\n"
    "step 5: computing, communicating (copies and all-reduces not hidden behind\n"
    "computing), waiting for input, waiting for other devices or ranks, and idle.\n"
    "\n"
    "Ctrl-C or SIGTERM finishes the step, writes the checkpoint at that place in the\n"
    "epoch and exits 130 or 143 (--resume goes on from there); a second one quits at\n"
    "once, leaving the last checkpoint as it was, and so does the first before the\n"
    "first step.\n"
    "\n"
    "Exit status: 0 success, 1 runtime failure, 2 bad usage or bad config,\n"
    "             130 or 143 stopped by SIGINT or SIGTERM (the work saved).\n";

static const char k_eval_help[] =
    "Usage: ctower eval CONFIG.yaml [--checkpoint F] [KEY=VALUE ...]\n"
    "\n"
    "Restores a checkpoint of the model CONFIG.yaml describes and prints its test\n"
    "accuracy and loss.\n"
    "\n"
    "Arguments:\n"
    "  CONFIG.yaml        the config file the model was trained with\n"
    "  KEY=VALUE          override one key; VALUE is read as YAML\n"
    "Options (before or after the overrides):\n"
    "  --checkpoint F     the checkpoint to evaluate (default: the config's train.checkpoint)\n"
    "  -h, --help         show this help\n"
    "\n"
    "Exit status: 0 success, 1 runtime failure, 2 bad usage or bad config.\n";

static const char k_devices_help[] =
    "Usage: ctower devices [CONFIG.yaml] [KEY=VALUE ...]\n"
    "\n"
    "Lists every device ctower would use: canonical name, kind, cores or SMs, and\n"
    "memory limit; for a GPU its product and memory; for a CPU device what its\n"
    "kernels compute with: the instruction sets of oneDNN's kernels and of\n"
    "ctower's own loops, the arithmetic of convolutions and matmuls (math: fp32\n"
    "or bf16) and which convolutions Winograd's algorithm computes. With a\n"
    "config, its session settings (device_count, memory_limit_mb, gpu_options)\n"
    "and train.precision and train.conv_algorithm apply. A build with CUDA then\n"
    "prints the CUDA driver's and runtime's versions and which cuBLAS, cuDNN and\n"
    "NCCL it loads and from where (CTOWER_CUDA_LIBRARY_PATH, the system's library\n"
    "path, /usr/local/cuda*, the nvidia/ wheels of Python environments), or where\n"
    "it looked for a missing one.\n"
    "\n"
    "Options:\n"
    "  -h, --help       show this help\n"
    "\n"
    "Exit status: 0 success, 1 runtime failure, 2 bad usage or bad config.\n";

static const char k_bench_help[] =
    "Usage: ctower bench CONFIG.yaml [KEY=VALUE ...] [--steps N] [--warmup N]\n"
    "                    [--compare-single] [--trace FILE [--trace-steps A:B]]\n"
    "       ctower bench --calibrate [CONFIG.yaml] [--calibration F]\n"
    "\n"
    "Measures training throughput, as tf_cnn_benchmarks does: the model, batch,\n"
    "towers and devices of CONFIG.yaml train for --warmup steps (default 5), then\n"
    "--steps timed steps (default 30) on the dataset's batches. It prints\n"
    "tf_cnn_benchmarks' rows (Step, images/sec +/- its standard error, jitter, loss)\n"
    "every 10 steps and its 'total images/sec' line; where each device's time went\n"
    "(from every tenth timed step: computing, communicating, waiting for input,\n"
    "waiting for other devices or ranks, idle); each device's memory; and the median\n"
    "images/sec and step time. Nothing is saved.\n"
    "\n"
    "Options (before or after the overrides):\n"
    "  --steps N        timed steps (1 or more)\n"
    "  --warmup N       untimed steps first (0 or more)\n"
    "  --compare-single then time the same global batch on the first tower alone and\n"
    "                   print the speed-up and scaling efficiency (under mpirun: rank\n"
    "                   0's first tower, as a job of its own, the other ranks waiting)\n"
    "  --trace FILE     write a Chrome trace (open it in Perfetto or chrome://tracing)\n"
    "                   of the steps --trace-steps names: a process per rank, a track\n"
    "                   per device (and its copies and all-reduces), the input\n"
    "                   pipeline and the host's waits; each op with its shapes\n"
    "  --trace-steps A:B  the steps traced, A to B-1 counted from 0 (default the first 3 timed)\n"
    "  --calibrate      instead: measure this machine for 'ctower plan' (matmul and\n"
    "                   convolution FLOP/s at a few sizes, memory bandwidth, time per op,\n"
    "                   all-reduce latency and bandwidth between two CPU devices, and\n"
    "                   over MPI under mpirun) and write the calibration file\n"
    "  --calibration F  the calibration file (default $XDG_CACHE_HOME/ctower/\n"
    "                   calibration.json, else ~/.cache/ctower/calibration.json)\n"
    "  -h, --help       show this help\n"
    "\n"
    "Exit status: 0 success, 1 runtime failure, 2 bad usage or bad config.\n";

static const char k_plan_help[] =
    "Usage: ctower plan CONFIG.yaml [KEY=VALUE ...] [--verbose] [--calibration F]\n"
    "                   [--link-gbps X[,Y...]]\n"
    "\n"
    "Prints what a training step of CONFIG.yaml will do, before any step runs (the\n"
    "session, graph and plan are built; no kernel runs):\n"
    "  model        a row per layer: its output shape, parameters and device; the\n"
    "               total, trainable and non-trainable parameters\n"
    "  placement    per device, its ops by type and by why they are there: an explicit\n"
    "               device scope, colocation with a variable, default priority (GPU\n"
    "               before CPU), or soft placement (the requested device is missing or\n"
    "               has no kernel); --verbose lists every op\n"
    "  memory       per device: parameter and optimizer-state bytes, and the predicted\n"
    "               peak of one step (the executor's buffer lifetimes) against its limit\n"
    "  work         FLOPs per device, bytes copied between devices, bytes all-reduced\n"
    "               in the process and across ranks\n"
    "  speed        predicted step time and images/sec; the towers' speed-up (one\n"
    "               tower's step time over theirs) and efficiency against one tower on\n"
    "               the first tower's device, and for CPU towers against one tower on\n"
    "               all their cores; ranks until efficiency drops below 90% per link\n"
    "The cost model comes from 'ctower bench --calibrate'; where its default file is\n"
    "missing, the first plan measures this machine (about a second) and saves it\n"
    "there. See docs/plan.md.\n"
    "\n"
    "Options (before or after the overrides):\n"
    "  --verbose         every op with its device and reason\n"
    "  --calibration F   the calibration file (default $XDG_CACHE_HOME/ctower/\n"
    "                    calibration.json, else ~/.cache/ctower/calibration.json)\n"
    "  --link-gbps X     link bandwidths in Gb/s for the ranks question, each in\n"
    "                    (0, 1000000], at most 8 (default 10,100)\n"
    "  -h, --help        show this help\n"
    "\n"
    "Exit status: 0 success, 1 runtime failure (a step will not fit a device's memory\n"
    "limit: the device, predicted bytes, limit and what to change), 2 bad usage or bad\n"
    "config.\n";

static int error_exit(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prints "ctower: error: <message>" on stderr, after this rank's prefix
 * ("[worker k] " in a job of several ranks), in one write so that ranks'
 * lines do not interleave, and returns code. The message stays one line
 * whatever it quotes: control characters (a newline in a value) are
 * written as \n, \t or \xNN. */
static int error_exit(int code, const char *fmt, ...) {
  char message[2048], line[4 * sizeof message + 64];
  va_list args;
  va_start(args, fmt);
  vsnprintf(message, sizeof message, fmt, args);
  va_end(args);
  size_t used = (size_t)snprintf(line, sizeof line, "%sctower: error: ", ct_cluster_log_prefix());
  for (const unsigned char *c = (const unsigned char *)message; *c; ++c) {
    const char *named = *c == '\n' ? "\\n" : *c == '\t' ? "\\t" : *c == '\r' ? "\\r" : NULL;
    if (named)
      used += (size_t)snprintf(line + used, sizeof line - used, "%s", named);
    else if (*c < 0x20 || *c == 0x7f)
      used += (size_t)snprintf(line + used, sizeof line - used, "\\x%02x", *c);
    else
      line[used++] = (char)*c;
  }
  line[used++] = '\n';
  fwrite(line, 1, used, stderr);
  return code;
}

/* ---- command-line parsing ------------------------------------------------- */

typedef struct option_spec {
  const char *name; /* "--checkpoint" */
  int takes_value;  /* --checkpoint F or --checkpoint=F */
} option_spec;

typedef struct command {
  const char *name;
  const char *usage; /* one line, for "missing CONFIG" errors */
  const char *help;
  int config_required;        /* 1: always; 2: unless --calibrate (bench) */
  const option_spec *options; /* ends with {NULL, 0} */
  int (*run)(const struct command *cmd, int argc, char **argv);
} command;

typedef struct parsed_args {
  const char *config_path; /* NULL when not given */
  const char **overrides;  /* argv entries of the form KEY=VALUE */
  int n_overrides;
  int help;
  int memory_stats, quiet, resume;
  const char *checkpoint;
  const char *steps, *warmup;
  const char *trace, *trace_steps;
  int compare_single;
  int calibrate, verbose;
  const char *calibration, *link_gbps;
} parsed_args;

static int file_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

static void set_option(parsed_args *args, const char *name, const char *value) {
  if (strcmp(name, "--memory-stats") == 0) args->memory_stats = 1;
  if (strcmp(name, "--quiet") == 0) args->quiet = 1;
  if (strcmp(name, "--resume") == 0) args->resume = 1;
  if (strcmp(name, "--checkpoint") == 0) args->checkpoint = value;
  if (strcmp(name, "--steps") == 0) args->steps = value;
  if (strcmp(name, "--warmup") == 0) args->warmup = value;
  if (strcmp(name, "--trace") == 0) args->trace = value;
  if (strcmp(name, "--trace-steps") == 0) args->trace_steps = value;
  if (strcmp(name, "--compare-single") == 0) args->compare_single = 1;
  if (strcmp(name, "--calibrate") == 0) args->calibrate = 1;
  if (strcmp(name, "--verbose") == 0) args->verbose = 1;
  if (strcmp(name, "--calibration") == 0) args->calibration = value;
  if (strcmp(name, "--link-gbps") == 0) args->link_gbps = value;
}

static int unknown_option(const command *cmd, const char *arg) {
  const char *names[16];
  size_t n = 0;
  char list[256] = "--help";
  for (const option_spec *o = cmd->options; o->name && n < 16; ++o) {
    names[n++] = o->name;
    strncat(list, ", ", sizeof list - strlen(list) - 1);
    strncat(list, o->name, sizeof list - strlen(list) - 1);
  }
  char word[64];
  snprintf(word, sizeof word, "%.*s", (int)strcspn(arg, "="), arg);
  int best = ct_closest_name(word, names, n);
  if (best >= 0)
    return error_exit(EXIT_USAGE, "unknown option '%s' for 'ctower %s'; did you mean '%s'?", arg,
                      cmd->name, names[best]);
  return error_exit(EXIT_USAGE, "unknown option '%s' for 'ctower %s' (options: %s)", arg, cmd->name,
                    list);
}

/* Splits argv (after the command name) into config, overrides and options.
 * Returns 0, or prints the error and returns EXIT_USAGE. */
static int parse_args(const command *cmd, int argc, char **argv, parsed_args *args) {
  int only_positional = 0;
  for (int i = 0; i < argc; ++i) {
    const char *arg = argv[i];
    if (!only_positional && strcmp(arg, "--") == 0) {
      only_positional = 1;
      continue;
    }
    if (!only_positional && (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0)) {
      args->help = 1;
      continue;
    }
    if (!only_positional && arg[0] == '-' && arg[1] != '\0') {
      const size_t name_len = strcspn(arg, "=");
      const option_spec *match = NULL;
      for (const option_spec *o = cmd->options; o->name && !match; ++o)
        if (strlen(o->name) == name_len && strncmp(o->name, arg, name_len) == 0) match = o;
      if (match == NULL) return unknown_option(cmd, arg);
      const char *value = NULL;
      if (match->takes_value) {
        if (arg[name_len] == '=') {
          value = arg + name_len + 1;
        } else if (i + 1 < argc) {
          value = argv[++i];
        }
        if (value == NULL || value[0] == '\0')
          return error_exit(EXIT_USAGE, "option '%s' needs a value (usage: %s)", match->name,
                            cmd->usage);
      } else if (arg[name_len] == '=') {
        return error_exit(EXIT_USAGE, "option '%s' takes no value, got '%s'", match->name, arg);
      }
      set_option(args, match->name, value);
      continue;
    }
    /* A positional: the config first, then KEY=VALUE overrides. */
    const int looks_like_override = strchr(arg, '=') != NULL;
    if (args->config_path == NULL && !(looks_like_override && !file_exists(arg))) {
      args->config_path = arg;
    } else if (looks_like_override) {
      args->overrides[args->n_overrides++] = arg;
    } else {
      return error_exit(EXIT_USAGE,
                        "unexpected argument '%s': overrides are KEY=VALUE, such as "
                        "train.epochs=5 (usage: %s)",
                        arg, cmd->usage);
    }
  }
  if (args->help) return 0;
  if (args->config_path == NULL &&
      (cmd->config_required == 1 || (cmd->config_required == 2 && !args->calibrate))) {
    if (args->n_overrides > 0)
      return error_exit(EXIT_USAGE,
                        "'ctower %s' needs a CONFIG.yaml argument before the overrides; '%s' "
                        "looks like an override (usage: %s)",
                        cmd->name, args->overrides[0], cmd->usage);
    return error_exit(EXIT_USAGE, "'ctower %s' needs a CONFIG.yaml argument (usage: %s)", cmd->name,
                      cmd->usage);
  }
  return 0;
}

/* Defaults, then the file (when given), then the overrides in order. */
static int build_config(const parsed_args *args, ct_config *config) {
  ct_status status = CT_STATUS_INIT;
  ct_config_defaults(config);
  if (args->config_path != NULL && ct_config_load(config, args->config_path, &status) != 0)
    return error_exit(EXIT_USAGE, "%s", status.message);
  for (int i = 0; i < args->n_overrides; ++i)
    if (ct_config_apply_override(config, args->overrides[i], &status) != 0)
      return error_exit(EXIT_USAGE, "%s", status.message);
  if (ct_config_check(config, &status) != 0) return error_exit(EXIT_USAGE, "%s", status.message);
  return 0;
}

/* A failure the trainer reported: 2 for bad input, 1 for anything else. */
/* Training stopped by SIGINT or SIGTERM, its work saved (every rank after
 * the same step): rank 0 says where on stderr, and every rank exits as a
 * shell reports the job's signal (130 when any rank got SIGINT, else 143),
 * so that mpirun's status is the same whichever rank it reports. */
static int interrupted_exit(const ct_status *status) {
  if (ct_cluster_rank() == 0) fprintf(stderr, "ctower: %s\n", status->message);
  const int sig = ct_trainer_interrupt_signal();
  return 128 + (sig ? sig : SIGTERM);
}

static int runtime_exit(const ct_status *status, const char *what) {
  if (status->code == CT_OK) return error_exit(EXIT_RUNTIME, "%s failed", what);
  return error_exit(status->code == CT_INVALID_ARGUMENT ? EXIT_USAGE : EXIT_RUNTIME, "%s",
                    status->message);
}

/* ---- a job of several ranks ------------------------------------------------- */

/* Keys whose values may differ between ranks: each machine's own files. */
static const char *const k_per_machine_keys[] = {"dataset.path", "train.checkpoint"};

/* The next line of the YAML that ct_config_write wrote, from *text on: its
 * dotted key into key (sections[] holds the sections open at each depth)
 * and its value into *value (NULL for a section or a comment). Returns 0 at
 * the end of the text. */
static int next_setting(const char **text, char sections[][64], char *key, size_t key_size,
                        const char **value, size_t *value_len) {
  const char *line = *text;
  if (*line == '\0') return 0;
  const size_t len = strcspn(line, "\n");
  *text = line + len + (line[len] == '\n');
  *value = NULL;
  key[0] = '\0';
  size_t indent = strspn(line, " ");
  if (line[indent] == '#' || indent / 2 >= 8) return 1;
  const size_t depth = indent / 2, name_len = strcspn(line + indent, ":\n");
  if (line[indent + name_len] != ':') return 1;
  if (indent + name_len + 1 >= len) { /* a section */
    snprintf(sections[depth], 64, "%.*s", (int)name_len, line + indent);
    return 1;
  }
  size_t used = 0;
  for (size_t d = 0; d < depth && used < key_size; ++d)
    used += (size_t)snprintf(key + used, key_size - used, "%s.", sections[d]);
  if (used < key_size) snprintf(key + used, key_size - used, "%.*s", (int)name_len, line + indent);
  *value = line + indent + name_len + 2;
  *value_len = len - indent - name_len - 2;
  return 1;
}

/* model.layers, one line of YAML, differs between this rank (mine) and
 * rank 0: the first layer that does, with both versions, as the error
 * sentence into message, rather than both whole lists. Returns 0 when a
 * value does not read back as a list (the caller quotes the values). */
static int layers_difference(const char *mine, size_t mine_len, const char *rank0, size_t rank0_len,
                             char *message, size_t size) {
  ct_config *lists = malloc(2 * sizeof *lists);
  char *assignment = malloc(mine_len + rank0_len + 32);
  int found = lists && assignment;
  for (int k = 0; k < 2 && found; ++k) {
    ct_status ignored = CT_STATUS_INIT;
    sprintf(assignment, "model.layers=%.*s", (int)(k ? rank0_len : mine_len), k ? rank0 : mine);
    ct_config_defaults(&lists[k]);
    found = ct_config_apply_override(&lists[k], assignment, &ignored) == 0;
  }
  char where[256], a[320], b[320];
  found = found && ct_config_layers_difference(&lists[0].model.layers, &lists[1].model.layers,
                                               where, sizeof where, a, b, sizeof a);
  if (found)
    snprintf(message, size,
             "ranks were started with different configs: %s is %s on worker %d but %s on worker "
             "0; start every rank with the same config and overrides",
             where, a, ct_cluster_rank(), b);
  free(assignment);
  free(lists);
  return found;
}

/* The first setting other than the per-machine keys where `mine` (this
 * rank's config as YAML) differs from rank 0's, as the error sentence into
 * message; "" when they agree. */
static void first_difference(const char *mine, const char *rank0, char *message, size_t size) {
  char sections_a[8][64] = {{0}}, sections_b[8][64] = {{0}}, key_a[256], key_b[256];
  const char *value_a, *value_b;
  size_t len_a = 0, len_b = 0;
  message[0] = '\0';
  for (;;) {
    const int more_a = next_setting(&mine, sections_a, key_a, sizeof key_a, &value_a, &len_a);
    const int more_b = next_setting(&rank0, sections_b, key_b, sizeof key_b, &value_b, &len_b);
    if (!more_a && !more_b) return;
    int per_machine = 0;
    for (size_t i = 0; i < sizeof k_per_machine_keys / sizeof k_per_machine_keys[0]; ++i)
      per_machine |= strcmp(key_a, k_per_machine_keys[i]) == 0;
    if (more_a && more_b && strcmp(key_a, key_b) == 0 &&
        (per_machine || (!value_a && !value_b) ||
         (value_a && value_b && len_a == len_b && memcmp(value_a, value_b, len_a) == 0)))
      continue;
    if (value_a && value_b && strcmp(key_a, "model.layers") == 0 &&
        layers_difference(value_a, len_a, value_b, len_b, message, size))
      return;
    snprintf(message, size,
             "ranks were started with different configs: %s is %.*s on worker %d but %.*s on "
             "worker 0; start every rank with the same config and overrides",
             key_a[0] ? key_a : key_b, value_a ? (int)len_a : 6, value_a ? value_a : "absent",
             ct_cluster_rank(), value_b ? (int)len_b : 6, value_b ? value_b : "absent");
    return;
  }
}

/* Every rank's verdict, in rank order, into verdicts (ct_cluster_size()
 * entries): 0, or 1 and the error printed. */
static int gather_verdicts(int64_t mine, int64_t *verdicts) {
  ct_status status = CT_STATUS_INIT;
  if (ct_cluster_allgather(&mine, sizeof mine, verdicts, &status))
    return error_exit(EXIT_RUNTIME, "%s", status.message);
  return 0;
}

/* After every rank built its config (rc: 0, DONE or the exit status of its
 * error, already printed): stops every rank when one failed, and compares
 * each rank's effective config with rank 0's, all but the per-machine keys.
 * A rank whose config differs names the first key that does and both
 * values, and every rank prints that; the ranks then return
 * USAGE_ON_EVERY_RANK (or their own rc). Returns rc when all agree. */
static int agree_on_config(int rc, const ct_config *config) {
  const int size = ct_cluster_size(), rank = ct_cluster_rank();
  int64_t *verdicts = calloc((size_t)size, sizeof *verdicts);
  if (verdicts == NULL) return error_exit(EXIT_RUNTIME, "out of memory comparing the configs");
  int failed = gather_verdicts(rc != 0, verdicts), other = -1;
  for (int r = 0; r < size && !failed && other < 0; ++r)
    if (verdicts[r]) other = r;
  if (failed || other >= 0) {
    if (!failed && rc == 0)
      error_exit(EXIT_USAGE, "worker %d could not start (see its error); every rank stops", other);
    free(verdicts);
    return failed ? EXIT_RUNTIME : rc == 0 ? USAGE_ON_EVERY_RANK : rc;
  }
  char *mine = NULL, *rank0 = NULL, message[1024] = "";
  size_t len = 0;
  ct_status status = CT_STATUS_INIT;
  FILE *out = open_memstream(&mine, &len);
  if (out == NULL) {
    free(verdicts);
    return error_exit(EXIT_RUNTIME, "out of memory comparing the configs");
  }
  ct_config_write(config, out);
  fclose(out);
  int64_t rank0_len = (int64_t)len;
  if (ct_cluster_broadcast(&rank0_len, sizeof rank0_len, 0, &status))
    failed = error_exit(EXIT_RUNTIME, "%s", status.message);
  rank0 = failed ? NULL : rank == 0 ? mine : malloc((size_t)rank0_len + 1);
  if (!failed && rank0 == NULL) failed = error_exit(EXIT_RUNTIME, "out of memory");
  if (!failed && ct_cluster_broadcast(rank0, (size_t)rank0_len + 1, 0, &status))
    failed = error_exit(EXIT_RUNTIME, "%s", status.message);
  if (!failed) {
    first_difference(mine, rank0, message, sizeof message);
    failed = gather_verdicts(message[0] != '\0', verdicts);
  }
  for (int r = 0; r < size && !failed && other < 0; ++r)
    if (verdicts[r]) other = r;
  if (!failed && other >= 0 && ct_cluster_broadcast(message, sizeof message, other, &status))
    failed = error_exit(EXIT_RUNTIME, "%s", status.message);
  if (rank0 != mine) free(rank0);
  free(mine);
  free(verdicts);
  if (failed) return EXIT_RUNTIME;
  if (other < 0) return rc;
  error_exit(EXIT_USAGE, "%s", message);
  return USAGE_ON_EVERY_RANK;
}

/* ---- commands -------------------------------------------------------------- */

/* The trainer's options and, when towers is not NULL, the towers the config
 * describes: 0, or the exit status of a config the options reject. */
static int trainer_options(const ct_config *config, ct_trainer_options *options,
                           ct_tower_options *towers) {
  ct_status status = CT_STATUS_INIT;
  ct_session_options session;
  ct_config_session_options(config, &session);
  ct_tower_request request;
  ct_config_tower_request(config, &request);
  if (towers && ct_towers_resolve(&request, &session, towers, &status))
    return runtime_exit(&status, "reading the config");
  ct_config_trainer_options(config, options);
  return 0;
}

/* In a job of several ranks, before training: the stall inspector with
 * cluster.stall_timeout_s. 0, or the exit status of the error printed. */
static int start_stall_inspector(const ct_config *config) {
  ct_status status = CT_STATUS_INIT;
  if (ct_cluster_start_stall_inspector(config->cluster.stall_timeout_s, &status))
    return runtime_exit(&status, "starting the stall inspector");
  return 0;
}

static int run_with_args(const command *cmd, int argc, char **argv, parsed_args *args,
                         ct_config *config) {
  args->overrides = calloc((size_t)argc + 1, sizeof *args->overrides);
  if (args->overrides == NULL) return error_exit(EXIT_RUNTIME, "out of memory");
  int rc = parse_args(cmd, argc, argv, args);
  if (rc == 0 && args->help) {
    fputs(cmd->help, stdout);
    rc = DONE;
  }
  if (rc == 0) rc = build_config(args, config);
  if (ct_cluster_size() > 1) rc = agree_on_config(rc, config);
  ct_status status = CT_STATUS_INIT;
  if (rc == 0 && ct_cluster_set_spec((int)config->cluster.ps, (int)config->cluster.worker, &status))
    rc = runtime_exit(&status, "reading the cluster spec");
  return rc;
}

/* --trace and --trace-steps A:B into options. Returns 0, or the exit
 * status of the usage error it printed. */
static int observe_options(const parsed_args *args, ct_observe_options *options) {
  *options = (ct_observe_options){args->trace, 0, 0};
  if (args->trace_steps == NULL) return 0;
  if (args->trace == NULL)
    return error_exit(EXIT_USAGE,
                      "--trace-steps says which steps --trace writes: give "
                      "--trace FILE too");
  long long first, end;
  char extra;
  if (sscanf(args->trace_steps, "%lld:%lld%c", &first, &end, &extra) != 2 || first < 0 ||
      end <= first)
    return error_exit(EXIT_USAGE,
                      "--trace-steps needs A:B with 0 <= A < B (steps A to B-1, counted from "
                      "0), got '%s'",
                      args->trace_steps);
  options->trace_first = first;
  options->trace_end = end;
  return 0;
}

static int cmd_train(const command *cmd, int argc, char **argv) {
  parsed_args args = {0};
  ct_config config;
  ct_trainer_options options;
  ct_tower_options towers;
  ct_train_flags flags = {0};
  int rc = run_with_args(cmd, argc, argv, &args, &config);
  if (rc == 0) rc = observe_options(&args, &flags.observe);
  if (rc == 0) rc = trainer_options(&config, &options, &towers);
  if (rc == 0) rc = start_stall_inspector(&config);
  if (rc == 0) {
    flags.memory_stats = args.memory_stats;
    flags.quiet = args.quiet;
    flags.resume = args.resume;
    flags.handle_signals = 1;
    /* the effective config, for the TensorBoard log */
    char *yaml = NULL;
    size_t yaml_size = 0;
    FILE *text = config.train.log_dir[0] ? open_memstream(&yaml, &yaml_size) : NULL;
    if (text) ct_config_write(&config, text);
    if (text && fclose(text) == 0) flags.config_text = yaml;
    ct_status status = CT_STATUS_INIT;
    rc = ct_train_main(&options, &towers, &flags, &status) == 0 ? EXIT_OK
         : status.code == CT_CANCELLED                          ? interrupted_exit(&status)
                                                                : runtime_exit(&status, "training");
    free(yaml);
  }
  free(args.overrides);
  return rc;
}

static int cmd_eval(const command *cmd, int argc, char **argv) {
  parsed_args args = {0};
  ct_config config;
  ct_trainer_options options;
  int rc = run_with_args(cmd, argc, argv, &args, &config);
  if (rc == 0) rc = trainer_options(&config, &options, NULL);
  if (rc == 0) {
    ct_status status = CT_STATUS_INIT;
    rc = ct_eval_main(&options, args.checkpoint, &status) == 0
             ? EXIT_OK
             : runtime_exit(&status, "evaluation");
  }
  free(args.overrides);
  return rc;
}

/* Prints every rank's text (at most `bytes` bytes each, NUL-terminated) in
 * rank order: rank 0 prints them all. Returns 0 or the exit status of the
 * error it printed. */
static int print_from_every_rank(const char *mine, size_t bytes) {
  const size_t size = (size_t)ct_cluster_size();
  char *all = malloc(size * bytes);
  if (all == NULL) return error_exit(EXIT_RUNTIME, "out of memory gathering the ranks' devices");
  ct_status status = CT_STATUS_INIT;
  const int failed = ct_cluster_allgather(mine, bytes, all, &status);
  for (size_t r = 0; r < size && !failed && ct_cluster_rank() == 0; ++r)
    fputs(all + r * bytes, stdout);
  free(all);
  return failed ? error_exit(EXIT_RUNTIME, "%s", status.message) : EXIT_OK;
}

/* Lists the devices a session made from the config's `session:` section
 * has; in a job of several ranks, every rank's, printed by rank 0. */
static int print_devices(const ct_config *config) {
  ct_session_options options;
  ct_config_session_options(config, &options);
  options.log_device_placement = 0;
  ct_graph *graph = ct_graph_new();
  ct_status status = CT_STATUS_INIT;
  ct_session *session = graph ? ct_session_new(graph, &options, &status) : NULL;
  if (session == NULL) {
    ct_graph_free(graph);
    return runtime_exit(&status, "creating the devices");
  }
  char listing[CT_MAX_DEVICES * 512] = "";
  size_t used = 0;
  for (int i = 0; i < ct_session_device_count(session); ++i) {
    ct_device_info info;
    ct_session_device_info(session, i, &info);
    char limit[32] = "none", cores[64] = "";
    if (info.memory_limit > 0) snprintf(limit, sizeof limit, "%zu MiB", info.memory_limit >> 20);
    if (info.first_core >= 0)
      snprintf(cores, sizeof cores, " (pinned to %d-%d)", info.first_core,
               info.first_core + info.threads - 1);
    int w = snprintf(listing + used, sizeof listing - used,
                     "%s  kind: %s  %s: %d%s  memory limit: %s%s%s\n", info.name, info.kind,
                     strcmp(info.kind, "GPU") == 0 ? "SMs" : "cores", info.threads, cores, limit,
                     info.description[0] ? "  " : "", info.description);
    if (w > 0) used = used + (size_t)w < sizeof listing ? used + (size_t)w : sizeof listing - 1;
  }
  ct_session_free(session);
  ct_graph_free(graph);
  const int rc = print_from_every_rank(listing, sizeof listing);
  /* what this process loads for its devices, and from where */
  char runtime[8192];
  ct_device_runtime_describe(runtime, sizeof runtime);
  if (rc == EXIT_OK && ct_cluster_rank() == 0) fputs(runtime, stdout);
  return rc;
}

static int cmd_devices(const command *cmd, int argc, char **argv) {
  parsed_args args = {0};
  ct_config config;
  int rc = run_with_args(cmd, argc, argv, &args, &config);
  if (rc == 0) rc = print_devices(&config);
  free(args.overrides);
  return rc;
}

/* A count option's value: a whole number >= minimum, or -1 (an error was printed). */
static int count_option(const char *name, const char *text, int fallback, int minimum) {
  if (text == NULL) return fallback;
  char *end = NULL;
  long value = strtol(text, &end, 10);
  if (*text == '\0' || *end != '\0' || value < minimum || value > 1000000) {
    error_exit(EXIT_USAGE, "%s needs a whole number >= %d, got '%s'", name, minimum, text);
    return -1;
  }
  return (int)value;
}

static int cmd_bench(const command *cmd, int argc, char **argv) {
  parsed_args args = {0};
  ct_config config;
  ct_trainer_options options;
  ct_tower_options towers;
  int rc = run_with_args(cmd, argc, argv, &args, &config);
  if (rc == 0) {
    ct_bench_flags flags = {count_option("--steps", args.steps, 30, 1),
                            count_option("--warmup", args.warmup, 5, 0),
                            args.compare_single,
                            {NULL, 0, 0}};
    if (args.calibrate) {
      ct_session_options session;
      ct_config_session_options(&config, &session);
      ct_status status = CT_STATUS_INIT;
      rc = ct_calibrate_main(&session, args.calibration, &status) == 0
               ? EXIT_OK
               : runtime_exit(&status, "the calibration");
    } else if (flags.steps < 0 || flags.warmup < 0) {
      rc = EXIT_USAGE;
    } else if ((rc = observe_options(&args, &flags.observe)) == 0 &&
               (rc = trainer_options(&config, &options, &towers)) == 0 &&
               (rc = start_stall_inspector(&config)) == 0) {
      ct_status status = CT_STATUS_INIT;
      rc = ct_bench_main(&options, &towers, &flags, &status) == 0
               ? EXIT_OK
               : runtime_exit(&status, "the benchmark");
    }
  }
  free(args.overrides);
  return rc;
}

/* --link-gbps X[,Y...]: into flags (default 10 and 100). 0, or EXIT_USAGE
 * with the error printed: a bandwidth must be a finite number of Gb/s
 * above 0 and at most k_max_gbps (an infinite or absurd one would
 * answer the ranks question with nonsense), and there are at most 8. */
static int link_bandwidths(const char *text, ct_plan_flags *flags) {
  static const double k_default[] = {10, 100};
  enum { MAX_LINKS = sizeof flags->link_gbps / sizeof flags->link_gbps[0] };
  static const double k_max_gbps = 1e6; /* a petabit per second */
  flags->n_links = 0;
  if (text == NULL) {
    for (int i = 0; i < 2; ++i) flags->link_gbps[flags->n_links++] = k_default[i];
    return 0;
  }
  for (const char *p = text; *p;) {
    char *end = NULL;
    const double gbps = strtod(p, &end);
    if (end == p || !(gbps > 0 && gbps <= k_max_gbps) || (*end != ',' && *end != '\0'))
      return error_exit(EXIT_USAGE,
                        "--link-gbps needs bandwidths in Gb/s in (0, %.0f], such as 10 or 10,100, "
                        "got '%s'",
                        k_max_gbps, text);
    if (flags->n_links == MAX_LINKS)
      return error_exit(EXIT_USAGE, "--link-gbps takes at most %d bandwidths, got '%s'",
                        (int)MAX_LINKS, text);
    flags->link_gbps[flags->n_links++] = gbps;
    p = *end == ',' ? end + 1 : end;
  }
  return 0;
}

static int cmd_plan(const command *cmd, int argc, char **argv) {
  parsed_args args = {0};
  ct_config config;
  ct_trainer_options options;
  ct_tower_options towers;
  ct_plan_flags flags = {0};
  int rc = run_with_args(cmd, argc, argv, &args, &config);
  if (rc == 0) rc = link_bandwidths(args.link_gbps, &flags);
  if (rc == 0) rc = trainer_options(&config, &options, &towers);
  if (rc == 0) {
    ct_status status = CT_STATUS_INIT;
    flags.verbose = args.verbose;
    flags.calibration = args.calibration;
    rc = ct_plan_main(&options, &towers, &flags, &status) == 0 ? EXIT_OK
                                                               : runtime_exit(&status, "the plan");
  }
  free(args.overrides);
  return rc;
}

static const option_spec k_train_options[] = {{"--memory-stats", 0}, {"--quiet", 0},
                                              {"--resume", 0},       {"--trace", 1},
                                              {"--trace-steps", 1},  {NULL, 0}};
static const option_spec k_eval_options[] = {{"--checkpoint", 1}, {NULL, 0}};
static const option_spec k_bench_options[] = {
    {"--steps", 1},       {"--warmup", 1},    {"--compare-single", 0}, {"--trace", 1},
    {"--trace-steps", 1}, {"--calibrate", 0}, {"--calibration", 1},    {NULL, 0}};
static const option_spec k_plan_options[] = {
    {"--verbose", 0}, {"--calibration", 1}, {"--link-gbps", 1}, {NULL, 0}};
static const option_spec k_no_options[] = {{NULL, 0}};

static const command k_commands[] = {
    {"train",
     "ctower train CONFIG.yaml [KEY=VALUE ...] [--memory-stats] [--quiet] [--resume] "
     "[--trace FILE [--trace-steps A:B]]",
     k_train_help, 1, k_train_options, cmd_train},
    {"eval", "ctower eval CONFIG.yaml [--checkpoint F] [KEY=VALUE ...]", k_eval_help, 1,
     k_eval_options, cmd_eval},
    {"devices", "ctower devices [CONFIG.yaml] [KEY=VALUE ...]", k_devices_help, 0, k_no_options,
     cmd_devices},
    {"bench",
     "ctower bench CONFIG.yaml [KEY=VALUE ...] [--steps N] [--warmup N] [--compare-single] "
     "[--trace FILE [--trace-steps A:B]]",
     k_bench_help, 2, k_bench_options, cmd_bench},
    {"plan", "ctower plan CONFIG.yaml [KEY=VALUE ...] [--verbose] [--link-gbps X]", k_plan_help, 1,
     k_plan_options, cmd_plan},
};
enum { N_COMMANDS = sizeof k_commands / sizeof k_commands[0] };

static const command *find_command(const char *name) {
  for (size_t i = 0; i < N_COMMANDS; ++i)
    if (strcmp(k_commands[i].name, name) == 0) return &k_commands[i];
  return NULL;
}

static int unknown_command(const char *name) {
  const char *names[N_COMMANDS];
  for (size_t i = 0; i < N_COMMANDS; ++i) names[i] = k_commands[i].name;
  int best = ct_closest_name(name, names, N_COMMANDS);
  if (best >= 0)
    return error_exit(EXIT_USAGE, "unknown command '%s'; did you mean '%s'? (run 'ctower --help')",
                      name, names[best]);
  return error_exit(EXIT_USAGE,
                    "unknown command '%s' (commands: train, eval, devices, bench, plan; run "
                    "'ctower --help')",
                    name);
}

/* The command line's command, run; its exit status. */
static int run_command(int argc, char **argv) {
  if (argc < 2)
    return error_exit(EXIT_USAGE,
                      "no command given (commands: train, eval, devices, bench, plan; run "
                      "'ctower --help')");
  const char *first = argv[1];
  if (strcmp(first, "--help") == 0 || strcmp(first, "-h") == 0 || strcmp(first, "help") == 0) {
    const command *cmd = argc > 2 ? find_command(argv[2]) : NULL;
    if (argc > 2 && cmd == NULL) return unknown_command(argv[2]);
    fputs(cmd ? cmd->help : k_overview, stdout);
    return EXIT_OK;
  }
  if (strcmp(first, "--version") == 0) {
    printf("ctower %s\n", CTOWER_VERSION);
    return EXIT_OK;
  }
  if (first[0] == '-') {
    static const char *const k_top_options[] = {"--help", "--version"};
    int best = ct_closest_name(first, k_top_options, 2);
    if (best >= 0)
      return error_exit(EXIT_USAGE, "unknown option '%s'; did you mean '%s'?", first,
                        k_top_options[best]);
    return error_exit(EXIT_USAGE,
                      "unknown option '%s' (before the command only --help and --version; run "
                      "'ctower --help')",
                      first);
  }
  const command *cmd = find_command(first);
  if (cmd == NULL) return unknown_command(first);
  return cmd->run(cmd, argc - 2, argv + 2);
}

/* Joins the job when mpirun started this process; ranks other than 0 keep
 * only stderr. A rank that failed on its own ends the whole job. */
/* The command's whole run, MPI's start and end included. */
static int main_on_command_stack(int argc, char **argv) {
  ct_status status = CT_STATUS_INIT;
  if (ct_cluster_init(&argc, &argv, &status) != 0)
    return error_exit(EXIT_RUNTIME, "%s", status.message);
  int rc = ct_cluster_rank() != 0 && freopen("/dev/null", "w", stdout) == NULL
               ? error_exit(EXIT_RUNTIME, "could not send worker %d's output to /dev/null",
                            ct_cluster_rank())
               : run_command(argc, argv);
  if (rc == DONE) rc = EXIT_OK;
  if (rc == USAGE_ON_EVERY_RANK)
    rc = EXIT_USAGE;
  else if (rc != EXIT_OK && rc < 128 && ct_cluster_size() > 1)
    ct_cluster_abort(rc); /* >= 128: every rank stopped after one step, and ends normally */
  ct_cluster_finalize();
  return rc;
}

int main(int argc, char **argv) {
  return ct_cli_run_on_command_stack(main_on_command_stack, argc, argv);
}
