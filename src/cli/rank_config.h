/* Every rank of a job checks its config against rank 0's (rank_config.c). */
#ifndef CTOWER_CLI_RANK_CONFIG_H
#define CTOWER_CLI_RANK_CONFIG_H

#include "ctower/config.h"

/* After every rank built its config (rc: 0, DONE or the exit status of its
 * error, already printed): stops every rank when one failed, and compares
 * each rank's effective config with rank 0's, all but the per-machine keys.
 * A rank whose config differs names the first key that does and both
 * values, and every rank prints that; the ranks then return
 * USAGE_ON_EVERY_RANK (or their own rc). Returns rc when all agree. */
int ct_cli_agree_on_config(int rc, const ct_config *config);

#endif
