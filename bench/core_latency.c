/* How long a cache line takes to go from one core to another and back: two
 * threads, pinned to the first two cores this process may use, hand a
 * counter to each other through one shared line. A training step at several
 * threads waits on such hand-offs at every barrier and reads data other
 * cores wrote, so its time depends on this figure as well as on the FMA
 * peak. On a virtual machine it can change while the machine runs, as the
 * host moves the virtual CPUs: on a 2-core Zen 5 it went between 75-140 ns
 * (cores that share a cache) and 350-435 ns for minutes at a time, and mlp
 * at 2 threads took 0.38-0.41 ms a step in the first case and 0.56-0.61 in
 * the second.
 *
 *   core_latency        prints one JSON line:
 *   {"cpus": [0, 1], "round_trip_ns": 92.4}
 *
 * The figure is the median of RUNS runs of HAND_OFFS round trips each.
 * With one core only, it prints the reason and exits 1. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/median.h"

enum { HAND_OFFS = 100 * 1000, RUNS = 5 };

/* The counter, on a cache line of its own: the first thread makes it odd,
 * the second even. */
static _Alignas(64) atomic_long counter;
static _Alignas(64) int cpus[2];

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

/* Waits for each odd value and answers with the next even one (on the
 * second core: it starts with the affinity its creator had then). */
static void *answer(void *arg) {
  (void)arg;
  for (long i = 0; i < RUNS * (long)HAND_OFFS; ++i) {
    while (atomic_load_explicit(&counter, memory_order_acquire) != 2 * i + 1) {
    }
    atomic_store_explicit(&counter, 2 * i + 2, memory_order_release);
  }
  return NULL;
}

int main(int argc, char **argv) {
  (void)argv;
  if (argc != 1) {
    fprintf(stderr, "usage: core_latency\n");
    return 2;
  }
  cpu_set_t allowed;
  int found = 0;
  if (sched_getaffinity(0, sizeof allowed, &allowed) == 0)
    for (int cpu = 0; cpu < CPU_SETSIZE && found < 2; ++cpu)
      if (CPU_ISSET(cpu, &allowed)) cpus[found++] = cpu;
  if (found < 2) {
    fprintf(stderr, "core_latency: this process may use one core only: nothing to measure\n");
    return 1;
  }
  pthread_t other;
  if (pin(cpus[1]) != 0 || pthread_create(&other, NULL, answer, NULL) != 0 || pin(cpus[0]) != 0) {
    fprintf(stderr, "core_latency: cannot pin threads to CPUs %d and %d\n", cpus[0], cpus[1]);
    return 1;
  }
  double round_trip[RUNS];
  for (int run = 0; run < RUNS; ++run) {
    const double t0 = now();
    for (long i = (long)run * HAND_OFFS; i < (long)(run + 1) * HAND_OFFS; ++i) {
      atomic_store_explicit(&counter, 2 * i + 1, memory_order_release);
      while (atomic_load_explicit(&counter, memory_order_acquire) != 2 * i + 2) {
      }
    }
    round_trip[run] = (now() - t0) / HAND_OFFS * 1e9;
  }
  pthread_join(other, NULL);
  printf("{\"cpus\": [%d, %d], \"round_trip_ns\": %.1f}\n", cpus[0], cpus[1],
         ct_median(round_trip, RUNS));
  return 0;
}
