#!/usr/bin/env bash
# The fallback to scripts/gpu-bundle.sh: packs what a GPU machine without a
# package registry needs to build ctower itself into .gpu-kit/ (ignored by
# git; about 41 MB): the Debian packages of every library and tool
# CMakeLists.txt asks for beyond the compilers, CMake and the CUDA toolkit
# (oneDNN and the OpenCL headers its CMake config wants, libyaml,
# protobuf-c with protoc-c, libjpeg-turbo, libpng, zlib, cmocka,
# pkg-config), and the Fashion-MNIST files. OpenMP's libgomp is the
# machine's compiler's own (an older one on the library path would hide
# it from what that compiler builds). cuDNN's and NCCL's headers are
# not packed: CMake finds them in the CUDA toolkit or in the NVIDIA wheels of
# the machine's python3 (PyTorch's). Run it here; then, on the GPU machine
# with .gpu-kit carried and no .gpu-bundle, scripts/gpu-check.sh unpacks the
# kit, builds there (minutes of that machine's time) and runs its steps.
set -euo pipefail
cd "$(dirname "$0")/.."
kit=.gpu-kit
rm -rf "$kit"
mkdir -p "$kit/debs" "$kit/fashion-mnist"
packages=(
  libdnnl2 libdnnl-dev ocl-icd-opencl-dev ocl-icd-libopencl1 opencl-c-headers
  opencl-clhpp-headers
  libyaml-0-2 libyaml-dev
  libprotobuf-c1 libprotobuf-c-dev protobuf-c-compiler libprotoc32 libprotobuf32
  libjpeg62-turbo libjpeg62-turbo-dev libjpeg-dev
  libpng16-16 libpng-dev zlib1g zlib1g-dev
  libcmocka0 libcmocka-dev
  pkgconf pkgconf-bin libpkgconf3
)
(cd "$kit/debs" && apt-get download "${packages[@]}")
cp /usr/share/datasets/fashion-mnist/*.gz "$kit/fashion-mnist/"
du -sh "$kit"
