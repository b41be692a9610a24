/* model.layers: a YAML list of layers to the library's ct_layer_list, and
 * back to YAML (private to src/config).
 *
 * Each item is a layer type, alone (`- flatten`) or with its parameters
 * (`- conv2d: {filters: 32, kernel: 5}`); a residual block holds its own
 * list (`- residual: {layers: [...]}`), which follows it in the flat
 * ct_layer_list (its n_inner entries). docs/config.md lists the types and
 * their parameters. */
#ifndef CTOWER_CONFIG_CONFIG_LAYERS_H
#define CTOWER_CONFIG_CONFIG_LAYERS_H

#include <stddef.h>
#include <stdio.h>

#include "config/yaml_tree.h"
#include "ctower/models.h"

/* Reads node (a list; null: no layers) into *out. On error returns 1 with a
 * message naming the item ("model.layers[2] (conv2d): ...") in error and
 * the line at fault in *error_line (0: the caller's line). */
int ct_config_layers_parse(const ct_ynode *node, ct_layer_list *out, char *error, size_t size,
                           int *error_line);

/* Writes the list in flow style, one line, as ct_config_layers_parse reads
 * it back: every parameter of every layer. */
void ct_config_layers_write(const ct_layer_list *layers, FILE *out);

#endif
