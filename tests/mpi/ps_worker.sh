#!/usr/bin/env bash
# A cluster of ps and worker tasks (cluster: {ps: P, worker: W}) on 3 and 4
# ranks: sync updates give the weights of one process with as many towers
# (one ps task, or two holding the variables spread by bytes, with Adam's
# slots), a run resumed under the cluster ends as the whole run; async
# updates with max_staleness S never read more than S steps behind (the ps
# counts it), with SGD and S = 0 are the sync weights, and the model still
# learns, and a signal stops it at the end of the epoch; each rank's
# placement log names its job and task; a ps task that stops is named and
# the job ends; a spec that does not fit the ranks, one
# without workers, a ps_device on a worker under async and a task the
# cluster lacks are clear errors.
# Usage: ps_worker.sh CTOWER MPIEXEC COMPARE_CHECKPOINTS
source "$(dirname "$0")/lib/ranks.sh" ps_worker "$@"
source "$(dirname "$0")/lib/pids.sh"
cat >> job.yaml <<'YAML'
devices: {variable_update: parameter_server, ps_device: /job:ps/task:0/cpu:0}
cluster: {ps: 1, worker: 2}
YAML

# P ps tasks and W workers of one tower against one process of W towers
compare() { # WHAT P W TOLERANCE [KEY=VALUE...]
  local what=$1 ps=$2 workers=$3 tol=$4
  shift 4
  mpi $((ps + workers)) train job.yaml cluster.ps="$ps" cluster.worker="$workers" \
    train.checkpoint=cluster.safetensors --quiet "$@" >cluster.out 2>cluster.err
  local rc_cluster=$?
  "$CTOWER" train job.yaml cluster.ps=0 cluster.worker=0 "session.device_count={CPU: $workers}" \
    devices.n_towers="$workers" devices.ps_device=/cpu:0 train.checkpoint=one.safetensors \
    --quiet "$@" >one.out 2>one.err
  local rc_one=$?
  if [ $rc_cluster -ne 0 ] || [ $rc_one -ne 0 ]; then
    fail "$what: rc $rc_cluster / $rc_one: $(cat cluster.err one.err)"; return 1
  fi
  agree "$what" one.safetensors cluster.safetensors "$tol"
}
compare "sync, 1 ps + 2 workers, momentum, as one process of 2 towers" 1 2 1e-5
compare "sync, 1 ps + 3 workers, Adam (slots on the ps), as one process of 3 towers" 1 3 1e-5 \
  train.optimizer.name=adam train.optimizer.learning_rate=0.01
compare "sync, 2 ps + 2 workers, variables spread by bytes, Adam, as one process" 2 2 1e-5 \
  devices.ps_device=/job:ps/cpu:0 train.optimizer.name=adam train.optimizer.learning_rate=0.01
spread=$(grep -o '/job:ps/task:1 holds [1-9][0-9]* variables* ([0-9.]* MiB)' cluster.out)
if [ -n "$spread" ] && grep -q '/job:ps/task:0 holds [1-9]' cluster.out; then
  pass "both ps tasks hold variables: $(grep 'holds' cluster.out)"
else fail "spread over 2 ps tasks: $(head -4 cluster.out)"; fi
compare "async, SGD, max_staleness 0 (bulk-synchronous): the sync weights" 1 3 1e-5 \
  cluster.updates=async cluster.max_staleness=0 train.optimizer.name=sgd

# resumed inside an epoch under the cluster: the whole run's weights
mpi 3 train job.yaml train.checkpoint=whole.safetensors --quiet >/dev/null 2>&1
mpi 3 train job.yaml train.max_steps=2 train.checkpoint=part.safetensors --quiet >/dev/null 2>&1
mpi 3 train job.yaml train.checkpoint=part.safetensors --resume --quiet >resume.out 2>&1
if grep -q "resumed from" resume.out && "$COMPARE" whole.safetensors part.safetensors 0 >cmp.out; then
  pass "resumed under 1 ps + 2 workers, bitwise the whole run: $(cat cmp.out)"
else fail "resume under the cluster: $(tail -3 resume.out) $(cat cmp.out)"; fi

# async: the staleness the ps tasks count never passes max_staleness
for bound in 0 2 -1; do
  mpi 4 train job.yaml cluster.worker=3 cluster.updates=async cluster.max_staleness=$bound \
    train.epochs=4 train.checkpoint= --quiet >async.out 2>async.err
  rc=$?
  seen=$(sed -n 's/.*staleness at most \([0-9]*\);.*/\1/p' async.out)
  accuracy=$(sed -n 's/^done:.*test accuracy \([0-9.]*\).*/\1/p' async.out)
  if [ $rc -eq 0 ] && [ -n "$seen" ] && { [ "$bound" -lt 0 ] || [ "$seen" -le "$bound" ]; } &&
     awk -v a="${accuracy:-0}" 'BEGIN { exit !(a >= 0.6) }'; then
    pass "async, max_staleness $bound: staleness at most $seen, test accuracy $accuracy: $(grep '^cluster: 1 ps' async.out)"
  else fail "async, max_staleness $bound: rc $rc, staleness '$seen', accuracy '$accuracy': $(tail -n 3 async.out async.err)"; fi
done

# each rank's placement log names its job and task (in its own files:
# mpirun may cut the ranks' lines into each other)
rm -rf placed
timeout -k 10 120 "$MPIEXEC" --allow-run-as-root --oversubscribe -np 3 --output-filename placed \
  "$CTOWER" train job.yaml train.checkpoint= train.epochs=1 session.log_device_placement=true \
  --quiet >/dev/null 2>&1
ps_lines=$(cat placed/*/rank.0/std* 2>/dev/null | grep -c '(MatMul): /job:ps/replica:0/task:0/device:CPU:0')
worker_lines=$(cat placed/*/rank.2/std* 2>/dev/null | grep -c '(MatMul): /job:worker/replica:0/task:1/device:CPU:0')
if [ "$ps_lines" -gt 0 ] && [ "$worker_lines" -gt 0 ]; then
  pass "placement logs: rank 0 places on /job:ps/task:0 ($ps_lines MatMuls), rank 2 on /job:worker/task:1 ($worker_lines)"
else fail "placement logs: $ps_lines on the ps, $worker_lines on worker 1"; fi

# bad specs and devices: errors on every rank, no hang
error_case() { # WHAT TEXT NP ARGS...
  local what=$1 text=$2 np=$3
  shift 3
  mpi "$np" train job.yaml train.checkpoint= --quiet "$@" >bad.out 2>&1
  local rc=$?
  if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -qF -- "$text" bad.out; then
    pass "$what: $(grep -F -- "$text" bad.out | head -1)"
  else fail "$what: rc $rc: $(tail -3 bad.out)"; fi
}
error_case "0 workers" "has no worker task" 3 cluster.ps=3 cluster.worker=0
error_case "a spec of 4 tasks on 3 ranks" "names 4 tasks but the job has 3 ranks" 3 cluster.worker=3
error_case "a ps_device on a worker under async" \
  "puts the variables on a worker task, but with cluster.updates: async" 3 \
  cluster.updates=async devices.ps_device=/job:worker/task:0/cpu:0
error_case "a ps task the cluster lacks" "/job:ps/task:1 does not exist (job ps has tasks 0 to 0" 3 \
  devices.ps_device=/job:ps/task:1/cpu:0
error_case "a worker the cluster lacks, without soft placement" \
  "/job:worker/task:2 does not exist (job worker has tasks 0 to 1" 3 \
  session.allow_soft_placement=false "devices.towers=[/cpu:0, /job:worker/task:2/cpu:0]"
run train job.yaml train.checkpoint=
if [ "$rc" -eq 2 ] && grep -q "names 3 tasks but the job has 1 rank" <<<"$err"; then
  pass "the spec in a process on its own: $err"
else fail "the spec alone: rc $rc: $err"; fi

# async: SIGINT to a worker stops every rank at the end of the epoch, with
# the checkpoint of that epoch
timeout -k 10 120 "$MPIEXEC" --allow-run-as-root --oversubscribe -np 3 "$CTOWER" train job.yaml \
  cluster.updates=async train.epochs=100000 train.checkpoint=async.safetensors --quiet \
  >async_int.out 2>&1 &
job=$!
wait_for_file async.safetensors && interrupted=$(rank_pid 2 job.yaml) && kill -INT "$interrupted"
wait $job
rc=$?
if [ $rc -ge 130 ] && [ $rc -ne 137 ] && grep -qE "stopped by (SIGINT|another rank.s signal) after step [0-9]+; checkpoint async.safetensors holds it" async_int.out; then
  pass "async: SIGINT to worker 1 stops the job at the end of the epoch (rc $rc): $(grep 'stopped by' async_int.out)"
else fail "async SIGINT: rc $rc: $(tail -3 async_int.out)"; fi

# a ps task that stops: the workers name it and the job ends
stop_rank 3 0 job.yaml train.epochs=100000 train.checkpoint=model.safetensors \
  cluster.stall_timeout_s=3
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -qE "stalled for 3 s: rank 0 has (sent nothing|not reached)" stall.out; then
  pass "a stopped ps task is named and the job ends (rc $rc after $seconds s): $(grep -i "error: stall" stall.out | head -1)"
else fail "stopped ps task: rc $rc: $(tail -n 20 stall.out)"; fi
finish
