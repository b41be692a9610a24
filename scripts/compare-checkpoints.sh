#!/usr/bin/env bash
# Do two builds of ctower train to the same bits? Runs every example config
# and every variable-update strategy for a few steps with both binaries, in
# one process (two CPU devices) and over 2 MPI ranks, and compares their
# checkpoints with cmp. For a change that must not change what users get
# (a refactor): every line must say "same".
#
# Usage: scripts/compare-checkpoints.sh OLD_CTOWER NEW_CTOWER [WORKDIR]
# Each binary's directory should hold the libexample_models.so it was built
# with (the model-library example loads it). CIFAR-10 files are generated
# (random images); Fashion-MNIST comes from the Debian package.
# Exit status: 0 when every checkpoint is byte-identical, 1 otherwise.
set -uo pipefail
[ $# -ge 2 ] || { sed -n '2,12p' "$0"; exit 2; }
old=$(realpath "$1") new=$(realpath "$2")
work=${3:-$(mktemp -d)}
src=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$work"
mpirun=(mpirun --allow-run-as-root --oversubscribe -np 2)

# A small CIFAR-10 in the binary version's layout: a label byte, then
# 32x32x3 pixel bytes, per record.
cifar="$work/cifar-10-batches-bin"
if [ ! -f "$cifar/test_batch.bin" ]; then
  /usr/bin/python3 - "$cifar" <<'EOF'
import os, random, sys
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = random.Random(3)
def batch(name, n):
    with open(os.path.join(out, name), "wb") as f:
        for _ in range(n):
            f.write(bytes([rng.randrange(10)]) + rng.randbytes(3072))
for k in range(1, 6):
    batch("data_batch_%d.bin" % k, 64)
batch("test_batch.bin", 64)
EOF
fi

failures=0 runs=0
# compare NAME LAUNCHER... -- ARGS...: trains with both binaries (the same
# ARGS, their own checkpoint paths) and compares the checkpoints.
compare() {
  local name=$1; shift
  local launcher=()
  while [ "$1" != "--" ]; do launcher+=("$1"); shift; done
  shift
  local bin tag
  for tag in old new; do
    [ $tag = old ] && bin=$old || bin=$new
    rm -f "$work/$name.$tag.safetensors"
    if ! (cd "$(dirname "$bin")" && "${launcher[@]}" "$bin" train "$@" \
            train.checkpoint="$work/$name.$tag.safetensors") >"$work/$name.$tag.log" 2>&1; then
      echo "$name: the $tag binary failed (see $work/$name.$tag.log)"
      failures=$((failures + 1)); return
    fi
  done
  runs=$((runs + 1))
  if cmp -s "$work/$name.old.safetensors" "$work/$name.new.safetensors"; then
    echo "$name: same"
  else
    echo "$name: DIFFERENT"; failures=$((failures + 1))
  fi
}

short=(train.epochs=1 train.max_steps=3)
for config in "$src"/examples/*.yaml; do
  name=$(basename "$config" .yaml)
  data=()
  grep -q "name: cifar10" "$config" && data=(dataset.path="$cifar" dataset.batch_size=32)
  compare "$name" -- "$config" "${short[@]}" "${data[@]}"
  compare "mpi_$name" "${mpirun[@]}" -- "$config" "${short[@]}" "${data[@]}"
done

# The strategies, on the MLP over synthetic data. (devices.split: auto is
# left out: its shards follow measured speeds, so two runs differ anyway.)
mlp=("$src/examples/mlp.yaml" "${short[@]}" dataset.name=synthetic dataset.train_size=512
     dataset.test_size=128 dataset.batch_size=64 train.max_steps=6)
two_devices=('session.device_count={CPU: 2}' devices.n_towers=2)
compare replicated_ring -- "${mlp[@]}" "${two_devices[@]}" devices.all_reduce=ring
compare replicated_tree -- "${mlp[@]}" "${two_devices[@]}" devices.all_reduce=tree
compare parameter_server -- "${mlp[@]}" "${two_devices[@]}" devices.variable_update=parameter_server
compare block_momentum -- "${mlp[@]}" "${two_devices[@]}" devices.variable_update=block_momentum \
  devices.block_steps=2
compare fmnist_cnn_two_devices -- "$src/examples/fmnist_cnn.yaml" "${short[@]}" "${two_devices[@]}"

compare mpi_replicated "${mpirun[@]}" -- "${mlp[@]}"
compare mpi_two_towers_each "${mpirun[@]}" -- "${mlp[@]}" "${two_devices[@]}"
for compression in bf16 fp16 onebit; do
  compare "mpi_compression_$compression" "${mpirun[@]}" -- "${mlp[@]}" devices.compression=$compression
  compare "mpi_two_towers_each_$compression" "${mpirun[@]}" -- "${mlp[@]}" "${two_devices[@]}" \
    devices.compression=$compression
done
compare mpi_parameter_server "${mpirun[@]}" -- "${mlp[@]}" devices.variable_update=parameter_server
compare mpi_block_momentum "${mpirun[@]}" -- "${mlp[@]}" devices.variable_update=block_momentum \
  devices.block_steps=2
ps_tasks=(devices.variable_update=parameter_server cluster.ps=1)
compare mpi_ps_task_sync "${mpirun[@]}" -- "${mlp[@]}" "${ps_tasks[@]}" cluster.worker=1
compare mpi_ps_task_sync_two_workers mpirun --allow-run-as-root --oversubscribe -np 3 -- \
  "${mlp[@]}" "${ps_tasks[@]}" cluster.worker=2
# Async with one worker: with two, updates apply in arrival order.
compare mpi_ps_task_async "${mpirun[@]}" -- "${mlp[@]}" "${ps_tasks[@]}" cluster.worker=1 \
  cluster.updates=async

echo "$runs compared, $failures failed or different"
[ "$failures" -eq 0 ]
