#!/usr/bin/env bash
# Model parallelism across processes through the library: examples/
# train_circle.c under mpirun puts its layers on the devices of tasks 0, 1
# and the last, so its activations go forward and its gradients back
# between the processes; on 2 and 3 ranks it prints, bit for bit, what one
# process prints, and learns (it exits 1 below 0.9 accuracy).
# Usage: layers_on_tasks.sh CTOWER MPIEXEC COMPARE_CHECKPOINTS
source "$(dirname "$0")/lib/ranks.sh" layers_on_tasks "$@"
example="$(dirname "$CTOWER")/train_circle"
"$example" >one.txt 2>one.err || fail "train_circle alone: $(cat one.err)"
for np in 2 3; do
  timeout -k 10 120 "$MPIEXEC" --allow-run-as-root --oversubscribe -np $np "$example" \
    >tasks.txt 2>tasks.err
  rc=$?
  if [ $rc -eq 0 ] && [ -s one.txt ] && cmp -s one.txt tasks.txt; then
    pass "layers on $np tasks: as one process, $(tail -n 1 tasks.txt)"
  else
    fail "layers on $np tasks: rc $rc; $(diff one.txt tasks.txt | head -4) $(tail -n 3 tasks.err)"
  fi
done
finish
