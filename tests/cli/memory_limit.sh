#!/usr/bin/env bash
# Out of memory anywhere is a clear error, never a crash: under address-space
# limits (ulimit -v) from the least the command loads with up to 700 MiB
# more, in 50 MiB steps, training fmnist_cnn for a step and evaluating it
# either succeed (exit 0) or fail with one "ctower: error: ... memory ..."
# line (exit 1), never a signal (oneDNN generating its code with no memory
# left once crashed here with SIGSEGV, or aborted unwinding an exception
# through C frames).
# Usage: bash memory_limit.sh /path/to/ctower
source "$(dirname "$0")/lib/common.sh" memory_limit "${1:-}"

cat >job.yaml <<'YAML'
model: {name: fmnist_cnn}
dataset: {name: synthetic, image_shape: [28, 28, 1], num_classes: 10, train_size: 256,
          test_size: 256, batch_size: 128}
train: {epochs: 1, max_steps: 1, checkpoint: model.safetensors}
session: {device_count: {CPU: 2}}
devices: {n_towers: 2}
YAML
"$CTOWER" train job.yaml --quiet >/dev/null 2>&1 || fail "training without a limit failed"

# the least address space (KiB, in 50 MiB steps) the command starts in
start=$((256 * 1024))
while [ "$start" -lt $((8 * 1024 * 1024)) ] &&
  ! (ulimit -v "$start" && "$CTOWER" --version) >/dev/null 2>&1; do
  start=$((start + 50 * 1024))
done

# limited KIB COMMAND...: runs ctower under the limit; sets rc, out and err
limited() {
  local kib=$1
  shift
  (ulimit -v "$kib" && exec "$CTOWER" "$@") >"$WORK/stdout" 2>"$WORK/stderr"
  rc=$?
  out=$(cat "$WORK/stdout")
  err=$(cat "$WORK/stderr")
}

crashes=0 clean=0 successes=0
for step in $(seq 0 14); do
  kib=$((start + step * 50 * 1024))
  for command in "train job.yaml --quiet train.checkpoint=limited.safetensors" \
    "eval job.yaml"; do
    # shellcheck disable=SC2086
    limited "$kib" $command
    if [ "$rc" -eq 0 ]; then
      successes=$((successes + 1))
    elif [ "$rc" -eq 1 ] && [ "$(grep -c '^ctower: error: ' <<<"$err")" -eq 1 ] &&
      grep -q 'memory\|threads' <<<"$err"; then
      clean=$((clean + 1))
    else
      crashes=$((crashes + 1))
      fail "ctower ${command%% *} under ulimit -v $kib: exit $rc: $(tail -3 <<<"$err")"
    fi
  done
done
[ "$crashes" -eq 0 ] &&
  pass "from $((start / 1024)) MiB up: $clean clean out-of-memory errors, $successes successes"
[ "$successes" -gt 0 ] || fail "no run succeeded up to $(((start / 1024) + 700)) MiB"
finish
