/* Graph edges between tasks, under mpirun (-np 3 and -np 4): every rank
 * builds the same graph with nodes on devices of several tasks
 * (/job:worker/task:T/cpu:C), and the plan sends and receives the values
 * that cross processes. Edges in both directions, several between the same
 * two tasks, fan-out and fan-in, control edges, runs one after another,
 * random placements checked bitwise against a one-process run of the same
 * graph, a failure on one task reported by the others, and the errors of
 * placement across tasks. Every rank runs the tests in the same order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/communication.h"
#include "test_support.h"

enum { CPUS = 2 };

/* This rank's options: CPUS devices of one thread each (the defaults name
 * them as its task's). */
static ct_session_options task_options(int soft) {
  ct_session_options o;
  ct_session_options_defaults(&o);
  o.device_count_cpu = CPUS;
  o.device_count_gpu = 0;
  o.intra_op_parallelism_threads = CPUS;
  o.allow_soft_placement = soft;
  return o;
}

static void push_task(ct_graph *g, int task, int cpu) {
  char name[64];
  snprintf(name, sizeof name, "/job:worker/task:%d/cpu:%d", task, cpu);
  ct_graph_push_device(g, name);
}

static ct_tensor *vector_of(float first, float step, int n) {
  ct_status st = CT_STATUS_INIT;
  ct_shape shape = ct_shape_of(1, (int64_t)n);
  ct_tensor *t = ct_tensor_new(CT_F32, &shape, &st);
  assert_status_ok(&st);
  for (int i = 0; i < n; ++i) ((float *)t->data)[i] = first + step * (float)i;
  return t;
}

static void expect_message(const ct_status *status, const char *text) {
  if (strstr(status->message, text) == NULL) {
    print_error("rank %d: '%s' does not say '%s'\n", ct_cluster_rank(), status->message, text);
    fail();
  }
}

/* Task 0 computes a = 2x; task 1 reads it twice (one transfer) and sends
 * back b = a * a and d = x + x (two edges from 1 to 0); e = b + d on task 0
 * goes to every task (fan-out), whose -e all meet in an AddN on the last
 * task (fan-in); every rank fetches values of other tasks. Three runs with
 * other feeds: each run's messages are its own. */
static void test_both_directions_fan_out_and_fan_in(void **state) {
  (void)state;
  const int size = ct_cluster_size(), last = size - 1;
  ct_graph *g = ct_graph_new();
  ct_output x = ct_placeholder(g, "x", CT_F32, ct_shape_of(1, (int64_t)5));
  push_task(g, 0, 0);
  ct_output a = ct_add(g, x, x);
  ct_graph_pop_device(g);
  push_task(g, 1, 1);
  ct_output b = ct_mul(g, a, a);
  ct_output c = ct_neg(g, a);
  ct_output d = ct_add(g, x, x);
  ct_graph_pop_device(g);
  push_task(g, 0, 1);
  ct_output e = ct_add(g, b, d);
  ct_graph_pop_device(g);
  ct_output negated[8];
  for (int t = 0; t < size; ++t) {
    push_task(g, t, t % CPUS);
    negated[t] = ct_neg(g, e);
    ct_graph_pop_device(g);
  }
  push_task(g, last, 0);
  ct_output sum = ct_add_n(g, size, negated);
  ct_graph_pop_device(g);
  ct_status st = CT_STATUS_INIT;
  ct_session_options o = task_options(0);
  ct_session *s = ct_session_new(g, &o, &st);
  assert_status_ok(&st);
  char expected[128];
  snprintf(expected, sizeof expected, "/job:worker/replica:0/task:1/device:CPU:1");
  assert_string_equal(ct_session_node_device(s, b.node, &st), expected);
  snprintf(expected, sizeof expected, "/job:worker/replica:0/task:%d/device:CPU:0", last);
  assert_string_equal(ct_session_node_device(s, sum.node, &st), expected);
  for (int run = 1; run <= 3; ++run) {
    ct_tensor *xv = vector_of((float)run, 0.5f, 5);
    ct_feed feed = {x, xv};
    ct_output fetches[3] = {sum, c, e};
    ct_tensor *out[3];
    const int failed_run = ct_session_run(s, &feed, 1, fetches, 3, NULL, 0, out, &st);
    assert_status_ok(&st);
    assert_int_equal(failed_run, 0);
    for (int i = 0; i < 5; ++i) {
      const float xi = ((float *)xv->data)[i];
      const float ei = 4 * xi * xi + 2 * xi;
      assert_true(((float *)out[2]->data)[i] == ei);
      assert_true(((float *)out[1]->data)[i] == -2 * xi);
      assert_true(((float *)out[0]->data)[i] == -(float)size * ei);
    }
    for (int k = 0; k < 3; ++k) ct_tensor_free(out[k]);
    ct_tensor_free(xv);
  }
  ct_session_free(s);
  ct_graph_free(g);
}

/* Control edges both ways: v on task 1 is incremented only after w on
 * task 0 is (a control input from task 0), and a group on task 0 runs
 * both (control inputs from tasks 0 and 1) and a third on the last task. */
static void test_control_edges(void **state) {
  (void)state;
  const int last = ct_cluster_size() - 1;
  ct_graph *g = ct_graph_new();
  ct_initializer zeros = {CT_INIT_ZEROS, 0};
  ct_output one = ct_scalar(g, 1.0f);
  ct_output w, v, u, w_next, v_next, u_next;
  push_task(g, 0, 1);
  w = ct_variable(g, "w", ct_shape_of(0), zeros, 0);
  w_next = ct_assign(g, w, ct_add(g, w, one));
  ct_graph_pop_device(g);
  push_task(g, 1, 0);
  v = ct_variable(g, "v", ct_shape_of(0), zeros, 0);
  v_next = ct_assign(g, v, ct_add(g, v, one));
  ct_node_add_control_input(v_next.node, w_next.node); /* w_next runs because v_next does */
  ct_graph_pop_device(g);
  push_task(g, last, 1);
  u = ct_variable(g, "u", ct_shape_of(0), zeros, 0);
  u_next = ct_assign(g, u, ct_add(g, u, one));
  ct_graph_pop_device(g);
  push_task(g, 0, 0);
  ct_node *members[2] = {v_next.node, u_next.node};
  ct_node *step = ct_group(g, "step", 2, members);
  ct_graph_pop_device(g);
  ct_status st = CT_STATUS_INIT;
  ct_session_options o = task_options(0);
  ct_session *s = ct_session_new(g, &o, &st);
  assert_status_ok(&st);
  for (int run = 0; run < 4; ++run) {
    const int failed_run = ct_session_run(s, NULL, 0, NULL, 0, &step, 1, NULL, &st);
    assert_status_ok(&st);
    assert_int_equal(failed_run, 0);
  }
  ct_output fetches[3] = {w, v, u};
  ct_tensor *out[3];
  const int failed_run = ct_session_run(s, NULL, 0, fetches, 3, NULL, 0, out, &st);
  assert_status_ok(&st);
  assert_int_equal(failed_run, 0);
  assert_true(((float *)out[0]->data)[0] == 4.0f);
  assert_true(((float *)out[1]->data)[0] == 4.0f);
  assert_true(((float *)out[2]->data)[0] == 4.0f);
  for (int k = 0; k < 3; ++k) ct_tensor_free(out[k]);
  /* a variable of another task is read by fetching it, not in place:
   * w (variable 0) is task 0's, v (variable 1) task 1's */
  assert_null(ct_session_read_variable(s, ct_cluster_rank() == 1 ? 0 : 1, &st));
  expect_message(&st, "lives on /job:worker/replica:0/task:");
  expect_message(&st, "a device of another task");
  ct_session_free(s);
  ct_graph_free(g);
}

/* A random graph of NODES nodes: elementwise ops on earlier nodes, some
 * control inputs, each node on a random device of a random task when
 * `placed` (else on no device: a one-process run's reference). */
enum { NODES = 40, WIDTH = 6 };
static unsigned next_random(unsigned *r) {
  *r = *r * 1664525u + 1013904223u;
  return *r >> 8;
}

static ct_graph *random_graph(unsigned seed, int placed, ct_output *fetches, int *n_fetches) {
  ct_graph *g = ct_graph_new();
  ct_output nodes[NODES];
  nodes[0] = ct_placeholder(g, "x", CT_F32, ct_shape_of(1, (int64_t)WIDTH));
  unsigned r = seed * 2654435761u + 1;
  for (int i = 1; i < NODES; ++i) {
    const int task = (int)(next_random(&r) % (unsigned)ct_cluster_size());
    const int cpu = (int)(next_random(&r) % CPUS);
    if (placed) push_task(g, task, cpu);
    const ct_output a = nodes[next_random(&r) % (unsigned)i];
    const ct_output b = nodes[next_random(&r) % (unsigned)i];
    const ct_output c = nodes[next_random(&r) % (unsigned)i];
    const ct_output three[3] = {a, b, c};
    switch (next_random(&r) % 5) {
      case 0:
        nodes[i] = ct_add(g, a, b);
        break;
      case 1:
        nodes[i] = ct_tanh(g, ct_mul(g, a, b));
        break;
      case 2:
        nodes[i] = ct_sub(g, a, b);
        break;
      case 3:
        nodes[i] = ct_tanh(g, ct_add_n(g, 3, three));
        break;
      default:
        nodes[i] = ct_neg(g, a);
        break;
    }
    const ct_node *before = nodes[next_random(&r) % (unsigned)i].node;
    if (next_random(&r) % 4 == 0) ct_node_add_control_input(nodes[i].node, (ct_node *)before);
    if (placed) ct_graph_pop_device(g);
  }
  *n_fetches = 0;
  for (int i = NODES - 1; i > 0 && *n_fetches < 8; i -= 5) fetches[(*n_fetches)++] = nodes[i];
  return g;
}

static void run_graph(ct_graph *g, const ct_session_options *o, const ct_output *fetches,
                      int n_fetches, ct_tensor **out) {
  ct_status st = CT_STATUS_INIT;
  ct_session *s = ct_session_new(g, o, &st);
  assert_status_ok(&st);
  ct_tensor *xv = vector_of(-0.7f, 0.3f, WIDTH);
  ct_feed feed = {{ct_graph_find(g, "x"), 0}, xv};
  const int failed_run = ct_session_run(s, &feed, 1, fetches, n_fetches, NULL, 0, out, &st);
  assert_status_ok(&st);
  assert_int_equal(failed_run, 0);
  ct_tensor_free(xv);
  ct_session_free(s);
}

static void test_random_placements_match_one_process(void **state) {
  (void)state;
  for (unsigned seed = 1; seed <= 6; ++seed) {
    ct_output fetches[8], local_fetches[8];
    int n = 0, n_local = 0;
    ct_graph *g = random_graph(seed, 1, fetches, &n);
    ct_graph *local = random_graph(seed, 0, local_fetches, &n_local);
    assert_int_equal(n, n_local);
    ct_tensor *got[8], *want[8];
    ct_session_options o = task_options(0);
    run_graph(g, &o, fetches, n, got);
    run_graph(local, &o, local_fetches, n, want);
    for (int k = 0; k < n; ++k) {
      assert_int_equal(ct_tensor_nbytes(got[k]), ct_tensor_nbytes(want[k]));
      assert_memory_equal(got[k]->data, want[k]->data, ct_tensor_nbytes(want[k]));
      ct_tensor_free(got[k]);
      ct_tensor_free(want[k]);
    }
    ct_graph_free(g);
    ct_graph_free(local);
  }
}

/* check_numerics fails a node on task 1: every task's run fails, naming
 * it, and none waits for a value that will not come; the session runs
 * again afterwards. */
static void test_a_failure_on_one_task_fails_every_task(void **state) {
  (void)state;
  ct_graph *g = ct_graph_new();
  ct_output x = ct_placeholder(g, "x", CT_F32, ct_shape_of(1, (int64_t)3));
  push_task(g, 1, 0);
  ct_output q = ct_div(g, ct_scalar(g, 1.0f), x); /* 1/0 = Inf: check_numerics fails */
  ct_graph_pop_device(g);
  push_task(g, 0, 0);
  ct_output y = ct_add(g, q, x);
  ct_graph_pop_device(g);
  ct_status st = CT_STATUS_INIT;
  ct_session_options o = task_options(0);
  o.check_numerics = 1;
  ct_session *s = ct_session_new(g, &o, &st);
  assert_status_ok(&st);
  ct_tensor *zero = vector_of(0.0f, 1.0f, 3); /* 0, 1, 2 */
  ct_feed feed = {x, zero};
  ct_tensor *out = NULL;
  assert_int_equal(ct_session_run(s, &feed, 1, &y, 1, NULL, 0, &out, &st), 1);
  assert_null(out);
  expect_message(&st, "check_numerics");
  if (ct_cluster_rank() != 1) expect_message(&st, "rank 1 (worker/task:1)");
  ct_tensor *ones = vector_of(1.0f, 1.0f, 3);
  feed.value = ones;
  st = (ct_status)CT_STATUS_INIT;
  const int failed_run = ct_session_run(s, &feed, 1, &y, 1, NULL, 0, &out, &st);
  assert_status_ok(&st);
  assert_int_equal(failed_run, 0);
  assert_true(((float *)out->data)[1] == 0.5f + 2.0f);
  ct_tensor_free(out);
  ct_tensor_free(zero);
  ct_tensor_free(ones);
  ct_session_free(s);
  ct_graph_free(g);
}

/* A task or job that does not exist: TensorFlow's error, listing every
 * task's devices; with soft placement, this process's device instead. */
static void test_devices_that_do_not_exist(void **state) {
  (void)state;
  const char *wrong[] = {"/job:worker/task:9/cpu:0", "/job:ps/task:0/cpu:0",
                         "/job:worker/task:1/cpu:7"};
  for (size_t k = 0; k < sizeof wrong / sizeof *wrong; ++k) {
    ct_graph *g = ct_graph_new();
    ct_output x = ct_placeholder(g, "x", CT_F32, ct_shape_of(1, (int64_t)3));
    ct_graph_push_device(g, wrong[k]);
    ct_output y = ct_neg(g, x);
    ct_graph_pop_device(g);
    ct_status st = CT_STATUS_INIT;
    ct_session_options o = task_options(0);
    assert_null(ct_session_new(g, &o, &st));
    expect_message(&st, "Operation was explicitly assigned to");
    expect_message(&st, "but available devices are [");
    expect_message(&st, "/job:worker/replica:0/task:1/device:CPU:1");
    st = (ct_status)CT_STATUS_INIT;
    o = task_options(1);
    o.log_device_placement = 1;
    o.log = tmpfile();
    assert_non_null(o.log);
    ct_session *s = ct_session_new(g, &o, &st);
    assert_status_ok(&st);
    /* the placement log names every task's devices as it names its own */
    char log[4096] = "";
    rewind(o.log);
    log[fread(log, 1, sizeof log - 1, o.log)] = '\0';
    fclose(o.log);
    char line[256];
    snprintf(line, sizeof line, "requested %s, which does not exist; placed on ",
             k == 0 ? "/job:worker/task:9/device:CPU:0"
             : k == 1 ? "/job:ps/task:0/device:CPU:0" : "/job:worker/task:1/device:CPU:7");
    if (strstr(log, line) == NULL) {
      print_error("the placement log lacks '%s':\n%s\n", line, log);
      fail();
    }
    /* the same type on the same task when it exists (task 1's CPU:0 for
     * its CPU:7), else this process's default */
    char want[96];
    snprintf(want, sizeof want, "/job:worker/replica:0/task:%d/device:CPU:0",
             k == 2 ? 1 : ct_cluster_task());
    assert_string_equal(ct_session_node_device(s, y.node, &st), want);
    ct_session_free(s);
    ct_graph_free(g);
  }
}

/* Ranks that run different graphs fail at once, naming the disagreement,
 * instead of waiting for each other's messages. */
static void test_ranks_with_different_graphs_are_named(void **state) {
  (void)state;
  ct_graph *g = ct_graph_new();
  ct_output x = ct_placeholder(g, "x", CT_F32, ct_shape_of(1, (int64_t)3));
  push_task(g, 1, 0);
  ct_output a = ct_neg(g, x);
  ct_output b = ct_add(g, x, x);
  ct_graph_pop_device(g);
  ct_status st = CT_STATUS_INIT;
  ct_session_options o = task_options(0);
  ct_session *s = ct_session_new(g, &o, &st);
  assert_status_ok(&st);
  ct_tensor *xv = vector_of(1.0f, 1.0f, 3);
  ct_feed feed = {x, xv};
  ct_output fetches[2] = {a, b};
  ct_tensor *out[2] = {NULL, NULL};
  const int n = ct_cluster_rank() == 0 ? 2 : 1; /* rank 0 fetches one more */
  assert_int_equal(ct_session_run(s, &feed, 1, fetches, n, NULL, 0, out, &st), 1);
  expect_message(&st, "the ranks disagree on the graph's edges between tasks");
  ct_tensor_free(xv);
  ct_session_free(s);
  ct_graph_free(g);
}

int main(int argc, char **argv) {
  ct_status status = CT_STATUS_INIT;
  if (ct_cluster_init(&argc, &argv, &status) != 0) {
    fprintf(stderr, "mpi_edges: %s\n", status.message);
    return 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_both_directions_fan_out_and_fan_in),
      cmocka_unit_test(test_control_edges),
      cmocka_unit_test(test_random_placements_match_one_process),
      cmocka_unit_test(test_a_failure_on_one_task_fails_every_task),
      cmocka_unit_test(test_devices_that_do_not_exist),
      cmocka_unit_test(test_ranks_with_different_graphs_are_named),
  };
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  ct_cluster_finalize();
  return failed != 0;
}
