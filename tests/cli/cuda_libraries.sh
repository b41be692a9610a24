#!/usr/bin/env bash
# One binary for machines with and without GPUs: the command links none of
# the CUDA libraries (the runtime is static; cuBLAS, cuDNN and NCCL are
# loaded when a GPU first needs them), so it starts where they are missing
# and a CPU run does not map them: it trains on its CPUs within 700 MiB of
# address space (with them linked it could not even start there).
# Usage: bash cuda_libraries.sh /path/to/ctower
source "$(dirname "$0")/lib/common.sh" cuda_libraries "${1:-}"

needed=$(readelf -d "$CTOWER" | grep NEEDED)
linked=$(grep -oE 'lib(cudart|cublas|cublasLt|cudnn[a-z_]*|nccl)\.so[.0-9]*' <<<"$needed" | tr '\n' ' ')
[ -z "$linked" ] && pass "no CUDA library among the libraries ctower needs to start" ||
  fail "ctower needs $linked to start"

cat >job.yaml <<'YAML'
model: {name: mlp}
dataset: {name: synthetic, image_shape: [28, 28, 1], num_classes: 10, train_size: 512,
          test_size: 128, batch_size: 128}
train: {epochs: 1, checkpoint: ""}
YAML
(ulimit -v $((700 * 1024)) && exec "$CTOWER" train job.yaml --quiet) >out.txt 2>&1
rc=$?
[ "$rc" -eq 0 ] && pass "trains on the CPU within 700 MiB of address space" ||
  fail "under ulimit -v 700 MiB: exit $rc: $(tail -2 out.txt)"
finish
