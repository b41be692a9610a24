/* Shared helpers for ctower's cmocka tests. */
#ifndef CTOWER_TEST_SUPPORT_H
#define CTOWER_TEST_SUPPORT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ctower/ctower.h"

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
/* Writes bytes to path; returns 0 on success. */
int ct_test_write_file(const char *path, const void *data, size_t size);
/* Deterministic uniform floats in [lo, hi). */
void ct_test_fill_uniform(float *out, int64_t n, uint64_t seed, float lo, float hi);
/* Largest |a-b| / max(1, |b|) over n values. */
double ct_test_max_rel_diff(const float *a, const float *b, int64_t n);

#endif
