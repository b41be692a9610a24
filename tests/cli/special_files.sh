#!/usr/bin/env bash
# No file ctower reads makes it hang, and a file that is not what it should
# be is one error naming it and saying what it is: a FIFO as the config,
# model.library, a CIFAR file (with skip_bad_examples too), an IDX file,
# plan --calibration or eval --checkpoint; a CIFAR file that is a
# directory; a loop of symbolic links. A signal while the run is still
# starting ends it at once (130/143) instead of waiting for a first step.
# Every run is under `timeout`, so that a hang fails the test instead of
# stalling it.
# Usage: bash special_files.sh /path/to/ctower   (CT_BINARY_DIR: the build folder)
source "$(dirname "$0")/lib/common.sh" special_files "${1:-}"
LIBS=${CT_BINARY_DIR:-$(dirname "$CTOWER")}

cat >tiny.yaml <<'YAML'
model: {name: mlp}
dataset: {name: synthetic, image_shape: [8, 8, 1], num_classes: 10, train_size: 64,
          test_size: 16, batch_size: 16}
train: {epochs: 1, max_steps: 1, checkpoint: ""}
YAML

# expect_refused WHAT TEXT ARGS...: ctower ARGS ends within 20 s, exit 2,
# with one error holding TEXT
expect_refused() {
  local what=$1 text=$2
  shift 2
  timeout 20 "$CTOWER" "$@" >"$WORK/stdout" 2>"$WORK/stderr"
  rc=$?
  err=$(cat "$WORK/stderr")
  if [ "$rc" -eq 2 ] && [ "$(grep -c '^ctower: error: ' <<<"$err")" -eq 1 ] &&
     grep -qF -- "$text" "$WORK/stderr"; then
    pass "$what: ${err#ctower: error: }"
  else
    [ "$rc" -eq 124 ] && err="it hung (killed after 20 s) $err"
    fail "$what: rc $rc: $err"
  fi
}

# --- FIFOs -----------------------------------------------------------------
mkfifo fifo.yaml fifo
expect_refused "a FIFO as the config" "config file 'fifo.yaml' is a FIFO, not a regular file" \
  train fifo.yaml
expect_refused "a FIFO as model.library" "model library 'fifo' is a FIFO, not a regular file" \
  train tiny.yaml model.library=fifo
expect_refused "a FIFO as plan --calibration" "calibration file 'fifo' is a FIFO, not a regular file" \
  plan tiny.yaml --calibration fifo
expect_refused "a FIFO as eval --checkpoint" "checkpoint 'fifo' is a FIFO, not a regular file" \
  eval tiny.yaml --checkpoint fifo

# CIFAR-10: one record in each file, then one file at a time made a FIFO,
# a directory or a loop of links
cifar() { # FOLDER
  local f
  rm -rf "$1" && mkdir -p "$1"
  for f in data_batch_1 data_batch_2 data_batch_3 data_batch_4 data_batch_5 test_batch; do
    head -c 3073 /dev/zero >"$1/$f.bin"
  done
}
cat >cifar.yaml <<'YAML'
model: {name: mlp}
dataset: {name: cifar10, path: cifar, batch_size: 1}
train: {epochs: 1, max_steps: 1, checkpoint: ""}
YAML
cifar cifar
timeout 60 "$CTOWER" train cifar.yaml --quiet >/dev/null 2>&1 || fail "the CIFAR-10 files of one record do not train"
for f in data_batch_1 data_batch_3 test_batch; do
  for skip in false true; do
    cifar cifar && rm "cifar/$f.bin" && mkfifo "cifar/$f.bin"
    expect_refused "a FIFO as CIFAR's $f.bin (skip_bad_examples: $skip)" \
      "CIFAR-10 file 'cifar/$f.bin' is a FIFO, not a regular file" \
      train cifar.yaml dataset.skip_bad_examples=$skip
  done
done
cifar cifar && rm cifar/data_batch_2.bin && mkdir cifar/data_batch_2.bin
expect_refused "a directory as CIFAR's data_batch_2.bin" \
  "CIFAR-10 file 'cifar/data_batch_2.bin' is a directory, not a regular file" train cifar.yaml
cifar cifar && rm cifar/data_batch_1.bin && ln -s data_batch_1.bin cifar/data_batch_1.bin
expect_refused "a loop of links as CIFAR's data_batch_1.bin" \
  "cannot open CIFAR-10 file 'cifar/data_batch_1.bin': Too many levels of symbolic links" \
  train cifar.yaml

# IDX (MNIST format): a FIFO, then a loop of links, as the images
idx() { # FOLDER
  rm -rf "$1" && mkdir -p "$1"
  printf '\x00\x00\x08\x03\x00\x00\x00\x01\x00\x00\x00\x1c\x00\x00\x00\x1c' >"$1/train-images-idx3-ubyte"
  head -c 784 /dev/zero >>"$1/train-images-idx3-ubyte"
  printf '\x00\x00\x08\x01\x00\x00\x00\x01\x00' >"$1/train-labels-idx1-ubyte"
}
idx mnist && rm mnist/train-images-idx3-ubyte && mkfifo mnist/train-images-idx3-ubyte
expect_refused "a FIFO as an IDX file" "IDX file 'mnist/train-images-idx3-ubyte' is a FIFO, not a regular file" \
  train tiny.yaml dataset.name=fashion_mnist dataset.path=mnist
idx mnist && ln -s train-images-idx3-ubyte.gz mnist/train-images-idx3-ubyte.gz
expect_refused "a loop of links as an IDX file" \
  "cannot open IDX file 'mnist/train-images-idx3-ubyte.gz': Too many levels of symbolic links" \
  train tiny.yaml dataset.name=fashion_mnist dataset.path=mnist

# --- a signal during start-up ----------------------------------------------
# The library takes a minute to load (tests/cli/model_libraries/slow_start.c):
# once ctower has caught SIGTERM (its handler installed: /proc's SigCgt), the
# signal ends it at once, saying nothing of a step and saving nothing.
slow="$LIBS/tests/libmodel_library_slow_start.so"
for sig in TERM INT; do
  rm -f start.*
  timeout -s KILL 20 "$CTOWER" train tiny.yaml "model.library=$slow" \
    train.checkpoint=start.safetensors >start.out 2>start.err &
  watchdog=$!
  for _ in $(seq 200); do
    pid=$(pgrep -P "$watchdog")
    mask=$([ -n "$pid" ] && awk '/^SigCgt/ {print $2}' "/proc/$pid/status" 2>/dev/null)
    [ -n "$mask" ] && (((0x$mask >> 14) & 1)) && break # SIGTERM (15) caught
    sleep 0.05
  done
  [ -n "$pid" ] && kill -"$sig" "$pid"
  wait "$watchdog"
  rc=$?
  want=$([ "$sig" = TERM ] && echo 143 || echo 130)
  if [ "$rc" -eq "$want" ] && ! grep -q 'stopping after this step' start.err &&
     [ ! -e start.safetensors ] && ! grep -q '^epoch' start.out; then
    pass "SIG$sig during start-up: ended at once, exit $rc"
  else
    [ "$rc" -eq 137 ] && rc="137 (still running after 20 s)"
    fail "SIG$sig during start-up: rc $rc (want $want): $(cat start.err)"
  fi
done

finish
