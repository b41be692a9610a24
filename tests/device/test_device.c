/* Devices behind their table: every device kind has its type in the
 * table (GPU in a CUDA build), with what the registry calls and its
 * kernels; the registry creates the CPU devices the options ask for, each dispatching through its type's ct_device_ops; a
 * worker's queue takes only what was reserved (a submit beyond it fails
 * with a status rather than growing on the hot path); copies between
 * host-addressable devices are plain copies and marks are NULL there; the
 * processes of a job split the cores. */
#include <dirent.h>
#include <omp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "device/device.h"
#include "kernels/kernel.h"
#include "test_support.h"

static ct_device **make_cpus(int n, int *n_devices) {
  ct_session_options o;
  ct_session_options_defaults(&o);
  o.device_count_cpu = n;
  o.device_count_gpu = 0;
  ct_device **devices = NULL;
  ct_status st = CT_STATUS_INIT;
  assert_int_equal(ct_devices_create(&o, &devices, n_devices, &st), 0);
  assert_status_ok(&st);
  return devices;
}

/* Threads are bounded by the cores: 4 per core starts, one more is an error
 * that says the bound, before any thread is started. */
static void test_threads_are_bounded_by_the_cores(void **state) {
  (void)state;
  ct_session_options o;
  ct_session_options_defaults(&o);
  o.device_count_cpu = 2;
  o.device_count_gpu = 0;
  o.intra_op_parallelism_threads = 4 * ct_available_cores();
  ct_device **devices = NULL;
  int n = 0;
  ct_status st = CT_STATUS_INIT;
  assert_int_equal(ct_devices_create(&o, &devices, &n, &st), 0);
  ct_devices_free(devices, n);
  o.intra_op_parallelism_threads += 1;
  assert_int_equal(ct_devices_create(&o, &devices, &n, &st), 1);
  assert_int_equal(st.code, CT_INVALID_ARGUMENT);
  char bound[32];
  snprintf(bound, sizeof bound, "at most %d", 4 * ct_available_cores());
  assert_non_null(strstr(st.message, bound));
}

/* The threads of this process (its entries in /proc/self/task). */
static int process_threads(void) {
  DIR *dir = opendir("/proc/self/task");
  assert_non_null(dir);
  int n = 0;
  for (struct dirent *e; (e = readdir(dir)) != NULL;)
    if (e->d_name[0] != '.') ++n;
  closedir(dir);
  return n;
}

static void *no_work(void *arg) { return arg; }

/* The first devices of a process prepare oneDNN's matrix-multiply code on
 * the creating thread without starting an OpenMP team there: such a team
 * outlives the devices, and libgomp, then counting more threads than
 * cores, makes every device's team sleep between kernels instead of
 * spinning (mlp at 2 threads ran 1.6 times slower). Every thread the
 * devices start ends with them; the caller's thread count is as it was.
 * Runs first: the preparation happens once per process. */
static void test_devices_leave_no_team_on_the_creating_thread(void **state) {
  (void)state;
  /* a sanitizer's runtime starts a thread of its own with the first one */
  pthread_t first;
  assert_int_equal(pthread_create(&first, NULL, no_work, NULL), 0);
  pthread_join(first, NULL);
  const int threads_before = process_threads(), max_threads = omp_get_max_threads();
  int n = 0;
  ct_device **devices = make_cpus(1, &n);
  ct_devices_free(devices, n);
  /* a team's threads end shortly after their thread does */
  for (int waits = 0; process_threads() != threads_before && waits < 2000; ++waits) usleep(1000);
  assert_int_equal(process_threads(), threads_before);
  assert_int_equal(omp_get_max_threads(), max_threads);
}

/* The types of `kind` in ct_device_types (device_types.c); checks that each
 * has what device.c calls and kernels registered under its kind. */
static int types_of_kind(ct_device_kind kind) {
  int n = 0;
  for (int t = 0; t < ct_device_type_count; ++t) {
    const ct_device_ops *type = ct_device_types[t];
    if (type->kind != kind) continue;
    ++n;
    assert_non_null(type->create_devices);
    assert_non_null(type->count_devices);
    if (!type->host_addressable) assert_non_null(type->copy);
    assert_int_equal(type->region_alloc != NULL, type->region_free != NULL);
    assert_int_equal(type->host_alloc != NULL, type->host_free != NULL);
    if (type->mark_new) {
      assert_non_null(type->mark_record);
      assert_non_null(type->mark_wait);
      assert_non_null(type->mark_free);
    }
    if (ct_kernel_find("Identity", kind) == NULL)
      fail_msg("device type %s has no kernels registered (src/kernels/registry.c)",
               ct_device_kind_name(kind));
  }
  return n;
}

static void test_every_device_kind_has_its_type(void **state) {
  (void)state;
  /* every kind that device names can say (ct_device_kind_name: "*" past the last) */
  for (int k = CT_DEVICE_KIND_ANY + 1; strcmp(ct_device_kind_name((ct_device_kind)k), "*") != 0;
       ++k) {
    const ct_device_kind kind = (ct_device_kind)k;
    int expected = 1;
#ifndef CTOWER_HAVE_CUDA
    if (kind == CT_DEVICE_KIND_GPU) expected = 0; /* no GPU type without CUDA */
#endif
    if (types_of_kind(kind) != expected)
      fail_msg("device kind %s has %d types in ct_device_types (src/device/device_types.c), "
               "expected %d",
               ct_device_kind_name(kind), types_of_kind(kind), expected);
  }
  for (int t = 0; t < ct_device_type_count; ++t) /* and no type of a kind names cannot say */
    assert_string_not_equal(ct_device_kind_name(ct_device_types[t]->kind), "*");
}

static void test_registry_makes_cpu_devices_of_the_cpu_type(void **state) {
  (void)state;
  int n = 0;
  ct_device **devices = make_cpus(2, &n);
  assert_int_equal(n, 2);
  for (int i = 0; i < n; ++i) {
    assert_int_equal(devices[i]->ops->kind, CT_DEVICE_KIND_CPU);
    assert_true(devices[i]->ops->host_addressable);
    assert_int_equal(devices[i]->index, i);
    assert_null(ct_device_mark_new(devices[i])); /* nothing queued: no marks */
  }
  assert_string_equal(devices[1]->name, "/job:localhost/replica:0/task:0/device:CPU:1");
  assert_non_null(strstr(devices[0]->mapping, "name: cpu, cores: "));
  ct_session_options o;
  ct_session_options_defaults(&o);
  o.device_count_cpu = 3;
  o.device_count_gpu = 0;
  assert_int_equal(ct_device_count(&o, CT_DEVICE_KIND_CPU), 3);
  assert_int_equal(ct_device_count(&o, CT_DEVICE_KIND_GPU), 0);

  float src[4] = {1, 2, 3, 4}, dst[4] = {0};
  ct_status st = CT_STATUS_INIT;
  assert_int_equal(ct_device_copy(devices[1], dst, devices[0], src, sizeof src, NULL, &st), 0);
  assert_memory_equal(dst, src, sizeof src);
  assert_int_equal(ct_device_synchronize(devices[0], &st), 0);
  ct_devices_free(devices, n);
}

/* Two processes on this machine (ranks of one job): each takes its half of
 * the cores (the first process the extra one), pinned there, and names its
 * devices with its task. */
static void test_processes_split_the_cores(void **state) {
  (void)state;
  const int cores = ct_available_cores();
  if (cores < 2 || cores < sysconf(_SC_NPROCESSORS_ONLN)) skip(); /* bound to fewer cores */
  int next = 0;
  for (int k = 0; k < 2; ++k) {
    ct_session_options o;
    ct_session_options_defaults(&o);
    o.device_count_gpu = 0;
    snprintf(o.job, sizeof o.job, "worker");
    o.task = k;
    o.local_process = k;
    o.local_processes = 2;
    ct_device **devices = NULL;
    int n = 0;
    ct_status st = CT_STATUS_INIT;
    assert_int_equal(ct_devices_create(&o, &devices, &n, &st), 0);
    assert_int_equal(n, 1);
    assert_int_equal(devices[0]->threads, cores / 2 + (k < cores % 2));
    assert_int_equal(devices[0]->first_core, next);
    next += devices[0]->threads;
    char name[64];
    snprintf(name, sizeof name, "/job:worker/replica:0/task:%d/device:CPU:0", k);
    assert_string_equal(devices[0]->name, name);
    ct_devices_free(devices, n);
  }
  assert_int_equal(next, cores);
}

static atomic_int tasks_run;
static void count_task(void *context, int index) {
  (void)context, (void)index;
  atomic_fetch_add(&tasks_run, 1);
}

/* Waits, 2 s at most, until count_task has run `count` times in all. */
static void wait_for_tasks_run(int count) {
  for (int spins = 0; atomic_load(&tasks_run) < count && spins < 20000; ++spins) usleep(100);
  assert_int_equal(atomic_load(&tasks_run), count);
}

static void test_queue_takes_only_what_was_reserved(void **state) {
  (void)state;
  int n = 0;
  ct_device **devices = make_cpus(1, &n);
  ct_device *d = devices[0];
  ct_status st = CT_STATUS_INIT;
  ct_device_task task = {count_task, NULL, 0};
  assert_int_equal(ct_device_submit(d, CT_WORKER_COMPUTE, task, &st), 1); /* nothing reserved */
  assert_int_equal(st.code, CT_INTERNAL);
  assert_non_null(strstr(st.message, "queue of /job:localhost/replica:0/task:0/device:CPU:0"));

  ct_status ok = CT_STATUS_INIT;
  assert_int_equal(ct_device_reserve(d, CT_WORKER_COMPUTE, 8, &ok), 0);
  for (int i = 0; i < 8; ++i) assert_int_equal(ct_device_submit(d, CT_WORKER_COMPUTE, task, &ok), 0);
  assert_status_ok(&ok);
  wait_for_tasks_run(8);
  ct_devices_free(devices, n);
}

/* A step that waits for other processes runs on the communication worker
 * while the compute worker goes on: a compute task that waits for a
 * communication task queued after it must see it run. */
static atomic_int communicated;
static atomic_int compute_saw_it;
static void wait_for_communication(void *context, int index) {
  (void)context, (void)index;
  for (int spins = 0; !atomic_load(&communicated) && spins < 20000; ++spins) usleep(100);
  atomic_store(&compute_saw_it, atomic_load(&communicated) ? 1 : -1);
}
static void communicate(void *context, int index) {
  (void)context, (void)index;
  atomic_store(&communicated, 1);
}

static void test_communication_runs_beside_compute(void **state) {
  (void)state;
  int n = 0;
  ct_device **devices = make_cpus(1, &n);
  ct_device *d = devices[0];
  ct_status st = CT_STATUS_INIT;
  assert_int_equal(ct_device_reserve(d, CT_WORKER_COMPUTE, 1, &st), 0);
  assert_int_equal(ct_device_reserve(d, CT_WORKER_COMMUNICATION, 1, &st), 0);
  ct_device_task compute = {wait_for_communication, NULL, 0};
  ct_device_task talk = {communicate, NULL, 0};
  assert_int_equal(ct_device_submit(d, CT_WORKER_COMPUTE, compute, &st), 0);
  assert_int_equal(ct_device_submit(d, CT_WORKER_COMMUNICATION, talk, &st), 0);
  assert_status_ok(&st);
  for (int spins = 0; atomic_load(&compute_saw_it) == 0 && spins < 40000; ++spins) usleep(100);
  assert_int_equal(atomic_load(&compute_saw_it), 1);
  ct_devices_free(devices, n);
}

/* Runs `task` on d's compute worker after a pause of `pause_us`: the
 * worker is then busy, watching for tasks, or asleep. Returns once it ran. */
static void submit_after(ct_device *d, ct_device_task task, int pause_us) {
  const int before = atomic_load(&tasks_run);
  usleep((useconds_t)pause_us);
  ct_status st = CT_STATUS_INIT;
  assert_int_equal(ct_device_submit(d, CT_WORKER_COMPUTE, task, &st), 0);
  wait_for_tasks_run(before + 1);
}

/* A device whose threads leave a core free watches for tasks a moment
 * before its worker sleeps; one of more threads than cores does not.
 * Either way, a task queued at any moment (while the worker runs, watches
 * or sleeps) runs. */
static void test_workers_take_tasks_while_watching_or_asleep(void **state) {
  (void)state;
  const int pauses_us[] = {0, 0, 50, 150, 280, 320, 600, 2000, 0};
  for (int shared = 0; shared < 2; ++shared) {
    ct_session_options o;
    ct_session_options_defaults(&o);
    o.device_count_cpu = 1;
    o.device_count_gpu = 0;
    o.intra_op_parallelism_threads = shared ? 2 * ct_available_cores() : 1;
    ct_device **devices = NULL;
    int n = 0;
    ct_status st = CT_STATUS_INIT;
    assert_int_equal(ct_devices_create(&o, &devices, &n, &st), 0);
    assert_int_equal(devices[0]->idle_watch, !shared && ct_available_cores() > 1);
    assert_int_equal(ct_device_reserve(devices[0], CT_WORKER_COMPUTE, 1, &st), 0);
    ct_device_task task = {count_task, NULL, 0};
    for (size_t i = 0; i < sizeof pauses_us / sizeof pauses_us[0]; ++i)
      submit_after(devices[0], task, pauses_us[i]);
    ct_devices_free(devices, n);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_devices_leave_no_team_on_the_creating_thread),
      cmocka_unit_test(test_every_device_kind_has_its_type),
      cmocka_unit_test(test_registry_makes_cpu_devices_of_the_cpu_type),
      cmocka_unit_test(test_queue_takes_only_what_was_reserved),
      cmocka_unit_test(test_threads_are_bounded_by_the_cores),
      cmocka_unit_test(test_communication_runs_beside_compute),
      cmocka_unit_test(test_processes_split_the_cores),
      cmocka_unit_test(test_workers_take_tasks_while_watching_or_asleep),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
