/* The `ctower` command: parses the command line, builds the effective config
 * (defaults, then the file, then KEY=VALUE overrides) and hands it to the
 * trainer. Exit status: 0 success, 1 runtime failure, 2 bad usage or config.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/suggest.h"
#include "ctower/config.h"
#include "ctower/trainer.h"

#ifndef CTOWER_VERSION
#define CTOWER_VERSION "unknown"
#endif

enum { EXIT_OK = 0, EXIT_RUNTIME = 1, EXIT_USAGE = 2 };

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
    "  ctower --help | CMD --help | --version\n"
    "\n"
    "An override's VALUE is read as YAML, so lists and maps work too:\n"
    "  devices.towers=[/cpu:0,/cpu:1]   'session.device_count={CPU: 2}'\n"
    "Options such as --checkpoint F or --memory-stats may come before or after the overrides.\n"
    "Every config key with its type and default: docs/config.md.\n"
    "\n"
    "Exit status: 0 success, 1 runtime failure (out of memory, NaN loss, I/O),\n"
    "             2 bad usage or bad config.\n";

static const char k_train_help[] =
    "Usage: ctower train CONFIG.yaml [KEY=VALUE ...] [--memory-stats] [--quiet] [--resume]\n"
    "\n"
    "Trains the model CONFIG.yaml describes on the devices it names, printing progress\n"
    "and writing the checkpoint (train.checkpoint) after each epoch.\n"
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
    "  -h, --help       show this help\n"
    "\n"
    "Exit status: 0 success, 1 runtime failure, 2 bad usage or bad config.\n";

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
    "memory limit. With a config, its session settings (device_count,\n"
    "memory_limit_mb, gpu_options) apply.\n"
    "\n"
    "Options:\n"
    "  -h, --help       show this help\n"
    "\n"
    "Exit status: 0 success, 1 runtime failure, 2 bad usage or bad config.\n";

static const char k_bench_help[] =
    "Usage: ctower bench CONFIG.yaml [KEY=VALUE ...] [--steps N] [--warmup N]\n"
    "\n"
    "Measures training throughput, as tf_cnn_benchmarks does: the model, batch,\n"
    "towers and devices of CONFIG.yaml train for --warmup steps (default 5), then\n"
    "--steps timed steps (default 30) on the dataset's batches; prints the median\n"
    "images/sec and step time, and each device's peak memory. Nothing is saved.\n"
    "\n"
    "Options (before or after the overrides):\n"
    "  --steps N        timed steps (1 or more)\n"
    "  --warmup N       untimed steps first (0 or more)\n"
    "  -h, --help       show this help\n"
    "\n"
    "Exit status: 0 success, 1 runtime failure, 2 bad usage or bad config.\n";

static int error_exit(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prints "ctower: error: <message>" on stderr and returns code. */
static int error_exit(int code, const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  fputs("ctower: error: ", stderr);
  vfprintf(stderr, fmt, args);
  fputc('\n', stderr);
  va_end(args);
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
  int config_required;
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
  if (args->config_path == NULL && cmd->config_required) {
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
  return 0;
}

/* A failure the trainer reported: 2 for bad input, 1 for anything else. */
static int runtime_exit(const ct_status *status, const char *what) {
  if (status->code == CT_OK) return error_exit(EXIT_RUNTIME, "%s failed", what);
  return error_exit(status->code == CT_INVALID_ARGUMENT ? EXIT_USAGE : EXIT_RUNTIME, "%s",
                    status->message);
}

/* ---- commands -------------------------------------------------------------- */

/* The trainer's options and, when towers is not NULL, the towers the config
 * describes: 0, or the exit status of a config the options reject. */
static int trainer_options(const ct_config *config, ct_trainer_options *options,
                           ct_tower_options *towers) {
  ct_status status = CT_STATUS_INIT;
  ct_session_options session;
  ct_config_session_options(config, &session);
  if ((towers && ct_config_tower_options(config, &session, towers, &status)) ||
      ct_config_trainer_options(config, options, &status))
    return runtime_exit(&status, "reading the config");
  return 0;
}

static int run_with_args(const command *cmd, int argc, char **argv, parsed_args *args,
                         ct_config *config) {
  args->overrides = calloc((size_t)argc + 1, sizeof *args->overrides);
  if (args->overrides == NULL) return error_exit(EXIT_RUNTIME, "out of memory");
  int rc = parse_args(cmd, argc, argv, args);
  if (rc == 0 && args->help) {
    fputs(cmd->help, stdout);
    return -1; /* done: exit 0 */
  }
  if (rc == 0) rc = build_config(args, config);
  return rc;
}

static int cmd_train(const command *cmd, int argc, char **argv) {
  parsed_args args = {0};
  ct_config config;
  ct_trainer_options options;
  ct_tower_options towers;
  int rc = run_with_args(cmd, argc, argv, &args, &config);
  if (rc == 0) rc = trainer_options(&config, &options, &towers);
  if (rc == 0) {
    ct_train_flags flags = {.memory_stats = args.memory_stats, .quiet = args.quiet, .resume = args.resume};
    ct_status status = CT_STATUS_INIT;
    rc = ct_train_main(&options, &towers, &flags, &status) == 0 ? EXIT_OK
                                                                 : runtime_exit(&status, "training");
  }
  free(args.overrides);
  return rc < 0 ? EXIT_OK : rc;
}

static int cmd_eval(const command *cmd, int argc, char **argv) {
  parsed_args args = {0};
  ct_config config;
  ct_trainer_options options;
  int rc = run_with_args(cmd, argc, argv, &args, &config);
  if (rc == 0) rc = trainer_options(&config, &options, NULL);
  if (rc == 0) {
    ct_status status = CT_STATUS_INIT;
    rc = ct_eval_main(&options, args.checkpoint, &status) == 0 ? EXIT_OK
                                                               : runtime_exit(&status, "evaluation");
  }
  free(args.overrides);
  return rc < 0 ? EXIT_OK : rc;
}

/* Lists the devices a session made from the config's `session:` section has. */
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
  for (int i = 0; i < ct_session_device_count(session); ++i) {
    ct_device_info info;
    ct_session_device_info(session, i, &info);
    char limit[32] = "none", cores[64] = "";
    if (info.memory_limit > 0)
      snprintf(limit, sizeof limit, "%zu MiB", info.memory_limit >> 20);
    if (info.first_core >= 0)
      snprintf(cores, sizeof cores, " (pinned to %d-%d)", info.first_core,
               info.first_core + info.threads - 1);
    printf("%s  kind: %s  %s: %d%s  memory limit: %s%s%s\n", info.name, info.kind,
           strcmp(info.kind, "GPU") == 0 ? "SMs" : "cores", info.threads, cores, limit,
           info.description[0] ? "  " : "", info.description);
  }
  ct_session_free(session);
  ct_graph_free(graph);
  return EXIT_OK;
}

static int cmd_devices(const command *cmd, int argc, char **argv) {
  parsed_args args = {0};
  ct_config config;
  int rc = run_with_args(cmd, argc, argv, &args, &config);
  if (rc == 0) rc = print_devices(&config);
  free(args.overrides);
  return rc < 0 ? EXIT_OK : rc;
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
    int steps = count_option("--steps", args.steps, 30, 1);
    int warmup = count_option("--warmup", args.warmup, 5, 0);
    if (steps < 0 || warmup < 0) {
      rc = EXIT_USAGE;
    } else if ((rc = trainer_options(&config, &options, &towers)) == 0) {
      ct_status status = CT_STATUS_INIT;
      rc = ct_bench_main(&options, &towers, steps, warmup, &status) == 0
               ? EXIT_OK
               : runtime_exit(&status, "the benchmark");
    }
  }
  free(args.overrides);
  return rc < 0 ? EXIT_OK : rc;
}

static const option_spec k_train_options[] = {
    {"--memory-stats", 0}, {"--quiet", 0}, {"--resume", 0}, {NULL, 0}};
static const option_spec k_eval_options[] = {{"--checkpoint", 1}, {NULL, 0}};
static const option_spec k_bench_options[] = {{"--steps", 1}, {"--warmup", 1}, {NULL, 0}};
static const option_spec k_no_options[] = {{NULL, 0}};

static const command k_commands[] = {
    {"train", "ctower train CONFIG.yaml [KEY=VALUE ...] [--memory-stats] [--quiet] [--resume]",
     k_train_help,
     1, k_train_options, cmd_train},
    {"eval", "ctower eval CONFIG.yaml [--checkpoint F] [KEY=VALUE ...]", k_eval_help, 1,
     k_eval_options, cmd_eval},
    {"devices", "ctower devices [CONFIG.yaml] [KEY=VALUE ...]", k_devices_help, 0, k_no_options,
     cmd_devices},
    {"bench", "ctower bench CONFIG.yaml [KEY=VALUE ...] [--steps N] [--warmup N]", k_bench_help, 1,
     k_bench_options, cmd_bench},
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
                    "unknown command '%s' (commands: train, eval, devices, bench; run "
                    "'ctower --help')",
                    name);
}

int main(int argc, char **argv) {
  if (argc < 2)
    return error_exit(EXIT_USAGE,
                      "no command given (commands: train, eval, devices, bench; run "
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
