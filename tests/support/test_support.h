/* Shared helpers for ctower's cmocka tests. */
#ifndef CTOWER_TEST_SUPPORT_H
#define CTOWER_TEST_SUPPORT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <cmocka.h>

#include "ctower/ctower.h"
#include "trainer/classifier.h"

/* Fails the test with the status message unless the status is OK. */
#define assert_status_ok(status_ptr)                                      \
  do {                                                                    \
    if ((status_ptr)->code != CT_OK) {                                    \
      print_error("status %s: %s\n", ct_code_name((status_ptr)->code),    \
                  (status_ptr)->message);                                 \
      fail();                                                             \
    }                                                                     \
  } while (0)

/* A fresh temporary directory for one test; the caller frees the string. */
char *ct_test_tmpdir(void);
/* Removes dir and everything in it, and frees the string. */
void ct_test_remove_dir(char *dir);
/* Every file descriptor in use, so that the next open fails with EMFILE:
 * the soft limit on open files lowered to 64 and copies of stdin opened up
 * to it. ct_test_descriptors_free closes them and restores the limit. */
typedef struct ct_test_descriptors {
  struct rlimit old; /* the limit before */
  int fds[64], n;    /* the copies opened */
} ct_test_descriptors;
void ct_test_descriptors_use_up(ct_test_descriptors *d);
void ct_test_descriptors_free(ct_test_descriptors *d);
/* Writes bytes to path; returns 0 on success. */
int ct_test_write_file(const char *path, const void *data, size_t size);
/* Deterministic uniform floats in [lo, hi). */
void ct_test_fill_uniform(float *out, int64_t n, uint64_t seed, float lo, float hi);
/* Runs training step `step` of the towers (c->step) on a batch of n
 * 28x28x1 images, uniform in [0, 1) and seeded by the step, with labels
 * (7 i + step) % 10, split by `sizes` (NULL: even), at learning rate lr.
 * Returns 0 or fills status. */
int ct_test_tower_step(ct_session *session, const ct_classifier_towers *c, int step, int64_t n,
                       const int64_t *sizes, float lr, ct_status *status);

/* Creates a session of g under options o with log_device_placement on and
 * the log captured into *log_text (the caller frees it); fails the test
 * unless the session is created. */
ct_session *ct_test_session_logging(ct_graph *g, ct_session_options o, char **log_text);
/* Fails the test, quoting text, unless each of the n strings occurs in it. */
void ct_test_expect_substrings(const char *text, const char *const *expected, size_t n);

/* Largest |a-b| / max(1, |b|) over n values. */
/* The graph's trainable parameters; *batch_norms (when not NULL): its
 * batch norms (moving means). */
int64_t ct_test_trainable_parameters(const ct_graph *g, int *batch_norms);

double ct_test_max_rel_diff(const float *a, const float *b, int64_t n);
/* Largest |got - want| / max(1, |want|) over n values against a double
 * reference (INFINITY where one is NaN), and in *at its index. */
double ct_test_worst_against(const float *got, const double *want, int64_t n, int64_t *at);
/* A session of g on the CPU alone, on `threads` threads; fails the test
 * when it cannot be made. */
ct_session *ct_test_cpu_session(ct_graph *g, int threads);

#endif
