#!/usr/bin/env bash
# The stall inspector ends a job whose rank 1 has stopped: under
# `timeout 60` (a hang fails the test instead of blocking CI), the job of
# 3 ranks must end non-zero within 15 s, and stderr must name rank 1 and
# the all-reduce the others wait in; and the same when the others end the
# job instead (ct_cluster_finalize waits for every rank), and when they
# wait in a run for a value that task 1 sends.
set -uo pipefail
mpiexec=${1:?usage: stall.sh MPIEXEC STALL_PROGRAM}
program=${2:?usage: stall.sh MPIEXEC STALL_PROGRAM}
err=$(mktemp)
trap 'rm -f "$err"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# stall MODE TEXT: the job of 3 ranks (MODE: "" or finalize) ends in time,
# non-zero, with TEXT in its stderr
stall() {
  local start=$SECONDS status
  timeout -k 10 60 "$mpiexec" --allow-run-as-root --oversubscribe -np 3 "$program" $1 2>"$err"
  status=$?
  local elapsed=$((SECONDS - start))
  # a job that hung leaves its stopped rank behind: end it, so that the
  # failure below is reported rather than waited on
  pkill -KILL -x "$(basename "$program")" 2>/dev/null
  cat "$err" >&2
  [ "$status" -ne 0 ] || fail "the job ended with status 0: the stall went unnoticed"
  [ "$status" -ne 124 ] && [ "$status" -ne 137 ] || fail "the job hung: timeout 60 ended it"
  [ "$elapsed" -le 15 ] || fail "the job took ${elapsed} s to end (at most 15 s)"
  grep -qF "$2" "$err" || fail "stderr does not say: $2"
  grep -q "raise cluster.stall_timeout_s" "$err" || fail "stderr does not say what to do"
  echo "stall ${1:-in an all-reduce}: the job ended with status $status after ${elapsed} s, naming rank 1"
}
stall "" "rank 1 has not reached all-reduce bucket 3 of step 12"
stall finalize "rank 1 has not reached barrier for the end of the job"
stall edges "rank 1 has not reached run for edges between tasks of step 7"
