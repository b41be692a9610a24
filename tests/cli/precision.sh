#!/usr/bin/env bash
# train.precision and train.conv_algorithm on CPU devices, through the
# command: resnet20 on small images (3x3 layers that Winograd takes) trains with
# bf16 or Winograd asked for, natively and with oneDNN's ISA capped
# (DNNL_MAX_CPU_ISA=AVX2: no bf16 and no Winograd of oneDNN's there, ctower's
# own Winograd where its build has AVX2 and FMA). Every expectation comes from
# what ctower reports, never from the CPU's flags: `ctower devices` says what
# the CPU devices compute with (math: fp32 or bf16; winograd: none, or the
# filters it takes), and a run's weights differ from the fp32 direct run's exactly
# when that report does, with a note exactly when what was asked falls back.
# A misspelt value is a usage error naming the choices.
# Usage: bash precision.sh /path/to/ctower
source "$(dirname "$0")/lib/common.sh" precision "${1:-}"

cat >job.yaml <<'YAML'
model: {name: resnet20}
dataset: {name: synthetic, image_shape: [16, 16, 3], num_classes: 10, train_size: 64,
          test_size: 16, batch_size: 16}
train: {epochs: 1, max_steps: 2, checkpoint: fp32.safetensors, conv_algorithm: direct}
YAML

# reported FIELD [KEY=VALUE ...]: FIELD ("math", "winograd") of the first
# CPU device as `ctower devices` describes it for job.yaml with those
# overrides, in this environment (its fields are two spaces apart)
reported() {
  local field=$1
  shift
  "$CTOWER" devices job.yaml "$@" 2>/dev/null | grep -m 1 "kind: CPU" |
    awk -F '  ' -v f="$field: " '{ for (i = 1; i <= NF; ++i) if (index($i, f) == 1) print substr($i, length(f) + 1) }'
}

# trained NAME [KEY=VALUE ...]: trains to NAME.safetensors, its stderr in
# NAME.err, and sets `arithmetic` to what ctower reports for those overrides
trained() {
  local name=$1
  shift
  run train job.yaml train.checkpoint="$name.safetensors" --quiet "$@"
  echo "$err" >"$name.err"
  [ "$rc" -eq 0 ] || fail "$name: rc $rc: $err"
  arithmetic="$(reported math "$@"), winograd $(reported winograd "$@")"
  case "$arithmetic" in
    ,* | *"winograd ") fail "$name: ctower devices did not report its arithmetic: '$arithmetic'" ;;
  esac
}

# expect_bits NAME SAME(0|1) WHY REFERENCE: NAME's weights against REFERENCE's
expect_bits() {
  if cmp -s "$4.safetensors" "$1.safetensors"; then same=1; else same=0; fi
  if [ "$same" -eq "$2" ]; then
    pass "$1: $3"
  else
    fail "$1: weights $( [ "$same" -eq 1 ] && echo equal || echo differ ) (expected otherwise: $3)"
  fi
}

# expect_note NAME SAID(0|1) TEXT: NAME's stderr has the note TEXT, or no note at all
expect_note() {
  if [ "$2" -eq 1 ]; then
    grep -qF "note: $3" "$1.err" && pass "$1: the fallback is said" ||
      fail "$1: no note '$3': $(cat "$1.err")"
  else
    grep -q "^note:" "$1.err" && fail "$1: a note without a fallback: $(cat "$1.err")" ||
      pass "$1: no note when nothing falls back"
  fi
}

# as this test was started (the AVX2 stage of scripts/test.sh caps it already), then capped
for cap in "" AVX2; do
  [ -z "$cap" ] || export DNNL_MAX_CPU_ISA=$cap
  p=${cap:+capped_}
  trained "${p}fp32"
  reference=$arithmetic
  [ "$reference" = "fp32, winograd none" ] && pass "${p}fp32: reported $reference" ||
    fail "${p}fp32: reported $reference (expected fp32, winograd none)"
  expect_note "${p}fp32" 0 ""

  trained "${p}bf16" train.precision=bf16
  [ "$arithmetic" = "$reference" ] && same=1 || same=0
  expect_bits "${p}bf16" "$same" "reported $arithmetic" "${p}fp32"
  expect_note "${p}bf16" "$same" "train.precision is bf16, but this CPU has neither AVX512_BF16 nor AMX"

  trained "${p}winograd" train.conv_algorithm=winograd
  [ "$arithmetic" = "$reference" ] && same=1 || same=0
  expect_bits "${p}winograd" "$same" "reported $arithmetic" "${p}fp32"
  expect_note "${p}winograd" "$same" "train.conv_algorithm is winograd, but this CPU has neither"
done
# the ISA capped at AVX2 takes bf16 away whatever the CPU
DNNL_MAX_CPU_ISA=AVX2 run devices job.yaml train.precision=bf16
grep -q "math: fp32" <<<"$out" &&
  pass "capped: bf16 reported as fp32" || fail "capped: bf16 not reported as fp32"

expect_usage_error "train.precision: fp16" "bf16" train job.yaml train.precision=fp16
expect_usage_error "train.conv_algorithm: wino" "winograd" train job.yaml train.conv_algorithm=wino
finish
