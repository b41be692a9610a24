#!/usr/bin/env bash
# The input pipeline's workers stop cleanly, whatever ends the run: while
# 4 of them decode and augment an image folder of JPEGs, SIGINT and SIGTERM
# end the run with its checkpoint and exit 130 and 143, and a step that
# fails (a loss no longer finite) ends it with its error and exit 1, each
# within seconds; so does a second SIGINT. (A corrupt image read by a
# worker: pipeline.sh.)
# Usage: bash pipeline_stop.sh /path/to/ctower
source "$(dirname "$0")/lib/common.sh" pipeline_stop "${1:-}"

/usr/bin/python3 - "$WORK/jpegs" <<'PY' || { echo "FAIL: writing the JPEGs"; exit 1; }
import os, random, sys
from PIL import Image
rng = random.Random(3)
for split, n in (("train", 400), ("test", 40)):
    for i in range(n):
        folder = os.path.join(sys.argv[1], split, f"c{i % 4}")
        os.makedirs(folder, exist_ok=True)
        small = Image.frombytes("RGB", (4, 4), bytes(rng.getrandbits(8) for _ in range(48)))
        small.resize((192, 192), Image.BICUBIC).save(os.path.join(folder, f"{i}.jpg"), quality=90)
PY

cat >job.yaml <<YAML
model: {name: mlp}
dataset: {name: image_folder, path: $WORK/jpegs, image_shape: [64, 64, 3], batch_size: 8,
          threads: 4, prefetch: 3, augment: {crop: [56, 56], pad: 2, flip: true, standardize: true}}
train: {epochs: 50, seed: 1, checkpoint: run.safetensors}
YAML

# stop NAME SIGNAL [SIGNAL2] ARGS...: trains in the background, sends SIGNAL
# once the first epoch is done (and SIGNAL2 right after), and sets rc and
# seconds (from the signal to the exit; 99 when it had to be killed)
stop() {
  local name=$1 signal=$2 second=$3
  shift 3
  "$CTOWER" train job.yaml --quiet "$@" >"$name.out" 2>"$name.err" &
  local pid=$!
  for _ in $(seq 600); do grep -q '^epoch 1/' "$name.out" && break; sleep 0.1; done
  local start=$SECONDS
  kill -"$signal" "$pid"
  [ -n "$second" ] && kill -"$second" "$pid"
  for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    kill -KILL "$pid"
    seconds=99
  else
    seconds=$((SECONDS - start))
  fi
  wait "$pid"
  rc=$?
}

stop int INT ""
if [ "$seconds" -ge 30 ]; then fail "SIGINT: the run did not end (workers hung?): $(cat int.err)"
elif [ "$rc" -eq 130 ] && grep -q '^ctower: stopped by SIGINT after step' int.err &&
  "$CTOWER" eval job.yaml >eval.out 2>&1; then
  pass "SIGINT with 4 busy workers: exit 130 in ${seconds}s, a checkpoint that evaluates"
else fail "SIGINT: rc $rc: $(cat int.err) $(cat eval.out 2>/dev/null)"; fi

stop term TERM "" train.checkpoint=term.safetensors
if [ "$seconds" -lt 30 ] && [ "$rc" -eq 143 ] && grep -q '^ctower: stopped by SIGTERM' term.err; then
  pass "SIGTERM with 4 busy workers: exit 143 in ${seconds}s"
else fail "SIGTERM: rc $rc after ${seconds}s: $(cat term.err)"; fi

stop twice INT INT train.checkpoint=twice.safetensors
if [ "$seconds" -lt 30 ] && [ "$rc" -eq 130 ]; then
  pass "two SIGINTs with 4 busy workers: out at once (${seconds}s)"
else fail "two SIGINTs: rc $rc after ${seconds}s: $(cat twice.err)"; fi

# a step that fails while the workers read ahead: its error, exit 1
start=$SECONDS
timeout -k 5 60 "$CTOWER" train job.yaml train.optimizer.learning_rate=1e30 train.checkpoint= \
  --quiet >nan.out 2>nan.err
rc=$?
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then fail "a failing step: the run hung: $(cat nan.err)"
elif [ "$rc" -eq 1 ] && grep -q "^ctower: error: the loss became" nan.err; then
  pass "a failing step with 4 busy workers: exit 1 in $((SECONDS - start))s: $(head -c 120 nan.err)"
else fail "a failing step: rc $rc: $(cat nan.err)"; fi
finish
