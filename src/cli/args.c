/* The `ctower` command's arguments: options, the config and overrides,
 * and its error lines (cli.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "cluster/communication.h"
#include "config/suggest.h"

/* Prints "ctower: error: <message>" on stderr, after this rank's prefix
 * ("[worker k] " in a job of several ranks), in one write so that ranks'
 * lines do not interleave, and returns code. The message stays one line
 * whatever it quotes: control characters (a newline in a value) are
 * written as \n, \t or \xNN. */
int ct_cli_error(int code, const char *fmt, ...) {
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
    return ct_cli_error(EXIT_USAGE, "unknown option '%s' for 'ctower %s'; did you mean '%s'?", arg,
                      cmd->name, names[best]);
  return ct_cli_error(EXIT_USAGE, "unknown option '%s' for 'ctower %s' (options: %s)", arg, cmd->name,
                    list);
}

/* Splits argv (after the command name) into config, overrides and options.
 * Returns 0, or prints the error and returns EXIT_USAGE. */
int ct_cli_parse_args(const command *cmd, int argc, char **argv, parsed_args *args) {
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
          return ct_cli_error(EXIT_USAGE, "option '%s' needs a value (usage: %s)", match->name,
                            cmd->usage);
      } else if (arg[name_len] == '=') {
        return ct_cli_error(EXIT_USAGE, "option '%s' takes no value, got '%s'", match->name, arg);
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
      return ct_cli_error(EXIT_USAGE,
                        "unexpected argument '%s': overrides are KEY=VALUE, such as "
                        "train.epochs=5 (usage: %s)",
                        arg, cmd->usage);
    }
  }
  if (args->help) return 0;
  if (args->config_path == NULL &&
      (cmd->config_required == 1 || (cmd->config_required == 2 && !args->calibrate))) {
    if (args->n_overrides > 0)
      return ct_cli_error(EXIT_USAGE,
                        "'ctower %s' needs a CONFIG.yaml argument before the overrides; '%s' "
                        "looks like an override (usage: %s)",
                        cmd->name, args->overrides[0], cmd->usage);
    return ct_cli_error(EXIT_USAGE, "'ctower %s' needs a CONFIG.yaml argument (usage: %s)", cmd->name,
                      cmd->usage);
  }
  return 0;
}
