# Shared by the command-line tests (sourced, not run): a scratch folder that
# is removed on exit (ctower's cache, XDG_CACHE_HOME, inside it), no core
# dumps, and pass/fail bookkeeping.
#   source common.sh NAME CTOWER   sets CTOWER, WORK (the current folder) and failures
#   run ARGS...                    runs ctower; sets rc, out and err
#   expect_usage_error WHAT TEXT ARGS...
#                                  passes when ctower ARGS exits 2 with TEXT in its output
#   finish                         prints the verdict and exits 0 or 1
set -u

CTOWER=${2:?usage: $1.sh /path/to/ctower}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ctower_$1.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
cd "$WORK" || exit 1
ulimit -c 0
# what ctower caches (a plan's measurement of the machine) stays in WORK
export XDG_CACHE_HOME=$WORK/cache

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }

run() {
  "$CTOWER" "$@" >"$WORK/stdout" 2>"$WORK/stderr"
  rc=$?
  out=$(cat "$WORK/stdout")
  err=$(cat "$WORK/stderr")
}

expect_usage_error() {
  local what=$1 text=$2
  shift 2
  run "$@"
  if [ "$rc" -eq 2 ] && grep -qF -- "$text" "$WORK/stdout" "$WORK/stderr"; then
    pass "$what is a clear error"
  else
    fail "$what: rc $rc: $out $err"
  fi
}

finish() {
  if [ "$failures" -gt 0 ]; then
    echo "$failures check(s) failed"
    exit 1
  fi
  echo "all checks passed"
  exit 0
}
