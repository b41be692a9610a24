/* ctower layers and model zoo.
 *
 * Layer helpers create their variables with ct_variable inside a variable
 * scope of the layer's name and their nodes inside a name scope of the same
 * name, so a model built twice (two towers, or a training and an evaluation
 * copy) shares one set of variables: "conv1/weights", "conv1/biases". */
#ifndef CTOWER_MODELS_H
#define CTOWER_MODELS_H

#include "ctower/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ct_activation {
  CT_ACTIVATION_NONE = 0,
  CT_ACTIVATION_RELU,
  CT_ACTIVATION_SIGMOID,
  CT_ACTIVATION_TANH
} ct_activation;

/* How a dense or convolution layer initializes its variables, and the L2
 * weight decay of its weights alone (ct_variable_set_weight_decay: added
 * to the optimizer's weight_decay; 0 for none). Biases are never decayed. */
typedef struct ct_layer_params {
  ct_initializer weights;
  ct_initializer biases;
  float weight_decay;
  int no_bias; /* no biases variable (a convolution followed by batch norm) */
} ct_layer_params;

/* [N, ...] -> [N, product of the rest]. */
ct_output ct_layer_flatten(ct_graph *g, ct_output x);
/* x [N, D] (flattened when of higher rank) -> [N, units]. Glorot-uniform
 * weights, zero biases. */
ct_output ct_layer_dense(ct_graph *g, ct_output x, int units, ct_activation activation,
                         const char *name);
/* ct_layer_dense with its initializers and weight decay given. */
ct_output ct_layer_dense_with(ct_graph *g, ct_output x, int units, ct_activation activation,
                              const ct_layer_params *params, const char *name);
/* x [N, H, W, C] -> [N, P, Q, filters]; ksize x ksize filters. */
ct_output ct_layer_conv2d(ct_graph *g, ct_output x, int filters, int ksize, int stride,
                          ct_padding padding, ct_activation activation, const char *name);
/* ct_layer_conv2d (Glorot-uniform weights, zero biases) with its
 * initializers and weight decay given. */
ct_output ct_layer_conv2d_with(ct_graph *g, ct_output x, int filters, int ksize, int stride,
                               ct_padding padding, ct_activation activation,
                               const ct_layer_params *params, const char *name);
/* Convolution without bias (SAME padding, He-normal weights), batch norm,
 * activation: the unit of a ResNet. Variables "<name>/weights",
 * "<name>/gamma", "<name>/beta" and the moving statistics. */
ct_output ct_layer_conv2d_bn(ct_graph *g, ct_output x, int filters, int ksize, int stride,
                             ct_activation activation, int training, const char *name);
ct_output ct_layer_max_pool(ct_graph *g, ct_output x, int ksize, int stride, ct_padding padding,
                            const char *name);
/* [N, H, W, C] -> [N, C]: the mean over each feature map. */
ct_output ct_layer_global_avg_pool(ct_graph *g, ct_output x, const char *name);
/* Batch norm over channels with gamma, beta and moving statistics
 * (momentum 0.99, epsilon 1e-3, as Keras). */
ct_output ct_layer_batch_norm(ct_graph *g, ct_output x, int training, const char *name);
/* Local response normalization across channels (ct_lrn, TensorFlow's
 * tf.nn.lrn parameters) under name scope `name`. */
ct_output ct_layer_lrn(ct_graph *g, ct_output x, int depth_radius, float bias, float alpha,
                       float beta, const char *name);
/* Dropout when training, identity otherwise. */
ct_output ct_layer_dropout(ct_graph *g, ct_output x, float rate, int training, const char *name);
ct_output ct_layer_avg_pool(ct_graph *g, ct_output x, int ksize, int stride, ct_padding padding,
                            const char *name);

/* Layer lists: a model as a sequence of layers, applied in order (Keras'
 * Sequential). Each layer builds under its own name and variable scope and,
 * when it names one, its own device scope (model parallelism). A residual
 * block's branch is the n_inner entries that follow it (nested blocks
 * count with their own entries). */
typedef enum ct_layer_type {
  CT_LAYER_CONV2D = 0,
  CT_LAYER_MAX_POOL,
  CT_LAYER_AVG_POOL,
  CT_LAYER_BATCH_NORM,
  CT_LAYER_LRN,
  CT_LAYER_DROPOUT,
  CT_LAYER_FLATTEN,
  CT_LAYER_DENSE,
  CT_LAYER_RELU,
  CT_LAYER_GLOBAL_AVG_POOL,
  CT_LAYER_RESIDUAL,
  CT_LAYER_TYPE_COUNT
} ct_layer_type;

enum { CT_MAX_LAYERS = 64, CT_LAYER_NAME = 64, CT_LAYER_MAX_REPEAT = 1000 };

typedef struct ct_layer_spec {
  ct_layer_type type;
  char name[CT_LAYER_NAME];   /* its scope; "": <type>_<index in its list> */
  char device[CT_LAYER_NAME]; /* its device scope ("/cpu:1"); "": the tower's */
  int repeat;                 /* 1 ... CT_LAYER_MAX_REPEAT; copies after the first are
                                 "<name>_2", "<name>_3"... */
  int units;                  /* conv2d: filters; dense: units */
  int kernel;                 /* conv2d: kernel size; pools: window size */
  int stride;                 /* conv2d, pools */
  ct_padding padding;         /* conv2d, pools */
  ct_activation activation;   /* conv2d, dense, residual (after the sum) */
  ct_layer_params params;     /* conv2d, dense: initializers, weight decay, bias */
  int depth_radius;           /* lrn (as tf.nn.lrn) */
  float bias, alpha, beta;    /* lrn */
  float rate;                 /* dropout */
  int projection;             /* residual: a 1x1 conv-BN shortcut instead of the identity */
  int n_inner;                /* residual: how many entries after this one are its branch */
} ct_layer_spec;

typedef struct ct_layer_list {
  int n;
  ct_layer_spec layers[CT_MAX_LAYERS];
} ct_layer_list;

/* "conv2d", "max_pool", ..., as the config writes them. */
const char *ct_layer_type_name(ct_layer_type type);

/* A spec of that type with every parameter at its default (Keras'):
 * conv2d and pools stride 1 / the window, VALID padding, no activation,
 * biases, Glorot-uniform weights; lrn as tf.nn.lrn; repeat 1. */
void ct_layer_spec_defaults(ct_layer_spec *spec, ct_layer_type type);

/* The scope name of a list's layer at `index` (its place in its list, a
 * block counting once): its own name, or "<type>_<index>" ("dense_3").
 * The copies of a layer of repeat r are "<name>_2" ... "<name>_r". */
void ct_layer_spec_name(const ct_layer_spec *spec, int index, char *out, size_t size);

/* A layer's variables are named after its scope ("<name>/weights"), so the
 * names of a list must differ: every layer's name, its copies' and, in a
 * residual block with a projection shortcut, the shortcut's ("shortcut"),
 * against every other of the same list (a block's branch is a list of its
 * own, inside the block's scope). Returns 0, or 1 and INVALID_ARGUMENT
 * naming both layers by their place after `prefix` ("model." gives
 * "model.layers[2]", "model.layers[3].layers[0]") and saying to rename
 * one; *entry, when not NULL, is then the index in layers->layers of the
 * later of the two. */
int ct_layer_list_check_names(const ct_layer_list *layers, const char *prefix, int *entry,
                              ct_status *status);

/* Whether a layer list, wherever it comes from (a config, a model
 * library's exports, a C program), is one ctower can build: 1 to
 * CT_MAX_LAYERS entries; each of a known type, its name and device ended
 * by a NUL inside their fields, repeat 1 ... CT_LAYER_MAX_REPEAT, filters,
 * units, kernel and stride at least 1, a dropout rate in [0, 1); each
 * residual block's entries inside its list; and names that do not clash
 * (ct_layer_list_check_names). Returns 0, or 1 and INVALID_ARGUMENT naming
 * the first layer at fault by its place after `prefix`
 * ("model.layers[1] (dense 'fc'): repeat must lie in 1 ... 1000, got 0");
 * *entry, when not NULL, is then the index in layers->layers at fault. */
int ct_layer_list_check(const ct_layer_list *layers, const char *prefix, int *entry,
                        ct_status *status);

/* Builds the layers on x [N, H, W, C]. Before each layer its input shape is
 * checked: a kernel or pool window larger than its input, a pool that
 * leaves no pixels, a residual branch whose shape the shortcut cannot
 * match, or a last layer that does not give [N, num_classes] records
 * INVALID_ARGUMENT naming the layer's index, its name and both shapes, and
 * returns a null output; so does a list that fails ct_layer_list_check,
 * before any layer is built. A dense layer
 * flattens its input. */
ct_output ct_layers_build(ct_graph *g, ct_output x, const ct_layer_list *layers, int num_classes,
                          int training);

/* Models: the zoo's, one from a layer list, or one a shared library exports. */
typedef struct ct_model_def {
  const char *name;         /* "fmnist_cnn" */
  const char *description;
  /* images [N, H, W, C] f32 -> logits [N, num_classes] */
  ct_output (*build)(ct_graph *g, ct_output images, int num_classes, int training);
  const ct_layer_list *layers; /* used when build is NULL: ct_layers_build */
} ct_model_def;

/* Builds a model: its build function, or its layers. Logits that are not
 * an f32 [N, num_classes] output of g record INVALID_ARGUMENT in g and give
 * a null output; a build function that returns with the graph's scopes
 * (name, device, variable, variable device, reuse) not where it found them
 * records FAILED_PRECONDITION naming the model and the scope, with the
 * scopes it left open popped, and gives a null output. */
ct_output ct_model_build(const ct_model_def *model, ct_graph *g, ct_output images, int num_classes,
                         int training);

/* The CIFAR ResNet of He et al. (2016, section 4.2) of `depth` = 6n + 2
 * layers: a 3x3x16 conv-BN-ReLU, three stages of n basic blocks of 16, 32
 * and 64 filters (the second and third stages start with stride 2), global
 * average pooling, dense. Where a block changes the shape, its shortcut is
 * a strided 1x1 conv-BN projection (the paper's option B); elsewhere the
 * identity. resnet20 ... resnet110 of the zoo. A depth that is not 6n + 2
 * with n >= 1 records INVALID_ARGUMENT and returns a null output. */
ct_output ct_resnet_cifar(ct_graph *g, ct_output images, int depth, int num_classes, int training);

/* The model with that name, or NULL. */
const ct_model_def *ct_model_find(const char *name);
int ct_model_count(void);
const ct_model_def *ct_model_at(int index);

/* Models in a shared library of your own (`model.library` in the config):
 * the library is compiled against this header, does not link ctower (the
 * `ctower` command provides its functions), and exports its models with
 *
 *   static const ct_model_def my_models[] = {{"my_net", "what it is", build_my_net, NULL}};
 *   CT_EXPORT_MODELS(my_models);
 *
 * which defines the symbol CT_MODEL_EXPORTS_SYMBOL. abi_version records
 * the CT_MODEL_ABI_VERSION the library was compiled with: ctower loads
 * only its own version, since a ct_model_def of another layout would be
 * read wrongly. examples/model_library shows a whole library. */
#define CT_MODEL_ABI_VERSION 1
#define CT_MODEL_EXPORTS_SYMBOL "ctower_model_exports"

typedef struct ct_model_exports {
  int abi_version; /* CT_MODEL_ABI_VERSION; the first member in every version */
  int n_models;
  const ct_model_def *models;
} ct_model_exports;

#define CT_EXPORT_MODELS(models_array)                                         \
  __attribute__((visibility("default"))) const ct_model_exports ctower_model_exports = { \
      CT_MODEL_ABI_VERSION, (int)(sizeof(models_array) / sizeof((models_array)[0])), models_array}

typedef struct ct_model_library ct_model_library;

/* Loads the shared library at path and checks its exports without trusting
 * them: 1 to 4096 models in a readable array, each with a readable unique
 * name, a description or NULL, and a build function of the library's own
 * or a readable layer list. NULL with status: NOT_FOUND (no such file),
 * INVALID_ARGUMENT (not a shared library, or its symbols do not resolve),
 * FAILED_PRECONDITION (no CT_MODEL_EXPORTS_SYMBOL, another ABI version, or
 * a table that fails those checks). A crash or exit() in the library's
 * constructors, and later in its build functions (ct_model_build), is
 * reported naming the library and the call before the process ends. */
ct_model_library *ct_model_library_open(const char *path, ct_status *status);
/* Its model of that name, or NULL with NOT_FOUND listing those it has. */
const ct_model_def *ct_model_library_find(const ct_model_library *library, const char *name,
                                          ct_status *status);
/* Unloads it: its models must no longer be built. */
void ct_model_library_close(ct_model_library *library);

#ifdef __cplusplus
}
#endif
#endif
