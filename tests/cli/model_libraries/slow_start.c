/* A model library whose loading takes a minute, as a start-up that waits
 * on something slow: a signal then must end `ctower train` at once
 * (tests/cli/special_files.sh). It exports no models. */
#include <time.h>

__attribute__((constructor)) static void take_a_minute(void) {
  struct timespec now, until;
  clock_gettime(CLOCK_MONOTONIC, &until);
  until.tv_sec += 60;
  do { /* a caught signal cuts a sleep short: sleep again until the minute is up */
    struct timespec second = {1, 0};
    nanosleep(&second, NULL);
    clock_gettime(CLOCK_MONOTONIC, &now);
  } while (now.tv_sec < until.tv_sec);
}
