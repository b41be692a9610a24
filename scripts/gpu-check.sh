#!/usr/bin/env bash
# The GPU machine's check, in one command of at most 9 minutes: builds
# nothing, runs the bundle scripts/gpu-bundle.sh made (.gpu-bundle/, carried
# along), and writes each step's log straight into $OUT, in 9 files:
#   env.txt        (1) the machine: nvidia-smi, nvcc, the driver, where every
#                  libcuda/libcublas/libcudnn/libnccl and cudnn.h/nccl.h is,
#                  PyTorch's CUDA, cuDNN and NCCL, the bundle's MANIFEST,
#                  ldd of the binaries, and cuda_probe (driver, runtime, GPUs,
#                  a kernel of this build)
#   devices.txt    (2) ctower devices, alone and with 2 virtual GPUs
#   gpu-tests.txt  (3) test_gpu under CTOWER_EXPECT_GPU=1; if it fails, once
#                  more with CTOWER_GPU_SYNC=1 and NCCL_DEBUG=INFO
#   main-job.txt   (4) the main job on the GPU, all 10 epochs, and its eval
#   staging.txt    (4b) the main job's model from the dataset's files, each
#                  step copying the next one's batch onto the GPU ahead
#                  (traced: how much of those copies ran under computing,
#                  scripts/trace-overlap.py), against synthetic images
#   towers.txt     (5) GPU + CPU with split: auto; 2 virtual GPUs with NCCL and
#                  with ring, --compare-single; per_process_gpu_memory_fraction
#                  0.3 and allow_growth, with the process's GPU memory as the
#                  driver reports it; two processes at fraction 0.4 both
#                  train and a third fails at its start
#   sanitizer.txt  (6) compute-sanitizer memcheck over a few training steps
#   bench.txt      (7) bench/gpu_bench.py: ctower against PyTorch on this GPU
#   summary.txt    every step's exit status, time, and whether it timed out
# Every step has its own time limit, cut further to what is left of the
# whole run's (GPU_CHECK_SECONDS, default 530); a failed or timed-out step
# is written down and the next one runs. No checkpoint or other large file
# goes to $OUT. Without a GPU (cuda_probe says so) the steps that need one
# say so and take no time.
#
# Here, before a GPU machine's run: scripts/gpu-bundle.sh (from the commit
# to check), then check what travels stays under 64 MiB:
#   echo $(( $(git ls-files -co --exclude-standard | xargs du -cb | tail -1 | cut -f1)
#            + $(du -sb .gpu-bundle | cut -f1) ))
# The run call (the device tool's `run`):
#   command:   bash scripts/gpu-check.sh
#   carry:     [".gpu-bundle"]
#   timeout_s: 600
# Its output_tail ends with summary.txt; the 9 files come back from $OUT.
# The fallback, when a bundle made here does not run there: scripts/gpu-kit.sh
# here, then the same call with carry [".gpu-kit"] instead: it builds there
# first (several minutes, which the later steps then lack; the build's log
# goes to env.txt).
#
# Rehearsal on a machine without a GPU: `OUT=/tmp/gpu-check
# scripts/gpu-check.sh` runs every step from the bundle, those needing a GPU
# saying it is missing (half a minute); `scripts/gpu-check.sh --emulated
# BUILD` runs the steps on the GPU emulator's binaries of the build folder
# BUILD (ctower_emulated, test_gpu_emulated, cuda_probe), cut to a few
# steps of small models and one GPU test (two minutes).
set -u
cd "$(dirname "$0")/.."
repo=$PWD
self=$repo/scripts/gpu-check.sh

# ---- the steps that run as commands of their own (under `timeout`) -----------
if [ "${1:-}" = "--step" ]; then
  shift
  step_name=$1
  shift
else
  step_name=
fi

# the main job's model on synthetic images: fast to start, no dataset read
# (on the emulator, whose kernels run on the host, the mlp model instead)
synthetic="dataset.name=synthetic dataset.image_shape=[28,28,1] dataset.num_classes=10 ${SMALL_MODEL:-}"

# The process's GPU memory as the driver reports it, twice a second while
# `pid` runs (nvidia-smi's compute apps; none listed where the driver does
# not see processes, as in some virtual machines).
watch_memory() {
  local pid=$1 peak=0 used
  while kill -0 "$pid" 2>/dev/null; do
    used=$(nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits 2>/dev/null |
           awk -F', ' -v p="$pid" '$1 == p {print $2}')
    [ -n "$used" ] && [ "$used" -gt "$peak" ] && peak=$used
    sleep 0.5
  done
  echo "peak GPU memory of process $pid as nvidia-smi reports it: ${peak} MiB (0: not listed)"
}

step_towers() {
  local steps=$BENCH_STEPS
  echo "--- GPU and CPU towers, split: auto (the GPU helped by the CPU)"
  timeout -k 5 60 $CTOWER bench examples/fmnist_cnn.yaml $synthetic devices.n_towers=0 \
    'devices.towers=[/gpu:0,/cpu:0]' devices.split=auto dataset.batch_size=512 --steps "$steps" --warmup 5 --compare-single
  echo "exit $?"
  for reduce in nccl ring; do
    echo "--- 2 virtual GPUs, all_reduce: $reduce"
    timeout -k 5 60 $CTOWER bench examples/fmnist_cnn.yaml $synthetic \
      'session.gpu_options.virtual_devices=[8192,8192]' devices.n_towers=2 \
      devices.all_reduce=$reduce --steps "$steps" --warmup 5 --compare-single
    echo "exit $?"
  done
  echo "--- per_process_gpu_memory_fraction: 0.3, then allow_growth"
  local total
  total=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits 2>/dev/null | head -1)
  echo "the GPU's memory: ${total:-?} MiB; 0.3 of it: $(( ${total:-0} * 3 / 10 )) MiB"
  for option in session.gpu_options.per_process_gpu_memory_fraction=0.3 \
                session.gpu_options.allow_growth=true; do
    echo "--- $option"
    $CTOWER bench examples/fmnist_cnn.yaml $synthetic devices.n_towers=0 devices.towers=[/gpu:0] \
      "$option" --steps $((steps * 20)) --warmup 5 &
    local pid=$!
    watch_memory "$pid"
    wait "$pid"
    echo "exit $?"
  done
  echo "--- two processes at fraction 0.4 train together; a third fails at its start"
  local pids=() k
  for k in a b; do # they train until the third has tried (their lines written as they come)
    stdbuf -oL -eL $CTOWER bench examples/fmnist_cnn.yaml $synthetic devices.n_towers=0 devices.towers=[/gpu:0] \
      session.gpu_options.per_process_gpu_memory_fraction=0.4 --steps 1000000 --warmup 5 \
      >"$WORK/fraction-$k.txt" 2>&1 &
    pids+=($!)
  done
  local waited=0
  until { grep -qs "images/sec" "$WORK/fraction-a.txt" && grep -qs "images/sec" "$WORK/fraction-b.txt"; } ||
        [ $waited -ge 60 ]; do
    sleep 1
    waited=$((waited + 1))
  done
  echo "both training after ${waited}s (60: gave up waiting)"
  nvidia-smi --query-compute-apps=pid,used_memory --format=csv 2>&1
  timeout -k 5 30 $CTOWER bench examples/fmnist_cnn.yaml $synthetic devices.n_towers=0 devices.towers=[/gpu:0] \
    session.gpu_options.per_process_gpu_memory_fraction=0.4 --steps 5 --warmup 1
  echo "the third: exit $? (1 and a message naming per_process_gpu_memory_fraction expected)"
  for k in 0 1; do
    if kill -0 "${pids[$k]}" 2>/dev/null; then
      kill -TERM "${pids[$k]}"
      echo "process $((k + 1)): still training, stopped now"
    else
      echo "process $((k + 1)): had ended"
    fi
    wait "${pids[$k]}"
    echo "process $((k + 1)): exit $?"
  done
  for k in a b; do
    echo "--- process $k, its first and last lines:"
    head -3 "$WORK/fraction-$k.txt"
    echo "..."
    tail -3 "$WORK/fraction-$k.txt"
  done
}

# (1) what the machine has, for reading after the run
step_machine() {
  echo "--- $(date -u)  $(uname -a)"
  echo "cores: $(nproc)"; free -g | head -2; df -h "$WORK" | tail -1
  echo "--- nvidia-smi"
  nvidia-smi 2>&1
  nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used,compute_mode,clocks.sm,clocks.max.sm \
    --format=csv 2>&1
  echo "--- nvcc"; nvcc --version 2>&1 | tail -2
  echo "--- compute-sanitizer: $(command -v compute-sanitizer || echo none)"
  echo "--- the CUDA libraries and headers on this machine"
  ls -d /usr/local/cuda* /usr/local/nvidia 2>&1
  ldconfig -p 2>/dev/null | grep -E 'libcuda\.|libcudnn\.|libnccl\.|libcublas\.|libcublasLt\.'
  local places=() place
  for place in /usr /opt /lib /lib64 /usr/local/nvidia /root /home; do
    [ -d "$place" ] && places+=("$place")
  done
  timeout 30 find "${places[@]}" \( -name 'libcuda.so*' -o -name 'libcudnn.so*' -o -name 'libnccl.so*' \
    -o -name 'libcublas.so*' -o -name 'cudnn.h' -o -name 'nccl.h' -o -name 'cudnn_version.h' \) \
    -print 2>/dev/null | sort -u
  echo "--- python3: $(command -v python3)"
  timeout 60 python3 - <<'PY' 2>&1
import os
try:
    import nvidia
    for path in nvidia.__path__:
        print("nvidia wheels:", path, sorted(os.listdir(path)))
except Exception as e:
    print("no nvidia wheels:", e)
import torch
print("torch", torch.__version__, "CUDA", torch.version.cuda, "cuDNN", torch.backends.cudnn.version(),
      "NCCL", torch.cuda.nccl.version() if torch.cuda.is_available() else None,
      "GPU", torch.cuda.get_device_name(0) if torch.cuda.is_available() else None)
PY
  echo "--- the bundle"
  [ -n "$BUNDLE" ] && cat "$BUNDLE/MANIFEST"
  local binary
  for binary in "$CTOWER_BINARY" "$BUNDLE/libexec/test_gpu" "$BUNDLE/libexec/cuda_probe"; do
    [ -x "$binary" ] || continue
    echo "--- ldd $binary"
    LD_LIBRARY_PATH=$LIBS ldd "$binary" 2>&1
  done
}

step_main_job() {
  $CTOWER train examples/fmnist_cnn.yaml dataset.path="$DATASET" train.epochs="$EPOCHS" \
    train.max_steps="$MAX_STEPS" train.checkpoint="$WORK/model.safetensors" ${SMALL_DATA:-} --quiet
  local rc=$?
  echo "exit $rc"
  [ $rc -eq 0 ] || return $rc
  echo "--- eval of the checkpoint"
  $CTOWER eval examples/fmnist_cnn.yaml dataset.path="$DATASET" \
    train.checkpoint="$WORK/model.safetensors" ${SMALL_DATA:-}
}

step_staging() {
  local steps=$BENCH_STEPS
  echo "--- from the dataset's files, traced: each step copies the next one's batch ahead"
  $CTOWER bench examples/fmnist_cnn.yaml dataset.path="$DATASET" ${SMALL_DATA:-} ${SMALL_MODEL:-} \
    devices.n_towers=0 devices.towers=[/gpu:0] --steps "$steps" --warmup 5 \
    --trace "$WORK/staged.json" | tee "$WORK/files.txt"
  echo "exit ${PIPESTATUS[0]}"
  python3 "$repo/scripts/trace-overlap.py" "$WORK/staged.json"
  echo "--- synthetic images"
  $CTOWER bench examples/fmnist_cnn.yaml $synthetic devices.n_towers=0 devices.towers=[/gpu:0] \
    --steps "$steps" --warmup 5 | tee "$WORK/synthetic.txt"
  echo "exit ${PIPESTATUS[0]}"
  local files synthetic
  files=$(grep -o '[0-9.]* images/sec, ' "$WORK/files.txt" | tail -1 | cut -d' ' -f1)
  synthetic=$(grep -o '[0-9.]* images/sec, ' "$WORK/synthetic.txt" | tail -1 | cut -d' ' -f1)
  echo "files / synthetic: ${files:-?} / ${synthetic:-?} images/sec" \
    "= $(python3 -c "print('%.3f' % ($files / $synthetic))" 2>/dev/null || echo '?')"
}

step_sanitizer() {
  command -v compute-sanitizer >/dev/null || { echo "no compute-sanitizer on this machine"; return 1; }
  # the binary itself (not its wrapper), with its libraries
  LD_LIBRARY_PATH=$LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} compute-sanitizer --tool memcheck \
    --print-limit 20 --error-exitcode 9 "$CTOWER_BINARY" bench examples/fmnist_cnn.yaml $synthetic \
    devices.n_towers=0 devices.towers=[/gpu:0] dataset.batch_size=32 --steps "$SANITIZER_STEPS" --warmup 1
}

# The fallback to the bundle: unpacks .gpu-kit's packages, builds ctower,
# test_gpu and cuda_probe against them, and lays them out as the bundle
# would be, in $BUNDLE (lib/ then links to the kit's libraries).
step_build_with_kit() {
  local root=$WORK/kit-root build=$repo/build-gpu
  mkdir -p "$root"
  for deb in "$repo"/.gpu-kit/debs/*.deb; do
    if command -v dpkg-deb >/dev/null; then
      dpkg-deb -x "$deb" "$root"
    else
      (tmp=$(mktemp -d) && cd "$tmp" && ar x "$deb" && tar -xf data.tar.* -C "$root" && rm -rf "$tmp")
    fi
  done
  local lib=$root/usr/lib/x86_64-linux-gnu
  export PATH=$root/usr/bin:$PATH LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export PKG_CONFIG_LIBDIR=$lib/pkgconfig:$root/usr/share/pkgconfig PKG_CONFIG_SYSROOT_DIR=$root
  export CMAKE_PREFIX_PATH=$root/usr LIBRARY_PATH=$lib${LIBRARY_PATH:+:$LIBRARY_PATH}
  # jconfig.h and the like sit in the multiarch folder, which only the
  # system's own /usr/include gets searched for
  export CPATH=$root/usr/include/x86_64-linux-gnu:$root/usr/include${CPATH:+:$CPATH}
  local generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  cmake -S "$repo" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DCTOWER_CUDA=on \
    -DCTOWER_MPI=off -DCMAKE_CUDA_ARCHITECTURES=90 -DCTOWER_MARCH=x86-64-v3 -DCTOWER_WERROR=OFF \
    -DOpenCL_INCLUDE_DIR="$root/usr/include" -DOpenCL_LIBRARY="$lib/libOpenCL.so.1" || return 1
  cmake --build "$build" -j "$(nproc)" --target ctower test_gpu cuda_probe || return 1
  mkdir -p "$BUNDLE/bin" "$BUNDLE/libexec"
  ln -sfn "$lib" "$BUNDLE/lib"
  ln -sfn "$repo/.gpu-kit/fashion-mnist" "$BUNDLE/fashion-mnist"
  echo "built here with .gpu-kit" >"$BUNDLE/MANIFEST"
  local name
  for name in ctower test_gpu cuda_probe; do
    case $name in ctower) cp "$build/ctower" "$BUNDLE/libexec/" ;;
                  *) cp "$build/tests/$name" "$BUNDLE/libexec/" ;; esac
    printf '#!/bin/sh\nhere=$(dirname "$(readlink -f "$0")")/..\nLD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$here/libexec/%s" "$@"\n' \
      "$name" >"$BUNDLE/bin/$name"
    chmod +x "$BUNDLE/bin/$name"
  done
}

if [ -n "$step_name" ]; then
  "step_$step_name"
  exit $?
fi

# ---- the run ----------------------------------------------------------------
out=${OUT:-$repo/gpu-check-out}
mkdir -p "$out"
start=$(date +%s)
deadline=$((start + ${GPU_CHECK_SECONDS:-530}))
summary=$out/summary.txt
: >"$summary"
export WORK=${TMPDIR:-/tmp}/ctower-gpu-check
rm -rf "$WORK"
mkdir -p "$WORK"

emulated=
if [ "${1:-}" = "--emulated" ]; then
  emulated=$(cd "${2:?usage: gpu-check.sh --emulated BUILD_DIR}" && pwd)
fi

# step NAME LIMIT LOG COMMAND...: runs COMMAND under `timeout`, its output
# appended to LOG, and writes a line of the summary. Returns its status.
step() {
  local name=$1 limit=$2 log=$3
  shift 3
  local now left
  now=$(date +%s)
  left=$((deadline - now))
  if [ $left -lt 10 ]; then
    echo "=== $name: skipped, the run's time is up" >>"$log"
    printf '%-34s skipped: the run'"'"'s time is up\n' "$name" >>"$summary"
    return 124
  fi
  [ "$limit" -gt $((left - 5)) ] && limit=$((left - 5))
  echo "=== $name (at most ${limit}s): $*" >>"$log"
  # timeout leads a process group of its own; what the command leaves
  # running in it (a ctower that finishes its step after the signal) gets
  # 10 s, then is killed, so that no step runs into the next
  timeout -k 5 "$limit" "$@" >>"$log" 2>&1 &
  local group=$!
  wait $group
  local rc=$? waited=0
  while kill -0 -- -$group 2>/dev/null && [ $waited -lt 10 ]; do
    sleep 1
    waited=$((waited + 1))
  done
  kill -KILL -- -$group 2>/dev/null
  local took=$(($(date +%s) - now))
  local verdict=ok
  [ $rc -ne 0 ] && verdict=FAILED
  [ $rc -eq 124 ] || [ $rc -eq 137 ] && verdict="TIMED OUT after ${limit}s"
  [ $rc -eq 77 ] && verdict="skipped"
  echo "=== $name: exit $rc after ${took}s" >>"$log"
  printf '%-34s exit %3d  %4ds  %s\n' "$name" "$rc" "$took" "$verdict" >>"$summary"
  return $rc
}

# gpu_step NAME LIMIT LOG COMMAND...: a step that needs a GPU; on a
# machine without one it says so and runs nothing.
gpu_step() {
  if [ "$have_gpu" = 1 ]; then
    step "$@"
    return
  fi
  echo "=== $1: no GPU (cuda_probe exit $probe_rc): not run" >>"$3"
  printf '%-34s not run: no GPU\n' "$1" >>"$summary"
}

for log in env devices gpu-tests main-job staging towers sanitizer bench; do
  : >"$out/$log.txt"
done
env_log=$out/env.txt
# ---- the bundle ----
if [ -n "$emulated" ]; then
  CTOWER_BINARY=$emulated/tests/gpu/emulator/ctower_emulated
  CTOWER=$CTOWER_BINARY
  TEST_GPU=$emulated/tests/gpu/emulator/test_gpu_emulated
  PROBE=$emulated/tests/cuda_probe
  LIBS=
  BUNDLE=
  DATASET=/usr/share/datasets/fashion-mnist
  # one emulated GPU, large enough to split into two of 8 GiB (its memory
  # is taken only where it is used)
  export EMU_GPUS=1 EMU_GPU_MB=20000
  # the emulator runs kernels on the host: of the GPU tests, the first
  export CTOWER_TEST_FILTER=test_placement_prefers_the_gpu
  echo "emulated: the binaries of $emulated, on the GPU emulator" >>"$env_log"
else
  BUNDLE=$WORK/ctower-gpu
  {
    echo "=== unpacking .gpu-bundle/bundle.tar.xz into $WORK"
    if ! tar -C "$WORK" -xJf .gpu-bundle/bundle.tar.xz 2>&1; then
      echo "tar -xJ failed; with python3's tarfile instead"
      python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
        .gpu-bundle/bundle.tar.xz "$WORK" 2>&1
    fi
  } >>"$env_log"
  CTOWER=$BUNDLE/bin/ctower
  CTOWER_BINARY=$BUNDLE/libexec/ctower
  TEST_GPU=$BUNDLE/bin/test_gpu
  PROBE=$BUNDLE/bin/cuda_probe
  LIBS=$BUNDLE/lib
  DATASET=$BUNDLE/fashion-mnist
  if [ ! -f .gpu-bundle/bundle.tar.xz ] && [ -d .gpu-kit/debs ]; then
    # the fallback: the kit's packages, and a build here
    BUNDLE=$WORK/ctower-gpu
    step "build with .gpu-kit" 420 "$env_log" bash "$self" --step build_with_kit
  fi
  if [ ! -x "$CTOWER_BINARY" ]; then
    echo "no bundle: run scripts/gpu-bundle.sh here first, and carry .gpu-bundle" | tee -a "$summary"
    exit 1
  fi
fi
EPOCHS=10 MAX_STEPS=0 BENCH_STEPS=50 SANITIZER_STEPS=3 SMALL_MODEL= SMALL_DATA=
BENCH_ARGS="--repeats 1 --steps 30 --warmup 5 --timeout 60"
if [ -n "$emulated" ]; then
  EPOCHS=1 MAX_STEPS=4 BENCH_STEPS=3 SANITIZER_STEPS=1 SMALL_MODEL=model.name=mlp
  BENCH_ARGS="--models fmnist_cnn --batches 16 --precisions fp32 --repeats 1 --steps 2 --warmup 1"
  SMALL_DATA="dataset.name=synthetic dataset.image_shape=[28,28,1] dataset.num_classes=10"
  SMALL_DATA+=" dataset.train_size=512 dataset.test_size=128"
fi
export CTOWER CTOWER_BINARY TEST_GPU PROBE BUNDLE LIBS DATASET EPOCHS MAX_STEPS BENCH_STEPS \
  SANITIZER_STEPS SMALL_MODEL SMALL_DATA

# ---- (1) the machine ----
step "env: the machine" 60 "$env_log" bash "$self" --step machine
step "env: cuda_probe" 30 "$env_log" "$PROBE"
probe_rc=$?
have_gpu=0
[ $probe_rc -eq 0 ] && have_gpu=1
[ -n "$emulated" ] && have_gpu=1

# ---- (2) ctower devices ----
devices_log=$out/devices.txt
step "devices" 60 "$devices_log" "$CTOWER" devices
# ctower looks for cuDNN and NCCL in PyTorch's wheels itself; should it miss
# them, they are named for the later steps
if grep -q "was not found" "$devices_log" && [ -z "${CTOWER_CUDA_LIBRARY_PATH:-}" ]; then
  wheels=$(python3 -c 'import glob, nvidia; print(":".join(sorted(set(p for d in nvidia.__path__ for p in glob.glob(d + "/*/lib")))))' 2>/dev/null)
  if [ -n "$wheels" ]; then
    export CTOWER_CUDA_LIBRARY_PATH=$wheels
    echo "=== a library was not found: CTOWER_CUDA_LIBRARY_PATH=$wheels from now on" >>"$devices_log"
    step "devices (CTOWER_CUDA_LIBRARY_PATH)" 60 "$devices_log" "$CTOWER" devices
  fi
fi
step "devices: 2 virtual GPUs" 60 "$devices_log" "$CTOWER" devices examples/mlp.yaml \
  'session.gpu_options.virtual_devices=[4096,4096]'

# ---- (3) the GPU tests ----
tests_log=$out/gpu-tests.txt
(cd "$WORK" && step "test_gpu" 180 "$tests_log" env CTOWER_EXPECT_GPU=1 "$TEST_GPU")
if [ $? -ne 0 ] && [ $have_gpu = 1 ]; then
  (cd "$WORK" && step "test_gpu (CTOWER_GPU_SYNC=1, NCCL_DEBUG=INFO)" 120 "$tests_log" \
     env CTOWER_EXPECT_GPU=1 CTOWER_GPU_SYNC=1 NCCL_DEBUG=INFO "$TEST_GPU")
fi

# ---- (4) the main job ----
gpu_step "main job ($EPOCHS epochs)" 180 "$out/main-job.txt" bash "$self" --step main_job

# ---- (4b) inputs staged one step ahead ----
gpu_step "staging: files against synthetic" 90 "$out/staging.txt" bash "$self" --step staging

# ---- (5) towers and memory ----
gpu_step "towers and memory" 240 "$out/towers.txt" bash "$self" --step towers

# ---- (6) compute-sanitizer ----
gpu_step "compute-sanitizer memcheck" 120 "$out/sanitizer.txt" bash "$self" --step sanitizer

# ---- (7) the benchmark against PyTorch ----
gpu_step "bench/gpu_bench.py" 240 "$out/bench.txt" env PYTHONUNBUFFERED=1 python3 \
  bench/gpu_bench.py --ctower "$CTOWER" $BENCH_ARGS

# ---- what comes back ----
for f in "$out"/*; do # no log past 12 MiB: its head and tail
  if [ "$(stat -c %s "$f")" -gt $((12 << 20)) ]; then
    { head -c $((4 << 20)) "$f"; echo; echo "[... cut ...]"; tail -c $((4 << 20)) "$f"; } >"$f.cut"
    mv "$f.cut" "$f"
  fi
done
echo "whole run: $(($(date +%s) - start))s; files: $(cd "$out" && ls | tr '\n' ' ')" >>"$summary"
cat "$summary"
