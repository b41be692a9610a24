/* Ctrl-C and SIGTERM while training: the first asks the run to stop after
 * its step (it saves a checkpoint there), a second ends the process at
 * once with the signal's default action, touching nothing. Before the
 * first step there is no work to save, and start-up may be waiting on a
 * slow file or a library: the first signal then ends the process at once
 * too. */
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "trainer/interrupt.h"

static volatile sig_atomic_t g_signal, g_training;
static int g_stopped_by; /* the job's signal, once a run stopped for one */
static struct sigaction g_old_int, g_old_term;

static void on_signal(int sig) {
  if (g_signal || !g_training) { /* now, as if we had never caught it */
    signal(sig, SIG_DFL);
    raise(sig);
    return;
  }
  g_signal = sig;
  static const char message[] =
      "\nctower: stopping after this step to save a checkpoint; send the signal again to quit "
      "at once\n";
  ssize_t ignored = write(STDERR_FILENO, message, sizeof message - 1);
  (void)ignored;
}

void ct_interrupt_install(void) {
  g_signal = 0;
  g_training = 0;
  g_stopped_by = 0;
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, &g_old_int);
  sigaction(SIGTERM, &action, &g_old_term);
}

void ct_interrupt_restore(void) {
  sigaction(SIGINT, &g_old_int, NULL);
  sigaction(SIGTERM, &g_old_term, NULL);
}

void ct_interrupt_training_started(void) { g_training = 1; }

int ct_interrupt_requested(void) { return g_signal; }

/* SIGINT wins: it is what Ctrl-C at mpirun sends, and 130 what a shell
 * reports for it, whichever rank was signalled. */
int ct_interrupt_combine(int a, int b) {
  if (a == SIGINT || b == SIGINT) return SIGINT;
  return a ? a : b;
}

void ct_interrupt_stopped_by(int sig) { g_stopped_by = sig; }

int ct_trainer_interrupt_signal(void) { return g_stopped_by ? g_stopped_by : g_signal; }
