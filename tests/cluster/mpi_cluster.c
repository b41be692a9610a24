/* cluster.h under mpirun (-np 2 and -np 3): every rank runs these tests
 * in the same order, so that their collectives meet. The sums are of
 * small integers and exact fractions: every rank gets exactly the same,
 * exact result. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/communication.h"
#include "test_support.h"

enum { N = 1000 };

/* Fails unless status holds `code` and its message says `text`. */
static void expect_error(const ct_status *status, ct_code code, const char *text) {
  assert_int_equal(status->code, code);
  if (strstr(status->message, text) == NULL) {
    print_error("'%s' does not say '%s'\n", status->message, text);
    fail();
  }
}

static void test_ranks(void **state) {
  (void)state;
  const char *launched = getenv("OMPI_COMM_WORLD_SIZE");
  assert_non_null(launched);
  const int size = ct_cluster_size(), rank = ct_cluster_rank();
  assert_int_equal(size, atoi(launched));
  assert_true(size >= 2);
  assert_in_range(rank, 0, size - 1);
  /* one machine: every rank is local */
  assert_int_equal(ct_cluster_local_size(), size);
  assert_int_equal(ct_cluster_local_rank(), rank);
  char prefix[32];
  snprintf(prefix, sizeof prefix, "[worker %d] ", rank);
  assert_string_equal(ct_cluster_log_prefix(), prefix);
}

static void test_allreduce(void **state) {
  (void)state;
  const int size = ct_cluster_size(), rank = ct_cluster_rank();
  const int64_t ranks_sum = (int64_t)size * (size + 1) / 2; /* 1 + 2 + .. + size */
  static float f[N];
  static double d[N];
  static int64_t i64[N];
  for (int i = 0; i < N; ++i) {
    f[i] = (float)((rank + 1) * (i + 1)) * 0.5f;
    d[i] = (double)(rank + 1) * 0.25 + (double)i;
    i64[i] = ((int64_t)(rank + 1) << 40) - i;
  }
  ct_status status = CT_STATUS_INIT;
  assert_int_equal(ct_cluster_allreduce_f32(f, N, &status), 0);
  assert_int_equal(ct_cluster_allreduce_f64(d, N, &status), 0);
  assert_int_equal(ct_cluster_allreduce_i64(i64, N, &status), 0);
  assert_status_ok(&status);
  for (int i = 0; i < N; ++i) {
    assert_true(f[i] == (float)(ranks_sum * (i + 1)) * 0.5f);
    assert_true(d[i] == (double)ranks_sum * 0.25 + (double)size * i);
    assert_true(i64[i] == (ranks_sum << 40) - (int64_t)size * i);
  }
  assert_int_equal(ct_cluster_allreduce_f32(f, 0, &status), 0); /* nothing to sum */
}

/* The sum to one root (the last rank), which alone gets it; the others'
 * data stay theirs. */
static void test_reduce(void **state) {
  (void)state;
  const int size = ct_cluster_size(), rank = ct_cluster_rank();
  const int64_t ranks_sum = (int64_t)size * (size + 1) / 2;
  static float f[N];
  for (int i = 0; i < N; ++i) f[i] = (float)((rank + 1) * (i + 1)) * 0.5f;
  ct_status status = CT_STATUS_INIT;
  assert_int_equal(ct_cluster_reduce_f32(f, N, size - 1, &status), 0);
  assert_status_ok(&status);
  const int64_t times = rank == size - 1 ? ranks_sum : rank + 1;
  for (int i = 0; i < N; ++i) assert_true(f[i] == (float)(times * (i + 1)) * 0.5f);
  assert_int_equal(ct_cluster_reduce_f32(f, N, -1, &status), 1);
  assert_int_equal(status.code, CT_INVALID_ARGUMENT);
}

static void test_broadcast(void **state) {
  (void)state;
  const int size = ct_cluster_size(), rank = ct_cluster_rank();
  char text[64];
  snprintf(text, sizeof text, "from rank %d", rank);
  ct_status status = CT_STATUS_INIT;
  assert_int_equal(ct_cluster_broadcast(text, sizeof text, size - 1, &status), 0);
  assert_status_ok(&status);
  char expected[64];
  snprintf(expected, sizeof expected, "from rank %d", size - 1);
  assert_string_equal(text, expected);
  assert_int_equal(ct_cluster_broadcast(text, sizeof text, size, &status), 1);
  assert_int_equal(status.code, CT_INVALID_ARGUMENT);
}

static void test_allgather(void **state) {
  (void)state;
  const int size = ct_cluster_size(), rank = ct_cluster_rank();
  char mine[16];
  snprintf(mine, sizeof mine, "rank %d", rank);
  char *all = calloc((size_t)size, sizeof mine);
  assert_non_null(all);
  ct_status status = CT_STATUS_INIT;
  assert_int_equal(ct_cluster_allgather(mine, sizeof mine, all, &status), 0);
  assert_status_ok(&status);
  for (int r = 0; r < size; ++r) {
    char expected[16];
    snprintf(expected, sizeof expected, "rank %d", r);
    assert_string_equal(all + (size_t)r * sizeof mine, expected);
  }
  free(all);
  assert_int_equal(ct_cluster_barrier(&status), 0);
}

/* Rank r sends r + 1 copies of its letter; rank 0 gets them all in rank
 * order ("abbccc" on 3 ranks), the others nothing. */
static void test_gather_to_first(void **state) {
  (void)state;
  const int size = ct_cluster_size(), rank = ct_cluster_rank();
  char mine[64];
  memset(mine, 'a' + rank % 26, sizeof mine);
  char *all = NULL;
  size_t bytes = 99;
  ct_status status = CT_STATUS_INIT;
  assert_int_equal(ct_cluster_gather_to_first(mine, (size_t)rank + 1, &all, &bytes, &status), 0);
  assert_status_ok(&status);
  if (rank != 0) {
    assert_null(all);
    return;
  }
  char expected[4096] = "";
  size_t used = 0;
  for (int r = 0; r < size && used + (size_t)r + 1 < sizeof expected; ++r)
    for (int k = 0; k <= r; ++k) expected[used++] = (char)('a' + r % 26);
  expected[used] = '\0';
  assert_int_equal(bytes, used);
  assert_string_equal(all, expected);
  free(all);
}

/* cluster: {ps: 1, worker: size - 1}: rank 0 is /job:ps/task:0, rank r
 * /job:worker/task:r-1; a spec without workers or of another size is
 * refused and leaves the last one; {0, 0} goes back to every rank a worker. */
static void test_spec(void **state) {
  (void)state;
  const int size = ct_cluster_size(), rank = ct_cluster_rank();
  ct_status status = CT_STATUS_INIT;
  assert_int_equal(ct_cluster_set_spec(1, size - 1, &status), 0);
  assert_int_equal(ct_cluster_ps_tasks(), 1);
  assert_int_equal(ct_cluster_is_ps(), rank == 0);
  assert_string_equal(ct_cluster_job(), rank == 0 ? "ps" : "worker");
  assert_int_equal(ct_cluster_task(), rank == 0 ? 0 : rank - 1);
  assert_int_equal(ct_cluster_job_tasks("worker"), size - 1);
  assert_int_equal(ct_cluster_rank_of("worker", size - 2), size - 1);
  assert_int_equal(ct_cluster_rank_of("worker", size - 1), -1);
  assert_int_equal(ct_cluster_rank_of("ps", 0), 0);
  assert_int_equal(ct_cluster_rank_of("ps", 1), -1);
  assert_int_equal(ct_cluster_rank_of("chief", 0), -1);
  char prefix[32];
  snprintf(prefix, sizeof prefix, rank == 0 ? "[ps 0] " : "[worker %d] ", rank - 1);
  assert_string_equal(ct_cluster_log_prefix(), prefix);
  assert_int_equal(ct_cluster_set_spec(1, 0, &status), 1);
  expect_error(&status, CT_INVALID_ARGUMENT, "has no worker task");
  status = (ct_status)CT_STATUS_INIT;
  assert_int_equal(ct_cluster_set_spec(1, size, &status), 1);
  expect_error(&status, CT_INVALID_ARGUMENT, "but the job has");
  assert_int_equal(ct_cluster_ps_tasks(), 1); /* the last good spec stays */
  status = (ct_status)CT_STATUS_INIT;
  assert_int_equal(ct_cluster_set_spec(0, 0, &status), 0);
  assert_int_equal(ct_cluster_ps_tasks(), 0);
  assert_int_equal(ct_cluster_task(), rank);
  snprintf(prefix, sizeof prefix, "[worker %d] ", rank);
  assert_string_equal(ct_cluster_log_prefix(), prefix);
}

/* Every other rank sends N floats to rank 0, which takes them from any
 * source in the order they come (naming each one's sender) and answers
 * each; a rank cannot send to itself or to no rank. */
static void test_messages(void **state) {
  (void)state;
  const int size = ct_cluster_size(), rank = ct_cluster_rank();
  static float data[N], answer[N];
  ct_status status = CT_STATUS_INIT;
  ct_cluster_request send, recv;
  if (rank == 0) {
    int seen = 0;
    for (int k = 1; k < size; ++k) {
      int from = -1;
      assert_int_equal(ct_cluster_irecv(data, sizeof data, CT_CLUSTER_ANY_SOURCE, 5, &recv,
                                        &status), 0);
      assert_int_equal(ct_cluster_wait(&recv, &from, &status), 0);
      assert_in_range(from, 1, size - 1);
      assert_false(seen & (1 << from));
      seen |= 1 << from;
      for (int i = 0; i < N; ++i) assert_true(data[i] == (float)(from * N + i));
      for (int i = 0; i < N; ++i) answer[i] = -data[i];
      assert_int_equal(ct_cluster_isend(answer, sizeof answer, from, 6, &send, &status), 0);
      assert_int_equal(ct_cluster_wait(&send, NULL, &status), 0);
    }
  } else {
    for (int i = 0; i < N; ++i) data[i] = (float)(rank * N + i);
    assert_int_equal(ct_cluster_irecv(answer, sizeof answer, 0, 6, &recv, &status), 0);
    assert_int_equal(ct_cluster_isend(data, sizeof data, 0, 5, &send, &status), 0);
    assert_int_equal(ct_cluster_wait(&send, NULL, &status), 0);
    int from = -1;
    assert_int_equal(ct_cluster_wait(&recv, &from, &status), 0);
    assert_int_equal(from, 0);
    for (int i = 0; i < N; ++i) assert_true(answer[i] == -(float)(rank * N + i));
  }
  assert_status_ok(&status);
  assert_int_equal(ct_cluster_wait(&send, NULL, &status), 0); /* nothing pending: nothing */
  assert_int_equal(ct_cluster_isend(data, 4, rank, 5, &send, &status), 1);
  expect_error(&status, CT_INVALID_ARGUMENT, "another rank");
  status = (ct_status)CT_STATUS_INIT;
  assert_int_equal(ct_cluster_irecv(data, 4, size, 5, &recv, &status), 1);
  expect_error(&status, CT_INVALID_ARGUMENT, "another rank");
  assert_null(recv.impl);
}

int main(int argc, char **argv) {
  ct_status status = CT_STATUS_INIT;
  if (ct_cluster_init(&argc, &argv, &status) != 0) {
    fprintf(stderr, "mpi_cluster: %s\n", status.message);
    return 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ranks),
      cmocka_unit_test(test_allreduce),
      cmocka_unit_test(test_reduce),
      cmocka_unit_test(test_broadcast),
      cmocka_unit_test(test_allgather),
      cmocka_unit_test(test_gather_to_first),
      cmocka_unit_test(test_spec),
      cmocka_unit_test(test_messages),
  };
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  ct_cluster_finalize();
  return failed != 0;
}
