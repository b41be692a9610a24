/* model.layers: see config_layers.h. One table lists every parameter, the
 * layer types that take it, its range and where it lives in
 * ct_layer_spec; parsing, suggestions and writing walk it. */
#include "config/config_layers.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "config/suggest.h"
#include "config/yaml_write.h"
#include "ctower/device_name.h"

#define BIT(type) (1u << (type))
#define POOLS (BIT(CT_LAYER_MAX_POOL) | BIT(CT_LAYER_AVG_POOL))
#define WEIGHTED (BIT(CT_LAYER_CONV2D) | BIT(CT_LAYER_DENSE))
#define ALL ((1u << CT_LAYER_TYPE_COUNT) - 1)
#define OFF(member) offsetof(ct_layer_spec, member)

typedef enum param_kind {
  P_NAME,       /* char[CT_LAYER_NAME] */
  P_DEVICE,     /* char[CT_LAYER_NAME], "" or a device name */
  P_INT,        /* int in [lo, hi] */
  P_FLOAT,      /* float in [lo, hi] (hi_open: hi excluded) */
  P_CHOICE,     /* int: the index of the value in choices */
  P_USE_BIAS,   /* bool, stored as params.no_bias */
  P_INITIALIZER, /* ct_initializer: a name, or {name: ..., stddev | scale | value: ...} */
  P_LAYERS      /* residual: the block's list */
} param_kind;

typedef struct param {
  const char *key;
  param_kind kind;
  unsigned types;    /* BIT(type) of the layers that take it */
  unsigned required; /* BIT(type) of the layers that must give it */
  size_t offset;
  double lo, hi;
  int hi_open;
  const char *const *choices; /* P_CHOICE, in the order of the enum stored */
} param;

static const char *const k_paddings[] = {"valid", "same", NULL};
static const char *const k_activations[] = {"none", "relu", "sigmoid", "tanh", NULL};
static const char *const k_shortcuts[] = {"identity", "projection", NULL};

static const param k_params[] = {
    {"name", P_NAME, ALL, 0, OFF(name), 0, 0, 0, NULL},
    {"device", P_DEVICE, ALL, 0, OFF(device), 0, 0, 0, NULL},
    {"repeat", P_INT, ALL, 0, OFF(repeat), 1, CT_LAYER_MAX_REPEAT, 0, NULL},
    {"filters", P_INT, BIT(CT_LAYER_CONV2D), BIT(CT_LAYER_CONV2D), OFF(units), 1, 65536, 0, NULL},
    {"units", P_INT, BIT(CT_LAYER_DENSE), BIT(CT_LAYER_DENSE), OFF(units), 1, 1 << 20, 0, NULL},
    {"kernel", P_INT, BIT(CT_LAYER_CONV2D), BIT(CT_LAYER_CONV2D), OFF(kernel), 1, 4096, 0, NULL},
    {"size", P_INT, POOLS, 0, OFF(kernel), 1, 4096, 0, NULL},
    {"stride", P_INT, BIT(CT_LAYER_CONV2D) | POOLS, 0, OFF(stride), 1, 4096, 0, NULL},
    {"padding", P_CHOICE, BIT(CT_LAYER_CONV2D) | POOLS, 0, OFF(padding), 0, 0, 0, k_paddings},
    {"activation", P_CHOICE, WEIGHTED | BIT(CT_LAYER_RESIDUAL), 0, OFF(activation), 0, 0, 0,
     k_activations},
    {"use_bias", P_USE_BIAS, WEIGHTED, 0, OFF(params.no_bias), 0, 0, 0, NULL},
    {"kernel_initializer", P_INITIALIZER, WEIGHTED, 0, OFF(params.weights), 0, 0, 0, NULL},
    {"bias_initializer", P_INITIALIZER, WEIGHTED, 0, OFF(params.biases), 0, 0, 0, NULL},
    {"weight_decay", P_FLOAT, WEIGHTED, 0, OFF(params.weight_decay), 0, INFINITY, 0, NULL},
    {"depth_radius", P_INT, BIT(CT_LAYER_LRN), 0, OFF(depth_radius), 0, 1024, 0, NULL},
    {"bias", P_FLOAT, BIT(CT_LAYER_LRN), 0, OFF(bias), 1e-30, INFINITY, 0, NULL},
    {"alpha", P_FLOAT, BIT(CT_LAYER_LRN), 0, OFF(alpha), 0, INFINITY, 0, NULL},
    {"beta", P_FLOAT, BIT(CT_LAYER_LRN), 0, OFF(beta), 0, INFINITY, 0, NULL},
    {"rate", P_FLOAT, BIT(CT_LAYER_DROPOUT), BIT(CT_LAYER_DROPOUT), OFF(rate), 0, 1, 1, NULL},
    {"layers", P_LAYERS, BIT(CT_LAYER_RESIDUAL), BIT(CT_LAYER_RESIDUAL), 0, 0, 0, 0, NULL},
    {"shortcut", P_CHOICE, BIT(CT_LAYER_RESIDUAL), 0, OFF(projection), 0, 0, 0, k_shortcuts},
};
enum { N_PARAMS = sizeof k_params / sizeof k_params[0] };

/* Initializers: their names, and the key of their one parameter. */
static const char *const k_initializers[] = {
    [CT_INIT_ZEROS] = "zeros",   [CT_INIT_ONES] = "ones",
    [CT_INIT_CONSTANT] = "constant", [CT_INIT_UNIFORM] = "uniform",
    [CT_INIT_NORMAL] = "normal", [CT_INIT_GLOROT_UNIFORM] = "glorot_uniform",
    [CT_INIT_HE_NORMAL] = "he_normal", NULL};
static const char *initializer_key(int kind) {
  return kind == CT_INIT_CONSTANT ? "value"
         : kind == CT_INIT_UNIFORM ? "scale"
         : kind == CT_INIT_NORMAL  ? "stddev"
                                   : NULL;
}

typedef struct parse {
  ct_layer_list *out;
  char *error;
  size_t size;
  int *error_line;
  int lines[CT_MAX_LAYERS]; /* where each entry of out was given */
} parse;

/* Whether a device name names a job or task other than a process's own
 * (/job:localhost/task:0): a device a layer of `ctower train` cannot use. */
static int names_another_process(const char *text) {
  ct_device_spec spec;
  ct_status ignored = CT_STATUS_INIT;
  if (ct_device_spec_parse(text, &spec, &ignored)) return 0; /* the graph reports it */
  return (spec.has_job && strcmp(spec.job, "localhost") != 0) || (spec.has_task && spec.task != 0);
}

static int fail(parse *p, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(parse *p, int line, const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  vsnprintf(p->error, p->size, fmt, args);
  va_end(args);
  *p->error_line = line;
  return 1;
}

/* "a, b, c" of a NULL-terminated list. */
static void join(const char *const *names, int n, char *out, size_t size) {
  size_t used = 0;
  out[0] = '\0';
  for (int i = 0; (n < 0 ? names[i] != NULL : i < n) && used < size; ++i)
    used += (size_t)snprintf(out + used, size - used, "%s%s", i ? ", " : "", names[i]);
}

/* "unknown WHAT 'x'; did you mean 'y'? (WHATs: ...)" for a word not in names. */
static int fail_unknown(parse *p, int line, const char *where, const char *what, const char *word,
                        const char *const *names, int n) {
  char list[512], hint[96] = "";
  join(names, n, list, sizeof list);
  const int best = ct_closest_name(word, names, (size_t)n);
  if (best >= 0) snprintf(hint, sizeof hint, "; did you mean '%s'?", names[best]);
  return fail(p, line, "%s: unknown %s '%s'%s (%ss: %s)", where, what, word, hint, what, list);
}

static const char *scalar(const ct_ynode *node) {
  return node && node->kind == CT_YNODE_SCALAR && !ct_ynode_is_null(node) ? node->text : NULL;
}

static int choice(parse *p, const char *where, const char *key, const ct_ynode *node,
                  const char *const *choices, int *out) {
  const char *text = scalar(node);
  int n = 0;
  while (choices[n]) ++n;
  for (int i = 0; text && i < n; ++i)
    if (strcmp(text, choices[i]) == 0) return *out = i, 0;
  char list[256], what[64];
  join(choices, n, list, sizeof list);
  snprintf(what, sizeof what, "%s value", key);
  if (text == NULL) return fail(p, node->line, "%s: '%s' must be one of %s", where, key, list);
  return fail_unknown(p, node->line, where, what, text, choices, n);
}

static int number(parse *p, const char *where, const param *f, const ct_ynode *node, double *out) {
  const char *text = scalar(node);
  char *end = NULL;
  errno = 0;
  const double v = text ? strtod(text, &end) : NAN;
  if (text == NULL || end == text || *end != '\0' || !isfinite(v) || errno == ERANGE)
    return fail(p, node->line, "%s: '%s' must be a number, got %s", where, f->key,
                text ? text : "no value");
  if (f->kind == P_INT && v != floor(v))
    return fail(p, node->line, "%s: '%s' must be an integer, got '%s'", where, f->key, text);
  if (v < f->lo || v > f->hi || (f->hi_open && v == f->hi))
    return fail(p, node->line, "%s: '%s' must lie in [%g, %g%c, got '%s'", where, f->key, f->lo,
                f->hi, f->hi_open ? ')' : ']', text);
  *out = v;
  return 0;
}

static int initializer(parse *p, const char *where, const param *f, const ct_ynode *node,
                       ct_initializer *out) {
  const ct_ynode *name = node, *value = NULL;
  const char *value_key = "";
  if (node->kind == CT_YNODE_MAP) {
    name = NULL;
    for (size_t i = 0; i < node->n; ++i) {
      if (strcmp(node->keys[i]->text, "name") == 0)
        name = node->items[i];
      else
        value = node->items[i], value_key = node->keys[i]->text;
    }
    if (name == NULL || node->n > 2)
      return fail(p, node->line, "%s: '%s' is a name, or {name: normal, stddev: 0.05}", where,
                  f->key);
  }
  int kind = 0;
  if (choice(p, where, f->key, name, k_initializers, &kind)) return 1;
  const char *key = initializer_key(kind);
  if ((key == NULL) != (value == NULL) || (key && strcmp(key, value_key) != 0)) {
    if (key) return fail(p, node->line, "%s: '%s: %s' needs its %s: {name: %s, %s: X}", where,
                         f->key, k_initializers[kind], key, k_initializers[kind], key);
    return fail(p, node->line, "%s: '%s: %s' takes no parameter", where, f->key,
                k_initializers[kind]);
  }
  const param range = {key, P_FLOAT, 0, 0, 0, key && kind != CT_INIT_CONSTANT ? 0 : -INFINITY,
                       INFINITY, 0, NULL};
  double v = 0;
  if (value && number(p, where, &range, value, &v)) return 1;
  *out = (ct_initializer){(ct_init_kind)kind, (float)v};
  return 0;
}

static int parse_list(parse *p, const ct_ynode *node, const char *path);

/* One parameter of the layer being read (p->out->layers[index]), at path
 * ("model.layers[3]"); where adds its type for messages. */
static int apply_param(parse *p, int index, const char *path, const char *where, const param *f,
                       const ct_ynode *node) {
  ct_layer_spec *s = &p->out->layers[index];
  char *at = (char *)s + f->offset;
  double v = 0;
  switch (f->kind) {
    case P_NAME:
    case P_DEVICE: {
      const char *text = scalar(node) ? scalar(node) : "";
      if (node->kind != CT_YNODE_SCALAR || strlen(text) >= CT_LAYER_NAME)
        return fail(p, node->line, "%s: '%s' must be a string of at most %d characters", where,
                    f->key, CT_LAYER_NAME - 1);
      if (f->kind == P_DEVICE && text[0] != '\0' && text[0] != '/')
        return fail(p, node->line, "%s: 'device' must be a device name such as /cpu:1 or "
                    "/gpu:0, got '%s'", where, text);
      if (f->kind == P_DEVICE && names_another_process(text))
        return fail(p, node->line,
                    "%s: 'device' '%s' names a job or task: in ctower train every process trains "
                    "its own towers on its own examples, so a layer runs on a device of its own "
                    "process (write /cpu:1 or /gpu:0; devices.towers says which tasks train); "
                    "nodes on another process's devices are for graphs built with the library",
                    where, text);
      if (f->kind == P_NAME && strchr(text, '/'))
        return fail(p, node->line, "%s: 'name' is one scope and holds no '/', got '%s'", where,
                    text);
      snprintf(at, CT_LAYER_NAME, "%s", text);
      return 0;
    }
    case P_INT:
      if (number(p, where, f, node, &v)) return 1;
      *(int *)(void *)at = (int)v;
      return 0;
    case P_FLOAT:
      if (number(p, where, f, node, &v)) return 1;
      *(float *)(void *)at = (float)v;
      return 0;
    case P_CHOICE:
      return choice(p, where, f->key, node, f->choices, (int *)(void *)at);
    case P_USE_BIAS: {
      int use = 0;
      static const char *const bools[] = {"false", "true", NULL};
      if (choice(p, where, f->key, node, bools, &use)) return 1;
      s->params.no_bias = !use;
      return 0;
    }
    case P_INITIALIZER:
      return initializer(p, where, f, node, (ct_initializer *)(void *)at);
    case P_LAYERS: {
      const int first = p->out->n;
      if (node->kind != CT_YNODE_SEQ || node->n == 0)
        return fail(p, node->line, "%s: 'layers' must be a list of at least one layer", where);
      char inner[220];
      snprintf(inner, sizeof inner, "%.200s.layers", path);
      if (parse_list(p, node, inner)) return 1;
      p->out->layers[index].n_inner = p->out->n - first;
      return 0;
    }
  }
  return fail(p, node->line, "%s: internal error: parameter '%s' has no kind", where, f->key);
}

/* One item: `type` or `type: {params}`. */
static int parse_layer(parse *p, const ct_ynode *item, const char *where) {
  const ct_ynode *params = NULL;
  const char *type = scalar(item);
  if (item->kind == CT_YNODE_MAP && item->n == 1) type = item->keys[0]->text, params = item->items[0];
  if (type == NULL)
    return fail(p, item->line, "%s: a layer is its type ('- flatten') or its type with its "
                "parameters ('- conv2d: {filters: 32, kernel: 5}')", where);
  int t = 0;
  while (t < CT_LAYER_TYPE_COUNT && strcmp(type, ct_layer_type_name((ct_layer_type)t)) != 0) ++t;
  if (t == CT_LAYER_TYPE_COUNT) {
    const char *names[CT_LAYER_TYPE_COUNT];
    for (int i = 0; i < CT_LAYER_TYPE_COUNT; ++i) names[i] = ct_layer_type_name((ct_layer_type)i);
    return fail_unknown(p, item->line, where, "layer type", type, names, CT_LAYER_TYPE_COUNT);
  }
  if (params && !ct_ynode_is_null(params) && params->kind != CT_YNODE_MAP)
    return fail(p, params->line, "%s: the parameters of %s must be a mapping, such as {name: "
                "%s_1}", where, type, type);
  if (p->out->n == CT_MAX_LAYERS)
    return fail(p, item->line, "%s: a model holds at most %d layers (a repeated layer counts "
                "once)", where, CT_MAX_LAYERS);
  const int index = p->out->n++;
  ct_layer_spec_defaults(&p->out->layers[index], (ct_layer_type)t);
  p->lines[index] = item->line;
  char here[240];
  snprintf(here, sizeof here, "%.210s (%.20s)", where, type);
  const char *takes[N_PARAMS];
  int n_takes = 0, given[N_PARAMS] = {0};
  for (int i = 0; i < N_PARAMS; ++i)
    if (k_params[i].types & BIT(t)) takes[n_takes++] = k_params[i].key;
  for (size_t k = 0; params && params->kind == CT_YNODE_MAP && k < params->n; ++k) {
    const char *key = params->keys[k]->text;
    int i = 0;
    while (i < N_PARAMS && !(strcmp(k_params[i].key, key) == 0 && (k_params[i].types & BIT(t))))
      ++i;
    if (i == N_PARAMS)
      return fail_unknown(p, params->keys[k]->line, here, "parameter", key, takes, n_takes);
    if (given[i]) return fail(p, params->keys[k]->line, "%s: '%s' is given twice", here, key);
    given[i] = 1;
    if (apply_param(p, index, where, here, &k_params[i], params->items[k])) return 1;
  }
  for (int i = 0; i < N_PARAMS; ++i) {
    if ((k_params[i].required & BIT(t)) && !given[i])
      return fail(p, item->line, "%s: needs '%s'", here, k_params[i].key);
    /* a pool's stride is its window unless given, as in Keras */
    if (strcmp(k_params[i].key, "stride") == 0 && !given[i] && (POOLS & BIT(t)))
      p->out->layers[index].stride = p->out->layers[index].kernel;
  }
  return 0;
}

static int parse_list(parse *p, const ct_ynode *node, const char *path) {
  for (size_t i = 0; i < node->n; ++i) {
    char where[220];
    snprintf(where, sizeof where, "%.190s[%d]", path, (int)i);
    if (parse_layer(p, node->items[i], where)) return 1;
  }
  return 0;
}

/* The library's check of a whole list (ct_layer_list_check: two layers of
 * one name would share their variables): the line of the entry at fault
 * (of two whose names clash, the later), with the library's sentence. An
 * empty list is no list: the model is model.name's. */
static int check_list(parse *p) {
  ct_status status = CT_STATUS_INIT;
  int entry = 0;
  if (p->out->n == 0 || ct_layer_list_check(p->out, "model.", &entry, &status) == 0) return 0;
  return fail(p, p->lines[entry], "%s", status.message);
}

int ct_config_layers_parse(const ct_ynode *node, ct_layer_list *out, char *error, size_t size,
                           int *error_line) {
  parse p = {out, error, size, error_line, {0}};
  memset(out, 0, sizeof *out);
  if (ct_ynode_is_null(node)) return 0;
  if (node->kind != CT_YNODE_SEQ)
    return fail(&p, node->line, "'model.layers' must be a list of layers, such as [{conv2d: "
                "{filters: 32, kernel: 5}}, flatten, {dense: {units: 10}}]");
  return parse_list(&p, node, "model.layers") || check_list(&p);
}

/* ---- writing ------------------------------------------------------------ */

static int write_layers(const ct_layer_spec *specs, int n, FILE *out);

/* Writes specs[0] with every parameter, and its branch (a residual block's
 * list) unless `branch` is 0 ("layers: [...]"); returns the entries it
 * took. */
static int write_layer(const ct_layer_spec *s, int n, int branch, FILE *out) {
  const unsigned bit = BIT(s->type);
  int taken = 1;
  fprintf(out, "{%s: {", ct_layer_type_name(s->type));
  int first = 1;
  for (int i = 0; i < N_PARAMS; ++i) {
    const param *f = &k_params[i];
    if (!(f->types & bit)) continue;
    const char *at = (const char *)s + f->offset;
    fprintf(out, "%s%s: ", first ? "" : ", ", f->key);
    first = 0;
    switch (f->kind) {
      case P_NAME:
      case P_DEVICE: ct_config_write_string(at, out); break;
      case P_INT: fprintf(out, "%d", *(const int *)(const void *)at); break;
      case P_FLOAT: ct_config_write_double(*(const float *)(const void *)at, out); break;
      case P_CHOICE: fputs(f->choices[*(const int *)(const void *)at], out); break;
      case P_USE_BIAS: fputs(s->params.no_bias ? "false" : "true", out); break;
      case P_INITIALIZER: {
        const ct_initializer *init = (const ct_initializer *)(const void *)at;
        const char *key = initializer_key(init->kind);
        if (key == NULL) {
          fputs(k_initializers[init->kind], out);
          break;
        }
        fprintf(out, "{name: %s, %s: ", k_initializers[init->kind], key);
        ct_config_write_double(init->value, out);
        fputc('}', out);
        break;
      }
      case P_LAYERS: {
        const int inner = s->n_inner < n ? s->n_inner : n - 1;
        if (branch)
          write_layers(s + 1, inner, out);
        else
          fputs("[...]", out);
        taken += inner;
        break;
      }
    }
  }
  fputs("}}", out);
  return taken;
}

static int write_layers(const ct_layer_spec *specs, int n, FILE *out) {
  fputc('[', out);
  int i = 0;
  while (i < n) {
    if (i) fputs(", ", out);
    i += write_layer(&specs[i], n - i, 1, out);
  }
  fputc(']', out);
  return n;
}

void ct_config_layers_write(const ct_layer_list *layers, FILE *out) {
  write_layers(layers->layers, layers->n, out);
}

/* ---- comparing ---------------------------------------------------------- */

/* specs[0] as the config writes it (its branch too when `branch`), cut to
 * size with "..." */
static void layer_text(const ct_layer_spec *specs, int n, int branch, char *out, size_t size) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (f) {
    write_layer(specs, n, branch, f);
    fclose(f);
  }
  snprintf(out, size, "%s", text ? text : "?");
  if (text && len >= size && size > 4) memcpy(out + size - 4, "...", 4);
  free(text);
}

typedef struct difference {
  char *where, *a, *b;
  size_t where_size, text_size;
} difference;

/* The entries of a list and of b list at `where` ("model.layers"): 1 and
 * *d filled at the first entry that differs (a block whose own parameters
 * agree is looked into), 0 when they are the same. */
static int differ(const ct_layer_spec *a, int na, const ct_layer_spec *b, int nb, const char *where,
                  difference *d) {
  for (int i = 0, j = 0, index = 0; i < na || j < nb; ++index) {
    snprintf(d->where, d->where_size, "%.200s[%d]", where, index);
    if (i >= na || j >= nb) {
      if (i < na) layer_text(a + i, na - i, 1, d->a, d->text_size);
      if (j < nb) layer_text(b + j, nb - j, 1, d->b, d->text_size);
      snprintf(i < na ? d->b : d->a, d->text_size, "absent");
      return 1;
    }
    char own_a[512], own_b[512];
    layer_text(a + i, na - i, 0, own_a, sizeof own_a);
    layer_text(b + j, nb - j, 0, own_b, sizeof own_b);
    const int inner_a = a[i].type == CT_LAYER_RESIDUAL && a[i].n_inner < na - i ? a[i].n_inner : 0;
    const int inner_b = b[j].type == CT_LAYER_RESIDUAL && b[j].n_inner < nb - j ? b[j].n_inner : 0;
    if (strcmp(own_a, own_b) != 0) {
      layer_text(a + i, na - i, 1, d->a, d->text_size);
      layer_text(b + j, nb - j, 1, d->b, d->text_size);
      return 1;
    }
    char branch[220];
    snprintf(branch, sizeof branch, "%.200s.layers", d->where);
    if ((inner_a || inner_b) && differ(a + i + 1, inner_a, b + j + 1, inner_b, branch, d)) return 1;
    i += 1 + inner_a, j += 1 + inner_b;
  }
  return 0;
}

int ct_config_layers_difference(const ct_layer_list *a, const ct_layer_list *b, char *where,
                                size_t where_size, char *a_text, char *b_text, size_t text_size) {
  difference d = {where, a_text, b_text, where_size, text_size};
  return differ(a->layers, a->n, b->layers, b->n, "model.layers", &d);
}
