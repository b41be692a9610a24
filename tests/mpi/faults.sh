#!/usr/bin/env bash
# No rank hangs the job: a rank stopped (SIGSTOP) in the middle of training
# is named with the all-reduce it never reached and the job ends non-zero;
# a rank killed (SIGKILL) ends the job and leaves the last checkpoint
# intact and loadable; a SIGINT to one rank stops every rank after the same
# step, with one checkpoint that --resume continues bitwise, and the job
# exits 130 whichever rank got it (143 for SIGTERM).
# Usage: faults.sh CTOWER MPIEXEC
source "$(dirname "$0")/../cli/lib/common.sh" faults "$1"
source "$(dirname "$0")/lib/pids.sh"
MPIEXEC=${2:?}

cat > faults.yaml <<'YAML'
model: {name: mlp}
dataset: {name: synthetic, image_shape: [8, 8, 1], num_classes: 10, train_size: 2000,
          test_size: 100, batch_size: 100}
train: {epochs: 100000, seed: 3, checkpoint: model.safetensors}
cluster: {stall_timeout_s: 3}
YAML

# 1. a stopped rank: the others name it and the job ends
stop_rank 2 1 faults.yaml
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "rank 1" stall.out && grep -qi "stall" stall.out; then
  pass "a stopped rank is named and the job ends (rc $rc after $seconds s): $(grep -i stall stall.out | head -1)"
else fail "stopped rank: rc $rc: $(tail -5 stall.out)"; fi

# 2. a killed rank: the job ends, the checkpoint loads
rm -f model.safetensors
timeout -k 10 120 "$MPIEXEC" --allow-run-as-root --oversubscribe -np 2 "$CTOWER" train faults.yaml \
  >kill.out 2>&1 &
job=$!
wait_for_file model.safetensors && sleep 1 && killed=$(rank_pid 1 faults.yaml) && kill -KILL "$killed"
wait $job
job_rc=$?
if [ -n "${killed:-}" ] && [ $job_rc -ne 0 ] && [ $job_rc -ne 124 ]; then
  pass "a killed rank ends the job (rc $job_rc)"
else fail "killed rank: rc $job_rc, pid '${killed:-}': $(tail -5 kill.out)"; fi
run eval faults.yaml --checkpoint model.safetensors
if grep -q "accuracy" <<<"$out"; then pass "the last checkpoint loads: $out"
else fail "the checkpoint after a kill: $out $err"; fi

# 3. a rank whose loss becomes NaN fails with its rank named; every rank sees
#    the same loss, so all end at once, none hangs
timeout -k 10 120 "$MPIEXEC" --allow-run-as-root --oversubscribe -np 2 "$CTOWER" train faults.yaml \
  train.epochs=1 train.optimizer.learning_rate=1e30 train.checkpoint= >nan.out 2>&1
rc=$?
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "loss became" nan.out; then
  pass "a NaN loss ends the job (rc $rc): $(grep 'loss became' nan.out | head -1)"
else fail "NaN loss: rc $rc: $(tail -5 nan.out)"; fi

# 4. SIGINT to rank 1 alone: every rank stops after the same step, rank 0
#    saves where, and --resume on 2 ranks ends bitwise as the whole run
cat > interrupt.yaml <<'YAML'
model: {name: fmnist_cnn}
dataset: {name: synthetic, image_shape: [16, 16, 1], num_classes: 10, train_size: 4800,
          test_size: 100, batch_size: 48}
train: {epochs: 3, seed: 5, checkpoint: stopped.safetensors}
YAML
mpirun2() { timeout -k 10 120 "$MPIEXEC" --allow-run-as-root --oversubscribe -np 2 "$CTOWER" "$@"; }
mpirun2 train interrupt.yaml train.checkpoint=whole.safetensors --quiet >whole.out 2>&1 ||
  fail "the uninterrupted 2-rank run: $(tail -3 whole.out)"
mpirun2 train interrupt.yaml --quiet >interrupt.out 2>&1 &
job=$!
for _ in $(seq 600); do grep -q '^epoch 1/3' interrupt.out && break; sleep 0.1; done
interrupted=$(rank_pid 1 interrupt.yaml) && kill -INT "$interrupted"
wait $job
rc=$?
if [ $rc -eq 130 ] && grep -qE '^(\[worker 0\] )?ctower: stopped by another rank.s signal after step [0-9]+; checkpoint stopped.safetensors holds it \(epoch 2 at example [1-9]' interrupt.out; then
  pass "SIGINT to rank 1: every rank stops, rank 0 saves where (rc $rc)"
else
  fail "SIGINT to rank 1: rc $rc: $(tail -5 interrupt.out)"
fi
# 5. SIGINT to rank 0, SIGTERM to rank 1: every rank exits with the
#    signal's status, whichever rank got it (each rank's status is kept in
#    status.<rank>; mpirun is told not to kill the other rank when the
#    first exits non-zero, which could come before that rank writes its
#    status, and then exits 0 itself: its status under its default is
#    checked by case 4)
signal_rank() { # SIGNAL RANK: each rank's status into status.*
  rm -f status.*
  timeout -k 10 120 "$MPIEXEC" --allow-run-as-root --oversubscribe \
    --mca orte_abort_on_non_zero_status 0 -np 2 bash -c \
    '"$0" train interrupt.yaml --quiet train.checkpoint=signal.safetensors; s=$?; echo $s >status.$OMPI_COMM_WORLD_RANK; exit $s' \
    "$CTOWER" >signal.out 2>&1 &
  job=$!
  for _ in $(seq 600); do grep -q '^epoch 1/3' signal.out && break; sleep 0.1; done
  signalled=$(rank_pid "$2" interrupt.yaml) && kill "-$1" "$signalled"
  wait $job
  statuses=$(cat status.0 status.1 2>/dev/null | tr '\n' ' ')
}
signal_rank INT 0
if [ "$statuses" = "130 130 " ] && grep -q '^ctower: stopped by SIGINT after step' signal.out; then
  pass "SIGINT to rank 0: every rank stops and exits 130"
else
  fail "SIGINT to rank 0: the ranks' $statuses: $(tail -5 signal.out)"
fi
signal_rank TERM 1
if [ "$statuses" = "143 143 " ]; then
  pass "SIGTERM to rank 1: every rank stops and exits 143"
else
  fail "SIGTERM to rank 1: the ranks' $statuses: $(tail -5 signal.out)"
fi

mpirun2 train interrupt.yaml --quiet --resume >resume.out 2>&1
if grep -q '^resumed from stopped.safetensors: epoch 2 at example' resume.out &&
   cmp -s stopped.safetensors whole.safetensors; then
  pass "--resume on 2 ranks ends bitwise equal to the uninterrupted job"
else
  fail "resume after SIGINT: $(tail -3 resume.out); $(cmp stopped.safetensors whole.safetensors 2>&1)"
fi
finish
