/* YAML scalars as text that ct_config_load reads back the same (private to
 * src/config): config_write.c's and config_layers.c's. */
#ifndef CTOWER_CONFIG_YAML_WRITE_H
#define CTOWER_CONFIG_YAML_WRITE_H

#include <stdio.h>

/* A string, quoted where YAML needs it. */
void ct_config_write_string(const char *s, FILE *out);
/* The shortest text of a double that reads back exactly, with a '.' or 'e'. */
void ct_config_write_double(double v, FILE *out);

#endif
