#!/usr/bin/env bash
# Ranks on GPUs (the emulator's two): local rank r takes GPU r, named
# /gpu:0 of its task, and 2 ranks of one GPU each train what one process
# with both GPUs trains (the CollectiveReduce's GPU kernel, through host
# memory), with the replicated update and with a parameter server on rank
# 0's GPU; and a GPU and a CPU tower on each, their gradients compressed.
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

# the parameter server on rank 0's GPU: the sums go there and the variables
# come back through host memory (CollectiveReduce to rank 0,
# CollectiveBroadcast and Assign on the GPUs)
mpi train job.yaml devices.variable_update=parameter_server devices.ps_device=/gpu:0 \
  train.optimizer.name=adam train.checkpoint=ps_ranks.safetensors --quiet >ps_ranks.out 2>&1
run train job.yaml devices.variable_update=parameter_server devices.ps_device=/gpu:0 \
  train.optimizer.name=adam train.checkpoint=ps_one.safetensors --quiet
if "$COMPARE" ps_one.safetensors ps_ranks.safetensors 1e-5 >cmp.out; then
  pass "a parameter server on rank 0's GPU as on one process's: $(cat cmp.out)"
else fail "parameter server on GPUs: $(cat ps_ranks.out cmp.out) $out $err"; fi
# a GPU and a CPU tower on each rank, gradients bf16: packed on the GPU
# for the CPU tower, packed for the ranks, and unpacked beside each tower;
# every rank's every copy the same (checked each step), close to exact
towers=(devices.n_towers=0 'devices.towers=[/gpu:0,/cpu:0]' cluster.check_every=1)
mpi train job.yaml "${towers[@]}" devices.compression=bf16 train.checkpoint=packed.safetensors \
  --quiet >packed.out 2>&1
mpi train job.yaml "${towers[@]}" train.checkpoint=exact.safetensors --quiet >exact.out 2>&1
if ! cmp -s exact.safetensors packed.safetensors &&
   "$COMPARE" exact.safetensors packed.safetensors 1e-2 >cmp.out; then
  pass "bf16 between a GPU and a CPU tower and across ranks, near exact: $(cat cmp.out)"
else fail "bf16 on GPU and CPU towers: $(cat packed.out exact.out cmp.out)"; fi
# and `ctower plan` counts fewer bytes both between the devices and across
# the ranks: "copied between devices 616.52 KB, ..., across ranks 203.30 KB"
traffic() { # COMPRESSION: the three counts of the plan, in bytes
  mpi plan job.yaml "${towers[@]}" devices.compression="$1" 2>&1 |
    awk '/copied between devices/ {
      gsub(",", ""); n = split($0, w, " ")
      for (i = 1; i <= n; i++) if (w[i] ~ /^[0-9.]+$/) {
        unit = w[i + 1]; x = w[i] * (unit ~ /^KB/ ? 1e3 : unit ~ /^MB/ ? 1e6 : 1)
        printf "%.0f ", x } }'
}
read -r copied_exact _ across_exact <<<"$(traffic none)"
read -r copied_bf16 _ across_bf16 <<<"$(traffic bf16)"
if [ -n "$across_bf16" ] && [ "$copied_bf16" -lt "$copied_exact" ] &&
   [ $((2 * across_bf16)) -le $((across_exact + 2)) ]; then
  pass "plan: bf16 copies $copied_bf16 B between devices ($copied_exact exact), $across_bf16 B across ranks ($across_exact)"
else fail "plan's traffic with bf16: copied $copied_bf16 / $copied_exact, across $across_bf16 / $across_exact"; fi
finish
