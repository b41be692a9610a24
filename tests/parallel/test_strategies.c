/* The strategies' table and the towers' resolution: every variable update
 * has a strategy with a name and a description; ct_towers_resolve turns a
 * request into the devices of this process's towers on parsed device
 * specs (/cpu:0 and /device:CPU:0 are one device), moves towers that want
 * missing GPUs to CPU devices only under soft placement, picks the
 * all-reduce, and says what is wrong with a request a session cannot
 * hold; ct_towers_build refuses two towers on one device by any names. */
#include <stdio.h>
#include <string.h>

#include "parallel/parallel_internal.h"
#include "parallel/strategy.h"
#include "test_support.h"

static void test_every_update_has_a_strategy(void **state) {
  (void)state;
  ct_tower_options o;
  ct_tower_options_defaults(&o);
  o.n_towers = 2;
  for (int u = 0; u < CT_VARIABLE_UPDATE_COUNT; ++u) {
    const ct_strategy *s = ct_strategy_of((ct_variable_update)u);
    assert_non_null(s);
    assert_non_null(s->name);
    assert_non_null(s->describe);
    o.variable_update = (ct_variable_update)u;
    char text[128] = "";
    s->describe(&o, text, sizeof text);
    printf("  %-16s %s\n", s->name, text);
    assert_true(text[0] != '\0');
    /* a strategy with state for a run frees it, and one that steps a rank
     * without towers also exchanges after the towers' run */
    assert_int_equal(s->run_new != NULL, s->run_free != NULL);
    if (s->own_step) assert_non_null(s->after_run);
  }
  assert_null(ct_strategy_of(CT_VARIABLE_UPDATE_COUNT));
  assert_null(ct_strategy_of((ct_variable_update)-1));
  assert_string_equal(ct_strategy_of(CT_VARIABLE_UPDATE_REPLICATED)->name, "replicated");
  assert_string_equal(ct_strategy_of(CT_VARIABLE_UPDATE_PARAMETER_SERVER)->name,
                      "parameter_server");
}

/* Two CPU devices, no GPU, soft placement as asked. */
static ct_session_options cpus(int soft) {
  ct_session_options so;
  ct_session_options_defaults(&so);
  so.device_count_cpu = 2;
  so.device_count_gpu = 0;
  so.allow_soft_placement = soft;
  return so;
}

/* Resolves r on so: 0 and the towers, or 1 and the message in *status. */
static int resolve(const ct_tower_request *r, ct_session_options so, ct_tower_options *t,
                   ct_status *status) {
  ct_status_clear(status);
  return ct_towers_resolve(r, &so, t, status);
}

static void test_towers_resolve_on_parsed_specs(void **state) {
  (void)state;
  ct_tower_request r;
  ct_tower_options t;
  ct_status st = CT_STATUS_INIT;
  ct_tower_request_defaults(&r);
  assert_int_equal(resolve(&r, cpus(1), &t, &st), 0);
  assert_int_equal(t.n_towers, 1);
  assert_string_equal(t.devices[0], "/cpu:0");
  assert_int_equal(t.variable_update, CT_VARIABLE_UPDATE_REPLICATED);
  assert_int_equal(t.all_reduce, CT_ALL_REDUCE_RING); /* auto off the GPUs */
  assert_false(t.across_ranks);

  /* any of TensorFlow's forms, written as one local name */
  r.n_listed = 2;
  snprintf(r.listed[0], sizeof r.listed[0], "/device:CPU:1");
  snprintf(r.listed[1], sizeof r.listed[1], "/job:localhost/replica:0/task:0/device:CPU:0");
  assert_int_equal(resolve(&r, cpus(1), &t, &st), 0);
  assert_int_equal(t.n_towers, 2);
  assert_string_equal(t.devices[0], "/cpu:1");
  assert_string_equal(t.devices[1], "/cpu:0");

  /* the parameter server: its device and task */
  r.variable_update = CT_VARIABLE_UPDATE_PARAMETER_SERVER;
  snprintf(r.ps_device, sizeof r.ps_device, "/job:worker/task:0/device:CPU:1");
  assert_int_equal(resolve(&r, cpus(1), &t, &st), 0);
  assert_int_equal(t.variable_update, CT_VARIABLE_UPDATE_PARAMETER_SERVER);
  assert_string_equal(t.ps_device, "/cpu:1");
  assert_int_equal(t.ps_task, 0);

  /* n_towers: the first N CPU devices; more than the session has is an error */
  ct_tower_request_defaults(&r);
  r.n_towers = -1;
  assert_int_equal(resolve(&r, cpus(1), &t, &st), 0);
  assert_int_equal(t.n_towers, 2);
  assert_string_equal(t.devices[1], "/cpu:1");
  r.n_towers = 3;
  assert_int_equal(resolve(&r, cpus(1), &t, &st), 1);
  assert_int_equal(st.code, CT_INVALID_ARGUMENT);
  assert_non_null(strstr(st.message, "3 towers need 3 CPU devices but the session has 2; set "
                                     "session.device_count: {CPU: 3}"));

  /* towers that want GPUs: CPU devices under soft placement, else an error */
  ct_tower_request_defaults(&r);
  r.n_gpus = 2;
  assert_int_equal(resolve(&r, cpus(1), &t, &st), 0);
  assert_int_equal(t.n_towers, 2);
  assert_string_equal(t.devices[0], "/cpu:0");
  assert_string_equal(t.devices[1], "/cpu:1");
  ct_tower_options unchanged = t;
  assert_int_equal(resolve(&r, cpus(0), &t, &st), 1);
  assert_non_null(strstr(st.message, "2 towers want GPUs but this session has 0 GPUs; set "
                                     "session.allow_soft_placement: true"));
  assert_memory_equal(&t, &unchanged, sizeof t); /* left as it was */

  /* nccl needs GPUs */
  ct_tower_request_defaults(&r);
  r.all_reduce = CT_ALL_REDUCE_REQUEST_NCCL;
  assert_int_equal(resolve(&r, cpus(1), &t, &st), 1);
  assert_non_null(strstr(st.message, "devices.all_reduce: nccl needs every tower on a GPU, but "
                                     "tower 0 is on /cpu:0 (this session has no GPU)"));
  r.all_reduce = CT_ALL_REDUCE_REQUEST_TREE;
  assert_int_equal(resolve(&r, cpus(1), &t, &st), 0);
  assert_int_equal(t.all_reduce, CT_ALL_REDUCE_TREE);

  /* a name that is no device */
  snprintf(r.listed[0], sizeof r.listed[0], "/tpu:0");
  assert_int_equal(resolve(&r, cpus(1), &t, &st), 1);
  assert_non_null(strstr(st.message, "invalid device specification '/tpu:0'"));

  /* compression between CPU devices: one memory, nothing leaves a GPU */
  ct_tower_request_defaults(&r);
  r.n_towers = 2;
  r.compression = CT_COMPRESSION_BF16;
  assert_int_equal(resolve(&r, cpus(1), &t, &st), 0);
  assert_int_equal(t.memory_domain[0], 0);
  assert_int_equal(t.memory_domain[1], 0);
  assert_int_equal(t.all_reduce, CT_ALL_REDUCE_RING);
  assert_false(ct_towers_compress_out_of_gpus(&t));
}

/* A ring or tree packs the sums that leave a GPU for another memory: to
 * another physical GPU or to the host; not between the virtual GPUs of one
 * card, not from the host, not under the collective all-reduce, not
 * without compression. */
static void test_sums_compressed_out_of_gpus(void **state) {
  (void)state;
  static const struct {
    int domains[2];
    ct_all_reduce_algorithm reduce;
    ct_compression compression;
    int compressed;
  } cases[] = {
      {{1, 2}, CT_ALL_REDUCE_RING, CT_COMPRESSION_BF16, 1},
      {{1, 2}, CT_ALL_REDUCE_TREE, CT_COMPRESSION_ONEBIT, 1},
      {{1, 0}, CT_ALL_REDUCE_RING, CT_COMPRESSION_FP16, 1},
      {{0, 1}, CT_ALL_REDUCE_RING, CT_COMPRESSION_FP16, 1},
      {{1, 1}, CT_ALL_REDUCE_RING, CT_COMPRESSION_BF16, 0},
      {{0, 0}, CT_ALL_REDUCE_RING, CT_COMPRESSION_BF16, 0},
      {{1, 2}, CT_ALL_REDUCE_COLLECTIVE, CT_COMPRESSION_BF16, 0},
      {{1, 2}, CT_ALL_REDUCE_RING, CT_COMPRESSION_NONE, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    ct_tower_options o;
    ct_tower_options_defaults(&o);
    o.n_towers = 2;
    o.memory_domain[0] = cases[i].domains[0];
    o.memory_domain[1] = cases[i].domains[1];
    o.all_reduce = cases[i].reduce;
    o.compression = cases[i].compression;
    if (ct_towers_compress_out_of_gpus(&o) != cases[i].compressed)
      fail_msg("case %zu: domains %d, %d: expected %d", i, cases[i].domains[0],
               cases[i].domains[1], cases[i].compressed);
  }
}

static ct_output linear_loss(ct_graph *g, int tower, const ct_output *inputs, void *data) {
  (void)tower, (void)data;
  ct_output y = ct_layer_dense(g, inputs[0], 1, CT_ACTIVATION_NONE, "linear");
  return ct_reshape(g, y, ct_shape_of(1, (int64_t)-1));
}

/* Two names of one device are one device: two towers on it are refused,
 * whichever names they use. */
static void test_two_names_of_one_device(void **state) {
  (void)state;
  static const char *const names[][2] = {
      {"/cpu:0", "/device:CPU:0"},
      {"/device:CPU:1", "/cpu:1"},
      {"/cpu:0", "/job:localhost/replica:0/task:0/device:CPU:0"},
      {"/gpu:0", "/device:GPU:0"},
  };
  ct_tower_model model = {.n_inputs = 1, .loss = linear_loss};
  model.inputs[0] = (ct_tower_input){"x", CT_F32, ct_shape_of(1, (int64_t)3)};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i) {
    ct_tower_options o;
    ct_tower_options_defaults(&o);
    o.n_towers = 2;
    o.variable_update = CT_VARIABLE_UPDATE_REPLICATED;
    snprintf(o.devices[0], sizeof o.devices[0], "%s", names[i][0]);
    snprintf(o.devices[1], sizeof o.devices[1], "%s", names[i][1]);
    ct_graph *g = ct_graph_new();
    ct_tower_graph towers;
    assert_int_not_equal(ct_towers_build(g, &model, &o, &towers), 0);
    char expected[256];
    snprintf(expected, sizeof expected, "towers 0 and 1 are both on '%s' ('%s' is the same device)",
             names[i][0], names[i][1]);
    printf("  %s\n", ct_graph_status(g)->message);
    assert_non_null(strstr(ct_graph_status(g)->message, expected));
    ct_towers_free(&towers);
    ct_graph_free(g);
  }
  /* and two devices are two */
  ct_tower_options o;
  ct_tower_options_defaults(&o);
  o.n_towers = 2;
  snprintf(o.devices[1], sizeof o.devices[1], "/device:CPU:1");
  ct_graph *g = ct_graph_new();
  ct_tower_graph towers;
  assert_int_equal(ct_towers_build(g, &model, &o, &towers), 0);
  ct_towers_free(&towers);
  ct_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_update_has_a_strategy),
      cmocka_unit_test(test_towers_resolve_on_parsed_specs),
      cmocka_unit_test(test_sums_compressed_out_of_gpus),
      cmocka_unit_test(test_two_names_of_one_device),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
