/* ctower data: IDX files, datasets and the batcher that feeds training.
 *
 * A dataset hands out examples by index as u8 pixels (HWC) and a label.
 * IDX, CIFAR and synthetic datasets hold every example in host memory; image
 * folders and TFRecord files are indexed when opened and each example is
 * read and decoded from its file when asked for, so a dataset may be larger
 * than memory. A batcher walks a dataset in epochs: the order of epoch e
 * depends only on (seed, e), so a run resumed at epoch e sees the same
 * batches it would have seen without stopping.
 *
 * Threads: once opened, a dataset may be read (ct_dataset_read and the
 * queries below) from several threads at once; each read opens its own file
 * handle. A batcher belongs to one thread; a pipeline runs a batcher on
 * worker threads, ahead of training.
 */
#ifndef CTOWER_DATA_H
#define CTOWER_DATA_H

#include <stdint.h>
#include <stdio.h>

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
 * benchmarks and smoke tests). The examples are generated, all at once,
 * when the first is read: a dataset only asked its size and shape holds
 * nothing (a read then fails with CT_RESOURCE_EXHAUSTED when they do not fit
 * in memory). Returns a dataset the caller frees with ct_dataset_free, or
 * NULL with CT_INVALID_ARGUMENT for bad sizes. */
ct_dataset *ct_dataset_new_synthetic(int64_t n, int64_t h, int64_t w, int64_t c, int num_classes,
                                     uint64_t seed, ct_status *status);

/* How the CIFAR, image-folder and TFRecord readers read their files. Zero
 * everywhere (then fill image_shape) is a fine start. */
typedef struct ct_dataset_read_options {
  int64_t image_shape[3]; /* image folders, TFRecord: [height, width, channels] every image is
                             converted to (channels 1 or 3: gray <-> RGB, alpha dropped) and
                             resized to (bilinear) */
  int num_classes;        /* TFRecord: labels lie in [0, num_classes) */
  int64_t label_offset;   /* TFRecord: subtracted from each stored label (1 for
                             tf_cnn_benchmarks' ImageNet with 1000 classes) */
  int coarse_labels;      /* CIFAR-100: the 20 superclasses instead of the 100 classes */
  int skip_bad_examples;  /* a bad example is skipped with a warning instead of failing */
  FILE *log;              /* where warnings go; NULL: stderr */
} ct_dataset_read_options;

/* Opens the binary version of CIFAR-10 (classes 10: data_batch_1.bin ..
 * data_batch_5.bin for train, test_batch.bin for test) or CIFAR-100 (classes
 * 100: train.bin, test.bin) in dir, as https://www.cs.toronto.edu/~kriz/cifar.html
 * hands them out: each record a label byte (CIFAR-100: the coarse, then the
 * fine label) and 3072 pixel bytes, the 32x32 red plane, then green, then
 * blue. Images become [32, 32, 3] HWC. Reads only coarse_labels,
 * skip_bad_examples and log of options (NULL: defaults). Returns a dataset
 * the caller frees with ct_dataset_free, or NULL with status set:
 *   CT_NOT_FOUND       a file is missing (the message names it);
 *   CT_INVALID_ARGUMENT classes is neither 10 nor 100;
 *   CT_DATA_LOSS       a file whose size is not a whole number of records
 *                      (truncated), or a label out of range (naming the file
 *                      and record) -- unless skip_bad_examples, which drops
 *                      them with a warning giving the count. */
ct_dataset *ct_dataset_open_cifar(const char *dir, int classes, int train,
                                  const ct_dataset_read_options *options, ct_status *status);

/* Opens an image folder: dir/train/<class>/<image> (train != 0) or
 * dir/test/<class>/<image>, images .jpg, .jpeg or .png (any case; the
 * content decides how it is decoded), class names sorted bytewise. The test
 * split takes its class numbers from the train folder's classes. Files
 * starting with '.' are ignored. Images are decoded when read (see
 * ct_dataset_read_options.image_shape). Returns NULL with status set:
 *   CT_NOT_FOUND        the split's folder is missing, or a test class has
 *                       no train folder (naming it);
 *   CT_INVALID_ARGUMENT image_shape is not [H >= 1, W >= 1, 1 or 3];
 *   CT_DATA_LOSS        no class folder, an empty class folder, a file that
 *                       is not .jpg/.jpeg/.png -- the last two are skipped
 *                       with a warning under skip_bad_examples. */
ct_dataset *ct_dataset_open_image_folder(const char *dir, int train,
                                         const ct_dataset_read_options *options, ct_status *status);

/* Opens TFRecord files of tf.Example records, each with "image/encoded"
 * (JPEG or PNG bytes) and "image/class/label" (int64): the train split is
 * the files dir/train-... (tf_cnn_benchmarks' ImageNet names) or else the
 * files ending in .tfrecord in dir/train, the test split dir/validation-...
 * or else the .tfrecord files in dir/test; files are taken in name order. Opening reads each
 * record's header (checking the CRC of its length and that the file holds the whole record) and
 * remembers where each record is; its data's CRC, the example, its label and its image are checked
 * when read. A label becomes stored - label_offset and must lie in [0, num_classes). Returns NULL
 * with status set: CT_NOT_FOUND when no file matches; CT_INVALID_ARGUMENT for a bad image_shape or
 * num_classes < 1; CT_DATA_LOSS for a truncated record or a length failing its CRC (naming the file
 * and byte offset; under skip_bad_examples the rest of that file is skipped with a warning). */
ct_dataset *ct_dataset_open_tfrecord(const char *dir, int train,
                                     const ct_dataset_read_options *options, ct_status *status);

/* A dataset to open by its format's name (ct_dataset_open_named): the
 * fields its reader takes. */
typedef struct ct_dataset_request {
  const char *name; /* one of ct_dataset_names */
  const char *path; /* the folder of its files (NULL or "": the default, for MNIST's) */
  int train;        /* the training split, else the test split */
  int64_t examples; /* synthetic: how many */
  uint64_t seed;    /* synthetic: its examples' stream */
  ct_dataset_read_options read; /* synthetic too: image_shape and num_classes */
} ct_dataset_request;

/* The formats ct_dataset_open_named reads, NULL-terminated:
 * "fashion_mnist" and "mnist" (ct_dataset_open_mnist), "synthetic"
 * (ct_dataset_new_synthetic), "cifar10" and "cifar100"
 * (ct_dataset_open_cifar), "image_folder", "tfrecord". */
extern const char *const ct_dataset_names[];

/* Opens the dataset `request` names through its format's reader. NULL
 * with status set: CT_INVALID_ARGUMENT for a name no reader has (the
 * message lists the known ones), else the reader's. */
ct_dataset *ct_dataset_open_named(const ct_dataset_request *request, ct_status *status);

/* Reads example `index` (0 <= index < size): its H * W * C u8 pixels (HWC)
 * into pixels and its label into *label. Returns 0, or 1 with status
 * CT_DATA_LOSS (or CT_NOT_FOUND / CT_UNAVAILABLE for a file gone or
 * unreadable) naming the file, the record and what to do. Under
 * skip_bad_examples a bad example is replaced by the next good one (in
 * index order) and a warning counts the examples skipped so far. Safe to
 * call from several threads at once. */
int ct_dataset_read(const ct_dataset *dataset, int64_t index, uint8_t *pixels, int32_t *label,
                    ct_status *status);

/* The name of class k of an image folder, or NULL for other datasets (and
 * k out of range). */
const char *ct_dataset_class_name(const ct_dataset *dataset, int k);

/* Bad examples skipped so far (at open and while reading). */
int64_t ct_dataset_skipped(const ct_dataset *dataset);

/* Number of examples. */
int64_t ct_dataset_size(const ct_dataset *dataset);
/* Image height, width and channels (channels is 1 for MNIST). Any output
 * pointer may be NULL. */
void ct_dataset_image_shape(const ct_dataset *dataset, int64_t *h, int64_t *w, int64_t *c);
/* Number of classes; labels lie in [0, classes). 10 for MNIST. */
int ct_dataset_num_classes(const ct_dataset *dataset);
/* Frees the dataset; NULL is allowed. Batchers over it must be freed first. */
void ct_dataset_free(ct_dataset *dataset);

/* Keeps every example decoded (before augmentation) in host memory once it
 * has been read: later reads copy it instead of opening and decoding its
 * file (dataset.cache). For datasets already held in memory (IDX, CIFAR,
 * synthetic) it does nothing. Returns 0, or 1 with CT_RESOURCE_EXHAUSTED
 * when n * H * W * C bytes do not fit. Call before reading from several
 * threads. */
int ct_dataset_enable_cache(ct_dataset *dataset, ct_status *status);

/* ---- augmentation ------------------------------------------------------------ */

/* How training images are augmented, as the TensorFlow CIFAR-10 tutorial
 * and ResNet training do it, in this order: zero padding of `pad` pixels
 * on every side, a random crop to crop[0] x crop[1], a random horizontal
 * flip, a random brightness delta in [-brightness, brightness] (pixels are
 * in [0, 1]), a random contrast factor in [contrast[0], contrast[1]] ((x -
 * channel mean) * factor + channel mean), and per-image standardization
 * ((x - mean) / max(stddev, 1 / sqrt(H * W * C))). Evaluation takes the
 * central crop (no padding) and standardization only. Zeros everywhere but
 * contrast {1, 1} change nothing. The draws of an example depend only on
 * (seed, epoch, example index). */
typedef struct ct_augment_options {
  int64_t crop[2];    /* [height, width]; 0 0: the image's own size */
  int64_t pad;        /* training: zero pixels on each side before cropping, below the crop's
                         height and width */
  int flip;           /* training: random horizontal flip */
  double brightness;  /* training: largest brightness delta, 0 ... CT_AUGMENT_MAX_BRIGHTNESS */
  double contrast[2]; /* training: contrast factor range, 0 <= lo <= hi <=
                         CT_AUGMENT_MAX_CONTRAST; {1, 1}: none */
  int standardize;    /* per-image standardization (training and evaluation) */
} ct_augment_options;

/* The largest brightness delta (a pixel's whole range) and contrast factor
 * that make sense: past them images are washed out or blown up, and the
 * model's values overflow to NaN long before anything is learned. */
#define CT_AUGMENT_MAX_BRIGHTNESS 1.0
#define CT_AUGMENT_MAX_CONTRAST 10.0

/* What one example's augmentation drew. */
typedef struct ct_augment_draw {
  int64_t pad;       /* zero pixels added on each side (training: augment->pad; else 0) */
  int64_t top, left; /* the crop's corner in the padded image */
  int flip;
  float brightness, contrast; /* delta and factor */
} ct_augment_draw;

/* The output shape for images of h x w: the crop, or h x w without one. */
void ct_augment_shape(const ct_augment_options *augment, int64_t h, int64_t w, int64_t *out_h,
                      int64_t *out_w);

/* Checks the options against images of h x w: brightness and contrast in
 * their ranges, the crop within the image itself (evaluation's central
 * crop), the pad below the crop's height and width. Returns 0, or 1 with
 * CT_INVALID_ARGUMENT naming the key and the range it takes. */
int ct_augment_check(const ct_augment_options *augment, int64_t h, int64_t w, ct_status *status);

/* The draws for example `index` of epoch `epoch` (train != 0), or the
 * central crop and no change (train == 0). */
ct_augment_draw ct_augment_draw_for(const ct_augment_options *augment, int train, uint64_t seed,
                                    int64_t epoch, int64_t index, int64_t h, int64_t w);

/* Writes the augmented image: u8 pixels h x w x c in, f32 out_h x out_w x c
 * out (the crop's shape), with pixel / 255 as the starting values. */
void ct_augment_apply(const ct_augment_options *augment, const ct_augment_draw *draw,
                      const uint8_t *pixels, int64_t h, int64_t w, int64_t c, float *out);

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
 * batch of the epoch, 0 once the epoch is over; or -1 with status set by
 * ct_dataset_read when an example cannot be read (the batcher stays where
 * it was). Allocates nothing. */
int64_t ct_batcher_next(ct_batcher *batcher, float *images, int32_t *labels, ct_status *status);

/* The size of the batch ct_batcher_next would hand out now (0 once the
 * epoch is over). */
int64_t ct_batcher_next_size(const ct_batcher *batcher);

/* Like ct_batcher_next, but writes only rows [first, first + rows) of the
 * batch (clipped to it) into images and labels from their start, and moves
 * past the whole batch: a process of a job reads its own examples of each
 * global batch. Returns the whole batch's size, or -1 as ct_batcher_next. */
int64_t ct_batcher_next_rows(ct_batcher *batcher, int64_t first, int64_t rows, float *images,
                             int32_t *labels, ct_status *status);

/* Index within the epoch of the next example ct_batcher_next will hand out
 * (0 at the start of an epoch, the dataset size at its end). */
int64_t ct_batcher_position(const ct_batcher *batcher);

/* Moves to position (clamped to 0..size) within the current epoch, so a
 * resumed run continues where a checkpoint left off. */
void ct_batcher_seek(ct_batcher *batcher, int64_t position);

/* Augments every example the batcher hands out from now on (augment is
 * copied; NULL: none): as in training (train != 0, draws from the
 * batcher's seed, its epoch and the example index) or evaluation (central
 * crop, standardization). The images then have the augmented shape
 * (ct_batcher_image_shape). Returns 0, or 1 with CT_INVALID_ARGUMENT
 * (ct_augment_check) or CT_RESOURCE_EXHAUSTED. */
int ct_batcher_set_augment(ct_batcher *batcher, const ct_augment_options *augment, int train,
                           ct_status *status);

/* The shape of the images the batcher hands out. Any pointer may be NULL. */
void ct_batcher_image_shape(const ct_batcher *batcher, int64_t *h, int64_t *w, int64_t *c);

/* The epoch the batcher walks (its last ct_batcher_start_epoch). */
int64_t ct_batcher_epoch(const ct_batcher *batcher);

/* Frees the batcher; NULL is allowed. */
void ct_batcher_free(ct_batcher *batcher);

/* ---- pipeline ---------------------------------------------------------------- */

/* A batcher run ahead of training: `threads` worker threads read, decode
 * and augment the examples of the coming batches into a queue of
 * `prefetch` ready batches while the training thread trains on the batch
 * before. What it hands out is bitwise what the batcher alone would hand
 * out, for any threads and prefetch: each example's augmentation depends
 * only on (seed, epoch, index). After the last batch of an epoch the
 * workers go on with the next epoch, which ct_pipeline_start_epoch then
 * finds ready; any other jump (another epoch, ct_pipeline_seek elsewhere)
 * drops what was prepared. An example that cannot be read stops the
 * workers; its error comes out of ct_pipeline_next at the batch it belongs
 * to. The pipeline and its batches belong to one thread (the workers are
 * its own). */
typedef struct ct_pipeline ct_pipeline;

/* How a global batch of count examples is split among a job's parts (a
 * trainer's towers, or its ranks), and the parts this process reads the
 * rows of: first .. first + mine - 1, in order. The split is even (the
 * first count % parts take one more example), or with part_rows > 0, in
 * turns: part_rows for each part until the batch runs out. parts 0: one
 * part, this process's, which reads every row. */
typedef struct ct_batch_parts {
  int parts, first, mine;
  int64_t part_rows;
} ct_batch_parts;

/* The rows of a batch of count examples that `split` gives this process:
 * from *first, sizes[k] for its part k (max(mine, 1) of them, each 0 or
 * more); returns their sum. */
int64_t ct_batch_parts_rows(const ct_batch_parts *split, int64_t count, int64_t *first,
                            int64_t *sizes);

typedef struct ct_pipeline_options {
  int threads;  /* worker threads, >= 1 */
  int prefetch; /* batches prepared ahead, >= 1 */
  ct_batch_parts split; /* the rows of each batch this process reads; {0}: all of them */
  /* the most rows the split gives a batch (the batches held are this
   * size); 0: the batch size */
  int64_t max_rows;
  /* where the batches live (alloc NULL: ctower's own host memory); it
   * must outlive the pipeline */
  ct_host_memory memory;
} ct_pipeline_options;

/* A batch handed out: the whole batch's size (0: the epoch is over), the
 * rows of it this process reads (those of its parts, sizes[k] rows of
 * part k after one another: ct_batch_parts_rows), and their images (f32
 * NHWC, the batcher's image shape) and labels (i32) in rows 0 .. rows - 1. The
 * tensors belong to the pipeline, stay valid until the next
 * ct_pipeline_next (or ct_pipeline_start_epoch, ct_pipeline_seek,
 * ct_pipeline_free) and are host memory CPU devices read as they are. */
typedef struct ct_pipeline_batch {
  int64_t count, first, rows;
  ct_tensor *images, *labels;
  const int64_t *sizes;
} ct_pipeline_batch;

/* A pipeline over batcher (taken: freed with the pipeline, even on
 * failure), starting where the batcher stands. Returns NULL with
 * CT_INVALID_ARGUMENT for threads or prefetch below 1 or a split whose
 * parts are not 0 <= first <= first + mine <= parts, CT_RESOURCE_EXHAUSTED
 * when the batches do not fit, or CT_UNAVAILABLE when a thread cannot be
 * started. */
ct_pipeline *ct_pipeline_new(ct_batcher *batcher, const ct_pipeline_options *options,
                             ct_status *status);

/* The next batch, waiting for the workers when it is not ready yet.
 * Returns its size (batch->count), 0 once the epoch is over, or -1 with the
 * status of the example that could not be read (the pipeline stays at that
 * batch). */
int64_t ct_pipeline_next(ct_pipeline *pipeline, ct_pipeline_batch *batch, ct_status *status);

/* The batch the next ct_pipeline_next will return, without taking it or
 * waiting: its size when it is ready now, else 0 (still being filled, the
 * end of the epoch, or an example that failed). Its tensors are those
 * ct_pipeline_next will return, unchanged until then: a trainer may start
 * copying them onto a GPU ahead (ct_session_run_staged). */
int64_t ct_pipeline_peek(ct_pipeline *pipeline, ct_pipeline_batch *batch);

/* As the batcher's: epochs, their batch count, positions within one. */
void ct_pipeline_start_epoch(ct_pipeline *pipeline, int64_t epoch);
void ct_pipeline_seek(ct_pipeline *pipeline, int64_t position);
int64_t ct_pipeline_position(const ct_pipeline *pipeline);
int64_t ct_pipeline_batches_per_epoch(const ct_pipeline *pipeline);
/* The shape of its images (the batcher's). */
void ct_pipeline_image_shape(const ct_pipeline *pipeline, int64_t *h, int64_t *w, int64_t *c);

/* Stops the workers (each finishes the few examples it holds) and frees
 * everything; NULL is allowed. */
void ct_pipeline_free(ct_pipeline *pipeline);

#ifdef __cplusplus
}
#endif
#endif
