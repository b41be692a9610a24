/* ct_config_write: the effective config as YAML that ct_config_load reads
 * back to the same struct. */
#include "ctower/config.h"

#include <stdint.h>
#include <string.h>

#include "config/config_layers.h"
#include "config/config_schema.h"
#include "config/yaml_write.h"

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
