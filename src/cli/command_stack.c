/* The stack the command runs on.
 *
 * Planning a step and building a model's towers keep large option structs
 * in their frames, and the threads of ctower's devices, oneDNN's and
 * OpenMP's kernels take the process's default thread stack, which glibc
 * sizes from the stack limit. A small `ulimit -s` would shrink them all and
 * end the command in SIGSEGV. Where the limit is below COMMAND_STACK_BYTES,
 * the command runs on a thread of its own with that stack, and it becomes
 * the default of every thread created after it: a small limit then costs
 * nothing. Under the usual limit (8 MiB) nothing changes. */
#include "cli/command_stack.h"

#include <pthread.h>
#include <stdio.h>
#include <sys/resource.h>

enum { COMMAND_STACK_BYTES = 8 << 20 };

typedef struct command_call {
  int (*fn)(int, char **);
  int argc;
  char **argv;
  int rc;
} command_call;

static void *call_command(void *data) {
  command_call *c = data;
  c->rc = c->fn(c->argc, c->argv);
  return NULL;
}

/* Whether the calling thread's stack may grow to COMMAND_STACK_BYTES. */
static int stack_limit_suffices(void) {
  struct rlimit limit;
  return getrlimit(RLIMIT_STACK, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY ||
         limit.rlim_cur >= COMMAND_STACK_BYTES;
}

int ct_cli_run_on_command_stack(int (*fn)(int, char **), int argc, char **argv) {
  if (stack_limit_suffices()) return fn(argc, argv);
  command_call c = {fn, argc, argv, 1};
  pthread_attr_t attr;
  pthread_t thread;
  int started = pthread_attr_init(&attr) == 0;
  if (started) {
    started = pthread_attr_setstacksize(&attr, COMMAND_STACK_BYTES) == 0 &&
              pthread_setattr_default_np(&attr) == 0 &&
              pthread_create(&thread, &attr, call_command, &c) == 0;
    pthread_attr_destroy(&attr);
  }
  if (!started) {
    fprintf(stderr,
            "warning: the stack limit (ulimit -s) is below %d MiB and no thread with a larger "
            "stack could be started; ctower may run out of stack (raise it with ulimit -s "
            "8192)\n",
            COMMAND_STACK_BYTES >> 20);
    return fn(argc, argv);
  }
  pthread_join(thread, NULL);
  return c.rc;
}
