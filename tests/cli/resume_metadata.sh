#!/usr/bin/env bash
# --resume trusts nothing in a checkpoint's metadata: a global_step, epoch
# or epoch_example that is not a plain count ("-1", "abc", "0x32", "1e3",
# 2^63-1), an epoch_example past the epoch, a missing field or a missing
# __metadata__, and a dtype "F32\u0000" are each one clear error naming the
# field (exit 1), never a silent start from step 0. A NaN or Inf in a
# variable is refused naming it, by --resume and eval (exit 1). Another
# optimizer than the checkpoint's is refused naming both (exit 2).
# Usage: bash resume_metadata.sh /path/to/ctower
source "$(dirname "$0")/lib/common.sh" resume_metadata "${1:-}"

cat >job.yaml <<'YAML'
model: {name: mlp}
dataset: {name: synthetic, image_shape: [8, 8, 1], num_classes: 10, train_size: 320,
          test_size: 32, batch_size: 32}
train: {epochs: 2, max_steps: 3, checkpoint: good.safetensors}
YAML
run train job.yaml --quiet
[ "$rc" -eq 0 ] || fail "training the checkpoint: rc $rc: $err"

# tamper NAME EDIT: good.safetensors with its header's JSON changed by the
# Python expression EDIT on `h` (the header dict), written to NAME
tamper() {
  /usr/bin/python3 - "$1" "$2" <<'PY'
import json, struct, sys
raw = open("good.safetensors", "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
h = json.loads(raw[8:8 + n])
exec(sys.argv[2])
text = json.dumps(h).encode()
text += b" " * (-len(text) % 8)
open(sys.argv[1], "wb").write(struct.pack("<Q", len(text)) + text + raw[8 + n:])
PY
}

# expect_refused WHAT EDIT NEEDLE
expect_refused() {
  tamper bad.safetensors "$2"
  run train job.yaml train.checkpoint=bad.safetensors train.max_steps=6 --quiet --resume
  if [ "$rc" -eq 1 ] && [ "$(grep -c '^ctower: error: ' <<<"$err")" -eq 1 ] && [[ "$err" == *"$3"* ]] &&
     ! grep -q '^done' <<<"$out"; then
    pass "$1 is refused: ${err#ctower: error: }"
  else
    fail "$1: rc $rc: $err $out"
  fi
}

for value in -1 abc 0x32 1e3 9223372036854775807 " 3" ""; do
  expect_refused "global_step '$value'" "h['__metadata__']['global_step'] = '$value'" \
    "its metadata global_step is '$value', not a count"
done
expect_refused "epoch 2^63-1" "h['__metadata__']['epoch'] = '9223372036854775807'" \
  "its metadata epoch is '9223372036854775807', not a count"
expect_refused "epoch_example past the epoch" "h['__metadata__']['epoch_example'] = '320'" \
  "its epoch_example 320 is past the end of the epoch (the training set has 320 examples)"
expect_refused "a missing global_step" "del h['__metadata__']['global_step']" \
  "its metadata global_step is missing"
expect_refused "a missing __metadata__" "del h['__metadata__']" "its metadata global_step is missing"
expect_refused 'a dtype "F32\u0000"' \
  "k = next(k for k in h if k != '__metadata__'); h[k]['dtype'] = 'F32\\u0000'" "unknown dtype"

# another optimizer than the one whose slots the checkpoint holds: named,
# with what to do, rather than a missing variable; a checkpoint that does
# not record its optimizer is judged by its slots
expect_optimizer_refused() {
  run train job.yaml train.checkpoint="$1" train.max_steps=6 train.optimizer.name=adam --quiet --resume
  if [ "$rc" -eq 2 ] && [ "$(grep -c '^ctower: error: ' <<<"$err")" -eq 1 ] &&
     [[ "$err" == *"was trained with optimizer momentum and holds momentum slots"*"the config asks for adam; set train.optimizer.name: momentum to resume it, or start afresh without --resume"* ]] &&
     ! grep -q '^done' <<<"$out"; then
    pass "$2: ${err#ctower: error: }"
  else
    fail "$2: rc $rc: $err $out"
  fi
}
expect_optimizer_refused good.safetensors "momentum's checkpoint resumed with adam"
tamper bad.safetensors "del h['__metadata__']['optimizer']"
expect_optimizer_refused bad.safetensors "momentum's slots without the optimizer recorded, resumed with adam"

# poison NAME VALUE: good.safetensors with the first element of its first
# tensor set to VALUE (nan or inf), written to NAME
poison() {
  /usr/bin/python3 - "$1" "$2" <<'PY'
import json, struct, sys
raw = bytearray(open("good.safetensors", "rb").read())
n = struct.unpack("<Q", raw[:8])[0]
h = json.loads(raw[8:8 + n])
start = min(v["data_offsets"][0] for k, v in h.items() if k != "__metadata__")
raw[8 + n + start:8 + n + start + 4] = struct.pack("<f", float(sys.argv[2]))
open(sys.argv[1], "wb").write(raw)
PY
}

# a NaN or an Inf in a checkpoint (ctower never saves one) is named where it
# is, for --resume and eval alike, and the file is left as it was
for value in nan inf; do
  poison bad.safetensors "$value"
  cp bad.safetensors bad.before
  word=$([ "$value" = nan ] && echo NaN || echo Inf)
  run train job.yaml train.checkpoint=bad.safetensors train.max_steps=6 --quiet --resume
  [ "$rc" -eq 1 ] && [[ "$err" == *"checkpoint 'bad.safetensors' holds $word in variable '"*"(element 0 of "* ]] &&
    cmp -s bad.safetensors bad.before && ! grep -q '^done' <<<"$out" &&
    pass "--resume of a checkpoint holding $word is refused: ${err#ctower: error: }" ||
    fail "--resume of a checkpoint holding $word: rc $rc: $err"
  run eval job.yaml --checkpoint bad.safetensors
  [ "$rc" -eq 1 ] && [[ "$err" == *"holds $word in variable '"* ]] && ! grep -q 'accuracy' <<<"$out" &&
    pass "eval of a checkpoint holding $word is refused" ||
    fail "eval of a checkpoint holding $word: rc $rc: $out $err"
done

# the untouched one still resumes
run train job.yaml train.max_steps=6 --quiet --resume
[ "$rc" -eq 0 ] && grep -q '^resumed from good.safetensors: epoch 1 at example 96, step 3' <<<"$out" &&
  pass "the checkpoint as written resumes" || fail "resume: rc $rc: $out $err"
finish
