/* The private JSON reader: values, escapes, strictness, depth limit, and the
 * escaper's output parsing back to the original. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "test_support.h"

static ct_json *parse_ok(const char *text) {
  char error[200];
  ct_json *v = ct_json_parse(text, strlen(text), error, sizeof error);
  if (v == NULL) print_error("'%s' did not parse: %s\n", text, error);
  assert_non_null(v);
  return v;
}

static void parse_bad(const char *text, const char *want) {
  char error[200];
  ct_json *v = ct_json_parse(text, strlen(text), error, sizeof error);
  if (v != NULL || strstr(error, want) == NULL)
    print_error("'%s': want an error with '%s', got '%s'\n", text, want, v ? "(parsed)" : error);
  assert_null(v);
  assert_non_null(strstr(error, want));
}

static void test_values(void **state) {
  (void)state;
  ct_json *v = parse_ok(
      " {\"a\": [1, -2, 3.5, 1e3, 9223372036854775807, 18446744073709551616],\n"
      "  \"b\": {\"t\": true, \"f\": false, \"n\": null}, \"s\": \"x\"} ");
  assert_int_equal(v->type, CT_JSON_OBJECT);
  assert_int_equal(v->count, 3);
  assert_string_equal(v->keys[0], "a");
  const ct_json *a = ct_json_get(v, "a");
  assert_int_equal(a->type, CT_JSON_ARRAY);
  assert_int_equal(a->count, 6);
  assert_true(a->items[0].is_integer && a->items[0].integer == 1);
  assert_true(a->items[1].is_integer && a->items[1].integer == -2);
  assert_true(!a->items[2].is_integer && a->items[2].number == 3.5);
  assert_true(!a->items[3].is_integer && a->items[3].number == 1000.0);
  assert_true(a->items[4].is_integer && a->items[4].integer == INT64_MAX);
  assert_false(a->items[5].is_integer); /* too big for int64 */
  const ct_json *b = ct_json_get(v, "b");
  assert_int_equal(ct_json_get(b, "t")->type, CT_JSON_BOOL);
  assert_true(ct_json_get(b, "t")->boolean);
  assert_false(ct_json_get(b, "f")->boolean);
  assert_int_equal(ct_json_get(b, "n")->type, CT_JSON_NULL);
  assert_string_equal(ct_json_get(v, "s")->string, "x");
  assert_null(ct_json_get(v, "missing"));
  assert_null(ct_json_get(a, "a")); /* not an object */
  ct_json_free(v);
  v = parse_ok("[]");
  assert_int_equal(v->count, 0);
  ct_json_free(v);
  v = parse_ok("\"\"");
  assert_string_equal(v->string, "");
  ct_json_free(v);
}

static void test_escapes_and_utf8(void **state) {
  (void)state;
  ct_json *v = parse_ok("\"q\\\" b\\\\ s\\/ \\b\\f\\n\\r\\t \\u00e9 \\u2713 \\ud83d\\ude00 é\"");
  assert_string_equal(v->string, "q\" b\\ s/ \b\f\n\r\t é ✓ 😀 é");
  ct_json_free(v);
  v = parse_ok("\"a\\u0000b\"");
  assert_int_equal(v->length, 3);
  assert_int_equal(strlen(v->string), 1);
  ct_json_free(v);
  parse_bad("\"\\ud83d x\"", "surrogate");
  parse_bad("\"\\ude00\"", "surrogate");
  parse_bad("\"\\x41\"", "unknown escape");
  parse_bad("\"\\u12g4\"", "hex digits");
  parse_bad("\"tab\there\"", "control character");
  parse_bad("\"\xc3\x28\"", "UTF-8");
  parse_bad("\"\xe0\x80\xaf\"", "UTF-8"); /* overlong */
  parse_bad("\"open", "ends inside a string");
}

static void test_strictness(void **state) {
  (void)state;
  parse_bad("", "ends where a value should be");
  parse_bad("{\"a\":1,}", "string key");
  parse_bad("[1,]", "expected a JSON value");
  parse_bad("{\"a\" 1}", "':'");
  parse_bad("{\"a\":1 \"b\":2}", "',' or '}'");
  parse_bad("[1 2]", "',' or ']'");
  parse_bad("01", "unexpected text");
  parse_bad("1.", "digits after '.'");
  parse_bad("-", "needs digits");
  parse_bad("1e", "exponent");
  parse_bad("tru", "expected a JSON value");
  parse_bad("{} {}", "unexpected text");
  parse_bad("{'a':1}", "string key");
  char deep[200];
  memset(deep, '[', 100);
  memset(deep + 100, ']', 100);
  char error[200];
  assert_null(ct_json_parse(deep, sizeof deep, error, sizeof error));
  assert_non_null(strstr(error, "deeper than 64"));
  assert_non_null(strstr(error, "at byte "));
  /* Parsing stops at size, not at a NUL. */
  ct_json *v = ct_json_parse("[1]xyz", 3, error, sizeof error);
  assert_non_null(v);
  ct_json_free(v);
}

static void test_escape_round_trip(void **state) {
  (void)state;
  const char *inputs[] = {"", "plain", "q\"uote\\", "ctl\x01\n\t\x1f", "é ✓ 😀"};
  for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; ++i) {
    char buf[128];
    size_t need = ct_json_escape(inputs[i], buf, sizeof buf);
    assert_int_equal(need, strlen(buf));
    ct_json *v = parse_ok(buf);
    assert_string_equal(v->string, inputs[i]);
    ct_json_free(v);
  }
  char tiny[4];
  assert_int_equal(ct_json_escape("abcdef", tiny, sizeof tiny), 8);
  assert_string_equal(tiny, "\"ab");
  assert_true(ct_json_utf8_valid("é ✓", strlen("é ✓")));
  assert_false(ct_json_utf8_valid("\xed\xa0\x80", 3));     /* a surrogate */
  assert_false(ct_json_utf8_valid("\xf4\x90\x80\x80", 4)); /* past U+10FFFF */
  assert_false(ct_json_utf8_valid("\xc3", 1));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_values),
      cmocka_unit_test(test_escapes_and_utf8),
      cmocka_unit_test(test_strictness),
      cmocka_unit_test(test_escape_round_trip),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
