/* Models from a shared library of the user's (model.library): dlopen, the
 * exported ct_model_exports, and its ABI version. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/files.h"
#include "ctower/models.h"

struct ct_model_library {
  void *handle;
  char path[512];
  const ct_model_exports *exports;
};

static const ct_file_role k_library_role = {
    "model library",
    "give model.library the path of the .so file (relative to the working directory, or "
    "absolute)"};

ct_model_library *ct_model_library_open(const char *path, ct_status *status) {
  /* dlopen would wait forever on a FIFO: only a regular file goes on */
  const int fd = ct_file_open_read(path, &k_library_role, NULL, status);
  if (fd < 0) return NULL;
  close(fd);
  /* dlopen searches the library path for a bare name: "./" keeps it a file */
  char file[520];
  snprintf(file, sizeof file, "%s%s", strchr(path, '/') ? "" : "./", path);
  void *handle = dlopen(file, RTLD_NOW | RTLD_LOCAL);
  if (handle == NULL) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "model library '%s' cannot be loaded: %s; build it as a shared library "
                  "(add_library(NAME MODULE ...)) against include/ctower, without linking ctower",
                  path, dlerror());
    return NULL;
  }
  const ct_model_exports *exports = dlsym(handle, CT_MODEL_EXPORTS_SYMBOL);
  if (exports == NULL) {
    ct_status_set(status, CT_FAILED_PRECONDITION,
                  "model library '%s' does not export '" CT_MODEL_EXPORTS_SYMBOL
                  "'; define it with CT_EXPORT_MODELS(your_models) (include/ctower/models.h)",
                  path);
    dlclose(handle);
    return NULL;
  }
  if (exports->abi_version != CT_MODEL_ABI_VERSION || exports->n_models < 0 ||
      (exports->n_models > 0 && exports->models == NULL)) {
    ct_status_set(status, CT_FAILED_PRECONDITION,
                  "model library '%s' was built for model ABI version %d, but this ctower loads "
                  "version %d; rebuild it against this ctower's include/ctower/models.h",
                  path, exports->abi_version, CT_MODEL_ABI_VERSION);
    dlclose(handle);
    return NULL;
  }
  ct_model_library *library = calloc(1, sizeof *library);
  if (library == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory loading '%s'", path);
    dlclose(handle);
    return NULL;
  }
  library->handle = handle;
  library->exports = exports;
  snprintf(library->path, sizeof library->path, "%s", path);
  return library;
}

const ct_model_def *ct_model_library_find(const ct_model_library *library, const char *name,
                                          ct_status *status) {
  const ct_model_exports *e = library->exports;
  char names[512] = "";
  size_t used = 0;
  for (int i = 0; i < e->n_models; ++i) {
    const ct_model_def *m = &e->models[i];
    if (m->name && strcmp(m->name, name) == 0) return m;
    if (m->name && used < sizeof names)
      used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "", m->name);
  }
  ct_status_set(status, CT_NOT_FOUND,
                "model library '%s' has no model '%s' (it has: %s); set model.name to one of them",
                library->path, name, e->n_models ? names : "none");
  return NULL;
}

void ct_model_library_close(ct_model_library *library) {
  if (library == NULL) return;
  dlclose(library->handle);
  free(library);
}
