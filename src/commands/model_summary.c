/* The model's summary in `ctower plan`, as Keras' model.summary(): a row
 * per layer of the first tower with its output shape, parameters and
 * device, then the totals. A layer is a name scope directly under the
 * tower's ("tower_0/conv1/..."), so zoo, layer-list and library models
 * summarize alike; its output is the value that nodes outside it read. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands/model_summary.h"

static const char k_tower[] = "tower_0/";

typedef struct layer_row {
  char name[96];
  ct_output output; /* node NULL: nothing outside the layer reads it */
  int64_t params;
} layer_row;

/* The layer of a node of the first tower ("conv1" of "tower_0/conv1/Add")
 * into name; 0 when the node is outside the tower or in no layer. */
static int layer_of(const ct_node *node, char *name, size_t size) {
  const char *full = ct_node_name(node);
  if (strncmp(full, k_tower, sizeof k_tower - 1) != 0) return 0;
  const char *rest = full + sizeof k_tower - 1;
  const size_t len = strcspn(rest, "/");
  if (rest[len] != '/' || len >= size) return 0;
  memcpy(name, rest, len);
  name[len] = '\0';
  return 1;
}

/* The row of that layer, added at the end when new; NULL when full. */
static layer_row *row_of(layer_row *rows, int *n, int cap, const char *name) {
  for (int i = 0; i < *n; ++i)
    if (strcmp(rows[i].name, name) == 0) return &rows[i];
  if (*n == cap) return NULL;
  layer_row *r = &rows[(*n)++];
  memset(r, 0, sizeof *r);
  snprintf(r->name, sizeof r->name, "%s", name);
  return r;
}

/* Whether the variable a node of the first tower reads is trainable. */
static int trainable(const ct_graph *g, const ct_node *node) {
  const char *name = ct_node_name(node) + sizeof k_tower - 1;
  for (int v = 0; v < ct_graph_variable_count(g); ++v)
    if (strcmp(ct_graph_variable_name(g, v), name) == 0) return ct_graph_variable_trainable(g, v);
  return 1;
}

/* 1234567 -> "1,234,567". */
static const char *thousands(int64_t v, char *buf, size_t size) {
  char digits[32];
  const int n = snprintf(digits, sizeof digits, "%lld", (long long)v);
  size_t used = 0;
  for (int i = 0; i < n && used + 1 < size; ++i) {
    if (i > 0 && (n - i) % 3 == 0 && used + 2 < size) buf[used++] = ',';
    buf[used++] = digits[i];
  }
  buf[used] = '\0';
  return buf;
}

int ct_print_model_summary(ct_session *s, const ct_graph *g, const char *model,
                           ct_status *status) {
  const int n_nodes = ct_graph_node_count(g), cap = 512;
  layer_row *rows = calloc((size_t)cap, sizeof *rows);
  if (rows == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory");
    return 1;
  }
  int n_rows = 0;
  int64_t total = 0, fixed = 0;
  for (int i = 0; i < n_nodes; ++i) {
    const ct_node *node = ct_graph_node(g, i);
    char layer[96], from[96];
    const int in_layer = layer_of(node, layer, sizeof layer);
    layer_row *row = in_layer ? row_of(rows, &n_rows, cap, layer) : NULL;
    if (strcmp(ct_node_op(node), "Variable") == 0 &&
        strncmp(ct_node_name(node), k_tower, sizeof k_tower - 1) == 0) {
      const ct_shape shape = ct_output_shape((ct_output){(ct_node *)node, 0});
      int64_t count = 1;
      for (int d = 0; d < shape.rank; ++d) count *= shape.dims[d];
      total += count;
      if (!trainable(g, node)) fixed += count;
      if (row) row->params += count;
      continue;
    }
    if (strncmp(ct_node_name(node), k_tower, sizeof k_tower - 1) != 0) continue;
    for (int k = 0; k < ct_node_num_inputs(node); ++k) {
      const ct_output in = ct_node_input(node, k);
      if (in.node && strcmp(ct_node_op(in.node), "Variable") != 0 &&
          layer_of(in.node, from, sizeof from) && (!in_layer || strcmp(from, layer) != 0)) {
        layer_row *source = row_of(rows, &n_rows, cap, from);
        if (source) source->output = in;
      }
    }
  }
  int failed = 0;
  char shape[96], count[32];
  printf("model: %s, %d layers (tower 0; every tower holds the same)\n", model, n_rows);
  printf("  %-28s %-22s %12s  %s\n", "layer", "output shape", "params", "device");
  for (int i = 0; i < n_rows && !failed; ++i) {
    const layer_row *r = &rows[i];
    const ct_shape out = r->output.node ? ct_output_shape(r->output) : ct_shape_of(0);
    int device = -1;
    if (r->output.node)
      failed = ct_session_node_placement(s, r->output.node, &device, NULL, status);
    const char *name = device >= 0 ? ct_session_device_name(s, device) : "-";
    const char *short_name = strstr(name, "device:");
    printf("  %-28s %-22s %12s  %s\n", r->name,
           r->output.node ? ct_shape_str(&out, shape, sizeof shape) : "-",
           thousands(r->params, count, sizeof count), short_name ? short_name + 7 : name);
  }
  if (!failed) {
    char a[32], b[32];
    printf("  total params: %s (%.2f MiB): trainable %s, non-trainable %s\n",
           thousands(total, count, sizeof count), (double)total * 4 / 1048576.0,
           thousands(total - fixed, a, sizeof a), thousands(fixed, b, sizeof b));
  }
  free(rows);
  return failed;
}
