#!/usr/bin/env bash
# The layering of docs/architecture.md holds (scripts/check-layers.py), and
# the check fails on a forbidden include or a circle between the files of a
# folder: planted in a copy of the tree, an include of a higher layer, one
# between sibling subfolders and a use that closes a circle in exec or in
# python/src (the Python extension's files) are each named with their file
# and line.
set -euo pipefail
root=${1:?usage: layering.sh REPOSITORY}
check() { /usr/bin/python3 "$root/scripts/check-layers.py" "$1"; }

check "$root"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
plant() { # FILE LINE: a copy of src, include and python/src with LINE appended to FILE
  rm -rf "$tmp/tree" && mkdir -p "$tmp/tree/python"
  cp -r "$root/src" "$root/include" "$tmp/tree/"
  cp -r "$root/python/src" "$tmp/tree/python/"
  echo "$2" >> "$tmp/tree/$1"
  if out=$(check "$tmp/tree"); then
    echo "FAIL: the check passed with '$2' planted in $1"; exit 1
  fi
  grep -q "^$1:[0-9]*: " <<<"$out" || { echo "FAIL: the check did not name $1: $out"; exit 1; }
  echo "planted in $1, the check said: $(head -n 1 <<<"$out")"
}
plant src/core/tensor.c '#include "trainer/training_graph.h"'
plant src/observe/observer.c '#include "trainer/train_run.h"'
plant src/device/device.c '#include "ctower/session.h"'
plant src/kernels/cpu/conv.c '#include "kernels/cuda/cuda_kernels.h"'
# session.c runs the executor: the executor may not call back into it
plant src/exec/executor.c 'int ct_executor_circle(ct_session *s) { return ct_session_run(s, 0, 0, 0, 0, 0, 0, 0, 0); }'
# session.c raises through errors.c: errors.c may not reach back into a type
plant python/src/errors.c 'PyObject *ct_py_errors_circle(void) { return (PyObject *)&ct_py_session_type; }'
echo "layering: ok"
