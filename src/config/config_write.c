/* ct_config_write: the effective config as YAML that ct_config_load reads
 * back to the same struct. */
#include "ctower/config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/config_layers.h"
#include "config/config_schema.h"

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

static void write_field(const ct_config *config, const ct_config_field *f, FILE *out) {
  const char *at = (const char *)config + f->offset;
  switch (f->type) {
    case CT_FIELD_STR:
      ct_config_write_string(at, out);
      break;
    case CT_FIELD_INT: {
      int64_t v;
      memcpy(&v, at, sizeof v);
      fprintf(out, "%lld", (long long)v);
      break;
    }
    case CT_FIELD_FLOAT: {
      double v;
      memcpy(&v, at, sizeof v);
      ct_config_write_double(v, out);
      break;
    }
    case CT_FIELD_BOOL: {
      int v;
      memcpy(&v, at, sizeof v);
      fputs(v ? "true" : "false", out);
      break;
    }
    case CT_FIELD_KINDMAP: {
      int64_t cpu, gpu;
      memcpy(&cpu, at, sizeof cpu);
      memcpy(&gpu, (const char *)config + f->offset2, sizeof gpu);
      fprintf(out, "{CPU: %lld, GPU: %lld}", (long long)cpu, (long long)gpu);
      break;
    }
    case CT_FIELD_STR_LIST:
    case CT_FIELD_INT_LIST:
    case CT_FIELD_FLOAT_LIST: {
      int n;
      memcpy(&n, (const char *)config + f->offset2, sizeof n);
      if (n < 0) n = 0;
      if ((size_t)n > f->cap) n = (int)f->cap;
      fputc('[', out);
      for (int i = 0; i < n; ++i) {
        if (i) fputs(", ", out);
        if (f->type == CT_FIELD_STR_LIST) {
          ct_config_write_string(at + (size_t)i * f->size, out);
        } else if (f->type == CT_FIELD_FLOAT_LIST) {
          double v;
          memcpy(&v, at + (size_t)i * sizeof v, sizeof v);
          ct_config_write_double(v, out);
        } else {
          int64_t v;
          memcpy(&v, at + (size_t)i * sizeof v, sizeof v);
          fprintf(out, "%lld", (long long)v);
        }
      }
      fputc(']', out);
      break;
    }
    case CT_FIELD_LAYERS:
      ct_config_layers_write((const ct_layer_list *)(const void *)at, out);
      break;
  }
}

void ct_config_write(const ct_config *config, FILE *out) {
  if (config->source[0] != '\0')
    fprintf(out, "# ctower effective config (read from %s, then overrides)\n", config->source);
  else
    fputs("# ctower effective config (defaults, then overrides)\n", out);
  const char *prev = "";
  for (size_t i = 0; i < ct_config_n_fields; ++i) {
    const char *path = ct_config_fields[i].path;
    /* Open the sections where this path first differs from the previous one. */
    const char *p = path, *q = prev;
    int depth = 0, same = 1;
    for (;;) {
      const size_t plen = strcspn(p, ".");
      if (p[plen] == '\0') break; /* p is the key itself */
      const size_t qlen = strcspn(q, ".");
      same = same && qlen == plen && strncmp(p, q, plen) == 0 && q[qlen] == '.';
      if (!same) fprintf(out, "%*s%.*s:\n", 2 * depth, "", (int)plen, p);
      p += plen + 1;
      q = same ? q + qlen + 1 : q;
      ++depth;
    }
    fprintf(out, "%*s%s: ", 2 * depth, "", p);
    write_field(config, &ct_config_fields[i], out);
    fputc('\n', out);
    prev = path;
  }
}
