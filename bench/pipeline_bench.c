/* Times ctower's input pipeline alone on an image folder: --threads workers
 * read, decode and augment (random crop, flip) the training split's
 * batches while the calling thread only takes them. Prints one JSON line.
 * bench/jpeg_pipeline_bench.py runs it beside PyTorch's DataLoader doing
 * the same work.
 *
 *   pipeline_bench DIR [--size 256] [--crop 224] [--batch 64] [--threads 2]
 *                      [--prefetch 2] [--batches 40] [--warmup 4]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctower/ctower.h"

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int usage(void) {
  fprintf(stderr,
          "usage: pipeline_bench DIR [--size N] [--crop N] [--batch N] [--threads N] "
          "[--prefetch N] [--batches N] [--warmup N]\n");
  return 2;
}

/* The batches handed out from now on: n full ones, over epochs as needed. */
static int take(ct_pipeline *p, int n, int64_t *epoch, ct_status *status) {
  for (int taken = 0; taken < n;) {
    ct_pipeline_batch batch;
    const int64_t count = ct_pipeline_next(p, &batch, status);
    if (count < 0) return 1;
    if (count == 0)
      ct_pipeline_start_epoch(p, ++*epoch);
    else
      ++taken;
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2 || argv[1][0] == '-') return usage();
  long size = 256, crop = 224, batch = 64, threads = 2, prefetch = 2, batches = 40, warmup = 4;
  static const char *const names[] = {"--size",     "--crop",    "--batch", "--threads",
                                      "--prefetch", "--batches", "--warmup"};
  long *const values[] = {&size, &crop, &batch, &threads, &prefetch, &batches, &warmup};
  for (int i = 2; i < argc; i += 2) {
    int known = 0;
    for (size_t k = 0; k < sizeof names / sizeof names[0]; ++k)
      if (strcmp(argv[i], names[k]) == 0 && i + 1 < argc) {
        *values[k] = strtol(argv[i + 1], NULL, 10);
        known = 1;
      }
    if (!known) return usage();
  }
  ct_status status = CT_STATUS_INIT;
  const ct_dataset_read_options read = {{size, size, 3}, 0, 0, 0, 0, NULL};
  ct_dataset *ds = ct_dataset_open_image_folder(argv[1], 1, &read, &status);
  ct_batcher *batcher = ds ? ct_batcher_new(ds, batch, 1, 1, &status) : NULL;
  const ct_augment_options augment = {{crop, crop}, 0, 1, 0.0, {1.0, 1.0}, 0};
  ct_pipeline *p = NULL;
  if (batcher && ct_batcher_set_augment(batcher, &augment, 1, &status) == 0) {
    const ct_pipeline_options options = {.threads = (int)threads, .prefetch = (int)prefetch};
    p = ct_pipeline_new(batcher, &options, &status);
  } else {
    ct_batcher_free(batcher);
  }
  int64_t epoch = 0;
  double start = 0, seconds = 0;
  int failed = p == NULL || take(p, (int)warmup, &epoch, &status);
  if (!failed) {
    start = now_seconds();
    failed = take(p, (int)batches, &epoch, &status);
    seconds = now_seconds() - start;
  }
  ct_pipeline_free(p);
  ct_dataset_free(ds);
  if (failed) {
    fprintf(stderr, "pipeline_bench: %s\n", status.message);
    return 1;
  }
  const double images = (double)batch * (double)batches;
  printf(
      "{\"threads\": %ld, \"batch\": %ld, \"batches\": %ld, \"images_per_sec\": %.1f, "
      "\"images_per_sec_per_thread\": %.1f}\n",
      threads, batch, batches, images / seconds, images / seconds / (double)threads);
  return 0;
}
