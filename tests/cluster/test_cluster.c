/* cluster.h in a process started on its own (both builds): the whole job,
 * rank 0 of 1, collectives that leave the data as it is, no prefix; and
 * what the launchers' variables say (cluster/launcher.h). */
#include <stdlib.h>
#include <string.h>

#include "cluster/communication.h"
#include "cluster/launcher.h"
#include "test_support.h"

static const char *const k_launcher_vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK",
                                              "SLURM_NTASKS", "SLURM_PROCID"};

static void clear_launcher_vars(void) {
  for (size_t i = 0; i < sizeof k_launcher_vars / sizeof k_launcher_vars[0]; ++i)
    unsetenv(k_launcher_vars[i]);
}

static void test_alone(void **state) {
  (void)state;
  ct_status status = CT_STATUS_INIT;
  assert_int_equal(ct_cluster_init(NULL, NULL, &status), 0);
  assert_int_equal(ct_cluster_init(NULL, NULL, &status), 0); /* a second call does nothing */
  assert_int_equal(ct_cluster_rank(), 0);
  assert_int_equal(ct_cluster_size(), 1);
  assert_int_equal(ct_cluster_local_rank(), 0);
  assert_int_equal(ct_cluster_local_size(), 1);
  assert_string_equal(ct_cluster_log_prefix(), "");

  float f[3] = {1.5f, -2.0f, 3.25f};
  double d[2] = {0.1, 1e300};
  int64_t i[2] = {INT64_MAX, -7};
  assert_int_equal(ct_cluster_allreduce_f32(f, 3, &status), 0);
  assert_int_equal(ct_cluster_allreduce_f64(d, 2, &status), 0);
  assert_int_equal(ct_cluster_allreduce_i64(i, 2, &status), 0);
  assert_int_equal(ct_cluster_reduce_f32(f, 3, 0, &status), 0);
  assert_true(f[0] == 1.5f && f[1] == -2.0f && f[2] == 3.25f);
  assert_true(d[0] == 0.1 && d[1] == 1e300);
  assert_true(i[0] == INT64_MAX && i[1] == -7);

  char text[8] = "tower";
  assert_int_equal(ct_cluster_broadcast(text, sizeof text, 0, &status), 0);
  assert_string_equal(text, "tower");
  char all[8] = "";
  assert_int_equal(ct_cluster_allgather(text, sizeof text, all, &status), 0);
  assert_string_equal(all, "tower");
  char *gathered = NULL;
  size_t bytes = 0;
  assert_int_equal(ct_cluster_gather_to_first(text, 3, &gathered, &bytes, &status), 0);
  assert_int_equal(bytes, 3);
  assert_string_equal(gathered, "tow");
  free(gathered);
  assert_int_equal(ct_cluster_barrier(&status), 0);
  assert_status_ok(&status);

  assert_int_equal(ct_cluster_broadcast(text, sizeof text, 1, &status), 1);
  assert_int_equal(status.code, CT_INVALID_ARGUMENT);
  ct_status to_one = CT_STATUS_INIT;
  assert_int_equal(ct_cluster_reduce_f32(f, 3, 1, &to_one), 1);
  assert_int_equal(to_one.code, CT_INVALID_ARGUMENT);

  ct_cluster_progress(12, 3, "bucket 3");
  ct_status none = CT_STATUS_INIT;
  assert_int_equal(ct_cluster_start_stall_inspector(2.0, &none), 0);
  assert_status_ok(&none);
  ct_cluster_finalize();
}

static void test_launcher_variables(void **state) {
  (void)state;
  clear_launcher_vars();
  assert_int_equal(ct_cluster_launcher_ranks(), 0);
  setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
  assert_int_equal(ct_cluster_launcher_ranks(), 4);
  clear_launcher_vars();
  setenv("PMI_SIZE", "1", 1);
  assert_int_equal(ct_cluster_launcher_ranks(), 1);
  clear_launcher_vars();
  setenv("SLURM_NTASKS", "8", 1); /* a batch script's: no rank, no launcher */
  assert_int_equal(ct_cluster_launcher_ranks(), 0);
  setenv("SLURM_PROCID", "5", 1);
  assert_int_equal(ct_cluster_launcher_ranks(), 8);
  clear_launcher_vars();
  setenv("PMIX_RANK", "2", 1); /* PMIx gives the rank only: at least 3 */
  assert_int_equal(ct_cluster_launcher_ranks(), 3);
  clear_launcher_vars();
  setenv("OMPI_COMM_WORLD_SIZE", "two", 1);
  assert_int_equal(ct_cluster_launcher_ranks(), 0);
  clear_launcher_vars();
}

/* A process on its own under a cluster spec: one worker task and no ps,
 * or an error naming what does not fit; no other rank to send to. */
static void test_spec_alone(void **state) {
  (void)state;
  ct_status status = CT_STATUS_INIT;
  assert_int_equal(ct_cluster_set_spec(0, 1, &status), 0);
  assert_string_equal(ct_cluster_job(), "worker");
  assert_int_equal(ct_cluster_task(), 0);
  assert_int_equal(ct_cluster_is_ps(), 0);
  assert_int_equal(ct_cluster_rank_of("worker", 0), 0);
  assert_int_equal(ct_cluster_rank_of("ps", 0), -1);
  assert_string_equal(ct_cluster_log_prefix(), "");
  assert_int_equal(ct_cluster_set_spec(1, 1, &status), 1);
  assert_int_equal(status.code, CT_INVALID_ARGUMENT);
  assert_non_null(strstr(status.message, "names 2 tasks but the job has 1 rank"));
  status = (ct_status)CT_STATUS_INIT;
  assert_int_equal(ct_cluster_set_spec(2, 0, &status), 1);
  assert_non_null(strstr(status.message, "has no worker task"));
  status = (ct_status)CT_STATUS_INIT;
  assert_int_equal(ct_cluster_set_spec(0, 0, &status), 0);
  assert_int_equal(ct_cluster_ps_tasks(), 0);

  float data[2] = {1, 2};
  ct_cluster_request request = {&status};
  assert_int_equal(ct_cluster_isend(data, sizeof data, 1, 7, &request, &status), 1);
  assert_int_equal(status.code, CT_UNAVAILABLE);
  assert_non_null(strstr(status.message, "no other rank"));
  assert_null(request.impl);
  status = (ct_status)CT_STATUS_INIT;
  assert_int_equal(ct_cluster_irecv(data, sizeof data, CT_CLUSTER_ANY_SOURCE, 7, &request, &status),
                   1);
  assert_int_equal(status.code, CT_UNAVAILABLE);
  status = (ct_status)CT_STATUS_INIT;
  assert_int_equal(ct_cluster_wait(&request, NULL, &status), 0); /* nothing pending */
  assert_status_ok(&status);
}

#ifndef CTOWER_HAVE_MPI
/* Without MPI, one of several ranks cannot join its job: it says how to
 * get MPI. (With MPI it would start MPI: that runs under mpirun, in
 * mpi_cluster.c.) */
static void test_several_ranks_without_mpi(void **state) {
  (void)state;
  setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
  ct_status status = CT_STATUS_INIT;
  assert_int_equal(ct_cluster_init(NULL, NULL, &status), 1);
  clear_launcher_vars();
  assert_int_equal(status.code, CT_UNAVAILABLE);
  assert_non_null(strstr(status.message, "CTOWER_MPI=on"));
  assert_non_null(strstr(status.message, "2 ranks"));
}
#endif

int main(void) {
  clear_launcher_vars();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_alone),
      cmocka_unit_test(test_launcher_variables),
      cmocka_unit_test(test_spec_alone),
#ifndef CTOWER_HAVE_MPI
      cmocka_unit_test(test_several_ranks_without_mpi),
#endif
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
