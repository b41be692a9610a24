/* A small strict JSON reader (recursive descent) and string escaper. */
#include "core/json.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { JSON_MAX_DEPTH = 64 };

typedef struct parser {
  const char *text;
  size_t size, pos;
  char *error;
  size_t error_size;
  int failed;
} parser;

static int fail(parser *p, const char *fmt, ...) {
  if (p->failed) return 1;
  p->failed = 1;
  if (p->error_size == 0) return 1;
  int used = snprintf(p->error, p->error_size, "at byte %zu: ", p->pos);
  if (used < 0 || (size_t)used >= p->error_size) return 1;
  va_list args;
  va_start(args, fmt);
  vsnprintf(p->error + used, p->error_size - (size_t)used, fmt, args);
  va_end(args);
  return 1;
}

static void skip_space(parser *p) {
  while (p->pos < p->size) {
    char c = p->text[p->pos];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
    ++p->pos;
  }
}

static int peek(parser *p) { return p->pos < p->size ? (unsigned char)p->text[p->pos] : -1; }

static int parse_value(parser *p, ct_json *out, int depth);

/* ---- strings ---------------------------------------------------------------- */

typedef struct strbuf {
  char *data;
  size_t len, cap;
} strbuf;

static int strbuf_put(strbuf *b, const char *s, size_t n) {
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 16;
    while (cap < b->len + n + 1) cap *= 2;
    char *data = realloc(b->data, cap);
    if (data == NULL) return 1;
    b->data = data, b->cap = cap;
  }
  memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = '\0';
  return 0;
}

static int put_code_point(strbuf *b, uint32_t cp) {
  char u[4];
  size_t n;
  if (cp < 0x80) {
    u[0] = (char)cp, n = 1;
  } else if (cp < 0x800) {
    u[0] = (char)(0xC0 | cp >> 6), u[1] = (char)(0x80 | (cp & 0x3F)), n = 2;
  } else if (cp < 0x10000) {
    u[0] = (char)(0xE0 | cp >> 12), u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    u[2] = (char)(0x80 | (cp & 0x3F)), n = 3;
  } else {
    u[0] = (char)(0xF0 | cp >> 18), u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    u[2] = (char)(0x80 | ((cp >> 6) & 0x3F)), u[3] = (char)(0x80 | (cp & 0x3F)), n = 4;
  }
  return strbuf_put(b, u, n);
}

static int hex4(parser *p, uint32_t *out) {
  if (p->size - p->pos < 4) return fail(p, "a \\u escape needs four hex digits");
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) {
    char c = p->text[p->pos + (size_t)i];
    int d = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                   : -1;
    if (d < 0) return fail(p, "a \\u escape needs four hex digits");
    v = v << 4 | (uint32_t)d;
  }
  p->pos += 4;
  *out = v;
  return 0;
}

static int parse_escape(parser *p, strbuf *b) {
  if (p->pos >= p->size) return fail(p, "the text ends inside a string");
  char c = p->text[p->pos++];
  static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
  const char *hit = strchr(from, c);
  if (hit && c) return strbuf_put(b, &to[hit - from], 1) ? fail(p, "out of memory") : 0;
  if (c != 'u') return fail(p, "unknown escape '\\%c' in a string", c);
  uint32_t cp;
  if (hex4(p, &cp)) return 1;
  if (cp >= 0xDC00 && cp <= 0xDFFF) return fail(p, "a lone low surrogate in a \\u escape");
  if (cp >= 0xD800 && cp <= 0xDBFF) {
    uint32_t lo;
    if (p->size - p->pos < 2 || p->text[p->pos] != '\\' || p->text[p->pos + 1] != 'u')
      return fail(p, "a high surrogate \\u escape without its low half");
    p->pos += 2;
    if (hex4(p, &lo)) return 1;
    if (lo < 0xDC00 || lo > 0xDFFF)
      return fail(p, "a high surrogate \\u escape without its low half");
    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
  }
  return put_code_point(b, cp) ? fail(p, "out of memory") : 0;
}

/* Parses a string at p->pos (which holds '"') into *out / *len. */
static int parse_string(parser *p, char **out, size_t *len) {
  strbuf b = {NULL, 0, 0};
  ++p->pos; /* the opening quote */
  for (;;) {
    if (p->pos >= p->size) {
      fail(p, "the text ends inside a string");
      break;
    }
    size_t start = p->pos;
    while (p->pos < p->size) {
      unsigned char c = (unsigned char)p->text[p->pos];
      if (c == '"' || c == '\\' || c < 0x20) break;
      ++p->pos;
    }
    if (!ct_json_utf8_valid(p->text + start, p->pos - start)) {
      fail(p, "a string is not valid UTF-8");
      break;
    }
    if (strbuf_put(&b, p->text + start, p->pos - start)) {
      fail(p, "out of memory");
      break;
    }
    int c = peek(p);
    if (c == '"') {
      ++p->pos;
      if (b.data == NULL && strbuf_put(&b, "", 0)) {
        fail(p, "out of memory");
        break;
      }
      *out = b.data;
      *len = b.len;
      return 0;
    }
    if (c == '\\') {
      ++p->pos;
      if (parse_escape(p, &b)) break;
    } else if (c >= 0) {
      fail(p, "a raw control character (0x%02x) in a string; write it as an escape", c);
      break;
    }
  }
  free(b.data);
  return 1;
}

/* ---- numbers and literals ------------------------------------------------------- */

static int is_digit(int c) { return c >= '0' && c <= '9'; }

static int parse_number(parser *p, ct_json *out) {
  size_t start = p->pos;
  int integral = 1;
  if (peek(p) == '-') ++p->pos;
  if (peek(p) == '0') {
    ++p->pos;
  } else if (is_digit(peek(p))) {
    while (is_digit(peek(p))) ++p->pos;
  } else {
    return fail(p, "a number needs digits");
  }
  if (peek(p) == '.') {
    integral = 0;
    ++p->pos;
    if (!is_digit(peek(p))) return fail(p, "a number needs digits after '.'");
    while (is_digit(peek(p))) ++p->pos;
  }
  if (peek(p) == 'e' || peek(p) == 'E') {
    integral = 0;
    ++p->pos;
    if (peek(p) == '+' || peek(p) == '-') ++p->pos;
    if (!is_digit(peek(p))) return fail(p, "a number needs digits in its exponent");
    while (is_digit(peek(p))) ++p->pos;
  }
  char buf[400];
  size_t n = p->pos - start;
  if (n >= sizeof buf) return fail(p, "a number of %zu characters is too long", n);
  memcpy(buf, p->text + start, n);
  buf[n] = '\0';
  out->type = CT_JSON_NUMBER;
  out->number = strtod(buf, NULL);
  if (integral) {
    errno = 0;
    long long v = strtoll(buf, NULL, 10);
    if (errno == 0) out->is_integer = 1, out->integer = v;
  }
  return 0;
}

static int parse_literal(parser *p, const char *word, ct_json *out, ct_json_type type, int b) {
  size_t n = strlen(word);
  if (p->size - p->pos < n || memcmp(p->text + p->pos, word, n) != 0)
    return fail(p, "expected a JSON value");
  p->pos += n;
  out->type = type;
  out->boolean = b;
  return 0;
}

/* ---- arrays and objects ----------------------------------------------------------- */

/* Grows items (and keys when is_object) to hold one more member. */
static int grow(ct_json *v, size_t *cap, int is_object) {
  if (v->count < *cap) return 0;
  size_t new_cap = *cap ? *cap * 2 : 4;
  ct_json *items = realloc(v->items, new_cap * sizeof *items);
  if (items == NULL) return 1;
  v->items = items;
  if (is_object) {
    char **keys = realloc(v->keys, new_cap * sizeof *keys);
    if (keys == NULL) return 1;
    v->keys = keys;
    size_t *lens = realloc(v->key_lengths, new_cap * sizeof *lens);
    if (lens == NULL) return 1;
    v->key_lengths = lens;
  }
  *cap = new_cap;
  return 0;
}

static int parse_array(parser *p, ct_json *out, int depth) {
  out->type = CT_JSON_ARRAY;
  size_t cap = 0;
  ++p->pos;
  skip_space(p);
  if (peek(p) == ']') return ++p->pos, 0;
  for (;;) {
    if (grow(out, &cap, 0)) return fail(p, "out of memory");
    ct_json *item = &out->items[out->count];
    memset(item, 0, sizeof *item);
    ++out->count;
    if (parse_value(p, item, depth + 1)) return 1;
    skip_space(p);
    int c = peek(p);
    ++p->pos;
    if (c == ']') return 0;
    if (c != ',') return --p->pos, fail(p, "expected ',' or ']' in an array");
  }
}

static int parse_object(parser *p, ct_json *out, int depth) {
  out->type = CT_JSON_OBJECT;
  size_t cap = 0;
  ++p->pos;
  skip_space(p);
  if (peek(p) == '}') return ++p->pos, 0;
  for (;;) {
    skip_space(p);
    if (peek(p) != '"') return fail(p, "expected a string key in an object");
    if (grow(out, &cap, 1)) return fail(p, "out of memory");
    ct_json *item = &out->items[out->count];
    memset(item, 0, sizeof *item);
    out->keys[out->count] = NULL;
    ++out->count;
    if (parse_string(p, &out->keys[out->count - 1], &out->key_lengths[out->count - 1])) return 1;
    skip_space(p);
    if (peek(p) != ':') return fail(p, "expected ':' after an object key");
    ++p->pos;
    if (parse_value(p, item, depth + 1)) return 1;
    skip_space(p);
    int c = peek(p);
    ++p->pos;
    if (c == '}') return 0;
    if (c != ',') return --p->pos, fail(p, "expected ',' or '}' in an object");
  }
}

static int parse_value(parser *p, ct_json *out, int depth) {
  if (depth > JSON_MAX_DEPTH) return fail(p, "values nest deeper than %d levels", JSON_MAX_DEPTH);
  skip_space(p);
  switch (peek(p)) {
    case '{':
      return parse_object(p, out, depth);
    case '[':
      return parse_array(p, out, depth);
    case '"':
      out->type = CT_JSON_STRING;
      return parse_string(p, &out->string, &out->length);
    case 't':
      return parse_literal(p, "true", out, CT_JSON_BOOL, 1);
    case 'f':
      return parse_literal(p, "false", out, CT_JSON_BOOL, 0);
    case 'n':
      return parse_literal(p, "null", out, CT_JSON_NULL, 0);
    case -1:
      return fail(p, "the text ends where a value should be");
    default:
      if (peek(p) == '-' || is_digit(peek(p))) return parse_number(p, out);
      return fail(p, "expected a JSON value");
  }
}

static void free_children(ct_json *v) {
  for (size_t i = 0; i < v->count; ++i) {
    free_children(&v->items[i]);
    if (v->keys) free(v->keys[i]);
  }
  free(v->items);
  free(v->keys);
  free(v->key_lengths);
  free(v->string);
}

ct_json *ct_json_parse(const char *text, size_t size, char *error, size_t error_size) {
  parser p = {text, size, 0, error, error_size, 0};
  if (error_size) error[0] = '\0';
  ct_json *root = calloc(1, sizeof *root);
  if (root == NULL) {
    fail(&p, "out of memory");
    return NULL;
  }
  if (parse_value(&p, root, 0) == 0) {
    skip_space(&p);
    if (p.pos < p.size) fail(&p, "unexpected text after the JSON value");
  }
  if (p.failed) {
    ct_json_free(root);
    return NULL;
  }
  return root;
}

void ct_json_free(ct_json *value) {
  if (value == NULL) return;
  free_children(value);
  free(value);
}

const ct_json *ct_json_get(const ct_json *object, const char *key) {
  if (object == NULL || object->type != CT_JSON_OBJECT) return NULL;
  size_t n = strlen(key);
  for (size_t i = 0; i < object->count; ++i)
    if (object->key_lengths[i] == n && memcmp(object->keys[i], key, n) == 0)
      return &object->items[i];
  return NULL;
}

/* ---- UTF-8 and escaping ------------------------------------------------------------ */

int ct_json_utf8_valid(const char *s, size_t size) {
  const unsigned char *u = (const unsigned char *)s;
  size_t i = 0;
  while (i < size) {
    unsigned c = u[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t n;
    uint32_t cp, min;
    if ((c & 0xE0) == 0xC0)
      n = 2, cp = c & 0x1F, min = 0x80;
    else if ((c & 0xF0) == 0xE0)
      n = 3, cp = c & 0x0F, min = 0x800;
    else if ((c & 0xF8) == 0xF0)
      n = 4, cp = c & 0x07, min = 0x10000;
    else
      return 0;
    if (size - i < n) return 0;
    for (size_t k = 1; k < n; ++k) {
      if ((u[i + k] & 0xC0) != 0x80) return 0;
      cp = cp << 6 | (u[i + k] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    i += n;
  }
  return 1;
}

size_t ct_json_escape(const char *s, char *out, size_t out_size) {
  size_t need = 0;
#define EMIT(ch)                                     \
  do {                                               \
    if (need + 1 < out_size) out[need] = (char)(ch); \
    ++need;                                          \
  } while (0)
  EMIT('"');
  for (const unsigned char *u = (const unsigned char *)s; *u; ++u) {
    unsigned c = *u;
    if (c == '"' || c == '\\') {
      EMIT('\\');
      EMIT(c);
    } else if (c < 0x20) {
      static const char hex[] = "0123456789abcdef";
      EMIT('\\');
      EMIT('u');
      EMIT('0');
      EMIT('0');
      EMIT(hex[c >> 4]);
      EMIT(hex[c & 15]);
    } else {
      EMIT(c);
    }
  }
  EMIT('"');
#undef EMIT
  if (out_size) out[need < out_size ? need : out_size - 1] = '\0';
  return need;
}
