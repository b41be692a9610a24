#!/usr/bin/env bash
# Memory is checked before it is taken: `ctower plan` of a step far too
# large for its limit says DOES NOT FIT (exit 1) without building the batch
# it predicts or generating a synthetic dataset (its resident memory stays
# under 300 MiB, under a 2 GiB address-space cap, and it answers in
# seconds); a batch larger than the training split is a
# config error naming both sizes (exit 2) for plan and train alike; and the
# CPU devices without a limit are held to the machine's memory, by the
# figures the plan prints.
# Usage: bash plan_memory.sh /path/to/ctower
source "$(dirname "$0")/lib/common.sh" plan_memory "${1:-}"

cat >job.yaml <<'YAML'
model: {name: fmnist_cnn}
dataset: {name: synthetic, image_shape: [28, 28, 1], num_classes: 10, train_size: 60000,
          test_size: 64, batch_size: 128}
train: {epochs: 1, checkpoint: ""}
YAML

# capped RUN ARGS...: ctower under a 2 GiB address-space cap (a batch of
# 60000 images takes 6.9 GiB a device), its peak resident memory in rss_kb
capped() {
  (ulimit -v 2097152 && exec /usr/bin/time -f "%M" -o rss "$CTOWER" "$@") >"$WORK/stdout" \
    2>"$WORK/stderr"
  rc=$?
  out=$(cat "$WORK/stdout") err=$(cat "$WORK/stderr") rss_kb=$(tail -n 1 rss)
}

capped plan job.yaml dataset.batch_size=60000 session.memory_limit_mb.CPU=4096
if [ "$rc" -eq 1 ] && grep -q "DOES NOT FIT" <<<"$out" &&
   grep -q "will not fit on .*memory limit 4096.0 MiB; lower dataset.batch_size (now 60000)" <<<"$err" &&
   [ "$rss_kb" -lt 307200 ]; then
  pass "a step over its limit: DOES NOT FIT, exit 1, in $rss_kb KiB"
else
  fail "a step over its limit: rc $rc, $rss_kb KiB: $out $err"
fi

# a synthetic training set of 3 GiB (256 images of 2048x2048x3): the plan
# asks it its size and shape and generates none of it
cat >images.yaml <<'YAML'
model: {name: resnet20}
dataset: {name: synthetic, image_shape: [2048, 2048, 3], num_classes: 10, train_size: 256,
          test_size: 16, batch_size: 8}
train: {epochs: 1, checkpoint: ""}
YAML
capped plan images.yaml --calibration none.json
if grep -q "^predicted step: " <<<"$out" && [ "$rss_kb" -lt 307200 ]; then
  pass "a plan of 3 GiB of synthetic images generates none of them ($rss_kb KiB)"
else
  fail "a plan of 3 GiB of synthetic images: rc $rc, $rss_kb KiB: $err"
fi

for command in plan train; do
  run "$command" job.yaml dataset.batch_size=60001
  [ "$rc" -eq 2 ] && grep -q "dataset.batch_size (60001) is larger than the training split .*(60000 examples); set dataset.batch_size to at most 60000" <<<"$err" &&
    pass "$command: a batch larger than the dataset is a clear error" ||
    fail "$command: a batch larger than the dataset: rc $rc: $err"
done

# resnet20 at a batch of 20000: whether it fits the machine is the plan's
# own arithmetic, which must agree with its verdict
cat >big.yaml <<'YAML'
model: {name: resnet20}
dataset: {name: synthetic, image_shape: [32, 32, 3], num_classes: 10, train_size: 20000,
          test_size: 64, batch_size: 20000}
train: {epochs: 1, checkpoint: ""}
YAML
capped plan big.yaml
machine=$(sed -n 's/.*this machine'"'"'s memory \([0-9.]*\) MiB.*/\1/p' <<<"$out")
peaks=$(sed -n 's/^  CPU:[0-9]* .* peak \([0-9.]*\) MiB, limit none$/\1/p' <<<"$out" | paste -sd+ | bc)
host=$(awk '/MemTotal/ {printf "%.1f", $2 / 1024}' /proc/meminfo)
if [ -n "$machine" ]; then
  [ "$rc" -eq 1 ] && [ "$(echo "$peaks > $machine" | bc)" -eq 1 ] &&
    pass "resnet20, batch 20000: $peaks MiB over the machine's $machine MiB: DOES NOT FIT" ||
    fail "resnet20, batch 20000: rc $rc, peaks $peaks, machine $machine: $out"
else
  [ "$rc" -eq 0 ] && [ "$(echo "$peaks <= $host" | bc)" -eq 1 ] &&
    pass "resnet20, batch 20000: $peaks MiB fits the machine's $host MiB" ||
    fail "resnet20, batch 20000: rc $rc, peaks $peaks MiB against $host MiB: $out $err"
fi
[ "$rss_kb" -lt 307200 ] && pass "... planned in $rss_kb KiB" || fail "resnet20 planned in $rss_kb KiB"
finish
