/* CPU devices: a worker thread with its own OpenMP team, pinned to its own
 * cores when there are enough, denormals flushed to zero on every thread of
 * the team (as TensorFlow does: decaying gradients otherwise slow every
 * kernel several times). */
#include <dnnl.h>
#include <omp.h>
#include <pthread.h>
#include <pmmintrin.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <xmmintrin.h>

#include "device/cpu_device.h"

int ct_available_cores(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

/* Pins the calling thread to `count` of the process's cores from `first`. */
static void pin_to_cores(int first, int count) {
  cpu_set_t allowed, mine;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return;
  CPU_ZERO(&mine);
  int seen = 0;
  for (int cpu = 0; cpu < CPU_SETSIZE && seen < first + count; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed)) continue;
    if (seen >= first) CPU_SET(cpu, &mine);
    ++seen;
  }
  if (CPU_COUNT(&mine) > 0) sched_setaffinity(0, sizeof mine, &mine);
}

/* oneDNN's sgemm generates its code on its first call, once per process,
 * and crashes when the memory for that code cannot be had (under a tight
 * ulimit -v: a SIGSEGV, or an exception that aborts the process unwinding
 * through OpenMP's C frames). It is made to do so while the session starts,
 * on this thread, and only once SGEMM_CODE_ROOM can be mapped: running short
 * then is a status, and later an allocation that fails with one. */
enum { SGEMM_CODE_ROOM = 256 << 20 };

static pthread_once_t sgemm_once = PTHREAD_ONCE_INIT;
static int sgemm_code_generated;

static void generate_sgemm_code(void) {
  enum { N = 64 }; /* small and large paths, each transposition */
  void *room =
      mmap(NULL, SGEMM_CODE_ROOM, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (room == MAP_FAILED) return;
  munmap(room, SGEMM_CODE_ROOM);
  float *m = calloc(3 * N * N, sizeof *m);
  if (m == NULL) return;
  /* on this thread alone: a team started here would stay, and libgomp,
   * counting more threads than cores, would then make every device's team
   * sleep between parallel regions instead of spinning (tens of
   * microseconds to wake, per kernel) */
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  static const char trans[] = "NT";
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (int n = 1; n <= N; n *= N)
        dnnl_sgemm(trans[ta], trans[tb], n, n, n, 1.0f, m, n, m + N * N, n, 0.0f, m + 2 * N * N, n);
  omp_set_num_threads(threads);
  free(m);
  sgemm_code_generated = 1;
}

static int sgemm_ready(ct_status *status) {
  pthread_once(&sgemm_once, generate_sgemm_code);
  if (sgemm_code_generated) return 1;
  ct_status_set(status, CT_RESOURCE_EXHAUSTED,
                "out of memory starting the CPU devices: oneDNN needs %d MiB of address space "
                "for its matrix-multiply code and cannot have it; raise the memory limit "
                "(ulimit -v)",
                SGEMM_CODE_ROOM >> 20);
  return 0;
}

/* Runs first on a CPU device's worker: pinning, the OpenMP team, FTZ. */
static void cpu_thread_init(ct_device *d) {
  /* Team threads inherit the affinity the worker has when they start. */
  if (d->first_core >= 0) pin_to_cores(d->first_core, d->threads);
  omp_set_num_threads(d->threads);
#pragma omp parallel num_threads(d->threads)
  {
    _MM_SET_FLUSH_ZERO_MODE(_MM_FLUSH_ZERO_ON);
    _MM_SET_DENORMALS_ZERO_MODE(_MM_DENORMALS_ZERO_ON);
  }
}

/* Whether oneDNN may use `isa` on this CPU (each ISA's bits include those of
 * the ISAs it extends; DNNL_MAX_CPU_ISA in the environment caps it). */
static int cpu_has_isa(dnnl_cpu_isa_t isa) {
  return ((unsigned)dnnl_get_effective_cpu_isa() & (unsigned)isa) == (unsigned)isa;
}

/* The channel counts ctower's own Winograd (kernels/cpu/winograd.c) takes
 * are multiples of this in this build: its kernels' panel, two vectors of
 * 16 floats with AVX-512, of 8 with AVX2 and FMA; 0 where the build has
 * none (test_cpu_kernels checks it against ct_winograd_channel_multiple). */
static int own_winograd_channels(void) {
#if defined(__AVX512F__)
  return 32;
#elif defined(__AVX2__) && defined(__FMA__)
  return 16;
#else
  return 0;
#endif
}

/* Whether a Winograd convolution runs here: oneDNN's needs AVX-512,
 * ctower's own a build for AVX2 and FMA. */
static int winograd_available(void) {
  return own_winograd_channels() > 0 || cpu_has_isa(dnnl_cpu_isa_avx512_core);
}

/* What train.precision and train.conv_algorithm ask of the CPU that it
 * cannot do is said once, with what the CPU devices do instead. */
static void note_cpu_fallbacks(const ct_session_options *o) {
  FILE *log = o->log ? o->log : stderr;
  if (o->precision == CT_PRECISION_BF16 && !cpu_has_isa(dnnl_cpu_isa_avx512_core_bf16))
    fprintf(log,
            "note: train.precision is bf16, but this CPU has neither AVX512_BF16 nor AMX: the "
            "CPU devices compute in fp32\n");
  if (o->conv_algorithm == CT_CONV_WINOGRAD && !winograd_available())
    fprintf(log,
            "note: train.conv_algorithm is winograd, but this CPU has neither AVX-512 (for "
            "oneDNN's) nor AVX2 with FMA (for ctower's own): the CPU devices compute "
            "convolutions directly\n");
}

/* oneDNN's name of the instruction set its CPU kernels use here. */
static const char *onednn_isa_name(void) {
  static const struct {
    dnnl_cpu_isa_t isa;
    const char *name;
  } names[] = {{dnnl_cpu_isa_avx512_core_amx, "avx512_core_amx"},
               {dnnl_cpu_isa_avx512_core_bf16, "avx512_core_bf16"},
               {dnnl_cpu_isa_avx512_core_vnni, "avx512_core_vnni"},
               {dnnl_cpu_isa_avx512_core, "avx512_core"},
               {dnnl_cpu_isa_avx2_vnni, "avx2_vnni"},
               {dnnl_cpu_isa_avx2, "avx2"},
               {dnnl_cpu_isa_avx, "avx"},
               {dnnl_cpu_isa_sse41, "sse41"}};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i)
    if (cpu_has_isa(names[i].isa)) return names[i].name;
  return "generic";
}

/* The widest vectors ctower's own loops were compiled for (-march). */
static const char *own_loops_isa_name(void) {
#if defined(__AVX512F__)
  return "avx512";
#elif defined(__AVX2__)
  return "avx2";
#else
  return "sse";
#endif
}

/* What the CPU device's kernels compute with, as ct_device_info's
 * description reports it: the instruction sets, the arithmetic of
 * convolutions and matmuls, and which stride-1 convolutions Winograd's
 * algorithm computes. Tests and users read what ctower does here rather
 * than guess it from the CPU's flags. */
static void describe_cpu(const ct_cpu *cpu, char *out, size_t size) {
  char winograd[160] = "none", own[64];
  snprintf(own, sizeof own, "(ctower's own, channels in multiples of %d)",
           own_winograd_channels());
  if (cpu->winograd && !cpu->bf16) {
    char from[40] = "";
    if (cpu->winograd_min_channels > 0)
      snprintf(from, sizeof from, ", from %d channels", cpu->winograd_min_channels);
    if (cpu->own_winograd)
      snprintf(winograd, sizeof winograd, "3x3 and 5x5 %s%s", own, from);
    else if (own_winograd_channels() > 0)
      snprintf(winograd, sizeof winograd, "3x3 (oneDNN's), 5x5 %s%s", own, from);
    else
      snprintf(winograd, sizeof winograd, "3x3 (oneDNN's)%s", from);
  }
  snprintf(out, size, "isa: %s (oneDNN), %s (ctower's loops)  math: %s  winograd: %s",
           onednn_isa_name(), own_loops_isa_name(), cpu->bf16 ? "bf16" : "fp32", winograd);
}

/* A CPU device of the session with options o, with `threads` workers
 * pinned from first_core (-1: not pinned), an optional memory limit in
 * bytes (0: none) and idle_watch (device.h), its worker started. NULL and
 * status on failure. */
static ct_device *cpu_device_new(const ct_session_options *o, int index, int threads,
                                 int first_core, size_t memory_limit, int idle_watch,
                                 ct_status *status) {
  ct_device *d = ct_device_new_common(&ct_cpu_device_ops, o, index, status);
  if (d == NULL) return NULL;
  d->threads = threads > 0 ? threads : 1;
  d->first_core = first_core;
  d->idle_watch = idle_watch;
  snprintf(d->mapping, sizeof d->mapping, "name: cpu, cores: %d", d->threads);
  ct_cpu *cpu = calloc(1, sizeof *cpu);
  d->impl = cpu;
  if (cpu) {
    cpu->bf16 = o->precision == CT_PRECISION_BF16 && cpu_has_isa(dnnl_cpu_isa_avx512_core_bf16);
    /* auto takes Winograd on layers of 32 channels or more in and out only:
     * on fewer, its transforms outweigh the products it saves
     * (bench/RESULTS.md, "Behind the code's choices"). One threshold for
     * every CPU. */
    const int winograd =
        o->conv_algorithm == CT_CONV_WINOGRAD || o->conv_algorithm == CT_CONV_AUTO;
    cpu->winograd = winograd && winograd_available();
    cpu->winograd_min_channels = o->conv_algorithm == CT_CONV_AUTO ? 32 : 0;
    cpu->own_winograd = !cpu_has_isa(dnnl_cpu_isa_avx512_core) && own_winograd_channels() > 0;
    cpu->avx2_sgemm = !cpu_has_isa(dnnl_cpu_isa_avx512_core);
    describe_cpu(cpu, d->description, sizeof d->description);
  }
  if (cpu == NULL)
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory creating %s", d->name);
  if (cpu == NULL || ct_device_make_allocator(d, memory_limit, 1, NULL, status)) {
    ct_device_free(d);
    return NULL;
  }
  if (dnnl_engine_create(&cpu->engine, dnnl_cpu, 0) != dnnl_success ||
      dnnl_stream_create(&cpu->stream, cpu->engine, dnnl_stream_default_flags) != dnnl_success) {
    ct_status_set(status, CT_UNAVAILABLE, "could not create the oneDNN CPU engine for %s", d->name);
    ct_device_free(d);
    return NULL;
  }
  if (ct_device_start(d, cpu_thread_init, status)) {
    ct_device_free(d);
    return NULL;
  }
  return d;
}

static void cpu_release(ct_device *d) {
  ct_cpu *cpu = d->impl;
  if (cpu == NULL) return;
  if (cpu->stream) dnnl_stream_destroy(cpu->stream);
  if (cpu->engine) dnnl_engine_destroy(cpu->engine);
  free(cpu);
  d->impl = NULL;
}

/* ---- CPU devices of a session ---------------------------------------------- */

/* A session's CPU threads: at most this many per core. */
enum { MAX_THREADS_PER_CORE = 4 };

/* This process's share of its cores (session_options.h): *count cores
 * (0 when there are more processes than cores) from the *first of those it
 * may run on. Returns 1 when that is less than all of them. */
static int core_share(const ct_session_options *o, int *first, int *count) {
  const int cores = ct_available_cores();
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  const int processes = o->local_processes;
  *first = 0;
  *count = cores;
  /* bound by its launcher to fewer cores than the machine has: its own already */
  if (processes <= 1 || cores < online) return 0;
  const int k = o->local_process, base = cores / processes, extra = cores % processes;
  *first = k * base + (k < extra ? k : extra);
  *count = base + (k < extra);
  return 1;
}

static void *idle_thread(void *arg) { return arg; }

/* libgomp ends the process (exit 1, "Thread creation failed") when it
 * cannot start a team's threads, as under a tight ulimit -v: start as many
 * threads as the devices' teams and their workers will (default stacks, as
 * libgomp's) and end them, so that a shortfall is a status now. */
static int can_start_threads(int n, ct_status *status) {
  pthread_t threads[4 * CT_MAX_DEVICES];
  int started = 0, err = 0;
  while (started < n && started < (int)(sizeof threads / sizeof threads[0]) &&
         (err = pthread_create(&threads[started], NULL, idle_thread, NULL)) == 0)
    ++started;
  for (int i = 0; i < started; ++i) pthread_join(threads[i], NULL);
  if (err == 0) return 1;
  ct_status_set(status, CT_RESOURCE_EXHAUSTED,
                "cannot start the %d threads of the CPU devices (%s); raise the memory limit "
                "(ulimit -v) or lower session.intra_op_parallelism_threads",
                n, strerror(err));
  return 0;
}

static int cpu_count_devices(const ct_session_options *o) {
  return o->device_count_cpu > 0 ? o->device_count_cpu : 1;
}

static int cpu_create_devices(const ct_session_options *o, ct_device **devices, int *n,
                              ct_status *status) {
  const int n_cpu = cpu_count_devices(o);
  if (n_cpu > CT_MAX_DEVICES) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "device_count CPU is %d; at most %d CPU devices are supported", n_cpu,
                  CT_MAX_DEVICES);
    return 1;
  }
  int first_core, cores;
  const int shared = core_share(o, &first_core, &cores);
  const int total = o->intra_op_parallelism_threads > 0 ? o->intra_op_parallelism_threads : cores;
  int threads[CT_MAX_DEVICES], sum = 0;
  for (int i = 0; i < n_cpu; ++i) {
    /* an even share, the first devices taking the remainder; at least one */
    threads[i] = o->cpu_device_threads[i] > 0 ? o->cpu_device_threads[i]
                                              : total / n_cpu + (i < total % n_cpu);
    if (threads[i] < 1) threads[i] = 1;
    sum += threads[i];
  }
  /* more threads than this only thrash (and thousands exhaust memory) */
  const int most = MAX_THREADS_PER_CORE * ct_available_cores();
  if (sum > most) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "the CPU devices would run %d threads (intra_op_parallelism_threads %d), more "
                  "than %d per core of the %d this process may use; set it to at most %d, or 0 "
                  "for one per core",
                  sum, o->intra_op_parallelism_threads, MAX_THREADS_PER_CORE, ct_available_cores(),
                  most);
    return 1;
  }
  if (!can_start_threads(sum + n_cpu, status) || !sgemm_ready(status)) return 1;
  note_cpu_fallbacks(o);
  /* Pin each device to cores of its own only when they all fit: otherwise
   * two pools would spin on the same cores. A process sharing the machine
   * pins its one device too, to its share. */
  const int pin = (n_cpu > 1 || shared) && sum <= cores;
  int next_core = first_core;
  for (int i = 0; i < n_cpu; ++i) {
    size_t limit =
        o->cpu_device_memory_limit[i] ? o->cpu_device_memory_limit[i] : o->cpu_memory_limit;
    devices[*n] = cpu_device_new(o, i, threads[i], pin ? next_core : -1, limit, sum < cores,
                                 status);
    if (devices[*n] == NULL) return 1;
    ++*n;
    next_core += threads[i];
  }
  return 0;
}

/* Host memory, and steps that finish before they return: no copies, waits
 * or marks of its own. */
const ct_device_ops ct_cpu_device_ops = {
    .kind = CT_DEVICE_KIND_CPU,
    .priority = 0,
    .host_addressable = 1,
    .create_devices = cpu_create_devices,
    .count_devices = cpu_count_devices,
    .release = cpu_release,
};
