#!/usr/bin/env bash
# The datasets are checked against each other and the model when they are
# opened, with a message about the data: training and test images of
# different shapes, a split with no examples, and (for eval and --resume)
# images of another shape than the checkpoint was trained on. Each is one
# error line (exit 2) before anything is trained or restored.
# Usage: bash data_checks.sh /path/to/ctower
source "$(dirname "$0")/lib/common.sh" data_checks "${1:-}"

# idx DIR PREFIX N H W: N random H x W images and labels 0..9 as IDX files
idx() {
  mkdir -p "$1"
  /usr/bin/python3 - "$@" <<'PY'
import random, struct, sys
folder, prefix, n, h, w = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:6])
random.seed(n * 1000 + h * 10 + w)
with open(f"{folder}/{prefix}-images-idx3-ubyte", "wb") as f:
    f.write(struct.pack(">IIII", 0x803, n, h, w) + bytes(random.randrange(256) for _ in range(n * h * w)))
with open(f"{folder}/{prefix}-labels-idx1-ubyte", "wb") as f:
    f.write(struct.pack(">II", 0x801, n) + bytes(i % 10 for i in range(n)))
PY
}

# expect_data_error NAME NEEDLE ARGS...
expect_data_error() {
  local name=$1 needle=$2
  shift 2
  run "$@"
  if [ "$rc" -eq 2 ] && [ "$(grep -c '^ctower: error: ' <<<"$err")" -eq 1 ] && [[ "$err" == *"$needle"* ]] &&
     ! grep -q '^epoch' <<<"$out"; then
    pass "$name: ${err#ctower: error: }"
  else
    fail "$name: rc $rc: $err"
  fi
}

cat >job.yaml <<'YAML'
model: {name: mlp}
dataset: {batch_size: 16}
train: {epochs: 1, max_steps: 2, checkpoint: ck.safetensors}
YAML

idx mixed train 64 28 27 && idx mixed t10k 32 28 28
expect_data_error "train 28x27, test 28x28" \
  "the training images are 28x27x1 in 10 classes but the test images 28x28x1 in 10" \
  train job.yaml dataset.path=mixed
idx empty_train train 0 8 8 && idx empty_train t10k 16 8 8
expect_data_error "no training images" "the training split of dataset 'empty_train' has no examples" \
  train job.yaml dataset.path=empty_train
idx empty_test train 64 8 8 && idx empty_test t10k 0 8 8
expect_data_error "no test images" "the test split of dataset 'empty_test' has no examples" \
  train job.yaml dataset.path=empty_test

# a checkpoint of 8x8 images, then 16x16 data for eval and --resume
idx small train 64 8 8 && idx small t10k 16 8 8
run train job.yaml dataset.path=small --quiet
[ "$rc" -eq 0 ] || fail "training on 8x8 images: rc $rc: $err"
idx large train 64 16 16 && idx large t10k 16 16 16
expect_data_error "eval on other images" \
  "checkpoint 'ck.safetensors' was trained on 8x8x1 images, not on 16x16x1 images as here" \
  eval job.yaml dataset.path=large
expect_data_error "resume on other images" "was trained on 8x8x1 images" \
  train job.yaml dataset.path=large train.max_steps=4 --resume
finish
