#!/usr/bin/env bash
# Ctrl-C and SIGTERM while training: the first signal finishes the step,
# writes a checkpoint at the exact place in the epoch, says where, and exits
# 130 (SIGINT) or 143 (SIGTERM); --resume from it ends bitwise equal to an
# uninterrupted run. A second signal ends the process at once and leaves
# the last checkpoint as it was. A signal after the last step lets the last
# evaluation and checkpoint finish, then exits 143 all the same.
# Usage: bash interrupt.sh /path/to/ctower
source "$(dirname "$0")/lib/common.sh" interrupt "${1:-}"

cat >job.yaml <<'YAML'
model: {name: fmnist_cnn}
dataset: {name: synthetic, image_shape: [16, 16, 1], num_classes: 10, train_size: 12000,
          test_size: 100, batch_size: 32}
train: {epochs: 3, seed: 3, checkpoint: run.safetensors}
YAML

# start NAME ARGS...: ctower ARGS in the background, its output in NAME.out/.err
start() {
  local name=$1
  shift
  "$CTOWER" "$@" >"$name.out" 2>"$name.err" &
  pid=$!
}
# wait_for TEXT FILE: until FILE has TEXT (at most 600 s: an epoch on a
# loaded machine may take minutes, and a signal sent before it would land
# elsewhere than the checks expect)
wait_for() {
  for _ in $(seq 6000); do grep -q "$1" "$2" && return 0; sleep 0.1; done
  return 1
}
finished() { wait "$pid"; rc=$?; }

"$CTOWER" train job.yaml train.checkpoint=whole.safetensors --quiet >whole.out 2>&1 ||
  fail "the uninterrupted run: $(cat whole.out)"

# --- the first SIGINT: a checkpoint inside the epoch, then --resume ------------
start first train job.yaml --quiet
wait_for '^epoch 1/3' first.out && sleep 0.5
kill -INT "$pid"
finished
if [ "$rc" -eq 130 ] && grep -qE "^ctower: stopped by SIGINT after step [0-9]+; checkpoint run.safetensors holds it \(epoch 2 at example [1-9][0-9]*\); train again with --resume to go on$" first.err; then
  pass "SIGINT: exit 130, a checkpoint inside epoch 2, and where it is"
else
  fail "SIGINT: rc $rc: $(cat first.err)"
fi
"$CTOWER" train job.yaml --quiet --resume >resume.out 2>&1
if grep -qE '^resumed from run.safetensors: epoch 2 at example [1-9]' resume.out && cmp -s run.safetensors whole.safetensors; then
  pass "--resume from it ends bitwise equal to the uninterrupted run"
else
  fail "resume: $(head -5 resume.out); cmp: $(cmp run.safetensors whole.safetensors 2>&1)"
fi

# --- SIGTERM: the same, exit 143 ------------------------------------------------
rm -f run.safetensors
start term train job.yaml --quiet
wait_for '^epoch 1/3' term.out
kill -TERM "$pid"
finished
[ "$rc" -eq 143 ] && grep -q '^ctower: stopped by SIGTERM after step' term.err &&
  pass "SIGTERM: exit 143 with a checkpoint" || fail "SIGTERM: rc $rc: $(cat term.err)"

# --- two signals: out at once, the last checkpoint untouched ---------------------
# (steps of 2000 examples, so that the second signal comes inside the step
# the first one let finish)
rm -f run.safetensors
start twice train job.yaml dataset.batch_size=2000 --quiet
wait_for '^epoch 1/3' twice.out
sleep 0.3
saved=$(md5sum <run.safetensors)
kill -INT "$pid"
for _ in $(seq 500); do grep -q 'stopping after this step' twice.err && break; sleep 0.01; done
kill -INT "$pid"
finished
if [ "$rc" -eq 130 ] && ! grep -q 'stopped by SIGINT' twice.err && [ "$(md5sum <run.safetensors)" = "$saved" ] &&
   "$CTOWER" eval job.yaml >eval.out 2>&1; then
  pass "a second SIGINT quits at once; epoch 1's checkpoint is intact and evaluates"
else
  fail "two signals: rc $rc: $(cat twice.err) $(cat eval.out 2>/dev/null)"
fi
# --- SIGTERM after the last step: the evaluation and checkpoint finish -----------
# (a test set that takes seconds to evaluate; without --quiet the progress
# line of step 10/10 says the steps are over). The message promised a stop:
# exit 143, saying that training was complete, with the checkpoint whole.
cat >last.yaml <<'YAML'
model: {name: fmnist_cnn}
dataset: {name: synthetic, image_shape: [16, 16, 1], num_classes: 10, train_size: 320,
          test_size: 100000, batch_size: 32}
train: {epochs: 1, seed: 3, checkpoint: last.safetensors}
YAML
start last train last.yaml
wait_for ' 10/10 loss' last.out && sleep 0.3
kill -TERM "$pid"
finished
if [ "$rc" -eq 143 ] && grep -q 'stopping after this step' last.err &&
   grep -q '^ctower: stopped by SIGTERM after step 10; it was the last: training was complete, and so are its evaluation and checkpoint last.safetensors$' last.err &&
   "$CTOWER" eval last.yaml >last_eval.out 2>&1; then
  pass "SIGTERM after the last step: exit 143, training complete, its checkpoint whole"
else
  fail "SIGTERM after the last step: rc $rc: $(cat last.err) $(cat last_eval.out 2>/dev/null)"
fi
ls -a | grep -q '\.tmp-' && fail "a temporary file is left: $(ls -a)" || pass "no temporary file is left"
finish
