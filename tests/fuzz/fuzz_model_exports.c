/* A model library's exports table, as ct_model_library_open reads it: any
 * ABI version, count and array, and models whose every pointer is either
 * into the input (a pointer field's value below the input's size is an
 * offset into it, so that names and layer lists can be valid) or any
 * address at all. The check must end with a status, never read what is not
 * mapped. */
#include <string.h>

#include "fuzz_common.h"
#include "models/model_exports.h"

enum { MAX_ENTRIES = 8 };

/* The field's bytes as a pointer: into data where it is an offset in it. */
static void *pointer_of(const uint8_t *data, size_t size, uint64_t value) {
  return value < size ? (void *)(data + value) : (void *)(uintptr_t)value;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct {
    int32_t abi_version, n_models;
    uint64_t models; /* as pointer_of; models[i] come from the input after the header */
  } header;
  if (size < sizeof header) return 0;
  memcpy(&header, data, sizeof header);
  uint64_t fields[MAX_ENTRIES][4];
  const size_t n = (size - sizeof header) / sizeof fields[0];
  memset(fields, 0, sizeof fields);
  memcpy(fields, data + sizeof header, (n < MAX_ENTRIES ? n : MAX_ENTRIES) * sizeof fields[0]);
  ct_model_def models[MAX_ENTRIES];
  for (int i = 0; i < MAX_ENTRIES; ++i) {
    models[i].name = pointer_of(data, size, fields[i][0]);
    models[i].description = fields[i][1] ? pointer_of(data, size, fields[i][1]) : NULL;
    const uint64_t build = fields[i][2];
    memcpy(&models[i].build, &build, sizeof build); /* never called */
    models[i].layers = pointer_of(data, size, fields[i][3]);
  }
  const ct_model_exports exports = {
      header.abi_version, header.n_models,
      header.models == 1 ? models : (const ct_model_def *)pointer_of(data, size, header.models)};
  ct_status status = CT_STATUS_INIT;
  ct_model_exports_check("fuzzed.so", &exports, &status);
  return 0;
}
