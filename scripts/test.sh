#!/usr/bin/env bash
# Builds ctower and runs its tests: the whole suite on a release build (with
# the CUDA device whenever nvcc is there; the GPU tests report themselves
# skipped without a GPU; the Python package's under pytest, label python), the instruction-set-dependent ones again built and
# held to AVX2, then the unit tests again under AddressSanitizer and
# UndefinedBehaviorSanitizer (host code only: the sanitizers do not see into
# CUDA), the threaded ones under ThreadSanitizer, and the fuzz targets for a
# few seconds each. Installs missing Debian packages first
# (scripts/install-deps.sh), and TensorBoard from PyPI into build/venv for the
# test that reads event files.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

scripts/install-deps.sh

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "$jobs"
# TensorBoard, whose own reader checks the event files (tests/cli/tensorboard.sh),
# in a virtual environment of Debian's python3; installed once
if ! build/venv/bin/python -c 'import tensorboard' 2>/dev/null; then
  /usr/bin/python3 -m venv --system-site-packages build/venv
  build/venv/bin/pip install --quiet tensorboard
fi
ctest --test-dir build --output-on-failure -j "$jobs" -LE fuzz

# The tests whose results depend on the instruction set (label "isa":
# kernels, gradients, precision, plan, models, and the command's tests that
# compare bits) again as on a CPU without AVX-512, whatever CPU runs this:
# built for x86-64-v3, where ctower's own vector loops take 8 lanes (16 in
# the release build on an AVX-512 CPU, 4 in the Debug builds below), with
# oneDNN held to AVX2 (no AVX-512, no AVX512_BF16: its other kernels, and
# ctower's own Winograd).
if grep -qw avx2 /proc/cpuinfo; then
  cmake -S . -B build-avx2 -DCMAKE_BUILD_TYPE=Release -DCTOWER_MARCH=x86-64-v3 \
    -DCTOWER_CUDA=off -DCTOWER_MPI=off -DCTOWER_PYTHON=off
  cmake --build build-avx2 -j "$jobs"
  DNNL_MAX_CPU_ISA=AVX2 ctest --test-dir build-avx2 --output-on-failure -j "$jobs" -L isa
fi

cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DCTOWER_SANITIZE=ON -DCTOWER_CUDA=off \
  -DCTOWER_PYTHON=off
cmake --build build-asan -j "$jobs"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs" -L unit

# ThreadSanitizer over the tests of ctower's own threads: device workers and
# their communication workers, the executor, the allocator, towers, the
# cluster layer, datasets read from several threads, the input pipeline of
# training and evaluation. OpenMP teams are held to one thread
# (OMP_THREAD_LIMIT=1): libgomp is not built with
# ThreadSanitizer, so its barriers are invisible to it and every parallel
# region would look like a race; with them gone the one suppression left
# (tests/tsan.supp) is oneDNN's primitive cache, whose own synchronization
# the runtime cannot see.
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DCTOWER_TSAN=ON -DCTOWER_CUDA=off -DCTOWER_MPI=off
cmake --build build-tsan -j "$jobs"
OMP_THREAD_LIMIT=1 TSAN_OPTIONS="halt_on_error=1 suppressions=$PWD/tests/tsan.supp" \
  ctest --test-dir build-tsan --output-on-failure \
  -j "$jobs" -R '^test_(allocator|device|session|towers|schedule|placement|batcher|pipeline|augment|cluster|dataset|sources|evaluate)$'
# The Python extension's threads (runs released from the GIL while another
# thread closes, saves, restores or runs) under ThreadSanitizer: the
# extension built above with the library, Debian's python3 (not built with
# it) given the runtime by LD_PRELOAD. CPython's GIL is a pthread lock and
# condition, which the runtime intercepts, so no suppression is needed.
LD_PRELOAD=$(gcc -print-file-name=libtsan.so) OMP_THREAD_LIMIT=1 \
  TSAN_OPTIONS="halt_on_error=1 suppressions=$PWD/tests/tsan.supp" \
  PYTHONPATH=build-tsan/python CT_SOURCE_DIR="$PWD" CT_BINARY_DIR="$PWD/build-tsan" \
  /usr/bin/python3 -m pytest -q -p no:cacheprovider tests/python/test_session_threads.py \
  tests/python/test_safety.py -k 'thread or gil or interrupt or close'

# The fuzz targets (tests/fuzz: the config, device names, checkpoints and
# every dataset reader), built with clang's libFuzzer and the sanitizers,
# each run for a short fixed time from its seeds.
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DCTOWER_FUZZ=ON \
  -DCTOWER_TESTS=OFF -DCTOWER_CUDA=off -DCTOWER_MPI=off -DCTOWER_PYTHON=off
cmake --build build-fuzz -j "$jobs"
ctest --test-dir build-fuzz --output-on-failure -j "$jobs" -L fuzz
# The Python front end's fuzz target (tests/python/fuzz_compat_v1.py: 10^5
# calls of ctower.compat.v1) against the release build's package.
ctest --test-dir build --output-on-failure -L fuzz
