#!/usr/bin/env bash
# A small stack limit is no crash: under `ulimit -s 128` (and 64) the
# command plans every example config and trains a few steps, exiting 0,
# where it used to end in SIGSEGV (the command then runs on a thread with a
# stack of its own: src/cli/command_stack.c).
# Usage: bash small_stack.sh /path/to/ctower
source "$(dirname "$0")/lib/common.sh" small_stack "${1:-}"
examples=${CT_SOURCE_DIR:?}/examples

for limit in 128 64; do
  for config in "$examples"/*.yaml; do
    name=$(basename "$config")
    rc=0
    (ulimit -s "$limit" && exec "$CTOWER" plan "$config" dataset.name=synthetic \
      "dataset.image_shape=[32, 32, 3]") \
      >plan.out 2>&1 || rc=$?
    # a plan may say DOES NOT FIT (exit 1); a crash is 128 and above
    [ "$rc" -le 1 ] && pass "ulimit -s $limit: plan $name exits $rc" ||
      fail "ulimit -s $limit: plan $name: exit $rc: $(tail -n 3 plan.out)"
  done
  rc=0
  (ulimit -s "$limit" && exec timeout 300 "$CTOWER" train "$examples/fmnist_cnn.yaml" \
    dataset.name=synthetic dataset.train_size=256 dataset.test_size=64 train.epochs=1 \
    train.checkpoint=small_stack.safetensors --quiet) >train.out 2>&1 || rc=$?
  [ "$rc" -eq 0 ] && [ -s small_stack.safetensors ] &&
    pass "ulimit -s $limit: train fmnist_cnn for an epoch" ||
    fail "ulimit -s $limit: train: exit $rc: $(tail -n 3 train.out)"
  rm -f small_stack.safetensors
done
finish
