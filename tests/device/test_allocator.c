/* The device allocator: limits to the byte, growth versus reserve, best fit,
 * splitting and coalescing, the out-of-memory status, exact stats, threads. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "device/allocator.h"
#include "test_support.h"

static ct_allocator *make(size_t limit, int growth, size_t initial) {
  ct_allocator_options o = {"/job:localhost/replica:0/task:0/device:CPU:0", limit, growth, initial,
                            NULL, NULL, NULL, NULL};
  ct_status st = CT_STATUS_INIT;
  ct_allocator *a = ct_allocator_new_with(&o, &st);
  assert_status_ok(&st);
  assert_non_null(a);
  return a;
}

static void test_limit_to_the_byte(void **state) {
  (void)state;
  const size_t limit = 1 << 20;
  ct_allocator *a = make(limit, 0, 0); /* reserve the whole limit */
  ct_status st = CT_STATUS_INIT;
  void *p[4];
  for (int i = 0; i < 4; ++i) {
    p[i] = ct_allocator_alloc(a, limit / 4, &st);
    assert_non_null(p[i]);
  }
  ct_allocator_stats s = ct_allocator_get_stats(a);
  assert_int_equal(s.bytes_in_use, limit);
  assert_int_equal(s.bytes_reserved, limit);
  assert_int_equal(s.largest_free_chunk, 0);
  assert_null(ct_allocator_alloc(a, 1, &st)); /* one byte more fails */
  assert_int_equal(st.code, CT_RESOURCE_EXHAUSTED);
  ct_allocator_free(a, p[1]);
  ct_status_clear(&st);
  assert_null(ct_allocator_alloc(a, limit / 4 + 1, &st)); /* does not fit the hole */
  ct_status_clear(&st);
  assert_ptr_equal(ct_allocator_alloc(a, limit / 4, &st), p[1]); /* fits exactly */
  for (int i = 0; i < 4; ++i) ct_allocator_free(a, p[i]);
  s = ct_allocator_get_stats(a);
  assert_int_equal(s.bytes_in_use, 0);
  assert_int_equal(s.largest_free_chunk, limit); /* coalesced back into one chunk */
  assert_int_equal(s.peak_bytes_in_use, limit);
  assert_int_equal(s.allocations, 5);
  ct_allocator_free_all(a);
}

static void test_growth_versus_reserve(void **state) {
  (void)state;
  ct_status st = CT_STATUS_INIT;
  ct_allocator *reserve = make(8 << 20, 0, 0);
  assert_int_equal(ct_allocator_get_stats(reserve).bytes_reserved, 8 << 20);
  assert_int_equal(ct_allocator_get_stats(reserve).n_regions, 1);
  ct_allocator_free_all(reserve);

  ct_allocator *growth = make(7 << 20, 1, 1 << 20);
  assert_int_equal(ct_allocator_get_stats(growth).bytes_reserved, 0); /* starts empty */
  void *a = ct_allocator_alloc(growth, 1000, &st);        /* region 1: 1 MiB */
  assert_int_equal(ct_allocator_get_stats(growth).bytes_reserved, 1 << 20);
  void *b = ct_allocator_alloc(growth, 1 << 20, &st);     /* region 2: 2 MiB (doubled) */
  assert_int_equal(ct_allocator_get_stats(growth).bytes_reserved, 3 << 20);
  void *c = ct_allocator_alloc(growth, 3 << 20, &st);     /* region 3: 4 MiB capped at 4 left */
  ct_allocator_stats s = ct_allocator_get_stats(growth);
  assert_int_equal(s.bytes_reserved, 7 << 20);
  assert_int_equal(s.n_regions, 3);
  assert_non_null(a), assert_non_null(b), assert_non_null(c);
  assert_null(ct_allocator_alloc(growth, 2 << 20, &st)); /* the limit forbids a 4th region */
  assert_int_equal(st.code, CT_RESOURCE_EXHAUSTED);
  assert_true(ct_allocator_get_stats(growth).bytes_reserved <= (7u << 20));
  ct_allocator_free_all(growth);
}

static void test_best_fit_split_and_coalesce(void **state) {
  (void)state;
  ct_status st = CT_STATUS_INIT;
  ct_allocator *al = make(1 << 20, 0, 0);
  char *a = ct_allocator_alloc(al, 1000, &st);  /* rounds to 1024 */
  char *b = ct_allocator_alloc(al, 4096, &st);
  char *c = ct_allocator_alloc(al, 2048, &st);
  char *d = ct_allocator_alloc(al, 256, &st);
  assert_ptr_equal(b, a + 1024); /* split in address order */
  assert_ptr_equal(c, b + 4096);
  assert_ptr_equal(d, c + 2048);
  assert_int_equal((uintptr_t)a % 256, 0);
  ct_allocator_free(al, b); /* holes of 4096 and 2048 */
  ct_allocator_free(al, d);
  ct_allocator_free(al, c); /* c merges with b's hole and d's hole and the tail */
  ct_allocator_stats s = ct_allocator_get_stats(al);
  assert_int_equal(s.bytes_in_use, 1024);
  assert_int_equal(s.largest_free_chunk, (1 << 20) - 1024);
  /* best fit: of two holes, the smaller that fits */
  char *x = ct_allocator_alloc(al, 3000, &st);
  char *y = ct_allocator_alloc(al, 1000, &st);
  char *z = ct_allocator_alloc(al, 8192, &st);
  ct_allocator_free(al, x); /* a 3072 hole at x */
  char *w = ct_allocator_alloc(al, 2000, &st); /* fits x's hole (3072) and the tail: takes x */
  assert_ptr_equal(w, x);
  ct_allocator_free(al, a), ct_allocator_free(al, y), ct_allocator_free(al, z), ct_allocator_free(al, w);
  s = ct_allocator_get_stats(al);
  assert_int_equal(s.bytes_in_use, 0);
  assert_int_equal(s.largest_free_chunk, 1 << 20);
  ct_allocator_free_all(al);
}

static void test_out_of_memory_status(void **state) {
  (void)state;
  ct_status st = CT_STATUS_INIT;
  ct_allocator *al = make(8 << 20, 0, 0);
  void *a = ct_allocator_alloc(al, 6 << 20, &st);
  assert_non_null(a);
  assert_null(ct_allocator_alloc(al, 4 << 20, &st));
  assert_int_equal(st.code, CT_RESOURCE_EXHAUSTED);
  assert_string_equal(st.message,
                      "out of memory on /job:localhost/replica:0/task:0/device:CPU:0 allocating "
                      "4194304 bytes: limit 8388608 bytes, 6291456 in use, largest free chunk "
                      "2097152 bytes; lower the batch size, raise session.memory_limit_mb (or "
                      "gpu_options.per_process_gpu_memory_fraction), or set "
                      "gpu_options.allow_growth");
  ct_status_clear(&st);
  void *b = ct_allocator_alloc(al, 1 << 20, &st); /* a smaller request still works */
  assert_non_null(b);
  ct_allocator_free(al, a);
  ct_allocator_free(al, b);
  ct_allocator_free(NULL == al ? NULL : al, NULL); /* freeing NULL is a no-op */
  /* a request that rounding to whole chunks would wrap to a small one */
  ct_status_clear(&st);
  assert_null(ct_allocator_alloc(al, SIZE_MAX - 8, &st));
  assert_int_equal(st.code, CT_RESOURCE_EXHAUSTED);
  ct_allocator_free_all(al);
}

/* A region source that refuses for another reason than a shortage (a GPU
 * that failed earlier): its reason, as an internal error, not "out of
 * memory". */
static void *refusing_region_alloc(size_t bytes, void *context) {
  (void)bytes;
  (void)context;
  return NULL;
}
static void refusing_region_free(void *ptr, size_t bytes, void *context) {
  (void)ptr;
  (void)bytes;
  (void)context;
}
static int refusing_region_error(void *context, char *text, size_t size) {
  const int *broken = context;
  if (!*broken) return 0;
  snprintf(text, size, "the device failed earlier");
  return 1;
}

static void test_region_refused_for_another_reason(void **state) {
  (void)state;
  int broken = 0;
  ct_allocator_options o = {"/gpu:0", 0, 1, 0, refusing_region_alloc, refusing_region_free,
                            refusing_region_error, &broken};
  ct_status st = CT_STATUS_INIT;
  ct_allocator *al = ct_allocator_new_with(&o, &st);
  assert_non_null(al);
  assert_null(ct_allocator_alloc(al, 1024, &st)); /* a shortage */
  assert_int_equal(st.code, CT_RESOURCE_EXHAUSTED);
  ct_status_clear(&st);
  broken = 1;
  assert_null(ct_allocator_alloc(al, 1024, &st));
  assert_int_equal(st.code, CT_INTERNAL);
  assert_string_equal(st.message, "/gpu:0 could not allocate 1024 bytes: the device failed earlier");
  ct_allocator_free_all(al);
  /* and when the whole limit is reserved at the start */
  ct_status_clear(&st);
  o.limit = 1 << 20;
  o.allow_growth = 0;
  assert_null(ct_allocator_new_with(&o, &st));
  assert_int_equal(st.code, CT_INTERNAL);
  assert_non_null(strstr(st.message, "the device failed earlier"));
}

/* Repeating one step's allocations reserves nothing after the first round. */
static void test_steps_reuse_memory(void **state) {
  (void)state;
  ct_status st = CT_STATUS_INIT;
  ct_allocator *al = make(0, 1, 1 << 16);
  const size_t sizes[] = {3000, 100000, 777, 65536, 12345, 400000, 256};
  size_t reserved_after_first = 0;
  for (int round = 0; round < 5; ++round) {
    void *p[7];
    for (int i = 0; i < 7; ++i) p[i] = ct_allocator_alloc(al, sizes[i], &st);
    for (int i = 0; i < 7; i += 2) ct_allocator_free(al, p[i]);
    for (int i = 1; i < 7; i += 2) ct_allocator_free(al, p[i]);
    ct_allocator_stats s = ct_allocator_get_stats(al);
    if (round == 0) reserved_after_first = s.bytes_reserved;
    assert_int_equal(s.bytes_reserved, reserved_after_first);
    assert_int_equal(s.bytes_in_use, 0);
  }
  ct_allocator_free_all(al);
}

typedef struct stress_arg {
  ct_allocator *al;
  unsigned seed;
} stress_arg;

static void *stress(void *arg) {
  stress_arg *s = arg;
  void *held[32] = {0};
  ct_status st = CT_STATUS_INIT;
  unsigned x = s->seed;
  for (int i = 0; i < 4000; ++i) {
    x = x * 1103515245u + 12345u;
    int k = (int)((x >> 16) % 32);
    if (held[k]) {
      ct_allocator_free(s->al, held[k]);
      held[k] = NULL;
    } else {
      size_t n = 1 + (x >> 8) % 50000;
      held[k] = ct_allocator_alloc(s->al, n, &st);
      if (held[k]) memset(held[k], 0xAB, n);
    }
  }
  for (int k = 0; k < 32; ++k) ct_allocator_free(s->al, held[k]);
  return NULL;
}

static void test_threads(void **state) {
  (void)state;
  ct_allocator *al = make(0, 1, 1 << 20);
  pthread_t threads[4];
  stress_arg args[4];
  for (int i = 0; i < 4; ++i) {
    args[i] = (stress_arg){al, 17u + (unsigned)i};
    pthread_create(&threads[i], NULL, stress, &args[i]);
  }
  for (int i = 0; i < 4; ++i) pthread_join(threads[i], NULL);
  ct_allocator_stats s = ct_allocator_get_stats(al);
  assert_int_equal(s.bytes_in_use, 0);
  /* everything coalesced: the largest free chunk is the largest region */
  assert_true(s.largest_free_chunk >= (size_t)1 << 20);
  printf("  4 threads, 16000 operations: %d regions, %zu bytes reserved, peak %zu\n",
         s.n_regions, s.bytes_reserved, s.peak_bytes_in_use);
  ct_allocator_free_all(al);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_limit_to_the_byte),
      cmocka_unit_test(test_growth_versus_reserve),
      cmocka_unit_test(test_best_fit_split_and_coalesce),
      cmocka_unit_test(test_out_of_memory_status),
      cmocka_unit_test(test_region_refused_for_another_reason),
      cmocka_unit_test(test_steps_reuse_memory),
      cmocka_unit_test(test_threads),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
