/* A device allocator that keeps what it hands out: freed blocks go to a free
 * list of their size and are reused by the next request of that size, so a
 * training loop that repeats the same step stops asking the OS for memory
 * after its first step (this machine pays dearly for page faults).
 * Thread-safe. */
#ifndef CTOWER_ALLOCATOR_H
#define CTOWER_ALLOCATOR_H

#include <stddef.h>
#include <stdint.h>

#include "ctower/status.h"

typedef struct ct_allocator ct_allocator;

typedef struct ct_allocator_stats {
  size_t bytes_in_use;     /* handed out and not yet freed */
  size_t peak_bytes_in_use;
  size_t bytes_reserved;   /* obtained from the system (in use + cached) */
  size_t limit;            /* 0: none */
  uint64_t allocations;    /* requests served */
  size_t largest_free_chunk; /* largest block cached for reuse */
} ct_allocator_stats;

/* device_name appears in out-of-memory messages; limit 0 means none. */
ct_allocator *ct_allocator_new(const char *device_name, size_t limit);
void ct_allocator_free_all(ct_allocator *allocator);

/* 64-byte aligned memory; NULL and RESOURCE_EXHAUSTED (naming the device,
 * the request, the limit and the bytes in use) when it would pass the limit
 * or the system has no memory left. */
void *ct_allocator_alloc(ct_allocator *allocator, size_t nbytes, ct_status *status);
void ct_allocator_free(ct_allocator *allocator, void *ptr);
ct_allocator_stats ct_allocator_get_stats(ct_allocator *allocator);
/* Starts the peak again from the bytes in use now. */
void ct_allocator_reset_peak(ct_allocator *allocator);

#endif
