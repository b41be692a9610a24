#include "device/allocator.h"

#include <assert.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
  MIN_CHUNK = 256,  /* the rounding unit and the smallest piece worth splitting off */
  N_BINS = 40       /* bin b holds free chunks of [256 << b, 256 << (b + 1)) bytes */
};

typedef struct chunk {
  char *ptr;
  size_t size;
  int in_use;
  struct chunk *prev, *next;           /* neighbours in address order, same region */
  struct chunk *bin_prev, *bin_next;   /* free list of its bin, while free */
} chunk;

typedef struct region {
  char *base;
  size_t size;
  struct region *next;
} region;

struct ct_allocator {
  pthread_mutex_t mutex;
  char device_name[128];
  size_t limit;
  int allow_growth;
  size_t next_region_bytes;
  void *(*region_alloc)(size_t, void *);
  void (*region_free)(void *, size_t, void *);
  int (*region_error)(void *, char *, size_t);
  void *region_context;
  region *regions;
  int n_regions;
  chunk *bins[N_BINS];
  /* in-use chunks by address: open addressing, power-of-two capacity */
  chunk **in_use_table;
  size_t table_cap, table_used;
  size_t in_use, peak, reserved;
  uint64_t allocations;
};

static void *host_region_alloc(size_t bytes, void *context) {
  (void)context;
  void *p = NULL;
  return posix_memalign(&p, 4096, bytes) == 0 ? p : NULL;
}
static void host_region_free(void *ptr, size_t bytes, void *context) {
  (void)bytes;
  (void)context;
  free(ptr);
}

static int bin_of(size_t size) {
  int b = 0;
  for (size_t s = size / MIN_CHUNK; s > 1 && b < N_BINS - 1; s >>= 1) ++b;
  return b;
}

static void bin_insert(ct_allocator *a, chunk *c) {
  int b = bin_of(c->size);
  c->bin_prev = NULL;
  c->bin_next = a->bins[b];
  if (a->bins[b]) a->bins[b]->bin_prev = c;
  a->bins[b] = c;
}

static void bin_remove(ct_allocator *a, chunk *c) {
  if (c->bin_prev)
    c->bin_prev->bin_next = c->bin_next;
  else
    a->bins[bin_of(c->size)] = c->bin_next;
  if (c->bin_next) c->bin_next->bin_prev = c->bin_prev;
  c->bin_prev = c->bin_next = NULL;
}

/* ---- the table of chunks in use ------------------------------------------- */

static size_t slot_of(const ct_allocator *a, const void *ptr) {
  return (size_t)(((uintptr_t)ptr >> 8) * 0x9E3779B97F4A7C15ull >> 17) & (a->table_cap - 1);
}

static int table_grow(ct_allocator *a) {
  size_t cap = a->table_cap ? a->table_cap * 2 : 1024;
  chunk **t = calloc(cap, sizeof *t);
  if (t == NULL) return 0;
  chunk **old = a->in_use_table;
  size_t old_cap = a->table_cap;
  a->in_use_table = t;
  a->table_cap = cap;
  for (size_t i = 0; i < old_cap; ++i) {
    if (old[i] == NULL) continue;
    size_t s = slot_of(a, old[i]->ptr);
    while (t[s]) s = (s + 1) & (cap - 1);
    t[s] = old[i];
  }
  free(old);
  return 1;
}

static int table_put(ct_allocator *a, chunk *c) {
  if ((a->table_used + 1) * 2 > a->table_cap && !table_grow(a)) return 0;
  size_t s = slot_of(a, c->ptr);
  while (a->in_use_table[s]) s = (s + 1) & (a->table_cap - 1);
  a->in_use_table[s] = c;
  a->table_used++;
  return 1;
}

/* Removes and returns the in-use chunk at ptr, or NULL. */
static chunk *table_take(ct_allocator *a, const void *ptr) {
  if (a->table_cap == 0) return NULL;
  size_t s = slot_of(a, ptr);
  while (a->in_use_table[s] && a->in_use_table[s]->ptr != ptr) s = (s + 1) & (a->table_cap - 1);
  chunk *c = a->in_use_table[s];
  if (c == NULL) return NULL;
  a->in_use_table[s] = NULL;
  a->table_used--;
  /* re-insert the run that follows, so lookups never stop early */
  for (size_t t = (s + 1) & (a->table_cap - 1); a->in_use_table[t]; t = (t + 1) & (a->table_cap - 1)) {
    chunk *moved = a->in_use_table[t];
    a->in_use_table[t] = NULL;
    size_t u = slot_of(a, moved->ptr);
    while (a->in_use_table[u]) u = (u + 1) & (a->table_cap - 1);
    a->in_use_table[u] = moved;
  }
  return c;
}

/* ---- regions --------------------------------------------------------------- */

static int add_region(ct_allocator *a, size_t bytes) {
  region *r = calloc(1, sizeof *r);
  chunk *c = calloc(1, sizeof *c);
  char *base = r && c ? a->region_alloc(bytes, a->region_context) : NULL;
  if (base == NULL) {
    free(r);
    free(c);
    return 0;
  }
  r->base = base;
  r->size = bytes;
  r->next = a->regions;
  a->regions = r;
  a->n_regions++;
  a->reserved += bytes;
  c->ptr = base;
  c->size = bytes;
  bin_insert(a, c);
  return 1;
}

/* When the device refused a region for another reason than a shortage:
 * fills status (INTERNAL, with the device's reason) and returns 1. */
static int region_failed(ct_allocator *a, size_t nbytes, ct_status *status) {
  char why[768];
  if (a->region_error == NULL || !a->region_error(a->region_context, why, sizeof why)) return 0;
  ct_status_set(status, CT_INTERNAL, "%s could not allocate %zu bytes: %s", a->device_name,
                nbytes, why);
  return 1;
}

ct_allocator *ct_allocator_new_with(const ct_allocator_options *o, ct_status *status) {
  ct_allocator *a = calloc(1, sizeof *a);
  if (a == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory creating an allocator");
    return NULL;
  }
  pthread_mutex_init(&a->mutex, NULL);
  snprintf(a->device_name, sizeof a->device_name, "%s", o->device_name ? o->device_name : "?");
  a->limit = o->limit / MIN_CHUNK * MIN_CHUNK;
  a->allow_growth = o->allow_growth || o->limit == 0;
  a->next_region_bytes = o->initial_region_bytes ? o->initial_region_bytes : (size_t)2 << 20;
  a->region_alloc = o->region_alloc ? o->region_alloc : host_region_alloc;
  a->region_free = o->region_free ? o->region_free : host_region_free;
  a->region_error = o->region_error;
  a->region_context = o->region_context;
  if (!a->allow_growth && !add_region(a, a->limit)) {
    if (!region_failed(a, a->limit, status))
      ct_status_set(status, CT_RESOURCE_EXHAUSTED,
                    "cannot reserve %zu bytes on %s; lower the memory limit or set "
                    "gpu_options.allow_growth",
                    a->limit, a->device_name);
    ct_allocator_free_all(a);
    return NULL;
  }
  return a;
}

void ct_allocator_free_all(ct_allocator *a) {
  if (a == NULL) return;
  /* chunks: every one is either in a bin or in the table */
  for (int b = 0; b < N_BINS; ++b)
    for (chunk *c = a->bins[b]; c;) {
      chunk *next = c->bin_next;
      free(c);
      c = next;
    }
  for (size_t i = 0; i < a->table_cap; ++i) free(a->in_use_table[i]);
  for (region *r = a->regions; r;) {
    region *next = r->next;
    a->region_free(r->base, r->size, a->region_context);
    free(r);
    r = next;
  }
  free(a->in_use_table);
  pthread_mutex_destroy(&a->mutex);
  free(a);
}

/* ---- allocation ---------------------------------------------------------------- */

/* The smallest free chunk of at least size bytes (ties: lowest address). */
static chunk *best_fit(ct_allocator *a, size_t size) {
  for (int b = bin_of(size); b < N_BINS; ++b) {
    chunk *best = NULL;
    for (chunk *c = a->bins[b]; c; c = c->bin_next)
      if (c->size >= size &&
          (best == NULL || c->size < best->size || (c->size == best->size && c->ptr < best->ptr)))
        best = c;
    if (best) return best; /* any chunk of a later bin is larger */
  }
  return NULL;
}

static size_t largest_free(const ct_allocator *a) {
  for (int b = N_BINS - 1; b >= 0; --b) {
    size_t largest = 0;
    for (const chunk *c = a->bins[b]; c; c = c->bin_next)
      if (c->size > largest) largest = c->size;
    if (largest) return largest;
  }
  return 0;
}

/* Reserves a region for a request of `size` bytes; 0 when the limit or the
 * device says no. */
static int grow(ct_allocator *a, size_t size) {
  if (!a->allow_growth) return 0;
  size_t bytes = a->next_region_bytes > size ? a->next_region_bytes : size;
  if (a->limit) {
    size_t room = a->limit - a->reserved;
    if (bytes > room) bytes = room;
    if (bytes < size) return 0;
  }
  if (!add_region(a, bytes)) return 0;
  if (a->next_region_bytes <= ((size_t)1 << 40)) a->next_region_bytes *= 2;
  return 1;
}

size_t ct_allocator_chunk_bytes(size_t nbytes) {
  /* a request past the last whole chunk cannot be met: the largest count,
   * which no region holds, rather than a rounding that wraps to 0 */
  if (nbytes > SIZE_MAX - (MIN_CHUNK - 1)) return SIZE_MAX;
  const size_t size = (nbytes + MIN_CHUNK - 1) / MIN_CHUNK * MIN_CHUNK;
  return size ? size : MIN_CHUNK;
}

void *ct_allocator_alloc(ct_allocator *a, size_t nbytes, ct_status *status) {
  const size_t size = ct_allocator_chunk_bytes(nbytes);
  pthread_mutex_lock(&a->mutex);
  chunk *c = best_fit(a, size);
  if (c == NULL && grow(a, size)) c = best_fit(a, size);
  if (c && !table_put(a, c)) c = NULL;
  if (c == NULL) {
    size_t in_use = a->in_use, largest = largest_free(a), limit = a->limit;
    const int failed = region_failed(a, nbytes, status);
    pthread_mutex_unlock(&a->mutex);
    if (failed) return NULL;
    char limit_text[64];
    if (limit)
      snprintf(limit_text, sizeof limit_text, "limit %zu bytes", limit);
    else
      snprintf(limit_text, sizeof limit_text, "no limit, the device refused more");
    ct_status_set(status, CT_RESOURCE_EXHAUSTED,
                  "out of memory on %s allocating %zu bytes: %s, %zu in use, largest free chunk "
                  "%zu bytes; lower the batch size, raise session.memory_limit_mb (or "
                  "gpu_options.per_process_gpu_memory_fraction), or set gpu_options.allow_growth",
                  a->device_name, nbytes, limit_text, in_use, largest);
    return NULL;
  }
  bin_remove(a, c);
  if (c->size - size >= MIN_CHUNK) { /* split off the rest */
    chunk *rest = calloc(1, sizeof *rest);
    if (rest) {
      rest->ptr = c->ptr + size;
      rest->size = c->size - size;
      rest->prev = c;
      rest->next = c->next;
      if (c->next) c->next->prev = rest;
      c->next = rest;
      c->size = size;
      bin_insert(a, rest);
    }
  }
  c->in_use = 1;
  a->in_use += c->size;
  if (a->in_use > a->peak) a->peak = a->in_use;
  a->allocations++;
  pthread_mutex_unlock(&a->mutex);
  return c->ptr;
}

/* Merges c's right neighbour into c (both free). */
static void merge_next(ct_allocator *a, chunk *c) {
  chunk *n = c->next;
  bin_remove(a, n);
  c->size += n->size;
  c->next = n->next;
  if (n->next) n->next->prev = c;
  free(n);
}

void ct_allocator_free(ct_allocator *a, void *ptr) {
  if (ptr == NULL) return;
  pthread_mutex_lock(&a->mutex);
  chunk *c = table_take(a, ptr);
  assert(c != NULL && "ct_allocator_free: a pointer this allocator did not hand out");
  if (c == NULL) {
    pthread_mutex_unlock(&a->mutex);
    return;
  }
  c->in_use = 0;
  a->in_use -= c->size;
  if (c->next && !c->next->in_use) merge_next(a, c);
  if (c->prev && !c->prev->in_use) {
    chunk *p = c->prev;
    bin_remove(a, p);
    p->size += c->size;
    p->next = c->next;
    if (c->next) c->next->prev = p;
    free(c);
    c = p;
  }
  bin_insert(a, c);
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
  s.largest_free_chunk = largest_free(a);
  s.n_regions = a->n_regions;
  pthread_mutex_unlock(&a->mutex);
  return s;
}

void ct_allocator_reset_peak(ct_allocator *a) {
  pthread_mutex_lock(&a->mutex);
  a->peak = a->in_use;
  pthread_mutex_unlock(&a->mutex);
}
