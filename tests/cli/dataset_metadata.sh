#!/usr/bin/env bash
# A checkpoint records what its model learned from (the dataset, the image
# shape, an image folder's class names, CIFAR-100's fine or coarse labels,
# the class count), and `ctower eval` and `--resume` refuse data where one
# differs: labels are never silently read as other classes. Each refusal is
# one error line naming both values (exit 2), before anything is restored,
# and leaves the checkpoint as it was.
# Usage: bash dataset_metadata.sh /path/to/ctower
SRC=${CT_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
source "$(dirname "$0")/lib/common.sh" dataset_metadata "${1:-}"
/usr/bin/python3 "$SRC/tests/data/make_datasets.py" "$WORK/data" >/dev/null ||
  { echo "FAIL: make_datasets.py"; exit 1; }

# metadata FILE KEY: the value the checkpoint's metadata holds under KEY
metadata() {
  /usr/bin/python3 - "$1" "$2" <<'PY'
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
print(json.loads(raw[8:8 + n])["__metadata__"].get(sys.argv[2], "(absent)"))
PY
}

# expect_refused NAME CHECKPOINT NEEDLE ARGS...: ctower ARGS exits 2 with one
# error line holding NEEDLE, trains nothing, and CHECKPOINT keeps its bytes
expect_refused() {
  local name=$1 checkpoint=$2 needle=$3
  shift 3
  cp "$checkpoint" before.safetensors
  run "$@"
  if [ "$rc" -eq 2 ] && [ "$(grep -c '^ctower: error: ' <<<"$err")" -eq 1 ] &&
     [[ "$err" == *"$needle"* ]] && ! grep -q '^epoch\|accuracy' <<<"$out" &&
     cmp -s before.safetensors "$checkpoint"; then
    pass "$name: ${err#ctower: error: }"
  else
    fail "$name: rc $rc: $err $(tail -2 <<<"$out")"
  fi
}

# --- an image folder whose class folder was renamed --------------------------------
cp -r "$WORK/data/folder" folder
cat >folder.yaml <<YAML
model: {name: mlp}
dataset: {name: image_folder, path: folder, image_shape: [8, 8, 3], batch_size: 4}
train: {epochs: 1, checkpoint: folder.safetensors}
YAML
run train folder.yaml --quiet
[ "$rc" -eq 0 ] || fail "training on the image folder: rc $rc: $err"
[ "$(metadata folder.safetensors classes)" = '["cats","dogs","zebra"]' ] &&
  [ "$(metadata folder.safetensors num_classes)" = 3 ] &&
  [ "$(metadata folder.safetensors optimizer)" = momentum ] &&
  pass "the checkpoint records the classes, their count and the optimizer" ||
  fail "metadata: $(metadata folder.safetensors classes) $(metadata folder.safetensors num_classes)"
mv folder/train/cats folder/train/lions
[ -d folder/test/cats ] && mv folder/test/cats folder/test/lions
lists='trained on the classes ["cats","dogs","zebra"], not on the classes ["dogs","lions","zebra"] as here'
expect_refused "eval after renaming cats/ to lions/" folder.safetensors "$lists" eval folder.yaml
expect_refused "--resume after renaming cats/ to lions/" folder.safetensors "$lists" \
  train folder.yaml train.epochs=2 --quiet --resume
mv folder/train/lions folder/train/cats
[ -d folder/test/lions ] && mv folder/test/lions folder/test/cats
run eval folder.yaml
[ "$rc" -eq 0 ] && pass "the folders as they were evaluate" || fail "eval: rc $rc: $err"

# --- the class count, the image shape and the dataset -------------------------------
cat >synthetic.yaml <<YAML
model: {name: mlp}
dataset: {name: synthetic, image_shape: [8, 8, 1], num_classes: 10, train_size: 64,
          test_size: 32, batch_size: 32}
train: {epochs: 1, checkpoint: synthetic.safetensors}
YAML
run train synthetic.yaml --quiet
[ "$rc" -eq 0 ] || fail "training on synthetic data: rc $rc: $err"
expect_refused "eval on 5 classes" synthetic.safetensors \
  "trained on 10 classes, not on 5 classes as here; set dataset.num_classes: 10" \
  eval synthetic.yaml dataset.num_classes=5
expect_refused "--resume on 5 classes" synthetic.safetensors "trained on 10 classes" \
  train synthetic.yaml dataset.num_classes=5 train.epochs=2 --quiet --resume
expect_refused "eval on 8x8x3 images" synthetic.safetensors \
  "trained on 8x8x1 images, not on 8x8x3 images as here" \
  eval synthetic.yaml 'dataset.image_shape=[8, 8, 3]'

cat >cifar.yaml <<YAML
model: {name: mlp}
dataset: {name: cifar100, label: coarse, path: $WORK/data/cifar100, batch_size: 2}
train: {epochs: 1, checkpoint: cifar.safetensors}
YAML
run train cifar.yaml --quiet
[ "$rc" -eq 0 ] || fail "training on CIFAR-100: rc $rc: $err"
[ "$(metadata cifar.safetensors label)" = coarse ] && pass "a CIFAR-100 checkpoint records its labels" ||
  fail "no label in the CIFAR-100 checkpoint"
expect_refused "eval on fine labels" cifar.safetensors \
  "trained on coarse labels, not on fine labels as here; set dataset.label: coarse" \
  eval cifar.yaml dataset.label=fine
expect_refused "--resume on fine labels" cifar.safetensors "trained on coarse labels" \
  train cifar.yaml dataset.label=fine train.epochs=2 --quiet --resume
expect_refused "eval on CIFAR-10" cifar.safetensors \
  "trained on dataset 'cifar100', not on dataset 'cifar10' as here; set dataset.name: cifar100" \
  eval cifar.yaml dataset.name=cifar10 dataset.path="$WORK/data/cifar10"
finish
