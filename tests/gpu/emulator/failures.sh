#!/usr/bin/env bash
# What a GPU machine's failures look like, on the emulator: a driver that
# fails is an error (not "no GPU"), and the GPU tests then fail rather than
# skip; CTOWER_EXPECT_GPU=1 makes a machine without a GPU fail them too;
# `ctower devices` says which CUDA libraries it loads, and a missing cuDNN
# fails only the ops that need it.
# Usage: failures.sh CTOWER_EMULATED TEST_GPU_EMULATED
source "$(dirname "$0")/../../cli/lib/common.sh" gpu_failures "$1"
TEST_GPU=${2:?usage: failures.sh CTOWER_EMULATED TEST_GPU_EMULATED}
unset CTOWER_EXPECT_GPU CTOWER_GPU_SYNC EMU_DRIVER_ERROR EMU_MISSING_LIBRARIES
export EMU_GPUS=1

# test_gpu: skipped without a GPU, failed when one is expected or the driver fails
EMU_GPUS=0 "$TEST_GPU" >out.txt 2>&1
rc=$?
[ "$rc" -eq 77 ] && pass "no GPU: the GPU tests are skipped" ||
  fail "no GPU: exit $rc: $(tail -2 out.txt)"
EMU_GPUS=0 CTOWER_EXPECT_GPU=1 "$TEST_GPU" >out.txt 2>&1
rc=$?
if [ "$rc" -eq 1 ] && grep -q "CTOWER_EXPECT_GPU=1, but CUDA sees no GPU" out.txt; then
  pass "no GPU under CTOWER_EXPECT_GPU=1: the GPU tests fail"
else fail "no GPU under CTOWER_EXPECT_GPU=1: exit $rc: $(tail -2 out.txt)"; fi
EMU_DRIVER_ERROR=803 "$TEST_GPU" >out.txt 2>&1
rc=$?
if [ "$rc" -eq 1 ] &&
   grep -q "the GPUs cannot be used: the CUDA driver failed while counting the GPUs: cudaError803" out.txt; then
  pass "a failing driver fails the GPU tests: $(head -1 out.txt)"
else fail "a failing driver: exit $rc: $(tail -2 out.txt)"; fi

# ctower devices
EMU_DRIVER_ERROR=803 run devices
if [ "$rc" -eq 1 ] && grep -q "the CUDA driver failed while counting the GPUs: cudaError803" <<<"$err"; then
  pass "devices with a failing driver is an error: $err"
else fail "devices with a failing driver: rc $rc: $out $err"; fi
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
  # without the driver's library, the runtime's "insufficient driver" means no driver at all
  EMU_DRIVER_ERROR=35 run devices
  if [ "$rc" -eq 0 ] && ! grep -q "kind: GPU" <<<"$out" && grep -q "^CUDA: no driver" <<<"$out"; then
    pass "devices without a driver: no GPU, and the CPU runs"
  else fail "devices without a driver: rc $rc: $out $err"; fi
fi
EMU_GPUS=2 run devices
if [ "$rc" -eq 0 ] && [ "$(grep -c 'kind: GPU' <<<"$out")" -eq 2 ] &&
   grep -q "^cuBLAS (emulated)$" <<<"$out" && grep -q "^cuDNN (emulated)$" <<<"$out" &&
   grep -q "^NCCL (emulated)$" <<<"$out"; then
  pass "devices lists the GPUs and the CUDA libraries"
else fail "devices: rc $rc: $out $err"; fi
EMU_MISSING_LIBRARIES=cudnn run devices
if [ "$rc" -eq 0 ] && grep -q "^cuDNN: libcudnn.so.9 was not found" <<<"$out"; then
  pass "devices says which library is missing"
else fail "devices without cuDNN: rc $rc: $out $err"; fi

# without cuDNN: a dense network trains on the GPU, a convolutional one stops at its first convolution
cat >job.yaml <<'YAML'
model: {name: mlp}
dataset: {name: synthetic, image_shape: [8, 8, 1], num_classes: 10, train_size: 64,
          test_size: 32, batch_size: 32}
train: {epochs: 1, checkpoint: ""}
devices: {towers: [/gpu:0]}
session: {allow_soft_placement: false}
YAML
EMU_MISSING_LIBRARIES=cudnn run train job.yaml --quiet
[ "$rc" -eq 0 ] && pass "without cuDNN, a dense network trains on the GPU" ||
  fail "mlp without cuDNN: rc $rc: $(tail -3 <<<"$out") $err"
EMU_MISSING_LIBRARIES=cudnn run train job.yaml --quiet \
  'model.layers=[{conv2d: {filters: 2, kernel: 3}}, {dense: {units: 10}}]' model.name=small_conv
if [ "$rc" -eq 1 ] && grep -q "needs cuDNN, but libcudnn.so.9 was not found" <<<"$err" &&
   [ "$(grep -c . <<<"$err")" -eq 1 ]; then
  pass "without cuDNN, a convolution is one clear error: $err"
else fail "conv without cuDNN: rc $rc: $err"; fi
finish
