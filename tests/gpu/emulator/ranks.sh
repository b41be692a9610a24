#!/usr/bin/env bash
# Ranks on GPUs (the emulator's two): local rank r takes GPU r, named
# /gpu:0 of its task, and 2 ranks of one GPU each train what one process
# with both GPUs trains (the CollectiveReduce's GPU kernel, through host
# memory).
# Usage: ranks.sh CTOWER_EMULATED MPIEXEC COMPARE_CHECKPOINTS
source "$(dirname "$0")/../../cli/lib/common.sh" gpu_ranks "$1"
MPIEXEC=${2:?} COMPARE=${3:?}
export EMU_GPUS=2
mpi() { timeout -k 10 300 "$MPIEXEC" --allow-run-as-root --oversubscribe -x EMU_GPUS -np 2 "$CTOWER" "$@"; }

mpi devices >devices.out 2>&1
if grep -q "task:0/device:GPU:0 .*CUDA device 0" devices.out &&
   grep -q "task:1/device:GPU:0 .*CUDA device 1" devices.out; then
  pass "local rank r takes GPU r: $(grep -c GPU devices.out) GPUs listed"
else fail "GPUs of the ranks: $(cat devices.out)"; fi

cat > job.yaml <<'YAML'
model: {name: mlp}
dataset: {name: synthetic, image_shape: [8, 8, 1], num_classes: 10, train_size: 400,
          test_size: 100, batch_size: 100}
train: {epochs: 1, seed: 5, max_steps: 3, optimizer: {name: momentum, learning_rate: 0.05}}
devices: {n_towers: -1}
YAML
mpi train job.yaml train.checkpoint=ranks.safetensors --quiet >ranks.out 2>&1
run train job.yaml train.checkpoint=one.safetensors --quiet
if "$COMPARE" one.safetensors ranks.safetensors 1e-5 >cmp.out; then
  pass "2 ranks of one GPU each as one process with 2 GPUs: $(cat cmp.out)"
else fail "ranks on GPUs: $(cat ranks.out cmp.out) $out $err"; fi
finish
