/* Layer helpers: variables under the layer's variable scope, nodes under its
 * name scope. A layer creates its variables (ct_variable_create): a second
 * layer of the same name is an error unless reuse was asked for, never a
 * silent share of the first one's weights. */
#include "ctower/models.h"

static ct_output activate(ct_graph *g, ct_output x, ct_activation activation) {
  switch (activation) {
    case CT_ACTIVATION_RELU: return ct_relu(g, x);
    case CT_ACTIVATION_SIGMOID: return ct_sigmoid(g, x);
    case CT_ACTIVATION_TANH: return ct_tanh(g, x);
    default: return x;
  }
}

static void enter(ct_graph *g, const char *name) {
  ct_graph_push_name_scope(g, name);
  ct_graph_push_variable_scope(g, name);
}
static void leave(ct_graph *g) {
  ct_graph_pop_variable_scope(g);
  ct_graph_pop_name_scope(g);
}

ct_output ct_layer_flatten(ct_graph *g, ct_output x) {
  ct_shape s = ct_output_shape(x);
  if (s.rank == 2) return x;
  int64_t features = 1;
  for (int d = 1; d < s.rank; ++d) features *= s.dims[d];
  return ct_reshape(g, x, ct_shape_of(2, (int64_t)-1, features));
}

/* Glorot-uniform weights, zero biases, no decay of its own. */
static const ct_layer_params default_params = {
    {CT_INIT_GLOROT_UNIFORM, 0.0f}, {CT_INIT_ZEROS, 0.0f}, 0.0f, 0};

/* The weights and biases of a layer, tagged with its weight decay. */
static ct_output weights_of(ct_graph *g, ct_shape shape, const ct_layer_params *p) {
  ct_output w = ct_variable_create(g, "weights", shape, p->weights, 1);
  if (p->weight_decay != 0.0f) ct_variable_set_weight_decay(g, w, p->weight_decay);
  return w;
}

/* The biases [units] of a layer, or a null output when it has none. */
static ct_output biases_of(ct_graph *g, int units, const ct_layer_params *p) {
  if (p->no_bias) return (ct_output){NULL, 0};
  return ct_variable_create(g, "biases", ct_shape_of(1, (int64_t)units), p->biases, 1);
}

/* y + biases, or y. */
static ct_output add_biases(ct_graph *g, ct_output y, ct_output biases) {
  return biases.node ? ct_add(g, y, biases) : y;
}

ct_output ct_layer_dense_with(ct_graph *g, ct_output x, int units, ct_activation activation,
                              const ct_layer_params *params, const char *name) {
  enter(g, name);
  x = ct_layer_flatten(g, x);
  int64_t in = ct_output_shape(x).dims[1];
  ct_output w = weights_of(g, ct_shape_of(2, in, (int64_t)units), params);
  ct_output b = biases_of(g, units, params);
  ct_output y = activate(g, add_biases(g, ct_matmul(g, x, w, 0, 0), b), activation);
  leave(g);
  return y;
}

ct_output ct_layer_dense(ct_graph *g, ct_output x, int units, ct_activation activation,
                         const char *name) {
  return ct_layer_dense_with(g, x, units, activation, &default_params, name);
}

ct_output ct_layer_conv2d_with(ct_graph *g, ct_output x, int filters, int ksize, int stride,
                               ct_padding padding, ct_activation activation,
                               const ct_layer_params *params, const char *name) {
  enter(g, name);
  int64_t channels = ct_output_shape(x).dims[3];
  ct_output w = weights_of(
      g, ct_shape_of(4, (int64_t)ksize, (int64_t)ksize, channels, (int64_t)filters), params);
  ct_output b = biases_of(g, filters, params);
  /* the bias and a ReLU done by the convolution's kernel */
  const int relu = activation == CT_ACTIVATION_RELU;
  ct_output y = ct_conv2d_bias(g, x, w, b, stride, stride, padding, relu);
  if (!relu) y = activate(g, y, activation);
  leave(g);
  return y;
}

ct_output ct_layer_conv2d(ct_graph *g, ct_output x, int filters, int ksize, int stride,
                          ct_padding padding, ct_activation activation, const char *name) {
  return ct_layer_conv2d_with(g, x, filters, ksize, stride, padding, activation, &default_params,
                              name);
}

/* A batch norm layer's variables and op, with relu its ReLU fused in
 * (ct_batch_norm_relu). */
static ct_output batch_norm_layer(ct_graph *g, ct_output x, int training, int relu,
                                  const char *name) {
  enter(g, name);
  ct_shape s = ct_output_shape(x);
  ct_shape c = ct_shape_of(1, s.dims[s.rank - 1]);
  ct_initializer ones = {CT_INIT_ONES, 0.0f}, zeros = {CT_INIT_ZEROS, 0.0f};
  ct_output gamma = ct_variable_create(g, "gamma", c, ones, 1);
  ct_output beta = ct_variable_create(g, "beta", c, zeros, 1);
  ct_output mean = ct_variable_create(g, "moving_mean", c, zeros, 0);
  ct_output var = ct_variable_create(g, "moving_variance", c, ones, 0);
  ct_output y = (relu ? ct_batch_norm_relu : ct_batch_norm)(g, x, gamma, beta, mean, var,
                                                            training, 0.99f, 1e-3f);
  leave(g);
  return y;
}

ct_output ct_layer_batch_norm(ct_graph *g, ct_output x, int training, const char *name) {
  return batch_norm_layer(g, x, training, 0, name);
}

ct_output ct_layer_conv2d_bn(ct_graph *g, ct_output x, int filters, int ksize, int stride,
                             ct_activation activation, int training, const char *name) {
  enter(g, name);
  int64_t channels = ct_output_shape(x).dims[3];
  ct_initializer he = {CT_INIT_HE_NORMAL, 0.0f};
  ct_output w = ct_variable_create(
      g, "weights", ct_shape_of(4, (int64_t)ksize, (int64_t)ksize, channels, (int64_t)filters), he,
      1);
  ct_output y = ct_conv2d(g, x, w, stride, stride, CT_PADDING_SAME);
  leave(g);
  /* "<name>/gamma" ... beside the weights; a ReLU in the batch norm's op */
  if (activation == CT_ACTIVATION_RELU) return batch_norm_layer(g, y, training, 1, name);
  return activate(g, batch_norm_layer(g, y, training, 0, name), activation);
}

ct_output ct_layer_global_avg_pool(ct_graph *g, ct_output x, const char *name) {
  ct_graph_push_name_scope(g, name);
  ct_output y = ct_reduce_mean(g, x, (1u << 1) | (1u << 2), 0);
  ct_graph_pop_name_scope(g);
  return y;
}

/* A pooling op under name scope `name`. */
static ct_output pool(ct_graph *g, ct_output x, int ksize, int stride, ct_padding padding,
                      const char *name,
                      ct_output (*op)(ct_graph *, ct_output, int, int, ct_padding)) {
  ct_graph_push_name_scope(g, name);
  ct_output y = op(g, x, ksize, stride, padding);
  ct_graph_pop_name_scope(g);
  return y;
}

ct_output ct_layer_max_pool(ct_graph *g, ct_output x, int ksize, int stride, ct_padding padding,
                            const char *name) {
  return pool(g, x, ksize, stride, padding, name, ct_max_pool);
}

ct_output ct_layer_avg_pool(ct_graph *g, ct_output x, int ksize, int stride, ct_padding padding,
                            const char *name) {
  return pool(g, x, ksize, stride, padding, name, ct_avg_pool);
}

ct_output ct_layer_dropout(ct_graph *g, ct_output x, float rate, int training, const char *name) {
  if (!training || rate == 0.0f) return x;
  ct_graph_push_name_scope(g, name);
  ct_output y = ct_dropout(g, x, rate);
  ct_graph_pop_name_scope(g);
  return y;
}

ct_output ct_layer_lrn(ct_graph *g, ct_output x, int depth_radius, float bias, float alpha,
                       float beta, const char *name) {
  ct_graph_push_name_scope(g, name);
  ct_output y = ct_lrn(g, x, depth_radius, bias, alpha, beta);
  ct_graph_pop_name_scope(g);
  return y;
}
