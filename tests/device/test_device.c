/* Devices behind their table: the registry creates the CPU devices the
 * options ask for, each dispatching through its type's ct_device_ops; a
 * worker's queue takes only what was reserved (a submit beyond it fails
 * with a status rather than growing on the hot path); copies between
 * host-addressable devices are plain copies and marks are NULL there. */
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "device/device.h"
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

static atomic_int tasks_run;
static void count_task(void *context, int index) {
  (void)context, (void)index;
  atomic_fetch_add(&tasks_run, 1);
}

static void test_queue_takes_only_what_was_reserved(void **state) {
  (void)state;
  int n = 0;
  ct_device **devices = make_cpus(1, &n);
  ct_device *d = devices[0];
  ct_status st = CT_STATUS_INIT;
  ct_device_task task = {count_task, NULL, 0};
  assert_int_equal(ct_device_submit(d, task, &st), 1); /* nothing reserved */
  assert_int_equal(st.code, CT_INTERNAL);
  assert_non_null(strstr(st.message, "queue of /job:localhost/replica:0/task:0/device:CPU:0"));

  ct_status ok = CT_STATUS_INIT;
  assert_int_equal(ct_device_reserve(d, 8, &ok), 0);
  for (int i = 0; i < 8; ++i) assert_int_equal(ct_device_submit(d, task, &ok), 0);
  assert_status_ok(&ok);
  for (int spins = 0; atomic_load(&tasks_run) < 8 && spins < 10000; ++spins) usleep(100);
  assert_int_equal(atomic_load(&tasks_run), 8);
  ct_devices_free(devices, n);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_registry_makes_cpu_devices_of_the_cpu_type),
      cmocka_unit_test(test_queue_takes_only_what_was_reserved),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
