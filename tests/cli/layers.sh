#!/usr/bin/env bash
# Your own model through the command: the zoo's fmnist_cnn and cifar10_cnn
# written as layer lists (examples/*_layers.yaml) train to bitwise the same
# checkpoints as the zoo's; `ctower plan` prints the model's summary; a
# layer's device shows in the placement log and the summary; a model of a
# shared library (examples/model_library) trains on 2 towers and evaluates;
# a library of another ABI version, one without exports, a missing file or
# model, a file that is not a library, a shape that does not fit, a
# mistyped layer and layer names that would share variables are clear
# errors.
# Usage: bash layers.sh /path/to/ctower
source "$(dirname "$0")/lib/common.sh" layers "${1:-}"
EXAMPLES=${CT_SOURCE_DIR:-$(dirname "$0")/../..}/examples
LIBS=${CT_BINARY_DIR:-$(dirname "$CTOWER")}

synthetic() { # the dataset override for images of shape $1
  echo "dataset={name: synthetic, image_shape: $1, batch_size: 16, train_size: 48, test_size: 16, augment: {crop: [], flip: false, brightness: 0.0, contrast: [1.0, 1.0], standardize: false}}"
}
short_run='train={epochs: 1, seed: 7, optimizer: {name: momentum, learning_rate: 0.01}, schedule: {name: constant}}'

# --- the zoo's models as layer lists: bitwise the same weights -------------------
for model in fmnist_cnn cifar10_cnn; do
  shape='[28, 28, 1]'
  [ "$model" = cifar10_cnn ] && shape='[24, 24, 3]'
  # model.name: the checkpoint records it, so both files name the same model
  if "$CTOWER" train "$EXAMPLES/$model.yaml" --quiet "$(synthetic "$shape")" "$short_run" \
       devices.n_towers=1 train.checkpoint=zoo_$model.safetensors >zoo.txt 2>&1 &&
     "$CTOWER" train "$EXAMPLES/${model}_layers.yaml" --quiet "$(synthetic "$shape")" \
       "$short_run" devices.n_towers=1 model.name=$model \
       train.checkpoint=layers_$model.safetensors >layers.txt 2>&1; then
    if cmp -s zoo_$model.safetensors layers_$model.safetensors; then
      pass "$model as a layer list trains to bitwise the same checkpoint ($(stat -c %s zoo_$model.safetensors) bytes)"
    else
      fail "$model as a layer list: the checkpoints differ: $(cmp zoo_$model.safetensors layers_$model.safetensors)"
    fi
  else
    fail "$model: $(cat zoo.txt layers.txt)"
  fi
done

# --- plan: the summary ---------------------------------------------------------
run plan "$EXAMPLES/fmnist_cnn_layers.yaml" "$(synthetic '[28, 28, 1]')" devices.n_towers=1 \
  --calibration none.json
if [ "$rc" -eq 0 ] && grep -Eq '^model: fmnist_cnn_layers, 7 layers' <<<"$out" &&
   grep -Eq '^  conv2 +\[\?, 14, 14, 64\] +51,264  CPU:0$' <<<"$out" &&
   grep -Eq '^  fc1 +\[\?, 1024\] +3,212,288  CPU:0$' <<<"$out" &&
   grep -Eq '^  total params: 3,274,634 \(12.49 MiB\): trainable 3,274,634, non-trainable 0$' <<<"$out"; then
  pass "plan prints the model's summary: layer, output shape, parameters, device, totals"
  sed -n '/^model:/,/^  total/p' <<<"$out"
else
  fail "plan's summary (rc $rc): $out $err"
fi

# --- a layer's device: model parallelism, in the placement log -------------------
cat >parallel.yaml <<'EOF'
model:
  name: split_mlp
  layers:
    - dense: {name: fc1, units: 64, activation: relu}
    - dense: {name: logits, units: 10, device: /cpu:1}
session: {device_count: {CPU: 2}, log_device_placement: true}
EOF
run train parallel.yaml --quiet "$(synthetic '[28, 28, 1]')" "$short_run" train.checkpoint=
if [ "$rc" -eq 0 ] &&
   grep -q '^tower_0/logits/MatMul: (MatMul): /job:localhost/replica:0/task:0/device:CPU:1$' <<<"$err" &&
   grep -q '^tower_0/fc1/MatMul: (MatMul): /job:localhost/replica:0/task:0/device:CPU:0$' <<<"$err"; then
  pass "a layer's device: puts its ops there, as the placement log shows"
else
  fail "layer devices (rc $rc): $(grep -E 'MatMul|error' <<<"$err")"
fi
run plan parallel.yaml "$(synthetic '[28, 28, 1]')" --calibration none.json
grep -Eq '^  logits +\[\?, 10\] +650  CPU:1$' <<<"$out" && pass "plan's summary names each layer's device" ||
  fail "plan's summary of split_mlp: $out"

# --- a model of a shared library, on 2 towers ---------------------------------------
cat >library.yaml <<EOF
model: {library: $LIBS/libexample_models.so, name: small_cnn}
devices: {n_towers: 2}
session: {device_count: {CPU: 2}}
EOF
run train library.yaml --quiet "$(synthetic '[28, 28, 1]')" "$short_run" train.checkpoint=lib.safetensors
if [ "$rc" -eq 0 ] && grep -q '^2 towers (replicated): ' <<<"$out" && grep -q '^done: 3 steps' <<<"$out"; then
  pass "the example model library trains on 2 towers"
  run eval library.yaml "$(synthetic '[28, 28, 1]')" --checkpoint lib.safetensors
  [ "$rc" -eq 0 ] && grep -q '^small_cnn on synthetic test set' <<<"$out" &&
    pass "and its checkpoint evaluates" || fail "eval of the library model (rc $rc): $out $err"
else
  fail "the library model (rc $rc): $out $err"
fi

# expect_error WHAT STATUS TEXT ARGS...: ctower ARGS exits STATUS with TEXT on stderr
expect_error() {
  local what=$1 status=$2 text=$3
  shift 3
  run "$@"
  if [ "$rc" -eq "$status" ] && grep -qF -- "$text" <<<"$err" && [ "$(wc -l <<<"$err")" -eq 1 ]; then
    pass "$what is a clear error: $err"
  else
    fail "$what: rc $rc: $out $err"
  fi
}
data=$(synthetic '[28, 28, 1]')
expect_error "a library of another ABI version" 1 \
  "was built for model ABI version 2, but this ctower loads version 1; rebuild it" \
  train library.yaml "$data" model.library="$LIBS/tests/libmodel_library_other_abi.so" model.name=dense
expect_error "a library without exports" 1 "does not export 'ctower_model_exports'" \
  train library.yaml "$data" model.library="$LIBS/tests/libmodel_library_no_exports.so"
expect_error "a missing library" 1 "model library 'nowhere.so' not found" \
  train library.yaml "$data" model.library=nowhere.so
expect_error "a file that is not a shared library" 2 \
  "model library 'library.yaml' cannot be loaded: ./library.yaml: invalid ELF header; build it as a shared library" \
  train library.yaml "$data" model.library=library.yaml
expect_error "a model the library lacks" 1 "has no model 'big_cnn' (it has: small_cnn)" \
  train library.yaml "$data" model.name=big_cnn
expect_error "a shape that does not fit" 2 \
  "layers[1] (max_pool 'pool'): a 8x8 window at stride 8 on [?, 7, 7, 4] leaves zero pixels" \
  train parallel.yaml "$data" session.log_device_placement=false \
  'model.layers=[{conv2d: {filters: 4, kernel: 4, stride: 4}}, {max_pool: {name: pool, size: 8}}, {dense: {units: 10}}]'
expect_error "a mistyped layer" 2 "unknown layer type 'maxpool'; did you mean 'max_pool'?" \
  train parallel.yaml 'model.layers=[maxpool]'
# a layer named as another's repeat copy would share its variables: refused
# at the file's line, by train and plan alike, before anything runs
cat >clash.yaml <<'EOF'
model:
  name: clash
  layers:
    - dense: {name: d, units: 8, repeat: 2}
    - dense: {name: d_2, units: 8}
    - dense: {name: logits, units: 10}
EOF
clash="clash.yaml:5: model.layers[1] (dense 'd_2') has the name of copy 2 of model.layers[0] (dense 'd', repeat 2), so both would build in scope 'd_2' and share the variables under it ('d_2/...') by accident; rename one of them"
expect_error "a layer named as another's copy (train)" 2 "$clash" train clash.yaml "$data"
expect_error "a layer named as another's copy (plan)" 2 "$clash" plan clash.yaml "$data"
expect_error "a default name taken by another's copy" 2 \
  "model.layers[1] (dense 'dense_0_2') has the name of copy 2 of model.layers[0] (dense, by default 'dense_0', repeat 2)" \
  train parallel.yaml "$data" session.log_device_placement=false \
  'model.layers=[{dense: {units: 8, repeat: 2}}, {dense: {name: dense_0_2, units: 8}}, {dense: {units: 10}}]'
run train library.yaml "$data" model.library= model.name=mlp --quiet train.checkpoint=
[ "$rc" -eq 0 ] && pass "overrides change library and name in any order (the model is checked after all of them)" ||
  fail "model.library= model.name=mlp: rc $rc: $err"
expect_error "a mistyped zoo model" 2 \
  "library.yaml: 'model.name' must be one of mlp, fmnist_cnn, cifar10_cnn, resnet20, resnet32, resnet44, resnet56, resnet110, got 'fmnist_cn'; did you mean 'fmnist_cnn'? Or describe" \
  train library.yaml model.library= model.name=fmnist_cn
expect_error "layers and a library at once" 2 "parallel.yaml: 'model.layers' and 'model.library' both give the model" \
  train parallel.yaml model.library=x.so

finish
