#include "config/yaml_tree.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

enum {
  YT_MAX_DEPTH = 64,     /* nesting deeper than this is surely a mistake */
  YT_MAX_NODES = 1 << 20, /* bound alias expansion ("billion laughs"): in nodes, */
  YT_MAX_MIB = 64          /* and in the bytes the tree holds, its texts included */
};

typedef struct yt_anchor {
  char *name;
  ct_ynode *node; /* owned by the tree; copied on each alias */
} yt_anchor;

typedef struct yt_parser {
  yaml_parser_t parser;
  ct_yaml_error *err;
  yt_anchor *anchors;
  size_t n_anchors, cap_anchors;
  size_t n_nodes;
  size_t n_bytes; /* held by the tree: its nodes and their texts */
  long reader_offset; /* byte of a reader (encoding) error, or -1 */
} yt_parser;

static void yt_fail(yt_parser *p, const yaml_mark_t *mark, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void yt_fail(yt_parser *p, const yaml_mark_t *mark, const char *fmt, ...) {
  if (p->err->message[0] != '\0') return; /* the first error wins */
  p->err->line = mark ? (int)mark->line + 1 : 0;
  p->err->column = mark ? (int)mark->column + 1 : 0;
  va_list args;
  va_start(args, fmt);
  vsnprintf(p->err->message, sizeof p->err->message, fmt, args);
  va_end(args);
}

/* Reports libyaml's own error after yaml_parser_parse failed. */
static void yt_fail_libyaml(yt_parser *p) {
  const yaml_parser_t *y = &p->parser;
  switch (y->error) {
    case YAML_MEMORY_ERROR:
      yt_fail(p, NULL, "out of memory");
      break;
    case YAML_READER_ERROR:
      /* The reader runs ahead of the scanner: its mark is not where the bad
       * byte is. The caller turns reader_offset into a line and column. */
      yt_fail(p, NULL, "%s", y->problem ? y->problem : "cannot read the input");
      p->reader_offset = (long)y->problem_offset;
      break;
    default:
      if (y->context != NULL)
        yt_fail(p, &y->problem_mark, "%s (%s that starts on line %d)",
                y->problem ? y->problem : "syntax error", y->context,
                (int)y->context_mark.line + 1);
      else
        yt_fail(p, &y->problem_mark, "%s", y->problem ? y->problem : "syntax error");
      break;
  }
}

static int yt_next(yt_parser *p, yaml_event_t *event) {
  if (!yaml_parser_parse(&p->parser, event)) {
    yt_fail_libyaml(p);
    return 1;
  }
  return 0;
}

/* Counts `bytes` more held by the tree; 1 (with the error) past the bound. */
static int yt_charge(yt_parser *p, size_t bytes, const yaml_mark_t *mark) {
  const size_t bound = (size_t)YT_MAX_MIB << 20;
  if (bytes > bound - p->n_bytes) {
    yt_fail(p, mark,
            "document too large (more than %d MiB after expanding aliases): an alias copies "
            "what its anchor holds each time it is used; use fewer aliases of long values",
            YT_MAX_MIB);
    return 1;
  }
  p->n_bytes += bytes;
  return 0;
}

/* A copy of text[0..len) and a NUL, charged to the tree. */
static char *yt_text(yt_parser *p, const void *text, size_t len, const yaml_mark_t *mark) {
  if (yt_charge(p, len + 1, mark)) return NULL;
  char *copy = malloc(len + 1);
  if (copy == NULL) {
    yt_fail(p, mark, "out of memory");
    return NULL;
  }
  memcpy(copy, text, len);
  copy[len] = '\0';
  return copy;
}

static ct_ynode *yt_new_node(yt_parser *p, ct_ynode_kind kind, const yaml_mark_t *mark) {
  if (++p->n_nodes > YT_MAX_NODES) {
    yt_fail(p, mark, "document too large (more than %d nodes after expanding aliases)",
            YT_MAX_NODES);
    return NULL;
  }
  if (yt_charge(p, sizeof(ct_ynode), mark)) return NULL;
  ct_ynode *node = calloc(1, sizeof *node);
  if (node == NULL) {
    yt_fail(p, mark, "out of memory");
    return NULL;
  }
  node->kind = kind;
  node->line = (int)mark->line + 1;
  node->column = (int)mark->column + 1;
  return node;
}

void ct_ynode_free(ct_ynode *node) {
  if (node == NULL) return;
  for (size_t i = 0; i < node->n; ++i) {
    if (node->keys) ct_ynode_free(node->keys[i]);
    ct_ynode_free(node->items[i]);
  }
  free(node->keys);
  free(node->items);
  free(node->text);
  free(node);
}

int ct_ynode_is_null(const ct_ynode *node) {
  if (node == NULL) return 1;
  if (node->kind != CT_YNODE_SCALAR || !node->plain) return 0;
  const char *t = node->text;
  return t[0] == '\0' || strcmp(t, "~") == 0 || strcmp(t, "null") == 0 || strcmp(t, "Null") == 0 ||
         strcmp(t, "NULL") == 0;
}

static ct_ynode *yt_copy(yt_parser *p, const ct_ynode *src, const yaml_mark_t *mark) {
  ct_ynode *node = yt_new_node(p, src->kind, mark);
  if (node == NULL) return NULL;
  node->line = src->line;
  node->column = src->column;
  node->plain = src->plain;
  node->text_len = src->text_len;
  if (src->text && (node->text = yt_text(p, src->text, src->text_len, mark)) == NULL) goto fail;
  if (src->n > 0) {
    node->items = calloc(src->n, sizeof *node->items);
    if (node->items == NULL) goto oom;
    if (src->keys) {
      node->keys = calloc(src->n, sizeof *node->keys);
      if (node->keys == NULL) goto oom;
    }
    for (size_t i = 0; i < src->n; ++i) {
      node->n = i + 1;
      if (src->keys && (node->keys[i] = yt_copy(p, src->keys[i], mark)) == NULL) goto fail;
      if ((node->items[i] = yt_copy(p, src->items[i], mark)) == NULL) goto fail;
    }
  }
  return node;
oom:
  yt_fail(p, mark, "out of memory");
fail:
  ct_ynode_free(node);
  return NULL;
}

static int yt_remember_anchor(yt_parser *p, const yaml_char_t *anchor, ct_ynode *node,
                              const yaml_mark_t *mark) {
  if (anchor == NULL) return 0;
  if (p->n_anchors == p->cap_anchors) {
    size_t cap = p->cap_anchors ? 2 * p->cap_anchors : 8;
    yt_anchor *grown = realloc(p->anchors, cap * sizeof *grown);
    if (grown == NULL) goto oom;
    p->anchors = grown;
    p->cap_anchors = cap;
  }
  char *name = strdup((const char *)anchor);
  if (name == NULL) goto oom;
  p->anchors[p->n_anchors++] = (yt_anchor){name, node};
  return 0;
oom:
  yt_fail(p, mark, "out of memory");
  return 1;
}

/* Appends (key, value) to a map, or value to a seq (key NULL). */
static int yt_append(yt_parser *p, ct_ynode *parent, ct_ynode *key, ct_ynode *value,
                     const yaml_mark_t *mark) {
  const size_t n = parent->n + 1;
  if (n > parent->cap) {
    const size_t cap = parent->cap ? 2 * parent->cap : 8;
    ct_ynode **items = realloc(parent->items, cap * sizeof *items);
    if (items == NULL) goto oom;
    parent->items = items;
    if (parent->kind == CT_YNODE_MAP) {
      ct_ynode **keys = realloc(parent->keys, cap * sizeof *keys);
      if (keys == NULL) goto oom;
      parent->keys = keys;
    }
    parent->cap = cap;
  }
  if (parent->kind == CT_YNODE_MAP) parent->keys[n - 1] = key;
  parent->items[n - 1] = value;
  parent->n = n;
  return 0;
oom:
  yt_fail(p, mark, "out of memory");
  return 1;
}

static ct_ynode *yt_parse_node(yt_parser *p, yaml_event_t *event, int depth);

/* The tag of a scalar, mapping or list event, or NULL. */
static const yaml_char_t *yt_event_tag(const yaml_event_t *event) {
  switch (event->type) {
    case YAML_SCALAR_EVENT:
      return event->data.scalar.tag;
    case YAML_MAPPING_START_EVENT:
      return event->data.mapping_start.tag;
    case YAML_SEQUENCE_START_EVENT:
      return event->data.sequence_start.tag;
    default:
      return NULL;
  }
}

static ct_ynode *yt_parse_scalar(yt_parser *p, const yaml_event_t *event, const yaml_mark_t *mark) {
  ct_ynode *node = yt_new_node(p, CT_YNODE_SCALAR, mark);
  if (node == NULL) return NULL;
  node->text_len = event->data.scalar.length;
  node->text = yt_text(p, event->data.scalar.value, node->text_len, mark);
  if (node->text == NULL) {
    ct_ynode_free(node);
    return NULL;
  }
  node->plain = event->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
  if (yt_remember_anchor(p, event->data.scalar.anchor, node, mark) != 0) {
    ct_ynode_free(node);
    return NULL;
  }
  return node;
}

/* A copy of the node of the latest anchor the alias names, at the alias. */
static ct_ynode *yt_parse_alias(yt_parser *p, const yaml_event_t *event, const yaml_mark_t *mark) {
  const char *name = (const char *)event->data.alias.anchor;
  for (size_t i = p->n_anchors; i-- > 0;) {
    if (strcmp(p->anchors[i].name, name) == 0) {
      ct_ynode *node = yt_copy(p, p->anchors[i].node, mark);
      if (node) {
        node->line = (int)mark->line + 1;
        node->column = (int)mark->column + 1;
      }
      return node;
    }
  }
  yt_fail(p, mark, "alias '*%s' names no anchor defined before it", name);
  return NULL;
}

/* The key of a mapping's entry, from child_event on; child_event then holds
 * the value's first event. */
static ct_ynode *yt_parse_key(yt_parser *p, yaml_event_t *child_event, int depth) {
  const yaml_mark_t child_mark = child_event->start_mark;
  ct_ynode *key = yt_parse_node(p, child_event, depth);
  if (key == NULL) return NULL;
  if (key->kind != CT_YNODE_SCALAR) {
    yt_fail(p, &child_mark, "a mapping key must be a plain name, not a %s",
            key->kind == CT_YNODE_MAP ? "mapping" : "list");
    ct_ynode_free(key);
    return NULL;
  }
  if (yt_next(p, child_event) != 0) {
    ct_ynode_free(key);
    return NULL;
  }
  return key;
}

/* The entries of a mapping or list node up to its end event. Returns 0, or
 * 1 with p->err filled. */
static int yt_parse_entries(yt_parser *p, ct_ynode *node, yaml_event_type_t end, int depth) {
  for (;;) {
    yaml_event_t child_event;
    if (yt_next(p, &child_event) != 0) return 1;
    if (child_event.type == end) {
      yaml_event_delete(&child_event);
      return 0;
    }
    ct_ynode *key = NULL;
    if (node->kind == CT_YNODE_MAP && (key = yt_parse_key(p, &child_event, depth)) == NULL)
      return 1;
    const yaml_mark_t value_mark = child_event.start_mark;
    ct_ynode *value = yt_parse_node(p, &child_event, depth);
    if (value == NULL || yt_append(p, node, key, value, &value_mark) != 0) {
      ct_ynode_free(key);
      ct_ynode_free(value);
      return 1;
    }
  }
}

/* A mapping or list, from its start event (consumed here) to its end. */
static ct_ynode *yt_parse_collection(yt_parser *p, yaml_event_t *event, int depth) {
  const yaml_mark_t mark = event->start_mark;
  const int is_map = event->type == YAML_MAPPING_START_EVENT;
  const yaml_event_type_t end = is_map ? YAML_MAPPING_END_EVENT : YAML_SEQUENCE_END_EVENT;
  const yaml_char_t *anchor_src =
      is_map ? event->data.mapping_start.anchor : event->data.sequence_start.anchor;
  char *anchor = anchor_src ? strdup((const char *)anchor_src) : NULL;
  ct_ynode *node = yt_new_node(p, is_map ? CT_YNODE_MAP : CT_YNODE_SEQ, &mark);
  yaml_event_delete(event);
  if (node == NULL || yt_parse_entries(p, node, end, depth + 1) != 0) {
    free(anchor);
    ct_ynode_free(node);
    return NULL;
  }
  if (anchor) {
    int rc = yt_remember_anchor(p, (const yaml_char_t *)anchor, node, &mark);
    free(anchor);
    if (rc != 0) {
      ct_ynode_free(node);
      return NULL;
    }
  }
  return node;
}

/* Builds the node that starts with event (consumed here) and every event of
 * its subtree. Returns NULL on error with p->err filled. */
static ct_ynode *yt_parse_node(yt_parser *p, yaml_event_t *event, int depth) {
  ct_ynode *node = NULL;
  const yaml_mark_t mark = event->start_mark;
  if (depth > YT_MAX_DEPTH) {
    yt_fail(p, &mark, "nested more than %d levels deep", YT_MAX_DEPTH);
    yaml_event_delete(event);
    return NULL;
  }
  const yaml_char_t *tag = yt_event_tag(event);
  if (tag != NULL) { /* a tag would change a value's type behind the schema's back */
    yt_fail(p, &mark, "YAML tags such as '%.40s' are not supported; write the value without it",
            (const char *)tag);
    yaml_event_delete(event);
    return NULL;
  }
  switch (event->type) {
    case YAML_SCALAR_EVENT:
      node = yt_parse_scalar(p, event, &mark);
      break;
    case YAML_ALIAS_EVENT:
      node = yt_parse_alias(p, event, &mark);
      break;
    case YAML_MAPPING_START_EVENT:
    case YAML_SEQUENCE_START_EVENT:
      return yt_parse_collection(p, event, depth);
    default:
      yt_fail(p, &mark, "unexpected YAML event %d", (int)event->type);
      break;
  }
  yaml_event_delete(event);
  return node;
}

static int yt_parse(yt_parser *p, ct_ynode **root) {
  yaml_event_t event;
  ct_ynode *doc = NULL;
  int documents = 0;
  for (;;) {
    if (yt_next(p, &event) != 0) goto fail;
    yaml_event_type_t type = event.type;
    yaml_mark_t mark = event.start_mark;
    if (type == YAML_STREAM_END_EVENT) {
      yaml_event_delete(&event);
      break;
    }
    if (type == YAML_STREAM_START_EVENT || type == YAML_DOCUMENT_END_EVENT) {
      yaml_event_delete(&event);
      continue;
    }
    if (type == YAML_DOCUMENT_START_EVENT) {
      yaml_event_delete(&event);
      if (++documents > 1) {
        yt_fail(p, &mark, "a config is one YAML document, but a second one starts here");
        goto fail;
      }
      continue;
    }
    doc = yt_parse_node(p, &event, 0);
    if (doc == NULL) goto fail;
  }
  *root = doc;
  return 0;
fail:
  ct_ynode_free(doc);
  return 1;
}

static void yt_parser_done(yt_parser *p) {
  for (size_t i = 0; i < p->n_anchors; ++i) free(p->anchors[i].name);
  free(p->anchors);
  yaml_parser_delete(&p->parser);
}

static int yt_parser_init(yt_parser *p, ct_ynode **root, ct_yaml_error *err) {
  memset(p, 0, sizeof *p);
  memset(err, 0, sizeof *err);
  p->err = err;
  p->reader_offset = -1;
  *root = NULL;
  if (!yaml_parser_initialize(&p->parser)) {
    yt_fail(p, NULL, "out of memory");
    return 1;
  }
  return 0;
}

/* Advances err's line and column over one byte of input. */
static void yt_locate_byte(ct_yaml_error *err, int byte) {
  if (byte == '\n') {
    ++err->line;
    err->column = 1;
  } else if ((byte & 0xc0) != 0x80) { /* count characters, not UTF-8 continuation bytes */
    ++err->column;
  }
}

int ct_yaml_parse_file(FILE *file, ct_ynode **root, ct_yaml_error *err) {
  yt_parser p;
  if (yt_parser_init(&p, root, err) != 0) return 1;
  yaml_parser_set_input_file(&p.parser, file);
  int rc = yt_parse(&p, root);
  if (rc != 0 && p.reader_offset >= 0 && fseek(file, 0, SEEK_SET) == 0) {
    err->line = 1;
    err->column = 1;
    for (long i = 0; i < p.reader_offset; ++i) {
      int byte = fgetc(file);
      if (byte == EOF) break;
      yt_locate_byte(err, byte);
    }
  }
  yt_parser_done(&p);
  return rc;
}

int ct_yaml_parse_string(const char *text, size_t len, ct_ynode **root, ct_yaml_error *err) {
  yt_parser p;
  if (yt_parser_init(&p, root, err) != 0) return 1;
  yaml_parser_set_input_string(&p.parser, (const unsigned char *)text, len);
  int rc = yt_parse(&p, root);
  if (rc != 0 && p.reader_offset >= 0) {
    err->line = 1;
    err->column = 1;
    for (long i = 0; i < p.reader_offset && (size_t)i < len; ++i)
      yt_locate_byte(err, (unsigned char)text[i]);
  }
  yt_parser_done(&p);
  return rc;
}
