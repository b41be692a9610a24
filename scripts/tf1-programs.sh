#!/usr/bin/env bash
# Runs every TensorFlow 1.x program (*.py) of a folder on ctower, with only
# its import lines changed (`import tensorflow as tf`, or
# `import tensorflow.compat.v1 as tf`, becomes `import ctower.compat.v1 as
# tf`; `from tensorflow.examples.tutorials.mnist import input_data` becomes
# ctower's input_data), and reports which ran to the end.
#
# Usage: scripts/tf1-programs.sh DIR [ARGS...]
#   ARGS are given to every program (e.g. --data_dir=/usr/share/datasets/fashion-mnist);
#   a file NAME.args beside NAME.py gives that program its own (one line).
# Environment: CTOWER_PYTHONPATH (default build/python), TIMEOUT seconds a
# program (default 600), PYTHON (default /usr/bin/python3).
# Exit status: 0 when every program ran, 1 when any failed, 2 on bad usage.
set -uo pipefail
[ $# -ge 1 ] && [ -d "$1" ] || { sed -n '2,13p' "$0"; exit 2; }
dir=$(realpath "$1")
shift
src=$(cd "$(dirname "$0")/.." && pwd)
pythonpath=$(realpath "${CTOWER_PYTHONPATH:-$src/build/python}")
python=${PYTHON:-/usr/bin/python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# FILE with its TensorFlow import lines made ctower's, on stdout
swap_imports() {
  sed -E -e 's/^([[:space:]]*)import tensorflow(\.compat\.v1)? as tf$/\1import ctower.compat.v1 as tf/' \
    -e 's/^([[:space:]]*)from tensorflow\.examples\.tutorials\.mnist import input_data$/\1from ctower.compat.v1.examples.tutorials.mnist import input_data/' \
    "$1"
}

ran=0 failed=0
for program in "$dir"/*.py; do
  [ -e "$program" ] || { echo "no .py in $dir" >&2; exit 2; }
  name=$(basename "$program")
  # the program and the folder's other modules (mnist.py), each swapped
  for module in "$dir"/*.py; do swap_imports "$module" >"$work/$(basename "$module")"; done
  args=("$@")
  [ -f "${program%.py}.args" ] && read -r -a args <"${program%.py}.args"
  start=$(date +%s.%N)
  (cd "$work" && PYTHONPATH="$pythonpath" timeout -k 10 "${TIMEOUT:-600}" "$python" "$name" \
    "${args[@]}") >"$work/$name.out" 2>&1
  rc=$?
  seconds=$(echo "$(date +%s.%N) - $start" | bc)
  if [ "$rc" -eq 0 ]; then
    ran=$((ran + 1))
    printf 'ran     %s (%.1f s): %s\n' "$name" "$seconds" "$(grep -v '^\s*$' "$work/$name.out" | tail -n 1)"
  else
    failed=$((failed + 1))
    printf 'FAILED  %s (exit %d, %.1f s): %s\n' "$name" "$rc" "$seconds" \
      "$(grep -v '^\s*$' "$work/$name.out" | tail -n 1)"
  fi
done
echo "$ran ran, $failed failed"
[ "$failed" -eq 0 ]
