#!/usr/bin/env bash
# `ctower` usage and config errors: --help and --version succeed; every bad
# input exits 2 with one line on stderr naming the file:line, key or option
# at fault (and, for a value out of range, the range), and never dumps core.
# Usage: bash usage_errors.sh /path/to/ctower
source "$(dirname "$0")/lib/common.sh" usage "${1:-}"

# expect_ok NAME PATTERN ARGS...: exit 0 and stdout matching PATTERN (grep -E).
expect_ok() {
  local name=$1 pattern=$2
  shift 2
  run "$@"
  if [ "$rc" -ne 0 ]; then
    fail "$name: 'ctower $*' exited $rc, expected 0 (stderr: $err)"
  elif ! grep -Eq -- "$pattern" <<<"$out"; then
    fail "$name: stdout of 'ctower $*' does not match /$pattern/"
  else
    echo "ok: $name"
  fi
}

# expect_usage NAME NEEDLE ARGS...: exit 2, one stderr line starting with
# "ctower: error: " that contains NEEDLE (a fixed string).
expect_usage() {
  local name=$1 needle=$2
  shift 2
  run "$@"
  local lines
  lines=$(printf '%s\n' "$err" | grep -c '')
  if [ "$rc" -ge 128 ]; then
    fail "$name: 'ctower $*' died with signal $((rc - 128))"
  elif [ "$rc" -ne 2 ]; then
    fail "$name: 'ctower $*' exited $rc, expected 2 (stderr: $err)"
  elif [ "$lines" -ne 1 ]; then
    fail "$name: 'ctower $*' wrote $lines lines to stderr, expected one: $err"
  elif [[ "$err" != "ctower: error: "* ]]; then
    fail "$name: stderr does not start with 'ctower: error: ': $err"
  elif [[ "$err" != *"$needle"* ]]; then
    fail "$name: stderr lacks '$needle': $err"
  else
    echo "ok: $name"
  fi
}

# --- what succeeds -----------------------------------------------------------
expect_ok "--help lists the commands" 'ctower train CONFIG' --help
expect_ok "--help lists eval" 'ctower eval' --help
expect_ok "--help lists devices" 'ctower devices' --help
expect_ok "--help lists bench" 'ctower bench' --help
expect_ok "--help gives the exit codes" '2 bad usage or bad config' --help

# Every command of the command table (the list the unknown-command message
# gives) has its line in the overview of --help and its own --help, and the
# overview names no command the table lacks.
run frobnicate
table=$(sed -n 's/.*(commands: \([a-z, ]*\);.*/\1/p' <<<"$err" | tr -d ' ' | tr ',' '\n' | sort)
run --help
overview=$(sed -n 's/^  ctower \([a-z]\+\) .*/\1/p' <<<"$out" | sort -u)
if [ -n "$table" ] && [ "$table" = "$overview" ]; then
  echo "ok: the command table and --help name the same commands: $(echo $table)"
else
  fail "the command table ($(echo $table)) and the overview of --help ($(echo $overview)) differ"
fi
for command in $table; do
  expect_ok "$command --help" "Usage: ctower $command" "$command" --help
done
expect_ok "--version" '^ctower [0-9]+\.[0-9]+\.[0-9]+$' --version
expect_ok "train --help" 'Usage: ctower train CONFIG.yaml' train --help
expect_ok "train --help names --memory-stats" '--memory-stats' train --help
expect_ok "eval --help" 'Usage: ctower eval CONFIG.yaml.*--checkpoint' eval --help
expect_ok "devices --help" 'Usage: ctower devices' devices --help
expect_ok "help train" 'Usage: ctower train' help train
expect_ok "devices lists the CPU" '^/job:localhost/replica:0/task:0/device:CPU:0 .*kind: CPU' devices

printf 'train:\n  epochs: 1\n' >good.yaml
expect_ok "devices with a config" 'device:CPU:0' devices good.yaml session.memory_limit_mb.CPU=256

# --- bad usage ---------------------------------------------------------------
expect_usage "no arguments" "no command given" 
expect_usage "unknown command" "unknown command 'trian'; did you mean 'train'?" trian good.yaml
expect_usage "unknown top-level option" "'--verbose'" --verbose
expect_usage "missing CONFIG" "needs a CONFIG.yaml argument" train
expect_usage "missing CONFIG before overrides" "train.epochs=1" train train.epochs=1
expect_usage "unknown option" "unknown option '--memroy-stats'" train good.yaml --memroy-stats
expect_usage "unknown option suggests" "did you mean '--memory-stats'?" train good.yaml --memroy-stats
expect_usage "eval option for train" "'--checkpoint'" train good.yaml --checkpoint x
expect_usage "--checkpoint without a file" "'--checkpoint'" eval good.yaml --checkpoint
expect_usage "stray argument" "'extra'" train good.yaml extra
expect_usage "bench without a config" "needs a CONFIG.yaml argument" bench
expect_usage "bench --steps 0" "--steps needs a whole number >= 1, got '0'" bench good.yaml --steps 0
expect_usage "bench --warmup x" "--warmup needs a whole number >= 0, got 'x'" bench good.yaml --warmup x

# --- bad config files ----------------------------------------------------------
expect_usage "missing config file" "config file 'missing.yaml' not found" train missing.yaml
expect_usage "missing config file (eval)" "'missing.yaml'" eval missing.yaml
expect_usage "missing config file (devices)" "'missing.yaml'" devices missing.yaml

printf 'train:\n  epochs: 1\n  optimizer: {name: sgd\n' >malformed.yaml
expect_usage "malformed YAML" "malformed.yaml:4:" train malformed.yaml
expect_usage "malformed YAML says so" "malformed YAML" train malformed.yaml

printf 'model:\n  name: mlp\ntrain:\n  optimzer:\n    name: sgd\n' >unknown_key.yaml
expect_usage "unknown key" "unknown_key.yaml:4: unknown key 'train.optimzer'" train unknown_key.yaml
expect_usage "unknown key suggests" "did you mean 'train.optimizer'?" train unknown_key.yaml

printf 'train:\n  epochs: 1\n\n  seed: 1\ndataset:\n  batch_size: many\n' >wrong_type.yaml
expect_usage "wrong type" "wrong_type.yaml:6: 'dataset.batch_size' must be an integer, got 'many'" \
  train wrong_type.yaml

printf 'train:\n  optimizer:\n    name: adamw\n' >bad_value.yaml
expect_usage "value not allowed" "bad_value.yaml:3: 'train.optimizer.name' must be one of" \
  eval bad_value.yaml

printf -- '- train\n' >not_a_map.yaml
expect_usage "top level not a mapping" "not_a_map.yaml:1:" train not_a_map.yaml

# what the user typed is quoted in one line, whatever characters it holds
expect_usage "a newline in the config path" "config file 'no\\nsuch\\x01.yaml' not found" \
  train $'no\nsuch\x01.yaml'
expect_usage "a newline in an override" "override 'train.optimizer.name=ad\\nam'" \
  train good.yaml $'train.optimizer.name=ad\nam' --quiet

mkdir -p a_directory.yaml
expect_usage "config is a directory" "'a_directory.yaml' is a directory" train a_directory.yaml
# a FIFO would block the reader forever: refused at once (timeout: the test's own guard)
mkfifo a_fifo.yaml
timeout 10 "$CTOWER" train a_fifo.yaml >/dev/null 2>fifo.err
rc=$?
if [ "$rc" -eq 2 ] && grep -q "'a_fifo.yaml' is a FIFO, not a regular file" fifo.err; then
  pass "a FIFO as config is a clear error, at once"
else
  fail "FIFO config: rc $rc: $(cat fifo.err)"
fi

# --- bad overrides -------------------------------------------------------------
expect_usage "override of the wrong type" \
  "override 'train.epochs=ten': 'train.epochs' must be an integer, got 'ten'" \
  train good.yaml train.epochs=ten
expect_usage "override before the config file's options" "override 'train.epochs=ten'" \
  train --quiet good.yaml train.epochs=ten --memory-stats
expect_usage "override of an unknown key" "unknown key 'train.optimzer.name'" \
  train good.yaml train.optimzer.name=adam
expect_usage "override out of range" "'dataset.batch_size' must be >= 1" \
  train good.yaml dataset.batch_size=0
expect_usage "override with malformed YAML" "override 'devices.towers=[/cpu:0'" \
  train good.yaml 'devices.towers=[/cpu:0'
expect_usage "override of a map entry" "'session.device_count.CPU' must be >= 1" \
  devices good.yaml 'session.device_count={CPU: 0}'

# --- augmentation that can only wash images out or overflow to NaN: refused
# when the config is read, with the range, before a step runs -----------------
expect_usage "brightness 1e30" "'dataset.augment.brightness' must be in [0, 1], got '1e30'" \
  train good.yaml dataset.augment.brightness=1e30
expect_usage "brightness 1.5" "'dataset.augment.brightness' must be in [0, 1], got '1.5'" \
  train good.yaml dataset.augment.brightness=1.5
expect_usage "contrast up to 1e30" "'dataset.augment.contrast' must be in [0, 10], got '1e30'" \
  train good.yaml 'dataset.augment.contrast=[0.2, 1e30]'
expect_usage "contrast [2, 1]" "'dataset.augment.contrast' must not decrease, but 1 follows 2" \
  train good.yaml 'dataset.augment.contrast=[2, 1]'
expect_usage "a pad as wide as the crop" \
  "dataset.augment.pad must lie in [0, 24): a pad of 24 around 24x24 crops lets a crop hold padding alone" \
  train good.yaml dataset.augment.pad=24 'dataset.augment.crop=[24, 24]'

# --- plan --link-gbps: a finite bandwidth above 0, at most 8 of them -----------
for gbps in inf nan -1 0 1e400 10,inf; do
  expect_usage "--link-gbps $gbps" \
    "--link-gbps needs bandwidths in Gb/s in (0, 1000000], such as 10 or 10,100, got '$gbps'" \
    plan good.yaml --link-gbps "$gbps"
done
expect_usage "--link-gbps with 9 links" "--link-gbps takes at most 8 bandwidths" \
  plan good.yaml --link-gbps 1,2,3,4,5,6,7,8,9

# No core files, whatever ulimit said.
if compgen -G "core*" >/dev/null; then
  fail "a core file was written: $(ls core*)"
fi

finish
