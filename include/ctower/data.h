/* ctower data: IDX files, datasets and the batcher that feeds training.
 *
 * A dataset holds every example in host memory as u8 pixels (NHWC) and u8
 * labels. A batcher walks a dataset in epochs: the order of epoch e depends
 * only on (seed, e), so a run resumed at epoch e sees the same batches it
 * would have seen without stopping.
 */
#ifndef CTOWER_DATA_H
#define CTOWER_DATA_H

#include <stdint.h>

#include "ctower/status.h"
#include "ctower/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where the Debian package dataset-fashion-mnist puts Fashion-MNIST. */
#define CT_FASHION_MNIST_DIR "/usr/share/datasets/fashion-mnist"

/* ---- IDX files ------------------------------------------------------------ */

/* Reads an IDX file (the MNIST format), gzip-compressed or plain.
 *
 * Element types 0x08 (u8 -> CT_U8), 0x0C (big-endian i32 -> CT_I32) and 0x0D
 * (big-endian f32 -> CT_F32) of rank 1..5 are supported. Returns a new tensor
 * the caller frees with ct_tensor_free, or NULL with status set to:
 *   CT_NOT_FOUND       the file does not exist (the message names the path);
 *   CT_UNAVAILABLE     it exists but cannot be opened (e.g. permissions);
 *   CT_UNIMPLEMENTED   another element type, or a rank above 5;
 *   CT_DATA_LOSS       not an IDX file, truncated (the message gives the bytes
 *                      expected and found), longer than its header says,
 *                      absurd dimensions (over 2^34 bytes), or a broken gzip
 *                      stream;
 *   CT_RESOURCE_EXHAUSTED  out of host memory. */
ct_tensor *ct_idx_read(const char *path, ct_status *status);

/* ---- datasets --------------------------------------------------------------- */

typedef struct ct_dataset ct_dataset;

/* Opens the MNIST-format train (train != 0: train-images-idx3-ubyte and
 * train-labels-idx1-ubyte) or test (t10k-...) split in dir, taking each file's
 * ".gz" form when present and the plain file otherwise. dir NULL or "" means
 * CT_FASHION_MNIST_DIR. Images must be u8 [N, H, W], labels u8 [N] with the
 * same N, every label below 10. Returns a dataset the caller frees with
 * ct_dataset_free, or NULL with status set (CT_NOT_FOUND for missing files,
 * CT_DATA_LOSS for files that break the rules above, and the codes of
 * ct_idx_read). */
ct_dataset *ct_dataset_open_mnist(const char *dir, int train, ct_status *status);

/* A dataset of n random examples of shape [h, w, c] and num_classes classes
 * (1..256), the same for the same arguments on every platform. Labels are
 * uniform; each image is uniform noise in 0..127 plus 128 on the band of
 * pixels that belongs to its class, so a model can learn it (useful for
 * benchmarks and smoke tests). Returns a dataset the caller frees with
 * ct_dataset_free, or NULL with CT_INVALID_ARGUMENT for bad sizes or
 * CT_RESOURCE_EXHAUSTED when it would not fit in memory. */
ct_dataset *ct_dataset_new_synthetic(int64_t n, int64_t h, int64_t w, int64_t c, int num_classes,
                                     uint64_t seed, ct_status *status);

/* Number of examples. */
int64_t ct_dataset_size(const ct_dataset *dataset);
/* Image height, width and channels (channels is 1 for MNIST). Any output
 * pointer may be NULL. */
void ct_dataset_image_shape(const ct_dataset *dataset, int64_t *h, int64_t *w, int64_t *c);
/* Number of classes; labels lie in [0, classes). 10 for MNIST. */
int ct_dataset_num_classes(const ct_dataset *dataset);
/* Frees the dataset; NULL is allowed. Batchers over it must be freed first. */
void ct_dataset_free(ct_dataset *dataset);

/* ---- batcher ---------------------------------------------------------------- */

typedef struct ct_batcher ct_batcher;

/* A batcher over ds (borrowed: ds must outlive the batcher) that hands out
 * batches of batch_size examples, shuffled per epoch when shuffle != 0 with
 * an order that depends only on (seed, epoch). It starts at epoch 0. Returns
 * NULL with CT_INVALID_ARGUMENT when batch_size < 1 or ds is NULL, or
 * CT_RESOURCE_EXHAUSTED when out of memory. Free with ct_batcher_free. */
ct_batcher *ct_batcher_new(const ct_dataset *ds, int64_t batch_size, int shuffle, uint64_t seed,
                           ct_status *status);

/* Batches in one epoch: ceil(size / batch_size); the last may be short. */
int64_t ct_batcher_batches_per_epoch(const ct_batcher *batcher);

/* Rewinds to the start of the given epoch and computes its order: a
 * Fisher-Yates shuffle driven by xoshiro256** seeded from (seed, epoch), or
 * the identity when shuffle is off. */
void ct_batcher_start_epoch(ct_batcher *batcher, int64_t epoch);

/* Fills the next batch: images as f32 NHWC (pixel / 255), labels as i32.
 * images must hold batch_size * H * W * C floats and labels batch_size ints.
 * Returns the number of examples written: batch_size, fewer for the last
 * batch of the epoch, 0 once the epoch is over. Allocates nothing. */
int64_t ct_batcher_next(ct_batcher *batcher, float *images, int32_t *labels);

/* The size of the batch ct_batcher_next would hand out now (0 once the
 * epoch is over). */
int64_t ct_batcher_next_size(const ct_batcher *batcher);

/* Like ct_batcher_next, but writes only rows [first, first + rows) of the
 * batch (clipped to it) into images and labels from their start, and moves
 * past the whole batch: a process of a job reads its own examples of each
 * global batch. Returns the whole batch's size. */
int64_t ct_batcher_next_rows(ct_batcher *batcher, int64_t first, int64_t rows, float *images,
                             int32_t *labels);

/* Index within the epoch of the next example ct_batcher_next will hand out
 * (0 at the start of an epoch, the dataset size at its end). */
int64_t ct_batcher_position(const ct_batcher *batcher);

/* Moves to position (clamped to 0..size) within the current epoch, so a
 * resumed run continues where a checkpoint left off. */
void ct_batcher_seek(ct_batcher *batcher, int64_t position);

/* Frees the batcher; NULL is allowed. */
void ct_batcher_free(ct_batcher *batcher);

#ifdef __cplusplus
}
#endif
#endif
