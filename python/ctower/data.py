"""A dataset's batches as `ctower train` reads them: for the same seed the
same examples in the same order, augmented alike (ctower/data.h's batcher),
as NumPy arrays: images [n, height, width, channels] float32, labels int32."""
import numpy as np

from ctower import _ctower


class Batcher:
    """Batches of dataset `name` (cifar10, cifar100, mnist, fashion_mnist)
    read from `path`; `augment` takes the keys of the config's
    dataset.augment (crop, pad, flip, brightness, contrast, standardize)."""

    def __init__(self, name, path, train=True, batch_size=128, shuffle=True, seed=42,
                 augment=None):
        a = dict(augment or {})
        self._c = _ctower.Batcher(name, path, bool(train), int(batch_size), bool(shuffle),
                                  int(seed), crop=tuple(a.pop("crop", (0, 0))),
                                  pad=int(a.pop("pad", 0)), flip=bool(a.pop("flip", False)),
                                  brightness=float(a.pop("brightness", 0.0)),
                                  contrast=tuple(a.pop("contrast", (1.0, 1.0))),
                                  standardize=bool(a.pop("standardize", False)))
        if a:
            raise ValueError("unknown augment keys: %s" % ", ".join(sorted(a)))

    def __len__(self):
        return self._c.size()

    def epoch(self, epoch):
        """The batches of epoch `epoch` (0 for the first), in order."""
        self._c.start_epoch(epoch)
        while True:
            batch = self._c.next()
            if batch is None:
                return
            yield np.asarray(batch[0]), np.asarray(batch[1])
