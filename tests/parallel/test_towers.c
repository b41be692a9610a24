/* Towers: for the same global batches and seed, the weights after K steps
 * with 1, 2, 3 and 4 towers agree, for both variable updates (ring and tree
 * all-reduce), with uneven splits and a last batch smaller than the tower
 * count; replicated copies are bitwise equal after every step. The
 * collective all-reduce's sums are read after the backward pass. The towers
 * build the caller's loss and return the gradients, applying none. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph_internal.h"
#include "ops/op_registry.h"
#include "test_support.h"

enum { BATCH = 26, STEPS = 4, MAX_WEIGHTS = 784 * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10 };

/* Global batch of step s: BATCH examples, but only 3 on the last step. */
static int64_t batch_size(int step) { return step == STEPS - 1 ? 3 : BATCH; }

typedef struct run_result {
  float weights[MAX_WEIGHTS];
  int64_t n_weights;
  double max_replica_diff; /* largest |copy - original| seen after any step */
} run_result;

/* An MLP with dropout between its layers: its masks must not depend on the
 * split either. */
static ct_output build_mlp_dropout(ct_graph *g, ct_output images, int num_classes, int training) {
  ct_output x = ct_layer_dense(g, images, 64, CT_ACTIVATION_RELU, "fc1");
  x = ct_layer_dropout(g, x, 0.5f, training, "dropout");
  return ct_layer_dense(g, x, num_classes, CT_ACTIVATION_NONE, "logits");
}
static const ct_model_def mlp_dropout = {"mlp_dropout", "784-64-10 with dropout 0.5",
                                         build_mlp_dropout, NULL};

/* across: the parameter server across ranks, as rank 0 of a job of one. */
static void run_job(const ct_model_def *model, int n_towers, ct_variable_update update,
                    ct_all_reduce_algorithm reduce, const double *speeds, int across,
                    run_result *result) {
  ct_graph *g = ct_graph_new();
  ct_graph_set_seed(g, 11);
  ct_tower_options o;
  memset(&o, 0, sizeof o);
  o.n_towers = n_towers;
  for (int k = 0; k < n_towers; ++k) snprintf(o.devices[k], sizeof o.devices[k], "/cpu:%d", k);
  o.variable_update = update;
  snprintf(o.ps_device, sizeof o.ps_device, "/cpu:0");
  o.all_reduce = reduce;
  o.across_ranks = across;
  ct_optimizer_config oc;
  ct_optimizer_config_defaults(&oc, CT_OPTIMIZER_MOMENTUM);
  ct_classifier_towers towers;
  ct_classifier_towers_build(g, model, 28, 28, 1, 10, &o, &oc, &towers);
  assert_status_ok(ct_graph_status(g));
  /* the MLP's six gradients (235k floats) travel in one packed bucket */
  if (update == CT_VARIABLE_UPDATE_REPLICATED && n_towers > 1 && model == ct_model_find("mlp"))
    assert_non_null(ct_graph_find(g, "all_reduce/bucket_0/Unpack"));
  ct_session_options so;
  ct_session_options_defaults(&so);
  so.device_count_cpu = 4;
  so.intra_op_parallelism_threads = 4;
  so.allow_soft_placement = 0;
  ct_status st = CT_STATUS_INIT;
  ct_session *s = ct_session_new(g, &so, &st);
  assert_status_ok(&st);
  result->max_replica_diff = 0;
  for (int step = 0; step < STEPS; ++step) {
    int64_t sizes[4];
    ct_towers_split(n_towers, batch_size(step), speeds, sizes);
    assert_int_equal(ct_test_tower_step(s, &towers, step, batch_size(step), sizes, 0.05f, &st), 0);
    /* every replica equals its original, bitwise */
    for (int v = 0; v < ct_graph_variable_count(g); ++v) {
      if (ct_variable_is_original(g, v)) continue;
      const char *original = ct_variable_checkpoint_name(g, v);
      int o_index = -1;
      for (int u = 0; u < ct_graph_variable_count(g); ++u)
        if (strcmp(ct_graph_variable_name(g, u), original) == 0) o_index = u;
      assert_true(o_index >= 0);
      ct_tensor *a = ct_session_variable(s, v, &st), *b = ct_session_variable(s, o_index, &st);
      for (int64_t i = 0; i < ct_tensor_elements(a); ++i) {
        double d = fabs((double)ct_tensor_f32(a)[i] - ct_tensor_f32(b)[i]);
        if (d > result->max_replica_diff) result->max_replica_diff = d;
      }
    }
  }
  int offset = 0;
  for (int v = 0; v < ct_graph_variable_count(g); ++v) {
    if (!ct_graph_variable_trainable(g, v) || !ct_variable_is_original(g, v)) continue;
    ct_tensor *t = ct_session_variable(s, v, &st);
    int64_t n = ct_tensor_elements(t);
    assert_true(offset + n <= MAX_WEIGHTS);
    memcpy(result->weights + offset, t->data, (size_t)n * sizeof(float));
    offset += (int)n;
  }
  result->n_weights = offset;
  ct_session_free(s);
  ct_classifier_towers_free(&towers);
  ct_graph_free(g);
}

static void run_model(const ct_model_def *model, int n_towers, ct_variable_update update,
                      ct_all_reduce_algorithm reduce, const double *speeds, run_result *result) {
  run_job(model, n_towers, update, reduce, speeds, 0, result);
}

static void run_towers(int n_towers, ct_variable_update update, ct_all_reduce_algorithm reduce,
                       const double *speeds, run_result *result) {
  run_model(ct_model_find("mlp"), n_towers, update, reduce, speeds, result);
  assert_int_equal(result->n_weights, MAX_WEIGHTS);
}

static void test_towers_give_the_result_of_one(void **state) {
  (void)state;
  static run_result reference, other;
  run_towers(1, CT_VARIABLE_UPDATE_PARAMETER_SERVER, CT_ALL_REDUCE_RING, NULL, &reference);
  /* skewed splits (as split: auto makes for devices of unequal speed) too */
  static const double skew[4] = {9.0, 1.0, 0.5, 3.0};
  const char *names[] = {"parameter_server", "replicated ring", "replicated tree",
                         "replicated collective"};
  const ct_all_reduce_algorithm reduces[] = {CT_ALL_REDUCE_RING, CT_ALL_REDUCE_RING,
                                             CT_ALL_REDUCE_TREE, CT_ALL_REDUCE_COLLECTIVE};
  for (int kind = 0; kind < 4; ++kind) {
    ct_variable_update update = kind == 0 ? CT_VARIABLE_UPDATE_PARAMETER_SERVER
                                          : CT_VARIABLE_UPDATE_REPLICATED;
    ct_all_reduce_algorithm reduce = reduces[kind];
    for (int n = 1; n <= 4; ++n)
      for (int skewed = 0; skewed < 2; ++skewed) {
        run_towers(n, update, reduce, skewed ? skew : NULL, &other);
        double diff = ct_test_max_rel_diff(other.weights, reference.weights, MAX_WEIGHTS);
        printf("  %-17s %d tower(s), %s split: max relative difference to 1 tower %.2e, "
               "replicas differ by %.1e\n",
               names[kind], n, skewed ? "skewed" : "even", diff, other.max_replica_diff);
        /* the reference's own configuration, run again: bitwise the same (determinism) */
        const int same_as_reference = kind == 0 && n == 1 && !skewed;
        assert_true(same_as_reference ? diff == 0.0 : diff <= 1e-5);
        assert_true(other.max_replica_diff == 0.0);
      }
  }
}

/* Dropout masks follow the example, not the tower: a model with dropout
 * trains to the same weights on any split, both updates. */
static void test_dropout_does_not_depend_on_the_split(void **state) {
  (void)state;
  static run_result reference, other;
  static const double skew[4] = {9.0, 1.0, 0.5, 3.0};
  run_model(&mlp_dropout, 1, CT_VARIABLE_UPDATE_REPLICATED, CT_ALL_REDUCE_RING, NULL, &reference);
  for (int ps = 0; ps < 2; ++ps)
    for (int n = 2; n <= 4; ++n) {
      run_model(&mlp_dropout, n,
                ps ? CT_VARIABLE_UPDATE_PARAMETER_SERVER : CT_VARIABLE_UPDATE_REPLICATED,
                CT_ALL_REDUCE_RING, skew, &other);
      assert_int_equal(other.n_weights, reference.n_weights);
      double diff = ct_test_max_rel_diff(other.weights, reference.weights, reference.n_weights);
      printf("  dropout, %s, %d towers, skewed split: max relative difference to 1 tower %.2e\n",
             ps ? "parameter_server" : "replicated", n, diff);
      assert_true(diff <= 1e-5);
    }
}

/* Logits of one batch fetched from each tower come back, joined, in input
 * order and equal to one tower's, padding left out. */
static void logits_of(int n_towers, const double *speeds, int64_t n, float *out) {
  ct_graph *g = ct_graph_new();
  ct_graph_set_seed(g, 3);
  ct_tower_options o;
  memset(&o, 0, sizeof o);
  o.n_towers = n_towers;
  for (int k = 0; k < n_towers; ++k) snprintf(o.devices[k], sizeof o.devices[k], "/cpu:%d", k);
  o.variable_update = CT_VARIABLE_UPDATE_REPLICATED;
  ct_optimizer_config oc;
  ct_optimizer_config_defaults(&oc, CT_OPTIMIZER_SGD);
  ct_classifier_towers towers;
  ct_classifier_towers_build(g, ct_model_find("mlp"), 28, 28, 1, 10, &o, &oc, &towers);
  ct_session_options so;
  ct_session_options_defaults(&so);
  so.device_count_cpu = 3;
  so.intra_op_parallelism_threads = 3;
  ct_status st = CT_STATUS_INIT;
  ct_session *s = ct_session_new(g, &so, &st);
  assert_status_ok(&st);
  ct_shape is = ct_shape_of(4, (int64_t)10, (int64_t)28, (int64_t)28, (int64_t)1);
  ct_shape ls = ct_shape_of(1, (int64_t)10);
  ct_tensor *images = ct_tensor_new(CT_F32, &is, &st), *labels = ct_tensor_new(CT_I32, &ls, &st);
  ct_test_fill_uniform(ct_tensor_f32(images), ct_tensor_elements(images), 5, 0, 1);
  int64_t sizes[3];
  ct_towers_split(n_towers, n, speeds, sizes);
  static ct_tower_feeds step_feeds;
  ct_feed *feeds = step_feeds.feeds;
  float weights[16];
  int n_feeds = ct_classifier_make_feeds(&towers, images, labels, n, sizes, NULL, &step_feeds, weights);
  ct_output fetches[3];
  for (int k = 0; k < n_towers; ++k) fetches[k] = towers.logits[k];
  ct_tensor *parts[3];
  ct_session_run(s, feeds, n_feeds, fetches, n_towers, NULL, 0, parts, &st);
  assert_status_ok(&st);
  ct_tensor *joined = ct_towers_concat(n_towers, parts, sizes, &st);
  assert_status_ok(&st);
  assert_int_equal(joined->shape.dims[0], n);
  memcpy(out, joined->data, (size_t)n * 10 * sizeof(float));
  ct_tensor_free(joined);
  for (int k = 0; k < n_towers; ++k) ct_tensor_free(parts[k]);
  ct_tensor_free(images);
  ct_tensor_free(labels);
  ct_session_free(s);
  ct_classifier_towers_free(&towers);
  ct_graph_free(g);
}

static void test_outputs_come_back_in_input_order(void **state) {
  (void)state;
  static const double skew[3] = {1.0, 5.0, 2.0};
  float one[100], three[100];
  logits_of(1, NULL, 10, one);
  logits_of(3, skew, 10, three);
  assert_true(ct_test_max_rel_diff(three, one, 100) <= 1e-6);
  logits_of(1, NULL, 2, one);
  logits_of(3, NULL, 2, three); /* 1 + 1 + padding */
  assert_true(ct_test_max_rel_diff(three, one, 20) <= 1e-6);
}

static void test_splits(void **state) {
  (void)state;
  int64_t sizes[4];
  ct_towers_split(4, 26, NULL, sizes);
  assert_true(sizes[0] == 7 && sizes[1] == 7 && sizes[2] == 6 && sizes[3] == 6);
  ct_towers_split(4, 3, NULL, sizes); /* a short last batch: one tower sits out */
  assert_true(sizes[0] == 1 && sizes[1] == 1 && sizes[2] == 1 && sizes[3] == 0);
  const double speeds[2] = {3000.0, 1000.0}; /* a device three times as fast */
  ct_towers_split(2, 128, speeds, sizes);
  assert_true(sizes[0] == 96 && sizes[1] == 32);
  const double stalled[3] = {1.0, 0.0, 1.0}; /* still at least one example each */
  ct_towers_split(3, 10, stalled, sizes);
  assert_true(sizes[1] == 1 && sizes[0] + sizes[1] + sizes[2] == 10);
}

/* Options of 2 replicated towers on these devices (ring all-reduce). */
static ct_tower_options two_towers(const char *first, const char *second) {
  ct_tower_options o;
  memset(&o, 0, sizeof o);
  o.n_towers = 2;
  snprintf(o.devices[0], sizeof o.devices[0], "%s", first);
  snprintf(o.devices[1], sizeof o.devices[1], "%s", second);
  o.variable_update = CT_VARIABLE_UPDATE_REPLICATED;
  return o;
}

/* A linear model: each example's loss is w . x + b, for inputs "x" [3]. */
static ct_output linear_loss(ct_graph *g, int tower, const ct_output *inputs, void *calls) {
  ++*(int *)calls;
  assert_string_equal(ct_node_name(inputs[0].node), tower ? "tower_1/x" : "tower_0/x");
  ct_output y = ct_layer_dense(g, inputs[0], 1, CT_ACTIVATION_NONE, "linear");
  return ct_reshape(g, y, ct_shape_of(1, (int64_t)-1));
}

static ct_tower_model linear_model(int *calls) {
  ct_tower_model m = {.n_inputs = 1, .loss = linear_loss, .user_data = calls};
  m.inputs[0] = (ct_tower_input){"x", CT_F32, ct_shape_of(1, (int64_t)3)};
  return m;
}

/* The towers call the caller's loss once per tower and return the
 * gradients to apply, applying none: replicated, one all-reduced gradient
 * per copy of each variable; parameter_server, one per variable. */
static void test_towers_return_the_gradients_to_apply(void **state) {
  (void)state;
  for (int ps = 0; ps < 2; ++ps) {
    ct_graph *g = ct_graph_new();
    int calls = 0;
    ct_tower_model model = linear_model(&calls);
    ct_tower_options o = two_towers("/cpu:0", "/cpu:1");
    if (ps) o.variable_update = CT_VARIABLE_UPDATE_PARAMETER_SERVER;
    ct_tower_graph towers;
    assert_int_equal(ct_towers_build(g, &model, &o, &towers), 0);
    assert_int_equal(calls, 2);
    assert_int_equal(towers.n_gradients, ps ? 2 : 4); /* weights and biases of each copy */
    for (int i = 0; i < towers.n_gradients; ++i) {
      const char *name = ct_graph_variable_name(g, towers.variables[i]);
      assert_true(ct_graph_variable_trainable(g, towers.variables[i]));
      assert_int_equal(strncmp(name, "tower_1/", 8) == 0, !ps && i >= 2);
      assert_non_null(towers.gradients[i].node);
    }
    for (int i = 0; i < g->n_nodes; ++i) /* no update: the caller applies the gradients */
      assert_true(strncmp(g->nodes[i]->op->name, "Apply", 5) != 0);
    ct_towers_free(&towers);
    ct_graph_free(g);
  }
}

static void test_bad_tower_configurations(void **state) {
  (void)state;
  ct_graph *g = ct_graph_new();
  ct_tower_options o = two_towers("/cpu:0", "/cpu:0");
  ct_optimizer_config oc;
  ct_optimizer_config_defaults(&oc, CT_OPTIMIZER_SGD);
  ct_classifier_towers towers;
  assert_int_not_equal(
      ct_classifier_towers_build(g, ct_model_find("mlp"), 28, 28, 1, 10, &o, &oc, &towers), 0);
  assert_non_null(strstr(ct_graph_status(g)->message, "towers 0 and 1 are both on '/cpu:0'"));
  ct_classifier_towers_free(&towers);
  ct_graph_free(g);

  /* a model that does not fit its input fails while building a tower, and says which */
  g = ct_graph_new();
  snprintf(o.devices[1], sizeof o.devices[1], "/cpu:1");
  assert_int_not_equal(
      ct_classifier_towers_build(g, ct_model_find("fmnist_cnn"), 2, 2, 1, 10, &o, &oc, &towers), 0);
  assert_non_null(strstr(ct_graph_status(g)->message, "building tower 0 on /cpu:0"));
  ct_classifier_towers_free(&towers);
  ct_graph_free(g);

  /* options and model descriptions a C caller can get wrong */
  int calls = 0;
  ct_tower_model model = linear_model(&calls);
  ct_tower_graph bare;
  o.variable_update = (ct_variable_update)7;
  g = ct_graph_new();
  assert_int_not_equal(ct_towers_build(g, &model, &o, &bare), 0);
  assert_non_null(strstr(ct_graph_status(g)->message, "unknown variable update 7"));
  ct_towers_free(&bare);
  ct_graph_free(g);
  o.variable_update = CT_VARIABLE_UPDATE_REPLICATED;
  model.loss = NULL;
  g = ct_graph_new();
  assert_int_not_equal(ct_towers_build(g, &model, &o, &bare), 0);
  assert_non_null(strstr(ct_graph_status(g)->message, "needs a loss function"));
  ct_towers_free(&bare);
  ct_graph_free(g);
  assert_int_equal(calls, 0);
}

static int has_control_input(const ct_node *node, const ct_node *before) {
  for (int c = 0; c < node->n_control; ++c)
    if (node->control[c] == before) return 1;
  return 0;
}

/* With the collective all-reduce, the buckets' sums are read only once
 * every gradient is computed: on GPUs the sums are taken on communication
 * streams, and a reader queued earlier would hold up the rest of the
 * backward pass on its compute stream. So each AllReduce's only readers are
 * Identity nodes that wait for all_reduce/backward_done, which waits for
 * the gradients that every AllReduce packs. */
static void test_collective_sums_are_read_after_the_backward_pass(void **state) {
  (void)state;
  ct_graph *g = ct_graph_new();
  ct_tower_options o = two_towers("/gpu:0", "/gpu:1");
  o.all_reduce = CT_ALL_REDUCE_COLLECTIVE;
  ct_optimizer_config oc;
  ct_optimizer_config_defaults(&oc, CT_OPTIMIZER_MOMENTUM);
  ct_classifier_towers towers;
  ct_classifier_towers_build(g, ct_model_find("fmnist_cnn"), 28, 28, 1, 10, &o, &oc, &towers);
  assert_status_ok(ct_graph_status(g));
  const ct_node *backward_done = ct_graph_find(g, "all_reduce/backward_done");
  assert_non_null(backward_done);
  int all_reduces = 0, readers = 0, packed = 0;
  for (int i = 0; i < g->n_nodes; ++i) {
    const ct_node *a = g->nodes[i];
    if (strcmp(a->op->name, "AllReduce") != 0) continue;
    all_reduces++;
    /* each part: a gradient, or a ConcatV2 of Reshapes of gradients */
    for (int k = 0; k < a->n_inputs; ++k) {
      const ct_node *part = a->inputs[k].node;
      if (strcmp(part->op->name, "ConcatV2") != 0) {
        assert_true(has_control_input(backward_done, part));
        packed++;
        continue;
      }
      for (int m = 0; m < part->n_inputs; ++m) {
        assert_string_equal(part->inputs[m].node->op->name, "Reshape");
        assert_true(has_control_input(backward_done, part->inputs[m].node->inputs[0].node));
        packed++;
      }
    }
    for (int j = 0; j < g->n_nodes; ++j)
      for (int k = 0; k < g->nodes[j]->n_inputs; ++k) {
        if (g->nodes[j]->inputs[k].node != a) continue;
        assert_string_equal(g->nodes[j]->op->name, "Identity");
        assert_true(has_control_input(g->nodes[j], backward_done));
        readers++;
      }
  }
  printf("  %d buckets: %d gradients packed, %d sum readers, all after backward_done\n",
         all_reduces, packed, readers);
  assert_true(all_reduces >= 2);
  assert_int_equal(readers, 2 * all_reduces);
  ct_classifier_towers_free(&towers);
  ct_graph_free(g);
}

static int has_control_input_op(const ct_node *n, const char *op) {
  for (int i = 0; i < n->n_control; ++i)
    if (strcmp(n->control[i]->op->name, op) == 0) return 1;
  return 0;
}

/* The parameter server across ranks, built as rank 0 of a job of one (the
 * root: its reduce and broadcast keep their input): a CollectiveReduce to
 * rank 0 per bucket, the optimizer's updates, then a CollectiveBroadcast of
 * every variable after its update and after the previous broadcast; the
 * weights are bitwise those of the parameter server of one process. */
static void test_parameter_server_across_ranks_alone(void **state) {
  (void)state;
  static run_result plain, across;
  for (int n = 1; n <= 2; ++n) {
    run_job(ct_model_find("mlp"), n, CT_VARIABLE_UPDATE_PARAMETER_SERVER, CT_ALL_REDUCE_RING, NULL,
            0, &plain);
    run_job(ct_model_find("mlp"), n, CT_VARIABLE_UPDATE_PARAMETER_SERVER, CT_ALL_REDUCE_RING, NULL,
            1, &across);
    double diff = ct_test_max_rel_diff(across.weights, plain.weights, MAX_WEIGHTS);
    printf("  %d tower(s): across ranks (alone) vs one process, max relative difference %.1e\n", n,
           diff);
    assert_true(diff == 0.0);
  }
  ct_graph *g = ct_graph_new();
  ct_tower_options o = two_towers("/cpu:0", "/cpu:1");
  o.variable_update = CT_VARIABLE_UPDATE_PARAMETER_SERVER;
  o.across_ranks = 1;
  ct_optimizer_config oc;
  ct_optimizer_config_defaults(&oc, CT_OPTIMIZER_ADAM);
  ct_classifier_towers towers;
  ct_classifier_towers_build(g, ct_model_find("fmnist_cnn"), 28, 28, 1, 10, &o, &oc, &towers);
  assert_status_ok(ct_graph_status(g));
  int reduces = 0, broadcasts = 0;
  const ct_node *previous = NULL;
  for (int i = 0; i < g->n_nodes; ++i) {
    const ct_node *n = g->nodes[i];
    if (strcmp(n->op->name, "CollectiveReduce") == 0) {
      assert_true(n->attrs.collective.rooted && n->attrs.collective.root == 0);
      reduces++;
    }
    if (strcmp(n->op->name, "CollectiveBroadcast") != 0) continue;
    const int v = n->inputs[0].node->variable;
    assert_true(v >= 0 && ct_graph_variable_trainable(g, v));
    assert_true(has_control_input_op(n, "ApplyAdam"));
    assert_true(previous == NULL || has_control_input(n, previous));
    assert_true(previous != NULL || has_control_input_op(n, "CollectiveReduce"));
    previous = n;
    broadcasts++;
  }
  printf("  fmnist_cnn, Adam: %d buckets to rank 0, %d variables broadcast back (of %d listed)\n",
         reduces, broadcasts, towers.towers.n_shared);
  assert_true(reduces >= 2);
  assert_int_equal(broadcasts, towers.towers.n_shared);
  assert_int_equal(broadcasts, towers.towers.n_gradients); /* rank 0 applies every gradient */
  ct_classifier_towers_free(&towers);
  ct_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_towers_give_the_result_of_one),
      cmocka_unit_test(test_collective_sums_are_read_after_the_backward_pass),
      cmocka_unit_test(test_dropout_does_not_depend_on_the_split),
      cmocka_unit_test(test_splits),
      cmocka_unit_test(test_outputs_come_back_in_input_order),
      cmocka_unit_test(test_towers_return_the_gradients_to_apply),
      cmocka_unit_test(test_bad_tower_configurations),
      cmocka_unit_test(test_parameter_server_across_ranks_alone),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
