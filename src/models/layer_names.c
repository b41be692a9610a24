/* The names of layer types, and the scope names of a layer list's
 * layers. A layer's variables are named after its scope
 * ("<name>/weights"), so two layers of one name would
 * share their variables without anyone asking: every name a list gives
 * (given, by default, to a repeat's copies, to a block's projection) is
 * checked against every other of the same list before anything is built. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctower/models.h"

static const char *const k_type_names[CT_LAYER_TYPE_COUNT] = {
    [CT_LAYER_CONV2D] = "conv2d",       [CT_LAYER_MAX_POOL] = "max_pool",
    [CT_LAYER_AVG_POOL] = "avg_pool",   [CT_LAYER_BATCH_NORM] = "batch_norm",
    [CT_LAYER_LRN] = "lrn",             [CT_LAYER_DROPOUT] = "dropout",
    [CT_LAYER_FLATTEN] = "flatten",     [CT_LAYER_DENSE] = "dense",
    [CT_LAYER_RELU] = "relu",           [CT_LAYER_GLOBAL_AVG_POOL] = "global_avg_pool",
    [CT_LAYER_RESIDUAL] = "residual"};

const char *ct_layer_type_name(ct_layer_type type) {
  return (int)type >= 0 && type < CT_LAYER_TYPE_COUNT ? k_type_names[type] : "unknown";
}

void ct_layer_spec_name(const ct_layer_spec *spec, int index, char *out, size_t size) {
  if (spec->name[0])
    snprintf(out, size, "%.*s", CT_LAYER_NAME - 1, spec->name);
  else
    snprintf(out, size, "%.20s_%d", ct_layer_type_name(spec->type), index);
}

/* A layer of a list: where it is, its spec and its name. */
typedef struct named {
  const ct_layer_spec *spec;
  int entry;                /* its index in the whole ct_layer_list */
  char where[256];          /* "model.layers[3]", "model.layers[5].layers[1]" */
  char name[CT_LAYER_NAME]; /* its own or its default */
} named;

/* The copy (2 .. repeat) of a layer named base that is called `name`, or 0
 * when none is: copies are "<base>_2", "<base>_3", ... */
static int copy_called(const char *name, const char *base, int repeat) {
  const size_t n = strlen(base);
  if (strncmp(name, base, n) != 0 || name[n] != '_' || name[n + 1] < '1' || name[n + 1] > '9')
    return 0;
  char *end = NULL;
  const long copy = strtol(name + n + 1, &end, 10);
  return *end == '\0' && copy >= 2 && copy <= repeat ? (int)copy : 0;
}

/* "model.layers[0] (dense 'd', repeat 2)"; "(dense, by default 'dense_0')". */
static void describe(const named *l, char *out, size_t size) {
  const char *type = ct_layer_type_name(l->spec->type);
  int used = snprintf(out, size, l->spec->name[0] ? "%s (%s '%s'" : "%s (%s, by default '%s'",
                      l->where, type, l->name);
  if (used >= 0 && (size_t)used < size && l->spec->repeat > 1)
    used += snprintf(out + used, size - (size_t)used, ", repeat %d", l->spec->repeat);
  if (used >= 0 && (size_t)used < size) snprintf(out + used, size - (size_t)used, ")");
}

/* INVALID_ARGUMENT: `named_as` has the name of `owner` or of its copy
 * (copy > 0); *entry: the later of the two, whose line a config names. */
static int clash(const named *named_as, const named *owner, int copy, int *entry,
                 ct_status *status) {
  char a[320], b[320], which[32] = "";
  describe(named_as, a, sizeof a);
  describe(owner, b, sizeof b);
  if (copy) snprintf(which, sizeof which, "copy %d of ", copy);
  ct_status_set(status, CT_INVALID_ARGUMENT,
                "%s has the name of %s%s, so both would build in scope '%s' and share the "
                "variables under it ('%s/...') by accident; rename one of them",
                a, which, b, named_as->name, named_as->name);
  if (entry) *entry = named_as->entry > owner->entry ? named_as->entry : owner->entry;
  return 1;
}

/* Whether two layers of one list (a before b) give a name in common. */
static int names_clash(const named *a, const named *b, int *entry, ct_status *status) {
  if (strcmp(a->name, b->name) == 0) return clash(b, a, 0, entry, status);
  int copy = copy_called(b->name, a->name, a->spec->repeat);
  if (copy) return clash(b, a, copy, entry, status);
  copy = copy_called(a->name, b->name, b->spec->repeat);
  if (copy) return clash(a, b, copy, entry, status);
  return 0;
}

static int check_list(const ct_layer_list *layers, int first, int n, const char *where, int *entry,
                      ct_status *status);

/* A residual block's branch: its own list, which also holds the block's
 * projection shortcut, named "shortcut". */
static int check_block(const ct_layer_list *layers, const named *block, int *entry,
                       ct_status *status) {
  const int first = block->entry + 1, n = block->spec->n_inner;
  char where[216];
  snprintf(where, sizeof where, "%.200s.layers", block->where);
  for (int i = first, index = 0; block->spec->projection && i < first + n; ++index) {
    named inner = {.spec = &layers->layers[i], .entry = i};
    ct_layer_spec_name(inner.spec, index, inner.name, sizeof inner.name);
    snprintf(inner.where, sizeof inner.where, "%.220s[%d]", where, index);
    if (strcmp(inner.name, "shortcut") == 0) {
      char a[320], b[320];
      describe(&inner, a, sizeof a);
      describe(block, b, sizeof b);
      ct_status_set(status, CT_INVALID_ARGUMENT,
                    "%s has the name of the projection shortcut of %s, so both would build in "
                    "scope 'shortcut' and share the variables under it ('shortcut/...') by "
                    "accident; rename it",
                    a, b);
      if (entry) *entry = i;
      return 1;
    }
    i += 1 + (inner.spec->type == CT_LAYER_RESIDUAL ? inner.spec->n_inner : 0);
  }
  return check_list(layers, first, n, where, entry, status);
}

/* The n entries of layers from `first` (a block's entries count with it),
 * their list's names at `where` ("model.layers"). */
static int check_list(const ct_layer_list *layers, int first, int n, const char *where, int *entry,
                      ct_status *status) {
  named items[CT_MAX_LAYERS];
  int count = 0;
  for (int i = first; i < first + n && i < layers->n; ++count) {
    named *l = &items[count];
    *l = (named){.spec = &layers->layers[i], .entry = i};
    ct_layer_spec_name(l->spec, count, l->name, sizeof l->name);
    snprintf(l->where, sizeof l->where, "%.220s[%d]", where, count);
    for (int k = 0; k < count; ++k)
      if (names_clash(&items[k], l, entry, status)) return 1;
    const int inner = l->spec->type == CT_LAYER_RESIDUAL ? l->spec->n_inner : 0;
    if (inner > 0 && inner < first + n - i && check_block(layers, l, entry, status)) return 1;
    i += 1 + (inner > 0 ? inner : 0);
  }
  return 0;
}

int ct_layer_list_check_names(const ct_layer_list *layers, const char *prefix, int *entry,
                              ct_status *status) {
  char where[64];
  snprintf(where, sizeof where, "%.50slayers", prefix ? prefix : "");
  return check_list(layers, 0, layers->n, where, entry, status);
}
