#!/usr/bin/env bash
# `ctower plan` on 2 ranks: rank 0 prints one plan of the whole job, which
# sums each bucket of gradients across the ranks (CollectiveReduce), and
# predicts the ring all-reduce's share of the step; nothing runs. Without a
# calibration the ranks measure the machine together first.
# Usage: bash plan.sh /path/to/ctower /path/to/mpiexec
source "$(dirname "$0")/lib/mpi.sh" plan "${1:-}" "${2:-}"

mpi -np 2 "$CTOWER" plan small.yaml --calibration none.json
grads=$(grep -Eo 'ring all-reduce of [0-9.]+ MiB' <<<"$out")
if [ "$rc" -eq 0 ] && grep -q '^plan: mlp, .*, 2 ranks (2 towers in all)$' <<<"$out" &&
   grep -Eq 'across ranks [1-9][0-9.]* [KM]B$' <<<"$out" &&
   grep -Eq 'all-reduce [0-9.]*[1-9][0-9.]* ms\)$' <<<"$out" &&
   grep -Eq '^2 ranks: efficiency [0-9]+% \(each rank.s compute' <<<"$out" &&
   [ "$(grep -c '^plan: ' <<<"$out")" -eq 1 ] && [ -n "$grads" ]; then
  pass "one plan of the job, with the bytes summed across ranks ($grads)"
else
  fail "plan on 2 ranks: rc $rc: $out $err"
fi
# what the ranks exchange: compressed gradients, or block momentum's model
# once a block
mpi -np 2 "$CTOWER" plan small.yaml --calibration none.json devices.compression=onebit
sizes=$(sed -nE 's/^2 ranks: efficiency .*ring all-reduce of ([0-9.]+) MiB, the ([0-9.]+) MiB of gradients as onebit\)$/\1 \2/p' <<<"$out")
if [ "$rc" -eq 0 ] && [ -n "$sizes" ] && awk '{ exit !($1 * 20 < $2) }' <<<"$sizes"; then
  pass "onebit: the packed bytes ($(grep '^2 ranks' <<<"$out"))"
else fail "plan with onebit: rc $rc: $out $err"; fi
mpi -np 2 "$CTOWER" plan small.yaml --calibration none.json devices.variable_update=block_momentum \
  devices.block_steps=4
if [ "$rc" -eq 0 ] && grep -Eq "^2 ranks: efficiency .*the model's [0-9.]+ MiB averaged every 4 steps\)$" <<<"$out" &&
   grep -q '(block momentum: 4 local steps a block' <<<"$out"; then
  pass "block momentum: the model once a block ($(grep '^2 ranks' <<<"$out"))"
else fail "plan with block momentum: rc $rc: $out $err"; fi
# without a calibration at the default place, the ranks measure the machine
# together (their MPI all-reduce too) and save it
mpi -np 2 "$CTOWER" plan small.yaml
cached=$XDG_CACHE_HOME/ctower/calibration.json
if [ "$rc" -eq 0 ] && grep -q '^cost model: this machine, measured now and saved to' <<<"$out" &&
   grep -q '"mpi": {"ranks": 2' "$cached"; then
  pass "2 ranks without a calibration: measured together, MPI all-reduce included"
else
  fail "2 ranks without a calibration: rc $rc: $out $err; $(cat "$cached" 2>&1)"
fi
finish
