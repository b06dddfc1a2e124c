"""lanes.nn against independent references: dropout's statistics and masks, convolutions against
a float64 loop."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import lanes
import lanes.numpy as lnp
from conftest import assert_close, assert_equal, sigma_bound
from lanes import nn, random

N = 200_000  # large-sample size for the statistical checks


# ---- dropout ----------------------------------------------------------------------------------


@pytest.mark.parametrize("rate", [0.1, 0.3, 0.75])
def test_dropout_scaling_and_rate(rate: float, rng: np.random.Generator) -> None:
    x = rng.uniform(0.5, 2.0, size=(N // 4, 4)).astype(np.float32)
    out = np.asarray(nn.dropout(x, rate, random.key(13)))
    assert out.shape == x.shape and out.dtype == x.dtype
    dropped = out == 0
    kept = ~dropped
    np.testing.assert_allclose(out[kept], x[kept] / (1 - rate), rtol=1e-6)
    n = x.size
    assert abs(dropped.mean() - rate) < sigma_bound(math.sqrt(rate * (1 - rate)), n)
    # inverted dropout keeps the expectation
    assert abs(out.mean() / x.mean() - 1) < 0.02


def test_dropout_not_training_returns_x(rng: np.random.Generator) -> None:
    x = rng.normal(size=(5, 7)).astype(np.float32)
    assert_equal(nn.dropout(x, 0.5, random.key(14), training=False), x)
    assert_equal(nn.dropout(x, 0.0, random.key(14)), x)


def test_dropout_deterministic_per_key_and_generator(rng: np.random.Generator) -> None:
    x = rng.uniform(1.0, 2.0, size=(200,)).astype(np.float32)
    a = np.asarray(nn.dropout(x, 0.5, random.key(15)))
    assert_equal(nn.dropout(x, 0.5, random.key(15)), a)
    assert not np.array_equal(np.asarray(nn.dropout(x, 0.5, random.key(16))), a)
    g = random.Generator(3)
    b = np.asarray(nn.dropout(x, 0.5, g))
    assert g.counter == 1
    kept = b != 0
    assert 0 < kept.sum() < x.size
    np.testing.assert_allclose(b[kept], x[kept] * 2.0, rtol=1e-6)


def test_dropout_vmap_over_keys_equals_loop(rng: np.random.Generator) -> None:
    x = rng.uniform(1.0, 2.0, size=(4, 10)).astype(np.float32)
    keys = random.split(random.key(17), 4)
    got = lanes.vmap(lambda k, xi: nn.dropout(xi, 0.4, k))(keys, x)
    want = np.stack([np.asarray(nn.dropout(x[i], 0.4, keys[i])) for i in range(4)])
    assert_equal(got, want)


def test_dropout_gradient_is_the_mask(rng: np.random.Generator) -> None:
    x = rng.uniform(1.0, 2.0, size=(50,)).astype(np.float32)
    k = random.key(18)
    mask = np.asarray(nn.dropout(np.ones_like(x), 0.3, k))
    g = lanes.grad(lambda v: lnp.sum(nn.dropout(v, 0.3, k)))(x)
    assert_close(g, mask)


# ---- convolution ----------------------------------------------------------------------------


def _conv_reference(x: np.ndarray, w: np.ndarray, stride: tuple[int, int],
                    pads: list[tuple[int, int]]) -> np.ndarray:
    """Cross-correlation in float64, one output position at a time."""
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0), pads[0], pads[1]])
    kh, kw = w.shape[2:]
    oh = (xp.shape[2] - kh) // stride[0] + 1
    ow = (xp.shape[3] - kw) // stride[1] + 1
    out = np.zeros((x.shape[0], w.shape[0], oh, ow))
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, :, i * stride[0]:i * stride[0] + kh, j * stride[1]:j * stride[1] + kw]
            out[:, :, i, j] = np.einsum("nchw,ochw->no", patch, w)
    return out


@pytest.mark.parametrize("stride,padding,pads", [
    (1, "VALID", [(0, 0), (0, 0)]),
    (2, "SAME", [(1, 1), (0, 0)]),  # XLA's SAME: 5 = ceil(9 / 2) rows of a 3-row kernel
    (1, "SAME", [(1, 1), (0, 1)]),
    ((2, 1), ((1, 2), (0, 1)), [(1, 2), (0, 1)]),
    (1, 1, [(1, 1), (1, 1)]),
], ids=repr)
def test_conv_strides_and_paddings_as_jax(stride: Any, padding: Any,
                                          pads: list[tuple[int, int]]) -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2, 3, 9, 8)).astype(np.float32)
    w = rng.normal(size=(4, 3, 3, 2)).astype(np.float32)
    s = (stride, stride) if isinstance(stride, int) else stride
    want = _conv_reference(x, w, s, pads)
    got = nn.conv(lanes.asarray(x), lanes.asarray(w), stride=stride, padding=padding)
    assert_close(got, want.astype(np.float32), rtol=1e-4, atol=1e-4)
    if isinstance(padding, str):
        assert_close(lanes.lax.conv(lanes.asarray(x), lanes.asarray(w), s, padding),
                     want.astype(np.float32), rtol=1e-4, atol=1e-4)


def test_softmax_over_several_axes_and_logsumexp_with_scales() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 3, 4)).astype(np.float32)
    scales = np.abs(rng.normal(size=(2, 3, 4))).astype(np.float32)
    lx = lanes.asarray(x)
    e = np.exp(x - x.max(axis=(1, 2), keepdims=True))
    assert_close(nn.softmax(lx, axis=(1, 2)), e / e.sum(axis=(1, 2), keepdims=True))
    assert_close(nn.log_softmax(lx, axis=(0, 2)),
                 x - np.log(np.exp(x).sum(axis=(0, 2), keepdims=True)), atol=1e-5)
    got = nn.logsumexp(lx, axis=1, b=lanes.asarray(scales))
    assert_close(got, np.log((scales * np.exp(x)).sum(axis=1)), atol=1e-5)
    assert_close(nn.logsumexp(lx, b=2.0), np.log(2 * np.exp(x).sum()), atol=1e-5)
    assert nn.logsumexp(lx, axis=(0, 2), b=2.0, keepdims=True).shape == (1, 3, 1)
