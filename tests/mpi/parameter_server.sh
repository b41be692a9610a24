#!/usr/bin/env bash
# The parameter server across ranks: every rank sends its gradient sums to
# rank 0, rank 0 alone applies the update and holds the optimizer's slots,
# and the variables come back to every rank. The weights are the one-process
# run's with the same towers (bitwise for 2 ranks, within 1e-5 relative for
# 3), two runs of one command are bitwise equal, the checkpoint holds rank
# 0's slots, a run resumed under ranks is bitwise the uninterrupted one, the
# ranks' checkpoint evaluates in one process, a rank that stops is named
# with the bucket it never reached, and a ps_device on another task is a
# clear error.
# Usage: parameter_server.sh CTOWER MPIEXEC COMPARE_CHECKPOINTS
source "$(dirname "$0")/lib/ranks.sh" parameter_server "$@"
cat >> job.yaml <<'YAML'
devices: {variable_update: parameter_server, ps_device: /job:worker/task:0/cpu:0}
cluster: {check_every: 1}
YAML

# NP ranks of one tower against one process of NP towers: the checkpoints
compare() { # WHAT NP TOLERANCE [KEY=VALUE...]
  local what=$1 np=$2 tol=$3
  shift 3
  mpi "$np" train job.yaml train.checkpoint="ranks_$np.safetensors" --quiet "$@" \
    >ranks.out 2>ranks.err
  local rc_ranks=$?
  "$CTOWER" train job.yaml "session.device_count={CPU: $np}" devices.n_towers="$np" \
    devices.ps_device=/cpu:0 train.checkpoint="one_$np.safetensors" --quiet "$@" >one.out 2>one.err
  local rc_one=$?
  if [ $rc_ranks -ne 0 ] || [ $rc_one -ne 0 ]; then
    fail "$what: rc $rc_ranks / $rc_one: $(cat ranks.err one.err)"; return
  fi
  agree "$what" "one_$np.safetensors" "ranks_$np.safetensors" "$tol"
}
compare "2 ranks, momentum, as one process (bitwise)" 2 0
compare "3 ranks, momentum, shards 34+33+33, as one process" 3 1e-5
compare "2 ranks, Adam: the slots checkpointed by rank 0, as one process (bitwise)" 2 0 \
  train.optimizer.name=adam train.optimizer.learning_rate=0.01
cp ranks_2.safetensors adam_ranks.safetensors

# two runs of one command: bitwise equal
mpi 3 train job.yaml train.checkpoint=again.safetensors --quiet >/dev/null 2>&1
if "$COMPARE" ranks_3.safetensors again.safetensors 0 >cmp.out; then
  pass "3 ranks twice: bitwise equal"
else fail "3 ranks twice differ: $(cat cmp.out)"; fi

# the optimizer's slots live on rank 0 alone: its placement log has the
# Adam updates and slots, rank 1's none (it assigns what rank 0 sends)
# (each rank's output in its own files: mpirun may cut the ranks' lines into
# each other on its own stderr)
rm -rf placed
timeout -k 10 300 "$MPIEXEC" --allow-run-as-root --oversubscribe -np 2 --output-filename placed \
  "$CTOWER" train job.yaml train.optimizer.name=adam train.checkpoint= \
  session.log_device_placement=true --quiet >/dev/null 2>&1
cat placed/*/rank.*/std* >placed.out
updates0=$(grep -c '(ApplyAdam): /job:worker/replica:0/task:0/' placed.out)
updates1=$(grep -c '(ApplyAdam): /job:worker/replica:0/task:1/' placed.out)
slots1=$(grep -c '/Adam[_0-9]*: (Variable): /job:worker/replica:0/task:1/' placed.out)
assigns1=$(grep -c '(Assign): /job:worker/replica:0/task:1/' placed.out)
if [ "$updates0" -gt 0 ] && [ "$updates1" -eq 0 ] && [ "$slots1" -eq 0 ] && [ "$assigns1" -eq "$updates0" ]; then
  pass "Adam on rank 0 only: $updates0 updates on task 0, $updates1 updates and $slots1 slots on task 1, which assigns $assigns1 variables"
else fail "slots per rank: task 0 $updates0 updates; task 1 $updates1 updates, $slots1 slots, $assigns1 assigns: $(tail -5 placed.out)"; fi

# resumed inside an epoch under 2 ranks: bitwise the uninterrupted run
mpi 2 train job.yaml train.optimizer.name=adam train.optimizer.learning_rate=0.01 train.max_steps=2 \
  train.checkpoint=resumed.safetensors --quiet >/dev/null 2>&1
mpi 2 train job.yaml train.optimizer.name=adam train.optimizer.learning_rate=0.01 \
  train.checkpoint=resumed.safetensors --resume --quiet >resume.out 2>&1
if grep -q "resumed from" resume.out && "$COMPARE" adam_ranks.safetensors resumed.safetensors 0 >cmp.out; then
  pass "resumed under 2 ranks, bitwise the uninterrupted run: $(cat cmp.out)"
else fail "resume under 2 ranks: $(cat resume.out cmp.out 2>/dev/null)"; fi

# the ranks' checkpoint (with its slots) evaluates in one process
run eval job.yaml --checkpoint adam_ranks.safetensors
if [ "$rc" -eq 0 ] && grep -q "accuracy" <<<"$out"; then
  pass "the ranks' checkpoint evaluates alone: $out"
else fail "eval of the ranks' checkpoint: rc $rc, '$out' $err"; fi

# a ps_device on another task: an error naming the key and what to write
mpi 2 train job.yaml devices.ps_device=/job:worker/task:1/cpu:0 --quiet >task1.out 2>&1
rc=$?
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "devices.ps_device '/job:worker/task:1/cpu:0' is on task 1" task1.out &&
  grep -q "write /job:worker/task:0/" task1.out; then
  pass "ps_device on task 1 is a clear error (rc $rc)"
else fail "ps_device on task 1: rc $rc: $(cat task1.out)"; fi

# a rank that stops is named, with what it has not reached: a bucket (the
# CNN's steps are mostly computing: the stop mostly lands in one, before its
# buckets), or, when it lands after them, the all-reduce of the step's loss
cat > stall.yaml <<'YAML'
model: {name: fmnist_cnn}
dataset: {name: synthetic, image_shape: [28, 28, 1], num_classes: 10, train_size: 1000,
          test_size: 50, batch_size: 100}
train: {epochs: 100000, seed: 3, checkpoint: stall.safetensors}
devices: {variable_update: parameter_server}
cluster: {stall_timeout_s: 3}
YAML
mpi 2 train stall.yaml >stall.out 2>&1 &
job=$!
for _ in $(seq 600); do [ -s stall.safetensors ] && break; sleep 0.1; done
sleep 0.5
stopped=""
for pid in $(pgrep -f "$CTOWER train stall.yaml"); do
  [ "$(readlink /proc/"$pid"/cwd)" = "$WORK" ] || continue
  tr '\0' '\n' </proc/"$pid"/environ 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=1" && stopped=$pid
done
[ -n "$stopped" ] && kill -STOP "$stopped"
wait $job
rc=$?
[ -n "$stopped" ] && kill -KILL "$stopped" 2>/dev/null
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -Eq "rank 1 has not reached ((reduce|broadcast) bucket|all-reduce for the step's loss)" stall.out; then
  pass "a stopped rank is named with what it has not reached (rc $rc): $(grep -m1 -o 'rank 1 has not reached [^(]*' stall.out)"
else fail "stopped rank under the parameter server: rc $rc: $(grep -v "^epoch" stall.out | head -5)"; fi
finish
