/* Where ctower looks for cuBLAS, cuDNN and NCCL (device/cuda/library_search.h),
 * on a tree of folders made here: the folders the user names, then the
 * system's library path, then the CUDA toolkits (newest first, each file
 * once), then the NVIDIA wheels of Python environments; a library is loaded
 * from the first place that has it, and a missing one is an error that says
 * where the search looked. Built with CUDA only (else skipped). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_support.h"

#ifdef CTOWER_HAVE_CUDA
#include <dlfcn.h>

#include "device/cuda/library_search.h"

static char *root; /* the tree of this test */

/* root/relative, made with its parents: a folder, or (file) a file, a copy
 * of `from` or empty. */
static void make(const char *relative, int file, const char *from) {
  char path[1024], cmd[4200];
  snprintf(path, sizeof path, "%s/%s", root, relative);
  if (!file)
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", path);
  else if (from)
    snprintf(cmd, sizeof cmd, "mkdir -p \"$(dirname '%s')\" && cp '%s' '%s'", path, from, path);
  else
    snprintf(cmd, sizeof cmd, "mkdir -p \"$(dirname '%s')\" && touch '%s'", path, path);
  assert_int_equal(system(cmd), 0);
}

static const char *at(const char *relative) {
  static char paths[8][1024];
  static int next;
  char *p = paths[next++ % 8];
  snprintf(p, 1024, "%s/%s", root, relative);
  return p;
}

typedef struct visits {
  char seen[16][1024];
  int n;
} visits;

static int record(const char *candidate, void *context) {
  visits *v = context;
  if (v->n < 16) snprintf(v->seen[v->n++], sizeof v->seen[0], "%s", candidate);
  return 0;
}

/* A python3 in root/relative/bin, as a virtual environment has. */
static void make_environment(const char *relative) {
  char bin[512];
  snprintf(bin, sizeof bin, "%s/bin/python3", relative);
  make(bin, 1, NULL);
  assert_int_equal(chmod(at(bin), 0755), 0);
}

static void test_the_order_of_the_search(void **state) {
  (void)state;
  root = ct_test_tmpdir();
  const char *file = "libctfake.so.1";
  make("local/cuda-12.8/lib64/libctfake.so.1", 1, NULL);
  make("local/cuda-13.0/targets/x86_64-linux/lib/libctfake.so.1", 1, NULL);
  make("local/cuda-13.0/lib64/libctfake.so.1", 1, NULL);
  /* /usr/local/cuda is a link to a version: its files are offered once */
  assert_int_equal(symlink(at("local/cuda-13.0"), at("local/cuda")), 0);
  make_environment("venv");
  make("venv/lib/python3.12/site-packages/nvidia/cu13/lib/libctfake.so.1", 1, NULL);
  make("venv/lib/python3.12/site-packages/nvidia/cublas/lib/other.so", 1, NULL);
  make("usr/lib/python3/dist-packages/nvidia/nccl/lib/libctfake.so.1", 1, NULL);
  make("nopython/bin", 0, NULL); /* a PATH folder without python3 */
  char path[2048], named[2048];
  snprintf(path, sizeof path, "%s:%s", at("nopython/bin"), at("venv/bin"));
  snprintf(named, sizeof named, "%s:%s", at("mine"), at("also-mine"));
  ct_library_places places = {named, 1, at("local"), path, at("usr")};
  visits v = {.n = 0};
  assert_int_equal(ct_library_search(file, &places, record, &v), 0);
  const char *expected[] = {
      "mine/libctfake.so.1",
      "also-mine/libctfake.so.1",
      NULL, /* the bare name: the system's library path */
      "local/cuda/lib64/libctfake.so.1",
      "local/cuda/targets/x86_64-linux/lib/libctfake.so.1",
      "local/cuda-12.8/lib64/libctfake.so.1",
      "venv/lib/python3.12/site-packages/nvidia/cu13/lib/libctfake.so.1",
      "usr/lib/python3/dist-packages/nvidia/nccl/lib/libctfake.so.1",
  };
  const int n = (int)(sizeof expected / sizeof expected[0]);
  for (int i = 0; i < v.n; ++i) printf("  %d: %s\n", i, v.seen[i]);
  assert_int_equal(v.n, n);
  for (int i = 0; i < n; ++i)
    assert_string_equal(v.seen[i], expected[i] ? at(expected[i]) : file);
  ct_test_remove_dir(root);
}

static int stop_at_second(const char *candidate, void *context) {
  (void)candidate;
  return ++*(int *)context == 2 ? 7 : 0;
}

static void test_the_search_stops_when_asked(void **state) {
  (void)state;
  ct_library_places places = {"/a:/b:/c", 1, NULL, NULL, NULL};
  int calls = 0;
  assert_int_equal(ct_library_search("libx.so", &places, stop_at_second, &calls), 7);
  assert_int_equal(calls, 2);
}

/* The library built beside this test, which the search must find. */
static const char *fake_library(void) {
  static char path[1024];
  const char *bin = getenv("CT_BINARY_DIR");
  snprintf(path, sizeof path, "%s/tests/libfake_cuda_library.so", bin ? bin : ".");
  if (access(path, R_OK) != 0) fail_msg("%s was not built", path);
  return path;
}

static void test_a_library_loads_from_a_python_environment(void **state) {
  (void)state;
  root = ct_test_tmpdir();
  make_environment("torch-env");
  make("torch-env/lib/python3.12/site-packages/nvidia/cudnn/lib/libctfake.so.9", 1,
       fake_library());
  char path_list[1200];
  snprintf(path_list, sizeof path_list, "/nonexistent:%s", at("torch-env/bin"));
  ct_library_places places = {NULL, 1, at("local"), path_list, NULL};
  char path[1024], error[1024] = "";
  void *handle = ct_library_open("libctfake.so.9", &places, path, sizeof path, error, sizeof error);
  if (handle == NULL) fail_msg("not loaded: %s", error);
  assert_string_equal(path, at("torch-env/lib/python3.12/site-packages/nvidia/cudnn/lib/libctfake.so.9"));
  int (*answer)(void) = NULL;
  *(void **)&answer = dlsym(handle, "ct_fake_cuda_library_answer");
  assert_non_null(answer);
  assert_int_equal(answer(), 42);
  dlclose(handle);
  /* a folder the user names comes first */
  make("mine/libctfake.so.9", 1, fake_library());
  places.named = at("mine");
  handle = ct_library_open("libctfake.so.9", &places, path, sizeof path, error, sizeof error);
  assert_non_null(handle);
  assert_string_equal(path, at("mine/libctfake.so.9"));
  dlclose(handle);
  ct_test_remove_dir(root);
}

static void test_a_missing_library_says_where_the_search_looked(void **state) {
  (void)state;
  root = ct_test_tmpdir();
  make_environment("venv");
  make("local/cuda-13.0/lib64", 0, NULL);
  /* one that is there but does not load: its loader's reason is told */
  make("mine/libctmissing.so.9", 1, NULL);
  ct_library_places places = {at("mine"), 1, at("local"), at("venv/bin"), NULL};
  char path[1024], error[1024];
  assert_null(ct_library_open("libctmissing.so.9", &places, path, sizeof path, error, sizeof error));
  printf("  %s\n", error);
  char expected[1024];
  snprintf(expected, sizeof expected,
           "libctmissing.so.9 was not found: looked in CTOWER_CUDA_LIBRARY_PATH (%s), the "
           "system's library path, %s/cuda* and the nvidia/*/lib folders of the Python "
           "environments %s; ",
           at("mine"), at("local"), at("venv"));
  assert_true(strncmp(error, expected, strlen(expected)) == 0);
  assert_non_null(strstr(error, at("mine/libctmissing.so.9")));
  assert_non_null(strstr(error, "file too short"));
  ct_test_remove_dir(root);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_the_order_of_the_search),
      cmocka_unit_test(test_the_search_stops_when_asked),
      cmocka_unit_test(test_a_library_loads_from_a_python_environment),
      cmocka_unit_test(test_a_missing_library_says_where_the_search_looked),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
#else
int main(void) {
  printf("a build without CUDA: nothing to test\n");
  return 77;
}
#endif
