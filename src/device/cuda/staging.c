/* Pinned host buffers for copies into a GPU (cuda_device.h).
 *
 * A copy from pageable memory may make the host wait until the GPU's
 * stream reaches it: the driver stages it through pinned memory of its own
 * and can run out. A GPU's worker that waits like this stops queueing
 * kernels. So the host copies the data into a pinned buffer of the device
 * (a memcpy), queues the transfer from there, and records an event that
 * says when the buffer is free again: the host does not wait for the GPU.
 * Buffers are kept until the device is released, and a copy takes the
 * smallest free one that fits. Pinned memory is taken from the machine's
 * RAM for good, so there is a cap: a copy over STAGING_MAX_BYTES, or one
 * that finds every buffer busy and no room for another, goes unstaged
 * (and may wait). A copy from pinned memory that ctower allocated itself
 * (ct_pinned_alloc: the input pipeline's batches when a GPU trains) needs
 * none of this and is queued from where it is. */
#include <stdlib.h>
#include <string.h>

#include "device/cuda/cuda_device.h"

enum {
  STAGING_BUFFERS = 64,         /* per device, at most */
  STAGING_MIN_BYTES = 64 << 10, /* sizes are powers of two from this */
  STAGING_MAX_BYTES = 64 << 20, /* larger copies are not staged */
};
/* pinned bytes per device, at most */
static const size_t STAGING_PINNED_LIMIT = (size_t)256 << 20;

/* The blocks of ct_pinned_alloc, which copies read in place. */
enum { PINNED_BLOCKS = 256 };
static struct {
  pthread_mutex_t lock;
  int n;
  const char *start[PINNED_BLOCKS];
  size_t bytes[PINNED_BLOCKS];
} pinned_blocks = {PTHREAD_MUTEX_INITIALIZER, 0, {NULL}, {0}};

void *ct_pinned_alloc(size_t bytes) {
  void *ptr = NULL;
  pthread_mutex_lock(&pinned_blocks.lock);
  if (pinned_blocks.n < PINNED_BLOCKS) {
    if (cudaHostAlloc(&ptr, bytes ? bytes : 1, cudaHostAllocPortable) == cudaSuccess) {
      pinned_blocks.start[pinned_blocks.n] = ptr;
      pinned_blocks.bytes[pinned_blocks.n++] = bytes;
    } else {
      cudaGetLastError();
      ptr = NULL;
    }
  }
  pthread_mutex_unlock(&pinned_blocks.lock);
  return ptr;
}

void ct_pinned_free(void *ptr) {
  pthread_mutex_lock(&pinned_blocks.lock);
  for (int i = 0; i < pinned_blocks.n; ++i)
    if (pinned_blocks.start[i] == ptr) {
      pinned_blocks.start[i] = pinned_blocks.start[--pinned_blocks.n];
      pinned_blocks.bytes[i] = pinned_blocks.bytes[pinned_blocks.n];
      cudaFreeHost(ptr);
      break;
    }
  pthread_mutex_unlock(&pinned_blocks.lock);
}

/* Whether [src, src + nbytes) lies in a block of ct_pinned_alloc. */
static int pinned(const void *src, size_t nbytes) {
  const char *p = src;
  int found = 0;
  pthread_mutex_lock(&pinned_blocks.lock);
  for (int i = 0; i < pinned_blocks.n && !found; ++i)
    found = p >= pinned_blocks.start[i] && p + nbytes <= pinned_blocks.start[i] + pinned_blocks.bytes[i];
  pthread_mutex_unlock(&pinned_blocks.lock);
  return found;
}

typedef struct staging_buffer {
  void *host; /* cudaHostAlloc'ed, portable to every GPU */
  size_t bytes;
  cudaEvent_t free_at; /* recorded after the transfer out of it */
  int taken;           /* between staging_take and the record */
} staging_buffer;

struct ct_staging {
  pthread_mutex_t lock;
  int n;
  size_t pinned; /* the sum of the buffers' bytes */
  staging_buffer buffers[STAGING_BUFFERS];
};

ct_staging *ct_staging_new(void) {
  ct_staging *st = calloc(1, sizeof *st);
  if (st) pthread_mutex_init(&st->lock, NULL);
  return st;
}

void ct_staging_free(ct_staging *st) {
  if (st == NULL) return;
  for (int i = 0; i < st->n; ++i) {
    cudaEventDestroy(st->buffers[i].free_at);
    cudaFreeHost(st->buffers[i].host);
  }
  pthread_mutex_destroy(&st->lock);
  free(st);
}

static size_t staging_size(size_t nbytes) {
  size_t size = STAGING_MIN_BYTES;
  while (size < nbytes) size *= 2;
  return size;
}

/* The smallest free buffer of at least nbytes, a new one if none is free
 * and the caps leave room, or NULL. The caller's current device is the GPU's. */
static staging_buffer *staging_take(ct_staging *st, size_t nbytes) {
  staging_buffer *best = NULL;
  pthread_mutex_lock(&st->lock);
  for (int i = 0; i < st->n; ++i) {
    staging_buffer *b = &st->buffers[i];
    if (b->taken || b->bytes < nbytes || (best && best->bytes <= b->bytes)) continue;
    if (cudaEventQuery(b->free_at) == cudaSuccess)
      best = b;
    else
      cudaGetLastError(); /* cudaErrorNotReady: still being read */
  }
  const size_t bytes = staging_size(nbytes);
  if (best == NULL && st->n < STAGING_BUFFERS && st->pinned + bytes <= STAGING_PINNED_LIMIT) {
    staging_buffer *b = &st->buffers[st->n];
    b->bytes = bytes;
    if (cudaHostAlloc(&b->host, b->bytes, cudaHostAllocPortable) == cudaSuccess) {
      if (cudaEventCreateWithFlags(&b->free_at, cudaEventDisableTiming) == cudaSuccess) {
        best = b;
        st->n++;
        st->pinned += bytes;
      } else {
        cudaFreeHost(b->host);
      }
    }
    if (best == NULL) cudaGetLastError(); /* no pinned memory: copy unstaged */
  }
  if (best) best->taken = 1;
  pthread_mutex_unlock(&st->lock);
  return best;
}

int ct_staging_copy_to_gpu(ct_staging *st, void *dst, const void *src, size_t nbytes,
                           cudaStream_t stream, ct_status *status) {
  staging_buffer *b =
      nbytes <= STAGING_MAX_BYTES && !pinned(src, nbytes) ? staging_take(st, nbytes) : NULL;
  if (b == NULL)
    return ct_cuda_check(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyHostToDevice, stream),
                         "copying to the GPU", status);
  memcpy(b->host, src, nbytes);
  int failed = ct_cuda_check(cudaMemcpyAsync(dst, b->host, nbytes, cudaMemcpyHostToDevice, stream),
                             "copying to the GPU", status) ||
               ct_cuda_check(cudaEventRecord(b->free_at, stream), "copying to the GPU", status);
  /* after a failure the stream is broken and the session with it: the
   * buffer must not be handed out again before the device is released */
  pthread_mutex_lock(&st->lock);
  b->taken = failed;
  pthread_mutex_unlock(&st->lock);
  return failed;
}
