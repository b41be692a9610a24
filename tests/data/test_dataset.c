/* Datasets: MNIST-format folders (generated, and the real Fashion-MNIST when
 * installed) are opened and checked; synthetic data is deterministic. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "test_support.h"

static void remove_dir(char *dir) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
  free(dir);
}

/* Writes an IDX file of u8 with the given dims; gz selects gzip. Every
 * value is fill(i) for element i. */
static void write_idx_u8(const char *dir, const char *name, int gz, int rank, const uint32_t *dims,
                         uint8_t (*fill)(int64_t)) {
  int64_t n = 1;
  for (int i = 0; i < rank; ++i) n *= dims[i];
  size_t len = 4 + 4 * (size_t)rank + (size_t)n;
  unsigned char *b = malloc(len);
  b[0] = 0, b[1] = 0, b[2] = 0x08, b[3] = (unsigned char)rank;
  for (int i = 0; i < rank; ++i)
    for (int k = 0; k < 4; ++k) b[4 + 4 * i + k] = (unsigned char)(dims[i] >> (24 - 8 * k));
  for (int64_t i = 0; i < n; ++i) b[4 + 4 * rank + i] = fill(i);
  char path[512];
  snprintf(path, sizeof path, "%s/%s%s", dir, name, gz ? ".gz" : "");
  if (gz) {
    gzFile f = gzopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(gzwrite(f, b, (unsigned)len), (int)len);
    assert_int_equal(gzclose(f), Z_OK);
  } else {
    assert_int_equal(ct_test_write_file(path, b, len), 0);
  }
  free(b);
}

static uint8_t fill_pixels(int64_t i) { return (uint8_t)(i * 37); }
static uint8_t fill_labels(int64_t i) { return (uint8_t)(i % 10); }
static uint8_t fill_bad_labels(int64_t i) { return (uint8_t)(i == 3 ? 10 : 1); }

static void expect_open_failure(const char *dir, int train, ct_code code, const char *want1,
                                const char *want2) {
  ct_status st = CT_STATUS_INIT;
  assert_null(ct_dataset_open_mnist(dir, train, &st));
  if (st.code != code) print_error("got %s: %s\n", ct_code_name(st.code), st.message);
  assert_int_equal(st.code, code);
  if (want1) assert_non_null(strstr(st.message, want1));
  if (want2) assert_non_null(strstr(st.message, want2));
}

static void test_open_generated_mnist(void **state) {
  (void)state;
  char *dir = ct_test_tmpdir();
  uint32_t idims[3] = {5, 4, 3}, ldims[1] = {5};
  write_idx_u8(dir, "t10k-images-idx3-ubyte", 1, 3, idims, fill_pixels);
  write_idx_u8(dir, "t10k-labels-idx1-ubyte", 0, 1, ldims, fill_labels);
  ct_status st = CT_STATUS_INIT;
  ct_dataset *ds = ct_dataset_open_mnist(dir, 0, &st);
  assert_status_ok(&st);
  assert_int_equal(ct_dataset_size(ds), 5);
  int64_t h, w, c;
  ct_dataset_image_shape(ds, &h, &w, &c);
  assert_int_equal(h, 4);
  assert_int_equal(w, 3);
  assert_int_equal(c, 1);
  assert_int_equal(ct_dataset_num_classes(ds), 10);
  /* The first batch shows pixels and labels in file order. */
  ct_batcher *b = ct_batcher_new(ds, 5, 0, 0, &st);
  assert_status_ok(&st);
  float images[5 * 12];
  int32_t labels[5];
  assert_int_equal(ct_batcher_next(b, images, labels, NULL), 5);
  for (int i = 0; i < 60; ++i) assert_true(images[i] == (float)(uint8_t)(i * 37) / 255.0f);
  for (int i = 0; i < 5; ++i) assert_int_equal(labels[i], i);
  ct_batcher_free(b);
  ct_dataset_free(ds);
  /* The train split is not there. */
  expect_open_failure(dir, 1, CT_NOT_FOUND, "train-images-idx3-ubyte.gz", "dataset.path");
  remove_dir(dir);
}

static void test_mismatched_counts_name_both_files(void **state) {
  (void)state;
  char *dir = ct_test_tmpdir();
  uint32_t idims[3] = {5, 2, 2}, ldims[1] = {4};
  write_idx_u8(dir, "train-images-idx3-ubyte", 0, 3, idims, fill_pixels);
  write_idx_u8(dir, "train-labels-idx1-ubyte", 1, 1, ldims, fill_labels);
  expect_open_failure(dir, 1, CT_DATA_LOSS, "train-images-idx3-ubyte'",
                      "train-labels-idx1-ubyte.gz'");
  remove_dir(dir);
}

static void test_bad_labels_and_ranks(void **state) {
  (void)state;
  char *dir = ct_test_tmpdir();
  uint32_t idims[3] = {5, 2, 2}, ldims[1] = {5}, flat[2] = {5, 4};
  write_idx_u8(dir, "train-images-idx3-ubyte", 0, 3, idims, fill_pixels);
  write_idx_u8(dir, "train-labels-idx1-ubyte", 0, 1, ldims, fill_bad_labels);
  expect_open_failure(dir, 1, CT_DATA_LOSS, "label 3 is 10", "train-labels-idx1-ubyte");
  write_idx_u8(dir, "train-images-idx3-ubyte", 0, 2, flat, fill_pixels);
  expect_open_failure(dir, 1, CT_DATA_LOSS, "not u8 images [N, H, W]", NULL);
  remove_dir(dir);
}

static void test_missing_folder(void **state) {
  (void)state;
  expect_open_failure("/nonexistent/ctower-data", 1, CT_NOT_FOUND,
                      "/nonexistent/ctower-data/train-images-idx3-ubyte", NULL);
}

static void test_real_fashion_mnist(void **state) {
  (void)state;
  FILE *f = fopen(CT_FASHION_MNIST_DIR "/t10k-images-idx3-ubyte.gz", "rb");
  if (f == NULL) {
    print_message("skipped: Fashion-MNIST is not installed in " CT_FASHION_MNIST_DIR "\n");
    skip();
  }
  fclose(f);
  ct_status st = CT_STATUS_INIT;
  ct_dataset *test = ct_dataset_open_mnist(NULL, 0, &st);
  assert_status_ok(&st);
  assert_int_equal(ct_dataset_size(test), 10000);
  int64_t h, w, c;
  ct_dataset_image_shape(test, &h, &w, &c);
  assert_int_equal(h, 28);
  assert_int_equal(w, 28);
  assert_int_equal(c, 1);
  ct_dataset_free(test);
}

static void test_synthetic_is_deterministic(void **state) {
  (void)state;
  ct_status st = CT_STATUS_INIT;
  ct_dataset *a = ct_dataset_new_synthetic(50, 6, 5, 2, 7, 42, &st);
  ct_dataset *b = ct_dataset_new_synthetic(50, 6, 5, 2, 7, 42, &st);
  ct_dataset *other = ct_dataset_new_synthetic(50, 6, 5, 2, 7, 43, &st);
  assert_status_ok(&st);
  assert_int_equal(ct_dataset_size(a), 50);
  assert_int_equal(ct_dataset_num_classes(a), 7);
  int64_t h, w, c;
  ct_dataset_image_shape(a, &h, &w, &c);
  assert_true(h == 6 && w == 5 && c == 2);
  enum { PIX = 6 * 5 * 2 };
  static float ia[50 * PIX], ib[50 * PIX], io[50 * PIX];
  int32_t la[50], lb[50], lo[50];
  ct_batcher *ba = ct_batcher_new(a, 50, 0, 0, &st), *bb = ct_batcher_new(b, 50, 0, 0, &st),
             *bo = ct_batcher_new(other, 50, 0, 0, &st);
  assert_status_ok(&st);
  assert_int_equal(ct_batcher_next(ba, ia, la, NULL), 50);
  assert_int_equal(ct_batcher_next(bb, ib, lb, NULL), 50);
  assert_int_equal(ct_batcher_next(bo, io, lo, NULL), 50);
  assert_memory_equal(ia, ib, sizeof ia);
  assert_memory_equal(la, lb, sizeof la);
  assert_true(memcmp(ia, io, sizeof ia) != 0);
  int seen[7] = {0};
  for (int i = 0; i < 50; ++i) {
    assert_true(la[i] >= 0 && la[i] < 7);
    seen[la[i]] = 1;
    /* The class band is bright (>= 128), the rest is dim. */
    for (int p = 0; p < PIX; ++p) {
      int in_band = p >= la[i] * PIX / 7 && p < (la[i] + 1) * PIX / 7;
      assert_int_equal(ia[i * PIX + p] >= 128.0f / 255.0f, in_band);
    }
  }
  int classes = 0;
  for (int k = 0; k < 7; ++k) classes += seen[k];
  assert_true(classes >= 5);
  ct_batcher_free(ba);
  ct_batcher_free(bb);
  ct_batcher_free(bo);
  ct_dataset_free(a);
  ct_dataset_free(b);
  ct_dataset_free(other);
}

static void test_synthetic_rejects_bad_sizes(void **state) {
  (void)state;
  ct_status st = CT_STATUS_INIT;
  assert_null(ct_dataset_new_synthetic(10, 0, 28, 1, 10, 1, &st));
  assert_int_equal(st.code, CT_INVALID_ARGUMENT);
  ct_status_clear(&st);
  assert_null(ct_dataset_new_synthetic(10, 28, 28, 1, 300, 1, &st));
  assert_int_equal(st.code, CT_INVALID_ARGUMENT);
  ct_status_clear(&st);
  assert_null(ct_dataset_new_synthetic(INT64_MAX / 2, 1 << 20, 1 << 20, 3, 10, 1, &st));
  assert_int_equal(st.code, CT_INVALID_ARGUMENT);
  ct_status_clear(&st);
  ct_dataset *empty = ct_dataset_new_synthetic(0, 2, 2, 1, 3, 1, &st);
  assert_status_ok(&st);
  assert_int_equal(ct_dataset_size(empty), 0);
  ct_dataset_free(empty);
}

/* Datasets open by their format's name through one table: every name has
 * a reader (a missing folder is that reader's CT_NOT_FOUND, not "no
 * reader"), "synthetic" gives what ct_dataset_new_synthetic gives, and an
 * unknown name is an error that lists the known ones. */
static void test_readers_by_name(void **state) {
  (void)state;
  int names = 0;
  for (const char *const *name = ct_dataset_names; *name; ++name, ++names) {
    if (strcmp(*name, "synthetic") == 0) continue;
    ct_status st = CT_STATUS_INIT;
    const ct_dataset_request r = {.name = *name, .path = "/nonexistent/ctower-dataset",
                                  .read = {.image_shape = {8, 8, 3}, .num_classes = 10}};
    assert_null(ct_dataset_open_named(&r, &st));
    printf("  %s: %s\n", *name, st.message);
    assert_int_equal(st.code, CT_NOT_FOUND);
  }
  assert_int_equal(names, 7);
  ct_status st = CT_STATUS_INIT;
  const ct_dataset_request synthetic = {.name = "synthetic", .examples = 40, .seed = 9,
                                        .read = {.image_shape = {6, 5, 2}, .num_classes = 7}};
  ct_dataset *named = ct_dataset_open_named(&synthetic, &st);
  ct_dataset *direct = ct_dataset_new_synthetic(40, 6, 5, 2, 7, 9, &st);
  assert_status_ok(&st);
  assert_int_equal(ct_dataset_size(named), 40);
  enum { PIX = 6 * 5 * 2 };
  static float a[40 * PIX], b[40 * PIX];
  int32_t la[40], lb[40];
  ct_batcher *ba = ct_batcher_new(named, 40, 0, 0, &st), *bb = ct_batcher_new(direct, 40, 0, 0, &st);
  assert_int_equal(ct_batcher_next(ba, a, la, NULL), 40);
  assert_int_equal(ct_batcher_next(bb, b, lb, NULL), 40);
  assert_memory_equal(a, b, sizeof a);
  assert_memory_equal(la, lb, sizeof la);
  ct_batcher_free(ba);
  ct_batcher_free(bb);
  ct_dataset_free(named);
  ct_dataset_free(direct);
  const ct_dataset_request unknown = {.name = "imagenet_lmdb", .path = "/data"};
  assert_null(ct_dataset_open_named(&unknown, &st));
  printf("  %s\n", st.message);
  assert_int_equal(st.code, CT_INVALID_ARGUMENT);
  assert_non_null(strstr(st.message, "'imagenet_lmdb'"));
  assert_non_null(strstr(st.message, "fashion_mnist, mnist, synthetic, cifar10, cifar100, "
                                     "image_folder, tfrecord"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_open_generated_mnist),
      cmocka_unit_test(test_mismatched_counts_name_both_files),
      cmocka_unit_test(test_bad_labels_and_ranks),
      cmocka_unit_test(test_missing_folder),
      cmocka_unit_test(test_real_fashion_mnist),
      cmocka_unit_test(test_synthetic_is_deterministic),
      cmocka_unit_test(test_synthetic_rejects_bad_sizes),
      cmocka_unit_test(test_readers_by_name),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
