#!/usr/bin/env bash
# A rank that fails (its dataset.path is missing; the other rank's is fine)
# prints its error with its prefix and ends the whole job promptly (within
# 5 s; rank 0 alone would train for minutes), non-zero, well within
# `timeout 60`.
# Usage: bash failing_rank.sh /path/to/ctower /path/to/mpiexec
source "$(dirname "$0")/lib/mpi.sh" failing_rank "${1:-}" "${2:-}"

cp "$CT_SOURCE_DIR/examples/mlp.yaml" .
mpi -np 1 "$CTOWER" train mlp.yaml train.max_steps=100000 train.checkpoint= --quiet : \
    -np 1 "$CTOWER" train mlp.yaml train.max_steps=100000 train.checkpoint= --quiet \
    dataset.path=missing
if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$seconds" -le 5 ] &&
   grep -q "^\[worker 1\] ctower: error: the dataset file 'missing/" <<<"$err"; then
  pass "a failing rank ends the job in ${seconds} s, rc $rc: $(grep '^\[worker 1\]' <<<"$err")"
else
  fail "a failing rank: rc $rc after ${seconds} s: $err"
fi
finish
