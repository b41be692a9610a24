/* Layer lists (ct_layers_build): the list is checked (layer_check.c), then
 * each layer's input shape, then the layer is built with the helpers of
 * layers.c under its name scope and, when it names one, its device scope. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ctower/models.h"

void ct_layer_spec_defaults(ct_layer_spec *s, ct_layer_type type) {
  memset(s, 0, sizeof *s);
  s->type = type;
  s->repeat = 1;
  s->stride = 1;
  s->padding = CT_PADDING_VALID;
  s->params = (ct_layer_params){{CT_INIT_GLOROT_UNIFORM, 0.0f}, {CT_INIT_ZEROS, 0.0f}, 0.0f, 0};
  if (type == CT_LAYER_MAX_POOL || type == CT_LAYER_AVG_POOL) s->kernel = s->stride = 2;
  s->depth_radius = 5, s->bias = 1.0f, s->alpha = 1.0f, s->beta = 0.5f;
  s->rate = 0.5f;
  if (type == CT_LAYER_RESIDUAL) s->activation = CT_ACTIVATION_RELU;
}

/* Where a layer is: "layers[3] (conv2d 'conv2')". */
typedef struct layer_at {
  const ct_layer_spec *spec;
  char where[96]; /* "layers[3]", "layers[5].layers[1]" */
  char name[CT_LAYER_NAME + 16];
} layer_at;

static ct_output fail(ct_graph *g, const layer_at *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Records "layers[i] (type 'name'): <message>" in the graph; a null output. */
static ct_output fail(ct_graph *g, const layer_at *at, const char *fmt, ...) {
  char message[400];
  va_list args;
  va_start(args, fmt);
  vsnprintf(message, sizeof message, fmt, args);
  va_end(args);
  ct_graph_set_error(g, CT_INVALID_ARGUMENT, "%s (%s '%s'): %s", at->where,
                     ct_layer_type_name(at->spec->type), at->name, message);
  return (ct_output){NULL, 0};
}

/* The rows or columns a window of `size` leaves at `stride`. */
static int64_t window_out(int64_t in, int size, int stride, ct_padding padding) {
  if (padding == CT_PADDING_SAME) return (in + stride - 1) / stride;
  return in < size ? 0 : (in - size) / stride + 1;
}

/* Whether x's shape fits the layer; records why not. */
static int input_fits(ct_graph *g, const layer_at *at, ct_shape in) {
  const ct_layer_spec *s = at->spec;
  char a[96], b[96];
  const int spatial = s->type == CT_LAYER_CONV2D || s->type == CT_LAYER_MAX_POOL ||
                      s->type == CT_LAYER_AVG_POOL || s->type == CT_LAYER_LRN ||
                      s->type == CT_LAYER_GLOBAL_AVG_POOL;
  if (spatial && in.rank != 4) {
    fail(g, at, "needs images [?, height, width, channels], got %s; put it before the layers "
         "that flatten them", ct_shape_str(&in, a, sizeof a));
    return 0;
  }
  if (s->type == CT_LAYER_CONV2D && (s->kernel > in.dims[1] || s->kernel > in.dims[2])) {
    fail(g, at, "its %dx%d kernel is larger than its input %s; use a smaller kernel, or fewer "
         "pools before it", s->kernel, s->kernel, ct_shape_str(&in, a, sizeof a));
    return 0;
  }
  if (s->type == CT_LAYER_MAX_POOL || s->type == CT_LAYER_AVG_POOL) {
    ct_shape out = in;
    out.dims[1] = window_out(in.dims[1], s->kernel, s->stride, s->padding);
    out.dims[2] = window_out(in.dims[2], s->kernel, s->stride, s->padding);
    if (out.dims[1] < 1 || out.dims[2] < 1) {
      fail(g, at, "a %dx%d window at stride %d on %s leaves zero pixels: %s; use a smaller "
           "window, padding: same, or fewer pools before it", s->kernel, s->kernel, s->stride,
           ct_shape_str(&in, a, sizeof a), ct_shape_str(&out, b, sizeof b));
      return 0;
    }
  }
  if (in.rank < 2) {
    fail(g, at, "needs an input with a batch and a feature axis, got %s",
         ct_shape_str(&in, a, sizeof a));
    return 0;
  }
  return 1;
}

static ct_output build_list(ct_graph *g, ct_output x, const ct_layer_spec *specs, int n,
                            const char *where, int training, layer_at *last);

/* The shortcut of a residual block from x to the branch's shape, or a null
 * output (recorded) when none fits. */
static ct_output shortcut(ct_graph *g, const layer_at *at, ct_output x, ct_shape branch,
                          int training) {
  const ct_shape in = ct_output_shape(x);
  char a[96], b[96];
  if (!at->spec->projection) {
    int same = in.rank == branch.rank;
    for (int d = 1; d < in.rank && same; ++d) same = in.dims[d] == branch.dims[d];
    if (same) return x;
    return fail(g, at, "its branch gives %s but the identity shortcut carries its input %s; "
                "use shortcut: projection, or layers that keep the shape",
                ct_shape_str(&branch, a, sizeof a), ct_shape_str(&in, b, sizeof b));
  }
  for (int stride = 1; in.rank == 4 && branch.rank == 4 && stride <= in.dims[1]; ++stride)
    if (window_out(in.dims[1], 1, stride, CT_PADDING_SAME) == branch.dims[1] &&
        window_out(in.dims[2], 1, stride, CT_PADDING_SAME) == branch.dims[2])
      return ct_layer_conv2d_bn(g, x, (int)branch.dims[3], 1, stride, CT_ACTIVATION_NONE,
                                training, "shortcut");
  return fail(g, at, "no strided 1x1 projection takes its input %s to its branch's %s; the "
              "branch must keep the images or shrink both sides by one stride",
              ct_shape_str(&in, a, sizeof a), ct_shape_str(&branch, b, sizeof b));
}

static ct_output residual(ct_graph *g, const layer_at *at, ct_output x, int training) {
  ct_graph_push_name_scope(g, at->name);
  ct_graph_push_variable_scope(g, at->name);
  layer_at last;
  ct_output y = build_list(g, x, at->spec + 1, at->spec->n_inner, at->where, training, &last);
  ct_output s = y.node ? shortcut(g, at, x, ct_output_shape(y), training) : y;
  if (s.node) {
    y = ct_add(g, y, s);
    if (at->spec->activation == CT_ACTIVATION_RELU) y = ct_relu(g, y);
  }
  ct_graph_pop_variable_scope(g);
  ct_graph_pop_name_scope(g);
  return s.node ? y : s;
}

static ct_output build_layer(ct_graph *g, const layer_at *at, ct_output x, int training) {
  const ct_layer_spec *s = at->spec;
  if (!input_fits(g, at, ct_output_shape(x))) return (ct_output){NULL, 0};
  switch (s->type) {
    case CT_LAYER_CONV2D:
      return ct_layer_conv2d_with(g, x, s->units, s->kernel, s->stride, s->padding,
                                  s->activation, &s->params, at->name);
    case CT_LAYER_DENSE:
      return ct_layer_dense_with(g, x, s->units, s->activation, &s->params, at->name);
    case CT_LAYER_MAX_POOL:
      return ct_layer_max_pool(g, x, s->kernel, s->stride, s->padding, at->name);
    case CT_LAYER_AVG_POOL:
      return ct_layer_avg_pool(g, x, s->kernel, s->stride, s->padding, at->name);
    case CT_LAYER_BATCH_NORM:
      return ct_layer_batch_norm(g, x, training, at->name);
    case CT_LAYER_LRN:
      return ct_layer_lrn(g, x, s->depth_radius, s->bias, s->alpha, s->beta, at->name);
    case CT_LAYER_DROPOUT:
      return ct_layer_dropout(g, x, s->rate, training, at->name);
    case CT_LAYER_GLOBAL_AVG_POOL:
      return ct_layer_global_avg_pool(g, x, at->name);
    case CT_LAYER_RESIDUAL:
      return residual(g, at, x, training);
    case CT_LAYER_FLATTEN:
    case CT_LAYER_RELU: {
      ct_graph_push_name_scope(g, at->name);
      ct_output y = s->type == CT_LAYER_RELU ? ct_relu(g, x) : ct_layer_flatten(g, x);
      ct_graph_pop_name_scope(g);
      return y;
    }
    case CT_LAYER_TYPE_COUNT:
      break;
  }
  return fail(g, at, "unknown layer type %d", (int)s->type);
}

/* Builds the n entries of a list (a block's inner entries count with it);
 * *last: where the last one is. */
static ct_output build_list(ct_graph *g, ct_output x, const ct_layer_spec *specs, int n,
                            const char *where, int training, layer_at *last) {
  for (int i = 0, index = 0; i < n && x.node && index < CT_MAX_LAYERS; ++index) {
    layer_at *at = last;
    *at = (layer_at){.spec = &specs[i]};
    snprintf(at->where, sizeof at->where, "%s%slayers[%d]", where, where[0] ? "." : "", index);
    const int inner = specs[i].type == CT_LAYER_RESIDUAL ? specs[i].n_inner : 0;
    char base[CT_LAYER_NAME];
    ct_layer_spec_name(&specs[i], index, base, sizeof base);
    snprintf(at->name, sizeof at->name, "%s", base);
    for (int copy = 0; copy < specs[i].repeat && x.node; ++copy) {
      if (copy > 0) snprintf(at->name, sizeof at->name, "%.*s_%d", CT_LAYER_NAME, base, copy + 1);
      if (specs[i].device[0]) ct_graph_push_device(g, specs[i].device);
      x = build_layer(g, at, x, training);
      if (specs[i].device[0]) ct_graph_pop_device(g);
    }
    i += 1 + inner;
  }
  return x;
}

ct_output ct_layers_build(ct_graph *g, ct_output x, const ct_layer_list *layers, int num_classes,
                          int training) {
  ct_status checked = CT_STATUS_INIT;
  if (ct_layer_list_check(layers, "", NULL, &checked)) {
    ct_graph_set_error(g, checked.code, "%s", checked.message);
    return (ct_output){NULL, 0};
  }
  layer_at last;
  ct_output y = build_list(g, x, layers->layers, layers->n, "", training, &last);
  if (y.node == NULL) return y;
  const ct_shape out = ct_output_shape(y);
  if (out.rank != 2 || out.dims[1] != num_classes) {
    char a[96];
    return fail(g, &last, "the last layer gives %s, but the logits of %d classes are [?, %d]; "
                "end with a dense layer of %d units", ct_shape_str(&out, a, sizeof a),
                num_classes, num_classes, num_classes);
  }
  return y;
}
