/* What the parts of the `ctower` command share: exit statuses, the
 * commands' table entries and their parsed arguments (args.c). */
#ifndef CTOWER_CLI_CLI_H
#define CTOWER_CLI_CLI_H

enum { EXIT_OK = 0, EXIT_RUNTIME = 1, EXIT_USAGE = 2 };
/* What the commands return besides exit statuses: done early (help
 * printed), exit 0; and a bad config that every rank of the job reported
 * alike, exit 2 without ending the others (main). */
enum { DONE = -1, USAGE_ON_EVERY_RANK = -2 };

/* Prints "ctower: error: <message>" on stderr, after this rank's prefix
 * ("[worker k] " in a job of several ranks), in one write so that ranks'
 * lines do not interleave, and returns code. The message stays one line
 * whatever it quotes: control characters (a newline in a value) are
 * written as \n, \t or \xNN. */
int ct_cli_error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

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

/* Splits argv (after the command name) into config, overrides and options.
 * Returns 0, or prints the error and returns EXIT_USAGE. */
int ct_cli_parse_args(const command *cmd, int argc, char **argv, parsed_args *args);

#endif
