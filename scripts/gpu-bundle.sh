#!/usr/bin/env bash
# Builds, here, what a GPU machine without a package registry runs, and
# packs it with every library it needs into .gpu-bundle/ (ignored by git;
# the folder a GPU machine's run carries): scripts/gpu-check.sh unpacks it
# there and runs it, building nothing.
#
#   ctower, test_gpu, cuda_probe   built with the CUDA device, the runtime
#                                  linked statically, sm_90 machine code (the
#                                  H100 and H200), -march=x86-64-v3, no MPI,
#                                  warnings not fatal
#   lib/                           every library they need beyond the C and
#                                  C++ runtimes (libc, libm, libstdc++,
#                                  libgcc_s, ld.so): oneDNN, its OpenCL loader,
#                                  libgomp, libyaml, protobuf-c, libjpeg,
#                                  libpng, zlib, cmocka
#   bin/                           wrappers that run them against lib/
#   fashion-mnist/                 the main job's dataset
#
# The CUDA libraries (cuBLAS, cuDNN, NCCL) and the driver are not packed:
# ctower loads those of the machine (its system, /usr/local/cuda*, or the
# NVIDIA wheels of its PyTorch). Then it checks that every library the
# binaries need resolves inside the bundle or to the C and C++ runtimes,
# with a cleared environment; with --verify-root, also that `ctower
# devices`, a few training steps and the GPU tests' start run from the
# bundle alone in a minimal Debian root made by mmdebstrap (downloads from
# Debian's registry; needs root).
#
# Usage: scripts/gpu-bundle.sh [--verify-root]   (JOBS=N: build jobs, default 2)
set -euo pipefail
cd "$(dirname "$0")/.."
verify_root=0
[ "${1:-}" = "--verify-root" ] && verify_root=1
build=build-gpu-bundle
stage=$build/stage/ctower-gpu
out=.gpu-bundle
dataset=/usr/share/datasets/fashion-mnist
die() { echo "gpu-bundle: $*" >&2; exit 1; }

[ -f "$dataset/train-images-idx3-ubyte.gz" ] ||
  die "no Fashion-MNIST in $dataset: apt-get install dataset-fashion-mnist"
mkdir -p "$build"
log=$build/bundle-build.log
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCTOWER_CUDA=on -DCTOWER_MPI=off \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DCTOWER_MARCH=x86-64-v3 -DCTOWER_WERROR=OFF >"$log" 2>&1 ||
  { tail -20 "$log"; die "cmake failed (the whole log: $log)"; }
ninja -C "$build" -j "${JOBS:-2}" ctower test_gpu cuda_probe >>"$log" 2>&1 ||
  { tail -30 "$log"; die "the build failed (the whole log: $log)"; }

rm -rf "$build/stage"
mkdir -p "$stage/bin" "$stage/libexec" "$stage/lib" "$stage/fashion-mnist"
cp "$build/ctower" "$build/tests/test_gpu" "$build/tests/cuda_probe" "$stage/libexec/"
cp "$dataset"/*.gz "$stage/fashion-mnist/"

# The libraries every binary needs (ldd lists them all, needs of needs
# too), but the C and C++ runtimes, which every Linux machine has.
runtime='^(linux-vdso\.so\.1|libc\.so\.6|libm\.so\.6|libstdc\+\+\.so\.6|libgcc_s\.so\.1|ld-linux-x86-64\.so\.2|libpthread\.so\.0|libdl\.so\.2|librt\.so\.1)$'
for binary in "$stage"/libexec/*; do
  while read -r name arrow path _; do
    [ "$arrow" = "=>" ] || continue
    [[ $name =~ $runtime ]] && continue
    [ "$path" = "not" ] && die "$(basename "$binary") needs $name, which this machine lacks"
    cp -L "$path" "$stage/lib/$name"
  done < <(env -i ldd "$binary")
done
for name in ctower test_gpu cuda_probe; do
  cat >"$stage/bin/$name" <<EOF
#!/bin/sh
# $name against the libraries packed beside it
here=\$(dirname "\$(readlink -f "\$0")")/..
LD_LIBRARY_PATH="\$here/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" exec "\$here/libexec/$name" "\$@"
EOF
  chmod +x "$stage/bin/$name"
done

# Nothing else is needed: with a cleared environment, every library of
# every binary resolves in lib/ or is a C or C++ runtime.
stage_lib=$(cd "$stage/lib" && pwd)
for binary in "$stage"/libexec/*; do
  while read -r name arrow path _; do
    if [ "$arrow" != "=>" ]; then
      [[ $name =~ ^/lib64/ld-linux-x86-64\.so\.2$|^linux-vdso\.so\.1$ ]] ||
        die "$(basename "$binary"): an unexpected line from ldd: $name $arrow"
      continue
    fi
    [ "$path" = "not" ] && die "$(basename "$binary") needs $name, which the bundle lacks"
    case $path in
      "$stage_lib"/*) ;;
      *) [[ $name =~ $runtime ]] || die "$(basename "$binary") takes $name from $path";;
    esac
  done < <(env -i LD_LIBRARY_PATH="$stage_lib" ldd "$binary")
  echo "$(basename "$binary"): every library in the bundle or a C/C++ runtime"
done

{
  echo "commit: $(git rev-parse HEAD)$(git diff --quiet HEAD -- . ':!.gpu-bundle' || echo ' with uncommitted changes')"
  echo "built: $(date -u +%Y-%m-%dT%H:%MZ) on $(. /etc/os-release && echo "$PRETTY_NAME"), nvcc $(nvcc --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')"
  echo "cmake: -DCTOWER_CUDA=on -DCTOWER_MPI=off -DCMAKE_CUDA_ARCHITECTURES=90 -DCTOWER_MARCH=x86-64-v3 -DCTOWER_WERROR=OFF"
  (cd "$stage" && du -b libexec/* lib/* | sort -k2)
} >"$stage/MANIFEST"
mkdir -p "$out"
rm -f "$out/bundle.tar.xz"
tar -C "$build/stage" -cf - ctower-gpu | xz -T "${JOBS:-2}" -9 >"$out/bundle.tar.xz"
cp "$stage/MANIFEST" "$out/MANIFEST"
echo "$out/bundle.tar.xz: $(du -b "$out/bundle.tar.xz" | cut -f1) bytes ($(du -sb "$stage" | cut -f1) unpacked)"

[ "$verify_root" = 1 ] || exit 0
# A minimal Debian root (its essential packages, which hold the C and C++
# runtimes): the bundle alone must run there.
root=$build/debian-root
if [ ! -x "$root/bin/sh" ]; then
  command -v mmdebstrap >/dev/null || die "--verify-root needs mmdebstrap (apt-get install mmdebstrap)"
  rm -rf "$root"
  mmdebstrap --variant=minbase --quiet bookworm "$root" >"$build/debian-root.log" 2>&1 ||
    { tail -20 "$build/debian-root.log"; die "mmdebstrap failed"; }
fi
rm -rf "$root/opt/ctower-gpu" "$root/opt/examples"
tar -C "$root/opt" -xJf "$out/bundle.tar.xz"
cp -r examples "$root/opt/examples"
echo "in a minimal Debian root: $(chroot "$root" dpkg-query -f '${binary:Package}\n' -W | wc -l) packages"
chroot "$root" /opt/ctower-gpu/bin/ctower devices
chroot "$root" /opt/ctower-gpu/bin/ctower train /opt/examples/fmnist_cnn.yaml \
  dataset.path=/opt/ctower-gpu/fashion-mnist train.max_steps=20 train.checkpoint= --quiet
set +e
chroot "$root" /opt/ctower-gpu/bin/test_gpu
echo "test_gpu: exit $? (77: no GPU here, skipped)"
chroot "$root" /opt/ctower-gpu/bin/cuda_probe
echo "cuda_probe: exit $? (77: no GPU here)"
