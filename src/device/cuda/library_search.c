/* The search for the CUDA libraries ctower loads at run time
 * (library_search.h). */
#include "device/cuda/library_search.h"

#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { MAX_PREFIXES = 32, MAX_SEEN = 64 };

void ct_library_places_from_environment(ct_library_places *places, char *storage, size_t size) {
  memset(places, 0, sizeof *places);
  places->named = getenv("CTOWER_CUDA_LIBRARY_PATH");
  places->system = 1;
  places->cuda_root = "/usr/local";
  places->path = getenv("PATH");
  const char *venv = getenv("VIRTUAL_ENV"), *conda = getenv("CONDA_PREFIX"),
             *home = getenv("HOME");
  snprintf(storage, size, "%s:%s:%s%s:/usr/local:/usr", venv ? venv : "", conda ? conda : "",
           home && home[0] ? home : "", home && home[0] ? "/.local" : "");
  places->python_prefixes = storage;
}

/* Calls fn(item, context) for each non-empty item of a ':' list, until fn
 * returns nonzero; returns that value or 0. */
static int each_item(const char *list, int (*fn)(const char *item, void *context),
                     void *context) {
  for (const char *p = list; p && *p;) {
    const char *end = strchr(p, ':');
    const size_t n = end ? (size_t)(end - p) : strlen(p);
    if (n > 0 && n < PATH_MAX) {
      char item[PATH_MAX];
      memcpy(item, p, n);
      item[n] = '\0';
      const int r = fn(item, context);
      if (r) return r;
    }
    p = end ? end + 1 : p + n;
  }
  return 0;
}

static int is_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static int is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* One search in progress: the file, the caller's visitor, and the files
 * and environments already offered (each once). */
typedef struct search {
  const char *file;
  int (*visit)(const char *candidate, void *context);
  void *context;
  char seen[MAX_SEEN][PATH_MAX];
  int n_seen;
  char prefixes[MAX_PREFIXES][PATH_MAX];
  int n_prefixes;
} search;

/* Offers folder/file when it exists and was not offered under another name. */
static int offer_existing(search *s, const char *folder) {
  char candidate[PATH_MAX], real[PATH_MAX];
  if (snprintf(candidate, sizeof candidate, "%s/%s", folder, s->file) >= (int)sizeof candidate ||
      !is_file(candidate) || realpath(candidate, real) == NULL)
    return 0;
  for (int i = 0; i < s->n_seen; ++i)
    if (strcmp(s->seen[i], real) == 0) return 0;
  if (s->n_seen < MAX_SEEN) snprintf(s->seen[s->n_seen++], PATH_MAX, "%s", real);
  return s->visit(candidate, s->context);
}

/* Step 1: every named folder, whether or not the file is there. */
static int offer_named(const char *folder, void *context) {
  search *s = context;
  char candidate[PATH_MAX];
  if (snprintf(candidate, sizeof candidate, "%s/%s", folder, s->file) >= (int)sizeof candidate)
    return 0;
  return s->visit(candidate, s->context);
}

/* The entries of `folder` whose names start with `prefix`, newest version
 * first (cuda-13.0 before cuda-12.8, python3.12 before python3.9). */
static int entries_newest_first(const char *folder, const char *prefix, struct dirent ***out) {
  struct dirent **all = NULL;
  const int n = scandir(folder, &all, NULL, versionsort);
  *out = NULL;
  if (n < 0) return 0;
  struct dirent **kept = malloc((size_t)(n > 0 ? n : 1) * sizeof *kept);
  int n_kept = 0;
  for (int i = n - 1; i >= 0; --i) { /* reversed: newest first */
    if (kept && strncmp(all[i]->d_name, prefix, strlen(prefix)) == 0)
      kept[n_kept++] = all[i];
    else
      free(all[i]);
  }
  free(all);
  *out = kept;
  return n_kept;
}

static void free_entries(struct dirent **entries, int n) {
  for (int i = 0; i < n; ++i) free(entries[i]);
  free(entries);
}

/* Step 3: a toolkit folder's library folders. */
static int offer_toolkit(search *s, const char *toolkit) {
  static const char *const subfolders[] = {"lib64", "lib", "targets/x86_64-linux/lib"};
  for (size_t i = 0; i < sizeof subfolders / sizeof subfolders[0]; ++i) {
    char folder[PATH_MAX];
    if (snprintf(folder, sizeof folder, "%s/%s", toolkit, subfolders[i]) >= (int)sizeof folder)
      continue;
    const int r = offer_existing(s, folder);
    if (r) return r;
  }
  return 0;
}

static int offer_toolkits(search *s, const char *root) {
  char toolkit[PATH_MAX];
  snprintf(toolkit, sizeof toolkit, "%s/cuda", root);
  int r = offer_toolkit(s, toolkit);
  struct dirent **entries = NULL;
  const int n = r ? 0 : entries_newest_first(root, "cuda-", &entries);
  for (int i = 0; i < n && !r; ++i) {
    if (snprintf(toolkit, sizeof toolkit, "%s/%s", root, entries[i]->d_name) < (int)sizeof toolkit)
      r = offer_toolkit(s, toolkit);
  }
  free_entries(entries, n);
  return r;
}

/* Step 4: one environment's site-packages/nvidia/<package>/lib folders. */
static int offer_packages(search *s, const char *nvidia) {
  struct dirent **packages = NULL;
  const int n = entries_newest_first(nvidia, "", &packages);
  int r = 0;
  for (int i = 0; i < n && !r; ++i) {
    if (packages[i]->d_name[0] == '.' || packages[i]->d_name[0] == '_') continue;
    char folder[PATH_MAX];
    if (snprintf(folder, sizeof folder, "%s/%s/lib", nvidia, packages[i]->d_name) <
        (int)sizeof folder)
      r = offer_existing(s, folder);
  }
  free_entries(packages, n);
  return r;
}

static int offer_environment(search *s, const char *prefix) {
  static const char *const libs[] = {"lib", "lib64"};
  static const char *const package_folders[] = {"site-packages", "dist-packages"};
  int r = 0;
  for (size_t l = 0; l < 2 && !r; ++l) {
    char lib[PATH_MAX];
    if (snprintf(lib, sizeof lib, "%s/%s", prefix, libs[l]) >= (int)sizeof lib) continue;
    struct dirent **pythons = NULL;
    const int n = entries_newest_first(lib, "python3", &pythons);
    for (int i = 0; i < n && !r; ++i)
      for (size_t p = 0; p < 2 && !r; ++p) {
        char nvidia[PATH_MAX];
        if (snprintf(nvidia, sizeof nvidia, "%s/%s/%s/nvidia", lib, pythons[i]->d_name,
                     package_folders[p]) < (int)sizeof nvidia &&
            is_dir(nvidia))
          r = offer_packages(s, nvidia);
      }
    free_entries(pythons, n);
  }
  return r;
}

static void add_prefix(search *s, const char *prefix) {
  if (!is_dir(prefix) || s->n_prefixes == MAX_PREFIXES) return;
  char real[PATH_MAX];
  if (realpath(prefix, real) == NULL) return;
  for (int i = 0; i < s->n_prefixes; ++i)
    if (strcmp(s->prefixes[i], real) == 0) return;
  snprintf(s->prefixes[s->n_prefixes++], PATH_MAX, "%s", real);
}

/* A PATH folder with a python3 in it: its environment is the folder above
 * (the link a virtual environment's bin/python3 usually is stays
 * unresolved: the environment is where the link is). */
static int add_python_folder(const char *folder, void *context) {
  search *s = context;
  char python[PATH_MAX];
  if (snprintf(python, sizeof python, "%s/python3", folder) >= (int)sizeof python ||
      access(python, X_OK) != 0)
    return 0;
  char prefix[PATH_MAX];
  snprintf(prefix, sizeof prefix, "%s", folder);
  char *slash = strrchr(prefix, '/');
  if (slash == NULL) return 0;
  if (slash == prefix) slash[1] = '\0';
  else *slash = '\0';
  add_prefix(s, prefix);
  return 0;
}

static int add_listed_prefix(const char *prefix, void *context) {
  add_prefix(context, prefix);
  return 0;
}

/* The Python environments of step 4, in order, into s->prefixes. */
static void find_environments(search *s, const ct_library_places *places) {
  each_item(places->path, add_python_folder, s);
  each_item(places->python_prefixes, add_listed_prefix, s);
}

int ct_library_search(const char *file, const ct_library_places *places,
                      int (*visit)(const char *candidate, void *context), void *context) {
  search *s = calloc(1, sizeof *s);
  if (s == NULL) return 0;
  s->file = file;
  s->visit = visit;
  s->context = context;
  int r = each_item(places->named, offer_named, s);
  if (!r && places->system) r = visit(file, context);
  if (!r && places->cuda_root) r = offer_toolkits(s, places->cuda_root);
  if (!r) {
    find_environments(s, places);
    for (int i = 0; i < s->n_prefixes && !r; ++i) r = offer_environment(s, s->prefixes[i]);
  }
  free(s);
  return r;
}

void ct_library_places_describe(const ct_library_places *places, char *text, size_t size) {
  search *s = calloc(1, sizeof *s);
  if (s) find_environments(s, places);
  size_t used = 0;
#define APPEND(...)                                                                         \
  do {                                                                                      \
    if (used < size) {                                                                      \
      const int w = snprintf(text + used, size - used, __VA_ARGS__);                        \
      used = w < 0 ? size : used + (size_t)w;                                               \
    }                                                                                       \
  } while (0)
  text[0] = '\0';
  if (places->named && places->named[0])
    APPEND("CTOWER_CUDA_LIBRARY_PATH (%s)", places->named);
  else
    APPEND("CTOWER_CUDA_LIBRARY_PATH (unset)");
  if (places->system) APPEND(", the system's library path");
  if (places->cuda_root) APPEND(", %s/cuda*", places->cuda_root);
  APPEND(" and the nvidia/*/lib folders of the Python environments");
  for (int i = 0; s && i < s->n_prefixes; ++i) APPEND("%s %s", i ? "," : "", s->prefixes[i]);
  if (s == NULL || s->n_prefixes == 0) APPEND(" (none found)");
#undef APPEND
  free(s);
}

/* ct_library_open's state: the handle found, and what the refused
 * candidates said. */
typedef struct opening {
  void *handle;
  char *path;
  size_t path_size;
  char refusals[2][512]; /* the first two files that exist but would not load */
  int n_refusals;
} opening;

static int try_open(const char *candidate, void *context) {
  opening *o = context;
  void *handle = dlopen(candidate, RTLD_NOW | RTLD_LOCAL);
  if (handle == NULL) {
    const char *why = dlerror();
    /* a file that is there but does not load (a missing dependency, another
     * architecture) is worth telling; a file that is not there is not */
    if (why && strstr(why, "No such file") == NULL && o->n_refusals < 2)
      snprintf(o->refusals[o->n_refusals++], sizeof o->refusals[0], "%s", why);
    return 0;
  }
  o->handle = handle;
  struct link_map *map = NULL;
  const char *where = candidate;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && map->l_name[0])
    where = map->l_name;
  snprintf(o->path, o->path_size, "%s", where);
  return 1;
}

void *ct_library_open(const char *file, const ct_library_places *places, char *path,
                      size_t path_size, char *error, size_t error_size) {
  opening o = {NULL, path, path_size, {{0}}, 0};
  path[0] = '\0';
  ct_library_search(file, places, try_open, &o);
  if (o.handle) return o.handle;
  char where[768];
  ct_library_places_describe(places, where, sizeof where);
  int w = snprintf(error, error_size, "%s was not found: looked in %s", file, where);
  for (int i = 0; i < o.n_refusals && w >= 0 && (size_t)w < error_size; ++i)
    w += snprintf(error + w, error_size - (size_t)w, "; %s", o.refusals[i]);
  return NULL;
}
