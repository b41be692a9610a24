/* Models from a shared library of the user's (model.library): dlopen, the
 * exported ct_model_exports, and its ABI version. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/files.h"
#include "ctower/models.h"
#include "models/model_exports.h"
#include "models/plugin_call.h"

/* The most models a library may export, and the longest name and
 * description ctower reads of one. */
enum { MAX_MODELS = 4096, MAX_NAME = 255, MAX_DESCRIPTION = 65535 };

struct ct_model_library {
  void *handle;
  char path[512];
  const ct_model_exports *exports;
};

static const ct_file_role k_library_role = {
    "model library",
    "give model.library the path of the .so file (relative to the working directory, or "
    "absolute)"};

/* The address of a function, as dladdr takes it. */
static const void *function_address(ct_output (*fn)(ct_graph *, ct_output, int, int)) {
  const void *p;
  memcpy(&p, &fn, sizeof p);
  return p;
}

/* Model m (a copy of model i of the library at path, the object
 * `object`): a readable name, its copy into name, and description, a build
 * function of the library's own or a readable layer list that passes
 * ct_layer_list_check. */
static int check_model(const char *path, const char *object, const ct_model_def *m, int i,
                       char name[MAX_NAME + 1], ct_status *status) {
  const char *problem = NULL;
  ct_layer_list layers;
  ct_status list = CT_STATUS_INIT;
  if (!ct_plugin_copy_string(m->name, MAX_NAME, name, MAX_NAME + 1) || name[0] == '\0')
    problem = "its name is not a readable, non-empty string (NUL-terminated, at most 255 "
              "characters)";
  else if (m->description && !ct_plugin_copy_string(m->description, MAX_DESCRIPTION, NULL, 0))
    problem = "its description is neither NULL nor a readable string";
  else if (m->build) {
    const char *in = ct_plugin_object_of(function_address(m->build));
    if (in == NULL || strcmp(in, object) != 0)
      problem = "its build function is not code of this library";
  } else if (!ct_plugin_copy(m->layers, &layers, sizeof layers))
    problem = "it has neither a build function nor a readable layer list";
  else if (layers.n < 1 || layers.n > CT_MAX_LAYERS)
    problem = "its layer list's count is not between 1 and CT_MAX_LAYERS";
  else if (ct_layer_list_check(&layers, "", NULL, &list)) {
    ct_status_set(status, CT_FAILED_PRECONDITION,
                  "model library '%s': model %d ('%s') of its exports table: its layer list: %s",
                  path, i, name, list.message);
    return 1;
  }
  if (problem == NULL) return 0;
  ct_status_set(status, CT_FAILED_PRECONDITION,
                "model library '%s': model %d of its exports table: %s; check the array "
                "CT_EXPORT_MODELS is given (include/ctower/models.h)",
                path, i, problem);
  return 1;
}

/* Fills status: the table of n models at `models` cannot be read. Returns 1. */
static int table_unreadable(const char *path, int n, const ct_model_def *models,
                            ct_status *status) {
  ct_status_set(status, CT_FAILED_PRECONDITION,
                "model library '%s' exports a table of %d models at %p, which cannot be read (a "
                "library exports 1 to %d models, in an array it owns); define it with "
                "CT_EXPORT_MODELS(your_models), which counts the array itself",
                path, n, (const void *)models, MAX_MODELS);
  return 1;
}

/* Models 0..n-1 of the array at models, each copied before it is read. */
static int check_models(const char *path, const char *object, const ct_model_def *models, int n,
                        ct_status *status) {
  char(*names)[MAX_NAME + 1] = calloc((size_t)n, sizeof *names);
  if (names == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory loading '%s'", path);
    return 1;
  }
  int failed = 0;
  for (int i = 0; i < n && !failed; ++i) {
    ct_model_def m;
    if (!ct_plugin_copy(&models[i], &m, sizeof m)) {
      failed = table_unreadable(path, n, models, status);
      break;
    }
    failed = check_model(path, object, &m, i, names[i], status);
    for (int j = 0; j < i && !failed; ++j)
      if (strcmp(names[j], names[i]) == 0) {
        ct_status_set(status, CT_FAILED_PRECONDITION,
                      "model library '%s' exports two models named '%s' (models %d and %d); "
                      "give each its own name",
                      path, names[i], j, i);
        failed = 1;
      }
  }
  free(names);
  return failed;
}

int ct_model_exports_check(const char *path, const ct_model_exports *table, ct_status *status) {
  ct_model_exports e;
  if (!ct_plugin_copy(table, &e, sizeof e)) {
    ct_status_set(status, CT_FAILED_PRECONDITION,
                  "model library '%s': its '" CT_MODEL_EXPORTS_SYMBOL "' cannot be read; define "
                  "it with CT_EXPORT_MODELS(your_models) (include/ctower/models.h)",
                  path);
    return 1;
  }
  if (e.abi_version != CT_MODEL_ABI_VERSION) {
    ct_status_set(status, CT_FAILED_PRECONDITION,
                  "model library '%s' was built for model ABI version %d, but this ctower loads "
                  "version %d; rebuild it against this ctower's include/ctower/models.h",
                  path, e.abi_version, CT_MODEL_ABI_VERSION);
    return 1;
  }
  if (e.n_models < 1 || e.n_models > MAX_MODELS || e.models == NULL) {
    return table_unreadable(path, e.n_models, e.models, status);
  }
  const char *object = ct_plugin_object_of(table);
  return check_models(path, object ? object : "", e.models, e.n_models, status);
}

ct_model_library *ct_model_library_open(const char *path, ct_status *status) {
  /* dlopen would wait forever on a FIFO: only a regular file goes on */
  const int fd = ct_file_open_read(path, &k_library_role, NULL, status);
  if (fd < 0) return NULL;
  close(fd);
  /* dlopen searches the library path for a bare name: "./" keeps it a file */
  char file[520];
  snprintf(file, sizeof file, "%s%s", strchr(path, '/') ? "" : "./", path);
  ct_plugin_call_begin(path, "its constructors, run as it loads");
  void *handle = dlopen(file, RTLD_NOW | RTLD_LOCAL);
  ct_plugin_call_end();
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
  if (ct_model_exports_check(path, exports, status)) {
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
