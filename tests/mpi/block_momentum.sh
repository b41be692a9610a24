#!/usr/bin/env bash
# Block momentum (devices.variable_update: block_momentum): with one local
# step a block and no block momentum it is plain data-parallel SGD (as the
# replicated update, to rounding), in a process of 2 towers and on 2 ranks;
# two runs of one command are bitwise equal (cmp) on 2 ranks; a run stopped
# inside a block keeps every rank's and tower's variables and the block
# state in its checkpoint, and resumed there it ends bitwise as the
# uninterrupted run, on 2 ranks, on 3 ranks of 2 towers, and from 1 process
# of 2 towers to 2 ranks of 1 and back (each learner keeps its copy);
# resuming it with another count of learners or with the replicated update
# is refused naming both layouts; a bad block_steps or block_momentum is a
# clear error.
# Usage: block_momentum.sh CTOWER MPIEXEC COMPARE_CHECKPOINTS
source "$(dirname "$0")/lib/ranks.sh" block_momentum "$@"
BM=(devices.variable_update=block_momentum devices.block_steps=2)
TWO=("session.device_count={CPU: 2}" devices.n_towers=2)
SGD=(train.optimizer.name=sgd)

# the names of a safetensors file's tensors, one a line
names() {
  python3 -c 'import json, struct, sys
f = open(sys.argv[1], "rb"); n = struct.unpack("<Q", f.read(8))[0]
print("\n".join(sorted(k for k in json.loads(f.read(n)) if k != "__metadata__")))' "$1"
}

# checkpoint B holds A's tensors within TOLERANCE (and its block state besides)
within() { # WHAT A B TOLERANCE
  local diff_out
  if diff_out=$("$COMPARE" "$2" "$3" "$4" --a-in-b); then pass "$1: $diff_out"; else fail "$1: $diff_out"; fi
}

# K = 1 and eta = 0: each block is one step of the mean gradient
run train job.yaml "${TWO[@]}" "${SGD[@]}" train.checkpoint=replicated_1.safetensors --quiet
run train job.yaml "${TWO[@]}" "${SGD[@]}" devices.variable_update=block_momentum \
  devices.block_steps=1 devices.block_momentum=0 train.checkpoint=k1_1.safetensors --quiet
within "K = 1, eta = 0 in a process of 2 towers: the replicated update" \
  replicated_1.safetensors k1_1.safetensors 1e-5
mpi 2 train job.yaml "${SGD[@]}" train.checkpoint=replicated_2.safetensors --quiet >/dev/null 2>&1
mpi 2 train job.yaml "${SGD[@]}" devices.variable_update=block_momentum devices.block_steps=1 \
  devices.block_momentum=0 train.checkpoint=k1_2.safetensors --quiet >/dev/null 2>&1
within "K = 1, eta = 0 on 2 ranks: the replicated update" replicated_2.safetensors \
  k1_2.safetensors 1e-5

# twice: the same bytes
mpi 2 train job.yaml "${BM[@]}" train.checkpoint=whole_2.safetensors --quiet >whole.out 2>&1
rc=$?
mpi 2 train job.yaml "${BM[@]}" train.checkpoint=again_2.safetensors --quiet >/dev/null 2>&1
if [ $rc -eq 0 ] && cmp whole_2.safetensors again_2.safetensors; then
  pass "block momentum on 2 ranks, twice: the same bytes (cmp); $(grep '^block momentum:' whole.out)"
else fail "block momentum twice on 2 ranks: rc $rc: $(tail -3 whole.out)"; fi

# stopped inside a block (4 steps, K = 2, 3 steps an epoch: the first of
# the second epoch's blocks) and resumed: the whole run
# (each learner, a tower of a rank, keeps its copy as learner_<k>/, whatever
# the layout; NP 1 runs one process without mpirun)
on() { local np=$1; shift; if [ "$np" -eq 1 ]; then "$CTOWER" "$@"; else mpi "$np" "$@"; fi; }
resumed() { # WHAT NP LEARNERS WHOLE ARGS... [-- RESUMING_NP ARGS...]
  local what=$1 np=$2 learners=$3 whole=$4
  shift 4
  local first=() later=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do first+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  local later_np=${1:-$np}
  [ $# -gt 0 ] && shift
  later=("$@")
  [ ${#later[@]} -gt 0 ] || later=("${first[@]}")
  on "$np" train job.yaml "${first[@]}" train.max_steps=4 train.checkpoint=part.safetensors --quiet \
    >/dev/null 2>&1
  local held
  held=$(names part.safetensors | grep -c "^learner_$((learners - 1))/")
  on "$later_np" train job.yaml "${later[@]}" train.checkpoint=part.safetensors --resume --quiet \
    >resume.out 2>&1
  if grep -q "resumed from" resume.out && [ "$held" -gt 0 ] &&
     names part.safetensors | grep -q '^block_momentum/delta/' &&
     "$COMPARE" "$whole" part.safetensors 0 >cmp.out; then
    pass "$what: learner $((learners - 1))'s $held variables and the block state saved; $(cat cmp.out)"
  else fail "$what: $held variables of the last learner: $(tail -3 resume.out) $(cat cmp.out)"; fi
}
resumed "resumed inside a block on 2 ranks, bitwise the whole run" 2 2 whole_2.safetensors "${BM[@]}"
mpi 3 train job.yaml "${BM[@]}" "${TWO[@]}" train.checkpoint=whole_3.safetensors --quiet \
  >/dev/null 2>&1
resumed "resumed inside a block on 3 ranks of 2 towers, bitwise the whole run" 3 6 \
  whole_3.safetensors "${BM[@]}" "${TWO[@]}"

# the learner is the unit: a block begun by 1 process of 2 towers goes on on
# 2 ranks of 1 tower, and the reverse, as the run never stopped
run train job.yaml "${BM[@]}" "${TWO[@]}" train.checkpoint=whole_1x2.safetensors --quiet
resumed "1 process x 2 towers resumed inside a block by 2 ranks x 1 tower, bitwise the whole run" \
  1 2 whole_1x2.safetensors "${BM[@]}" "${TWO[@]}" -- 2 "${BM[@]}"
resumed "2 ranks x 1 tower resumed inside a block by 1 process x 2 towers, bitwise the whole run" \
  2 2 whole_2.safetensors "${BM[@]}" -- 1 "${BM[@]}" "${TWO[@]}"

# refused, naming both layouts: another count of learners, or replicated
run train job.yaml "${BM[@]}" "${TWO[@]}" train.max_steps=4 train.checkpoint=part.safetensors --quiet
cp part.safetensors part.before
mpi 3 train job.yaml "${BM[@]}" train.checkpoint=part.safetensors --resume --quiet >refused.out 2>&1
rc=$?
if [ "$rc" -eq 2 ] && grep -q "written inside a block of block momentum by 2 learners (1 process x 2 towers), but this run has 3 (3 processes x 1 tower)" refused.out &&
   cmp -s part.safetensors part.before; then
  pass "3 learners resuming a block of 2 are refused: $(grep -m1 'error:' refused.out)"
else fail "3 learners resuming a block of 2: rc $rc: $(tail -3 refused.out)"; fi
run train job.yaml "${TWO[@]}" train.checkpoint=part.safetensors --resume --quiet
if [ "$rc" -eq 2 ] && grep -q "written inside a block of block momentum, where its 2 learners' copies (1 process x 2 towers) differ" <<<"$err" &&
   cmp -s part.safetensors part.before; then
  pass "replicated resuming inside a block is refused: ${err#ctower: error: }"
else fail "replicated resuming inside a block: rc $rc: $err"; fi

# a bad block: what was wrong and what to write
run train job.yaml devices.variable_update=block_momentum devices.block_momentum=-0.5 \
  train.checkpoint=
if [ "$rc" -eq 2 ] && grep -q "devices.block_momentum from 0 up to (not including) 1, or -1" <<<"$err"; then
  pass "block_momentum -0.5 is a clear error: $err"
else fail "block_momentum -0.5: rc $rc: $err"; fi
run train job.yaml devices.variable_update=block_momentum devices.block_steps=0 train.checkpoint=
if [ "$rc" -eq 2 ] && grep -q "devices.block_steps" <<<"$err"; then
  pass "block_steps 0 is a clear error: $err"
else fail "block_steps 0: rc $rc: $err"; fi
finish
