#!/usr/bin/env bash
# On a machine with a CUDA GPU and no package registry (the kit from
# scripts/gpu-kit.sh in .gpu-kit/): unpacks the kit's packages under
# .gpu-kit/root, builds ctower with CUDA, and runs, writing each log to
# $OUT (default ./gpu-check-out):
#   devices.txt   ctower devices, and with two virtual GPUs
#   gpu-tests.txt ctest -L gpu (every op against the CPU, training steps,
#                 towers on two virtual GPUs, memory limits)
#   unit.txt      the unit tests on this machine
#   main-job.txt  the main job, 2 epochs, on the GPU
#   bench.md      bench/gpu_bench.py (ctower against PyTorch on this GPU)
# Usage: scripts/gpu-check.sh [--quick]   (--quick: 1 benchmark repeat)
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-check-out}
mkdir -p "$out"
kit=$PWD/.gpu-kit
root=$kit/root
repeats=3
[ "${1:-}" = "--quick" ] && repeats=1

mkdir -p "$root"
for deb in "$kit"/debs/*.deb; do
  if command -v dpkg-deb >/dev/null; then
    dpkg-deb -x "$deb" "$root"
  else
    (tmp=$(mktemp -d) && cd "$tmp" && ar x "$deb" && tar -xf data.tar.* -C "$root" && rm -rf "$tmp")
  fi
done
lib=$root/usr/lib/x86_64-linux-gnu
export LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PKG_CONFIG_PATH=$lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$root
export CMAKE_PREFIX_PATH=$root/usr
export CPATH=$root/usr/include${CPATH:+:$CPATH}
export LIBRARY_PATH=$lib${LIBRARY_PATH:+:$LIBRARY_PATH}

{
  nvidia-smi
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DCTOWER_CUDA=on \
    -DOpenCL_INCLUDE_DIR="$root/usr/include" -DOpenCL_LIBRARY="$lib/libOpenCL.so.1"
  cmake --build build -j "$(nproc)"
} >"$out/build.txt" 2>&1 || { tail -40 "$out/build.txt"; exit 1; }

{
  build/ctower devices
  build/ctower devices examples/mlp.yaml 'session.gpu_options.virtual_devices=[4096, 4096]'
} >"$out/devices.txt" 2>&1
ctest --test-dir build -L gpu --output-on-failure -V >"$out/gpu-tests.txt" 2>&1
ctest --test-dir build -L unit --output-on-failure -j 8 >"$out/unit.txt" 2>&1
build/ctower train examples/fmnist_cnn.yaml train.epochs=2 dataset.path="$kit/fashion-mnist" \
  train.checkpoint="$out/model.safetensors" >"$out/main-job.txt" 2>&1
python3 bench/gpu_bench.py --repeats "$repeats" >"$out/bench.md" 2>"$out/bench-progress.txt"
rm -f "$out/model.safetensors"
tail -n 3 "$out/gpu-tests.txt" "$out/unit.txt" "$out/main-job.txt"
cat "$out/bench.md"
