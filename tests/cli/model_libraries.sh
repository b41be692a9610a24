#!/usr/bin/env bash
# Model libraries cannot take ctower down silently (the libraries:
# model_libraries/misbehaving.c). ctower reads a library's exports table
# without trusting it: a count it cannot hold, no array, or a name that
# points nowhere is a clear error naming the library (exit 1), never
# SIGSEGV; so is a layer list that a config could not give (a repeat past
# 1000, a device with no NUL in its field), naming the layer, and a build
# function that leaves its device scope open (it would move the next
# tower), naming the model and the scope. A variable of 2^62 f32 elements
# (2^64 bytes, a count that would wrap to 0) is an error naming it. Logits of another class count, or an output of no graph, are an
# error naming the model (exit 2, as any model that does not fit its data). A crash in the library's own code (a constructor
# or a build function) names the library and the call, and the process
# ends by that signal; a constructor calling exit(0) ends ctower with
# status 1 and says so, never 0 with nothing trained.
# Usage: bash model_libraries.sh /path/to/ctower
source "$(dirname "$0")/lib/common.sh" model_libraries "${1:-}"
LIBS=${CT_BINARY_DIR:?}/tests

# expect LIBRARY STATUS TEXT: training with that library exits STATUS
# (a signal's as the shell reports it, 128 + its number) with TEXT in its
# error, within 60 s, and writes no checkpoint
expect() {
  local library=$1 status=$2 text=$3
  rm -f job.safetensors
  cat >job.yaml <<YAML
model: {library: $LIBS/libmodel_library_$library.so, name: dense}
dataset: {name: synthetic, image_shape: [8, 8, 1], num_classes: 10, train_size: 64,
          test_size: 16, batch_size: 16}
train: {epochs: 1, checkpoint: job.safetensors}
YAML
  run train job.yaml --quiet
  if [ "$rc" -eq "$status" ] && grep -qF -- "$text" <<<"$err" && [ ! -e job.safetensors ]; then
    pass "$library: exit $rc, '$text'"
  else
    fail "$library: rc $rc (expected $status, '$text'): $err"
  fi
}

expect huge_count 1 "exports a table of 100000000 models at"
expect null_models 1 "exports a table of 1 models at (nil)"
expect negative_count 1 "exports a table of -1 models"
expect bad_name 1 "model 0 of its exports table: its name is not a readable, non-empty string"
expect garbage_output 2 "model 'dense' returned an output that is not one of the graph's"
expect too_many_logits 2 "model 'dense' returned logits of shape [?, 12] (f32), but the dataset has 10 classes"
expect crashing_build 139 "libmodel_library_crashing_build.so' (in the build function of model 'dense') crashed with SIGSEGV"
expect aborting_build 134 "(in the build function of model 'dense') crashed with SIGABRT"
expect crashing_load 139 "libmodel_library_crashing_load.so' (in its constructors, run as it loads) crashed with SIGSEGV"
expect exiting_load 1 "(in its constructors, run as it loads) called exit(), ending ctower before it trained anything"
expect repeat_int_max 1 "model 0 ('dense') of its exports table: its layer list: layers[1] (dense 'dense_1'): repeat must lie in 1 ... 1000, got 2147483647"
expect unterminated_device 1 "its layer list: layers[1] (dense 'dense_1'): its device fills all 64 bytes of its field with no terminating NUL"
expect huge_variable 2 "variable 'huge' of shape [2147483648, 2147483648] (f32) takes more bytes than 64 bits count"
expect leaked_device_scope 1 "model 'dense': its build function returned with the device scope '/cpu:1' still open"
finish
