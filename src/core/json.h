/* A small strict JSON (RFC 8259) reader and string escaper, private to ctower.
 *
 * ct_json_parse builds a tree of values the caller frees with ct_json_free.
 * Objects keep their members in file order. Strings are decoded to UTF-8 and
 * NUL-terminated; `length` tells the real length, which differs from strlen
 * when the text held "\u0000".
 */
#ifndef CTOWER_CORE_JSON_H
#define CTOWER_CORE_JSON_H

#include <stddef.h>
#include <stdint.h>

typedef enum ct_json_type {
  CT_JSON_NULL,
  CT_JSON_BOOL,
  CT_JSON_NUMBER,
  CT_JSON_STRING,
  CT_JSON_ARRAY,
  CT_JSON_OBJECT
} ct_json_type;

typedef struct ct_json ct_json;
struct ct_json {
  ct_json_type type;
  int boolean;     /* CT_JSON_BOOL */
  double number;   /* CT_JSON_NUMBER */
  int is_integer;  /* CT_JSON_NUMBER written without fraction or exponent, fits int64 */
  int64_t integer; /* its exact value when is_integer */
  char *string;    /* CT_JSON_STRING */
  size_t length;   /* bytes in string */
  size_t count;    /* CT_JSON_ARRAY items or CT_JSON_OBJECT members */
  ct_json *items;  /* array items, or object member values */
  char **keys;     /* object member names (count of them) */
  size_t *key_lengths;
};

/* Parses exactly one JSON value (surrounded by optional whitespace) from
 * text[0..size). Returns the tree, or NULL when the text is not valid JSON
 * (or nests deeper than 64 levels, or memory runs out); then error holds a
 * sentence fragment such as "at byte 17: expected ':' after an object key". */
ct_json *ct_json_parse(const char *text, size_t size, char *error, size_t error_size);

/* Frees a tree from ct_json_parse; NULL is allowed. */
void ct_json_free(ct_json *value);

/* The member named key of an object, or NULL when absent or value is not an
 * object. With duplicate keys the first wins. */
const ct_json *ct_json_get(const ct_json *object, const char *key);

/* Nonzero when s[0..size) is well-formed UTF-8 (no overlongs, surrogates or
 * code points past U+10FFFF). */
int ct_json_utf8_valid(const char *s, size_t size);

/* Writes s as a JSON string literal, quotes included, into out (at most
 * out_size bytes, always NUL-terminated when out_size > 0). Returns the
 * length the full literal needs, like snprintf. s must be valid UTF-8. */
size_t ct_json_escape(const char *s, char *out, size_t out_size);

#endif
