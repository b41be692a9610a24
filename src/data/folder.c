/* Folders as the dataset readers see them: their sorted entries. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "data/dataset_internal.h"

void ct_free_names(char **names, int64_t count) {
  if (names == NULL) return;
  for (int64_t i = 0; i < count; ++i) free(names[i]);
  free(names);
}

static int compare_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b); /* bytewise: strcmp compares unsigned */
}

int64_t ct_list_folder(const char *dir, int folders, char ***out, ct_status *status) {
  DIR *d = opendir(dir);
  if (d == NULL) {
    ct_status_set(status, errno == ENOENT ? CT_NOT_FOUND : CT_UNAVAILABLE,
                  "cannot open the folder '%s' (%s)", dir, strerror(errno));
    return -1;
  }
  char **names = NULL, path[4096];
  int64_t count = 0, capacity = 0;
  struct dirent *e;
  int failed = 0;
  while (!failed && (e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (stat(path, &st) != 0 || (folders ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))) continue;
    if (count == capacity) {
      capacity = capacity ? 2 * capacity : 64;
      char **grown = realloc(names, (size_t)capacity * sizeof *names);
      if (grown == NULL) {
        failed = 1;
        break;
      }
      names = grown;
    }
    if ((names[count] = strdup(e->d_name)) == NULL)
      failed = 1;
    else
      ++count;
  }
  closedir(d);
  if (failed) {
    ct_free_names(names, count);
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory listing '%s'", dir);
    return -1;
  }
  if (count > 1) qsort(names, (size_t)count, sizeof *names, compare_names);
  *out = names;
  return count;
}
