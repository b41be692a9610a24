#!/usr/bin/env bash
# Gradient compression between ranks (devices.compression): two runs of
# one command are bitwise equal (cmp) for bf16, fp16 and onebit on 2 ranks
# and for onebit on 3 (stripes of unequal sizes); bf16 and fp16 end near
# the exact run; onebit's checkpoint holds every rank's residuals, and a
# run resumed inside an epoch from it ends bitwise as the uninterrupted
# one; the checkpoint evaluates in one process; compression with the
# parameter server is a clear error, and in a process on its own a note.
# Usage: compression.sh CTOWER MPIEXEC COMPARE_CHECKPOINTS
source "$(dirname "$0")/lib/ranks.sh" compression "$@"

# the names of a safetensors file's tensors, one a line
names() {
  python3 -c 'import json, struct, sys
f = open(sys.argv[1], "rb"); n = struct.unpack("<Q", f.read(8))[0]
print("\n".join(sorted(k for k in json.loads(f.read(n)) if k != "__metadata__")))' "$1"
}

train_twice() { # NP COMPRESSION
  local np=$1 c=$2
  mpi "$np" train job.yaml devices.compression="$c" train.checkpoint="${c}_$np.safetensors" \
    --quiet >"${c}_$np.out" 2>&1
  local rc=$?
  mpi "$np" train job.yaml devices.compression="$c" train.checkpoint="${c}_${np}_again.safetensors" \
    --quiet >/dev/null 2>&1
  if [ $rc -eq 0 ] && cmp "${c}_$np.safetensors" "${c}_${np}_again.safetensors"; then
    pass "$c on $np ranks, twice: the checkpoints are the same bytes (cmp); $(grep -o 'test accuracy [0-9.]*' "${c}_$np.out")"
  else fail "$c on $np ranks twice: rc $rc: $(tail -3 "${c}_$np.out")"; fi
}
train_twice 2 bf16
train_twice 2 fp16
train_twice 2 onebit
train_twice 3 onebit

# 16 bits: near the exact run
mpi 2 train job.yaml train.checkpoint=none_2.safetensors --quiet >none.out 2>&1
agree "bf16 on 2 ranks, near the exact run" none_2.safetensors bf16_2.safetensors 0.02
agree "fp16 on 2 ranks, near the exact run" none_2.safetensors fp16_2.safetensors 0.005

# onebit: every rank's residuals are in the checkpoint
held=$(names onebit_2.safetensors | grep -c '^replica_[01]/all_reduce/bucket_0/onebit_')
if [ "$held" -eq 4 ] && ! names onebit_2.safetensors | grep -q '^all_reduce/'; then
  pass "the checkpoint holds both ranks' residuals: $(names onebit_2.safetensors | grep '^replica_' | tr '\n' ' ')"
else fail "residuals in the checkpoint: $held of 4: $(names onebit_2.safetensors | tr '\n' ' ')"; fi

# resumed inside the first epoch, under 2 ranks: bitwise the whole run
mpi 2 train job.yaml devices.compression=onebit train.max_steps=2 \
  train.checkpoint=resumed.safetensors --quiet >/dev/null 2>&1
mpi 2 train job.yaml devices.compression=onebit train.checkpoint=resumed.safetensors --resume \
  --quiet >resume.out 2>&1
if grep -q "resumed from" resume.out && "$COMPARE" onebit_2.safetensors resumed.safetensors 0 >cmp.out; then
  pass "onebit resumed under 2 ranks, bitwise the uninterrupted run: $(cat cmp.out)"
else fail "onebit resumed under 2 ranks: $(cat resume.out cmp.out 2>/dev/null | tail -5)"; fi

# the checkpoint evaluates in one process
run eval job.yaml --checkpoint onebit_2.safetensors
if [ "$rc" -eq 0 ] && grep -q "accuracy" <<<"$out"; then pass "onebit's checkpoint evaluates alone: $out"
else fail "eval of onebit's checkpoint: rc $rc: $out $err"; fi

# the parameter server sends its gradients as they are: an error saying what to set
mpi 2 train job.yaml devices.variable_update=parameter_server devices.compression=onebit \
  --quiet >ps.out 2>&1
rc=$?
if [ $rc -eq 2 ] && grep -q "devices.compression: onebit compresses the gradients the replicated update all-reduces between ranks, but devices.variable_update is parameter_server" ps.out; then
  pass "compression with the parameter server is a clear error (rc $rc)"
else fail "compression with the parameter server: rc $rc: $(cat ps.out)"; fi

# in a process on its own the towers sum exactly, and say so
run train job.yaml devices.compression=bf16 train.max_steps=1 train.checkpoint= --quiet
if [ "$rc" -eq 0 ] && grep -q "note: devices.compression: bf16 applies between the ranks" <<<"$err"; then
  pass "alone, a note: $err"
else fail "compression alone: rc $rc: $err"; fi
finish
