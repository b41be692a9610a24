/* The monotonic clock, private to ctower: step times, timeouts and waits
 * measured on it are not moved by changes to the wall clock. */
#ifndef CTOWER_CORE_CLOCK_H
#define CTOWER_CORE_CLOCK_H

#include <time.h>

/* Seconds on CLOCK_MONOTONIC (from an arbitrary origin). */
static inline double ct_monotonic_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#endif
