/* A job of several ranks: every rank checks that it was started with rank
 * 0's config (rank_config.h). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/rank_config.h"
#include "cluster/communication.h"

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
    return ct_cli_error(EXIT_RUNTIME, "%s", status.message);
  return 0;
}

/* After every rank built its config (rc: 0, DONE or the exit status of its
 * error, already printed): stops every rank when one failed, and compares
 * each rank's effective config with rank 0's, all but the per-machine keys.
 * A rank whose config differs names the first key that does and both
 * values, and every rank prints that; the ranks then return
 * USAGE_ON_EVERY_RANK (or their own rc). Returns rc when all agree. */
int ct_cli_agree_on_config(int rc, const ct_config *config) {
  const int size = ct_cluster_size(), rank = ct_cluster_rank();
  int64_t *verdicts = calloc((size_t)size, sizeof *verdicts);
  if (verdicts == NULL) return ct_cli_error(EXIT_RUNTIME, "out of memory comparing the configs");
  int failed = gather_verdicts(rc != 0, verdicts), other = -1;
  for (int r = 0; r < size && !failed && other < 0; ++r)
    if (verdicts[r]) other = r;
  if (failed || other >= 0) {
    if (!failed && rc == 0)
      ct_cli_error(EXIT_USAGE, "worker %d could not start (see its error); every rank stops", other);
    free(verdicts);
    return failed ? EXIT_RUNTIME : rc == 0 ? USAGE_ON_EVERY_RANK : rc;
  }
  char *mine = NULL, *rank0 = NULL, message[1024] = "";
  size_t len = 0;
  ct_status status = CT_STATUS_INIT;
  FILE *out = open_memstream(&mine, &len);
  if (out == NULL) {
    free(verdicts);
    return ct_cli_error(EXIT_RUNTIME, "out of memory comparing the configs");
  }
  ct_config_write(config, out);
  fclose(out);
  int64_t rank0_len = (int64_t)len;
  if (ct_cluster_broadcast(&rank0_len, sizeof rank0_len, 0, &status))
    failed = ct_cli_error(EXIT_RUNTIME, "%s", status.message);
  rank0 = failed ? NULL : rank == 0 ? mine : malloc((size_t)rank0_len + 1);
  if (!failed && rank0 == NULL) failed = ct_cli_error(EXIT_RUNTIME, "out of memory");
  if (!failed && ct_cluster_broadcast(rank0, (size_t)rank0_len + 1, 0, &status))
    failed = ct_cli_error(EXIT_RUNTIME, "%s", status.message);
  if (!failed) {
    first_difference(mine, rank0, message, sizeof message);
    failed = gather_verdicts(message[0] != '\0', verdicts);
  }
  for (int r = 0; r < size && !failed && other < 0; ++r)
    if (verdicts[r]) other = r;
  if (!failed && other >= 0 && ct_cluster_broadcast(message, sizeof message, other, &status))
    failed = ct_cli_error(EXIT_RUNTIME, "%s", status.message);
  if (rank0 != mine) free(rank0);
  free(mine);
  free(verdicts);
  if (failed) return EXIT_RUNTIME;
  if (other < 0) return rc;
  ct_cli_error(EXIT_USAGE, "%s", message);
  return USAGE_ON_EVERY_RANK;
}
