/* CIFAR-10/100, image folders and TFRecord files, as make_datasets.py writes
 * them: every example reads back as written (exactly for CIFAR and PNG, as
 * PIL decodes for JPEG), classes map as documented, and each kind of bad
 * input is a clear error naming the file -- or, with skip_bad_examples, a
 * warning and the count skipped. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctower/data.h"
#include "test_support.h"

static char *g_dir; /* what make_datasets.py wrote */

static int setup(void **state) {
  (void)state;
  const char *src = getenv("CT_SOURCE_DIR");
  if (src == NULL) src = ".";
  g_dir = ct_test_tmpdir();
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "/usr/bin/python3 '%s/tests/data/make_datasets.py' '%s'", src, g_dir);
  return system(cmd) == 0 ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  ct_test_remove_dir(g_dir);
  return 0;
}

static void path_of(char *out, size_t size, const char *sub) {
  snprintf(out, size, "%s/%s", g_dir, sub);
}

static ct_dataset_read_options options_8x8(int classes) {
  ct_dataset_read_options o = {.image_shape = {8, 8, 3}, .num_classes = classes};
  return o;
}

/* Every example of ds equals expected/<name>.bin, pixel for pixel (within
 * tolerance), label for label. */
static void expect_examples(const ct_dataset *ds, const char *name, int tolerance) {
  char path[512];
  snprintf(path, sizeof path, "%s/expected/%s.bin", g_dir, name);
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  int64_t h, w, c;
  ct_dataset_image_shape(ds, &h, &w, &c);
  const size_t bytes = (size_t)(h * w * c);
  uint8_t *want = malloc(bytes), *got = malloc(bytes);
  int64_t n = 0;
  int32_t want_label;
  while (fread(&want_label, 4, 1, f) == 1) {
    assert_int_equal(fread(want, 1, bytes, f), bytes);
    ct_status st = CT_STATUS_INIT;
    int32_t label = -1;
    if (ct_dataset_read(ds, n, got, &label, &st)) fail_msg("%s: %s", name, st.message);
    assert_int_equal(label, want_label);
    int worst = 0;
    for (size_t i = 0; i < bytes; ++i) {
      const int d = abs((int)got[i] - (int)want[i]);
      worst = d > worst ? d : worst;
    }
    if (worst > tolerance)
      fail_msg("%s example %lld: a pixel differs by %d", name, (long long)n, worst);
    ++n;
  }
  fclose(f);
  free(want);
  free(got);
  assert_int_equal(ct_dataset_size(ds), n);
}

static void test_cifar10_reads_back(void **state) {
  (void)state;
  char dir[512];
  path_of(dir, sizeof dir, "cifar10");
  ct_status st = CT_STATUS_INIT;
  for (int train = 0; train < 2; ++train) {
    ct_dataset *ds = ct_dataset_open_cifar(dir, 10, train, NULL, &st);
    if (ds == NULL) fail_msg("%s", st.message);
    int64_t h, w, c;
    ct_dataset_image_shape(ds, &h, &w, &c);
    assert_true(h == 32 && w == 32 && c == 3);
    assert_int_equal(ct_dataset_num_classes(ds), 10);
    assert_null(ct_dataset_class_name(ds, 0));
    expect_examples(ds, train ? "cifar10_train" : "cifar10_test", 0);
    ct_dataset_free(ds);
  }
}

static void test_cifar100_fine_and_coarse(void **state) {
  (void)state;
  char dir[512];
  path_of(dir, sizeof dir, "cifar100");
  ct_status st = CT_STATUS_INIT;
  ct_dataset_read_options coarse = {.coarse_labels = 1};
  ct_dataset *fine = ct_dataset_open_cifar(dir, 100, 1, NULL, &st);
  ct_dataset *sup = ct_dataset_open_cifar(dir, 100, 0, &coarse, &st);
  if (!fine || !sup) fail_msg("%s", st.message);
  assert_int_equal(ct_dataset_num_classes(fine), 100);
  assert_int_equal(ct_dataset_num_classes(sup), 20);
  expect_examples(fine, "cifar100_train", 0);
  expect_examples(sup, "cifar100_coarse_test", 0);
  ct_dataset_free(fine);
  ct_dataset_free(sup);
  /* the folder the download unpacks to is found inside dataset.path */
  char parent[512], cmd[1700];
  path_of(parent, sizeof parent, "unpacked");
  snprintf(cmd, sizeof cmd, "mkdir -p '%s' && cp -r '%s' '%s/cifar-100-binary'", parent, dir,
           parent);
  assert_int_equal(system(cmd), 0);
  ct_dataset *ds = ct_dataset_open_cifar(parent, 100, 1, NULL, &st);
  if (ds == NULL) fail_msg("%s", st.message);
  assert_int_equal(ct_dataset_size(ds), 6);
  ct_dataset_free(ds);
}

static void test_image_folder_reads_back(void **state) {
  (void)state;
  char dir[512];
  path_of(dir, sizeof dir, "folder");
  ct_status st = CT_STATUS_INIT;
  ct_dataset_read_options o = options_8x8(0);
  ct_dataset *train = ct_dataset_open_image_folder(dir, 1, &o, &st);
  ct_dataset *test = ct_dataset_open_image_folder(dir, 0, &o, &st);
  if (!train || !test) fail_msg("%s", st.message);
  /* sorted class names; the test split (dogs, zebra) keeps train's numbers */
  assert_int_equal(ct_dataset_num_classes(train), 3);
  assert_string_equal(ct_dataset_class_name(train, 0), "cats");
  assert_string_equal(ct_dataset_class_name(train, 1), "dogs");
  assert_string_equal(ct_dataset_class_name(train, 2), "zebra");
  assert_null(ct_dataset_class_name(train, 3));
  assert_int_equal(ct_dataset_num_classes(test), 3);
  /* PNG exactly (gray made RGB, alpha dropped, palette expanded); JPEG as PIL
   * decodes it, through the same libjpeg-turbo */
  expect_examples(train, "folder_train", 1);
  expect_examples(test, "folder_test", 1);
  ct_dataset_free(train);
  ct_dataset_free(test);
}

static void test_image_folder_converts(void **state) {
  (void)state;
  char dir[512];
  path_of(dir, sizeof dir, "resize");
  ct_status st = CT_STATUS_INIT;
  /* a 5x7 RGB image of one colour, resized to 8x8 and made gray */
  ct_dataset_read_options o = {.image_shape = {8, 8, 1}};
  ct_dataset *ds = ct_dataset_open_image_folder(dir, 1, &o, &st);
  if (ds == NULL) fail_msg("%s", st.message);
  uint8_t px[64];
  int32_t label;
  assert_int_equal(ct_dataset_read(ds, 0, px, &label, &st), 0);
  /* as PIL's convert("L"): (10 * 19595 + 200 * 38470 + 30 * 7471 + 32768) >> 16 = 124 */
  for (int i = 0; i < 64; ++i) assert_int_equal(px[i], 124);
  ct_dataset_free(ds);
  /* bilinear with half-pixel centres: [0, 100] stretched to 4 wide samples
   * it at -0.25 (clamped), 0.25, 0.75 and 1.25 (clamped) */
  path_of(dir, sizeof dir, "stretch");
  o = (ct_dataset_read_options){.image_shape = {1, 4, 1}};
  ds = ct_dataset_open_image_folder(dir, 0, &o, &st);
  if (ds == NULL) fail_msg("%s", st.message);
  assert_int_equal(ct_dataset_read(ds, 0, px, &label, &st), 0);
  assert_int_equal(px[0], 0);
  assert_int_equal(px[1], 25);
  assert_int_equal(px[2], 75);
  assert_int_equal(px[3], 100);
  ct_dataset_free(ds);
  path_of(dir, sizeof dir, "resize");
  /* channels other than 1 and 3 are refused at open */
  o.image_shape[2] = 4;
  assert_null(ct_dataset_open_image_folder(dir, 1, &o, &st));
  assert_int_equal(st.code, CT_INVALID_ARGUMENT);
  assert_non_null(strstr(st.message, "dataset.image_shape"));
}

static void test_tfrecord_reads_back(void **state) {
  (void)state;
  char dir[512];
  path_of(dir, sizeof dir, "tfrecord");
  ct_status st = CT_STATUS_INIT;
  ct_dataset_read_options o = options_8x8(5);
  o.label_offset = 1; /* the files' labels are 1-based */
  ct_dataset *train = ct_dataset_open_tfrecord(dir, 1, &o, &st);
  ct_dataset *test = ct_dataset_open_tfrecord(dir, 0, &o, &st);
  if (!train || !test) fail_msg("%s", st.message);
  assert_int_equal(ct_dataset_size(train), 6);
  assert_int_equal(ct_dataset_size(test), 3);
  expect_examples(train, "tfrecord_train", 1);
  expect_examples(test, "tfrecord_test", 1);
  ct_dataset_free(train);
  ct_dataset_free(test);
  /* label_offset 0: label 5 is outside 5 classes, and the read says so */
  o.label_offset = 0;
  ct_dataset *ds = ct_dataset_open_tfrecord(dir, 1, &o, &st);
  assert_non_null(ds);
  uint8_t px[192];
  int32_t label;
  int failures = 0;
  for (int64_t i = 0; i < ct_dataset_size(ds); ++i) {
    ct_status one = CT_STATUS_INIT;
    failures += ct_dataset_read(ds, i, px, &label, &one);
  }
  assert_true(failures > 0);
  ct_dataset_free(ds);
  /* the other layout: train/ and test/ of *.tfrecord */
  path_of(dir, sizeof dir, "tfrecord_dirs");
  o.label_offset = 1;
  ds = ct_dataset_open_tfrecord(dir, 0, &o, &st);
  if (ds == NULL) fail_msg("%s", st.message);
  assert_int_equal(ct_dataset_size(ds), 1);
  ct_dataset_free(ds);
}

typedef struct reader_job {
  const ct_dataset *ds;
  uint8_t *pixels; /* size * 192 bytes: every example, read by this thread */
  int32_t *labels;
  int64_t shift; /* where this thread starts */
  int failures;
} reader_job;

static void *read_all(void *p) {
  reader_job *job = p;
  const int64_t n = ct_dataset_size(job->ds);
  for (int64_t k = 0; k < n; ++k) {
    const int64_t i = (k + job->shift) % n; /* another order per thread */
    ct_status st = CT_STATUS_INIT;
    job->failures += ct_dataset_read(job->ds, i, job->pixels + i * 192, &job->labels[i], &st);
  }
  return NULL;
}

/* Several threads reading one dataset at once read what one thread reads. */
static void test_reads_from_threads(void **state) {
  (void)state;
  enum { THREADS = 4 };
  char dir[512];
  path_of(dir, sizeof dir, "tfrecord");
  ct_dataset_read_options o = options_8x8(5);
  o.label_offset = 1;
  ct_status st = CT_STATUS_INIT;
  ct_dataset *ds = ct_dataset_open_tfrecord(dir, 1, &o, &st);
  if (ds == NULL) fail_msg("%s", st.message);
  const int64_t n = ct_dataset_size(ds);
  reader_job jobs[THREADS];
  pthread_t threads[THREADS];
  for (int t = 0; t < THREADS; ++t) {
    jobs[t] = (reader_job){ds, calloc((size_t)n, 192), calloc((size_t)n, sizeof(int32_t)), t, 0};
    assert_int_equal(pthread_create(&threads[t], NULL, read_all, &jobs[t]), 0);
  }
  for (int t = 0; t < THREADS; ++t) assert_int_equal(pthread_join(threads[t], NULL), 0);
  for (int t = 0; t < THREADS; ++t) {
    assert_int_equal(jobs[t].failures, 0);
    assert_memory_equal(jobs[t].pixels, jobs[0].pixels, (size_t)n * 192);
    assert_memory_equal(jobs[t].labels, jobs[0].labels, (size_t)n * sizeof(int32_t));
  }
  for (int t = 0; t < THREADS; ++t) {
    free(jobs[t].pixels);
    free(jobs[t].labels);
  }
  ct_dataset_free(ds);
}

/* Opening (and, when open succeeds, reading every example of) bad/<sub>
 * fails with code and a message holding each needle; with skip_bad_examples
 * it succeeds and skips `skipped` examples. */
static void expect_bad(const char *sub, const char *kind, int train, ct_code code,
                       const char *const *needles, int64_t skipped) {
  char dir[512];
  snprintf(dir, sizeof dir, "%s/bad/%s", g_dir, sub);
  for (int skip = 0; skip < 2; ++skip) {
    ct_dataset_read_options o = options_8x8(5);
    o.label_offset = 1;
    o.skip_bad_examples = skip;
    FILE *log = tmpfile();
    o.log = log;
    ct_status st = CT_STATUS_INIT;
    ct_dataset *ds = strcmp(kind, "cifar") == 0 ? ct_dataset_open_cifar(dir, 10, train, &o, &st)
                     : strcmp(kind, "folder") == 0
                         ? ct_dataset_open_image_folder(dir, train, &o, &st)
                         : ct_dataset_open_tfrecord(dir, train, &o, &st);
    uint8_t px[32 * 32 * 3];
    int32_t label;
    for (int64_t i = 0; ds && i < ct_dataset_size(ds) && st.code == CT_OK; ++i)
      ct_dataset_read(ds, i, px, &label, &st);
    if (!skip) {
      if (st.code != code) fail_msg("%s: got %s (%s)", sub, ct_code_name(st.code), st.message);
      for (int k = 0; needles[k]; ++k)
        if (strstr(st.message, needles[k]) == NULL)
          fail_msg("%s: the message lacks '%s': %s", sub, needles[k], st.message);
    } else {
      if (st.code != CT_OK) fail_msg("%s, skipping: %s", sub, st.message);
      assert_int_equal(ct_dataset_skipped(ds), skipped);
      char text[4096] = "";
      rewind(log);
      size_t len = fread(text, 1, sizeof text - 1, log);
      text[len] = '\0';
      if (strstr(text, "ctower: warning: ") == NULL) fail_msg("%s: no warning: %s", sub, text);
    }
    fclose(log);
    ct_dataset_free(ds);
  }
}

static void test_bad_cifar(void **state) {
  (void)state;
  expect_bad("cifar_truncated", "cifar", 0, CT_DATA_LOSS,
             (const char *const[]){"test_batch.bin", "not a whole number", "truncated",
                                   "skip_bad_examples", NULL},
             1);
  expect_bad(
      "cifar_label", "cifar", 1, CT_DATA_LOSS,
      (const char *const[]){"data_batch_2.bin", "record 1 (byte 3073) has label 12", "0..9", NULL},
      1);
}

/* Out of file descriptors, a CIFAR file cannot be opened: the message says
 * why, not that it does not exist. */
static void test_cifar_too_many_open_files(void **state) {
  (void)state;
  char dir[512];
  path_of(dir, sizeof dir, "cifar10");
  ct_test_descriptors d;
  ct_test_descriptors_use_up(&d);
  ct_status st = CT_STATUS_INIT;
  ct_dataset *ds = ct_dataset_open_cifar(dir, 10, 1, NULL, &st);
  ct_test_descriptors_free(&d);
  assert_null(ds);
  assert_int_equal(st.code, CT_RESOURCE_EXHAUSTED);
  const char *const needles[] = {"data_batch_1.bin", "Too many open files", "ulimit -n", NULL};
  for (int k = 0; needles[k]; ++k)
    if (strstr(st.message, needles[k]) == NULL)
      fail_msg("the message lacks '%s': %s", needles[k], st.message);
}

static void test_bad_images(void **state) {
  (void)state;
  expect_bad("jpeg_corrupt", "folder", 1, CT_DATA_LOSS,
             (const char *const[]){"train/dogs/a.jpg", "corrupt JPEG", NULL}, 1);
  expect_bad("png_corrupt", "folder", 1, CT_DATA_LOSS,
             (const char *const[]){"train/cats/a.png", "corrupt PNG", NULL}, 1);
  expect_bad("not_image", "folder", 1, CT_DATA_LOSS,
             (const char *const[]){"train/dogs/c.jpg", "neither a JPEG nor a PNG", NULL}, 1);
  expect_bad("other_file", "folder", 1, CT_DATA_LOSS,
             (const char *const[]){"train/cats/notes.txt", "not a .jpg, .jpeg or .png", NULL}, 1);
  expect_bad(
      "cmyk", "folder", 1, CT_DATA_LOSS,
      (const char *const[]){"train/dogs/c.jpg", "4 color components", "cannot convert", NULL}, 1);
  expect_bad("empty_class", "folder", 1, CT_DATA_LOSS,
             (const char *const[]){"train/emus", "holds no", NULL}, 0);
}

static void test_test_class_missing_from_train(void **state) {
  (void)state;
  char dir[512];
  snprintf(dir, sizeof dir, "%s/bad/test_class", g_dir);
  ct_dataset_read_options o = options_8x8(0);
  ct_status st = CT_STATUS_INIT;
  assert_null(ct_dataset_open_image_folder(dir, 0, &o, &st));
  assert_int_equal(st.code, CT_NOT_FOUND);
  assert_non_null(strstr(st.message, "'yaks'"));
  ct_status_clear(&st);
  path_of(dir, sizeof dir, "nowhere");
  assert_null(ct_dataset_open_image_folder(dir, 1, &o, &st));
  assert_int_equal(st.code, CT_NOT_FOUND);
  assert_non_null(strstr(st.message, "nowhere/train"));
}

static void test_bad_tfrecord(void **state) {
  (void)state;
  expect_bad("tfrecord_data_crc", "tfrecord", 1, CT_DATA_LOSS,
             (const char *const[]){"train-00000-of-00002", "fails its CRC", "at byte", NULL}, 1);
  expect_bad("tfrecord_length_crc", "tfrecord", 1, CT_DATA_LOSS,
             (const char *const[]){"train-00001-of-00002", "length of the record at byte",
                                   "fails its CRC", NULL},
             1);
  expect_bad("tfrecord_truncated", "tfrecord", 0, CT_DATA_LOSS,
             (const char *const[]){"validation-00000-of-00001", "truncated", NULL}, 1);
  expect_bad("tfrecord_missing", "tfrecord", 1, CT_DATA_LOSS,
             (const char *const[]){"train-00001-of-00002' record 0 (byte 0)",
                                   "no feature 'image/class/label'", NULL},
             1);
  expect_bad("tfrecord_label", "tfrecord", 1, CT_DATA_LOSS,
             (const char *const[]){"train-00001-of-00002' record 0", "label 99",
                                   "dataset.num_classes", NULL},
             1);
  char dir[512];
  path_of(dir, sizeof dir, "cifar10");
  ct_dataset_read_options o = options_8x8(5);
  ct_status st = CT_STATUS_INIT;
  assert_null(ct_dataset_open_tfrecord(dir, 1, &o, &st));
  assert_int_equal(st.code, CT_NOT_FOUND);
  assert_non_null(strstr(st.message, "train-*"));
}

/* A record's bad image: its place ('file' record N (byte B)) said once,
 * quoted once. */
static void test_tfrecord_image_error_says_where_once(void **state) {
  (void)state;
  expect_bad("tfrecord_image", "tfrecord", 1, CT_DATA_LOSS,
             (const char *const[]){"train-00001-of-00002' record 0 (byte 0) is a corrupt JPEG "
                                   "image",
                                   NULL},
             1);
  char dir[512];
  snprintf(dir, sizeof dir, "%s/bad/tfrecord_image", g_dir);
  ct_dataset_read_options o = options_8x8(5);
  o.label_offset = 1;
  ct_status st = CT_STATUS_INIT;
  ct_dataset *ds = ct_dataset_open_tfrecord(dir, 1, &o, &st);
  assert_non_null(ds);
  uint8_t px[8 * 8 * 3];
  int32_t label;
  for (int64_t i = 0; i < ct_dataset_size(ds) && st.code == CT_OK; ++i)
    ct_dataset_read(ds, i, px, &label, &st);
  printf("  %s\n", st.message);
  assert_null(strstr(st.message, "''"));
  assert_int_equal(st.message[0], '\'');
  ct_dataset_free(ds);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cifar10_reads_back),
      cmocka_unit_test(test_cifar100_fine_and_coarse),
      cmocka_unit_test(test_image_folder_reads_back),
      cmocka_unit_test(test_image_folder_converts),
      cmocka_unit_test(test_tfrecord_reads_back),
      cmocka_unit_test(test_reads_from_threads),
      cmocka_unit_test(test_bad_cifar),
      cmocka_unit_test(test_cifar_too_many_open_files),
      cmocka_unit_test(test_bad_images),
      cmocka_unit_test(test_test_class_missing_from_train),
      cmocka_unit_test(test_bad_tfrecord),
      cmocka_unit_test(test_tfrecord_image_error_says_where_once),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
