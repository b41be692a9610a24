# Shared by the tests under mpirun (sourced, not run): common.sh's
# bookkeeping, the launcher and a small config.
#   source lib/mpi.sh NAME CTOWER MPIEXEC   also sets MPIRUN (mpirun and its options)
#   small.yaml                          3 steps of the MLP on synthetic data
#   mpi ARGS...                         runs MPIRUN ARGS under `timeout 60`;
#                                       sets rc, out, err and seconds
source "$(dirname "${BASH_SOURCE[0]}")/../../cli/lib/common.sh" "$1" "${2:-}"
MPIRUN=("${3:?usage: $1.sh /path/to/ctower /path/to/mpiexec}" --allow-run-as-root --oversubscribe)

cat >small.yaml <<YAML
model:
  name: mlp
dataset:
  name: synthetic
  batch_size: 32
  train_size: 256
  test_size: 64
train:
  epochs: 1
  max_steps: 3
  checkpoint: ""
YAML

mpi() {
  local start=$SECONDS
  timeout -k 10 60 "${MPIRUN[@]}" "$@" >"$WORK/stdout" 2>"$WORK/stderr"
  rc=$?
  seconds=$((SECONDS - start))
  out=$(cat "$WORK/stdout")
  err=$(cat "$WORK/stderr")
}
