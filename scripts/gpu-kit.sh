#!/usr/bin/env bash
# Packs what a GPU machine without package registries needs to build ctower
# and run its GPU tests, main job and GPU benchmark there, into .gpu-kit/
# (about 40 MB): the Debian packages of oneDNN, libyaml, cmocka and the
# OpenCL headers oneDNN's CMake config asks for, and the Fashion-MNIST files.
# Run it here; then run scripts/gpu-check.sh on the GPU machine with
# .gpu-kit carried along.
set -euo pipefail
cd "$(dirname "$0")/.."
kit=.gpu-kit
rm -rf "$kit"
mkdir -p "$kit/debs" "$kit/fashion-mnist"
(cd "$kit/debs" && apt-get download libdnnl2 libdnnl-dev libyaml-0-2 libyaml-dev libcmocka0 \
  libcmocka-dev ocl-icd-opencl-dev ocl-icd-libopencl1 opencl-c-headers opencl-clhpp-headers \
  libgomp1 2>/dev/null)
cp /usr/share/datasets/fashion-mnist/* "$kit/fashion-mnist/"
du -sh "$kit"
