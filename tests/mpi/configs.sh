#!/usr/bin/env bash
# Ranks started with different configs (mpirun's MPMD syntax): every rank
# names the key and both values, and the job exits 2. The same config on
# both trains.
# Usage: bash configs.sh /path/to/ctower /path/to/mpiexec
source "$(dirname "$0")/lib/mpi.sh" configs "${1:-}" "${2:-}"

mpi -np 1 "$CTOWER" train small.yaml dataset.batch_size=64 : -np 1 "$CTOWER" train small.yaml
text="ranks were started with different configs: dataset.batch_size is 32 on worker 1 but 64 on worker 0"
if [ "$rc" -eq 2 ] && grep -qF "[worker 0] ctower: error: $text" <<<"$err" &&
   grep -qF "[worker 1] ctower: error: $text" <<<"$err"; then
  pass "different batch sizes: exit 2, both ranks say: $text"
else
  fail "different batch sizes: rc $rc: $err"
fi

mpi -np 1 "$CTOWER" train small.yaml train.checkpoint=a.safetensors : \
    -np 1 "$CTOWER" train small.yaml train.checkpoint=b.safetensors --quiet
if [ "$rc" -eq 0 ] && grep -q "^done: 3 steps" <<<"$out" && [ "$(grep -c '^done:' <<<"$out")" -eq 1 ]; then
  pass "the same config (checkpoints apart) trains, only rank 0 prints"
else
  fail "the same config: rc $rc: $out $err"
fi
finish
