#!/usr/bin/env bash
# `ctower train` and `ctower eval` end to end on Fashion-MNIST (a few steps),
# and the runtime failures a user meets: a missing or truncated dataset, a
# corrupt checkpoint, a checkpoint of another model, a NaN loss. Each failure
# is one line on stderr and exit 1 (2 for a config mismatch), never a crash,
# and a checkpoint already saved survives a failed run.
# Usage: bash train_eval.sh /path/to/ctower
source "$(dirname "$0")/lib/common.sh" train "${1:-}"
DATA=/usr/share/datasets/fashion-mnist

# expect_error NAME CODE NEEDLE ARGS...: exit CODE, one "ctower: error:" line containing NEEDLE.
expect_error() {
  local name=$1 code=$2 needle=$3
  shift 3
  run "$@"
  if [ "$rc" -ge 128 ]; then fail "$name: died with signal $((rc - 128))"
  elif [ "$rc" -ne "$code" ]; then fail "$name: exited $rc, expected $code (stderr: $err)"
  elif [ "$(printf '%s\n' "$err" | grep -c '^ctower: error: ')" -ne 1 ]; then fail "$name: stderr is not one error line: $err"
  elif [[ "$err" != *"$needle"* ]]; then fail "$name: stderr lacks '$needle': $err"
  else pass "$name"; fi
}

cat >mlp.yaml <<YAML
model:
  name: mlp
dataset:
  path: $DATA
  batch_size: 64
train:
  epochs: 1
  max_steps: 40
  optimizer:
    name: adam
    learning_rate: 0.002
  checkpoint: $WORK/runs/mlp.safetensors
YAML

# --- train, then eval reads the checkpoint back ---------------------------------
run train mlp.yaml --quiet
if [ "$rc" -ne 0 ]; then
  fail "train: exited $rc: $err"
else
  accuracy=$(sed -n 's/^done: .*test accuracy \([0-9.]*\);.*/\1/p' <<<"$out")
  if [ -z "$accuracy" ] || [ ! -s runs/mlp.safetensors ]; then
    fail "train: no summary or no checkpoint: $out"
  else
    pass "train wrote runs/mlp.safetensors (test accuracy $accuracy after 40 steps)"
    run eval mlp.yaml
    if [ "$rc" -eq 0 ] && [[ "$out" == *"accuracy $accuracy,"* ]]; then
      pass "eval reports the same test accuracy ($accuracy)"
    else
      fail "eval: exited $rc, expected accuracy $accuracy: $out $err"
    fi
  fi
fi
grep -q '"model":"mlp"' runs/mlp.safetensors && pass "checkpoint metadata names the model" \
  || fail "checkpoint metadata lacks the model"

# --- bench ---------------------------------------------------------------------------
run bench mlp.yaml --steps 5 --warmup 1
if [ "$rc" -eq 0 ] && grep -Eq '^mlp, batch 64, 1 tower: [0-9.]+ images/sec' <<<"$out"; then
  pass "bench prints the median images/sec"
else
  fail "bench (rc $rc): $out $err"
fi

# --- the placement log ------------------------------------------------------------
run train mlp.yaml --quiet train.max_steps=1 train.checkpoint= session.log_device_placement=true
if [ "$rc" -eq 0 ] && grep -q '^Device mapping:$' <<<"$err" &&
   grep -q '^tower_0/fc1/MatMul: (MatMul): /job:localhost/replica:0/task:0/device:CPU:0$' <<<"$err"; then
  pass "log_device_placement prints the mapping and one line per node"
else
  fail "placement log missing (rc $rc): $(head -3 <<<"$err")"
fi

# --- runtime failures -----------------------------------------------------------------
expect_error "missing dataset folder" 1 "$WORK/nowhere" train mlp.yaml dataset.path="$WORK/nowhere"
mkdir -p short
cp "$DATA"/*.gz short/
head -c 300000 "$DATA/train-images-idx3-ubyte.gz" >short/train-images-idx3-ubyte.gz
expect_error "truncated dataset file" 1 "train-images-idx3-ubyte" train mlp.yaml dataset.path="$WORK/short"
cp runs/mlp.safetensors good.safetensors
head -c 5000 good.safetensors >runs/cut.safetensors
expect_error "truncated checkpoint" 1 "corrupt or truncated" eval mlp.yaml --checkpoint runs/cut.safetensors
expect_error "missing checkpoint" 1 "missing.safetensors" eval mlp.yaml --checkpoint missing.safetensors
expect_error "checkpoint of another model" 2 "holds model 'mlp'" eval mlp.yaml model.name=fmnist_cnn
expect_error "NaN loss" 1 "lower train.optimizer.learning_rate" train mlp.yaml \
  train.optimizer.name=sgd train.optimizer.learning_rate=1e30
# weights made non-finite by the very first update (the loss of that step
# was still finite): caught before anything is written; check_numerics
# names the op and its device
expect_error "NaN weights after step 1" 1 "the weights are no longer finite" train mlp.yaml \
  train.max_steps=1 train.optimizer.name=sgd train.optimizer.learning_rate=1e308
expect_error "check_numerics" 1 "check_numerics: train/" train mlp.yaml train.check_numerics=true \
  train.max_steps=1 train.optimizer.name=sgd train.optimizer.learning_rate=1e308
# the first update's variable is Inf where its gradient is not 0 and NaN
# (Inf times 0) where it is
grep -Eq "device:CPU:0 wrote (Inf|NaN) to output 0" <<<"$err" && pass "check_numerics names the device" ||
  fail "check_numerics: $err"
# on one device the steps run in the same order every run: the same op is
# named (the updates are independent; when they were queued one at a time,
# 2 runs in 30 named another)
first=$err same=1
for attempt in $(seq 20); do
  run train mlp.yaml train.check_numerics=true train.max_steps=1 train.optimizer.name=sgd \
    train.optimizer.learning_rate=1e308
  [ "$err" == "$first" ] || same=0
done
[ "$same" -eq 1 ] && pass "check_numerics names the same op every run" ||
  fail "check_numerics named another op: '$err' after '$first'"
if cmp -s good.safetensors runs/mlp.safetensors; then
  pass "the checkpoint saved before survives the failed run"
else
  fail "the failed run changed the saved checkpoint"
fi
run devices mlp.yaml "session.device_count={CPU: 2}"
if [ "$rc" -eq 0 ] && grep -q '^/job:localhost/replica:0/task:0/device:CPU:1 ' <<<"$out"; then
  pass "devices lists /cpu:0 and /cpu:1 for device_count {CPU: 2}"
else
  fail "devices with two CPU devices (rc $rc): $out $err"
fi

finish
