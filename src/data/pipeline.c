/* The input pipeline: worker threads fill the coming batches of a batcher
 * into a ring of slots while the training thread trains on the batch
 * before.
 *
 * Batches are numbered (tickets) in the order the training thread takes
 * them; ticket t lives in slot t % n_slots. A worker either claims a few
 * rows of the oldest batch still being filled, or, when none is left and a
 * slot is free, takes the batcher's next batch into that slot: the rows
 * this process reads of it (ct_batch_parts_rows, once per batch) and their
 * example indices; the end of an epoch is a batch of 0 examples,
 * after which the batcher starts the next epoch. Every row is written by
 * ct_batcher_fill, which depends only on (epoch, example): the threads
 * change when a row is written, never what. */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "data/batcher_internal.h"
#include "data/dataset_internal.h"

enum { SLOT_FREE = 0, SLOT_FILLING, SLOT_READY, SLOT_FAILED };

typedef struct slot {
  int state;
  int64_t ticket;
  int64_t epoch, position; /* where the batch starts */
  int64_t count, first, rows;
  int64_t *sizes;        /* the rows of each of this process's parts (ct_batch_parts_rows) */
  int64_t *indices;      /* rows example indices */
  int64_t claimed, done; /* rows handed to workers, rows written */
  int64_t error_row;     /* the first row that failed (SLOT_FAILED when all are in) */
  ct_status error;
  ct_tensor *images, *labels;
} slot;

struct ct_pipeline {
  ct_batcher *batcher; /* owned; where the workers take the next batch from (under lock) */
  ct_pipeline_options options;
  int64_t pixels;   /* floats per image */
  int64_t max_rows; /* rows a slot holds */
  pthread_mutex_t lock;
  pthread_cond_t changed; /* any slot's state, busy, stop */
  pthread_t *threads;
  int n_threads; /* started */
  int n_slots;
  slot *slots;
  int64_t next_ticket; /* the next batch to take from the batcher */
  int64_t head;        /* the next ticket the training thread takes */
  int handed;          /* head - 1 is handed out and still in use */
  int halted;          /* a batch failed: take no more until a reset */
  int pausing;         /* a reset waits for busy workers: claim nothing */
  int busy;            /* workers filling rows outside the lock */
  int stop;
  int64_t epoch, position; /* where the training thread stands */
};

static slot *slot_of(ct_pipeline *p, int64_t ticket) { return &p->slots[ticket % p->n_slots]; }

int64_t ct_batch_parts_rows(const ct_batch_parts *split, int64_t count, int64_t *first,
                            int64_t *sizes) {
  if (split->parts <= 0) {
    *first = 0, sizes[0] = count;
    return count;
  }
  int64_t rows = 0, given = 0;
  for (int k = 0; k < split->first + split->mine; ++k) {
    /* even, or in turns */
    int64_t size = count / split->parts + (k < count % split->parts);
    if (split->part_rows > 0) {
      const int64_t left = count - given;
      size = left < split->part_rows ? left : split->part_rows;
    }
    if (k == split->first) *first = given;
    if (k >= split->first) rows += sizes[k - split->first] = size;
    given += size;
  }
  if (split->mine == 0) *first = given;
  return rows;
}

/* A slot's tensor, in the options' memory when they name one. */
static ct_tensor *batch_tensor_new(const ct_pipeline *p, ct_dtype dtype, const ct_shape *shape,
                                   ct_status *status) {
  const ct_host_memory *m = &p->options.memory;
  if (m->alloc == NULL) return ct_tensor_new(dtype, shape, status);
  ct_tensor *t = calloc(1, sizeof *t);
  if (t == NULL) return NULL;
  *t = (ct_tensor){dtype, *shape, NULL, 0};
  if ((t->data = m->alloc(ct_tensor_nbytes(t), m->context)) == NULL) {
    free(t);
    return NULL;
  }
  memset(t->data, 0, ct_tensor_nbytes(t)); /* as ct_tensor_new's */
  return t;
}

static void batch_tensor_free(const ct_pipeline *p, ct_tensor *t) {
  const ct_host_memory *m = &p->options.memory;
  if (t && m->alloc) m->free(t->data, ct_tensor_nbytes(t), m->context);
  ct_tensor_free(t);
}

/* Takes the batcher's next batch into the free slot of next_ticket. */
static void take_batch(ct_pipeline *p, slot *s) {
  ct_batcher *b = p->batcher;
  s->ticket = p->next_ticket++;
  s->epoch = ct_batcher_epoch(b);
  s->position = ct_batcher_position(b);
  s->count = ct_batcher_next_size(b);
  s->rows = ct_batch_parts_rows(&p->options.split, s->count, &s->first, s->sizes);
  memcpy(s->indices, ct_batcher_order(b) + s->position + s->first,
         (size_t)s->rows * sizeof *s->indices);
  s->claimed = s->done = 0;
  s->error_row = -1;
  s->state = s->rows == 0 ? SLOT_READY : SLOT_FILLING;
  if (s->count == 0)
    ct_batcher_start_epoch(b, s->epoch + 1); /* the end of the epoch: go on with the next */
  else
    ct_batcher_seek(b, s->position + s->count);
}

/* A worker's next job under the lock: rows [*from, *to) of *out; 0 when
 * there is none now. */
static int find_work(ct_pipeline *p, slot **out, int64_t *from, int64_t *to) {
  if (p->pausing) return 0;
  for (int64_t t = p->head; t < p->next_ticket; ++t) {
    slot *s = slot_of(p, t);
    if (s->state != SLOT_FILLING || s->claimed >= s->rows) continue;
    int64_t chunk = s->rows / (4 * p->options.threads);
    chunk = chunk < 1 ? 1 : chunk > 16 ? 16 : chunk;
    *out = s, *from = s->claimed;
    *to = s->claimed + chunk < s->rows ? s->claimed + chunk : s->rows;
    s->claimed = *to;
    return 1;
  }
  /* a free slot: the ring holds the handed-out batch and the tickets after it */
  const int64_t oldest = p->handed ? p->head - 1 : p->head;
  if (!p->halted && p->next_ticket - oldest < p->n_slots) {
    take_batch(p, slot_of(p, p->next_ticket));
    pthread_cond_broadcast(&p->changed);
    return find_work(p, out, from, to);
  }
  return 0;
}

static void *worker(void *arg) {
  ct_pipeline *p = arg;
  const ct_dataset *ds = ct_batcher_dataset(p->batcher);
  uint8_t *scratch = malloc((size_t)(ds->h * ds->w * ds->c));
  pthread_mutex_lock(&p->lock);
  while (!p->stop) {
    slot *s;
    int64_t from, to;
    if (!find_work(p, &s, &from, &to)) {
      pthread_cond_wait(&p->changed, &p->lock);
      continue;
    }
    ++p->busy;
    pthread_mutex_unlock(&p->lock);
    ct_status st = CT_STATUS_INIT;
    int64_t failed_row = -1;
    float *images = ct_tensor_f32(s->images);
    int32_t *labels = ct_tensor_i32(s->labels);
    for (int64_t i = from; i < to && failed_row < 0; ++i) {
      if (scratch == NULL) {
        ct_status_set(&st, CT_RESOURCE_EXHAUSTED, "out of host memory in the input pipeline");
        failed_row = i;
      } else if (ct_batcher_fill(p->batcher, s->epoch, s->indices[i], scratch,
                                 images + i * p->pixels, &labels[i], &st)) {
        failed_row = i;
      }
    }
    pthread_mutex_lock(&p->lock);
    --p->busy;
    s->done += to - from;
    if (failed_row >= 0 && (s->error_row < 0 || failed_row < s->error_row)) {
      s->error_row = failed_row; /* the first bad row's error, whoever meets it first */
      s->error = st;
    }
    if (s->done == s->rows) {
      s->state = s->error_row >= 0 ? SLOT_FAILED : SLOT_READY;
      if (s->error_row >= 0) p->halted = 1;
    }
    pthread_cond_broadcast(&p->changed);
  }
  pthread_mutex_unlock(&p->lock);
  free(scratch);
  return NULL;
}

/* The rows a batch holds: max_rows, or the batch size when that is 0 or
 * smaller. */
static int64_t max_rows(const ct_pipeline_options *o, int64_t batch) {
  return o->max_rows > 0 && o->max_rows < batch ? o->max_rows : batch;
}

/* INVALID_ARGUMENT for threads or prefetch below 1, parts a split has
 * not, or a split that gives this process more rows of a batch than it
 * holds; returns 1 then. */
static int check_options(const ct_pipeline_options *o, int64_t batch, ct_status *status) {
  const ct_batch_parts *s = &o->split;
  if (o->threads < 1 || o->prefetch < 1) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "the input pipeline needs at least 1 thread and 1 batch of prefetch, got %d "
                  "and %d",
                  o->threads, o->prefetch);
    return 1;
  }
  if (s->parts < 0 || s->first < 0 || s->mine < 0 || s->part_rows < 0 ||
      (s->parts > 0 && s->first + s->mine > s->parts)) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "the input pipeline cannot read parts %d .. %d of a batch split in %d parts "
                  "(of %lld rows each); give parts 0 <= first <= first + mine <= parts",
                  s->first, s->first + s->mine - 1, s->parts, (long long)s->part_rows);
    return 1;
  }
  int64_t first, *sizes = calloc((size_t)s->mine + 1, sizeof *sizes);
  const int64_t rows = sizes ? ct_batch_parts_rows(s, batch, &first, sizes) : 0;
  free(sizes);
  if (rows > max_rows(o, batch)) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "the input pipeline's split gives this process %lld rows of a batch of %lld, "
                  "more than its batches hold (max_rows %lld); raise max_rows",
                  (long long)rows, (long long)batch, (long long)o->max_rows);
    return 1;
  }
  return 0;
}

ct_pipeline *ct_pipeline_new(ct_batcher *batcher, const ct_pipeline_options *options,
                             ct_status *status) {
  if (check_options(options, ct_batcher_batch_size(batcher), status)) {
    ct_batcher_free(batcher);
    return NULL;
  }
  ct_pipeline *p = calloc(1, sizeof *p);
  if (p == NULL) {
    ct_batcher_free(batcher);
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory for the input pipeline");
    return NULL;
  }
  p->batcher = batcher;
  p->options = *options;
  pthread_mutex_init(&p->lock, NULL);
  pthread_cond_init(&p->changed, NULL);
  int64_t h, w, c;
  ct_batcher_image_shape(batcher, &h, &w, &c);
  const int64_t batch = ct_batcher_batch_size(batcher);
  p->pixels = h * w * c;
  p->max_rows = max_rows(options, batch);
  p->n_slots = options->prefetch + 1; /* the batch in use and those ahead */
  p->epoch = ct_batcher_epoch(batcher);
  p->position = ct_batcher_position(batcher);
  p->slots = calloc((size_t)p->n_slots, sizeof *p->slots);
  p->threads = calloc((size_t)options->threads, sizeof *p->threads);
  int failed = p->slots == NULL || p->threads == NULL;
  const int64_t rows = p->max_rows;
  const ct_shape is = ct_shape_of(4, rows, h, w, c), ls = ct_shape_of(1, rows);
  for (int i = 0; !failed && i < p->n_slots; ++i) {
    slot *s = &p->slots[i];
    s->indices = malloc((size_t)rows * sizeof *s->indices);
    s->sizes = calloc((size_t)options->split.mine + 1, sizeof *s->sizes);
    s->images = batch_tensor_new(p, CT_F32, &is, status);
    s->labels = s->images ? batch_tensor_new(p, CT_I32, &ls, status) : NULL;
    failed = s->indices == NULL || s->sizes == NULL || s->labels == NULL;
  }
  if (failed) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED,
                  "out of host memory for %d batches of %lld images of %lldx%lldx%lld; lower "
                  "dataset.prefetch or dataset.batch_size",
                  p->n_slots, (long long)rows, (long long)h, (long long)w, (long long)c);
    ct_pipeline_free(p);
    return NULL;
  }
  /* the workers leave signals (SIGINT, SIGTERM) to the training thread */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  for (int i = 0; i < options->threads; ++i) {
    if (pthread_create(&p->threads[i], NULL, worker, p) != 0) {
      ct_status_set(status, CT_UNAVAILABLE,
                    "could not start input pipeline thread %d of %d; lower dataset.threads", i + 1,
                    options->threads);
      failed = 1;
      break;
    }
    p->n_threads = i + 1;
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (failed) {
    ct_pipeline_free(p);
    return NULL;
  }
  return p;
}

/* Drops every batch prepared and moves the batcher to (epoch, position).
 * Called with the lock held. */
static void reset(ct_pipeline *p, int64_t epoch, int64_t position) {
  p->pausing = 1;
  while (p->busy > 0) pthread_cond_wait(&p->changed, &p->lock);
  for (int i = 0; i < p->n_slots; ++i) p->slots[i].state = SLOT_FREE;
  if (ct_batcher_epoch(p->batcher) != epoch) ct_batcher_start_epoch(p->batcher, epoch);
  ct_batcher_seek(p->batcher, position);
  p->head = p->next_ticket;
  p->handed = p->halted = p->pausing = 0;
  pthread_cond_broadcast(&p->changed);
}

/* Moves the training thread to (epoch, position), keeping what the workers
 * prepared when it is what comes there. */
static void move_to(ct_pipeline *p, int64_t epoch, int64_t position) {
  pthread_mutex_lock(&p->lock);
  if (p->handed) { /* the batch handed out is no longer in use */
    p->handed = 0;
    pthread_cond_broadcast(&p->changed);
  }
  /* the end of epoch - 1, then epoch from its start, as the workers go */
  while (p->head < p->next_ticket && slot_of(p, p->head)->state == SLOT_READY &&
         slot_of(p, p->head)->count == 0 && slot_of(p, p->head)->epoch < epoch)
    ++p->head;
  int keep;
  if (p->head < p->next_ticket) {
    const slot *s = slot_of(p, p->head);
    keep = s->epoch == epoch && s->position == position;
  } else {
    keep = ct_batcher_epoch(p->batcher) == epoch && ct_batcher_position(p->batcher) == position;
  }
  if (!keep) reset(p, epoch, position);
  p->epoch = epoch;
  p->position = position;
  pthread_cond_broadcast(&p->changed);
  pthread_mutex_unlock(&p->lock);
}

void ct_pipeline_start_epoch(ct_pipeline *p, int64_t epoch) { move_to(p, epoch, 0); }

void ct_pipeline_seek(ct_pipeline *p, int64_t position) {
  const int64_t n = ct_dataset_size(ct_batcher_dataset(p->batcher));
  move_to(p, p->epoch, position < 0 ? 0 : position > n ? n : position);
}

int64_t ct_pipeline_next(ct_pipeline *p, ct_pipeline_batch *batch, ct_status *status) {
  pthread_mutex_lock(&p->lock);
  if (p->handed) {
    p->handed = 0;
    pthread_cond_broadcast(&p->changed);
  }
  int64_t result;
  for (;;) {
    if (p->head < p->next_ticket) {
      slot *s = slot_of(p, p->head);
      if (s->state == SLOT_FAILED) {
        *status = s->error;
        result = -1;
        break;
      }
      if (s->state == SLOT_READY) {
        *batch = (ct_pipeline_batch){s->count, s->first, s->rows, s->images, s->labels, s->sizes};
        result = s->count;
        if (s->count > 0) { /* the end of the epoch stays until the next one starts */
          ++p->head;
          p->handed = 1;
          p->position = s->position + s->count;
        }
        break;
      }
    }
    pthread_cond_wait(&p->changed, &p->lock);
  }
  pthread_mutex_unlock(&p->lock);
  return result;
}

int64_t ct_pipeline_peek(ct_pipeline *p, ct_pipeline_batch *batch) {
  pthread_mutex_lock(&p->lock);
  int64_t result = 0;
  if (p->head < p->next_ticket) {
    const slot *s = slot_of(p, p->head);
    if (s->state == SLOT_READY && s->count > 0) {
      *batch = (ct_pipeline_batch){s->count, s->first, s->rows, s->images, s->labels, s->sizes};
      result = s->count;
    }
  }
  pthread_mutex_unlock(&p->lock);
  return result;
}

int64_t ct_pipeline_position(const ct_pipeline *p) { return p->position; }

int64_t ct_pipeline_batches_per_epoch(const ct_pipeline *p) {
  return ct_batcher_batches_per_epoch(p->batcher);
}

void ct_pipeline_image_shape(const ct_pipeline *p, int64_t *h, int64_t *w, int64_t *c) {
  ct_batcher_image_shape(p->batcher, h, w, c);
}

void ct_pipeline_free(ct_pipeline *p) {
  if (p == NULL) return;
  pthread_mutex_lock(&p->lock);
  p->stop = 1;
  pthread_cond_broadcast(&p->changed);
  pthread_mutex_unlock(&p->lock);
  for (int i = 0; i < p->n_threads; ++i) pthread_join(p->threads[i], NULL);
  for (int i = 0; p->slots && i < p->n_slots; ++i) {
    free(p->slots[i].indices);
    free(p->slots[i].sizes);
    batch_tensor_free(p, p->slots[i].images);
    batch_tensor_free(p, p->slots[i].labels);
  }
  free(p->slots);
  free(p->threads);
  pthread_cond_destroy(&p->changed);
  pthread_mutex_destroy(&p->lock);
  ct_batcher_free(p->batcher);
  free(p);
}
