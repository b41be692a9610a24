/* A layer list as the value of model.layers: the config refuses it with a
 * status, or the list builds a graph in which no two layers share a
 * variable. Each layer reads each of its variables once, so a variable
 * read twice is one that two layers share: the graph must hold as many
 * variable reads as variables. A list the config accepted must never meet
 * the layers' own refusal of a shared variable either (the config's name
 * check comes first). Never a crash, hang or leak. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctower/config.h"
#include "fuzz_common.h"

/* Variable reads in g: nodes of op "Variable". */
static int variable_reads(const ct_graph *g) {
  int reads = 0;
  for (int i = 0; i < ct_graph_node_count(g); ++i)
    reads += strcmp(ct_node_op(ct_graph_node(g, i)), "Variable") == 0;
  return reads;
}

/* Whether g's error is the layers' refusal of a variable that exists
 * already (its message starts with that variable's name: a layer's name in
 * another error may hold any words). */
static int refused_a_shared_variable(const ct_graph *g) {
  const char *message = ct_graph_status(g)->message;
  for (int v = 0; v < ct_graph_variable_count(g); ++v) {
    char head[1200];
    snprintf(head, sizeof head, "variable '%s' exists already,", ct_graph_variable_name(g, v));
    if (strncmp(message, head, strlen(head)) == 0) return 1;
  }
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char prefix[] = "model.layers=";
  char *text = malloc(sizeof prefix + size);
  if (text == NULL) return 0;
  memcpy(text, prefix, sizeof prefix - 1);
  memcpy(text + sizeof prefix - 1, data, size);
  text[sizeof prefix - 1 + size] = '\0';
  ct_config config;
  ct_config_defaults(&config);
  ct_status status = CT_STATUS_INIT;
  const int refused = ct_config_apply_override(&config, text, &status);
  free(text);
  if (refused || config.model.layers.n == 0) return 0;
  ct_graph *g = ct_graph_new();
  if (g == NULL) abort();
  const ct_output images =
      ct_placeholder(g, "images", CT_F32, ct_shape_of(4, (int64_t)-1, 12L, 12L, 3L));
  ct_layers_build(g, images, &config.model.layers, 10, 1);
  if (variable_reads(g) != ct_graph_variable_count(g)) abort(); /* a variable two layers share */
  if (refused_a_shared_variable(g)) abort(); /* a clash the config's check let by */
  ct_graph_free(g);
  return 0;
}
