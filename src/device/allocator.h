/* A device allocator in the manner of TensorFlow's BFC ("best-fit with
 * coalescing") allocator. Memory comes from the device in regions that are
 * kept until the allocator is freed (nothing goes back to the system while
 * a session trains: page faults cost dearly here), each region cut into
 * address-ordered chunks. A request takes the smallest free chunk that fits
 * (ties: the lowest address) and splits off the rest; a freed chunk merges
 * with free neighbours. Limits hold to the byte. Thread-safe. */
#ifndef CTOWER_ALLOCATOR_H
#define CTOWER_ALLOCATOR_H

#include <stddef.h>
#include <stdint.h>

#include "ctower/status.h"

typedef struct ct_allocator ct_allocator;

typedef struct ct_allocator_stats {
  size_t bytes_in_use;       /* chunks handed out (rounded sizes) */
  size_t peak_bytes_in_use;  /* since creation or the last reset */
  size_t bytes_reserved;     /* regions obtained from the device */
  size_t limit;              /* 0: none */
  uint64_t allocations;      /* requests served */
  size_t largest_free_chunk; /* among the reserved bytes */
  int n_regions;
} ct_allocator_stats;

typedef struct ct_allocator_options {
  const char *device_name;     /* named in out-of-memory messages */
  size_t limit;                /* bytes; 0: none */
  int allow_growth;            /* 1: reserve region by region as needed; 0 with a limit:
                                  reserve the whole limit at creation and never grow */
  size_t initial_region_bytes; /* growth: the first region (default 2 MiB), doubling after */
  /* Where regions come from (default: page-aligned host memory). */
  void *(*region_alloc)(size_t bytes, void *context);
  void (*region_free)(void *ptr, size_t bytes, void *context);
  /* When region_alloc failed for another reason than a shortage (a GPU that
   * failed earlier), writes why and returns 1; NULL: always a shortage. */
  int (*region_error)(void *context, char *text, size_t size);
  void *region_context;
} ct_allocator_options;

/* Returns NULL and fills status when the initial reservation fails. */
ct_allocator *ct_allocator_new_with(const ct_allocator_options *options, ct_status *status);
/* Gives every region back; pointers still handed out become invalid. */
void ct_allocator_free_all(ct_allocator *allocator);

/* 256-byte aligned memory; NULL and RESOURCE_EXHAUSTED (naming the device,
 * the request, the limit, the bytes in use and the largest free chunk, and
 * what to change) when no chunk fits and the limit forbids a new region or
 * the device has no memory left; NULL and INTERNAL (naming the device and
 * region_error's reason) when the device refused a region for another
 * reason. The allocator stays usable. */
void *ct_allocator_alloc(ct_allocator *allocator, size_t nbytes, ct_status *status);
/* The bytes a request of nbytes holds while in use: rounded up to the
 * allocator's 256-byte unit (at least one unit). What its statistics count. */
size_t ct_allocator_chunk_bytes(size_t nbytes);
/* NULL is a no-op. */
void ct_allocator_free(ct_allocator *allocator, void *ptr);
ct_allocator_stats ct_allocator_get_stats(ct_allocator *allocator);
/* Starts the peak again from the bytes in use now. */
void ct_allocator_reset_peak(ct_allocator *allocator);

#endif
