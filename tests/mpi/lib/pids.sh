# Shared by the tests that stop or signal one rank (sourced, not run, after
# common.sh, which sets CTOWER and WORK, and with MPIEXEC set):
#   rank_pid R CONFIG    the pid of rank R's ctower training CONFIG in this
#                        test's folder (other tests' jobs run beside it),
#                        once it runs
#   wait_for_file F      until F exists and is not empty (60 s at most)
#   stop_rank NP R CONFIG ARGS...
#                        ctower train CONFIG ARGS on NP ranks (its output in
#                        stall.out), rank R stopped (SIGSTOP) once
#                        model.safetensors is written; waits for the job and
#                        sets rc and seconds (from the stop to its end)
rank_pid() {
  local pid
  for _ in $(seq 100); do
    for pid in $(pgrep -f "$CTOWER train $2"); do
      [ "$(readlink /proc/"$pid"/cwd)" = "$WORK" ] || continue
      if tr '\0' '\n' </proc/"$pid"/environ 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1"; then
        echo "$pid"; return 0
      fi
    done
    sleep 0.1
  done
  return 1
}

wait_for_file() {
  for _ in $(seq 600); do [ -s "$1" ] && return 0; sleep 0.1; done
  return 1
}

stop_rank() {
  local np=$1 r=$2 config=$3 stopped="" job start
  shift 3
  timeout -k 10 120 "$MPIEXEC" --allow-run-as-root --oversubscribe -np "$np" "$CTOWER" train \
    "$config" "$@" >stall.out 2>&1 &
  job=$!
  wait_for_file model.safetensors && stopped=$(rank_pid "$r" "$config") && kill -STOP "$stopped"
  start=$SECONDS
  wait $job
  rc=$?
  seconds=$((SECONDS - start))
  [ -n "$stopped" ] && kill -KILL "$stopped" 2>/dev/null
}
