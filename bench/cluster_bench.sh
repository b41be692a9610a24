#!/usr/bin/env bash
# fmnist_cnn (examples/fmnist_cnn.yaml's recipe: Adam 0.001, batch 128) for
# EPOCHS epochs on processes of one core each: 1 ps + 2 workers (sync, and
# async with max_staleness 0, 2 and unbounded), 2 replicated MPI ranks, and
# one process whose 2 towers share an in-process parameter server. Prints
# one row each: images/sec of the training epochs, the epoch and training
# time at which the test accuracy first reaches 0.90, and where a step went
# (a ps job's own report: the workers' computing and sending and waiting, the
# ps's waiting and applying, and the bytes moved a step).
# Usage: bench/cluster_bench.sh CTOWER [EPOCHS (default 3)] [MPIEXEC (default mpirun)]
# ROWS=REGEX in the environment runs only the rows whose names match.
set -u
CTOWER=${1:?usage: cluster_bench.sh CTOWER [EPOCHS] [MPIEXEC]}
EPOCHS=${2:-3}
MPIEXEC=${3:-mpirun}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cat >"$WORK/bench.yaml" <<YAML
model: {name: fmnist_cnn}
dataset: {name: fashion_mnist, path: /usr/share/datasets/fashion-mnist, batch_size: 128}
train: {epochs: $EPOCHS, seed: 42, optimizer: {name: adam, learning_rate: 0.001}, checkpoint: ""}
devices: {variable_update: parameter_server, ps_device: /job:ps/task:0/cpu:0}
session: {intra_op_parallelism_threads: 1}
YAML

# WHAT NP ARGS...: one row from a run of NP ranks (0: one process)
row() {
  local what=$1 np=$2
  shift 2
  [[ $what =~ ${ROWS:-.} ]] || return 0
  local launch=("$MPIEXEC" --allow-run-as-root --oversubscribe -np "$np")
  [ "$np" -eq 0 ] && launch=()
  "${launch[@]}" "$CTOWER" train "$WORK/bench.yaml" --quiet "$@" >"$WORK/out" 2>&1 ||
    { echo "| $what | failed: $(tail -1 "$WORK/out") |"; return; }
  awk -v what="$what" '
    /^epoch [0-9]+\/[0-9]+:/ {
      split($2, e, "/"); acc = $(NF - 5); secs = $(NF - 3); rate = $(NF - 1)
      train += secs; images += secs * rate
      if (reach == "" && acc + 0 >= 0.90) reach = sprintf("epoch %d, %.0f s", e[1], train)
    }
    /^  \/job:worker\/task:0:/ { worker = sprintf("worker computes %s ms, sends and waits for the ps %s ms, %s MB each way", $3, $11, $15) }
    /^  \/job:ps\/task:0:/ { ps = sprintf("ps waits %s ms, applies and answers %s ms, %s MB each way", $5, $10, $14) }
    /^  \/job:[a-z]+\/replica:0\/task:0\/device:CPU:0 / && device == "" {
      device = sprintf("device 0: compute %s, communication %s, waiting %s", $2, $3, $5)
    }
    /staleness at most/ { match($0, /staleness at most [0-9]+/); stale = substr($0, RSTART + 18, RLENGTH - 18) }
    END {
      if (worker == "") worker = device
      printf "| %s | %.0f | %s | %s | %s%s%s |\n", what, images / train,
             reach == "" ? "not reached" : reach, stale == "" ? "-" : stale,
             worker, (ps != "" ? "; " : ""), ps
    }' "$WORK/out"
}

echo "| run | images/sec | test accuracy 0.90 at | staleness seen | where a step goes (worker 0; ps task 0) |"
echo "| --- | ---: | --- | ---: | --- |"
row "1 ps + 2 workers, sync" 3 cluster.ps=1 cluster.worker=2
row "1 ps + 2 workers, async, S = 0" 3 cluster.ps=1 cluster.worker=2 cluster.updates=async \
  cluster.max_staleness=0
row "1 ps + 2 workers, async, S = 2" 3 cluster.ps=1 cluster.worker=2 cluster.updates=async \
  cluster.max_staleness=2
row "1 ps + 2 workers, async, S = ∞" 3 cluster.ps=1 cluster.worker=2 cluster.updates=async \
  cluster.max_staleness=-1
row "2 replicated MPI ranks" 2 devices.variable_update=replicated devices.ps_device=/cpu:0
row "1 process, 2 towers, in-process parameter server" 0 devices.ps_device=/cpu:0 \
  devices.n_towers=2 "session.device_count={CPU: 2}" session.intra_op_parallelism_threads=2
