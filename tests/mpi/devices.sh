#!/usr/bin/env bash
# `ctower devices` on 2 ranks: rank 0 lists every rank's devices, in rank
# order, named with their task (and, in a build with CUDA, then what it
# loads for GPUs).
# Usage: bash devices.sh /path/to/ctower /path/to/mpiexec
source "$(dirname "$0")/lib/mpi.sh" devices "${1:-}" "${2:-}"

mpi -np 2 "$CTOWER" devices small.yaml
first=$(grep -n '^/job:worker/replica:0/task:0/device:CPU:0 ' <<<"$out" | cut -d: -f1)
second=$(grep -n '^/job:worker/replica:0/task:1/device:CPU:0 ' <<<"$out" | cut -d: -f1)
if [ "$rc" -eq 0 ] && [ -n "$first" ] && [ -n "$second" ] && [ "$first" -lt "$second" ] &&
   [ "$(grep -c '^/job:' <<<"$out")" -eq 2 ]; then
  pass "devices of both ranks, in rank order: $(tr '\n' ';' <<<"$out")"
else
  fail "devices: rc $rc: $out $err"
fi
finish
