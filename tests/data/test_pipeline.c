/* The input pipeline: bitwise the batches of the batcher alone for any
 * threads and prefetch (epochs, jumps, a process's rows), an unreadable
 * example's error at its batch, freeing while the workers are busy, and
 * dataset.cache reading each file once with the same batches. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "data/batcher_internal.h"
#include "data/dataset_internal.h"
#include "test_support.h"

enum { N = 203, HH = 12, WW = 10, CC = 3, BATCH = 16 };

typedef struct source_state {
  int64_t broken; /* this example cannot be read; -1: none */
  _Atomic int64_t reads;
} source_state;

static int read_example(const ct_dataset *ds, int64_t index, uint8_t *pixels, int32_t *label,
                        ct_status *status) {
  source_state *s = ds->state;
  atomic_fetch_add(&s->reads, 1);
  if (index == s->broken) {
    ct_status_set(status, CT_DATA_LOSS, "example %lld is broken", (long long)index);
    return 1;
  }
  uint64_t x = (uint64_t)index * 0x9E3779B97F4A7C15ull + 1;
  for (int i = 0; i < HH * WW * CC; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    pixels[i] = (uint8_t)(x >> 24);
  }
  *label = (int32_t)(index % 7);
  return 0;
}

static void free_state(void *state) { free(state); }

static const ct_dataset_source k_source = {read_example, free_state, 0};

/* A dataset read "from files" (k_source), example `broken` unreadable. */
static ct_dataset *lazy_dataset(int64_t broken) {
  ct_status st = CT_STATUS_INIT;
  ct_dataset *ds = ct_dataset_alloc(NULL, &st);
  source_state *s = calloc(1, sizeof *s);
  s->broken = broken;
  assert_int_equal(ct_dataset_set_source(ds, &k_source, s, N, &st), 0);
  ds->h = HH, ds->w = WW, ds->c = CC, ds->num_classes = 7;
  return ds;
}

static const ct_augment_options k_augment = {{8, 8}, 2, 1, 0.2, {0.5, 1.5}, 1};

static ct_batcher *new_batcher(const ct_dataset *ds) {
  ct_status st = CT_STATUS_INIT;
  ct_batcher *b = ct_batcher_new(ds, BATCH, 1, 7, &st);
  assert_non_null(b);
  assert_int_equal(ct_batcher_set_augment(b, &k_augment, 1, &st), 0);
  return b;
}

/* rows of each batch a process of a job might read: the middle part of
 * an even split in three, at most MIDDLE_ROWS */
enum { MIDDLE_ROWS = BATCH / 3 + 1 };
static const ct_batch_parts k_middle = {3, 1, 1, 0};

/* The rows of an even split of count examples in `parts`, the naive way:
 * example i goes to part i % parts; part k's rows are then counted. */
static void even_split(int64_t count, int parts, int64_t *sizes) {
  for (int k = 0; k < parts; ++k) sizes[k] = 0;
  for (int64_t i = 0; i < count; ++i) sizes[i % parts]++;
}

static void middle_rows(int64_t count, int64_t *first, int64_t *rows) {
  int64_t sizes[3];
  even_split(count, 3, sizes);
  *first = sizes[0];
  *rows = sizes[1];
}

enum { PIXELS = 8 * 8 * CC };

/* Takes the next batch from both and checks they are bitwise equal;
 * returns its size. */
static int64_t same_batch(ct_batcher *b, ct_pipeline *p, int rows_only, float *images,
                          int32_t *labels) {
  ct_status st = CT_STATUS_INIT;
  const int64_t count = ct_batcher_next_size(b);
  int64_t first = 0, rows = count;
  if (rows_only && count > 0) middle_rows(count, &first, &rows);
  const int64_t n = ct_batcher_next_rows(b, first, rows, images, labels, &st);
  assert_status_ok(&st);
  ct_pipeline_batch batch;
  assert_int_equal(ct_pipeline_next(p, &batch, &st), n);
  assert_status_ok(&st);
  assert_int_equal(batch.count, n);
  if (n == 0) return 0;
  assert_int_equal(batch.first, first);
  assert_int_equal(batch.rows, rows);
  assert_int_equal(batch.sizes[0], rows); /* one part: all its rows */
  assert_int_equal(batch.images->shape.dims[0], rows_only ? MIDDLE_ROWS : BATCH);
  assert_memory_equal(ct_tensor_f32(batch.images), images, (size_t)(rows * PIXELS) * sizeof(float));
  assert_memory_equal(ct_tensor_i32(batch.labels), labels, (size_t)rows * sizeof(int32_t));
  assert_int_equal(ct_pipeline_position(p), ct_batcher_position(b));
  return n;
}

/* ct_pipeline_peek until it shows a batch (the workers fill it), for at
 * most 10 s; its size. */
static int64_t peek_when_ready(ct_pipeline *p, ct_pipeline_batch *batch) {
  int64_t n = 0;
  for (int i = 0; i < 10000 && (n = ct_pipeline_peek(p, batch)) == 0; ++i)
    nanosleep(&(struct timespec){0, 1000000}, NULL);
  return n;
}

/* ct_pipeline_peek shows, without taking it, the batch ct_pipeline_next
 * returns next: the same tensors, holding the batcher's rows; at the end
 * of an epoch it shows nothing. */
static void test_peek_shows_the_next_batch(void **state) {
  (void)state;
  ct_status st = CT_STATUS_INIT;
  ct_dataset *ds = lazy_dataset(-1);
  ct_batcher *b = new_batcher(ds);
  ct_pipeline_options o = {.threads = 2, .prefetch = 2};
  ct_pipeline *p = ct_pipeline_new(new_batcher(ds), &o, &st);
  assert_non_null(p);
  ct_batcher_start_epoch(b, 0);
  ct_pipeline_start_epoch(p, 0);
  float *images = malloc(BATCH * PIXELS * sizeof *images);
  int32_t labels[BATCH];
  int64_t batches = 0;
  for (;;) {
    const int64_t count = ct_batcher_next_size(b);
    ct_pipeline_batch peeked = {0}, taken;
    if (count > 0) {
      assert_int_equal(peek_when_ready(p, &peeked), count);
      assert_int_equal(ct_pipeline_peek(p, &peeked), count); /* peeking takes nothing */
    } else {
      nanosleep(&(struct timespec){0, 20000000}, NULL);
      assert_int_equal(ct_pipeline_peek(p, &peeked), 0);
    }
    const int64_t n = ct_batcher_next_rows(b, 0, count, images, labels, &st);
    assert_int_equal(ct_pipeline_next(p, &taken, &st), n);
    if (n == 0) break;
    assert_ptr_equal(taken.images, peeked.images);
    assert_ptr_equal(taken.labels, peeked.labels);
    assert_memory_equal(ct_tensor_f32(taken.images), images, (size_t)(n * PIXELS) * sizeof(float));
    assert_memory_equal(ct_tensor_i32(taken.labels), labels, (size_t)n * sizeof(int32_t));
    ++batches;
  }
  assert_int_equal(batches, (N + BATCH - 1) / BATCH);
  free(images);
  ct_pipeline_free(p);
  ct_batcher_free(b);
  ct_dataset_free(ds);
}

/* A caller's host memory (ct_host_memory) that counts its live blocks. */
static void *counted_alloc(size_t bytes, void *context) {
  ++*(int *)context;
  return malloc(bytes);
}
static void counted_free(void *ptr, size_t bytes, void *context) {
  (void)bytes;
  --*(int *)context;
  free(ptr);
}

static void run_against_the_batcher(ct_dataset *ds, int threads, int prefetch, int rows_only,
                                    const ct_host_memory *memory) {
  ct_status st = CT_STATUS_INIT;
  ct_batcher *b = new_batcher(ds);
  /* a process's rows: batches that hold only them */
  ct_pipeline_options o = {threads, prefetch, rows_only ? k_middle : (ct_batch_parts){0},
                           rows_only ? MIDDLE_ROWS : 0, *memory};
  ct_pipeline *p = ct_pipeline_new(new_batcher(ds), &o, &st);
  assert_non_null(p);
  int64_t h, w, c;
  ct_pipeline_image_shape(p, &h, &w, &c);
  assert_true(h == 8 && w == 8 && c == CC);
  float *images = malloc(BATCH * PIXELS * sizeof *images);
  int32_t labels[BATCH];
  int64_t batches = 0;
  for (int64_t epoch = 0; epoch < 2; ++epoch) { /* whole epochs, one after the other */
    ct_batcher_start_epoch(b, epoch);
    ct_pipeline_start_epoch(p, epoch);
    while (same_batch(b, p, rows_only, images, labels) > 0) ++batches;
    assert_int_equal(same_batch(b, p, rows_only, images, labels), 0); /* it stays over */
  }
  assert_int_equal(batches, 2 * ((N + BATCH - 1) / BATCH));
  ct_batcher_start_epoch(b, 5); /* a jump, then a seek back and forward */
  ct_pipeline_start_epoch(p, 5);
  for (int i = 0; i < 3; ++i) same_batch(b, p, rows_only, images, labels);
  ct_batcher_seek(b, 20);
  ct_pipeline_seek(p, 20);
  for (int i = 0; i < 2; ++i) same_batch(b, p, rows_only, images, labels);
  ct_batcher_seek(b, 190);
  ct_pipeline_seek(p, 190);
  while (same_batch(b, p, rows_only, images, labels) > 0) continue;
  free(images);
  ct_pipeline_free(p);
  ct_batcher_free(b);
}

static void test_bitwise_the_batcher_for_any_threads_and_prefetch(void **state) {
  (void)state;
  ct_dataset *ds = lazy_dataset(-1);
  const int threads[] = {1, 2, 4}, prefetch[] = {1, 3};
  const ct_host_memory own = {NULL, NULL, NULL};
  for (int t = 0; t < 3; ++t)
    for (int q = 0; q < 2; ++q) {
      run_against_the_batcher(ds, threads[t], prefetch[q], 0, &own);
      run_against_the_batcher(ds, threads[t], prefetch[q], 1, &own);
    }
  ct_dataset_free(ds);
}

/* Batches in the caller's memory (pinned memory for GPUs): the same bits,
 * a block per slot's images and labels, each given back with the
 * pipeline. */
static void test_batches_in_the_callers_memory(void **state) {
  (void)state;
  ct_dataset *ds = lazy_dataset(-1);
  int live = 0;
  const ct_host_memory counted = {counted_alloc, counted_free, &live};
  run_against_the_batcher(ds, 2, 3, 0, &counted);
  assert_int_equal(live, 0);
  ct_status st = CT_STATUS_INIT;
  ct_pipeline_options o = {.threads = 1, .prefetch = 3, .memory = counted};
  ct_pipeline *p = ct_pipeline_new(new_batcher(ds), &o, &st);
  assert_non_null(p);
  assert_int_equal(live, 2 * (3 + 1));
  ct_pipeline_free(p);
  assert_int_equal(live, 0);
  ct_dataset_free(ds);
}

static void test_an_unreadable_example_fails_its_batch(void **state) {
  (void)state;
  /* the example at position 100 of epoch 0 (batch 6) cannot be read */
  ct_dataset *ds = lazy_dataset(-1);
  ct_batcher *b = new_batcher(ds);
  const int64_t broken = ct_batcher_order(b)[100];
  ((source_state *)ds->state)->broken = broken;
  char message[64];
  snprintf(message, sizeof message, "example %lld is broken", (long long)broken);
  ct_status st = CT_STATUS_INIT;
  float *images = malloc(BATCH * PIXELS * sizeof *images);
  int32_t labels[BATCH];
  int64_t bad_batch = 0;
  while (ct_batcher_next(b, images, labels, &st) > 0) ++bad_batch;
  assert_int_equal(st.code, CT_DATA_LOSS);
  assert_int_equal(bad_batch, 100 / BATCH);
  ct_status_clear(&st);
  for (int threads = 1; threads <= 4; threads *= 2) {
    ct_pipeline_options o = {.threads = threads, .prefetch = 3};
    ct_pipeline *p = ct_pipeline_new(new_batcher(ds), &o, &st);
    ct_pipeline_batch batch;
    for (int64_t i = 0; i < bad_batch; ++i)
      assert_int_equal(ct_pipeline_next(p, &batch, &st), BATCH);
    assert_status_ok(&st);
    for (int again = 0; again < 2; ++again) { /* it stays at that batch */
      assert_int_equal(ct_pipeline_next(p, &batch, &st), -1);
      assert_int_equal(st.code, CT_DATA_LOSS);
      assert_string_equal(st.message, message);
      ct_status_clear(&st);
    }
    ct_pipeline_start_epoch(p, 0); /* a reset starts the workers again */
    assert_int_equal(ct_pipeline_next(p, &batch, &st), BATCH);
    ct_pipeline_free(p);
  }
  free(images);
  ct_batcher_free(b);
  ct_dataset_free(ds);
}

static void test_freed_while_the_workers_are_busy(void **state) {
  (void)state;
  ct_dataset *ds = lazy_dataset(-1);
  ct_status st = CT_STATUS_INIT;
  for (int i = 0; i < 20; ++i) {
    ct_pipeline_options o = {.threads = 4, .prefetch = 3};
    ct_pipeline *p = ct_pipeline_new(new_batcher(ds), &o, &st);
    assert_non_null(p);
    ct_pipeline_batch batch;
    for (int k = 0; k < i % 3; ++k) assert_int_equal(ct_pipeline_next(p, &batch, &st), BATCH);
    ct_pipeline_free(p); /* mid-epoch, batches in flight */
  }
  ct_dataset_free(ds);
}

static void test_cache_reads_each_example_once(void **state) {
  (void)state;
  ct_dataset *cached = lazy_dataset(-1);
  ct_status st = CT_STATUS_INIT;
  assert_int_equal(ct_dataset_enable_cache(cached, &st), 0);
  ct_dataset *plain = lazy_dataset(-1);
  for (int threads = 1; threads <= 4; threads *= 4) {
    ct_pipeline_options o = {.threads = threads, .prefetch = 2};
    ct_pipeline *a = ct_pipeline_new(new_batcher(cached), &o, &st);
    ct_batcher *b = new_batcher(plain);
    float *images = malloc(BATCH * PIXELS * sizeof *images);
    int32_t labels[BATCH];
    for (int64_t epoch = 0; epoch < 3; ++epoch) {
      ct_batcher_start_epoch(b, epoch);
      ct_pipeline_start_epoch(a, epoch);
      while (same_batch(b, a, 0, images, labels) > 0) continue;
    }
    free(images);
    ct_pipeline_free(a);
    ct_batcher_free(b);
  }
  /* prefetching may have started epoch 3: still nothing read twice */
  assert_int_equal(atomic_load(&((source_state *)cached->state)->reads), N);
  ct_dataset_free(cached);
  ct_dataset_free(plain);
}

/* A split's rows for this process: even (against the naive split) or in
 * turns, over several parts of its own or none; and a pipeline hands out
 * each batch with its parts' rows. */
static void test_split_rows(void **state) {
  (void)state;
  for (int64_t count = 0; count <= 13; ++count)
    for (int parts = 1; parts <= 5; ++parts)
      for (int first = 0; first <= parts; ++first)
        for (int mine = 0; first + mine <= parts; ++mine) {
          int64_t want[5], sizes[6], at = -1, rows = 0;
          even_split(count, parts, want);
          const ct_batch_parts split = {parts, first, mine, 0};
          const int64_t got = ct_batch_parts_rows(&split, count, &at, sizes);
          int64_t before = 0;
          for (int k = 0; k < first; ++k) before += want[k];
          for (int k = 0; k < mine; ++k)
            assert_int_equal(sizes[k], want[first + k]), rows += want[first + k];
          assert_int_equal(at, before);
          assert_int_equal(got, rows);
        }
  int64_t first, sizes[2];
  const ct_batch_parts turns = {3, 1, 2, 500}; /* a rank's evaluation batches */
  assert_int_equal(ct_batch_parts_rows(&turns, 1200, &first, sizes), 700);
  assert_true(first == 500 && sizes[0] == 500 && sizes[1] == 200);
  assert_int_equal(ct_batch_parts_rows(&turns, 800, &first, sizes), 300);
  assert_true(first == 500 && sizes[0] == 300 && sizes[1] == 0);
  const ct_batch_parts all = {0};
  assert_int_equal(ct_batch_parts_rows(&all, 9, &first, sizes), 9);
  assert_true(first == 0 && sizes[0] == 9);
  /* towers 1 and 2 of 4: the pipeline's batches come with their rows */
  ct_dataset *ds = lazy_dataset(-1);
  ct_status st = CT_STATUS_INIT;
  ct_pipeline_options o = {.threads = 2, .prefetch = 2, .split = {4, 1, 2, 0}};
  ct_pipeline *p = ct_pipeline_new(new_batcher(ds), &o, &st);
  assert_non_null(p);
  ct_pipeline_start_epoch(p, 0);
  ct_pipeline_batch batch;
  for (int64_t n; (n = ct_pipeline_next(p, &batch, &st)) > 0;) {
    int64_t want[4];
    even_split(n, 4, want);
    assert_true(batch.first == want[0] && batch.rows == want[1] + want[2]);
    assert_true(batch.sizes[0] == want[1] && batch.sizes[1] == want[2]);
  }
  assert_status_ok(&st);
  ct_pipeline_free(p);
  ct_dataset_free(ds);
}

static void test_bad_options(void **state) {
  (void)state;
  ct_dataset *ds = lazy_dataset(-1);
  ct_status st = CT_STATUS_INIT;
  ct_pipeline_options o = {.threads = 0, .prefetch = 2};
  assert_null(ct_pipeline_new(new_batcher(ds), &o, &st));
  assert_int_equal(st.code, CT_INVALID_ARGUMENT);
  const ct_batch_parts bad[] = {{2, 1, 2, 0}, {-1, 0, 0, 0}, {3, 0, 1, -5}};
  for (int i = 0; i < 3; ++i) {
    ct_status_clear(&st);
    o = (ct_pipeline_options){.threads = 1, .prefetch = 1, .split = bad[i]};
    assert_null(ct_pipeline_new(new_batcher(ds), &o, &st));
    assert_int_equal(st.code, CT_INVALID_ARGUMENT);
    assert_non_null(strstr(st.message, "parts 0 <= first <= first + mine <= parts"));
  }
  /* the middle third of a batch is more than the quarter it holds */
  ct_status_clear(&st);
  o = (ct_pipeline_options){.threads = 1, .prefetch = 1, .split = k_middle, .max_rows = BATCH / 4};
  assert_null(ct_pipeline_new(new_batcher(ds), &o, &st));
  assert_non_null(strstr(st.message, "raise max_rows"));
  ct_dataset_free(ds);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bitwise_the_batcher_for_any_threads_and_prefetch),
      cmocka_unit_test(test_peek_shows_the_next_batch),
      cmocka_unit_test(test_batches_in_the_callers_memory),
      cmocka_unit_test(test_an_unreadable_example_fails_its_batch),
      cmocka_unit_test(test_freed_while_the_workers_are_busy),
      cmocka_unit_test(test_cache_reads_each_example_once),
      cmocka_unit_test(test_split_rows),
      cmocka_unit_test(test_bad_options),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
