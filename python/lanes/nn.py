"""Neural-network helpers (jax.nn's names) over lanes' ops."""

from __future__ import annotations

from typing import Any, Sequence

from . import _lanes
from ._lanes import Array, LanesError

__all__ = [
    "conv",
    "conv2d",
    "dropout",
    "log_softmax",
    "logsumexp",
    "one_hot",
    "relu",
    "sigmoid",
    "softmax",
    "softmax_cross_entropy",
]

relu = _lanes.relu
sigmoid = _lanes.sigmoid


def softmax(x: Any, axis: Any = -1) -> Array:
    """exp(x) / sum(exp(x)) along ``axis`` (an int or a tuple of them), computed stably."""
    if isinstance(axis, int):
        return _lanes.softmax(x, axis)
    return _lanes.exp(log_softmax(x, axis))


def log_softmax(x: Any, axis: Any = -1) -> Array:
    """x - logsumexp(x) along ``axis`` (an int or a tuple of them)."""
    if isinstance(axis, int):
        return _lanes.log_softmax(x, axis)
    return x - _lanes.logsumexp(x, list(axis), True)


def logsumexp(x: Any, axis: Any = None, b: Any = None, keepdims: bool = False) -> Array:
    """log(sum(b * exp(x))) over ``axis`` (all axes when None), computed stably; ``b`` scales
    each term (jax's and scipy's; a sum with negative terms has no real log: NaN)."""
    if b is None:
        return _lanes.logsumexp(x, axis, keepdims)
    x = _lanes.asarray(x, None)
    top = _lanes.max(x, axis, True)
    top = _lanes.where(_lanes.less(_lanes.abs(top), float("inf")), top, 0.0)  # all -inf: 0
    total = _lanes.sum(_lanes.asarray(b, None) * _lanes.exp(x - top), axis, True)
    out = _lanes.log(total) + top
    if keepdims:
        return out
    axes = range(x.ndim) if axis is None else ([axis] if isinstance(axis, int) else axis)
    for d in sorted((a % x.ndim for a in axes), reverse=True):
        out = _lanes.squeeze(out, d)
    return out


def softmax_cross_entropy(logits: Any, labels: Any, axis: int = -1) -> Array:
    """The cross entropy of softmax(logits) against a distribution ``labels`` along ``axis``."""
    return _lanes.softmax_cross_entropy(logits, labels, axis)


def one_hot(x: Any, num_classes: int, dtype: Any = None) -> Array:
    """``num_classes``-wide one-hot rows for integer ``x`` (float32 unless ``dtype``)."""
    return _lanes.one_hot(x, num_classes, dtype)


def _pair(value: Any, name: str) -> list[int]:
    pair = [value, value] if isinstance(value, int) else [int(v) for v in value]
    if len(pair) != 2:
        raise LanesError(f"conv2d: {name} takes an int or two ints, got {value!r}")
    return pair


def _padding(padding: Any, x: Array, weight: Array, stride: list[int],
             dilation: list[int]) -> list[tuple[int, int]]:
    """(low, high) padding of the two spatial dims: an int, two ints, two (low, high) pairs,
    'VALID' or 'SAME' (XLA's: the output has ceil(size / stride) positions, the odd pixel of
    padding after)."""
    if isinstance(padding, str):
        if padding.upper() == "VALID":
            return [(0, 0), (0, 0)]
        if padding.upper() != "SAME":
            raise LanesError(f"conv2d: padding must be 'SAME', 'VALID' or sizes, got {padding!r}")
        pads = []
        for d in range(2):
            size, k = x.shape[x.ndim - 2 + d], weight.shape[2 + d]
            out = -(-size // stride[d])
            total = max((out - 1) * stride[d] + (k - 1) * dilation[d] + 1 - size, 0)
            pads.append((total // 2, total - total // 2))
        return pads
    if isinstance(padding, int):
        return [(padding, padding)] * 2
    parts = list(padding)
    if len(parts) == 2 and all(isinstance(p, int) for p in parts):
        return [(parts[0], parts[0]), (parts[1], parts[1])]
    if len(parts) == 2 and all(len(p) == 2 for p in parts):
        return [(int(p[0]), int(p[1])) for p in parts]
    raise LanesError(f"conv2d: cannot read padding {padding!r}")


def conv2d(x: Any, weight: Any, stride: Any = 1, padding: Any = 0, dilation: Any = 1,
           groups: int = 1) -> Array:
    """2-d cross-correlation, NCHW input (or one CHW example), OIHW weight (PyTorch's and
    jax.lax.conv's layout). ``stride`` / ``dilation``: an int or two; ``padding``: an int, two,
    two (low, high) pairs, 'VALID' or 'SAME'."""
    x, weight = _lanes.asarray(x, None), _lanes.asarray(weight, None)
    stride, dilation = _pair(stride, "stride"), _pair(dilation, "dilation")
    pads = _padding(padding, x, weight, stride, dilation)
    if any(lo != hi for lo, hi in pads):  # the kernel pads both sides alike: pad first
        x = _lanes.pad(x, [0] * (x.ndim - 2) + [lo for lo, _ in pads],
                       [0] * (x.ndim - 2) + [hi for _, hi in pads], 0.0)
        pads = [(0, 0), (0, 0)]
    return _lanes.conv2d(x, weight, stride, [lo for lo, _ in pads], dilation, groups)


conv = conv2d


def dropout(x: Any, rate: float, key: Any, training: bool = True) -> Array:
    """Inverted dropout: each element kept with probability 1 - rate and scaled by
    1 / (1 - rate) when training, x itself otherwise. ``key``: a random key or Generator."""
    return _lanes.random.dropout(x, float(rate), key, training)
