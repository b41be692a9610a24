/* What a layer list must be before it is built, wherever it comes from: a
 * config's model.layers, a model library's exports, a C program's own
 * list. A library's list is the user's memory, read as it is: a count,
 * a repeat or a block size nobody set, a name that fills its field with no
 * NUL. Each is refused here, naming the layer, before anything reads past
 * a field or builds a million copies of a layer. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ctower/models.h"

/* Where a layer is ("model.layers[3]") and what it is ("dense 'fc'"). */
typedef struct entry_at {
  const ct_layer_spec *spec;
  char where[256];
  char name[CT_LAYER_NAME];
} entry_at;

static int refuse(const entry_at *at, ct_status *status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* INVALID_ARGUMENT "<where> (<type> '<name>'): <message>" (the type alone
 * when the name cannot be read); returns 1. */
static int refuse(const entry_at *at, ct_status *status, const char *fmt, ...) {
  char message[400];
  va_list args;
  va_start(args, fmt);
  vsnprintf(message, sizeof message, fmt, args);
  va_end(args);
  const char *type = ct_layer_type_name(at->spec->type);
  if (at->name[0])
    ct_status_set(status, CT_INVALID_ARGUMENT, "%s (%s '%s'): %s", at->where, type, at->name,
                  message);
  else
    ct_status_set(status, CT_INVALID_ARGUMENT, "%s (%s): %s", at->where, type, message);
  return 1;
}

/* A fixed-size text field of a spec: whether it ends within its bytes. */
static int terminated(const char field[CT_LAYER_NAME]) {
  return memchr(field, '\0', CT_LAYER_NAME) != NULL;
}

/* The fields of one spec, each on its own. */
static int check_fields(entry_at *at, int index, ct_status *status) {
  const ct_layer_spec *s = at->spec;
  if (terminated(s->name)) ct_layer_spec_name(s, index, at->name, sizeof at->name);
  const char *unended = !terminated(s->name) ? "name" : !terminated(s->device) ? "device" : NULL;
  if (unended)
    return refuse(at, status,
                  "its %s fills all %d bytes of its field with no terminating NUL; a %s is at "
                  "most %d characters and a NUL (set it with snprintf, or leave it \"\")",
                  unended, CT_LAYER_NAME, unended, CT_LAYER_NAME - 1);
  if ((int)s->type < 0 || s->type >= CT_LAYER_TYPE_COUNT)
    return refuse(at, status, "unknown layer type %d; use one of ct_layer_type", (int)s->type);
  if (s->repeat < 1 || s->repeat > CT_LAYER_MAX_REPEAT)
    return refuse(at, status, "repeat must lie in 1 ... %d, got %d", CT_LAYER_MAX_REPEAT,
                  s->repeat);
  const int windowed = s->type == CT_LAYER_CONV2D || s->type == CT_LAYER_MAX_POOL ||
                       s->type == CT_LAYER_AVG_POOL;
  const int weighted = s->type == CT_LAYER_CONV2D || s->type == CT_LAYER_DENSE;
  const char *bad = weighted && s->units < 1                                         ? "filters or units"
                    : windowed && s->kernel < 1                                      ? "kernel or size"
                    : windowed && s->stride < 1                                      ? "stride"
                    : s->type == CT_LAYER_DROPOUT && !(s->rate >= 0 && s->rate < 1) ? "rate"
                                                                                     : NULL;
  if (bad)
    return refuse(at, status, "its %s is out of range: filters, units, kernel, size and stride "
                  "are at least 1, a rate lies in [0, 1)", bad);
  return 0;
}

/* The n entries of layers from `first` (a block's entries count with it),
 * at `where` ("model.layers"); *entry: the index of the one at fault. */
static int check_entries(const ct_layer_list *layers, int first, int n, const char *where,
                         int *entry, ct_status *status) {
  for (int i = first, index = 0; i < first + n; ++index) {
    entry_at at = {.spec = &layers->layers[i]};
    snprintf(at.where, sizeof at.where, "%.220s[%d]", where, index);
    if (entry) *entry = i;
    if (check_fields(&at, index, status)) return 1;
    const int inner = at.spec->type == CT_LAYER_RESIDUAL ? at.spec->n_inner : 0;
    if (inner < 0 || inner >= first + n - i)
      return refuse(&at, status, "its block has %d entries, but the list holds %d after it",
                    inner, first + n - i - 1);
    char branch[240];
    snprintf(branch, sizeof branch, "%.225s.layers", at.where);
    if (inner > 0 && check_entries(layers, i + 1, inner, branch, entry, status)) return 1;
    i += 1 + inner;
  }
  return 0;
}

int ct_layer_list_check(const ct_layer_list *layers, const char *prefix, int *entry,
                        ct_status *status) {
  if (layers == NULL || layers->n < 1 || layers->n > CT_MAX_LAYERS) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "a layer list holds 1 to %d layers (CT_MAX_LAYERS), got %d", CT_MAX_LAYERS,
                  layers ? layers->n : 0);
    if (entry) *entry = 0;
    return 1;
  }
  char where[64];
  snprintf(where, sizeof where, "%.50slayers", prefix ? prefix : "");
  if (check_entries(layers, 0, layers->n, where, entry, status)) return 1;
  return ct_layer_list_check_names(layers, prefix, entry, status);
}
