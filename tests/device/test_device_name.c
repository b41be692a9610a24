/* Device specifications: TF 1.x parsing, printing and matching. */
#include <string.h>

#include "test_support.h"

#define ANY CT_DEVICE_KIND_ANY
#define CPU CT_DEVICE_KIND_CPU
#define GPU CT_DEVICE_KIND_GPU

typedef struct valid_case {
  const char *text;
  int has_job;
  const char *job;
  int has_replica, replica;
  int has_task, task;
  ct_device_kind kind;
  int has_id, id;
  const char *short_form; /* ct_device_spec_string */
  const char *canonical;  /* the one device it names, or NULL when partial */
} valid_case;

static const valid_case valid_cases[] = {
    {"", 0, "", 0, 0, 0, 0, ANY, 0, 0, "", NULL},
    {"/", 0, "", 0, 0, 0, 0, ANY, 0, 0, "", NULL},
    {"/cpu:0", 0, "", 0, 0, 0, 0, CPU, 1, 0, "/device:CPU:0",
     "/job:localhost/replica:0/task:0/device:CPU:0"},
    {"/gpu:1", 0, "", 0, 0, 0, 0, GPU, 1, 1, "/device:GPU:1",
     "/job:localhost/replica:0/task:0/device:GPU:1"},
    {"/GPU:1", 0, "", 0, 0, 0, 0, GPU, 1, 1, "/device:GPU:1",
     "/job:localhost/replica:0/task:0/device:GPU:1"},
    {"/CPU:3", 0, "", 0, 0, 0, 0, CPU, 1, 3, "/device:CPU:3",
     "/job:localhost/replica:0/task:0/device:CPU:3"},
    {"/device:GPU:1", 0, "", 0, 0, 0, 0, GPU, 1, 1, "/device:GPU:1",
     "/job:localhost/replica:0/task:0/device:GPU:1"},
    {"/device:gpu:1", 0, "", 0, 0, 0, 0, GPU, 1, 1, "/device:GPU:1",
     "/job:localhost/replica:0/task:0/device:GPU:1"},
    {"/device:Cpu:0", 0, "", 0, 0, 0, 0, CPU, 1, 0, "/device:CPU:0",
     "/job:localhost/replica:0/task:0/device:CPU:0"},
    {"/device:GPU", 0, "", 0, 0, 0, 0, GPU, 0, 0, "/device:GPU:*", NULL},
    {"/device:GPU:*", 0, "", 0, 0, 0, 0, GPU, 0, 0, "/device:GPU:*", NULL},
    {"/gpu:*", 0, "", 0, 0, 0, 0, GPU, 0, 0, "/device:GPU:*", NULL},
    {"/device:*", 0, "", 0, 0, 0, 0, ANY, 0, 0, "", NULL},
    {"/device:*:2", 0, "", 0, 0, 0, 0, ANY, 1, 2, "/device:*:2", NULL},
    {"/gpu:12", 0, "", 0, 0, 0, 0, GPU, 1, 12, "/device:GPU:12",
     "/job:localhost/replica:0/task:0/device:GPU:12"},
    {"/job:localhost/replica:0/task:0/device:GPU:1", 1, "localhost", 1, 0, 1, 0, GPU, 1, 1,
     "/job:localhost/replica:0/task:0/device:GPU:1",
     "/job:localhost/replica:0/task:0/device:GPU:1"},
    {"/job:localhost/replica:0/task:0/cpu:0", 1, "localhost", 1, 0, 1, 0, CPU, 1, 0,
     "/job:localhost/replica:0/task:0/device:CPU:0",
     "/job:localhost/replica:0/task:0/device:CPU:0"},
    {"/job:localhost/device:CPU:0", 1, "localhost", 0, 0, 0, 0, CPU, 1, 0,
     "/job:localhost/device:CPU:0", "/job:localhost/replica:0/task:0/device:CPU:0"},
    {"/replica:0/cpu:0", 0, "", 1, 0, 0, 0, CPU, 1, 0, "/replica:0/device:CPU:0",
     "/job:localhost/replica:0/task:0/device:CPU:0"},
    {"/job:worker/task:3", 1, "worker", 0, 0, 1, 3, ANY, 0, 0, "/job:worker/task:3", NULL},
    {"/job:ps_2/replica:1", 1, "ps_2", 1, 1, 0, 0, ANY, 0, 0, "/job:ps_2/replica:1", NULL},
    {"/job:*/replica:*/task:*/device:*:*", 0, "", 0, 0, 0, 0, ANY, 0, 0, "", NULL},
    {"/task:0", 0, "", 0, 0, 1, 0, ANY, 0, 0, "/task:0", NULL},
    {"/gpu:2147483647", 0, "", 0, 0, 0, 0, GPU, 1, 2147483647, "/device:GPU:2147483647",
     "/job:localhost/replica:0/task:0/device:GPU:2147483647"},
};

static void check_fields(const valid_case *c, const ct_device_spec *s) {
  assert_int_equal(s->has_job, c->has_job);
  assert_string_equal(s->job, c->job);
  assert_int_equal(s->has_replica, c->has_replica);
  assert_int_equal(s->replica, c->replica);
  assert_int_equal(s->has_task, c->has_task);
  assert_int_equal(s->task, c->task);
  assert_int_equal(s->kind, c->kind);
  assert_int_equal(s->has_id, c->has_id);
  assert_int_equal(s->id, c->id);
}

static void test_valid_specs(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof valid_cases / sizeof valid_cases[0]; i++) {
    const valid_case *c = &valid_cases[i];
    print_message("spec '%s'\n", c->text);
    ct_status st = CT_STATUS_INIT;
    ct_device_spec s;
    memset(&s, 0x5a, sizeof s);
    assert_int_equal(ct_device_spec_parse(c->text, &s, &st), 0);
    assert_status_ok(&st);
    assert_string_equal(st.message, "");
    check_fields(c, &s);

    char buf[256];
    ct_device_spec_string(&s, buf, sizeof buf);
    assert_string_equal(buf, c->short_form);

    /* The short form parses back to the same spec. */
    ct_device_spec again;
    assert_int_equal(ct_device_spec_parse(buf, &again, &st), 0);
    assert_status_ok(&st);
    check_fields(c, &again);

    /* Validation only. */
    assert_int_equal(ct_device_spec_parse(c->text, NULL, &st), 0);
    assert_status_ok(&st);

    if (c->canonical != NULL) {
      ct_device_canonical_name("", 0, s.kind, s.id, buf, sizeof buf);
      assert_string_equal(buf, c->canonical);
      assert_true(ct_device_spec_matches(&s, "", 0, s.kind, s.id));
      ct_device_spec full;
      assert_int_equal(ct_device_spec_parse(buf, &full, &st), 0);
      assert_status_ok(&st);
      assert_int_equal(full.kind, s.kind);
      assert_int_equal(full.id, s.id);
      assert_string_equal(full.job, "localhost");
    }
  }
}

typedef struct invalid_case {
  const char *text;
  const char *says; /* a fragment of the explanation */
} invalid_case;

static const invalid_case invalid_cases[] = {
    {"/gpu:x", "'x'"},
    {"/gpu:-1", "non-negative"},
    {"/gpu:", "no device id"},
    {"/gpu", "needs an id"},
    {"/gpu:1.5", "non-negative"},
    {"/gpu:99999999999", "non-negative"},
    {"/gpu:1:2", "too many"},
    {"gpu:0", "must start with '/'"},
    {"cpu", "must start with '/'"},
    {" /cpu:0", "must start with '/'"},
    {"/cpu:0 ", "non-negative"},
    {"/cpu:0/extra", "unknown component '/extra'"},
    {"/job:", "no job name"},
    {"/job", "needs a value"},
    {"/job:1abc", "job name '1abc'"},
    {"/job:local-host", "job name"},
    {"/job:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "longer than 63"},
    {"/device:GPU:1:2", "too many"},
    {"/device:TPU:0", "unknown device type 'TPU'"},
    {"/device:XLA_GPU:0", "CPU and GPU"},
    {"/device:", "no device type"},
    {"/device::0", "no device type"},
    {"/device:GPU:", "no device id"},
    {"/tpu:0", "unknown component '/tpu:0'"},
    {"/Device:GPU:0", "unknown component"},
    {"/cpu:0/gpu:1", "/device more than once"},
    {"/job:a/job:b", "/job more than once"},
    {"/replica:0/replica:0", "/replica more than once"},
    {"/gpu:0/job:localhost", "the order is /job/replica/task/device"},
    {"/task:0/replica:0", "comes after /task"},
    {"/replica:x", "replica 'x'"},
    {"/task:-2", "task '-2'"},
    {"//cpu:0", "empty component"},
    {"/cpu:0/", "ends with '/'"},
    {"/cpu:0//", "empty component"},
};

static void test_invalid_specs(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof invalid_cases / sizeof invalid_cases[0]; i++) {
    const invalid_case *c = &invalid_cases[i];
    print_message("spec '%s'\n", c->text);
    ct_status st = CT_STATUS_INIT;
    ct_device_spec s;
    memset(&s, 0x5a, sizeof s);
    ct_device_spec before = s;
    assert_int_equal(ct_device_spec_parse(c->text, &s, &st), 1);
    assert_int_equal(st.code, CT_INVALID_ARGUMENT);
    assert_memory_equal(&s, &before, sizeof s); /* unchanged on failure */

    char quoted[300];
    snprintf(quoted, sizeof quoted, "invalid device specification '%s': ", c->text);
    if (strncmp(st.message, quoted, strlen(quoted)) != 0 || strstr(st.message, c->says) == NULL) {
      print_error("message for '%s' lacks \"%s\": %s\n", c->text, c->says, st.message);
      fail();
    }
    assert_non_null(strstr(st.message, "; use a name like /cpu:0, /gpu:1 or "
                                       "/job:localhost/replica:0/task:0/device:GPU:1"));

    /* NULL spec: same verdict. */
    ct_status st2 = CT_STATUS_INIT;
    assert_int_equal(ct_device_spec_parse(c->text, NULL, &st2), 1);
    assert_string_equal(st2.message, st.message);
  }
}

static void test_errors_keep_first_status_and_null_inputs(void **state) {
  (void)state;
  ct_status st = CT_STATUS_INIT;
  ct_status_set(&st, CT_NOT_FOUND, "earlier failure");
  ct_device_spec s;
  assert_int_equal(ct_device_spec_parse("/gpu:x", &s, &st), 1);
  assert_int_equal(st.code, CT_NOT_FOUND);
  assert_string_equal(st.message, "earlier failure");

  ct_status_clear(&st);
  assert_int_equal(ct_device_spec_parse(NULL, &s, &st), 1);
  assert_int_equal(st.code, CT_INVALID_ARGUMENT);
  assert_int_equal(ct_device_spec_parse("/gpu:x", &s, NULL), 1); /* NULL status is fine */
  assert_int_equal(ct_device_spec_parse("/gpu:0", &s, NULL), 0);
  assert_int_equal(s.id, 0);
}

static void test_matches(void **state) {
  (void)state;
  ct_status st = CT_STATUS_INIT;
  ct_device_spec s;

  assert_int_equal(ct_device_spec_parse("/device:GPU", &s, &st), 0);
  assert_true(ct_device_spec_matches(&s, "", 0, GPU, 0));
  assert_true(ct_device_spec_matches(&s, "", 0, GPU, 3));
  assert_false(ct_device_spec_matches(&s, "", 0, CPU, 0));

  assert_int_equal(ct_device_spec_parse("/job:worker/cpu:0", &s, &st), 0);
  assert_false(ct_device_spec_matches(&s, "", 0, CPU, 0));
  assert_false(ct_device_spec_matches(&s, "", 0, CPU, 1));
  assert_false(ct_device_spec_matches(&s, "", 0, GPU, 0));

  assert_int_equal(ct_device_spec_parse("", &s, &st), 0);
  for (int id = 0; id < 4; id++) {
    assert_true(ct_device_spec_matches(&s, "", 0, CPU, id));
    assert_true(ct_device_spec_matches(&s, "", 0, GPU, id));
  }
  assert_true(ct_device_spec_matches(NULL, "", 0, GPU, 7));

  assert_int_equal(ct_device_spec_parse("/gpu:1", &s, &st), 0);
  assert_true(ct_device_spec_matches(&s, "", 0, GPU, 1));
  assert_false(ct_device_spec_matches(&s, "", 0, GPU, 0));
  assert_false(ct_device_spec_matches(&s, "", 0, CPU, 1));

  assert_int_equal(ct_device_spec_parse("/job:localhost/replica:0/task:0", &s, &st), 0);
  assert_true(ct_device_spec_matches(&s, "", 0, CPU, 0));
  assert_true(ct_device_spec_matches(&s, "", 0, GPU, 5));

  assert_int_equal(ct_device_spec_parse("/replica:1/cpu:0", &s, &st), 0);
  assert_false(ct_device_spec_matches(&s, "", 0, CPU, 0));
  assert_int_equal(ct_device_spec_parse("/task:2", &s, &st), 0);
  assert_false(ct_device_spec_matches(&s, "", 0, CPU, 0));

  assert_int_equal(ct_device_spec_parse("/device:*:2", &s, &st), 0);
  assert_true(ct_device_spec_matches(&s, "", 0, CPU, 2));
  assert_true(ct_device_spec_matches(&s, "", 0, GPU, 2));
  assert_false(ct_device_spec_matches(&s, "", 0, GPU, 1));
  assert_status_ok(&st);
}

/* Rank 1 of an MPI job is /job:worker/replica:0/task:1: specs that name
 * another job or task name another process's devices; those without job
 * and task name this process's. */
static void test_task_of_a_job(void **state) {
  (void)state;
  char buf[128];
  ct_device_canonical_name("worker", 1, CPU, 0, buf, sizeof buf);
  assert_string_equal(buf, "/job:worker/replica:0/task:1/device:CPU:0");
  ct_device_canonical_name(NULL, 0, GPU, 2, buf, sizeof buf);
  assert_string_equal(buf, "/job:localhost/replica:0/task:0/device:GPU:2");

  ct_status st = CT_STATUS_INIT;
  ct_device_spec s;
  assert_int_equal(ct_device_spec_parse(buf, &s, &st), 0);
  assert_true(ct_device_spec_matches(&s, NULL, 0, GPU, 2));
  assert_false(ct_device_spec_matches(&s, "worker", 0, GPU, 2));

  assert_int_equal(ct_device_spec_parse("/job:worker/replica:0/task:1/device:CPU:0", &s, &st), 0);
  assert_true(ct_device_spec_matches(&s, "worker", 1, CPU, 0));
  assert_false(ct_device_spec_matches(&s, "worker", 0, CPU, 0)); /* another task */
  assert_false(ct_device_spec_matches(&s, "ps", 1, CPU, 0));     /* another job */
  assert_false(ct_device_spec_matches(&s, "", 1, CPU, 0));       /* localhost */

  assert_int_equal(ct_device_spec_parse("/task:1", &s, &st), 0);
  assert_true(ct_device_spec_matches(&s, "worker", 1, GPU, 3));
  assert_false(ct_device_spec_matches(&s, "worker", 2, GPU, 3));

  assert_int_equal(ct_device_spec_parse("/cpu:0", &s, &st), 0); /* no job, no task: any task */
  assert_true(ct_device_spec_matches(&s, "worker", 2, CPU, 0));
  assert_true(ct_device_spec_matches(&s, "", 0, CPU, 0));
  assert_status_ok(&st);
}

static void test_names_and_truncation(void **state) {
  (void)state;
  assert_string_equal(ct_device_kind_name(CPU), "CPU");
  assert_string_equal(ct_device_kind_name(GPU), "GPU");
  assert_string_equal(ct_device_kind_name(ANY), "*");

  char buf[16];
  memset(buf, 'x', sizeof buf);
  ct_device_canonical_name("", 0, GPU, 1, buf, sizeof buf);
  assert_int_equal(strlen(buf), sizeof buf - 1);
  assert_memory_equal(buf, "/job:localhost/", sizeof buf - 1);

  ct_device_spec s;
  ct_status st = CT_STATUS_INIT;
  assert_int_equal(ct_device_spec_parse("/job:localhost/device:GPU:1", &s, &st), 0);
  memset(buf, 'x', sizeof buf);
  ct_device_spec_string(&s, buf, 8);
  assert_string_equal(buf, "/job:lo");
  ct_device_spec_string(&s, buf, 0); /* writes nothing */
  assert_string_equal(buf, "/job:lo");
  ct_device_canonical_name("", 0, CPU, 0, buf, 0);
  assert_string_equal(buf, "/job:lo");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_valid_specs),
      cmocka_unit_test(test_invalid_specs),
      cmocka_unit_test(test_errors_keep_first_status_and_null_inputs),
      cmocka_unit_test(test_matches),
      cmocka_unit_test(test_task_of_a_job),
      cmocka_unit_test(test_names_and_truncation),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
