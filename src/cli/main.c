/* The `ctower` command: parses the command line, builds the effective config
 * (defaults, then the file, then KEY=VALUE overrides) and hands it to the
 * trainer. Exit status: 0 success, 1 runtime failure, 2 bad usage or config.
 *
 * Under mpirun each rank runs the command: rank 0 prints, the others only
 * their errors and warnings, each error prefixed with "[worker k] ". Every
 * rank checks that it was started with rank 0's config; a rank that fails
 * otherwise ends the whole job, so that no rank waits for it forever. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/command_stack.h"
#include "cli/help.h"
#include "cli/rank_config.h"
#include "cluster/communication.h"
#include "config/suggest.h"
#include "ctower/config.h"
#include "ctower/trainer.h"

/* Defaults, then the file (when given), then the overrides in order. */
static int build_config(const parsed_args *args, ct_config *config) {
  ct_status status = CT_STATUS_INIT;
  ct_config_defaults(config);
  if (args->config_path != NULL && ct_config_load(config, args->config_path, &status) != 0)
    return ct_cli_error(EXIT_USAGE, "%s", status.message);
  for (int i = 0; i < args->n_overrides; ++i)
    if (ct_config_apply_override(config, args->overrides[i], &status) != 0)
      return ct_cli_error(EXIT_USAGE, "%s", status.message);
  if (ct_config_check(config, &status) != 0) return ct_cli_error(EXIT_USAGE, "%s", status.message);
  return 0;
}

/* Training stopped by SIGINT or SIGTERM, its work saved (every rank after
 * the same step): rank 0 says where on stderr, and every rank exits as a
 * shell reports the job's signal (130 when any rank got SIGINT, else 143),
 * so that mpirun's status is the same whichever rank it reports. */
static int interrupted_exit(const ct_status *status) {
  if (ct_cluster_rank() == 0) fprintf(stderr, "ctower: %s\n", status->message);
  const int sig = ct_trainer_interrupt_signal();
  return 128 + (sig ? sig : SIGTERM);
}

/* A failure the trainer reported: 2 for bad input, 1 for anything else. */
static int runtime_exit(const ct_status *status, const char *what) {
  if (status->code == CT_OK) return ct_cli_error(EXIT_RUNTIME, "%s failed", what);
  return ct_cli_error(status->code == CT_INVALID_ARGUMENT ? EXIT_USAGE : EXIT_RUNTIME, "%s",
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
  if (args->overrides == NULL) return ct_cli_error(EXIT_RUNTIME, "out of memory");
  int rc = ct_cli_parse_args(cmd, argc, argv, args);
  if (rc == 0 && args->help) {
    fputs(cmd->help, stdout);
    rc = DONE;
  }
  if (rc == 0) rc = build_config(args, config);
  if (ct_cluster_size() > 1) rc = ct_cli_agree_on_config(rc, config);
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
    return ct_cli_error(EXIT_USAGE,
                      "--trace-steps says which steps --trace writes: give "
                      "--trace FILE too");
  long long first, end;
  char extra;
  if (sscanf(args->trace_steps, "%lld:%lld%c", &first, &end, &extra) != 2 || first < 0 ||
      end <= first)
    return ct_cli_error(EXIT_USAGE,
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
  if (all == NULL) return ct_cli_error(EXIT_RUNTIME, "out of memory gathering the ranks' devices");
  ct_status status = CT_STATUS_INIT;
  const int failed = ct_cluster_allgather(mine, bytes, all, &status);
  for (size_t r = 0; r < size && !failed && ct_cluster_rank() == 0; ++r)
    fputs(all + r * bytes, stdout);
  free(all);
  return failed ? ct_cli_error(EXIT_RUNTIME, "%s", status.message) : EXIT_OK;
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
    ct_cli_error(EXIT_USAGE, "%s needs a whole number >= %d, got '%s'", name, minimum, text);
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
      return ct_cli_error(EXIT_USAGE,
                        "--link-gbps needs bandwidths in Gb/s in (0, %.0f], such as 10 or 10,100, "
                        "got '%s'",
                        k_max_gbps, text);
    if (flags->n_links == MAX_LINKS)
      return ct_cli_error(EXIT_USAGE, "--link-gbps takes at most %d bandwidths, got '%s'",
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
     ct_help_train, 1, k_train_options, cmd_train},
    {"eval", "ctower eval CONFIG.yaml [--checkpoint F] [KEY=VALUE ...]", ct_help_eval, 1,
     k_eval_options, cmd_eval},
    {"devices", "ctower devices [CONFIG.yaml] [KEY=VALUE ...]", ct_help_devices, 0, k_no_options,
     cmd_devices},
    {"bench",
     "ctower bench CONFIG.yaml [KEY=VALUE ...] [--steps N] [--warmup N] [--compare-single] "
     "[--trace FILE [--trace-steps A:B]]",
     ct_help_bench, 2, k_bench_options, cmd_bench},
    {"plan", "ctower plan CONFIG.yaml [KEY=VALUE ...] [--verbose] [--link-gbps X]", ct_help_plan, 1,
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
    return ct_cli_error(EXIT_USAGE, "unknown command '%s'; did you mean '%s'? (run 'ctower --help')",
                      name, names[best]);
  return ct_cli_error(EXIT_USAGE,
                    "unknown command '%s' (commands: train, eval, devices, bench, plan; run "
                    "'ctower --help')",
                    name);
}

/* The command line's command, run; its exit status. */
static int run_command(int argc, char **argv) {
  if (argc < 2)
    return ct_cli_error(EXIT_USAGE,
                      "no command given (commands: train, eval, devices, bench, plan; run "
                      "'ctower --help')");
  const char *first = argv[1];
  if (strcmp(first, "--help") == 0 || strcmp(first, "-h") == 0 || strcmp(first, "help") == 0) {
    const command *cmd = argc > 2 ? find_command(argv[2]) : NULL;
    if (argc > 2 && cmd == NULL) return unknown_command(argv[2]);
    fputs(cmd ? cmd->help : ct_help_overview, stdout);
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
      return ct_cli_error(EXIT_USAGE, "unknown option '%s'; did you mean '%s'?", first,
                        k_top_options[best]);
    return ct_cli_error(EXIT_USAGE,
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
    return ct_cli_error(EXIT_RUNTIME, "%s", status.message);
  int rc = ct_cluster_rank() != 0 && freopen("/dev/null", "w", stdout) == NULL
               ? ct_cli_error(EXIT_RUNTIME, "could not send worker %d's output to /dev/null",
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
