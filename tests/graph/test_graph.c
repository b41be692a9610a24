/* Graph building: names and scopes, shared variables, sticky errors. */
#include <stdio.h>
#include <string.h>

#include "graph/graph_internal.h"
#include "test_support.h"

static void test_name_scopes_and_unique_names(void **state) {
  (void)state;
  ct_graph *g = ct_graph_new();
  ct_output x = ct_placeholder(g, "x", CT_F32, ct_shape_of(2, (int64_t)-1, (int64_t)4));
  ct_graph_push_name_scope(g, "tower_0");
  ct_graph_push_name_scope(g, "conv1");
  ct_output a = ct_relu(g, x);
  ct_output b = ct_relu(g, x);
  ct_graph_pop_name_scope(g);
  ct_graph_pop_name_scope(g);
  assert_string_equal(ct_node_name(a.node), "tower_0/conv1/Relu");
  assert_string_equal(ct_node_name(b.node), "tower_0/conv1/Relu_1");
  assert_string_equal(ct_node_op(a.node), "Relu");
  assert_ptr_equal(ct_graph_find(g, "tower_0/conv1/Relu_1"), b.node);
  assert_null(ct_graph_find(g, "tower_0/conv1/Relu_2"));
  assert_status_ok(ct_graph_status(g));
  ct_graph_free(g);
}

static void test_device_scopes_are_recorded(void **state) {
  (void)state;
  ct_graph *g = ct_graph_new();
  ct_output x = ct_placeholder(g, "x", CT_F32, ct_shape_of(1, (int64_t)3));
  ct_graph_push_device(g, "/gpu:1");
  ct_output a = ct_neg(g, x);
  ct_graph_push_device(g, "/cpu:0");
  ct_output b = ct_neg(g, x);
  ct_graph_push_device(g, "");
  ct_output c = ct_neg(g, x);
  ct_graph_pop_device(g);
  ct_graph_pop_device(g);
  ct_output d = ct_neg(g, x);
  ct_graph_pop_device(g);
  assert_string_equal(ct_node_requested_device(x.node), "");
  assert_string_equal(ct_node_requested_device(a.node), "/gpu:1");
  assert_string_equal(ct_node_requested_device(b.node), "/cpu:0");
  assert_string_equal(ct_node_requested_device(c.node), "");
  assert_string_equal(ct_node_requested_device(d.node), "/gpu:1");
  ct_graph_free(g);
}

/* The same model code under two name scopes shares its variables when the
 * second asks for reuse, as TensorFlow's variable_scope(reuse=True). */
static void test_towers_share_variables(void **state) {
  (void)state;
  ct_graph *g = ct_graph_new();
  ct_output x = ct_placeholder(g, "images", CT_F32,
                               ct_shape_of(4, (int64_t)-1, (int64_t)28, (int64_t)28, (int64_t)1));
  const ct_model_def *model = ct_model_find("fmnist_cnn");
  assert_non_null(model);
  ct_graph_push_name_scope(g, "tower_0");
  ct_output logits0 = model->build(g, x, 10, 1);
  ct_graph_pop_name_scope(g);
  int n_vars = ct_graph_variable_count(g);
  ct_graph_push_name_scope(g, "tower_1");
  ct_graph_push_variable_reuse(g);
  ct_output logits1 = model->build(g, x, 10, 1);
  ct_graph_pop_variable_reuse(g);
  ct_graph_pop_name_scope(g);
  assert_status_ok(ct_graph_status(g));
  assert_int_equal(n_vars, 8); /* weights and biases of conv1, conv2, fc1, logits */
  assert_int_equal(ct_graph_variable_count(g), n_vars);
  assert_string_equal(ct_graph_variable_name(g, 0), "conv1/weights");
  /* both towers' first convolutions read that one variable as their filter */
  const char *convs[] = {"tower_0/conv1/Conv2D", "tower_1/conv1/Conv2D"};
  for (int k = 0; k < 2; ++k) {
    const ct_node *conv = ct_graph_find(g, convs[k]);
    assert_non_null(conv);
    const ct_node *filter = ct_node_input(conv, 1).node;
    assert_string_equal(ct_node_op(filter), "Variable");
    assert_int_equal(filter->variable, 0);
  }
  const ct_shape batch_by_10 = ct_shape_of(2, (int64_t)-1, (int64_t)10);
  ct_shape s0 = ct_output_shape(logits0), s1 = ct_output_shape(logits1);
  assert_true(ct_shape_equal(&s0, &batch_by_10));
  assert_true(ct_shape_equal(&s1, &batch_by_10));
  ct_graph_free(g);
}

static void test_variable_shape_conflict_is_sticky_error(void **state) {
  (void)state;
  ct_graph *g = ct_graph_new();
  ct_initializer zeros = {CT_INIT_ZEROS, 0};
  ct_graph_push_variable_scope(g, "fc");
  ct_variable(g, "w", ct_shape_of(2, (int64_t)3, (int64_t)4), zeros, 1);
  ct_output again = ct_variable(g, "w", ct_shape_of(2, (int64_t)4, (int64_t)4), zeros, 1);
  ct_graph_pop_variable_scope(g);
  assert_null(again.node);
  const ct_status *st = ct_graph_status(g);
  assert_int_equal(st->code, CT_INVALID_ARGUMENT);
  assert_non_null(strstr(st->message, "'fc/w' exists with shape [3, 4]"));
  /* later calls return null and keep the first error */
  ct_output later = ct_relu(g, again);
  assert_null(later.node);
  assert_non_null(strstr(ct_graph_status(g)->message, "'fc/w'"));
  ct_graph_free(g);
}

static void test_shapes_that_do_not_fit_name_the_node(void **state) {
  (void)state;
  ct_graph *g = ct_graph_new();
  ct_output a = ct_placeholder(g, "a", CT_F32, ct_shape_of(2, (int64_t)-1, (int64_t)784));
  ct_output b = ct_placeholder(g, "b", CT_F32, ct_shape_of(2, (int64_t)100, (int64_t)10));
  ct_graph_push_name_scope(g, "fc1");
  ct_output y = ct_matmul(g, a, b, 0, 0);
  ct_graph_pop_name_scope(g);
  assert_null(y.node);
  const ct_status *st = ct_graph_status(g);
  assert_int_equal(st->code, CT_INVALID_ARGUMENT);
  assert_non_null(strstr(st->message, "node 'fc1/MatMul'"));
  assert_non_null(strstr(st->message, "[?, 784] by [100, 10]"));
  ct_graph_free(g);

  g = ct_graph_new();
  ct_output img = ct_placeholder(g, "img", CT_F32,
                                 ct_shape_of(4, (int64_t)-1, (int64_t)28, (int64_t)28, (int64_t)3));
  ct_output f = ct_placeholder(g, "f", CT_F32,
                               ct_shape_of(4, (int64_t)5, (int64_t)5, (int64_t)1, (int64_t)8));
  assert_null(ct_conv2d(g, img, f, 1, 1, CT_PADDING_SAME).node);
  assert_non_null(strstr(ct_graph_status(g)->message, "has 3 channels but filter"));
  ct_graph_free(g);

  /* a fused convolution's bias of the wrong length */
  g = ct_graph_new();
  img = ct_placeholder(g, "img", CT_F32,
                       ct_shape_of(4, (int64_t)-1, (int64_t)28, (int64_t)28, (int64_t)1));
  f = ct_placeholder(g, "f", CT_F32, ct_shape_of(4, (int64_t)5, (int64_t)5, (int64_t)1, (int64_t)8));
  ct_output bias = ct_placeholder(g, "bias", CT_F32, ct_shape_of(1, (int64_t)7));
  assert_null(ct_conv2d_bias(g, img, f, bias, 1, 1, CT_PADDING_SAME, 1).node);
  assert_non_null(strstr(ct_graph_status(g)->message,
                         "the bias has 7 elements but the filter 8 output channels"));
  ct_graph_free(g);
}

static void test_gradient_through_non_differentiable_op_fails_clearly(void **state) {
  (void)state;
  ct_graph *g = ct_graph_new();
  ct_initializer ones = {CT_INIT_ONES, 0};
  ct_output w = ct_variable(g, "w", ct_shape_of(2, (int64_t)2, (int64_t)3), ones, 1);
  int32_t labels[2] = {0, 1};
  ct_tensor lt = {CT_I32, ct_shape_of(1, (int64_t)2), labels, 0};
  ct_output acc = ct_accuracy(g, w, ct_constant(g, "labels", &lt));
  ct_output grad;
  /* accuracy is not differentiable: the gradient simply does not exist */
  assert_int_equal(ct_gradients(g, acc, 1, &w, &grad), 0);
  assert_null(grad.node);
  ct_graph_free(g);
}

/* A renamed node is found by its new name only, and every other node of a
 * table grown past its first size stays found (the probe runs are mended). */
static void test_rename_keeps_every_name_found(void **state) {
  (void)state;
  ct_graph *g = ct_graph_new();
  ct_output x = ct_placeholder(g, "x", CT_F32, ct_shape_of(1, (int64_t)3));
  ct_output ys[300];
  for (int i = 0; i < 300; ++i) ys[i] = ct_relu(g, x);
  for (int i = 0; i < 300; i += 3) {
    char name[32];
    snprintf(name, sizeof name, "renamed_%d", i);
    assert_int_equal(ct_graph_rename_node(g, ys[i].node, name), 0);
  }
  assert_int_equal(ct_graph_rename_node(g, ys[1].node, "renamed_0"), 0); /* taken: made unique */
  assert_string_equal(ct_node_name(ys[1].node), "renamed_0_1");
  for (int i = 0; i < 300; ++i) {
    assert_ptr_equal(ct_graph_find(g, ct_node_name(ys[i].node)), ys[i].node);
    assert_int_equal(ct_node_id(ys[i].node), i + 1);
  }
  assert_null(ct_graph_find(g, "Relu"));
  assert_ptr_equal(ct_graph_find(g, "Relu_2"), ys[2].node);
  assert_int_equal(ct_graph_rename_node(g, ys[2].node, ""), 1);
  assert_int_equal(ct_graph_status(g)->code, CT_INVALID_ARGUMENT);
  ct_graph_free(g);
}

/* AddN takes one shape (TensorFlow's rule): shapes that would broadcast are
 * refused, naming both; an unknown dimension matches a known one. */
static void test_add_n_takes_one_shape(void **state) {
  (void)state;
  ct_graph *g = ct_graph_new();
  ct_output eight = ct_placeholder(g, "eight", CT_F32, ct_shape_of(1, (int64_t)8));
  ct_output one = ct_placeholder(g, "one", CT_F32, ct_shape_of(1, (int64_t)1));
  assert_null(ct_add_n(g, 2, (ct_output[]){eight, one}).node);
  const ct_status *st = ct_graph_status(g);
  assert_int_equal(st->code, CT_INVALID_ARGUMENT);
  assert_non_null(strstr(st->message, "input 0 is f32 [8], input 1 is f32 [1]"));
  ct_graph_clear_error(g);
  ct_output batch = ct_placeholder(g, "batch", CT_F32, ct_shape_of(2, (int64_t)-1, (int64_t)4));
  ct_output three = ct_placeholder(g, "three", CT_F32, ct_shape_of(2, (int64_t)3, (int64_t)4));
  ct_output sum = ct_add_n(g, 2, (ct_output[]){batch, three});
  assert_non_null(sum.node);
  ct_shape want = ct_shape_of(2, (int64_t)3, (int64_t)4), got = ct_output_shape(sum);
  assert_true(ct_shape_equal(&got, &want));
  assert_null(ct_add_n(g, 2, (ct_output[]){three, ct_transpose(g, three, (int[]){1, 0})}).node);
  ct_graph_free(g);
}

/* After ct_graph_clear_error the graph builds again; the failed call added nothing. */
static void test_clear_error_goes_on_building(void **state) {
  (void)state;
  ct_graph *g = ct_graph_new();
  ct_output a = ct_placeholder(g, "a", CT_F32, ct_shape_of(2, (int64_t)2, (int64_t)3));
  const int before = ct_graph_node_count(g);
  assert_null(ct_matmul(g, a, a, 0, 0).node);
  assert_int_equal(ct_graph_status(g)->code, CT_INVALID_ARGUMENT);
  assert_int_equal(ct_graph_node_count(g), before);
  assert_null(ct_relu(g, a).node); /* sticky */
  ct_graph_clear_error(g);
  assert_status_ok(ct_graph_status(g));
  assert_non_null(ct_matmul(g, a, a, 0, 1).node);
  ct_graph_free(g);
}

/* A placeholder's shape can be set until a node reads it; then it is an error. */
static void test_placeholder_shape_is_set_before_its_first_use(void **state) {
  (void)state;
  ct_graph *g = ct_graph_new();
  ct_output p = ct_placeholder(g, "p", CT_F32, ct_shape_of(0));
  assert_int_equal(ct_placeholder_set_shape(g, p, ct_shape_of(2, (int64_t)-1, (int64_t)3)), 0);
  assert_int_equal(p.node->shapes[0].rank, 2);
  ct_output r = ct_relu(g, p);
  assert_int_equal(r.node->shapes[0].rank, 2);
  assert_int_equal(ct_placeholder_set_shape(g, p, ct_shape_of(0)), -1);
  assert_non_null(strstr(ct_graph_status(g)->message, "'p' is already read"));
  ct_graph_clear_error(g);
  assert_int_equal(ct_placeholder_set_shape(g, r, ct_shape_of(0)), -1);
  assert_non_null(strstr(ct_graph_status(g)->message, "'Relu' is not a placeholder"));
  assert_int_equal(p.node->shapes[0].rank, 2);
  ct_graph_free(g);
}

/* A variable or a node output whose byte count would wrap 64 bits is
 * refused, naming it, before anything allocates or fills it. */
static void test_values_past_64_bits_of_bytes_are_refused(void **state) {
  (void)state;
  const ct_shape huge = ct_shape_of(2, (int64_t)1 << 31, (int64_t)1 << 31);
  const ct_initializer zeros = {CT_INIT_ZEROS, 0.0f};
  ct_graph *g = ct_graph_new();
  ct_graph_push_variable_scope(g, "big");
  assert_null(ct_variable(g, "weights", huge, zeros, 1).node);
  printf("  %s\n", ct_graph_status(g)->message);
  assert_int_equal(ct_graph_status(g)->code, CT_INVALID_ARGUMENT);
  assert_non_null(strstr(ct_graph_status(g)->message,
                         "variable 'big/weights' of shape [2147483648, 2147483648] (f32) takes "
                         "more bytes than 64 bits count"));
  assert_int_equal(ct_graph_variable_count(g), 0);
  ct_graph_clear_error(g);
  assert_null(ct_placeholder(g, "w", CT_F32, huge).node);
  ct_graph_clear_error(g);
  /* [2^31, 1] x [1, 2^31]: each input fits, the product does not */
  ct_output a = ct_placeholder(g, "a", CT_F32, ct_shape_of(2, (int64_t)1 << 31, (int64_t)1));
  ct_output b = ct_placeholder(g, "b", CT_F32, ct_shape_of(2, (int64_t)1, (int64_t)1 << 31));
  assert_non_null(a.node);
  assert_null(ct_matmul(g, a, b, 0, 0).node);
  printf("  %s\n", ct_graph_status(g)->message);
  assert_non_null(strstr(ct_graph_status(g)->message,
                         "output 0 of 'MatMul' (MatMul) of shape [2147483648, 2147483648] (f32) "
                         "takes more bytes than 64 bits count"));
  ct_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_name_scopes_and_unique_names),
      cmocka_unit_test(test_device_scopes_are_recorded),
      cmocka_unit_test(test_towers_share_variables),
      cmocka_unit_test(test_variable_shape_conflict_is_sticky_error),
      cmocka_unit_test(test_shapes_that_do_not_fit_name_the_node),
      cmocka_unit_test(test_gradient_through_non_differentiable_op_fails_clearly),
      cmocka_unit_test(test_rename_keeps_every_name_found),
      cmocka_unit_test(test_clear_error_goes_on_building),
      cmocka_unit_test(test_add_n_takes_one_shape),
      cmocka_unit_test(test_placeholder_shape_is_set_before_its_first_use),
      cmocka_unit_test(test_values_past_64_bits_of_bytes_are_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
