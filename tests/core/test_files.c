/* core/files: reading opens only regular files, at once whatever is at the
 * path (a FIFO, a folder, a loop of links), and says the cause of a
 * failure; writing replaces the file a path leads to through a temporary
 * beside it, refuses folders and FIFOs untouched, and writes nothing
 * anywhere else. Each test runs under an alarm: a hang fails it. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/files.h"
#include "test_support.h"

static const ct_file_role k_role = {"test file", "give another path"};

static char *path_in(const char *dir, const char *name) {
  char *p = malloc(strlen(dir) + strlen(name) + 2);
  sprintf(p, "%s/%s", dir, name);
  return p;
}

static void expect_message(const ct_status *st, ct_code code, const char *const *needles) {
  if (st->code != code) fail_msg("got %s: %s", ct_code_name(st->code), st->message);
  for (int i = 0; needles[i]; ++i)
    if (strstr(st->message, needles[i]) == NULL)
      fail_msg("the message lacks '%s': %s", needles[i], st->message);
}

/* The contents of path, or "" when it cannot be read. */
static const char *contents(const char *path) {
  static char text[256];
  text[0] = '\0';
  FILE *f = fopen(path, "rb");
  if (f == NULL) return text;
  text[fread(text, 1, sizeof text - 1, f)] = '\0';
  fclose(f);
  return text;
}

static int entries(const char *dir) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "ls -A '%s' | wc -l", dir);
  FILE *p = popen(cmd, "r");
  int n = -1;
  if (p == NULL || fscanf(p, "%d", &n) != 1) n = -1;
  if (p) pclose(p);
  return n;
}

static int setup(void **state) {
  (void)state;
  alarm(60); /* a test that hangs on a FIFO fails instead */
  return 0;
}

/* ---- reading ------------------------------------------------------------------------- */

static void test_reads_a_regular_file(void **state) {
  (void)state;
  char *dir = ct_test_tmpdir(), *file = path_in(dir, "a.txt");
  assert_int_equal(ct_test_write_file(file, "hello", 5), 0);
  ct_status st = CT_STATUS_INIT;
  size_t size = 0;
  unsigned char *data = ct_file_read_all(file, &k_role, &size, &st);
  assert_status_ok(&st);
  assert_int_equal(size, 5);
  assert_string_equal((char *)data, "hello"); /* NUL-terminated */
  free(data);
  FILE *f = ct_file_fopen_read(file, &k_role, &st);
  assert_non_null(f);
  assert_int_equal(fgetc(f), 'h');
  fclose(f);
  struct stat sb;
  const int fd = ct_file_open_read(file, &k_role, &sb, &st);
  assert_true(fd >= 0);
  assert_int_equal(sb.st_size, 5);
  assert_int_equal(fcntl(fd, F_GETFL) & O_NONBLOCK, 0); /* blocking again */
  close(fd);
  free(file);
  ct_test_remove_dir(dir);
}

/* A FIFO without a writer, a folder, a missing file and a loop of links:
 * each an error at once, saying what is there. */
static void test_refuses_what_is_not_a_file(void **state) {
  (void)state;
  char *dir = ct_test_tmpdir();
  char *fifo = path_in(dir, "fifo"), *loop = path_in(dir, "loop"), *missing = path_in(dir, "no");
  assert_int_equal(mkfifo(fifo, 0644), 0);
  assert_int_equal(symlink("loop", loop), 0);
  ct_status st = CT_STATUS_INIT;
  assert_int_equal(ct_file_open_read(fifo, &k_role, NULL, &st), -1);
  expect_message(&st, CT_INVALID_ARGUMENT,
                 (const char *const[]){"test file '", "fifo' is a FIFO, not a regular file",
                                       "give another path", NULL});
  ct_status_clear(&st);
  size_t size = 1;
  assert_null(ct_file_read_all(dir, &k_role, &size, &st));
  assert_int_equal(size, 0);
  expect_message(&st, CT_INVALID_ARGUMENT,
                 (const char *const[]){dir, "is a directory, not a regular file", NULL});
  ct_status_clear(&st);
  assert_null(ct_file_fopen_read(missing, &k_role, &st));
  expect_message(&st, CT_NOT_FOUND,
                 (const char *const[]){missing, "not found: No such file or directory", NULL});
  ct_status_clear(&st);
  assert_int_equal(ct_file_open_read(loop, &k_role, NULL, &st), -1);
  expect_message(&st, CT_INVALID_ARGUMENT,
                 (const char *const[]){loop, "Too many levels of symbolic links", NULL});
  assert_true(ct_file_present(loop)); /* a loop is something there */
  assert_false(ct_file_present(missing));
  free(fifo), free(loop), free(missing);
  ct_test_remove_dir(dir);
}

/* Out of file descriptors: the message says so, not that the file is
 * missing. */
static void test_too_many_open_files(void **state) {
  (void)state;
  char *dir = ct_test_tmpdir(), *file = path_in(dir, "a.txt");
  assert_int_equal(ct_test_write_file(file, "x", 1), 0);
  ct_test_descriptors d;
  ct_test_descriptors_use_up(&d);
  ct_status st = CT_STATUS_INIT;
  const int fd = ct_file_open_read(file, &k_role, NULL, &st);
  ct_test_descriptors_free(&d);
  assert_int_equal(fd, -1);
  expect_message(&st, CT_RESOURCE_EXHAUSTED,
                 (const char *const[]){file, "Too many open files", "ulimit -n", NULL});
  free(file);
  ct_test_remove_dir(dir);
}

/* ---- writing ------------------------------------------------------------------------- */

static int write_text(const char *path, const char *text, ct_status *st) {
  ct_file_writer w;
  if (ct_file_writer_open(&w, path, &k_role, st)) return 1;
  if (ct_file_writer_write(&w, text, strlen(text), st)) {
    ct_file_writer_discard(&w);
    return 1;
  }
  return ct_file_writer_commit(&w, st);
}

/* A new file, a file replaced (keeping its permissions), a link followed:
 * the file it leads to is replaced and the link stays; no temporary is
 * left, and nothing else in the folder changes. */
static void test_replaces_the_file_a_path_leads_to(void **state) {
  (void)state;
  char *dir = ct_test_tmpdir();
  char *file = path_in(dir, "sub/new.txt"), *real = path_in(dir, "real.txt");
  char *link = path_in(dir, "link.txt");
  ct_status st = CT_STATUS_INIT;
  assert_int_equal(write_text(file, "one", &st), 0); /* its folder made too */
  assert_string_equal(contents(file), "one");
  assert_int_equal(ct_test_write_file(real, "old", 3), 0);
  assert_int_equal(chmod(real, 0600), 0);
  assert_int_equal(symlink("real.txt", link), 0);
  assert_int_equal(write_text(link, "new", &st), 0);
  assert_status_ok(&st);
  struct stat sb;
  assert_int_equal(lstat(link, &sb), 0);
  assert_true(S_ISLNK(sb.st_mode));
  assert_int_equal(stat(real, &sb), 0);
  assert_int_equal(sb.st_mode & 0777, 0600);
  assert_string_equal(contents(real), "new");
  assert_int_equal(entries(dir), 3); /* sub, real.txt, link.txt: no temporary */
  free(file), free(real), free(link);
  ct_test_remove_dir(dir);
}

/* A FIFO, a folder, a link to a FIFO, a loop of links: refused before
 * anything is created, each left as it was. */
static void test_refuses_to_replace_what_is_not_a_file(void **state) {
  (void)state;
  char *dir = ct_test_tmpdir();
  char *fifo = path_in(dir, "fifo"), *folder = path_in(dir, "folder");
  char *to_fifo = path_in(dir, "to_fifo"), *loop = path_in(dir, "loop");
  assert_int_equal(mkfifo(fifo, 0644), 0);
  assert_int_equal(mkdir(folder, 0755), 0);
  assert_int_equal(symlink("fifo", to_fifo), 0);
  assert_int_equal(symlink("loop", loop), 0);
  const struct {
    const char *path, *says;
  } cases[] = {{fifo, "is a FIFO, not a regular file"},
               {to_fifo, "fifo' is a FIFO, not a regular file"},
               {folder, "is a directory, not a regular file"},
               {loop, "symbolic links lead from it"}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    ct_status st = CT_STATUS_INIT;
    assert_int_equal(write_text(cases[i].path, "x", &st), 1);
    expect_message(&st, CT_INVALID_ARGUMENT,
                   (const char *const[]){"cannot write test file '", cases[i].path, cases[i].says,
                                         "give another path", NULL});
  }
  struct stat sb;
  assert_int_equal(lstat(fifo, &sb), 0);
  assert_true(S_ISFIFO(sb.st_mode));
  assert_int_equal(entries(folder), 0);
  assert_int_equal(entries(dir), 4);
  free(fifo), free(folder), free(to_fifo), free(loop);
  ct_test_remove_dir(dir);
}

/* The temporary is a new file beside the target, never a fixed name: links
 * planted at the names a writer might use are not written through. */
static void test_never_writes_through_a_planted_link(void **state) {
  (void)state;
  char *dir = ct_test_tmpdir();
  char *victim = path_in(dir, "victim"), *target = path_in(dir, "out.json");
  assert_int_equal(ct_test_write_file(victim, "victim", 6), 0);
  const char *const planted[] = {"out.json.part", "out.json.tmp", ".out.json.tmp", "out.json~",
                                 "out.json.new"};
  for (size_t i = 0; i < sizeof planted / sizeof planted[0]; ++i) {
    char *p = path_in(dir, planted[i]);
    assert_int_equal(symlink("victim", p), 0);
    free(p);
  }
  ct_status st = CT_STATUS_INIT;
  ct_file_writer w;
  assert_int_equal(ct_file_writer_open(&w, target, &k_role, &st), 0);
  const char *base = strrchr(w.temp, '/') + 1;
  assert_true(ct_file_is_temporary_of(base, "out.json"));
  assert_int_equal(ct_file_writer_write(&w, "[]", 2, &st), 0);
  ct_file_writer_discard(&w); /* discarded: nothing at the target */
  assert_false(ct_file_present(target));
  assert_int_equal(write_text(target, "{}", &st), 0);
  assert_string_equal(contents(target), "{}");
  assert_string_equal(contents(victim), "victim");
  assert_int_equal(entries(dir), 7);
  /* a file created new is never opened through a link either */
  char *link = path_in(dir, "out.json.part");
  errno = 0;
  assert_null(ct_file_create_new(link));
  assert_int_equal(errno, EEXIST);
  assert_string_equal(contents(victim), "victim");
  free(link), free(victim), free(target);
  ct_test_remove_dir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_reads_a_regular_file, setup),
      cmocka_unit_test_setup(test_refuses_what_is_not_a_file, setup),
      cmocka_unit_test_setup(test_too_many_open_files, setup),
      cmocka_unit_test_setup(test_replaces_the_file_a_path_leads_to, setup),
      cmocka_unit_test_setup(test_refuses_to_replace_what_is_not_a_file, setup),
      cmocka_unit_test_setup(test_never_writes_through_a_planted_link, setup),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
