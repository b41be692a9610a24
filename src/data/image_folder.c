/* Image folders: root/train/<class>/<image> and root/test/<class>/<image>,
 * listed when opened, each image read and decoded when asked for. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/files.h"
#include "data/dataset_internal.h"

typedef struct folder_state {
  char *split;     /* root/train or root/test */
  char **files;    /* n paths "class/file" under split */
  int32_t *labels; /* n labels */
  int64_t n, capacity;
} folder_state;

static void free_folder_state(void *p) {
  folder_state *s = p;
  if (s == NULL) return;
  ct_free_names(s->files, s->n);
  free(s->labels);
  free(s->split);
  free(s);
}

static int read_folder_example(const ct_dataset *ds, int64_t index, uint8_t *pixels, int32_t *label,
                               ct_status *status) {
  const folder_state *s = ds->state;
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", s->split, s->files[index]);
  size_t size;
  static const ct_file_role role = {"image",
                                    "was it removed or replaced after the dataset was opened?"};
  unsigned char *data = ct_file_read_all(path, &role, &size, status);
  if (data == NULL) return 1;
  char where[4100];
  snprintf(where, sizeof where, "'%s'", path);
  const int failed = ct_image_decode(data, size, where, ds->h, ds->w, ds->c, pixels, status);
  free(data);
  *label = s->labels[index];
  return failed;
}

static const ct_dataset_source k_folder_source = {read_folder_example, free_folder_state, 0};

static int is_image_name(const char *name) {
  const char *dot = strrchr(name, '.');
  return dot && (strcasecmp(dot, ".jpg") == 0 || strcasecmp(dot, ".jpeg") == 0 ||
                 strcasecmp(dot, ".png") == 0);
}

static int add_file(folder_state *s, const char *class_name, const char *file, int32_t label) {
  if (s->n == s->capacity) {
    s->capacity = s->capacity ? 2 * s->capacity : 1024;
    char **files = realloc(s->files, (size_t)s->capacity * sizeof *files);
    if (files) s->files = files;
    int32_t *labels = realloc(s->labels, (size_t)s->capacity * sizeof *labels);
    if (labels) s->labels = labels;
    if (!files || !labels) return 1;
  }
  const size_t len = strlen(class_name) + strlen(file) + 2;
  if ((s->files[s->n] = malloc(len)) == NULL) return 1;
  snprintf(s->files[s->n], len, "%s/%s", class_name, file);
  s->labels[s->n++] = label;
  return 0;
}

static int find_class(char **classes, int64_t count, const char *name) {
  for (int64_t k = 0; k < count; ++k)
    if (strcmp(classes[k], name) == 0) return (int)k;
  return -1;
}

/* Lists the images of one class folder into s: a file that is no image, or
 * a folder without one, fails (or is skipped with a warning). */
static int list_class(ct_dataset *ds, folder_state *s, const char *class_name, int label,
                      ct_status *status) {
  char folder[4096];
  snprintf(folder, sizeof folder, "%s/%s", s->split, class_name);
  char **files = NULL;
  const int64_t count = ct_list_folder(folder, 0, &files, status);
  if (count < 0) return 1;
  int failed = 0;
  int64_t images = 0;
  for (int64_t i = 0; !failed && i < count; ++i) {
    if (is_image_name(files[i])) {
      ++images;
      if (add_file(s, class_name, files[i], label)) {
        ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory listing '%s'", folder);
        failed = 1;
      }
    } else if (ds->skip_bad) {
      ds->skipped++;
      ct_dataset_warn(ds, "'%s/%s' is not a .jpg, .jpeg or .png image; skipped it", folder,
                      files[i]);
    } else {
      ct_status_set(status, CT_DATA_LOSS,
                    "'%s/%s' is not a .jpg, .jpeg or .png image; move it out of the class "
                    "folder or set dataset.skip_bad_examples: true",
                    folder, files[i]);
      failed = 1;
    }
  }
  ct_free_names(files, count);
  if (!failed && images == 0) {
    if (ds->skip_bad) {
      ct_dataset_warn(ds, "the class folder '%s' holds no image", folder);
    } else {
      ct_status_set(status, CT_DATA_LOSS,
                    "the class folder '%s' holds no .jpg, .jpeg or .png image; add images, "
                    "remove the folder or set dataset.skip_bad_examples: true",
                    folder);
      failed = 1;
    }
  }
  return failed;
}

static int missing_split(const char *dir, const char *split, ct_status *status) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, split);
  if (ct_file_present(path)) return 0; /* listing it says what else is wrong */
  ct_status_set(status, CT_NOT_FOUND,
                "the folder '%s' does not exist; for dataset.name: image_folder, dataset.path "
                "must hold train/<class>/<images> and test/<class>/<images>",
                path);
  return 1;
}

ct_dataset *ct_dataset_open_image_folder(const char *dir, int train,
                                         const ct_dataset_read_options *options,
                                         ct_status *status) {
  if (ct_dataset_check_image_shape(options, "image folder", status)) return NULL;
  char path[4096];
  snprintf(path, sizeof path, "%s/train", dir);
  char **classes = NULL, **split_classes = NULL;
  if (missing_split(dir, "train", status) || missing_split(dir, train ? "train" : "test", status))
    return NULL;
  const int64_t n_classes = ct_list_folder(path, 1, &classes, status);
  if (n_classes < 0) return NULL;
  if (n_classes == 0 || n_classes > 65536) {
    ct_status_set(status, CT_DATA_LOSS,
                  n_classes ? "'%s' holds over 65536 class folders"
                            : "'%s' holds no class folder; put each class's images in "
                              "%s/<class name>/",
                  path, path);
    ct_free_names(classes, n_classes);
    return NULL;
  }
  ct_dataset *ds = ct_dataset_alloc(options, status);
  folder_state *s = ds ? calloc(1, sizeof *s) : NULL;
  int failed = s == NULL;
  if (ds && s == NULL) ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory");
  if (!failed) {
    ds->class_names = classes;
    ds->num_classes = (int)n_classes;
    ds->h = options->image_shape[0], ds->w = options->image_shape[1];
    ds->c = options->image_shape[2];
    snprintf(path, sizeof path, "%s/%s", dir, train ? "train" : "test");
    s->split = strdup(path);
    failed = s->split == NULL;
    if (failed) ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory");
  } else {
    ct_free_names(classes, n_classes);
  }
  int64_t n_split = 0;
  if (!failed && !train) n_split = ct_list_folder(path, 1, &split_classes, status);
  failed = failed || n_split < 0;
  for (int64_t i = 0; !failed && i < (train ? n_classes : n_split); ++i) {
    const char *name = train ? classes[i] : split_classes[i];
    const int label = train ? (int)i : find_class(classes, n_classes, name);
    if (label < 0) {
      ct_status_set(status, CT_NOT_FOUND,
                    "the test class '%s' (%s/%s) has no folder in %s/train, so it has no "
                    "class number; add its training images or remove it from the test split",
                    name, path, name, dir);
      failed = 1;
    } else {
      failed = list_class(ds, s, name, label, status);
    }
  }
  ct_free_names(split_classes, n_split);
  if (!failed && ds->skipped > 0)
    ct_dataset_warn(ds, "skipped %lld file(s) in '%s' that are not images", (long long)ds->skipped,
                    path);
  if (ds && (ct_dataset_set_source(ds, &k_folder_source, s, s ? s->n : 0, status) || failed)) {
    ct_dataset_free(ds);
    return NULL;
  }
  return ds;
}
