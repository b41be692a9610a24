#!/usr/bin/env bash
# What `train` and `bench` record besides their results: the Chrome trace
# (--trace, --trace-steps; checked by lib/check_trace.py against the
# placement log), the report of where each device's time went, and
# tf_cnn_benchmarks' output of `bench` (--compare-single too); and the
# usage errors of those flags.
# Usage: bash observe.sh /path/to/ctower
source "$(dirname "$0")/lib/common.sh" observe "${1:-}"
CHECK_TRACE="$(dirname "$0")/lib/check_trace.py"
[ -f "$CHECK_TRACE" ] || CHECK_TRACE="$CT_SOURCE_DIR/tests/cli/lib/check_trace.py"

cat >job.yaml <<'YAML'
model: {name: fmnist_cnn}
dataset: {name: synthetic, image_shape: [8, 8, 1], num_classes: 10, train_size: 640,
          test_size: 64, batch_size: 32}
session: {device_count: {CPU: 2}}
devices: {n_towers: 2}
train: {epochs: 1, max_steps: 12, checkpoint: ""}
YAML

# --- a trace of steps 3..5 of a run on two towers -------------------------------
run train job.yaml session.log_device_placement=true --quiet --trace trace.json --trace-steps 3:6
if [ "$rc" -ne 0 ]; then
  fail "train --trace: rc $rc: $err"
else
  cat stdout stderr >placement.log
  if /usr/bin/python3 "$CHECK_TRACE" trace.json placement.log 1 3 6 >check.out; then
    pass "the trace of steps 3..5 is complete and nests ($(grep -c '^ok' check.out) checks)"
  else
    fail "the trace: $(grep -v '^ok' check.out)"
  fi
  grep -q '^trace of steps 3 to 5: trace.json$' stdout && pass "train says where the trace is" ||
    fail "train does not say where the trace is: $out"
fi

# --- where the time went: a row per device, shares that add up to 100% ----------
# (sampled: step 5, every tenth after it, and the traced steps 3 and 4)
rows=$(grep -E '^  /job:localhost/replica:0/task:0/device:CPU:[01] ' stdout)
if grep -qE '^where the time went \(3 sampled steps, [0-9.]+ ms each\):$' stdout && [ "$(wc -l <<<"$rows")" -eq 2 ] &&
   awk '{ s = 0; for (i = 2; i <= 6; ++i) { sub("%", "", $i); s += $i }
          if (s < 99.5 || s > 100.5 || $2 <= 0 || !($7 > 0)) exit 1 }' <<<"$rows"; then
  pass "the report splits each device's time into shares that add up to 100%, with its GFLOP/s"
else
  fail "the efficiency report: $out"
fi
grep -q '^  slowest: /job:localhost/replica:0/task:0/device:CPU:[01] (computing and communicating' stdout &&
  pass "the report names the slowest device" || fail "no slowest device: $out"

# --- bench prints as tf_cnn_benchmarks does -----------------------------------
run bench job.yaml --steps 20 --warmup 2 --compare-single
if [ "$rc" -ne 0 ]; then
  fail "bench: rc $rc: $err"
else
  row='images/sec: [0-9]+\.[0-9] \+/- [0-9]+\.[0-9] \(jitter = [0-9]+\.[0-9]\)	[0-9]+\.[0-9]{3}$'
  if grep -qP '^Step\tImg/sec\ttotal_loss$' stdout && grep -qE "^1	$row" stdout &&
     grep -qE "^10	$row" stdout && grep -qE "^20	$row" stdout &&
     [ "$(grep -cE "^[0-9]+	images/sec" stdout)" -eq 3 ]; then
    pass "bench prints tf_cnn_benchmarks' rows at steps 1, 10 and 20"
  else
    fail "bench's rows: $out"
  fi
  # the total is the last row's mean, between two lines of 64 dashes
  last=$(grep -E '^20	images/sec' stdout | sed -E 's/^20\timages\/sec: ([0-9.]+) .*/\1/')
  total=$(grep -A1 -E '^-{64}$' stdout | grep -oP '^total images/sec: \K[0-9.]+')
  if [ -n "$total" ] && [ "$(grep -cE '^-{64}$' stdout)" -eq 2 ] &&
     awk -v a="$last" -v b="$total" 'BEGIN { exit !(a - b < 0.06 && b - a < 0.06) }'; then
    pass "bench ends with 'total images/sec: $total', the mean over its 20 steps"
  else
    fail "bench's total line ($total against $last): $out"
  fi
  grep -qE '^scaling: 2 towers make [0-9.]+x the images/sec of 1 tower \([0-9.]+\), an efficiency of [0-9]+%$' stdout &&
    pass "bench --compare-single prints the scaling efficiency" || fail "no scaling line: $out"
  grep -qE '^fmnist_cnn, batch 32, 2 towers \(replicated\): [0-9.]+ images/sec' stdout &&
    pass "bench still prints the median" || fail "no median line: $out"
fi

# --- bad flags: clear errors, nothing trained -------------------------------------
expect_usage_error "--trace-steps without --trace" "give --trace FILE too" train job.yaml --trace-steps 1:2
expect_usage_error "--trace-steps 5:3" "--trace-steps needs A:B with 0 <= A < B" train job.yaml --trace t.json --trace-steps 5:3
expect_usage_error "--trace-steps 4" "got '4'" bench job.yaml --trace t.json --trace-steps 4
expect_usage_error "--compare-single on train" "--compare-single" train job.yaml --compare-single
printf x >a_file # a file where a folder should be: the trace's folder cannot be made
run train job.yaml --trace "$WORK/a_file/t.json"
if [ "$rc" -eq 1 ] && [[ "$err" == *"cannot write the trace '$WORK/a_file/t.json'"* ]] &&
   ! grep -q '^epoch' stdout; then
  pass "an unwritable trace fails before training, naming the file"
else
  fail "unwritable trace: rc $rc: $out $err"
fi

finish
