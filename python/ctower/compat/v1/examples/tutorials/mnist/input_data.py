"""tf.examples.tutorials.mnist.input_data: read_data_sets as TensorFlow 1.x's
MNIST tutorials call it, reading the four IDX files (gzipped or not) of a
folder: MNIST's, or Fashion-MNIST's (Debian's dataset-fashion-mnist puts
them in /usr/share/datasets/fashion-mnist).

Where it differs from TensorFlow's: nothing is downloaded (a folder without
the files is a NotFoundError naming them), and the shuffles of next_batch
come from NumPy's generator seeded by `seed`, not TensorFlow's seed rules."""
import collections
import gzip
import os

import numpy as np

from ctower import errors

FILES = {"train_images": "train-images-idx3-ubyte", "train_labels": "train-labels-idx1-ubyte",
         "test_images": "t10k-images-idx3-ubyte", "test_labels": "t10k-labels-idx1-ubyte"}
CLASSES = 10

Datasets = collections.namedtuple("Datasets", ["train", "validation", "test"])


def _find(train_dir, stem):
    for name in (stem + ".gz", stem):
        path = os.path.join(train_dir, name)
        if os.path.isfile(path):
            return path
    raise errors.NotFoundError(
        None, None, "%s has no %s.gz (or %s): ctower downloads nothing; put MNIST's four IDX "
        "files there, or read Fashion-MNIST's from /usr/share/datasets/fashion-mnist "
        "(Debian's dataset-fashion-mnist)" % (train_dir, stem, stem))


def _read_idx(path, kind):
    """The array of an IDX file: [n, rows, cols] u8 images or [n] u8 labels."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    dims = {"images": 3, "labels": 1}[kind]
    magic = 0x800 + dims
    if len(data) < 4 + 4 * dims or int.from_bytes(data[:4], "big") != magic:
        raise errors.DataLossError(None, None, "%s is not an IDX file of %s (its first 4 bytes "
                                   "should be %#010x)" % (path, kind, magic))
    shape = [int.from_bytes(data[4 + 4 * k:8 + 4 * k], "big") for k in range(dims)]
    body = np.frombuffer(data, np.uint8, offset=4 + 4 * dims)
    if body.size != int(np.prod(shape)):
        raise errors.DataLossError(None, None, "%s holds %d bytes of %s where its header says "
                                   "%s" % (path, body.size, kind, shape))
    return body.reshape(shape)


def dense_to_one_hot(labels_dense, num_classes=CLASSES):
    one_hot = np.zeros((len(labels_dense), num_classes), np.float32)
    one_hot[np.arange(len(labels_dense)), labels_dense] = 1.0
    return one_hot


class DataSet:
    """Images (float32 in [0, 1], [n, 784] when reshaped) and labels (uint8
    class ids, or one-hot float32 rows), handed out by next_batch in a
    shuffled order that is drawn anew each epoch."""

    def __init__(self, images, labels, dtype=np.float32, reshape=True, seed=None):
        if images.shape[0] != labels.shape[0]:
            raise ValueError("images.shape: %s labels.shape: %s" % (images.shape, labels.shape))
        if reshape:
            images = images.reshape(images.shape[0], int(np.prod(images.shape[1:])))
        if np.dtype(getattr(dtype, "as_numpy_dtype", dtype)) == np.float32:
            images = images.astype(np.float32) * np.float32(1.0 / 255.0)
        self._images, self._labels = images, labels
        self._num_examples = images.shape[0]
        self._epochs_completed = 0
        self._index_in_epoch = 0
        self._rng = np.random.RandomState(seed)

    images = property(lambda self: self._images)
    labels = property(lambda self: self._labels)
    num_examples = property(lambda self: self._num_examples)
    epochs_completed = property(lambda self: self._epochs_completed)

    def _shuffle(self):
        order = self._rng.permutation(self._num_examples)
        self._images, self._labels = self._images[order], self._labels[order]

    def next_batch(self, batch_size, fake_data=False, shuffle=True):
        """The next batch_size examples; an epoch's last batch takes its
        remainder and the next epoch's first examples, as TensorFlow's does."""
        if fake_data:
            raise NotImplementedError("ctower's next_batch has no fake_data")
        start = self._index_in_epoch
        if self._epochs_completed == 0 and start == 0 and shuffle:
            self._shuffle()
        if start + batch_size <= self._num_examples:
            self._index_in_epoch += batch_size
            end = self._index_in_epoch
            return self._images[start:end], self._labels[start:end]
        self._epochs_completed += 1
        rest_images, rest_labels = self._images[start:], self._labels[start:]
        if shuffle:
            self._shuffle()
        self._index_in_epoch = batch_size - len(rest_images)
        end = self._index_in_epoch
        return (np.concatenate((rest_images, self._images[:end]), axis=0),
                np.concatenate((rest_labels, self._labels[:end]), axis=0))


def read_data_sets(train_dir, fake_data=False, one_hot=False, dtype=np.float32, reshape=True,
                   validation_size=5000, seed=None, source_url=None):
    """MNIST's training, validation (the first validation_size training
    examples) and test sets from the IDX files in train_dir."""
    if fake_data:
        raise NotImplementedError("ctower's read_data_sets has no fake_data")
    arrays = {key: _read_idx(_find(train_dir, stem), key.split("_")[1])
              for key, stem in FILES.items()}
    labels = {k: dense_to_one_hot(arrays[k]) if one_hot else arrays[k]
              for k in ("train_labels", "test_labels")}
    train_images = arrays["train_images"]
    if not 0 <= validation_size <= len(train_images):
        raise ValueError("Validation size should be between 0 and %d. Received: %d."
                         % (len(train_images), validation_size))
    split = validation_size
    make = lambda images, labels_: DataSet(images, labels_, dtype, reshape, seed)
    return Datasets(train=make(train_images[split:], labels["train_labels"][split:]),
                    validation=make(train_images[:split], labels["train_labels"][:split]),
                    test=make(arrays["test_images"], labels["test_labels"]))


def load_mnist(train_dir="MNIST-data"):
    return read_data_sets(train_dir)
