#!/usr/bin/env bash
# train.precision and train.conv_algorithm on CPU devices, through the
# command: a small CNN with 3x3 (Winograd-able) and 5x5 layers trains to
# different bits in bf16 and with Winograd where the CPU has them, and to
# exactly the fp32 direct bits where it has not (oneDNN's ISA capped with
# DNNL_MAX_CPU_ISA=AVX2, against an fp32 run so capped: the kernels differ
# from one ISA to another), the run then saying what it does instead. With
# the ISA capped, Winograd is ctower's own (AVX2): different bits, no note.
# A misspelt value is a usage error naming the choices.
# Usage: bash precision.sh /path/to/ctower
source "$(dirname "$0")/lib/common.sh" precision "${1:-}"

cat >job.yaml <<'YAML'
model: {name: resnet20}
dataset: {name: synthetic, image_shape: [16, 16, 3], num_classes: 10, train_size: 64,
          test_size: 16, batch_size: 16}
train: {epochs: 1, max_steps: 2, checkpoint: fp32.safetensors, conv_algorithm: direct}
YAML

# train NAME [KEY=VALUE ...]: trains to NAME.safetensors; stderr in NAME.err
train() {
  local name=$1
  shift
  run train job.yaml train.checkpoint="$name.safetensors" --quiet "$@"
  echo "$err" >"$name.err"
  [ "$rc" -eq 0 ] || fail "$name: rc $rc: $err"
}

# the ISA oneDNN reports, as the CPU devices see it
isa_has() { grep -qw "$1" /proc/cpuinfo; }

train fp32
train bf16 train.precision=bf16
train winograd train.conv_algorithm=winograd
DNNL_MAX_CPU_ISA=AVX2 train capped_fp32
DNNL_MAX_CPU_ISA=AVX2 train capped_bf16 train.precision=bf16
DNNL_MAX_CPU_ISA=AVX2 train capped_winograd train.conv_algorithm=winograd

# expect_bits NAME SAME(0|1) WHY [REFERENCE]: NAME's weights against REFERENCE's (fp32)
expect_bits() {
  if cmp -s "${4:-fp32}.safetensors" "$1.safetensors"; then same=1; else same=0; fi
  if [ "$same" -eq "$2" ]; then
    pass "$1: $3"
  else
    fail "$1: weights $( [ "$same" -eq 1 ] && echo equal || echo differ ) (expected otherwise: $3)"
  fi
}

if isa_has avx512_bf16; then
  expect_bits bf16 0 "bf16 arithmetic in effect (AVX512_BF16)"
else
  expect_bits bf16 1 "no AVX512_BF16: fp32"
fi
if isa_has avx512f; then
  expect_bits winograd 0 "Winograd in effect (AVX-512)"
else
  expect_bits winograd 1 "no AVX-512: direct"
fi
expect_bits capped_bf16 1 "ISA capped at AVX2: fp32" capped_fp32
if isa_has avx2 && isa_has fma; then
  expect_bits capped_winograd 0 "ISA capped at AVX2: ctower's own Winograd" capped_fp32
else
  expect_bits capped_winograd 1 "neither AVX-512 nor AVX2: direct" capped_fp32
fi
grep -q "note: train.precision is bf16, but this CPU has neither AVX512_BF16 nor AMX" capped_bf16.err &&
  pass "the fallback to fp32 is said" || fail "no fallback note for bf16: $(cat capped_bf16.err)"
for run in fp32 capped_winograd; do
  grep -q "^note:" $run.err && fail "$run: a note without a fallback: $(cat $run.err)" ||
    pass "$run: no note when nothing falls back"
done

expect_usage_error "train.precision: fp16" "bf16" train job.yaml train.precision=fp16
expect_usage_error "train.conv_algorithm: wino" "winograd" train job.yaml train.conv_algorithm=wino
finish
