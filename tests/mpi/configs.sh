#!/usr/bin/env bash
# Ranks started with different configs (mpirun's MPMD syntax): every rank
# names the key and both values (for model.layers, the first layer that
# differs and both versions of it), and the job exits 2. The same config
# on both trains.
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

# model.layers differing in one layer: that layer, by its index, as each
# rank has it, not both whole lists
layers() { # the list with $1 units in its third layer (and $2 in a block's branch)
  echo "model.layers=[{conv2d: {name: c1, filters: 4, kernel: 3}}, {residual: {name: r, layers: [{conv2d: {filters: 4, kernel: 3, padding: same}}, {conv2d: {filters: ${2:-4}, kernel: 3, padding: same}}]}}, {dense: {name: fc1, units: $1}}, {dense: {name: logits, units: 10}}]"
}
mpi -np 1 "$CTOWER" train small.yaml model.name=mine "$(layers 64)" : \
    -np 1 "$CTOWER" train small.yaml model.name=mine "$(layers 32)"
text="ranks were started with different configs: model.layers[2] is {dense: {name: fc1, device: \"\", repeat: 1, units: 32,"
if [ "$rc" -eq 2 ] && grep -qF "[worker 1] ctower: error: $text" <<<"$err" &&
   grep -qF "on worker 1 but {dense: {name: fc1, device: \"\", repeat: 1, units: 64," <<<"$err" &&
   ! grep -q "conv2d" <<<"$err" && [ "$(head -1 <<<"$err" | wc -c)" -lt 600 ]; then
  pass "different layers: the first that differs, both versions: $(head -1 <<<"$err")"
else
  fail "different layers: rc $rc: $err"
fi
mpi -np 1 "$CTOWER" train small.yaml model.name=mine "$(layers 64 8)" : \
    -np 1 "$CTOWER" train small.yaml model.name=mine "$(layers 64 4)"
if [ "$rc" -eq 2 ] && grep -qF "[worker 1] ctower: error: ranks were started with different configs: model.layers[1].layers[1] is {conv2d: {name: \"\"" <<<"$err"; then
  pass "different branches of a block: the layer inside it: $(head -1 <<<"$err" | cut -c 1-160)"
else
  fail "different branches: rc $rc: $err"
fi

mpi -np 1 "$CTOWER" train small.yaml train.checkpoint=a.safetensors : \
    -np 1 "$CTOWER" train small.yaml train.checkpoint=b.safetensors --quiet
if [ "$rc" -eq 0 ] && grep -q "^done: 3 steps" <<<"$out" && [ "$(grep -c '^done:' <<<"$out")" -eq 1 ]; then
  pass "the same config (checkpoints apart) trains, only rank 0 prints"
else
  fail "the same config: rc $rc: $out $err"
fi
finish
