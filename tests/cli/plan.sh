#!/usr/bin/env bash
# `ctower plan`: its sections and placement reasons (explicit, colocated,
# default, soft), every op with --verbose, a calibration written by `ctower
# bench --calibrate` and read back, a step that will not fit its memory
# limit (exit 1, naming the device, the bytes and what to change), and bad
# usage (exit 2, one clear line).
# Usage: bash plan.sh /path/to/ctower
source "$(dirname "$0")/lib/common.sh" plan "${1:-}"

cat >small.yaml <<'EOF'
model:
  name: fmnist_cnn
dataset:
  name: synthetic
  batch_size: 32
  train_size: 64
  test_size: 32
EOF

# expect_out WHAT PATTERN: stdout of the last run matches PATTERN (grep -E).
expect_out() {
  if grep -Eq -- "$2" <<<"$out"; then pass "$1"; else fail "$1: no /$2/ in: $out"; fi
}

run plan small.yaml devices.n_towers=2 'session.device_count={CPU: 2}' --calibration none.json
[ "$rc" -eq 0 ] || fail "plan exited $rc: $err"
expect_out "a header names the model and towers" '^plan: fmnist_cnn, batch 32, 2 towers \(replicated\)'
expect_out "no calibration: defaults, said so" 'no calibration at none.json; conservative defaults'
expect_out "placement per device with reasons" \
  'device:CPU:1: [0-9]+ ops: explicit [1-9][0-9]*, colocated [1-9][0-9]*, default [0-9]+, soft 0'
expect_out "op types per device" 'Conv2D [0-9]+, .*Conv2DBackpropFilter [0-9]+'
expect_out "memory section" '^memory per device'
expect_out "parameter, optimizer and peak bytes" \
  'CPU:0 +parameters 12\.5 MiB, optimizer 12\.5 MiB, peak [0-9.]+ MiB, limit none'
expect_out "FLOPs per device" 'CPU:1 +[0-9.]+ GFLOP \(conv/matmul [0-9.]+ GFLOP\)'
expect_out "bytes all-reduced in process" 'all-reduced in process 13\.[0-9]+ MB, across ranks 0 B'
expect_out "predicted step time" '^predicted step: [0-9.]+ ms, [0-9]+ images/s'
expect_out "speed-ups, saying what they compare" \
  '^2 towers, the same batch \(speed-up: one tower.s step time over the towers.\):$'
expect_out "... against one of the towers alone" \
  '^  against one tower on /cpu:0 alone, as configured: [0-9.]+ ms, speed-up [0-9.]+, efficiency [0-9]+%$'
expect_out "... against one tower on all their cores" \
  '^  against one tower on one CPU device of all the CPU devices. cores: [0-9.]+ ms, speed-up [0-9.]+'
expect_out "ranks until 90% at the default links" '^  10 Gb/s link: .*'
expect_out "ranks until 90% at 100 Gb/s" '^  100 Gb/s link: .*'

run plan small.yaml --verbose --calibration none.json
expect_out "--verbose lists every op with its reason" '^    tower_0/conv1/Conv2D \(Conv2D\): explicit$'
expect_out "--verbose names colocated ops" '\(ApplyMomentum\): colocated$'

run plan small.yaml devices.variable_update=parameter_server devices.ps_device=/cpu:3 --calibration none.json
expect_out "a missing ps device: soft placement" 'ops: explicit [0-9]+, colocated 0, default [0-9]+, soft [1-9]'

# no calibration at the default place: the first plan measures this
# machine and saves it there (common.sh points XDG_CACHE_HOME into WORK);
# the next reads it
cached=$XDG_CACHE_HOME/ctower/calibration.json
run plan small.yaml
[ "$rc" -eq 0 ] && [ -s "$cached" ] && grep -q '"in_process"' "$cached" ||
  fail "a first plan without calibration: rc $rc, $(ls -l "$cached" 2>&1): $err"
expect_out "a first plan measures this machine and says so" \
  "^cost model: this machine, measured now and saved to $cached for later plans"
run plan small.yaml
expect_out "the next plan reads what the first saved" "^cost model: calibration $cached \\(measured on"

run bench --calibrate --calibration cal/calibration.json
[ "$rc" -eq 0 ] && [ -s cal/calibration.json ] || fail "bench --calibrate: rc $rc: $err"
expect_out "calibration measures the kernels" 'device:CPU:0 \([0-9]+ threads\): per op .* GFLOP/s'
expect_out "calibration measures the all-reduce" 'all-reduce between /cpu:0 and /cpu:1: latency'
run plan small.yaml --calibration cal/calibration.json --link-gbps 1,40
expect_out "plan reads the calibration" '^cost model: calibration cal/calibration.json \(measured on'
expect_out "--link-gbps gives the links" '^  40 Gb/s link: '

echo '{"CPU": {"threads": 0}}' >bad.json
run plan small.yaml --calibration bad.json
if [ "$rc" -eq 1 ] && grep -q "calibration file 'bad.json' is malformed" <<<"$err"; then
  pass "a malformed calibration is a runtime error"
else
  fail "malformed calibration: rc $rc: $err"
fi
# a calibration of another shape is never read as the defaults: the file,
# the key at fault and how to write it again
# expect_schema WHAT EDIT NEEDLE: the calibration bench wrote, changed by
# the Python statement EDIT on `h`, is refused with NEEDLE
expect_schema() {
  /usr/bin/python3 -c "import json, sys; h = json.load(open('cal/calibration.json')); $2
json.dump(h, open('schema.json', 'w'))"
  run plan small.yaml --calibration schema.json
  if [ "$rc" -eq 1 ] && [ "$(grep -c '^ctower: error: ' <<<"$err")" -eq 1 ] &&
     [[ "$err" == *"calibration file 'schema.json' is malformed: $3; run 'ctower bench --calibrate --calibration schema.json' to write it again"* ]]; then
    pass "$1: ${err#ctower: error: }"
  else
    fail "$1: rc $rc: $err $(grep 'cost model' <<<"$out")"
  fi
}
expect_schema "a calibration without in_process" "del h['in_process']" '"in_process" is missing'
expect_schema "a calibration of version 2" "h['version'] = 2" '"version" is 2, and this ctower reads 1'
expect_schema "a calibration with a key renamed" "h['cpus'] = h.pop('CPU')" \
  'it has the key "cpus", which a calibration does not hold'
expect_schema "a calibration whose CPU is a string" "h['CPU'] = 'fast'" '"CPU" must be an object'
expect_schema "a calibration of 0 threads" "h['CPU']['threads'] = 0" \
  '"CPU.threads" is 0, not a whole number >= 1'
expect_schema "a calibration with a point as a number" "h['CPU']['dense'][0] = 1e9" \
  '"CPU.dense[0]" must be an object'

# --- will not fit: exit 1, the device, predicted bytes vs limit, what to change
run plan small.yaml session.memory_limit_mb.CPU=20 --calibration none.json
expect_out "the memory section flags the device" 'limit 20\.0 MiB  DOES NOT FIT'
if [ "$rc" -eq 1 ] && grep -Eq "will not fit on /job:localhost/replica:0/task:0/device:CPU:0: predicted peak [0-9.]+ MiB, memory limit 20\.0 MiB; lower dataset.batch_size \(now 32\), spread the batch over more towers" <<<"$err"; then
  pass "a step that will not fit is reported with exit 1"
else
  fail "does not fit: rc $rc: $err"
fi
run plan small.yaml session.memory_limit_mb.CPU=200 --calibration none.json
[ "$rc" -eq 0 ] && pass "a step that fits exits 0" || fail "fits: rc $rc: $err"

# --- bad usage: exit 2, one line
expect_usage_error "plan without a config" "'ctower plan' needs a CONFIG.yaml argument" plan
expect_usage_error "an unknown flag" "unknown option '--verbos' for 'ctower plan'; did you mean '--verbose'?" \
  plan small.yaml --verbos
expect_usage_error "a missing config file" "config file 'missing.yaml' not found" plan missing.yaml
expect_usage_error "a bad --link-gbps" "--link-gbps needs bandwidths in Gb/s in (0, 1000000]" \
  plan small.yaml --link-gbps fast
expect_usage_error "a bad override" "'dataset.batch_size' must be" plan small.yaml dataset.batch_size=x
[ -n "$err" ] && [ "$(printf "%s\n" "$err" | grep -c "")" -eq 1 ] && pass "one line on stderr" || fail "stderr: $err"

run plan --help
expect_out "plan --help" '^Usage: ctower plan CONFIG.yaml'
run --help
expect_out "--help lists plan" 'ctower plan  CONFIG.yaml'
run bench --help
expect_out "bench --help names --calibrate" '--calibrate'

finish
