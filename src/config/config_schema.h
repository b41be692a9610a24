/* The schema of ct_config: one row per config key (private to src/config).
 *
 * Each row gives a key's dotted path, its type, where it lives in ct_config,
 * its allowed values or range and its default as YAML text. Sections
 * ("train", "train.optimizer") are the path prefixes of the rows, so loading,
 * overrides, defaults, suggestions and ct_config_write all walk this one
 * table, and a new key is one new row in config_schema.c.
 */
#ifndef CTOWER_CONFIG_CONFIG_SCHEMA_H
#define CTOWER_CONFIG_CONFIG_SCHEMA_H

#include <stddef.h>
#include <stdint.h>

#include "ctower/config.h"

typedef enum ct_field_type {
  CT_FIELD_STR,      /* char[size] at offset */
  CT_FIELD_INT,      /* int64_t at offset, in [imin, imax] */
  CT_FIELD_FLOAT,    /* double at offset, in lo..hi (open ends per flags) */
  CT_FIELD_BOOL,     /* int at offset: true/false/yes/no */
  CT_FIELD_KINDMAP,  /* {CPU: n, GPU: m}: int64_t at offset (CPU) and offset2 (GPU) */
  CT_FIELD_STR_LIST, /* char[cap][size] at offset, int count at offset2 */
  CT_FIELD_INT_LIST, /* int64_t[cap] at offset, int count at offset2, each >= imin */
  CT_FIELD_FLOAT_LIST, /* double[cap] at offset, int count at offset2, each in lo..hi */
  CT_FIELD_LAYERS     /* ct_layer_list at offset (config_layers.h) */
} ct_field_type;

enum {
  CT_FIELD_LO_OPEN = 1u << 0,  /* CT_FIELD_FLOAT: lo itself is not allowed */
  CT_FIELD_HI_OPEN = 1u << 1,  /* CT_FIELD_FLOAT: hi itself is not allowed */
  CT_FIELD_DEVICE = 1u << 2,   /* CT_FIELD_STR, CT_FIELD_STR_LIST: a device name like /cpu:0 */
  CT_FIELD_GPU_IDS = 1u << 3,  /* CT_FIELD_STR: "" or GPU ids separated by commas */
  CT_FIELD_NONEMPTY = 1u << 4, /* CT_FIELD_STR: "" is not a value (it would not mean the default) */
  CT_FIELD_ALL = 1u << 5,      /* lists: exactly cap entries */
  CT_FIELD_INCREASING = 1u << 6,   /* CT_FIELD_INT_LIST: each entry above the one before */
  CT_FIELD_NONDECREASING = 1u << 7 /* CT_FIELD_FLOAT_LIST: each entry at least the one before */
};

typedef struct ct_config_field {
  const char *path; /* "train.optimizer.learning_rate" */
  ct_field_type type;
  size_t offset;              /* of the value in ct_config */
  size_t size;                /* CT_FIELD_STR: bytes; CT_FIELD_STR_LIST: bytes per entry */
  size_t offset2;             /* CT_FIELD_KINDMAP: GPU value; lists: the count */
  size_t cap;                 /* lists: most entries */
  const char *const *allowed; /* CT_FIELD_STR: the accepted names, NULL-terminated */
  int64_t imin, imax;         /* CT_FIELD_INT, CT_FIELD_INT_LIST; CT_FIELD_KINDMAP: CPU bounds */
  int64_t imin2;              /* CT_FIELD_KINDMAP: GPU lower bound */
  double lo, hi;              /* CT_FIELD_FLOAT */
  unsigned flags;
  const char *def; /* the default, as YAML */
} ct_config_field;

/* Every key, grouped by section in the order ct_config_write prints them. */
extern const ct_config_field ct_config_fields[];
extern const size_t ct_config_n_fields;

/* The zoo's models, NULL-terminated: model.name without layers or a library. */
extern const char *const ct_config_zoo_models[];

/* The row for a full dotted path, or NULL. */
const ct_config_field *ct_config_find_field(const char *path);

/* Whether path has keys under it ("" is the top level). */
int ct_config_is_section(const char *path);

/* Copies the key names directly under section ("" for the top level) into
 * names, in table order, at most max of them; returns how many. */
size_t ct_config_section_children(const char *section, char names[][64], size_t max);

#endif
