"""tf.nn pooling with windows and strides that differ along H and W, against
a naive loop with TensorFlow's padding (and PyTorch where it has the same
padding)."""
import numpy as np
import pytest

import ctower.compat.v1 as tf


def _same_pad(size, k, s):
    """TensorFlow's SAME: (output size, padding before)."""
    out = -(-size // s)
    return out, max((out - 1) * s + k - size, 0) // 2


def _naive_pool(x, dy, is_max, k, s, same):
    """y and the gradient of sum(y * dy) with respect to x, NHWC."""
    n, h, w, c = x.shape
    (oh, ph), (ow, pw) = ((_same_pad(h, k[0], s[0]), _same_pad(w, k[1], s[1])) if same else
                          (((h - k[0]) // s[0] + 1, 0), ((w - k[1]) // s[1] + 1, 0)))
    y = np.zeros((n, oh, ow, c), np.float64)
    dx = np.zeros(x.shape, np.float64)
    for p in range(oh):
        for q in range(ow):
            rows = range(max(p * s[0] - ph, 0), min(p * s[0] - ph + k[0], h))
            cols = range(max(q * s[1] - pw, 0), min(q * s[1] - pw + k[1], w))
            window = x[:, rows.start:rows.stop, cols.start:cols.stop, :].reshape(n, -1, c)
            g = dy[:, p, q, :]
            if is_max:
                first = window.argmax(axis=1)  # the first largest, as TensorFlow's
                y[:, p, q, :] = window.max(axis=1)
                for b in range(n):
                    for ch in range(c):
                        r, col = divmod(first[b, ch], len(cols))
                        dx[b, rows.start + r, cols.start + col, ch] += g[b, ch]
            else:
                y[:, p, q, :] = window.mean(axis=1)
                dx[:, rows.start:rows.stop, cols.start:cols.stop, :] += \
                    g[:, None, None, :] / window.shape[1]
    return y, dx


@pytest.mark.parametrize("is_max", [True, False])
@pytest.mark.parametrize("ksize,strides,padding", [
    ([1, 2, 3, 1], [1, 1, 2, 1], "SAME"),
    ([1, 2, 3, 1], [1, 1, 2, 1], "VALID"),
    ([1, 3, 1, 1], [1, 3, 2, 1], "VALID"),
    ([1, 1, 2, 1], [1, 2, 2, 1], "SAME"),
])
def test_pooling_windows_that_differ_along_h_and_w(is_max, ksize, strides, padding):
    rng = np.random.RandomState(3)
    x_value = rng.randn(2, 7, 6, 3).astype(np.float32)
    x = tf.constant(x_value)
    pool = tf.nn.max_pool if is_max else tf.nn.avg_pool
    y = pool(x, ksize=ksize, strides=strides, padding=padding)
    dy = tf.constant(rng.randn(*y.shape.as_list()).astype(np.float32))
    dx, = tf.gradients(tf.reduce_sum(y * dy), [x])
    with tf.Session() as sess:
        got_y, got_dx, dy_value = sess.run([y, dx, dy])
    want_y, want_dx = _naive_pool(x_value.astype(np.float64), dy_value, is_max, ksize[1:3],
                                  strides[1:3], padding == "SAME")
    np.testing.assert_allclose(got_y, want_y, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_dx, want_dx, rtol=1e-5, atol=1e-6)


def test_max_pool_against_pytorch():
    torch = pytest.importorskip("torch")
    x_value = np.random.RandomState(4).randn(2, 9, 8, 5).astype(np.float32)
    y = tf.nn.max_pool(tf.constant(x_value), ksize=[1, 3, 2, 1], strides=[1, 2, 1, 1],
                       padding="VALID")
    with tf.Session() as sess:
        got = sess.run(y)
    want = torch.nn.functional.max_pool2d(torch.from_numpy(x_value).permute(0, 3, 1, 2),
                                          kernel_size=(3, 2), stride=(2, 1))
    np.testing.assert_array_equal(got, want.permute(0, 2, 3, 1).numpy())


def _naive_conv(x, f, s, d, same):
    """conv2d of NHWC x by HWIO f at strides s with dilations d, with
    TensorFlow's padding."""
    n, h, w, _ = x.shape
    r, k = f.shape[0], f.shape[1]
    taps = ((r - 1) * d[0] + 1, (k - 1) * d[1] + 1)
    (oh, ph), (ow, pw) = ((_same_pad(h, taps[0], s[0]), _same_pad(w, taps[1], s[1])) if same
                          else (((h - taps[0]) // s[0] + 1, 0), ((w - taps[1]) // s[1] + 1, 0)))
    y = np.zeros((n, oh, ow, f.shape[3]))
    for p in range(oh):
        for q in range(ow):
            for a in range(r):
                for b in range(k):
                    i, j = p * s[0] + a * d[0] - ph, q * s[1] + b * d[1] - pw
                    if 0 <= i < h and 0 <= j < w:
                        y[:, p, q, :] += x[:, i, j, :] @ f[a, b]
    return y


@pytest.mark.parametrize("strides,dilations,padding", [
    ([1, 1, 1, 1], [1, 2, 2, 1], "SAME"),
    ([1, 1, 1, 1], [1, 2, 3, 1], "VALID"),
    ([1, 2, 1, 1], [1, 3, 2, 1], "SAME"),
])
def test_conv2d_dilations(strides, dilations, padding):
    rng = np.random.RandomState(5)
    x_value = rng.randn(2, 9, 8, 3).astype(np.float32)
    f_value = rng.randn(3, 2, 3, 4).astype(np.float32)
    x, f = tf.constant(x_value), tf.constant(f_value)
    y = tf.nn.conv2d(x, f, strides=strides, padding=padding, dilations=dilations)
    dx, df = tf.gradients(tf.reduce_sum(y * y), [x, f])
    with tf.Session() as sess:
        got_y, got_dx, got_df = sess.run([y, dx, df])
    def naive(xv, fv):
        return _naive_conv(xv, fv, strides[1:3], dilations[1:3], padding == "SAME")

    want = naive(x_value.astype(np.float64), f_value.astype(np.float64))
    np.testing.assert_allclose(got_y, want, rtol=1e-4, atol=1e-4)
    # the gradients of sum(y^2) by central differences of the naive loop
    for got, value, which in ((got_dx, x_value, 0), (got_df, f_value, 1)):
        flat = value.astype(np.float64).reshape(-1)
        for at in rng.choice(flat.size, 6, replace=False):
            plus, minus = flat.copy(), flat.copy()
            plus[at] += 1e-3
            minus[at] -= 1e-3
            args = [x_value.astype(np.float64), f_value.astype(np.float64)]
            args[which] = plus.reshape(value.shape)
            up = (naive(*args) ** 2).sum()
            args[which] = minus.reshape(value.shape)
            down = (naive(*args) ** 2).sum()
            np.testing.assert_allclose(got.reshape(-1)[at], (up - down) / 2e-3, rtol=1e-2,
                                       atol=1e-2)


def test_conv2d_dilations_against_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.RandomState(6)
    x_value = rng.randn(2, 11, 10, 3).astype(np.float32)
    f_value = rng.randn(3, 3, 3, 5).astype(np.float32)
    y = tf.nn.conv2d(tf.constant(x_value), tf.constant(f_value), strides=[1, 1, 2, 1],
                     padding="VALID", dilations=[1, 2, 3, 1])
    with tf.Session() as sess:
        got = sess.run(y)
    want = torch.nn.functional.conv2d(torch.from_numpy(x_value).permute(0, 3, 1, 2),
                                      torch.from_numpy(f_value).permute(3, 2, 0, 1),
                                      stride=(1, 2), dilation=(2, 3))
    np.testing.assert_allclose(got, want.permute(0, 2, 3, 1).numpy(), rtol=1e-4, atol=1e-4)
