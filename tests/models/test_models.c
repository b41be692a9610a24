/* The zoo's CIFAR models: each has its paper's parameter count, builds and
 * trains a few steps on synthetic images of its input shape; a ResNet depth
 * that is not 6n + 2 is refused; cifar10_cnn decays only its two dense
 * layers' weights, and a variable's own weight decay makes the optimizer
 * step along the gradient of the decayed loss; layers share variables only
 * inside a reuse scope; a build function leaves the scopes as it found them. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "test_support.h"
#include "trainer/train_run.h"

typedef struct model_size {
  const char *name;
  int64_t height, width, channels;
  int64_t parameters; /* trainable, for 10 classes */
  int batch_norms;
} model_size;

/* cifar10_cnn: conv1 5*5*3*64 + 64, conv2 5*5*64*64 + 64, local3
 * (6*6*64)*384 + 384, local4 384*192 + 192, logits 192*10 + 10.
 * ResNet-(6n+2) with projection shortcuts: 97,216 n - 19,174 (conv0 and
 * its BN 464; a 16-filter block 4,672; a 32-filter block 18,560 and the
 * first, with its 1x1 projection, 14,528; a 64-filter block 73,984 and the
 * first 57,728; dense 650), the paper's 0.27M, 0.46M, 0.66M, 0.85M, 1.7M. */
static const model_size k_sizes[] = {
    {"cifar10_cnn", 24, 24, 3, 1068298, 0}, {"resnet20", 32, 32, 3, 272474, 21},
    {"resnet32", 32, 32, 3, 466906, 33},    {"resnet44", 32, 32, 3, 661338, 45},
    {"resnet56", 32, 32, 3, 855770, 57},    {"resnet110", 32, 32, 3, 1730714, 111},
};

static ct_output images_of(ct_graph *g, const model_size *m) {
  return ct_placeholder(g, "images", CT_F32,
                        ct_shape_of(4, (int64_t)-1, m->height, m->width, m->channels));
}

static void test_parameter_counts_are_the_papers(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof k_sizes / sizeof k_sizes[0]; ++i) {
    const model_size *m = &k_sizes[i];
    const ct_model_def *model = ct_model_find(m->name);
    assert_non_null(model);
    ct_graph *g = ct_graph_new();
    ct_output logits = model->build(g, images_of(g, m), 10, 1);
    assert_status_ok(ct_graph_status(g));
    int batch_norms = 0;
    const int64_t trainable = ct_test_trainable_parameters(g, &batch_norms);
    printf("  %-12s %lld trainable parameters, %d batch norms\n", m->name, (long long)trainable,
           batch_norms);
    assert_int_equal(trainable, m->parameters);
    assert_int_equal(batch_norms, m->batch_norms);
    ct_shape s = ct_output_shape(logits);
    assert_int_equal(s.rank, 2);
    assert_int_equal(s.dims[1], 10);
    ct_graph_free(g);
  }
}

static void test_resnet_depth_must_be_6n_plus_2(void **state) {
  (void)state;
  static const int bad[] = {21, 2, 0, -4, 19};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    ct_graph *g = ct_graph_new();
    ct_output logits = ct_resnet_cifar(g, images_of(g, &k_sizes[1]), bad[i], 10, 1);
    assert_null(logits.node);
    const ct_status *st = ct_graph_status(g);
    assert_int_equal(st->code, CT_INVALID_ARGUMENT);
    char want[32];
    snprintf(want, sizeof want, "not %d", bad[i]);
    if (strstr(st->message, "6n + 2") == NULL || strstr(st->message, want) == NULL)
      fail_msg("depth %d: %s", bad[i], st->message);
    ct_graph_free(g);
  }
  ct_graph *g = ct_graph_new();
  assert_non_null(ct_resnet_cifar(g, images_of(g, &k_sizes[1]), 8, 10, 0).node);
  assert_status_ok(ct_graph_status(g));
  ct_graph_free(g);
}

/* The tutorial's wd: 0.004 on local3 and local4's weights, nothing else. */
static void test_cifar10_cnn_decays_its_dense_weights(void **state) {
  (void)state;
  ct_graph *g = ct_graph_new();
  ct_model_find("cifar10_cnn")->build(g, images_of(g, &k_sizes[0]), 10, 1);
  assert_status_ok(ct_graph_status(g));
  int decayed = 0, lrns = 0;
  for (int v = 0; v < ct_graph_variable_count(g); ++v) {
    const char *name = ct_graph_variable_name(g, v);
    const float want =
        strcmp(name, "local3/weights") == 0 || strcmp(name, "local4/weights") == 0 ? 0.004f : 0.0f;
    assert_float_equal(ct_graph_variable_weight_decay(g, v), want, 0);
    decayed += want != 0.0f;
  }
  assert_int_equal(decayed, 2);
  for (int i = 0; i < ct_graph_node_count(g); ++i)
    lrns += strcmp(ct_node_op(ct_graph_node(g, i)), "LRN") == 0;
  assert_int_equal(lrns, 2);
  assert_non_null(ct_graph_find(g, "norm1/LRN"));
  assert_non_null(ct_graph_find(g, "norm2/LRN"));
  ct_graph_free(g);
}

/* A few training steps of each model on synthetic images of its shape. */
static void test_models_train_on_their_input_shape(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof k_sizes / sizeof k_sizes[0]; ++i) {
    const model_size *m = &k_sizes[i];
    ct_trainer_options o;
    ct_tower_options t;
    ct_trainer_options_defaults(&o);
    snprintf(o.model, sizeof o.model, "%s", m->name);
    snprintf(o.dataset.name, sizeof o.dataset.name, "synthetic");
    o.dataset.batch_size = 2;
    o.dataset.shuffle = 0;
    o.dataset.train_size = 4;
    o.dataset.test_size = 2;
    o.dataset.image_shape[0] = m->height, o.dataset.image_shape[1] = m->width;
    o.dataset.image_shape[2] = m->channels;
    o.train.optimizer.weight_decay = 1e-4f;
    ct_tower_options_defaults(&t);
    ct_status st = CT_STATUS_INIT;
    ct_train_run r;
    if (ct_train_run_setup(&r, &o, &t, &st)) fail_msg("%s: %s", m->name, st.message);
    double loss[2], accuracy;
    for (int step = 0; step < 2; ++step)
      if (ct_train_run_next_batch(&r, &st) != 2 ||
          ct_train_run_step(&r, step, step * 0.5, &loss[step], &accuracy, &st))
        fail_msg("%s step %d: %s", m->name, step, st.message);
    printf("  %-12s losses %.4f %.4f\n", m->name, loss[0], loss[1]);
    for (int step = 0; step < 2; ++step) assert_true(isfinite(loss[step]) && loss[step] > 0);
    ct_train_run_free(&r);
  }
}

/* loss(w, u) = sum_i tanh(x_i w_i) + sum_i (x_i u_i)^2 / 2, with w tagged
 * with its own decay. */
enum { N = 5 };
static const float k_x[N] = {0.5f, -1.25f, 2.0f, 0.75f, -0.3f};

static double loss_of(const double *w, const double *u, double decay_w, double decay_u) {
  double l = 0;
  for (int i = 0; i < N; ++i) {
    l += tanh(k_x[i] * w[i]) + 0.5 * (k_x[i] * u[i]) * (k_x[i] * u[i]);
    l += 0.5 * decay_w * w[i] * w[i] + 0.5 * decay_u * u[i] * u[i];
  }
  return l;
}

/* One step of each optimizer's first update (SGD; momentum, whose first
 * step is SGD's) against w - lr * d/dw of the decayed loss, its gradient
 * taken by central differences in double precision. */
static void test_variable_weight_decay_steps_along_the_decayed_loss(void **state) {
  (void)state;
  const float own = 0.05f, global = 0.01f, lr = 0.5f;
  for (int kind = 0; kind < 2; ++kind) {
    ct_graph *g = ct_graph_new();
    ct_initializer init = {CT_INIT_UNIFORM, 1.0f};
    ct_output w = ct_variable(g, "w", ct_shape_of(1, (int64_t)N), init, 1);
    ct_output u = ct_variable(g, "u", ct_shape_of(1, (int64_t)N), init, 1);
    ct_variable_set_weight_decay(g, w, own);
    ct_tensor xt = {CT_F32, ct_shape_of(1, (int64_t)N), (void *)k_x, 0};
    ct_output x = ct_constant(g, "x", &xt);
    ct_output xu = ct_mul(g, x, u);
    ct_output loss =
        ct_add(g, ct_reduce_sum(g, ct_tanh(g, ct_mul(g, x, w)), 0, 0),
               ct_mul(g, ct_scalar(g, 0.5f), ct_reduce_sum(g, ct_mul(g, xu, xu), 0, 0)));
    ct_optimizer_config c;
    ct_optimizer_config_defaults(&c, kind ? CT_OPTIMIZER_MOMENTUM : CT_OPTIMIZER_SGD);
    c.weight_decay = global;
    ct_train_op train;
    assert_int_equal(ct_optimizer_minimize(g, &c, loss, &train), 0);
    assert_status_ok(ct_graph_status(g));
    ct_status st = CT_STATUS_INIT;
    ct_session_options so;
    ct_session_options_defaults(&so);
    so.device_count_gpu = 0;
    ct_session *s = ct_session_new(g, &so, &st);
    assert_status_ok(&st);
    double w0[N], u0[N];
    ct_tensor *before[2] = {ct_session_read_variable(s, 0, &st),
                            ct_session_read_variable(s, 1, &st)};
    assert_status_ok(&st);
    for (int i = 0; i < N; ++i) {
      w0[i] = ct_tensor_f32(before[0])[i];
      u0[i] = ct_tensor_f32(before[1])[i];
    }
    ct_tensor lrt = {CT_F32, ct_shape_of(0), (void *)&lr, 0};
    ct_feed feed = {train.learning_rate, &lrt};
    assert_int_equal(ct_session_run(s, &feed, 1, NULL, 0, &train.op, 1, NULL, &st), 0);
    ct_tensor *after[2] = {ct_session_read_variable(s, 0, &st),
                           ct_session_read_variable(s, 1, &st)};
    assert_status_ok(&st);
    double worst = 0;
    for (int v = 0; v < 2; ++v)
      for (int i = 0; i < N; ++i) {
        const double h = 1e-5;
        double wp[N], up[N], wm[N], um[N];
        memcpy(wp, w0, sizeof wp), memcpy(wm, w0, sizeof wm);
        memcpy(up, u0, sizeof up), memcpy(um, u0, sizeof um);
        (v ? up : wp)[i] += h;
        (v ? um : wm)[i] -= h;
        const double grad =
            (loss_of(wp, up, global + own, global) - loss_of(wm, um, global + own, global)) /
            (2 * h);
        const double want = (v ? u0 : w0)[i] - lr * grad;
        const double got = ct_tensor_f32(after[v])[i];
        if (fabs(got - want) > worst) worst = fabs(got - want);
        if (fabs(got - want) > 1e-5)
          fail_msg("%s, %s[%d]: %.7f after the step, the decayed loss's gradient gives %.7f",
                   kind ? "momentum" : "sgd", v ? "u" : "w", i, got, want);
      }
    printf("  %-8s step against the decayed loss's gradient: max difference %.2e\n",
           kind ? "momentum" : "sgd", worst);
    for (int v = 0; v < 2; ++v) ct_tensor_free(before[v]), ct_tensor_free(after[v]);
    ct_session_free(s);
    ct_graph_free(g);
  }
}

/* A variable name is one layer's: a second layer of the same name, built
 * with the layer API (dense, convolution, batch norm), is an error naming
 * the variable rather than a silent share of the first one's weights; in a
 * reuse scope, as TensorFlow's variable_scope(reuse=True), it shares them. */
static void test_layers_share_variables_only_when_asked(void **state) {
  (void)state;
  for (int kind = 0; kind < 3; ++kind) {
    ct_graph *g = ct_graph_new();
    ct_output x = ct_placeholder(g, "images", CT_F32, ct_shape_of(4, (int64_t)-1, 4L, 4L, 2L));
    for (int copy = 0; copy < 2; ++copy) {
      if (kind == 0) ct_layer_dense(g, x, 2, CT_ACTIVATION_NONE, "d");
      if (kind == 1) ct_layer_conv2d(g, x, 2, 3, 1, CT_PADDING_SAME, CT_ACTIVATION_RELU, "c");
      if (kind == 2) ct_layer_batch_norm(g, x, 1, "bn");
    }
    static const char *const first[] = {"d/weights", "c/weights", "bn/gamma"};
    const ct_status *st = ct_graph_status(g);
    printf("  %s\n", st->message);
    assert_int_equal(st->code, CT_INVALID_ARGUMENT);
    char want[128];
    snprintf(want, sizeof want, "variable '%s' exists already", first[kind]);
    assert_non_null(strstr(st->message, want));
    assert_non_null(strstr(st->message, "give each layer its own name"));
    ct_graph_free(g);
  }
  ct_graph *g = ct_graph_new();
  ct_output x = ct_placeholder(g, "images", CT_F32, ct_shape_of(2, (int64_t)-1, 3L));
  ct_graph_push_name_scope(g, "tower_0");
  ct_layer_dense(g, x, 2, CT_ACTIVATION_NONE, "d");
  ct_graph_pop_name_scope(g);
  ct_graph_push_name_scope(g, "tower_1");
  ct_graph_push_variable_reuse(g);
  ct_layer_dense(g, x, 2, CT_ACTIVATION_NONE, "d");
  ct_graph_pop_variable_reuse(g);
  ct_graph_pop_name_scope(g);
  assert_status_ok(ct_graph_status(g));
  assert_int_equal(ct_graph_variable_count(g), 2); /* d/weights, d/biases: one layer's */
  ct_graph_pop_variable_reuse(g);
  assert_int_equal(ct_graph_status(g)->code, CT_FAILED_PRECONDITION);
  ct_graph_free(g);
}

/* Build functions that leave the scopes otherwise than they found them:
 * one that forgets to pop its device scope, one that pops its caller's
 * name scope, one that keeps a reuse scope open. */
static ct_output build_leaking(ct_graph *g, ct_output images, int num_classes, int training) {
  (void)training;
  ct_graph_push_device(g, "/cpu:1");
  return ct_layer_dense(g, images, num_classes, CT_ACTIVATION_NONE, "logits");
}
static ct_output build_popping(ct_graph *g, ct_output images, int num_classes, int training) {
  (void)training;
  ct_graph_pop_name_scope(g);
  return ct_layer_dense(g, images, num_classes, CT_ACTIVATION_NONE, "logits");
}
static ct_output build_reusing(ct_graph *g, ct_output images, int num_classes, int training) {
  (void)training;
  ct_graph_push_variable_reuse(g);
  return ct_layer_dense(g, images, num_classes, CT_ACTIVATION_NONE, "logits");
}

/* After a model's build function the scopes are where they were, or the
 * build is refused naming the model and the scope; a scope left open is
 * closed, so that the next tower is not built inside it. */
static void test_build_functions_leave_scopes_as_they_found_them(void **state) {
  (void)state;
  static const struct {
    ct_model_def model;
    const char *says;
  } cases[] = {
      {{"leaking", NULL, build_leaking, NULL}, "the device scope '/cpu:1' still open"},
      {{"popping", NULL, build_popping, NULL},
       "its caller's name scope popped (more pops than pushes)"},
      {{"reusing", NULL, build_reusing, NULL}, "a variable reuse scope still open"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    ct_graph *g = ct_graph_new();
    ct_output x = ct_placeholder(g, "images", CT_F32, ct_shape_of(2, (int64_t)-1, 3L));
    ct_graph_push_name_scope(g, "tower_0");
    ct_graph_push_device(g, "/cpu:0");
    const ct_output logits = ct_model_build(&cases[i].model, g, x, 10, 1);
    const ct_status *st = ct_graph_status(g);
    printf("  %s\n", st->message);
    assert_null(logits.node);
    assert_int_equal(st->code, CT_FAILED_PRECONDITION);
    char want[160];
    snprintf(want, sizeof want, "model '%s': its build function returned with %s",
             cases[i].model.name, cases[i].says);
    assert_non_null(strstr(st->message, want));
    ct_graph_clear_error(g);
    ct_output after = ct_relu(g, x); /* inside tower 0's own device scope again */
    assert_string_equal(ct_node_requested_device(after.node), "/cpu:0");
    ct_graph_free(g);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parameter_counts_are_the_papers),
      cmocka_unit_test(test_resnet_depth_must_be_6n_plus_2),
      cmocka_unit_test(test_cifar10_cnn_decays_its_dense_weights),
      cmocka_unit_test(test_variable_weight_decay_steps_along_the_decayed_loss),
      cmocka_unit_test(test_models_train_on_their_input_shape),
      cmocka_unit_test(test_layers_share_variables_only_when_asked),
      cmocka_unit_test(test_build_functions_leave_scopes_as_they_found_them),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
