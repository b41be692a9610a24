/* YAML scalars written so that the config's reader reads them back the same. */
#include "config/yaml_write.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Whether s reads back as the same string when written without quotes,
 * in block and in flow context. */
static int plain_safe(const char *s) {
  static const char *const specials[] = {"true", "false", "yes", "no",   "on",
                                         "off",  "y",     "n",   "null", "~"};
  if (s[0] == '\0') return 0;
  if (!(s[0] == '/' || s[0] == '_' || s[0] == '.' || (s[0] >= '0' && s[0] <= '9') ||
        (s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z')))
    return 0;
  for (const char *p = s; *p; ++p) {
    const char c = *p;
    const int ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                   c == '_' || c == '.' || c == '/' || c == '-' || c == '+' ||
                   (c == ':' && p[1] != '\0');
    if (!ok) return 0;
  }
  for (size_t i = 0; i < sizeof specials / sizeof specials[0]; ++i)
    if (strcasecmp(s, specials[i]) == 0) return 0;
  return 1;
}

void ct_config_write_string(const char *s, FILE *out) {
  if (plain_safe(s)) {
    fputs(s, out);
    return;
  }
  fputc('"', out);
  for (const unsigned char *p = (const unsigned char *)s; *p; ++p) {
    switch (*p) {
      case '"':
        fputs("\\\"", out);
        break;
      case '\\':
        fputs("\\\\", out);
        break;
      case '\n':
        fputs("\\n", out);
        break;
      case '\t':
        fputs("\\t", out);
        break;
      default:
        if (*p < 0x20 || *p == 0x7f)
          fprintf(out, "\\x%02x", *p);
        else
          fputc(*p, out);
    }
  }
  fputc('"', out);
}

/* The shortest text that strtod reads back as exactly v, with a '.' or 'e'. */
void ct_config_write_double(double v, FILE *out) {
  char buf[40];
  for (int digits = 1; digits <= 17; ++digits) {
    snprintf(buf, sizeof buf, "%.*g", digits, v);
    if (strtod(buf, NULL) == v) break;
  }
  if (strpbrk(buf, ".eEn") == NULL) strcat(buf, ".0");
  fputs(buf, out);
}
