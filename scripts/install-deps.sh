#!/usr/bin/env bash
# Installs the Debian 12 packages ctower builds, tests and trains with.
# Runs apt-get as root, through sudo when started by another user. Does
# nothing when all are installed.
set -euo pipefail
packages=(build-essential clang cmake pkg-config libdnnl-dev ocl-icd-opencl-dev libyaml-dev zlib1g-dev
          libcmocka-dev python3 python3-venv python3-dev python3-numpy python3-pytest
          libopenmpi-dev openmpi-bin
          libprotobuf-c-dev protobuf-c-compiler libjpeg62-turbo-dev libpng-dev python3-pil
          dataset-fashion-mnist)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    exec sudo "$0" "$@"
  fi
  echo "install-deps: these packages are missing: ${missing[*]}; run this script as root" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
