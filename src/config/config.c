/* ct_config: reading YAML files and KEY=VALUE overrides into the struct, by
 * walking the YAML tree against the schema table of config_schema.c.
 */
#include "ctower/config.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/config_layers.h"
#include "config/config_schema.h"
#include "config/suggest.h"
#include "config/yaml_tree.h"
#include "core/files.h"

enum { MAX_CHILDREN = 16, MAX_PATH = 256 };

static void join_path(char *out, size_t size, const char *prefix, const char *key) {
  if (prefix[0] == '\0')
    snprintf(out, size, "%s", key);
  else
    snprintf(out, size, "%s.%s", prefix, key);
}

/* ---- error reporting ----------------------------------------------------- */

typedef struct walk {
  ct_config *config;
  const char *file;     /* the file being loaded, or NULL */
  const char *override; /* the override being applied, or NULL */
  ct_status *status;
  int *given_line; /* a file: per key, the line that gave it (0: not yet), so that a
                      key given twice ("train.epochs: 1" and "train: {epochs: 2}") is
                      an error; NULL: no check */
} walk;

/* 'text' for a message, cut to its first max - 3 bytes and "..." when it is
 * longer than max, so that what follows it (the reason) is never lost. */
static const char *quoted(const char *text, size_t max, char *buf, size_t size) {
  if (strlen(text) > max)
    snprintf(buf, size, "'%.*s...' (%zu characters)", (int)(max - 3), text, strlen(text));
  else
    snprintf(buf, size, "'%s'", text);
  return buf;
}

enum { QUOTED_MAX = 60, QUOTED_SIZE = QUOTED_MAX + 40 };

static int fail(walk *w, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Records "file:line: <message>" or "override 'k=v': <message>"; returns 1. */
static int fail(walk *w, int line, const char *fmt, ...) {
  char message[CT_STATUS_MESSAGE_MAX];
  va_list args;
  va_start(args, fmt);
  vsnprintf(message, sizeof message, fmt, args);
  va_end(args);
  char echo[2 * QUOTED_SIZE];
  if (w->override)
    ct_status_set(w->status, CT_INVALID_ARGUMENT, "override %s: %s",
                  quoted(w->override, 2 * QUOTED_MAX, echo, sizeof echo), message);
  else if (line > 0)
    ct_status_set(w->status, CT_INVALID_ARGUMENT, "%s:%d: %s", w->file, line, message);
  else
    ct_status_set(w->status, CT_INVALID_ARGUMENT, "%s: %s", w->file, message);
  return 1;
}

/* What a node is, for "got ..." in messages: 'ten', a mapping, a list. */
static const char *describe(const ct_ynode *node, char *buf, size_t size) {
  if (node == NULL || ct_ynode_is_null(node)) return "an empty value";
  if (node->kind == CT_YNODE_MAP) return "a mapping";
  if (node->kind == CT_YNODE_SEQ) return "a list";
  return quoted(node->text, QUOTED_MAX, buf, size);
}

static int fail_type(walk *w, const char *path, const ct_ynode *node, int line,
                     const char *expected) {
  char buf[QUOTED_SIZE];
  return fail(w, line, "'%s' must be %s, got %s", path, expected, describe(node, buf, sizeof buf));
}

static void join_names(char *out, size_t size, char names[][64], size_t n) {
  size_t used = 0;
  out[0] = '\0';
  for (size_t i = 0; i < n && used < size; ++i)
    used += (size_t)snprintf(out + used, size - used, "%s%s", i ? ", " : "", names[i]);
}

/* "unknown key 'train.optimzer'; did you mean 'train.optimizer'? (keys under
 * 'train': ...)". path may go on past the first unknown component. */
static int fail_unknown_key(walk *w, int line, const char *path) {
  char section[MAX_PATH] = "";
  const char *rest = path; /* from the first component not known */
  for (;;) {
    size_t clen = strcspn(rest, ".");
    char candidate[MAX_PATH];
    snprintf(candidate, sizeof candidate, "%.*s", (int)(rest - path + clen), path);
    if (rest[clen] == '\0' || !ct_config_is_section(candidate)) break;
    if (ct_config_find_field(candidate) != NULL) break;
    snprintf(section, sizeof section, "%s", candidate);
    rest += clen + 1;
  }
  char key[64];
  const size_t klen = strcspn(rest, ".");
  snprintf(key, sizeof key, "%.*s", (int)klen, rest);
  const char *tail = rest + klen; /* "" or ".more.keys" */

  char known[MAX_PATH];
  join_path(known, sizeof known, section, key);
  const ct_config_field *leaf = ct_config_find_field(known);
  if (leaf != NULL && *tail != '\0')
    return fail(w, line, "unknown key '%s': '%s' takes a single value, not keys", path, known);

  char children[MAX_CHILDREN][64];
  const size_t n = ct_config_section_children(section, children, MAX_CHILDREN);
  const char *names[MAX_CHILDREN];
  for (size_t i = 0; i < n; ++i) names[i] = children[i];

  char suggestion[MAX_PATH] = "";
  int best = ct_closest_name(key, names, n);
  if (best >= 0) {
    char fixed[MAX_PATH];
    join_path(fixed, sizeof fixed, section, names[best]);
    snprintf(suggestion, sizeof suggestion, "%s%s", fixed, tail);
    if (*tail != '\0' && ct_config_find_field(suggestion) == NULL &&
        !ct_config_is_section(suggestion))
      snprintf(suggestion, sizeof suggestion, "%s", fixed);
  } else {
    /* The right key in the wrong section: "train.batch_size". */
    char wanted[MAX_PATH];
    snprintf(wanted, sizeof wanted, ".%s%s", key, tail);
    const size_t wlen = strlen(wanted);
    for (size_t i = 0; i < ct_config_n_fields && suggestion[0] == '\0'; ++i) {
      const char *p = ct_config_fields[i].path;
      const size_t plen = strlen(p);
      if (plen > wlen && strcmp(p + plen - wlen, wanted) == 0)
        snprintf(suggestion, sizeof suggestion, "%s", p);
    }
  }

  char list[512];
  join_names(list, sizeof list, children, n);
  char hint[MAX_PATH + 32] = "";
  if (suggestion[0] != '\0') snprintf(hint, sizeof hint, "; did you mean '%s'?", suggestion);
  if (section[0] == '\0')
    return fail(w, line, "unknown key '%s'%s (top-level keys: %s)", path, hint, list);
  return fail(w, line, "unknown key '%s'%s (keys under '%s': %s)", path, hint, section, list);
}

/* ---- scalars ------------------------------------------------------------- */

/* The scalar's text, or NULL (after reporting) when node is not a scalar. */
static const char *scalar_text(walk *w, const char *path, const ct_ynode *node, int line,
                               const char *expected) {
  if (node->kind != CT_YNODE_SCALAR || ct_ynode_is_null(node)) {
    fail_type(w, path, node, line, expected);
    return NULL;
  }
  return node->text;
}

static int parse_int(walk *w, const char *path, const ct_ynode *node, int line, int64_t min,
                     int64_t max, int64_t *out) {
  const char *text = scalar_text(w, path, node, line, "an integer");
  if (text == NULL) return 1;
  char *end = NULL;
  errno = 0;
  long long v = strtoll(text, &end, 10);
  if (end == text || *end != '\0' || text[0] == ' ' || text[0] == '\t')
    return fail_type(w, path, node, line, "an integer");
  char got[QUOTED_SIZE];
  quoted(text, QUOTED_MAX, got, sizeof got);
  if (errno == ERANGE)
    return fail(w, line, "'%s' must be a 64-bit integer, got %s which is too large", path, got);
  if (v < min) return fail(w, line, "'%s' must be >= %lld, got %s", path, (long long)min, got);
  if (v > max) return fail(w, line, "'%s' must be <= %lld, got %s", path, (long long)max, got);
  *out = v;
  return 0;
}

static void describe_range(const ct_config_field *f, char *out, size_t size) {
  const char open = (f->flags & CT_FIELD_LO_OPEN) ? '(' : '[';
  const char close = (f->flags & CT_FIELD_HI_OPEN) ? ')' : ']';
  if (isinf(f->hi))
    snprintf(out, size, "%s %g", (f->flags & CT_FIELD_LO_OPEN) ? ">" : ">=", f->lo);
  else
    snprintf(out, size, "in %c%g, %g%c", open, f->lo, f->hi, close);
}

static int parse_float(walk *w, const ct_config_field *f, const ct_ynode *node, int line,
                       double *out) {
  const char *text = scalar_text(w, f->path, node, line, "a number");
  if (text == NULL) return 1;
  char *end = NULL;
  errno = 0;
  double v = strtod(text, &end);
  if (end == text || *end != '\0' || text[0] == ' ' || !isfinite(v))
    return fail_type(w, f->path, node, line, "a number");
  int below = (f->flags & CT_FIELD_LO_OPEN) ? v <= f->lo : v < f->lo;
  int above = (f->flags & CT_FIELD_HI_OPEN) ? v >= f->hi : v > f->hi;
  if (below || above) {
    char range[64];
    describe_range(f, range, sizeof range);
    char got[QUOTED_SIZE];
    return fail(w, line, "'%s' must be %s, got %s", f->path, range,
                quoted(text, QUOTED_MAX, got, sizeof got));
  }
  *out = v;
  return 0;
}

static int parse_bool(walk *w, const char *path, const ct_ynode *node, int line, int *out) {
  const char *text = scalar_text(w, path, node, line, "true or false");
  if (text == NULL) return 1;
  if (strcasecmp(text, "true") == 0 || strcasecmp(text, "yes") == 0) {
    *out = 1;
    return 0;
  }
  if (strcasecmp(text, "false") == 0 || strcasecmp(text, "no") == 0) {
    *out = 0;
    return 0;
  }
  return fail_type(w, path, node, line, "true or false");
}

/* "" or numbers separated by single commas: "0", "1,0". */
static int valid_gpu_ids(const char *text) {
  if (text[0] == '\0') return 1;
  const char *p = text;
  for (;;) {
    if (*p < '0' || *p > '9') return 0;
    while (*p >= '0' && *p <= '9') ++p;
    if (*p == '\0') return 1;
    if (*p != ',') return 0;
    ++p;
  }
}

/* "'path' must be one of a, b, c, got 'x'<more>" unless text is one of allowed. */
static int check_one_of(walk *w, int line, const char *path, const char *const *allowed,
                        const char *text, const char *more) {
  for (const char *const *a = allowed; *a; ++a)
    if (strcmp(*a, text) == 0) return 0;
  char list[256];
  size_t used = 0;
  list[0] = '\0';
  for (const char *const *a = allowed; *a && used < sizeof list; ++a)
    used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", a == allowed ? "" : ", ", *a);
  char got[QUOTED_SIZE];
  return fail(w, line, "'%s' must be one of %s, got %s%s", path, list,
              quoted(text, QUOTED_MAX, got, sizeof got), more);
}

/* Checks a string value for f and copies it into out[size]. */
static int parse_string(walk *w, const ct_config_field *f, const char *path, const ct_ynode *node,
                        int line, char *out, size_t size) {
  const char *expected =
      (f->flags & CT_FIELD_DEVICE) ? "a device name such as /cpu:0 or /gpu:1" : "a string";
  if (node->kind != CT_YNODE_SCALAR) return fail_type(w, path, node, line, expected);
  const char *text = ct_ynode_is_null(node) ? "" : node->text;
  if (strlen(text) != (ct_ynode_is_null(node) ? 0 : node->text_len))
    return fail(w, line, "'%s' must not contain a NUL character", path);
  if (f->allowed != NULL && check_one_of(w, line, path, f->allowed, text, "")) return 1;
  if ((f->flags & CT_FIELD_DEVICE) && text[0] != '/')
    return fail_type(w, path, node, line, expected);
  if ((f->flags & CT_FIELD_NONEMPTY) && text[0] == '\0')
    return fail(w, line, "'%s' is empty; give it a value (the default is %s)", path, f->def);
  if ((f->flags & CT_FIELD_GPU_IDS) && !valid_gpu_ids(text))
    return fail_type(w, path, node, line, "GPU ids separated by commas, such as \"1,0\"");
  if (strlen(text) >= size)
    return fail(w, line, "'%s' is too long: at most %zu characters, got %zu", path, size - 1,
                strlen(text));
  memset(out, 0, size); /* canonical bytes: equal configs compare equal with memcmp */
  memcpy(out, text, strlen(text));
  return 0;
}

/* ---- applying a node to a key --------------------------------------------- */

static int apply_node(walk *w, const char *path, const ct_ynode *node, int line);

static int apply_kindmap(walk *w, const ct_config_field *f, const ct_ynode *node, int line) {
  char *base = (char *)w->config;
  if (node->kind != CT_YNODE_MAP && !ct_ynode_is_null(node))
    return fail_type(w, f->path, node, line, "a mapping of device types such as {CPU: 1, GPU: 2}");
  int given_line[2] = {0, 0}; /* CPU, GPU: where each was given */
  for (size_t i = 0; node->kind == CT_YNODE_MAP && i < node->n; ++i) {
    const ct_ynode *key = node->keys[i];
    const int is_cpu = strcasecmp(key->text, "cpu") == 0;
    const int is_gpu = strcasecmp(key->text, "gpu") == 0;
    if (!is_cpu && !is_gpu)
      return fail(w, key->line, "'%s' has no device type '%s'; the types are CPU and GPU", f->path,
                  key->text);
    if (given_line[is_gpu])
      return fail(w, key->line, "'%s' gives %s twice (as '%s', and before on line %d); keep one",
                  f->path, is_cpu ? "CPU" : "GPU", key->text, given_line[is_gpu]);
    given_line[is_gpu] = key->line > 0 ? key->line : 1;
    char path[MAX_PATH];
    snprintf(path, sizeof path, "%s.%s", f->path, is_cpu ? "CPU" : "GPU");
    int64_t v = 0;
    if (parse_int(w, path, node->items[i], key->line, is_cpu ? f->imin : f->imin2, f->imax, &v))
      return 1;
    memcpy(base + (is_cpu ? f->offset : f->offset2), &v, sizeof v);
  }
  return 0;
}

static int apply_list(walk *w, const ct_config_field *f, const ct_ynode *node, int line) {
  char *base = (char *)w->config;
  const char *expected = f->type == CT_FIELD_STR_LIST ? "a list of device names such as "
                                                        "[/cpu:0, /gpu:0]"
                         : f->type == CT_FIELD_FLOAT_LIST
                             ? "a list of numbers such as [0.2, 1.8]"
                             : "a list of integers such as [4096, 4096]";
  if (node->kind != CT_YNODE_SEQ && !ct_ynode_is_null(node))
    return fail_type(w, f->path, node, line, expected);
  const size_t n = node->kind == CT_YNODE_SEQ ? node->n : 0;
  if (n > f->cap)
    return fail(w, line, "'%s' holds at most %zu entries, got %zu", f->path, f->cap, n);
  if ((f->flags & CT_FIELD_ALL) && n != f->cap)
    return fail(w, line, "'%s' needs exactly %zu entries, got %zu", f->path, f->cap, n);
  memset(base + f->offset, 0, f->cap * (f->type == CT_FIELD_STR_LIST ? f->size : sizeof(int64_t)));
  for (size_t i = 0; i < n; ++i) {
    const ct_ynode *item = node->items[i];
    char path[MAX_PATH];
    snprintf(path, sizeof path, "%s[%zu]", f->path, i);
    if (f->type == CT_FIELD_STR_LIST) {
      if (item->kind != CT_YNODE_SCALAR || ct_ynode_is_null(item))
        return fail_type(w, path, item, item->line, "a device name such as /cpu:0 or /gpu:1");
      if (parse_string(w, f, path, item, item->line, base + f->offset + i * f->size, f->size))
        return 1;
    } else if (f->type == CT_FIELD_FLOAT_LIST) {
      double v = 0, before = 0;
      if (parse_float(w, f, item, item->line, &v)) return 1;
      if (i > 0) memcpy(&before, base + f->offset + (i - 1) * sizeof v, sizeof before);
      if ((f->flags & CT_FIELD_NONDECREASING) && i > 0 && v < before)
        return fail(w, item->line, "'%s' must not decrease, but %g follows %g", f->path, v, before);
      memcpy(base + f->offset + i * sizeof v, &v, sizeof v);
    } else {
      int64_t v = 0;
      if (parse_int(w, path, item, item->line, f->imin, f->imax, &v)) return 1;
      int64_t before = 0;
      if (i > 0) memcpy(&before, base + f->offset + (i - 1) * sizeof v, sizeof before);
      if ((f->flags & CT_FIELD_INCREASING) && i > 0 && v <= before)
        return fail(w, item->line, "'%s' must increase, but %lld follows %lld", f->path,
                    (long long)v, (long long)before);
      memcpy(base + f->offset + i * sizeof v, &v, sizeof v);
    }
  }
  const int count = (int)n;
  memcpy(base + f->offset2, &count, sizeof count);
  return 0;
}

static int apply_field(walk *w, const ct_config_field *f, const ct_ynode *node, int line) {
  char *at = (char *)w->config + f->offset;
  if (w->given_line) {
    int *given = &w->given_line[f - ct_config_fields];
    if (*given)
      return fail(w, line, "'%s' is given twice (first on line %d); keep one", f->path, *given);
    *given = line > 0 ? line : 1;
  }
  switch (f->type) {
    case CT_FIELD_STR:
      return parse_string(w, f, f->path, node, line, at, f->size);
    case CT_FIELD_INT: {
      int64_t v = 0;
      if (parse_int(w, f->path, node, line, f->imin, f->imax, &v)) return 1;
      memcpy(at, &v, sizeof v);
      return 0;
    }
    case CT_FIELD_FLOAT: {
      double v = 0;
      if (parse_float(w, f, node, line, &v)) return 1;
      memcpy(at, &v, sizeof v);
      return 0;
    }
    case CT_FIELD_BOOL: {
      int v = 0;
      if (parse_bool(w, f->path, node, line, &v)) return 1;
      memcpy(at, &v, sizeof v);
      return 0;
    }
    case CT_FIELD_KINDMAP:
      return apply_kindmap(w, f, node, line);
    case CT_FIELD_STR_LIST:
    case CT_FIELD_INT_LIST:
    case CT_FIELD_FLOAT_LIST:
      return apply_list(w, f, node, line);
    case CT_FIELD_LAYERS: {
      char message[CT_STATUS_MESSAGE_MAX / 2];
      int at_line = 0;
      if (ct_config_layers_parse(node, (ct_layer_list *)(void *)at, message, sizeof message,
                                 &at_line))
        return fail(w, at_line > 0 ? at_line : line, "%s", message);
      return 0;
    }
  }
  return fail(w, line, "internal error: key '%s' has no type", f->path);
}

static int apply_section(walk *w, const char *section, const ct_ynode *node, int line) {
  if (ct_ynode_is_null(node)) return 0; /* "train:" with everything commented out */
  if (node->kind != CT_YNODE_MAP) {
    char children[MAX_CHILDREN][64], list[512], buf[QUOTED_SIZE];
    join_names(list, sizeof list, children,
               ct_config_section_children(section, children, MAX_CHILDREN));
    if (section[0] == '\0')
      return fail(w, line, "a config must be a mapping of sections (%s), got %s", list,
                  describe(node, buf, sizeof buf));
    return fail(w, line, "'%s' must be a mapping of keys (%s), got %s", section, list,
                describe(node, buf, sizeof buf));
  }
  for (size_t i = 0; i < node->n; ++i) {
    const ct_ynode *key = node->keys[i];
    for (size_t j = 0; j < i; ++j) {
      if (strcmp(node->keys[j]->text, key->text) == 0) {
        char path[MAX_PATH];
        join_path(path, sizeof path, section, key->text);
        return fail(w, key->line, "key '%s' appears twice (first on line %d); keep one", path,
                    node->keys[j]->line);
      }
    }
    char path[MAX_PATH];
    join_path(path, sizeof path, section, key->text);
    /* A dotted key ("optimizer.name: adam") works as it does in an override. */
    if (key->text[0] == '\0' || strlen(path) + 1 >= MAX_PATH)
      return fail_unknown_key(w, key->line, path);
    if (apply_node(w, path, node->items[i], key->line) != 0) return 1;
  }
  return 0;
}

/* Applies node to the key or section at path; line is where it was given. */
static int apply_node(walk *w, const char *path, const ct_ynode *node, int line) {
  const ct_config_field *f = ct_config_find_field(path);
  if (f != NULL) return apply_field(w, f, node, line);
  if (ct_config_is_section(path)) return apply_section(w, path, node, line);
  return fail_unknown_key(w, line, path);
}

/* model.name names a zoo model, unless model.layers or model.library give
 * the model (then it is that model's name). line: where model.name was
 * given, 0 when unknown. A file is checked when it is loaded; overrides,
 * which may change these keys one at a time, once at the end
 * (ct_config_check). */
static int check_model(walk *w, int line) {
  const ct_config *c = w->config;
  if (c->model.layers.n > 0 && c->model.library[0] != '\0')
    return fail(w, line, "'model.layers' and 'model.library' both give the model; keep one");
  if (c->model.layers.n > 0 || c->model.library[0] != '\0') return 0;
  size_t n = 0;
  while (ct_config_zoo_models[n]) ++n;
  const int best = ct_closest_name(c->model.name, ct_config_zoo_models, n);
  char more[160] = "; or";
  if (best >= 0) snprintf(more, sizeof more, "; did you mean '%s'? Or", ct_config_zoo_models[best]);
  strncat(more, " describe your own model with model.layers or model.library",
          sizeof more - strlen(more) - 1);
  return check_one_of(w, line, "model.name", ct_config_zoo_models, c->model.name, more);
}

/* ---- public API ----------------------------------------------------------- */

void ct_config_defaults(ct_config *config) {
  memset(config, 0, sizeof *config);
  ct_status status = CT_STATUS_INIT;
  walk w = {.config = config, .file = "defaults", .status = &status};
  for (size_t i = 0; i < ct_config_n_fields; ++i) {
    ct_ynode *node = NULL;
    ct_yaml_error err;
    int rc =
        ct_yaml_parse_string(ct_config_fields[i].def, strlen(ct_config_fields[i].def), &node, &err);
    if (rc == 0 && node != NULL) rc = apply_field(&w, &ct_config_fields[i], node, 0);
    ct_ynode_free(node);
    (void)rc;
    assert(rc == 0 && "a default in ct_config_fields does not parse");
  }
}

static const ct_file_role k_config_role = {"config file", "give the path of a YAML file"};

int ct_config_load(ct_config *config, const char *path, ct_status *status) {
  FILE *file = ct_file_fopen_read(path, &k_config_role, status);
  if (file == NULL) return 1;
  ct_ynode *root = NULL;
  ct_yaml_error err;
  int rc = ct_yaml_parse_file(file, &root, &err);
  fclose(file);
  if (rc != 0) {
    if (err.line > 0)
      ct_status_set(status, CT_INVALID_ARGUMENT, "%s:%d:%d: malformed YAML: %s", path, err.line,
                    err.column, err.message);
    else
      ct_status_set(status, CT_INVALID_ARGUMENT, "%s: malformed YAML: %s", path, err.message);
    return 1;
  }
  /* Work on a copy so that a failed load leaves config as it was. */
  ct_config *work = malloc(sizeof *work);
  if (work == NULL) {
    ct_ynode_free(root);
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of memory reading config file '%s'", path);
    return 1;
  }
  *work = *config;
  walk w = {.config = work, .file = path, .status = status};
  w.given_line = calloc(ct_config_n_fields, sizeof *w.given_line);
  rc = root == NULL || w.given_line == NULL ? 0 : apply_section(&w, "", root, root->line);
  if (rc == 0 && w.given_line != NULL)
    rc = check_model(&w, w.given_line[ct_config_find_field("model.name") - ct_config_fields]);
  if (root != NULL && w.given_line == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of memory reading config file '%s'", path);
    rc = 1;
  }
  free(w.given_line);
  ct_ynode_free(root);
  if (rc == 0) {
    memset(work->source, 0, sizeof work->source);
    snprintf(work->source, sizeof work->source, "%s", path);
    *config = *work;
  }
  free(work);
  return rc;
}

int ct_config_apply_override(ct_config *config, const char *assignment, ct_status *status) {
  walk w = {.file = NULL, .override = assignment, .status = status};
  const char *eq = strchr(assignment, '=');
  if (eq == NULL) return fail(&w, 0, "expected KEY=VALUE, such as train.epochs=5");
  const char *kb = assignment, *ke = eq;
  while (kb < ke && (*kb == ' ' || *kb == '\t')) ++kb;
  while (ke > kb && (ke[-1] == ' ' || ke[-1] == '\t')) --ke;
  if (ke == kb) return fail(&w, 0, "the key before '=' is empty; expected KEY=VALUE");
  char path[MAX_PATH];
  if ((size_t)(ke - kb) >= sizeof path) return fail(&w, 0, "the key is too long");
  memcpy(path, kb, (size_t)(ke - kb));
  path[ke - kb] = '\0';

  ct_ynode *value = NULL;
  ct_yaml_error err;
  if (ct_yaml_parse_string(eq + 1, strlen(eq + 1), &value, &err) != 0) {
    if (err.line == 1) /* past the end otherwise: the value stops too early */
      return fail(&w, 0, "malformed YAML value at column %d: %s", err.column, err.message);
    return fail(&w, 0, "malformed YAML value: %s", err.message);
  }
  if (value == NULL) { /* "train.checkpoint=": the empty (null) value */
    ct_yaml_error ignored;
    if (ct_yaml_parse_string("~", 1, &value, &ignored) != 0 || value == NULL)
      return fail(&w, 0, "out of memory");
  }

  ct_config *work = malloc(sizeof *work);
  if (work == NULL) {
    ct_ynode_free(value);
    return fail(&w, 0, "out of memory");
  }
  *work = *config;
  w.config = work;

  int rc;
  char parent[MAX_PATH];
  snprintf(parent, sizeof parent, "%s", path);
  char *dot = strrchr(parent, '.');
  const ct_config_field *pf = NULL;
  if (dot != NULL) {
    *dot = '\0';
    pf = ct_config_find_field(parent);
  }
  if (ct_config_find_field(path) != NULL || ct_config_is_section(path)) {
    rc = apply_node(&w, path, value, 0);
  } else if (pf != NULL && pf->type == CT_FIELD_KINDMAP) {
    /* "session.device_count.GPU=2" sets one entry of the map. */
    ct_ynode key = {
        .kind = CT_YNODE_SCALAR, .text = dot + 1, .text_len = strlen(dot + 1), .plain = 1};
    ct_ynode *keys[1] = {&key}, *items[1] = {value};
    ct_ynode map = {.kind = CT_YNODE_MAP, .n = 1, .keys = keys, .items = items};
    rc = apply_kindmap(&w, pf, &map, 0);
  } else {
    rc = fail_unknown_key(&w, 0, path);
  }
  ct_ynode_free(value);
  if (rc == 0) *config = *work;
  free(work);
  return rc;
}

int ct_config_check(const ct_config *config, ct_status *status) {
  walk w = {.config = (ct_config *)config,
            .file = config->source[0] ? config->source : "the config's overrides",
            .status = status};
  return check_model(&w, 0);
}
