// The emulator's CUDA runtime (emulator.h): GPUs whose memory is host
// memory, streams that run their work in order on a worker thread each,
// events, copies with the runtime's documented synchronization (a copy from
// pageable host memory is staged before the call returns, one into pageable
// host memory is complete when it returns), and kernel launches whose
// threads run as fibers (ucontext), so that __syncthreads and warp shuffles
// work; a kernel whose first thread never synchronizes runs its threads as
// plain calls, which is much faster.
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "emulator.h"
#include "emulator_counts.h"
#include "emulator_faults.h"
#include "device_code.h"

void emu_fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "EMU BUG: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  fflush(stderr);
  abort();
}

static void note(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "EMU: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
}

// ---- counts (emulator_counts.h) ------------------------------------------------

static std::atomic<long> counts[EMU_COUNT_KINDS];

static void tally(emu_count_kind kind) { counts[kind].fetch_add(1, std::memory_order_relaxed); }

extern "C" long emu_count(emu_count_kind kind) { return counts[kind].load(); }

static void print_counts() {
  fprintf(stderr,
          "EMU: %ld host waits, %ld cudaMalloc, %ld cudaHostAlloc, %ld events created, %ld stream "
          "tasks\n",
          emu_count(EMU_HOST_WAITS), emu_count(EMU_DEVICE_ALLOCATIONS),
          emu_count(EMU_PINNED_ALLOCATIONS), emu_count(EMU_EVENTS_CREATED),
          emu_count(EMU_STREAM_TASKS));
}
static const int counts_printed_at_exit = [] {
  if (getenv("EMU_COUNTS")) atexit(print_counts);
  return 0;
}();

// ---- devices and errors -----------------------------------------------------

static int n_gpus() {
  static int n = [] {
    const char *e = getenv("EMU_GPUS");
    return e ? atoi(e) : 1;
  }();
  return n;
}
static size_t gpu_total() {
  static size_t t = [] {
    const char *e = getenv("EMU_GPU_MB");
    return (size_t)(e ? atoll(e) : 8192) << 20;
  }();
  return t;
}

static thread_local int current_device = 0;
static thread_local cudaError_t sticky_error = cudaSuccess;

// ---- planted faults (emulator_faults.h) -----------------------------------------

// Per GPU, the fault a failed kernel left (cudaSuccess: none): every later
// call on that GPU returns it, as on a GPU whose context is lost.
static std::atomic<int> lost_context[64];
static std::atomic<long> launches_until_fault{0};

static cudaError_t lost(int device) {
  return device >= 0 && device < 64 ? (cudaError_t)lost_context[device].load() : cudaSuccess;
}

extern "C" void emu_fault_after_launches(long n) { launches_until_fault = n; }
extern "C" void emu_fault_clear(void) {
  launches_until_fault = 0;
  for (auto &e : lost_context) e = cudaSuccess;
}

static cudaError_t fail(cudaError_t e, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "EMU: error %d: ", (int)e);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  sticky_error = e;
  return e;
}

int emu_current_device(void) { return current_device; }

extern "C" {

cudaError_t cudaGetDeviceCount(int *n) {
  *n = 0;
  if (const char *e = getenv("EMU_DRIVER_ERROR")) return sticky_error = (cudaError_t)atoi(e);
  if (n_gpus() == 0) return sticky_error = cudaErrorNoDevice;
  *n = n_gpus();
  return cudaSuccess;
}
cudaError_t cudaDriverGetVersion(int *version) {
  *version = getenv("EMU_DRIVER_ERROR") ? 0 : CUDART_VERSION;
  return cudaSuccess;
}
cudaError_t cudaRuntimeGetVersion(int *version) {
  *version = CUDART_VERSION;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int d) {
  if (d < 0 || d >= n_gpus()) return fail(cudaErrorInvalidDevice, "cudaSetDevice(%d)", d);
  current_device = d;
  return cudaSuccess;
}
cudaError_t cudaGetDevice(int *d) {
  *d = current_device;
  return cudaSuccess;
}
cudaError_t cudaGetLastError(void) {
  if (lost(current_device)) return lost(current_device); /* not cleared: the context is lost */
  cudaError_t e = sticky_error;
  sticky_error = cudaSuccess;
  return e;
}
const char *cudaGetErrorString(cudaError_t e) {
  static thread_local char buf[64];
  snprintf(buf, sizeof buf, "emulated CUDA error %d", (int)e);
  return e == cudaSuccess ? "no error" : buf;
}
const char *cudaGetErrorName(cudaError_t e) {
  static thread_local char buf[64];
  snprintf(buf, sizeof buf, "cudaError%d", (int)e);
  return e == cudaSuccess ? "cudaSuccess" : buf;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int d) {
  if (d < 0 || d >= n_gpus()) return fail(cudaErrorInvalidDevice, "properties of %d", d);
  memset(p, 0, sizeof *p);
  snprintf(p->name, sizeof p->name, "Emulated GPU %d", d);
  p->totalGlobalMem = gpu_total();
  p->multiProcessorCount = 132;
  p->major = 9;
  p->minor = 0;
  p->warpSize = 32;
  p->maxThreadsPerBlock = 1024;
  return cudaSuccess;
}

}  // extern "C"

// ---- memory -------------------------------------------------------------------

struct allocation {
  size_t bytes;
  int device;
};
static std::mutex memory_lock;
static std::map<uintptr_t, allocation> device_blocks;
static std::map<uintptr_t, size_t> pinned_blocks;
static size_t used_bytes[64];

static bool find_range(const std::map<uintptr_t, allocation> &m, const void *p, size_t n,
                       int *device) {
  uintptr_t a = (uintptr_t)p;
  auto it = m.upper_bound(a);
  if (it == m.begin()) return false;
  --it;
  if (a < it->first || a + n > it->first + it->second.bytes) return false;
  if (device) *device = it->second.device;
  return true;
}
bool emu_device_range(const void *p, size_t n, int *device) {
  std::lock_guard<std::mutex> g(memory_lock);
  return find_range(device_blocks, p, n, device);
}
// Whether p lies in any device allocation (even partly).
static bool touches_device(const void *p) {
  std::lock_guard<std::mutex> g(memory_lock);
  return find_range(device_blocks, p, 1, nullptr);
}
static bool is_pinned(const void *p, size_t n) {
  std::lock_guard<std::mutex> g(memory_lock);
  uintptr_t a = (uintptr_t)p;
  auto it = pinned_blocks.upper_bound(a);
  if (it == pinned_blocks.begin()) return false;
  --it;
  return a >= it->first && a + n <= it->first + it->second;
}

// ---- streams ------------------------------------------------------------------

struct CUstream_st {
  int device;
  unsigned flags;
  std::mutex m;
  std::condition_variable cv;
  std::deque<std::function<void()>> tasks;
  int busy = 0;
  bool stop = false;
  std::thread worker;
};

static bool jitter() {
  static bool j = getenv("EMU_JITTER") != nullptr;
  return j;
}

static void stream_loop(CUstream_st *s) {
  current_device = s->device;
  unsigned seed = (unsigned)(uintptr_t)s;
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> l(s->m);
      s->cv.wait(l, [s] { return s->stop || !s->tasks.empty(); });
      if (s->tasks.empty()) return;
      task = std::move(s->tasks.front());
      s->tasks.pop_front();
      s->busy = 1;
    }
    if (jitter()) usleep(rand_r(&seed) % 300);
    task();
    {
      std::lock_guard<std::mutex> l(s->m);
      s->busy = 0;
    }
    s->cv.notify_all();
  }
}

static std::mutex streams_lock;
static std::set<CUstream_st *> live_streams;
static CUstream_st *null_streams[64];

static CUstream_st *new_stream(int device, unsigned flags) {
  CUstream_st *s = new CUstream_st;
  s->device = device;
  s->flags = flags;
  s->worker = std::thread(stream_loop, s);
  std::lock_guard<std::mutex> g(streams_lock);
  live_streams.insert(s);
  return s;
}

static CUstream_st *resolve(cudaStream_t stream) {
  if (stream == nullptr || stream == cudaStreamLegacy || stream == cudaStreamPerThread) {
    static bool warned = false;
    if (!warned) {
      warned = true;
      note("work queued on the NULL stream of GPU %d (unordered with non-blocking streams)",
           current_device);
    }
    std::lock_guard<std::mutex> g(streams_lock);
    if (!null_streams[current_device]) {
      CUstream_st *s = new CUstream_st;
      s->device = current_device;
      s->flags = 0;
      s->worker = std::thread(stream_loop, s);
      live_streams.insert(s);
      null_streams[current_device] = s;
    }
    return null_streams[current_device];
  }
  std::lock_guard<std::mutex> g(streams_lock);
  if (!live_streams.count(stream)) emu_fail("use of a destroyed or unknown stream %p", stream);
  return stream;
}

void emu_enqueue(cudaStream_t stream, std::function<void()> task) {
  CUstream_st *s = resolve(stream);
  tally(EMU_STREAM_TASKS);
  {
    std::lock_guard<std::mutex> l(s->m);
    s->tasks.push_back(std::move(task));
  }
  s->cv.notify_all();
}
int emu_stream_device(cudaStream_t stream) { return resolve(stream)->device; }

static void drain(CUstream_st *s) {
  std::unique_lock<std::mutex> l(s->m);
  s->cv.wait(l, [s] { return s->tasks.empty() && !s->busy; });
}

static void drain_device(int device) {
  std::vector<CUstream_st *> all;
  {
    std::lock_guard<std::mutex> g(streams_lock);
    for (CUstream_st *s : live_streams)
      if (s->device == device) all.push_back(s);
  }
  for (CUstream_st *s : all) drain(s);
}

// Runs `task` on the stream and waits for it (and everything before it).
static void run_and_wait(cudaStream_t stream, std::function<void()> task) {
  tally(EMU_HOST_WAITS);
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  emu_enqueue(stream, [&] {
    task();
    std::lock_guard<std::mutex> l(m);
    done = true;
    cv.notify_all();
  });
  std::unique_lock<std::mutex> l(m);
  cv.wait(l, [&] { return done; });
}

extern "C" {

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags) {
  *s = new_stream(current_device, flags);
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  CUstream_st *s = resolve(stream);
  drain(s);
  {
    std::lock_guard<std::mutex> g(streams_lock);
    live_streams.erase(s);
  }
  {
    std::lock_guard<std::mutex> l(s->m);
    s->stop = true;
  }
  s->cv.notify_all();
  s->worker.join();
  delete s;
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  tally(EMU_HOST_WAITS);
  CUstream_st *s = resolve(stream);
  drain(s);
  return lost(s->device);
}
cudaError_t cudaStreamGetDevice(cudaStream_t stream, int *device) {
  *device = resolve(stream)->device;
  return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize(void) {
  tally(EMU_HOST_WAITS);
  drain_device(current_device);
  return lost(current_device);
}

cudaError_t cudaMalloc(void **p, size_t bytes) {
  *p = nullptr;
  tally(EMU_DEVICE_ALLOCATIONS);
  if (lost(current_device)) return sticky_error = lost(current_device);
  std::lock_guard<std::mutex> g(memory_lock);
  if (used_bytes[current_device] + bytes > gpu_total())
    return sticky_error = cudaErrorMemoryAllocation;
  void *q = aligned_alloc(256, (bytes + 255) / 256 * 256 + 256);
  if (!q) return sticky_error = cudaErrorMemoryAllocation;
  /* NaN garbage, so that a read before a write shows; large regions stay
   * untouched (the host has less memory than the emulated GPUs) */
  if (bytes <= (64u << 20)) memset(q, 0xff, bytes);
  device_blocks[(uintptr_t)q] = allocation{bytes, current_device};
  used_bytes[current_device] += bytes;
  *p = q;
  return cudaSuccess;
}
cudaError_t cudaFree(void *p) {
  if (!p) return cudaSuccess;
  int device = -1;
  {
    std::lock_guard<std::mutex> g(memory_lock);
    auto it = device_blocks.find((uintptr_t)p);
    if (it == device_blocks.end()) emu_fail("cudaFree(%p): not a cudaMalloc pointer", p);
    device = it->second.device;
  }
  tally(EMU_HOST_WAITS);
  drain_device(device); /* cudaFree synchronizes the device */
  std::lock_guard<std::mutex> g(memory_lock);
  auto it = device_blocks.find((uintptr_t)p);
  used_bytes[device] -= it->second.bytes;
  device_blocks.erase(it);
  free(p);
  return cudaSuccess;
}
cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total) {
  if (lost(current_device)) return sticky_error = lost(current_device);
  std::lock_guard<std::mutex> g(memory_lock);
  *total = gpu_total();
  *free_bytes = gpu_total() - used_bytes[current_device];
  return cudaSuccess;
}
cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned flags) {
  (void)flags;
  tally(EMU_PINNED_ALLOCATIONS);
  *p = malloc(bytes ? bytes : 1);
  if (!*p) return sticky_error = cudaErrorMemoryAllocation;
  std::lock_guard<std::mutex> g(memory_lock);
  pinned_blocks[(uintptr_t)*p] = bytes;
  return cudaSuccess;
}
cudaError_t cudaFreeHost(void *p) {
  {
    std::lock_guard<std::mutex> g(memory_lock);
    if (!pinned_blocks.erase((uintptr_t)p)) emu_fail("cudaFreeHost(%p): not pinned", p);
  }
  tally(EMU_HOST_WAITS);
  for (int d = 0; d < n_gpus(); ++d) drain_device(d); /* synchronizes */
  free(p);
  return cudaSuccess;
}

}  // extern "C"

// ---- copies -------------------------------------------------------------------

static void check_device(const void *p, size_t n, const char *what) {
  if (!emu_device_range(p, n, nullptr))
    emu_fail("%s: [%p, +%zu) is not inside one GPU allocation", what, p, n);
}
static void check_host(const void *p, const char *what) {
  if (touches_device(p)) emu_fail("%s: %p is GPU memory where host memory was said", what, p);
}

static cudaMemcpyKind infer(const void *dst, const void *src) {
  const bool d = touches_device(dst), s = touches_device(src);
  return d ? (s ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice)
           : (s ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost);
}

extern "C" cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n,
                                       cudaMemcpyKind kind, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (cudaError_t e = lost(resolve(stream)->device)) return sticky_error = e;
  if (kind == cudaMemcpyDefault) kind = infer(dst, src);
  switch (kind) {
    case cudaMemcpyHostToDevice: {
      check_device(dst, n, "cudaMemcpyAsync H2D destination");
      check_host(src, "cudaMemcpyAsync H2D source");
      if (is_pinned(src, n)) { /* truly asynchronous: read when it runs */
        emu_enqueue(stream, [=] { memcpy(dst, src, n); });
      } else { /* pageable: staged by the driver before the call returns */
        std::shared_ptr<std::vector<char>> copy(new std::vector<char>((const char *)src,
                                                                      (const char *)src + n));
        emu_enqueue(stream, [=] { memcpy(dst, copy->data(), n); });
      }
      return cudaSuccess;
    }
    case cudaMemcpyDeviceToHost:
      check_device(src, n, "cudaMemcpyAsync D2H source");
      check_host(dst, "cudaMemcpyAsync D2H destination");
      if (is_pinned(dst, n)) {
        emu_enqueue(stream, [=] { memcpy(dst, src, n); });
      } else { /* pageable destination: returns once the copy is done */
        run_and_wait(stream, [=] { memcpy(dst, src, n); });
      }
      return lost(resolve(stream)->device);
    case cudaMemcpyDeviceToDevice:
      check_device(src, n, "cudaMemcpyAsync D2D source");
      check_device(dst, n, "cudaMemcpyAsync D2D destination");
      emu_enqueue(stream, [=] { memmove(dst, src, n); });
      return cudaSuccess;
    default:
      run_and_wait(stream, [=] { memcpy(dst, src, n); });
      return cudaSuccess;
  }
}

extern "C" cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src,
                                         size_t spitch, size_t width, size_t height,
                                         cudaMemcpyKind kind, cudaStream_t stream) {
  if (width > dpitch || width > spitch)
    return fail(cudaErrorInvalidPitchValue, "cudaMemcpy2DAsync width %zu > pitch", width);
  if (height == 0 || width == 0) return cudaSuccess;
  if (kind != cudaMemcpyDeviceToDevice)
    emu_fail("cudaMemcpy2DAsync kind %d not emulated", (int)kind);
  check_device(src, spitch * (height - 1) + width, "cudaMemcpy2DAsync source");
  check_device(dst, dpitch * (height - 1) + width, "cudaMemcpy2DAsync destination");
  emu_enqueue(stream, [=] {
    for (size_t r = 0; r < height; ++r)
      memmove((char *)dst + r * dpitch, (const char *)src + r * spitch, width);
  });
  return cudaSuccess;
}

extern "C" cudaError_t cudaMemsetAsync(void *p, int value, size_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (cudaError_t e = lost(resolve(stream)->device)) return sticky_error = e;
  check_device(p, n, "cudaMemsetAsync");
  emu_enqueue(stream, [=] { memset(p, value, n); });
  return cudaSuccess;
}

// ---- events -------------------------------------------------------------------

struct CUevent_st {
  int device;
  unsigned flags;
  std::mutex m;
  std::condition_variable cv;
  uint64_t recorded = 0;  /* records queued (host side) */
  uint64_t completed = 0; /* records reached by the stream */
  double time_ms = 0;
  bool destroyed = false;
};

static double now_ms() {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

extern "C" {

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags) {
  tally(EMU_EVENTS_CREATED);
  CUevent_st *ev = new CUevent_st;
  ev->device = current_device;
  ev->flags = flags;
  *e = ev;
  return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t *e) { return cudaEventCreateWithFlags(e, 0); }
cudaError_t cudaEventDestroy(cudaEvent_t e) {
  /* kept: queued waits may still refer to it (the runtime defers too) */
  std::lock_guard<std::mutex> l(e->m);
  if (e->destroyed) emu_fail("cudaEventDestroy twice on %p", (void *)e);
  e->destroyed = true;
  return cudaSuccess;
}
static void check_event(cudaEvent_t e, const char *what) {
  std::lock_guard<std::mutex> l(e->m);
  if (e->destroyed) emu_fail("%s: event %p used after cudaEventDestroy", what, (void *)e);
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t stream) {
  check_event(e, "cudaEventRecord");
  CUstream_st *s = resolve(stream);
  if (cudaError_t err = lost(s->device)) return sticky_error = err;
  if (s->device != e->device)
    return fail(cudaErrorInvalidResourceHandle,
                "cudaEventRecord: event of GPU %d on a stream of GPU %d", e->device, s->device);
  uint64_t generation;
  {
    std::lock_guard<std::mutex> l(e->m);
    generation = ++e->recorded;
  }
  emu_enqueue(s, [e, generation] {
    std::lock_guard<std::mutex> l(e->m);
    if (generation > e->completed) {
      e->completed = generation;
      e->time_ms = now_ms();
    }
    e->cv.notify_all();
  });
  return cudaSuccess;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t e, unsigned flags) {
  (void)flags;
  check_event(e, "cudaStreamWaitEvent");
  uint64_t generation;
  {
    std::lock_guard<std::mutex> l(e->m);
    generation = e->recorded;
  }
  if (generation == 0) return cudaSuccess; /* never recorded: nothing to wait for */
  emu_enqueue(stream, [e, generation] {
    std::unique_lock<std::mutex> l(e->m);
    if (!e->cv.wait_for(l, std::chrono::seconds(kWatchdogSeconds), [&] { return e->completed >= generation; }))
      emu_fail("a stream waited %d s for an event (a deadlock between streams)", kWatchdogSeconds);
  });
  return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  check_event(e, "cudaEventSynchronize");
  tally(EMU_HOST_WAITS);
  std::unique_lock<std::mutex> l(e->m);
  const uint64_t generation = e->recorded;
  if (!e->cv.wait_for(l, std::chrono::seconds(kWatchdogSeconds), [&] { return e->completed >= generation; }))
    emu_fail("the host waited %d s for an event (a deadlock)", kWatchdogSeconds);
  return lost(e->device);
}
cudaError_t cudaEventQuery(cudaEvent_t e) {
  check_event(e, "cudaEventQuery");
  std::lock_guard<std::mutex> l(e->m);
  if (e->completed >= e->recorded) return cudaSuccess;
  sticky_error = cudaErrorNotReady;
  return cudaErrorNotReady;
}
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b) {
  check_event(a, "cudaEventElapsedTime");
  check_event(b, "cudaEventElapsedTime");
  if ((a->flags | b->flags) & cudaEventDisableTiming)
    return fail(cudaErrorInvalidResourceHandle, "cudaEventElapsedTime of a no-timing event");
  if (a->recorded == 0 || b->recorded == 0 || a->completed < a->recorded ||
      b->completed < b->recorded)
    return fail(cudaErrorNotReady, "cudaEventElapsedTime of an event not reached");
  *ms = (float)(b->time_ms - a->time_ms);
  return cudaSuccess;
}

}  // extern "C"

// ---- kernels --------------------------------------------------------------------

thread_local emu_thread_ctx *emu_ctx;

namespace {

enum fiber_state { RUNNABLE, AT_BLOCK_BARRIER, AT_WARP_BARRIER, DONE };

struct fiber {
  ucontext_t context;
  emu_thread_ctx ctx;
  fiber_state state;
  int warp, lane;
  uint64_t offered;
};

struct block_run {
  std::vector<fiber> fibers;
  ucontext_t scheduler;
  const std::function<void()> *body;
  fiber *current;
  uint64_t exchange[32 * 32];
  bool fiber_mode;
  bool synced; /* thread 0 reached a barrier or shuffle */
};

thread_local block_run *run;
// fiber stacks of this stream's thread, kept from launch to launch
struct fiber_stacks {
  std::vector<char *> stacks;
  ~fiber_stacks() {
    for (char *stack : stacks) free(stack);
  }
};
thread_local fiber_stacks stack_pool;
const size_t STACK = 128 << 10;

void fiber_entry() {
  fiber *f = run->current;
  (*run->body)();
  f->state = DONE;
  swapcontext(&f->context, &run->scheduler);
}

void yield_to_scheduler() {
  fiber *f = run->current;
  swapcontext(&f->context, &run->scheduler);
  emu_ctx = &f->ctx;
}

// Runs the fibers until each is done or waiting at a barrier; releases the
// barriers that every live thread (of the block, or of a warp) reached.
void schedule_block(block_run *r) {
  for (;;) {
    bool ran = false;
    for (fiber &f : r->fibers) {
      if (f.state != RUNNABLE) continue;
      ran = true;
      r->current = &f;
      emu_ctx = &f.ctx;
      swapcontext(&r->scheduler, &f.context);
    }
    int alive = 0, at_block = 0;
    for (fiber &f : r->fibers) {
      alive += f.state != DONE;
      at_block += f.state == AT_BLOCK_BARRIER;
    }
    if (alive == 0) return;
    bool released = false;
    if (at_block == alive) {
      for (fiber &f : r->fibers)
        if (f.state == AT_BLOCK_BARRIER) f.state = RUNNABLE;
      released = true;
    } else {
      const int warps = ((int)r->fibers.size() + 31) / 32;
      for (int w = 0; w < warps; ++w) {
        int live = 0, waiting = 0;
        for (size_t i = w * 32; i < r->fibers.size() && i < (size_t)w * 32 + 32; ++i) {
          live += r->fibers[i].state != DONE;
          waiting += r->fibers[i].state == AT_WARP_BARRIER;
        }
        if (waiting > 0 && waiting == live) {
          for (size_t i = w * 32; i < r->fibers.size() && i < (size_t)w * 32 + 32; ++i)
            if (r->fibers[i].state == AT_WARP_BARRIER) r->fibers[i].state = RUNNABLE;
          released = true;
        }
      }
    }
    if (!released && !ran)
      emu_fail("threads of a block wait at barriers that can never be released "
               "(__syncthreads or a shuffle in divergent code)");
  }
}

}  // namespace

void __syncthreads(void) {
  if (!run->fiber_mode) emu_fail("__syncthreads in a thread run without a fiber");
  if (run->current == &run->fibers[0]) run->synced = true;
  run->current->state = AT_BLOCK_BARRIER;
  yield_to_scheduler();
}

uint64_t emu_warp_exchange(unsigned mask, uint64_t bits, int src_lane) {
  if (!run->fiber_mode) emu_fail("a warp shuffle in a thread run without a fiber");
  fiber *f = run->current;
  if (f == &run->fibers[0]) run->synced = true;
  if (mask != 0xffffffffu) emu_fail("shuffle with mask %#x: not emulated", mask);
  const size_t first = (size_t)f->warp * 32;
  if (first + 32 > run->fibers.size())
    emu_fail("a full-mask shuffle in a partial warp (block of %zu threads)", run->fibers.size());
  uint64_t *slots = &run->exchange[f->warp % 32 * 32];
  slots[f->lane] = bits;
  f->state = AT_WARP_BARRIER;
  yield_to_scheduler();
  for (size_t i = first; i < first + 32; ++i)
    if (run->fibers[i].state == DONE)
      emu_fail("a full-mask shuffle that an exited lane (%zu) missed", i - first);
  uint64_t got = slots[src_lane];
  /* second barrier: nobody overwrites a slot before the warp has read */
  f->state = AT_WARP_BARRIER;
  yield_to_scheduler();
  return got;
}

static void make_fiber(block_run *r, fiber &f) {
  getcontext(&f.context);
  f.context.uc_stack.ss_sp = stack_pool.stacks[&f - &r->fibers[0]];
  f.context.uc_stack.ss_size = STACK;
  f.context.uc_link = nullptr;
  makecontext(&f.context, fiber_entry, 0);
  f.state = RUNNABLE;
}

static void run_grid(const emu_cfg cfg, const std::function<void()> &body) {
  const unsigned nt = cfg.block.x * cfg.block.y * cfg.block.z;
  block_run r;
  r.body = &body;
  r.fibers.resize(nt);
  r.fiber_mode = true;
  r.synced = false;
  while (stack_pool.stacks.size() < nt) stack_pool.stacks.push_back((char *)malloc(STACK));
  block_run *saved = run;
  run = &r;
  bool decided = false;
  for (unsigned bz = 0; bz < cfg.grid.z; ++bz)
    for (unsigned by = 0; by < cfg.grid.y; ++by)
      for (unsigned bx = 0; bx < cfg.grid.x; ++bx) {
        for (unsigned t = 0; t < nt; ++t) {
          fiber &f = r.fibers[t];
          f.ctx.bid = uint3{bx, by, bz};
          f.ctx.tid = uint3{t % cfg.block.x, t / cfg.block.x % cfg.block.y,
                            t / (cfg.block.x * cfg.block.y)};
          f.ctx.bdim = cfg.block;
          f.ctx.gdim = cfg.grid;
          f.warp = (int)(t / 32);
          f.lane = (int)(t % 32);
        }
        if (!decided) {
          /* thread 0 of the first block runs on a fiber: if it never syncs,
           * the kernel needs none and the rest run as plain calls */
          for (unsigned t = 0; t < nt; ++t) make_fiber(&r, r.fibers[t]);
          r.current = &r.fibers[0];
          emu_ctx = &r.fibers[0].ctx;
          swapcontext(&r.scheduler, &r.fibers[0].context);
          decided = true;
          if (r.fibers[0].state == DONE && !r.synced) {
            r.fiber_mode = false;
            for (unsigned t = 1; t < nt; ++t) {
              emu_ctx = &r.fibers[t].ctx;
              body();
            }
          } else {
            schedule_block(&r);
          }
          continue;
        }
        if (!r.fiber_mode) {
          for (unsigned t = 0; t < nt; ++t) {
            emu_ctx = &r.fibers[t].ctx;
            body();
          }
        } else {
          for (unsigned t = 0; t < nt; ++t) make_fiber(&r, r.fibers[t]);
          schedule_block(&r);
        }
      }
  run = saved;
}

void emu_launch_erased(const emu_cfg &cfg, std::function<void()> thread_body) {
  const dim3 g = cfg.grid, b = cfg.block;
  const unsigned long long nt = (unsigned long long)b.x * b.y * b.z;
  if (g.x == 0 || g.y == 0 || g.z == 0 || nt == 0 || nt > 1024 || b.z > 64 ||
      g.x > 2147483647u || g.y > 65535 || g.z > 65535) {
    fail(cudaErrorInvalidConfiguration, "launch grid (%u,%u,%u) block (%u,%u,%u)", g.x, g.y, g.z,
         b.x, b.y, b.z);
    return;
  }
  if (cfg.shared > 48 * 1024) {
    fail(cudaErrorInvalidValue, "launch with %zu bytes of dynamic shared memory", cfg.shared);
    return;
  }
  CUstream_st *s = resolve(cfg.stream);
  if (s->device != current_device) {
    fail(cudaErrorInvalidResourceHandle, "kernel launched on a stream of GPU %d from GPU %d",
         s->device, current_device);
    return;
  }
  if (lost(s->device)) {
    sticky_error = lost(s->device);
    return;
  }
  long until = launches_until_fault.load();
  while (until > 0 && !launches_until_fault.compare_exchange_weak(until, until - 1)) {
  }
  if (until == 1) { /* this kernel faults when its stream reaches it */
    const int device = s->device;
    emu_enqueue(s, [device] {
      note("a planted fault: a kernel on GPU %d fails, and the GPU's context is lost", device);
      lost_context[device] = cudaErrorIllegalAddress;
    });
    return;
  }
  emu_enqueue(s, [cfg, thread_body] { run_grid(cfg, thread_body); });
}
