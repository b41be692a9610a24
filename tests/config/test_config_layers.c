/* model.layers: the ResNet-20 of examples/ as a layer list has the zoo's
 * parameters and names; lists write and read back the same; a mistyped
 * type, parameter or value suggests the right one; shapes that do not fit
 * name the layer and both shapes, as do parameters out of range in a list
 * made in C; names that would share variables are refused; a layer's
 * device scope reaches its nodes. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctower/config.h"
#include "test_support.h"

/* The layers of model.layers=<list>, or a failed assertion. */
static void layers_of(const char *list, ct_config *c) {
  char assignment[2048];
  snprintf(assignment, sizeof assignment, "model.layers=%s", list);
  ct_status st = CT_STATUS_INIT;
  ct_config_defaults(c);
  if (ct_config_apply_override(c, assignment, &st)) fail_msg("%s: %s", list, st.message);
}

/* model.layers=<list> is refused (INVALID_ARGUMENT) with each of expect
 * (NULL-terminated, at most 3) in its message. */
static void expect_list_refused(const char *list, const char *const *expect) {
  char assignment[1024];
  snprintf(assignment, sizeof assignment, "model.layers=%s", list);
  ct_config c;
  ct_config_defaults(&c);
  ct_status st = CT_STATUS_INIT;
  assert_int_equal(ct_config_apply_override(&c, assignment, &st), 1);
  printf("  %s\n", st.message);
  assert_int_equal(st.code, CT_INVALID_ARGUMENT);
  for (int k = 0; k < 3 && expect[k]; ++k)
    if (strstr(st.message, expect[k]) == NULL)
      fail_msg("%s: no '%s' in: %s", list, expect[k], st.message);
}

/* Builds the layers on [?, h, w, ch] images; the graph (its status says how it went). */
static ct_graph *build(const ct_layer_list *layers, int64_t h, int64_t w, int64_t ch,
                       ct_output *logits) {
  ct_graph *g = ct_graph_new();
  ct_output x = ct_placeholder(g, "images", CT_F32, ct_shape_of(4, (int64_t)-1, h, w, ch));
  *logits = ct_layers_build(g, x, layers, 10, 1);
  return g;
}

static int has_variable(const ct_graph *g, const char *name) {
  for (int v = 0; v < ct_graph_variable_count(g); ++v)
    if (strcmp(ct_graph_variable_name(g, v), name) == 0) return 1;
  return 0;
}

static void test_resnet20_example(void **state) {
  (void)state;
  const char *source = getenv("CT_SOURCE_DIR");
  if (source == NULL) skip();
  char path[1024];
  snprintf(path, sizeof path, "%s/examples/resnet20_layers.yaml", source);
  ct_config c;
  ct_status st = CT_STATUS_INIT;
  ct_config_defaults(&c);
  if (ct_config_load(&c, path, &st)) fail_msg("%s", st.message);
  ct_output logits;
  ct_graph *g = build(&c.model.layers, 32, 32, 3, &logits);
  assert_status_ok(ct_graph_status(g));
  int batch_norms = 0;
  const int64_t trainable = ct_test_trainable_parameters(g, &batch_norms);
  printf("  %d entries: %lld trainable parameters, %d batch norms\n", c.model.layers.n,
         (long long)trainable, batch_norms);
  assert_int_equal(trainable, 272474); /* the zoo's resnet20 */
  assert_int_equal(batch_norms, 21);
  assert_true(has_variable(g, "stage1_3/conv2/weights")); /* repeat: 3 */
  assert_true(has_variable(g, "stage2/shortcut/weights")); /* projection */
  assert_false(has_variable(g, "stage1/shortcut/weights")); /* identity */
  assert_false(has_variable(g, "conv0/biases"));           /* use_bias: false */
  ct_graph_free(g);
}

/* ct_config_write, read back: the same layers, byte for byte. */
static void test_layers_round_trip(void **state) {
  (void)state;
  ct_config c, back;
  layers_of("[{conv2d: {name: c1, filters: 8, kernel: 3, stride: 2, padding: same, "
            "activation: tanh, use_bias: false, kernel_initializer: {name: normal, stddev: 0.05}, "
            "bias_initializer: {name: constant, value: 0.1}, weight_decay: 0.004, "
            "device: /cpu:1}}, {lrn: {depth_radius: 4, alpha: 0.00011111112, beta: 0.75}}, "
            "{residual: {repeat: 2, shortcut: projection, layers: [{avg_pool: {size: 3}}, "
            "{residual: {layers: [relu, batch_norm]}}]}}, {dropout: {rate: 0.4}}, flatten, "
            "global_avg_pool, {dense: {units: 10}}]",
            &c);
  assert_int_equal(c.model.layers.n, 11);
  assert_int_equal(c.model.layers.layers[2].n_inner, 4);
  assert_int_equal(c.model.layers.layers[3].stride, 3); /* a pool's stride: its window */
  char path[] = "/tmp/ctower_layers_XXXXXX";
  const int fd = mkstemp(path);
  assert_true(fd >= 0);
  FILE *out = fdopen(fd, "w");
  ct_config_write(&c, out);
  fclose(out);
  ct_status st = CT_STATUS_INIT;
  ct_config_defaults(&back);
  if (ct_config_load(&back, path, &st)) fail_msg("%s", st.message);
  unlink(path);
  assert_memory_equal(&c.model.layers, &back.model.layers, sizeof c.model.layers);
}

typedef struct bad_list {
  const char *list;
  const char *expect[3];
} bad_list;

static void test_layer_errors_suggest(void **state) {
  (void)state;
  static const bad_list cases[] = {
      {"[{conv: {filters: 8}}]",
       {"model.layers[0]: unknown layer type 'conv'; did you mean 'conv2d'?", "flatten, dense",
        NULL}},
      {"[{conv2d: {filters: 8, kernel: 3, strides: 2}}]",
       {"model.layers[0] (conv2d): unknown parameter 'strides'; did you mean 'stride'?",
        "parameters: name, device, repeat, filters, kernel, stride", NULL}},
      {"[{residual: {layers: [{dense: {unit: 3}}]}}]",
       {"model.layers[0].layers[0] (dense): unknown parameter 'unit'; did you mean 'units'?",
        NULL}},
      {"[{dense: {units: 10, activation: rellu}}]",
       {"unknown activation value 'rellu'; did you mean 'relu'?", NULL}},
      {"[{conv2d: {kernel: 3}}]", {"model.layers[0] (conv2d): needs 'filters'", NULL}},
      {"[{dropout: {rate: 1.5}}]", {"'rate' must lie in [0, 1), got '1.5'", NULL}},
      {"[{dense: {units: 2.5}}]", {"'units' must be an integer, got '2.5'", NULL}},
      {"[{dense: {units: 10, device: cpu1}}]", {"'device' must be a device name", NULL}},
      {"[{dense: {units: 10, device: /job:worker/task:1/cpu:0}}]",
       {"'device' '/job:worker/task:1/cpu:0' names a job or task", "its own examples", NULL}},
      {"[{dense: {units: 10, kernel_initializer: normal}}]",
       {"'kernel_initializer: normal' needs its stddev: {name: normal, stddev: X}", NULL}},
      {"[{dense: 10}]", {"the parameters of dense must be a mapping", NULL}},
      {"[{dense: {units: 1}, flatten: ~}]", {"a layer is its type", NULL}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i)
    expect_list_refused(cases[i].list, cases[i].expect);
}

/* A file's error names its line. */
static void test_layer_error_line(void **state) {
  (void)state;
  char path[] = "/tmp/ctower_layers_XXXXXX";
  const int fd = mkstemp(path);
  assert_true(fd >= 0);
  FILE *out = fdopen(fd, "w");
  fputs("model:\n  layers:\n    - conv2d: {filters: 8, kernel: 3}\n    - max_pool: {size: 2,\n"
        "                 paddin: same}\n",
        out);
  fclose(out);
  ct_config c;
  ct_config_defaults(&c);
  ct_status st = CT_STATUS_INIT;
  assert_int_equal(ct_config_load(&c, path, &st), 1);
  unlink(path);
  printf("  %s\n", st.message);
  assert_non_null(strstr(st.message, ":5: model.layers[1] (max_pool): unknown parameter "
                                     "'paddin'; did you mean 'padding'?"));
}

typedef struct bad_shape {
  const char *list;
  const char *expect;
} bad_shape;

static void test_shapes_that_do_not_fit(void **state) {
  (void)state;
  static const bad_shape cases[] = {
      {"[{conv2d: {filters: 4, kernel: 5}}, {max_pool: {size: 4}}, {max_pool: {size: 4}}, "
       "{conv2d: {name: late, filters: 4, kernel: 3}}, {dense: {units: 10}}]",
       "layers[3] (conv2d 'late'): its 3x3 kernel is larger than its input [?, 1, 1, 4]"},
      {"[{max_pool: {size: 32}}, {dense: {units: 10}}]",
       "layers[0] (max_pool 'max_pool_0'): a 32x32 window at stride 32 on [?, 28, 28, 1] leaves "
       "zero pixels: [?, 0, 0, 1]"},
      {"[{residual: {name: blk, layers: [{conv2d: {filters: 8, kernel: 3, padding: same}}]}}, "
       "{dense: {units: 10}}]",
       "layers[0] (residual 'blk'): its branch gives [?, 28, 28, 8] but the identity shortcut "
       "carries its input [?, 28, 28, 1]"},
      {"[{residual: {shortcut: projection, layers: [{conv2d: {filters: 8, kernel: 5}}]}}, "
       "{dense: {units: 10}}]",
       "layers[0] (residual 'residual_0'): no strided 1x1 projection takes its input "
       "[?, 28, 28, 1] to its branch's [?, 24, 24, 8]"},
      {"[flatten, {conv2d: {filters: 8, kernel: 3}}]",
       "layers[1] (conv2d 'conv2d_1'): needs images [?, height, width, channels], got "
       "[?, 784]"},
      {"[{dense: {units: 5}}]",
       "layers[0] (dense 'dense_0'): the last layer gives [?, 5], but the logits of 10 classes"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    ct_config c;
    layers_of(cases[i].list, &c);
    ct_output logits;
    ct_graph *g = build(&c.model.layers, 28, 28, 1, &logits);
    const ct_status *st = ct_graph_status(g);
    printf("  %s\n", st->message);
    assert_int_equal(st->code, CT_INVALID_ARGUMENT);
    assert_null(logits.node);
    if (strstr(st->message, cases[i].expect) == NULL)
      fail_msg("no '%s' in: %s", cases[i].expect, st->message);
    ct_graph_free(g);
  }
}

/* No two layers of a list share a scope, and so its variables: a name given
 * twice, a name one layer gives that another's repeat copy or default name
 * takes (and the other way round), or a block's projection's, is refused
 * when the config is read, at the later layer's line, naming both layers. */
static void test_names_that_clash(void **state) {
  (void)state;
  static const struct {
    const char *list, *expect;
  } cases[] = {
      {"[{dense: {name: d, units: 8, repeat: 2}}, {dense: {name: d_2, units: 8}}, "
       "{dense: {name: logits, units: 10}}]",
       "model.layers[1] (dense 'd_2') has the name of copy 2 of model.layers[0] (dense 'd', "
       "repeat 2), so both would build in scope 'd_2' and share the variables under it "
       "('d_2/...') by accident; rename one of them"},
      {"[{dense: {name: fc, units: 10}}, {dense: {name: fc, units: 10}}]",
       "model.layers[1] (dense 'fc') has the name of model.layers[0] (dense 'fc')"},
      {"[{conv2d: {name: c_3, filters: 4, kernel: 3}}, {conv2d: {name: c, filters: 4, kernel: 3, "
       "repeat: 3}}, {dense: {units: 10}}]",
       "model.layers[0] (conv2d 'c_3') has the name of copy 3 of model.layers[1] (conv2d 'c', "
       "repeat 3)"},
      {"[{dense: {units: 8, repeat: 2}}, {dense: {name: dense_0_2, units: 8}}, "
       "{dense: {units: 10}}]",
       "model.layers[1] (dense 'dense_0_2') has the name of copy 2 of model.layers[0] (dense, "
       "by default 'dense_0', repeat 2)"},
      {"[{dense: {name: dense, units: 8, repeat: 3}}, {dense: {units: 8}}, {dense: {units: 8}}, "
       "{dense: {units: 10}}]",
       "model.layers[2] (dense, by default 'dense_2') has the name of copy 2 of model.layers[0] "
       "(dense 'dense', repeat 3)"},
      {"[{residual: {name: r, repeat: 2, layers: [relu]}}, {residual: {name: r_2, layers: "
       "[relu]}}, {dense: {units: 10}}]",
       "model.layers[1] (residual 'r_2') has the name of copy 2 of model.layers[0] (residual 'r', "
       "repeat 2)"},
      {"[{residual: {layers: [{conv2d: {filters: 1, kernel: 3, padding: same, repeat: 2}}, "
       "{conv2d: {name: conv2d_0_2, filters: 1, kernel: 3, padding: same}}]}}, "
       "{dense: {units: 10}}]",
       "model.layers[0].layers[1] (conv2d 'conv2d_0_2') has the name of copy 2 of "
       "model.layers[0].layers[0] (conv2d, by default 'conv2d_0', repeat 2)"},
      {"[{residual: {shortcut: projection, layers: [{conv2d: {name: shortcut, filters: 4, "
       "kernel: 3, padding: same}}]}}, {dense: {units: 10}}]",
       "model.layers[0].layers[0] (conv2d 'shortcut') has the name of the projection shortcut of "
       "model.layers[0] (residual, by default 'residual_0')"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i)
    expect_list_refused(cases[i].list, (const char *const[]){cases[i].expect, NULL});
  /* names that only look alike are a model */
  ct_config c;
  layers_of(
      "[{dense: {name: d, units: 8, repeat: 2}}, {dense: {name: d_02, units: 8}}, "
      "{dense: {name: d_3, units: 8}}, {dense: {name: d_2_2, units: 10}}]",
      &c);
  ct_output logits;
  ct_graph *g = build(&c.model.layers, 28, 28, 1, &logits);
  assert_status_ok(ct_graph_status(g));
  ct_graph_free(g);
  /* a file names the later layer's line */
  char path[] = "/tmp/ctower_layers_XXXXXX";
  const int fd = mkstemp(path);
  assert_true(fd >= 0);
  FILE *out = fdopen(fd, "w");
  fputs(
      "model:\n  layers:\n    - dense: {name: d, units: 8, repeat: 2}\n    - flatten\n"
      "    - dense: {name: d_2, units: 10}\n",
      out);
  fclose(out);
  ct_status st = CT_STATUS_INIT;
  ct_config_defaults(&c);
  assert_int_equal(ct_config_load(&c, path, &st), 1);
  unlink(path);
  printf("  %s\n", st.message);
  assert_non_null(strstr(st.message, ":5: model.layers[2] (dense 'd_2') has the name of copy 2"));
}

/* A list made in C meets the same rule when it is built, before any layer. */
static void test_c_list_names_that_clash(void **state) {
  (void)state;
  ct_layer_list list = {.n = 3};
  ct_layer_spec_defaults(&list.layers[0], CT_LAYER_DENSE);
  list.layers[0].units = 8;
  list.layers[0].repeat = 2;
  ct_layer_spec_defaults(&list.layers[1], CT_LAYER_DENSE);
  list.layers[1].units = 8;
  snprintf(list.layers[1].name, sizeof list.layers[1].name, "dense_0_2");
  ct_layer_spec_defaults(&list.layers[2], CT_LAYER_DENSE);
  list.layers[2].units = 10;
  ct_output logits;
  ct_graph *g = build(&list, 28, 28, 1, &logits);
  printf("  %s\n", ct_graph_status(g)->message);
  assert_int_equal(ct_graph_status(g)->code, CT_INVALID_ARGUMENT);
  assert_non_null(strstr(ct_graph_status(g)->message,
                         "layers[1] (dense 'dense_0_2') has the name of copy 2 of layers[0] "
                         "(dense, by default 'dense_0', repeat 2)"));
  assert_int_equal(ct_graph_variable_count(g), 0);
  ct_graph_free(g);
}

/* A list made in C is checked too: what would divide by zero is an error. */
static void test_c_list_out_of_range(void **state) {
  (void)state;
  ct_layer_list list = {.n = 2};
  ct_layer_spec_defaults(&list.layers[0], CT_LAYER_MAX_POOL);
  list.layers[0].stride = 0;
  ct_layer_spec_defaults(&list.layers[1], CT_LAYER_DENSE);
  list.layers[1].units = 10;
  ct_output logits;
  ct_graph *g = build(&list, 28, 28, 1, &logits);
  printf("  %s\n", ct_graph_status(g)->message);
  assert_non_null(strstr(ct_graph_status(g)->message,
                         "layers[0] (max_pool 'max_pool_0'): its stride is out of range"));
  ct_graph_free(g);
  list.layers[0].stride = 2;
  list.layers[1].repeat = 0;
  g = build(&list, 28, 28, 1, &logits);
  printf("  %s\n", ct_graph_status(g)->message);
  assert_non_null(strstr(ct_graph_status(g)->message,
                         "layers[1] (dense 'dense_1'): repeat must lie in 1 ... 1000, got 0"));
  ct_graph_free(g);
}

/* A list made in C has the config's bounds: a repeat nobody set is refused
 * before a single copy is built, and a name or device that fills its field
 * with no NUL is refused, naming the layer, instead of read past. */
static void test_c_list_fields_are_bounded(void **state) {
  (void)state;
  ct_layer_list list = {.n = 2};
  ct_layer_spec_defaults(&list.layers[0], CT_LAYER_FLATTEN);
  ct_layer_spec_defaults(&list.layers[1], CT_LAYER_DENSE);
  list.layers[1].units = 10;
  list.layers[1].repeat = INT_MAX;
  ct_status status = CT_STATUS_INIT;
  int entry = -1;
  assert_int_equal(ct_layer_list_check(&list, "model.", &entry, &status), 1);
  assert_int_equal(entry, 1);
  ct_output logits;
  ct_graph *g = build(&list, 28, 28, 1, &logits);
  printf("  %s\n", ct_graph_status(g)->message);
  assert_non_null(strstr(ct_graph_status(g)->message,
                         "layers[1] (dense 'dense_1'): repeat must lie in 1 ... 1000, got "
                         "2147483647"));
  assert_int_equal(ct_graph_node_count(g), 1); /* the images only */
  ct_graph_free(g);
  list.layers[1].repeat = 1;
  memset(list.layers[1].name, 'x', CT_LAYER_NAME);
  ct_status_clear(&status);
  assert_int_equal(ct_layer_list_check(&list, "model.", NULL, &status), 1);
  printf("  %s\n", status.message);
  assert_non_null(strstr(status.message, "model.layers[1] (dense): its name fills all 64 bytes of "
                                         "its field with no terminating NUL"));
  list.layers[1].name[0] = '\0';
  ct_status_clear(&status);
  memset(list.layers[0].device, 'x', CT_LAYER_NAME);
  assert_int_equal(ct_layer_list_check(&list, "model.", NULL, &status), 1);
  printf("  %s\n", status.message);
  assert_non_null(strstr(status.message, "model.layers[0] (flatten 'flatten_0'): its device "
                                         "fills all 64 bytes of its field with no terminating "
                                         "NUL"));
}

/* A dense layer flattens images; a layer's device scope is its nodes'. */
static void test_dense_flattens_and_devices_scope(void **state) {
  (void)state;
  ct_config c;
  layers_of("[{conv2d: {filters: 4, kernel: 3}}, {dense: {name: fc, units: 10, device: /cpu:1}}]",
            &c);
  ct_output logits;
  ct_graph *g = build(&c.model.layers, 28, 28, 1, &logits);
  assert_status_ok(ct_graph_status(g));
  ct_shape s = ct_output_shape(logits);
  assert_int_equal(s.rank, 2);
  assert_int_equal(s.dims[1], 10);
  ct_node *matmul = ct_graph_find(g, "fc/MatMul");
  assert_non_null(matmul);
  assert_string_equal(ct_node_requested_device(matmul), "/cpu:1");
  assert_string_equal(ct_node_requested_device(ct_graph_find(g, "conv2d_0/Conv2D")), "");
  ct_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_resnet20_example),
      cmocka_unit_test(test_layers_round_trip),
      cmocka_unit_test(test_layer_errors_suggest),
      cmocka_unit_test(test_layer_error_line),
      cmocka_unit_test(test_shapes_that_do_not_fit),
      cmocka_unit_test(test_names_that_clash),
      cmocka_unit_test(test_c_list_names_that_clash),
      cmocka_unit_test(test_c_list_out_of_range),
      cmocka_unit_test(test_c_list_fields_are_bounded),
      cmocka_unit_test(test_dense_flattens_and_devices_scope),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
