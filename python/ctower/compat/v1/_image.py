"""tf.image's ops of the input pipeline and tf.random_crop, on host tensors
(_host.py): computed with NumPy per example on the input threads.

An image is [height, width, channels], or a batch of them [n, height,
width, channels]. The random ops take TensorFlow's seeds (the graph's and
the op's) and draw per example (_host.rng): the same seeds give the same
distortions of the same records, in TensorFlow's ranges, though not
TensorFlow's own numbers. Brightness and contrast take float images (cast
a uint8 image first; TensorFlow would scale it to [0, 1] and back).
"""
import numpy as np

from ctower import errors
from ctower.compat.v1 import _framework as fw
from ctower.compat.v1 import _host
from ctower.compat.v1._host import HostTensor


def _image(image, what, floating=False):
    x = _host.as_host(image)
    if x.shape.ndims is not None and x.shape.ndims not in (3, 4):
        raise ValueError("'image' (shape %s) must be either 3 or 4-dimensional (%s)"
                         % (x.shape, what))
    if floating and not x.dtype.is_floating:
        raise TypeError("ctower's tf.image.%s takes a float image, not %s: tf.cast it to "
                        "tf.float32 first" % (what, x.dtype.name))
    return x


def _same(x, compute, name, seed=None, dtype=None):
    """A host op of x's shape; compute(value, generator or None)."""
    if seed is False:
        return HostTensor([x], lambda ex, v: compute(v, None), x.shape, dtype or x.dtype, name)
    op_seeds = _host.seeds(x.graph, seed)
    return HostTensor([x], lambda ex, v: compute(v, _host.rng(op_seeds, ex)), x.shape,
                      dtype or x.dtype, name)


def _per_image(v, draw):
    """draw(image) for one image or for each of a batch."""
    if v.ndim == 3:
        return draw(v)
    return np.stack([draw(one) for one in v]) if len(v) else v


# ---- crops --------------------------------------------------------------------------------

def random_crop(value, size, seed=None, name=None):
    """A slice of `size` at a uniformly random offset (per axis) of value."""
    x = _host.as_host(value)
    size = [int(s) for s in size]
    dims = x.shape.as_list() if x.shape.ndims is not None else None
    if dims is not None:
        if len(dims) != len(size):
            raise ValueError("random_crop: size %s for a tensor of rank %d" % (size, len(dims)))
        for d, s in zip(dims, size):
            if d is not None and s > d:
                raise ValueError("random_crop: size %s is larger than the shape %s"
                                 % (size, x.shape))
    op_seeds = _host.seeds(x.graph, seed)

    def compute(ex, v):
        if v.ndim != len(size) or any(s > d for s, d in zip(size, v.shape)):
            raise errors.InvalidArgumentError(
                None, None, "Need value.shape >= size, got %s and %s" % (list(v.shape), size))
        g = _host.rng(op_seeds, ex)
        offsets = [int(g.integers(0, d - s + 1)) for d, s in zip(v.shape, size)]
        return v[tuple(slice(o, o + s) for o, s in zip(offsets, size))]
    return HostTensor([x], compute, size, x.dtype, name or "random_crop")


def _crop_or_pad(v, height, width):
    """TensorFlow's centred crop, then centred zero padding, to height x width."""
    h, w = v.shape[-3], v.shape[-2]
    top, left = max((h - height) // 2, 0), max((w - width) // 2, 0)
    v = v[..., top:top + min(h, height), left:left + min(w, width), :]
    pad_top, pad_left = max((height - h) // 2, 0), max((width - w) // 2, 0)
    if v.shape[-3] == height and v.shape[-2] == width:
        return v
    pads = [(0, 0)] * (v.ndim - 3) + [(pad_top, height - v.shape[-3] - pad_top),
                                       (pad_left, width - v.shape[-2] - pad_left), (0, 0)]
    return np.pad(v, pads)


def resize_image_with_crop_or_pad(image, target_height, target_width):
    x = _image(image, "resize_image_with_crop_or_pad")
    height, width = int(target_height), int(target_width)
    if height <= 0 or width <= 0:
        raise ValueError("target_height and target_width must be > 0")
    dims = x.shape.as_list() if x.shape.ndims is not None else [None, None, None]
    shape = dims[:-3] + [height, width, dims[-1]]
    return HostTensor([x], lambda ex, v: _crop_or_pad(v, height, width), shape, x.dtype,
                      "resize_image_with_crop_or_pad")


# ---- flips --------------------------------------------------------------------------------

def flip_left_right(image):
    return _same(_image(image, "flip_left_right"), lambda v, g: v[..., ::-1, :], "flip_left_right",
                 seed=False)


def flip_up_down(image):
    return _same(_image(image, "flip_up_down"), lambda v, g: v[..., ::-1, :, :], "flip_up_down",
                 seed=False)


def random_flip_left_right(image, seed=None):
    """Each image mirrored left to right with probability 1/2."""
    return _same(_image(image, "random_flip_left_right"),
                 lambda v, g: _per_image(v, lambda i: i[:, ::-1] if g.random() < 0.5 else i),
                 "random_flip_left_right", seed)


def random_flip_up_down(image, seed=None):
    return _same(_image(image, "random_flip_up_down"),
                 lambda v, g: _per_image(v, lambda i: i[::-1] if g.random() < 0.5 else i),
                 "random_flip_up_down", seed)


# ---- brightness and contrast --------------------------------------------------------------

def _contrast(v, factor):
    mean = v.mean(axis=(-3, -2), keepdims=True, dtype=np.float64)
    return ((v - mean) * factor + mean).astype(v.dtype)


def adjust_brightness(image, delta):
    x = _image(image, "adjust_brightness", floating=True)
    return _same(x, lambda v, g: (v + np.asarray(delta, v.dtype)).astype(v.dtype),
                 "adjust_brightness", seed=False)


def adjust_contrast(images, contrast_factor):
    x = _image(images, "adjust_contrast", floating=True)
    return _same(x, lambda v, g: _contrast(v, float(contrast_factor)), "adjust_contrast",
                 seed=False)


def random_brightness(image, max_delta, seed=None):
    """image + delta, delta uniform in [-max_delta, max_delta) (one per call,
    as TensorFlow draws one for the whole tensor)."""
    if max_delta < 0:
        raise ValueError("max_delta must be non-negative.")
    x = _image(image, "random_brightness", floating=True)
    return _same(x, lambda v, g: (v + np.asarray(g.uniform(-max_delta, max_delta), v.dtype))
                 .astype(v.dtype), "random_brightness", seed)


def random_contrast(image, lower, upper, seed=None):
    """(image - mean) * factor + mean per channel, factor uniform in [lower, upper)."""
    if upper <= lower:
        raise ValueError("upper must be > lower.")
    if lower < 0:
        raise ValueError("lower must be non-negative.")
    x = _image(image, "random_contrast", floating=True)
    return _same(x, lambda v, g: _contrast(v, g.uniform(lower, upper)), "random_contrast", seed)


def per_image_standardization(image):
    """(x - mean) / max(stddev, 1/sqrt(N)) per image, N its number of values,
    in float32."""
    x = _image(image, "per_image_standardization")

    def standardize(v):
        v = v.astype(np.float64)
        axes = (-3, -2, -1)
        mean = v.mean(axis=axes, keepdims=True)
        std = v.std(axis=axes, keepdims=True)
        n = np.prod(v.shape[-3:])
        return ((v - mean) / np.maximum(std, 1.0 / np.sqrt(n))).astype(np.float32)
    return _same(x, lambda v, g: standardize(v), "per_image_standardization", seed=False,
                 dtype=fw.float32)
