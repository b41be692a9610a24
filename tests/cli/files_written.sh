#!/usr/bin/env bash
# Every file ctower writes touches nothing but itself: the trace (--trace),
# the checkpoint (train.checkpoint) and its lock, the calibration file
# (bench --calibrate) and TensorBoard's event files (train.log_dir).
#   - a FIFO, a folder or a device at the path (or a link to one) is
#     refused at once and left as it was, with one error naming the path and
#     what is there;
#   - a symbolic link or a FIFO planted at any name a temporary might take
#     ('<file>.part', '.<file>.tmp', ...) is neither written through nor
#     opened: the file is written, and nothing else in its folder changes;
#   - a path that is a symbolic link replaces the file the link leads to,
#     and the link stays.
# A writer added to ctower belongs in WRITERS below. Every run is under
# `timeout`, so that a hang fails the test instead of stalling it.
# Usage: bash files_written.sh /path/to/ctower
source "$(dirname "$0")/lib/common.sh" files_written "${1:-}"

cat >tiny.yaml <<'YAML'
model: {name: mlp}
dataset: {name: synthetic, image_shape: [8, 8, 1], num_classes: 10, train_size: 64,
          test_size: 16, batch_size: 16}
train: {epochs: 1, max_steps: 2, checkpoint: ""}
YAML

# WRITER: its ctower arguments, given the path it writes
WRITERS=(trace checkpoint calibration)
writer_args() { # WRITER PATH: sets args
  case $1 in
    trace) args=(train "$WORK/tiny.yaml" --quiet --trace "$2") ;;
    checkpoint) args=(train "$WORK/tiny.yaml" --quiet "train.checkpoint=$2") ;;
    calibration) args=(bench --calibrate --calibration "$2") ;;
    log_dir) args=(train "$WORK/tiny.yaml" --quiet "train.log_dir=$2") ;;
  esac
}
# what a good file of WRITER starts with
looks_written() { # WRITER FILE
  case $1 in
    trace) head -c 15 "$2" | grep -q '^{"traceEvents"' ;;
    checkpoint) [ "$(stat -c %s "$2")" -gt 8 ] ;;
    calibration) grep -q '"in_process"' "$2" ;;
  esac
}

# scene NAME: a fresh folder to cd into, with a file the runs must not touch
scene() {
  cd "$WORK" && rm -rf "$1" && mkdir "$1" && cd "$1" || exit 1
  echo victim >victim.txt
}
# every entry of the current folder (itself too when none is excluded, so
# that a file made and removed shows) but those named: kind, size, mode,
# time, link
snapshot() { # [EXCLUDED...]
  local args=() depth=$(($# > 0))
  for name in "$@"; do args+=(! -path "./$name"); done
  find . -mindepth "$depth" "${args[@]}" -printf '%p %y %s %m %T@ %l\n' | sort
}
run_writer() { # WRITER PATH: runs it under timeout; sets rc, out, err
  writer_args "$1" "$2"
  timeout 120 "$CTOWER" "${args[@]}" >"$WORK/stdout" 2>"$WORK/stderr"
  rc=$?
  out=$(cat "$WORK/stdout")
  err=$(cat "$WORK/stderr")
}
one_error() { # TEXT: stderr is one error line holding TEXT
  [ "$(grep -c '^ctower: error: ' <<<"$err")" -eq 1 ] && [[ "$err" == *"$1"* ]]
}

# --- a FIFO, a folder, a device, a link to a FIFO at the path: refused ------
for w in "${WRITERS[@]}"; do
  scene "special_$w"
  mkfifo fifo && mkdir folder && echo keep >folder/keep && ln -s fifo to_fifo
  targets=(fifo folder to_fifo)
  says=("'fifo' is a FIFO, not a regular file" "'folder' is a directory, not a regular file"
        "'fifo' is a FIFO, not a regular file")
  if [ "$(id -u)" -eq 0 ] && mknod dev_null c 1 3 2>/dev/null; then # as /dev/null is
    targets+=(dev_null)
    says+=("'dev_null' is a character device, not a regular file")
  fi
  before=$(snapshot)
  for i in "${!targets[@]}"; do
    run_writer "$w" "${targets[$i]}"
    if [ "$rc" -eq 2 ] && one_error "${says[$i]}" && [ "$(snapshot)" = "$before" ]; then
      pass "$w to ${targets[$i]}: refused untouched: ${err#ctower: error: }"
    else
      fail "$w to ${targets[$i]}: rc $rc, $err; the folder: $(diff <(echo "$before") <(snapshot))"
    fi
  done
done

# --- links and FIFOs planted at every name a temporary might take -----------
planted_names() { # FILE
  echo "$1.part" "$1.tmp" "$1.new" "$1~" ".$1.tmp" ".$1.part" ".$1.swp" "$1.partial"
}
for w in "${WRITERS[@]}"; do
  for kind in link fifo; do
    scene "planted_${kind}_$w"
    for name in $(planted_names out); do
      if [ "$kind" = link ]; then ln -s victim.txt "$name"; else mkfifo "$name"; fi
    done
    before=$(snapshot out)
    run_writer "$w" out
    if [ "$rc" -eq 0 ] && [ -f out ] && [ ! -L out ] && looks_written "$w" out &&
       [ "$(cat victim.txt)" = victim ] && [ "$(snapshot out)" = "$before" ]; then
      pass "$w with ${kind}s planted at $(planted_names out | wc -w) temporary names: only its file written"
    else
      fail "$w with planted ${kind}s: rc $rc, $err; victim.txt: $(cat victim.txt); the folder: $(diff <(echo "$before") <(snapshot out))"
    fi
  done
done

# --- the checkpoint's lock: a link or a FIFO there is refused ---------------
for kind in link fifo; do
  scene "lock_$kind"
  if [ "$kind" = link ]; then ln -s victim.txt ck.safetensors.lock; else mkfifo ck.safetensors.lock; fi
  before=$(snapshot)
  run_writer checkpoint ck.safetensors
  says="'ck.safetensors.lock' is a $([ "$kind" = link ] && echo 'symbolic link' || echo FIFO), not ctower's lock file; remove it"
  if [ "$rc" -eq 2 ] && one_error "$says" && [ "$(snapshot)" = "$before" ]; then
    pass "a $kind at the checkpoint's lock: refused untouched"
  else
    fail "a $kind at the checkpoint's lock: rc $rc, $err; victim.txt: $(cat victim.txt); the folder: $(diff <(echo "$before") <(snapshot))"
  fi
done

# --- a path that is a link: the file it leads to is replaced ----------------
for w in "${WRITERS[@]}"; do
  scene "link_$w"
  mkdir real && echo old >real/out && chmod 600 real/out && ln -s real/out out
  before=$(snapshot real real/out) # the folder whose file is replaced changes
  run_writer "$w" out
  if [ "$rc" -eq 0 ] && [ -L out ] && [ "$(readlink out)" = real/out ] && looks_written "$w" real/out &&
     [ "$(stat -c %a real/out)" = 600 ] && [ "$(snapshot real real/out)" = "$before" ] &&
     [ "$(ls -A real)" = out ]; then
    pass "$w to a link: the file it leads to written (its permissions kept), the link kept"
  else
    fail "$w to a link: rc $rc, $err; $(ls -la . real)"
  fi
done

# --- TensorBoard's event files: created new, never through what is there ----
scene log_dir_special
mkfifo fifo && echo text >file
before=$(snapshot)
for target in fifo file; do
  run_writer log_dir "$target"
  kind=$([ "$target" = fifo ] && echo "a FIFO" || echo "a regular file")
  if [ "$rc" -eq 2 ] && one_error "'$target': it is $kind, not a folder" && [ "$(snapshot)" = "$before" ]; then
    pass "train.log_dir $target: refused untouched: ${err#ctower: error: }"
  else
    fail "train.log_dir $target: rc $rc, $err"
  fi
done
# the event file is named by the second it is created: links and FIFOs at
# the names of the next minute
host=$(hostname)
for kind in link fifo; do
  scene "log_dir_planted_$kind"
  mkdir logs
  now=$(date +%s)
  for s in $(seq 0 60); do
    name=logs/events.out.tfevents.$(printf %010d $((now + s))).$host
    if [ "$kind" = link ]; then ln -s ../victim.txt "$name"; else mkfifo "$name"; fi
  done
  before=$(snapshot logs)
  run_writer log_dir logs
  made=$(find logs -type f)
  if [ "$rc" -eq 0 ] && [ "$(cat victim.txt)" = victim ] && [ -n "$made" ] &&
     [ "$(wc -l <<<"$made")" -eq 1 ] && [ "$(snapshot logs "$made")" = "$before" ]; then
    pass "train.log_dir with ${kind}s at the event files' names: one new event file, nothing else touched"
  else
    fail "train.log_dir with planted ${kind}s: rc $rc, $err; victim.txt: $(cat victim.txt); made: $made"
  fi
done

cd "$WORK" || exit 1
leftover=$(find . -name '*.tmp-*')
[ -z "$leftover" ] && pass "no temporary file is left anywhere" || fail "temporary files left: $leftover"
finish
