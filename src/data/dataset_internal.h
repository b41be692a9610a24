/* The layout of a dataset, shared by the files of src/data. */
#ifndef CTOWER_DATA_DATASET_INTERNAL_H
#define CTOWER_DATA_DATASET_INTERNAL_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include "ctower/data.h"

/* A source whose examples are read from their files when asked for. */
typedef struct ct_dataset_source {
  /* Decodes example `index` into h * w * c u8 pixels and its label, or
   * returns 1 with status naming the file. Called from several threads at
   * once: it reads the dataset's state and nothing else shared. */
  int (*read)(const ct_dataset *ds, int64_t index, uint8_t *pixels, int32_t *label,
              ct_status *status);
  void (*free_state)(void *state);
  int held_in_memory; /* 1: every example is in memory once read (dataset.cache adds nothing) */
} ct_dataset_source;

struct ct_dataset {
  int64_t n, h, w, c; /* examples and image shape (NHWC) */
  int num_classes;
  ct_tensor *images; /* in memory: u8, n * h * w * c bytes, example-major; else NULL */
  ct_tensor *labels; /* in memory: u8 [n], each below num_classes; else NULL */
  const ct_dataset_source *source; /* read from files: how; else NULL */
  void *state;                     /* the source's index of its files (owned) */
  char **class_names;              /* image folders: num_classes names (owned); else NULL */
  int skip_bad;                    /* dataset.skip_bad_examples */
  FILE *log;                       /* warnings */
  _Atomic int64_t skipped;         /* bad examples skipped so far */
  _Atomic unsigned char *bad;      /* lazy sources under skip_bad: n flags, 1 = known bad */
  /* dataset.cache, lazy sources: n examples' pixels and labels as read, and
   * per example 0 (not yet), 1 (being stored) or 2 (stored) */
  uint8_t *cache;
  int32_t *cache_labels;
  _Atomic unsigned char *cached;
};

/* A zeroed dataset, or NULL with RESOURCE_EXHAUSTED. */
ct_dataset *ct_dataset_alloc(const ct_dataset_read_options *options, ct_status *status);

/* Makes ds read its n examples through source from state (owned by ds from
 * now on, even on failure); under skip_bad, with a flag per example. 0, or
 * 1 with RESOURCE_EXHAUSTED. */
int ct_dataset_set_source(ct_dataset *ds, const ct_dataset_source *source, void *state, int64_t n,
                          ct_status *status);

/* Prints "ctower: warning: ..." to the dataset's log. */
void ct_dataset_warn(const ct_dataset *ds, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

/* The image shape options ask for, checked: 0, or 1 with INVALID_ARGUMENT. */
int ct_dataset_check_image_shape(const ct_dataset_read_options *options, const char *what,
                                 ct_status *status);

/* Decodes a JPEG or PNG image (which, by its first bytes) held in data into
 * pixels of h x w x c (c 1 or 3): channels converted (gray <-> RGB, alpha
 * dropped), size changed by bilinear interpolation. `where` says where the
 * image is in errors, quoted as it should read: "'train/cats/a.jpg'",
 * "'train-00000-of-00002' record 3 (byte 96)". Returns 0, or 1 with
 * DATA_LOSS saying what is wrong with it. Thread-safe. */
int ct_image_decode(const unsigned char *data, size_t size, const char *where, int64_t h, int64_t w,
                    int64_t c, uint8_t *pixels, ct_status *status);

/* Sorted names of the entries of folder dir that are folders (folders != 0)
 * or plain files, leaving out those starting with '.'. Returns the count and
 * *names (free with ct_free_names), or -1 with status naming dir. */
int64_t ct_list_folder(const char *dir, int folders, char ***names, ct_status *status);
void ct_free_names(char **names, int64_t count);

#endif
