/* IDX reading: generated files round trip plain and gzipped; every broken
 * file gives the right code and names itself; the real Fashion-MNIST labels
 * (when installed) have the known class counts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <zlib.h>

#include "test_support.h"

/* ---- building IDX bytes ------------------------------------------------------- */

typedef struct bytes {
  unsigned char data[4096];
  size_t len;
} bytes;

static void put_be32(bytes *b, uint32_t v) {
  b->data[b->len++] = (unsigned char)(v >> 24);
  b->data[b->len++] = (unsigned char)(v >> 16);
  b->data[b->len++] = (unsigned char)(v >> 8);
  b->data[b->len++] = (unsigned char)v;
}

static void put_header(bytes *b, unsigned type, int rank, const uint32_t *dims) {
  b->len = 0;
  b->data[b->len++] = 0;
  b->data[b->len++] = 0;
  b->data[b->len++] = (unsigned char)type;
  b->data[b->len++] = (unsigned char)rank;
  for (int i = 0; i < rank; ++i) put_be32(b, dims[i]);
}

static void remove_dir(char *dir) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
  free(dir);
}

static char *path_in(const char *dir, const char *name) {
  size_t n = strlen(dir) + strlen(name) + 2;
  char *p = malloc(n);
  snprintf(p, n, "%s/%s", dir, name);
  return p;
}

static void write_gz(const char *path, const void *data, size_t len) {
  gzFile gz = gzopen(path, "wb");
  assert_non_null(gz);
  assert_int_equal(gzwrite(gz, data, (unsigned)len), (int)len);
  assert_int_equal(gzclose(gz), Z_OK);
}

/* Reads path expecting failure with code; checks the message names the file
 * and contains want (when not NULL). */
static void expect_failure(const char *path, ct_code code, const char *want) {
  ct_status st = CT_STATUS_INIT;
  ct_tensor *t = ct_idx_read(path, &st);
  assert_null(t);
  if (st.code != code) print_error("got %s: %s\n", ct_code_name(st.code), st.message);
  assert_int_equal(st.code, code);
  assert_non_null(strstr(st.message, path));
  if (want && strstr(st.message, want) == NULL) {
    print_error("message '%s' lacks '%s'\n", st.message, want);
    fail();
  }
}

/* ---- round trips ------------------------------------------------------------------- */

static void test_u8_rank3_plain_and_gz(void **state) {
  (void)state;
  char *dir = ct_test_tmpdir();
  bytes b;
  uint32_t dims[3] = {2, 3, 4};
  put_header(&b, 0x08, 3, dims);
  for (int i = 0; i < 24; ++i) b.data[b.len++] = (unsigned char)(i * 11);
  char *plain = path_in(dir, "images-idx3-ubyte"), *gz = path_in(dir, "images-idx3-ubyte.gz");
  assert_int_equal(ct_test_write_file(plain, b.data, b.len), 0);
  write_gz(gz, b.data, b.len);
  const char *paths[2] = {plain, gz};
  for (int k = 0; k < 2; ++k) {
    ct_status st = CT_STATUS_INIT;
    ct_tensor *t = ct_idx_read(paths[k], &st);
    assert_status_ok(&st);
    assert_int_equal(t->dtype, CT_U8);
    assert_int_equal(t->shape.rank, 3);
    assert_int_equal(t->shape.dims[0], 2);
    assert_int_equal(t->shape.dims[1], 3);
    assert_int_equal(t->shape.dims[2], 4);
    const uint8_t *v = t->data;
    for (int i = 0; i < 24; ++i) assert_int_equal(v[i], (uint8_t)(i * 11));
    ct_tensor_free(t);
  }
  free(plain);
  free(gz);
  remove_dir(dir);
}

static void test_i32_and_f32_big_endian(void **state) {
  (void)state;
  char *dir = ct_test_tmpdir();
  bytes b;
  uint32_t dims2[2] = {2, 2};
  put_header(&b, 0x0C, 2, dims2);
  const int32_t ints[4] = {1, -2, 70000, INT32_MIN};
  for (int i = 0; i < 4; ++i) put_be32(&b, (uint32_t)ints[i]);
  char *ipath = path_in(dir, "ints.gz");
  write_gz(ipath, b.data, b.len);

  uint32_t dims1[1] = {3};
  put_header(&b, 0x0D, 1, dims1);
  const float floats[3] = {-1.5f, 3.25f, 1e-3f};
  for (int i = 0; i < 3; ++i) {
    uint32_t u;
    memcpy(&u, &floats[i], 4);
    put_be32(&b, u);
  }
  char *fpath = path_in(dir, "floats");
  assert_int_equal(ct_test_write_file(fpath, b.data, b.len), 0);

  ct_status st = CT_STATUS_INIT;
  ct_tensor *it = ct_idx_read(ipath, &st);
  ct_tensor *ft = ct_idx_read(fpath, &st);
  assert_status_ok(&st);
  assert_int_equal(it->dtype, CT_I32);
  assert_int_equal(it->shape.rank, 2);
  for (int i = 0; i < 4; ++i) assert_int_equal(ct_tensor_i32(it)[i], ints[i]);
  assert_int_equal(ft->dtype, CT_F32);
  assert_int_equal(ft->shape.dims[0], 3);
  assert_memory_equal(ct_tensor_f32(ft), floats, sizeof floats);
  ct_tensor_free(it);
  ct_tensor_free(ft);
  free(ipath);
  free(fpath);
  remove_dir(dir);
}

/* ---- broken files ---------------------------------------------------------------------- */

static void test_missing_file(void **state) {
  (void)state;
  char *dir = ct_test_tmpdir();
  char *path = path_in(dir, "no-such-idx");
  expect_failure(path, CT_NOT_FOUND, "not found");
  expect_failure(CT_FASHION_MNIST_DIR "/no-such-file-idx1-ubyte", CT_NOT_FOUND,
                 "apt-get install dataset-fashion-mnist");
  free(path);
  remove_dir(dir);
}

static void test_bad_magic(void **state) {
  (void)state;
  char *dir = ct_test_tmpdir();
  char *path = path_in(dir, "not-idx");
  static const char zip[] = "PK\003\004 a zip, not an idx";
  assert_int_equal(ct_test_write_file(path, zip, sizeof zip - 1), 0);
  expect_failure(path, CT_DATA_LOSS, "is not an IDX file");
  free(path);
  remove_dir(dir);
}

static void test_truncated_header(void **state) {
  (void)state;
  char *dir = ct_test_tmpdir();
  char *path = path_in(dir, "short-header");
  bytes b;
  uint32_t dims[3] = {10, 28, 28};
  put_header(&b, 0x08, 3, dims);
  assert_int_equal(ct_test_write_file(path, b.data, 9), 0); /* magic + 5 dim bytes */
  expect_failure(path, CT_DATA_LOSS, "expected a 16-byte header, found 9 bytes");
  assert_int_equal(ct_test_write_file(path, b.data, 2), 0);
  expect_failure(path, CT_DATA_LOSS, "expected a 4-byte header, found 2 bytes");
  assert_int_equal(ct_test_write_file(path, "", 0), 0);
  expect_failure(path, CT_DATA_LOSS, "truncated");
  free(path);
  remove_dir(dir);
}

static void test_truncated_data(void **state) {
  (void)state;
  char *dir = ct_test_tmpdir();
  bytes b;
  uint32_t dims[2] = {2, 3};
  put_header(&b, 0x08, 2, dims);
  for (int i = 0; i < 4; ++i) b.data[b.len++] = 7; /* 4 of 6 bytes */
  char *plain = path_in(dir, "short-data"), *gz = path_in(dir, "short-data.gz");
  assert_int_equal(ct_test_write_file(plain, b.data, b.len), 0);
  write_gz(gz, b.data, b.len);
  expect_failure(plain, CT_DATA_LOSS, "expected 6 data bytes after the 12-byte header, found 4");
  expect_failure(gz, CT_DATA_LOSS, "expected 6 data bytes after the 12-byte header, found 4");
  free(plain);
  free(gz);
  remove_dir(dir);
}

/* A header that claims 16 GiB ([65536, 512, 512] bytes) over a file of a
 * few: "truncated" at once, never an allocation of what it claims. With
 * the address space capped at 2 GiB (not under AddressSanitizer or
 * ThreadSanitizer, whose shadow memory needs more), allocating the claim
 * would fail instead. */
static void test_header_claims_more_than_the_file(void **state) {
  (void)state;
  char *dir = ct_test_tmpdir();
  bytes b;
  uint32_t dims[3] = {65536, 512, 512};
  put_header(&b, 0x08, 3, dims);
  for (int i = 0; i < 100; ++i) b.data[b.len++] = 1;
  char *plain = path_in(dir, "liar"), *gz = path_in(dir, "liar.gz");
  assert_int_equal(ct_test_write_file(plain, b.data, b.len), 0);
  write_gz(gz, b.data, b.len);
  struct rlimit old;
  assert_int_equal(getrlimit(RLIMIT_AS, &old), 0);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  struct rlimit capped = {(rlim_t)2 << 30, (rlim_t)2 << 30};
  if (old.rlim_max == RLIM_INFINITY || old.rlim_max > capped.rlim_max)
    capped.rlim_max = old.rlim_max;
  assert_int_equal(setrlimit(RLIMIT_AS, &capped), 0);
#endif
  expect_failure(plain, CT_DATA_LOSS,
                 "expected 17179869184 data bytes after the 16-byte header, found 100");
  expect_failure(gz, CT_DATA_LOSS,
                 "expected 17179869184 data bytes after the 16-byte header, found 100");
  assert_int_equal(setrlimit(RLIMIT_AS, &old), 0);
  free(plain);
  free(gz);
  remove_dir(dir);
}

static void test_cut_gzip_stream(void **state) {
  (void)state;
  char *dir = ct_test_tmpdir();
  bytes b;
  uint32_t dims[1] = {2000};
  put_header(&b, 0x08, 1, dims);
  for (int i = 0; i < 2000; ++i) b.data[b.len++] = (unsigned char)(i * 7919 >> 3);
  char *gz = path_in(dir, "cut.gz");
  write_gz(gz, b.data, b.len);
  FILE *f = fopen(gz, "rb");
  unsigned char whole[4096];
  size_t n = fread(whole, 1, sizeof whole, f);
  fclose(f);
  assert_int_equal(ct_test_write_file(gz, whole, n / 2), 0);
  expect_failure(gz, CT_DATA_LOSS, NULL);
  free(gz);
  remove_dir(dir);
}

static void test_unsupported_and_absurd(void **state) {
  (void)state;
  char *dir = ct_test_tmpdir();
  char *path = path_in(dir, "odd");
  bytes b;
  uint32_t dims[3] = {1, 1, 1};
  put_header(&b, 0x0E, 1, dims); /* f64 */
  put_be32(&b, 0);
  put_be32(&b, 0);
  assert_int_equal(ct_test_write_file(path, b.data, b.len), 0);
  expect_failure(path, CT_UNIMPLEMENTED, "0x0e");

  uint32_t huge[3] = {0x7FFFFFFF, 0x7FFFFFFF, 0x7FFFFFFF};
  put_header(&b, 0x08, 3, huge);
  assert_int_equal(ct_test_write_file(path, b.data, b.len), 0);
  expect_failure(path, CT_DATA_LOSS, "2^34");

  uint32_t negative[1] = {0x80000000u};
  put_header(&b, 0x0C, 1, negative);
  assert_int_equal(ct_test_write_file(path, b.data, b.len), 0);
  expect_failure(path, CT_DATA_LOSS, NULL);

  put_header(&b, 0x08, 0, dims);
  assert_int_equal(ct_test_write_file(path, b.data, b.len), 0);
  expect_failure(path, CT_DATA_LOSS, "0 dimensions");

  uint32_t six[6] = {1, 1, 1, 1, 1, 1};
  put_header(&b, 0x08, 6, six);
  b.data[b.len++] = 1;
  assert_int_equal(ct_test_write_file(path, b.data, b.len), 0);
  expect_failure(path, CT_UNIMPLEMENTED, "6 dimensions");
  free(path);
  remove_dir(dir);
}

static void test_trailing_bytes(void **state) {
  (void)state;
  char *dir = ct_test_tmpdir();
  char *path = path_in(dir, "long");
  bytes b;
  uint32_t dims[1] = {3};
  put_header(&b, 0x08, 1, dims);
  for (int i = 0; i < 5; ++i) b.data[b.len++] = 1;
  assert_int_equal(ct_test_write_file(path, b.data, b.len), 0);
  expect_failure(path, CT_DATA_LOSS, "longer than");
  free(path);
  remove_dir(dir);
}

static void test_directory_is_not_a_file(void **state) {
  (void)state;
  char *dir = ct_test_tmpdir();
  expect_failure(dir, CT_INVALID_ARGUMENT, "not a regular file");
  ct_status st = CT_STATUS_INIT;
  assert_null(ct_idx_read("", &st));
  assert_int_equal(st.code, CT_INVALID_ARGUMENT);
  remove_dir(dir);
}

/* ---- the real data ------------------------------------------------------------------- */

static void test_real_fashion_mnist_labels(void **state) {
  (void)state;
  const char *path = CT_FASHION_MNIST_DIR "/train-labels-idx1-ubyte.gz";
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    print_message("skipped: %s is not installed (apt-get install dataset-fashion-mnist)\n", path);
    skip();
  }
  fclose(f);
  ct_status st = CT_STATUS_INIT;
  ct_tensor *t = ct_idx_read(path, &st);
  assert_status_ok(&st);
  assert_int_equal(t->dtype, CT_U8);
  assert_int_equal(t->shape.rank, 1);
  assert_int_equal(t->shape.dims[0], 60000);
  int64_t counts[10] = {0};
  const uint8_t *labels = t->data;
  for (int64_t i = 0; i < 60000; ++i) {
    assert_true(labels[i] < 10);
    ++counts[labels[i]];
  }
  for (int c = 0; c < 10; ++c) assert_int_equal(counts[c], 6000);
  ct_tensor_free(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_u8_rank3_plain_and_gz),
      cmocka_unit_test(test_i32_and_f32_big_endian),
      cmocka_unit_test(test_missing_file),
      cmocka_unit_test(test_bad_magic),
      cmocka_unit_test(test_truncated_header),
      cmocka_unit_test(test_truncated_data),
      cmocka_unit_test(test_cut_gzip_stream),
      cmocka_unit_test(test_header_claims_more_than_the_file),
      cmocka_unit_test(test_unsupported_and_absurd),
      cmocka_unit_test(test_trailing_bytes),
      cmocka_unit_test(test_directory_is_not_a_file),
      cmocka_unit_test(test_real_fashion_mnist_labels),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
