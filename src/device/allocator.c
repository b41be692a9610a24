#include "device/allocator.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctower/tensor.h"

/* Each block starts with a 64-byte header (keeps the payload aligned). */
typedef struct block_header {
  size_t size;                 /* payload bytes, a multiple of 256 */
  struct block_header *next;   /* free-list link while cached */
} block_header;
enum { HEADER_BYTES = 64, SIZE_QUANTUM = 256 };

/* Free lists keyed by size, open addressing. */
typedef struct size_bin {
  size_t size;                 /* 0: empty slot */
  block_header *free_list;
} size_bin;

struct ct_allocator {
  pthread_mutex_t mutex;
  char device_name[128];
  size_t limit;
  size_t in_use, peak, reserved;
  uint64_t allocations;
  size_bin *bins;
  size_t bins_cap;             /* power of two */
  size_t bins_used;
};

ct_allocator *ct_allocator_new(const char *device_name, size_t limit) {
  ct_allocator *a = calloc(1, sizeof *a);
  if (a == NULL) return NULL;
  a->bins_cap = 256;
  a->bins = calloc(a->bins_cap, sizeof *a->bins);
  if (a->bins == NULL) {
    free(a);
    return NULL;
  }
  pthread_mutex_init(&a->mutex, NULL);
  snprintf(a->device_name, sizeof a->device_name, "%s", device_name);
  a->limit = limit;
  return a;
}

void ct_allocator_free_all(ct_allocator *a) {
  if (a == NULL) return;
  for (size_t i = 0; i < a->bins_cap; ++i) {
    block_header *b = a->bins[i].free_list;
    while (b) {
      block_header *next = b->next;
      ct_aligned_free(b);
      b = next;
    }
  }
  pthread_mutex_destroy(&a->mutex);
  free(a->bins);
  free(a);
}

static size_bin *find_bin(size_bin *bins, size_t cap, size_t size) {
  size_t i = (size * 0x9E3779B97F4A7C15ull >> 20) & (cap - 1);
  while (bins[i].size != 0 && bins[i].size != size) i = (i + 1) & (cap - 1);
  return &bins[i];
}

static int grow_bins(ct_allocator *a) {
  size_t cap = a->bins_cap * 2;
  size_bin *bins = calloc(cap, sizeof *bins);
  if (bins == NULL) return 0;
  for (size_t i = 0; i < a->bins_cap; ++i)
    if (a->bins[i].size) *find_bin(bins, cap, a->bins[i].size) = a->bins[i];
  free(a->bins);
  a->bins = bins;
  a->bins_cap = cap;
  return 1;
}

/* Gives cached blocks back to the system: the last resort before reporting
 * out of memory, never on the normal path. */
static void release_cached(ct_allocator *a) {
  for (size_t i = 0; i < a->bins_cap; ++i) {
    block_header *b = a->bins[i].free_list;
    while (b) {
      block_header *next = b->next;
      a->reserved -= b->size + HEADER_BYTES;
      ct_aligned_free(b);
      b = next;
    }
    a->bins[i].free_list = NULL;
  }
}

void *ct_allocator_alloc(ct_allocator *a, size_t nbytes, ct_status *status) {
  size_t size = (nbytes + SIZE_QUANTUM - 1) / SIZE_QUANTUM * SIZE_QUANTUM;
  if (size == 0) size = SIZE_QUANTUM;
  pthread_mutex_lock(&a->mutex);
  if (a->limit && a->in_use + size > a->limit) {
    size_t in_use = a->in_use;
    pthread_mutex_unlock(&a->mutex);
    ct_status_set(status, CT_RESOURCE_EXHAUSTED,
                  "out of memory on %s: a request of %zu bytes would pass the limit of %zu bytes "
                  "(%zu in use); lower the batch size or raise the device's memory limit",
                  a->device_name, nbytes, a->limit, in_use);
    return NULL;
  }
  size_bin *bin = find_bin(a->bins, a->bins_cap, size);
  block_header *block = NULL;
  if (bin->size == size && bin->free_list) {
    block = bin->free_list;
    bin->free_list = block->next;
  } else {
    block = ct_aligned_alloc(size + HEADER_BYTES);
    if (block == NULL) {
      release_cached(a);
      block = ct_aligned_alloc(size + HEADER_BYTES);
    }
    if (block == NULL) {
      size_t in_use = a->in_use;
      pthread_mutex_unlock(&a->mutex);
      ct_status_set(status, CT_RESOURCE_EXHAUSTED,
                    "out of memory on %s: the system refused %zu bytes (%zu in use); lower the "
                    "batch size",
                    a->device_name, nbytes, in_use);
      return NULL;
    }
    block->size = size;
    a->reserved += size + HEADER_BYTES;
  }
  a->in_use += size;
  if (a->in_use > a->peak) a->peak = a->in_use;
  a->allocations++;
  pthread_mutex_unlock(&a->mutex);
  return (char *)block + HEADER_BYTES;
}

void ct_allocator_free(ct_allocator *a, void *ptr) {
  if (ptr == NULL) return;
  block_header *block = (block_header *)((char *)ptr - HEADER_BYTES);
  pthread_mutex_lock(&a->mutex);
  a->in_use -= block->size;
  if (a->bins_used * 2 >= a->bins_cap) grow_bins(a);
  size_bin *bin = find_bin(a->bins, a->bins_cap, block->size);
  if (bin->size == 0) {
    bin->size = block->size;
    a->bins_used++;
  }
  block->next = bin->free_list;
  bin->free_list = block;
  pthread_mutex_unlock(&a->mutex);
}

ct_allocator_stats ct_allocator_get_stats(ct_allocator *a) {
  ct_allocator_stats s;
  pthread_mutex_lock(&a->mutex);
  s.bytes_in_use = a->in_use;
  s.peak_bytes_in_use = a->peak;
  s.bytes_reserved = a->reserved;
  s.limit = a->limit;
  s.allocations = a->allocations;
  s.largest_free_chunk = 0;
  for (size_t i = 0; i < a->bins_cap; ++i)
    if (a->bins[i].free_list && a->bins[i].size > s.largest_free_chunk)
      s.largest_free_chunk = a->bins[i].size;
  pthread_mutex_unlock(&a->mutex);
  return s;
}

void ct_allocator_reset_peak(ct_allocator *a) {
  pthread_mutex_lock(&a->mutex);
  a->peak = a->in_use;
  pthread_mutex_unlock(&a->mutex);
}
