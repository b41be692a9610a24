#!/usr/bin/env bash
# Asynchronous updates still learn the main job: fmnist_cnn on Fashion-MNIST
# with 1 ps task and 3 workers (mpirun -np 4, oversubscribed), async with
# unbounded staleness, reaches 0.88 test accuracy after 2 epochs, and the ps
# reports the staleness it counted. The dataset is one of ctower's
# dependencies (scripts/install-deps.sh): without it the test fails.
# Usage: async_fmnist.sh CTOWER MPIEXEC COMPARE_CHECKPOINTS
source "$(dirname "$0")/lib/ranks.sh" async_fmnist "$@"
DATA=/usr/share/datasets/fashion-mnist
if [ ! -r "$DATA/train-images-idx3-ubyte.gz" ] && [ ! -r "$DATA/train-images-idx3-ubyte" ]; then
  fail "no Fashion-MNIST at $DATA: run scripts/install-deps.sh (apt-get install dataset-fashion-mnist)"
  finish
fi
mpi 4 train "$CT_SOURCE_DIR/examples/fmnist_cnn.yaml" dataset.path="$DATA" train.epochs=2 \
  train.checkpoint= devices.variable_update=parameter_server devices.ps_device=/job:ps/task:0/cpu:0 \
  cluster.ps=1 cluster.worker=3 cluster.updates=async cluster.max_staleness=-1 \
  "session.device_count={CPU: 1}" session.intra_op_parallelism_threads=1 \
  --quiet >async.out 2>async.err
rc=$?
accuracy=$(sed -n 's/^done:.*test accuracy \([0-9.]*\).*/\1/p' async.out)
seen=$(sed -n 's/.*staleness at most \([0-9]*\);.*/\1/p' async.out)
if [ $rc -eq 0 ] && [ -n "$seen" ] && awk -v a="${accuracy:-0}" 'BEGIN { exit !(a >= 0.88) }'; then
  pass "1 ps + 3 async workers, 2 epochs of fmnist_cnn: test accuracy $accuracy, staleness at most $seen"
else
  fail "async fmnist_cnn: rc $rc, accuracy '$accuracy', staleness '$seen': $(tail -n 3 async.out async.err)"
fi
finish
