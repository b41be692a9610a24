#!/usr/bin/env bash
# Towers through the command: training on 2 and 4 CPU towers (both variable
# updates), checkpoints restored on another tower count, and a run resumed
# from its checkpoint (after an epoch, or inside one) ending bitwise equal to
# one never interrupted.
# Usage: bash towers.sh /path/to/ctower
source "$(dirname "$0")/lib/common.sh" towers "${1:-}"

cat >mlp.yaml <<YAML
model:
  name: mlp
dataset:
  batch_size: 500
train:
  epochs: 2
  optimizer:
    name: momentum
    learning_rate: 0.05
session:
  device_count: {CPU: 4, GPU: 0}   # CPU towers, on any machine
YAML

accuracy_of() { sed -n 's/^done: .*test accuracy \([0-9.]*\).*/\1/p' "$1"; }

# --- 4 replicated towers; the checkpoint evaluates on one device ------------------
if "$CTOWER" train mlp.yaml --quiet devices.n_towers=4 train.checkpoint=four.safetensors >four.txt 2>&1; then
  acc=$(accuracy_of four.txt)
  if grep -q '^4 towers (replicated): ' four.txt && [ -n "$acc" ]; then
    pass "4 replicated towers train (test accuracy $acc)"
  else
    fail "4 towers: unexpected output: $(cat four.txt)"
  fi
  if "$CTOWER" eval mlp.yaml --checkpoint four.safetensors >eval.txt 2>&1 &&
     grep -q "accuracy $acc," eval.txt; then
    pass "a 4-tower checkpoint restores on one device with the same accuracy"
  else
    fail "eval of the 4-tower checkpoint: $(cat eval.txt)"
  fi
  if grep -q 'tower_1/' four.safetensors; then
    fail "the checkpoint holds tower-specific names"
  else
    pass "the checkpoint holds tower-free names only"
  fi
else
  fail "4 towers: $(cat four.txt)"
fi

# --- 2 parameter-server towers -------------------------------------------------------
if "$CTOWER" train mlp.yaml --quiet devices.n_towers=2 devices.variable_update=parameter_server \
     train.epochs=1 train.checkpoint= >ps.txt 2>&1 &&
   grep -q '^2 towers (parameter server on /cpu:0): ' ps.txt; then
  pass "2 parameter-server towers train"
else
  fail "parameter server: $(cat ps.txt)"
fi

# --- split: auto sizes the shards by measured speed -----------------------------------
if "$CTOWER" train mlp.yaml devices.n_towers=2 devices.split=auto train.epochs=1 \
     train.checkpoint= >auto.txt 2>&1 && grep -q '^done: ' auto.txt &&
   grep -Eq 'towers [0-9]+\+[0-9]+ ETA' auto.txt; then
  pass "split: auto trains and shows the shard sizes ($(grep -Eo 'towers [0-9]+\+[0-9]+' auto.txt | tail -1))"
else
  fail "split: auto: $(cat auto.txt)"
fi

# --- resume: a run stopped, then resumed, equals 2 epochs straight (on 2 towers) -----
"$CTOWER" train mlp.yaml --quiet devices.n_towers=2 train.checkpoint=straight.safetensors >straight.txt 2>&1
# expect_resumed WHAT LINE CHECKPOINT LOG: the resumed run's LOG starts a line
# with LINE and its CHECKPOINT is bitwise the straight run's
expect_resumed() {
  if grep -q "^$2" "$4" && cmp -s straight.safetensors "$3"; then
    pass "$1 ends bitwise equal to an uninterrupted run"
  else
    fail "$1: checkpoints differ or no resume line: $(cat "$4")"
  fi
}
"$CTOWER" train mlp.yaml --quiet devices.n_towers=2 train.epochs=1 train.checkpoint=resumed.safetensors >first.txt 2>&1
"$CTOWER" train mlp.yaml --quiet --resume devices.n_towers=2 train.checkpoint=resumed.safetensors >second.txt 2>&1
expect_resumed "a run resumed after epoch 1" 'resumed from resumed.safetensors: epoch 1 done' \
  resumed.safetensors second.txt
# stopped inside epoch 1 by max_steps (50 of its 120 steps), then resumed to the end
"$CTOWER" train mlp.yaml --quiet devices.n_towers=2 train.max_steps=50 train.checkpoint=inside.safetensors >inside1.txt 2>&1
"$CTOWER" train mlp.yaml --quiet --resume devices.n_towers=2 train.checkpoint=inside.safetensors >inside2.txt 2>&1
expect_resumed "a run stopped inside an epoch by max_steps and resumed" \
  'resumed from inside.safetensors: epoch 1 at example 25000, step 50' inside.safetensors inside2.txt

# --- bad tower configurations ---------------------------------------------------------
expect_usage_error "more towers than devices" '8 towers need 8 CPU devices but the session has 4' train mlp.yaml devices.n_towers=8
expect_usage_error "the same device twice" "both on '/cpu:1'" train mlp.yaml 'devices.towers=[/cpu:1, /cpu:1]'
expect_usage_error "a tower soft-placed onto another's device" \
  "towers 0 and 1 would both run on /job:localhost/replica:0/task:0/device:CPU:0: this session has no device '/cpu:7' (tower 1's)" \
  train mlp.yaml 'devices.towers=[/cpu:0, /cpu:7]'
expect_usage_error "a tower soft-placed onto a later tower's device" "no device '/cpu:7' (tower 0's)" \
  plan mlp.yaml 'devices.towers=[/cpu:7, /cpu:0]'
"$CTOWER" train mlp.yaml 'devices.towers=[/cpu:0, /cpu:7]' session.allow_soft_placement=false >bad.txt 2>&1
rc=$?
if [ "$rc" -ne 0 ] && [ "$rc" -lt 128 ] && grep -q "Cannot assign a device for operation 'tower_1/" bad.txt; then
  pass "a tower device that does not exist is a clear error without soft placement"
else
  fail "missing tower device: rc $rc: $(cat bad.txt)"
fi
expect_usage_error "a batch smaller than the tower count" 'smaller than the number of towers' train mlp.yaml devices.n_towers=4 dataset.batch_size=3

# --- resnet20 on synthetic images, as 2 towers with the collective all-reduce ---------
cat >resnet.yaml <<YAML
model:
  name: resnet20
dataset:
  name: synthetic
  image_shape: [8, 8, 3]
  num_classes: 4
  train_size: 64
  test_size: 32
  batch_size: 16
train:
  epochs: 2
  checkpoint: resnet.safetensors
devices:
  n_towers: -1
  all_reduce: auto
session:
  device_count: {CPU: 2, GPU: 0}   # CPU towers, on any machine
YAML
if "$CTOWER" train resnet.yaml --quiet >resnet.txt 2>&1 && grep -q '^2 towers (replicated): ' resnet.txt &&
   "$CTOWER" eval resnet.yaml --checkpoint resnet.safetensors >resnet_eval.txt 2>&1 &&
   grep -q "accuracy $(accuracy_of resnet.txt)," resnet_eval.txt; then
  pass "resnet20 trains on synthetic 8x8x3 images on every CPU device and evaluates"
else
  fail "resnet20 on synthetic images: $(cat resnet.txt resnet_eval.txt 2>/dev/null)"
fi
expect_usage_error "a synthetic image shape without channels" "'dataset.image_shape' needs exactly 3 entries, got 2" train resnet.yaml 'dataset.image_shape=[8, 8]'
expect_usage_error "all_reduce: nccl on CPU towers" 'nccl needs every tower on a GPU' train resnet.yaml devices.all_reduce=nccl

finish
