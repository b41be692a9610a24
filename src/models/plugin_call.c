/* Guarded calls into a model library's code, and reads of its memory that
 * cannot crash.
 *
 * A model library is the user's code running inside ctower: its
 * constructors run when it is loaded, its build functions when a graph is
 * built. ctower cannot stop such code from crashing or calling exit(), but
 * it can say whose code did. While a call is in progress, handlers of the
 * fatal signals and an atexit handler name the library and the call; they
 * need to find that text without any argument, so it is the one piece of
 * process-wide state here, set and cleared around each call (calls come
 * from the thread that builds the graph, one at a time).
 *
 * Reads of memory the library hands over (its exports table, the strings
 * it points to) go through process_vm_readv on this very process, which
 * reports EFAULT for an address that is not mapped instead of faulting. */
#include "models/plugin_call.h"

#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

static const int k_fatal_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
enum { FATAL_SIGNALS = sizeof k_fatal_signals / sizeof k_fatal_signals[0] };

static struct {
  int active;
  char where[768];          /* "model library 'lib.so' ... in WHAT" */
  struct sigaction saved[FATAL_SIGNALS];
} g_call;

/* write(2) of a whole string, as a signal handler may. */
static void say(const char *text) {
  size_t left = strlen(text);
  while (left > 0) {
    const ssize_t n = write(STDERR_FILENO, text, left);
    if (n <= 0) return;
    text += n, left -= (size_t)n;
  }
}

static const char *signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV (a bad memory access)";
    case SIGBUS: return "SIGBUS (a bad memory access)";
    case SIGILL: return "SIGILL (an illegal instruction)";
    case SIGFPE: return "SIGFPE (an arithmetic fault)";
    default: return "SIGABRT (it aborted)";
  }
}

static void on_fatal_signal(int sig) {
  say("ctower: error: ");
  say(g_call.where);
  say(" crashed with ");
  say(signal_name(sig));
  say("; the fault is in that library's code: fix or rebuild it\n");
  signal(sig, SIG_DFL);
  raise(sig);
}

static void on_exit_during_call(void) {
  if (!g_call.active) return;
  say("ctower: error: ");
  say(g_call.where);
  say(" called exit(), ending ctower before it trained anything; a model library must return "
      "to ctower, not exit\n");
  _exit(1);
}

void ct_plugin_call_begin(const char *library, const char *what) {
  static int exit_handler_registered;
  if (!exit_handler_registered) exit_handler_registered = atexit(on_exit_during_call) == 0;
  snprintf(g_call.where, sizeof g_call.where, "model library '%s' (in %s)", library, what);
  struct sigaction handler;
  memset(&handler, 0, sizeof handler);
  handler.sa_handler = on_fatal_signal;
  sigemptyset(&handler.sa_mask);
  for (int i = 0; i < FATAL_SIGNALS; ++i)
    sigaction(k_fatal_signals[i], &handler, &g_call.saved[i]);
  g_call.active = 1;
}

void ct_plugin_call_end(void) {
  g_call.active = 0;
  for (int i = 0; i < FATAL_SIGNALS; ++i) sigaction(k_fatal_signals[i], &g_call.saved[i], NULL);
}

/* Copies n bytes at p into out; the bytes copied (fewer at an unmapped page). */
static size_t copy_mapped(const void *p, void *out, size_t n) {
  struct iovec local = {out, n}, remote = {(void *)p, n};
  const ssize_t got = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
  return got > 0 ? (size_t)got : 0;
}

int ct_plugin_copy(const void *p, void *out, size_t n) {
  return p != NULL && copy_mapped(p, out, n) == n;
}

int ct_plugin_copy_string(const char *p, size_t max_length, char *out, size_t size) {
  char buffer[256];
  if (p == NULL) return 0;
  for (size_t read = 0; read <= max_length;) {
    size_t want = max_length + 1 - read;
    if (want > sizeof buffer) want = sizeof buffer;
    const size_t got = copy_mapped(p + read, buffer, want);
    if (got == 0) return 0;
    const char *end = memchr(buffer, '\0', got);
    const size_t here = end ? (size_t)(end - buffer) : got;
    if (out && read < size) {
      const size_t keep = here < size - 1 - read ? here : size - 1 - read;
      memcpy(out + read, buffer, keep);
      out[read + keep] = '\0';
    }
    if (end) return 1;
    read += got;
  }
  return 0;
}

const char *ct_plugin_object_of(const void *p) {
  Dl_info info;
  return p && dladdr(p, &info) && info.dli_fname ? info.dli_fname : NULL;
}
