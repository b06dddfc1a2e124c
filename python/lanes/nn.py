"""Neural-network helpers (jax.nn's names) over lanes' ops."""

from __future__ import annotations

from typing import Any, Sequence

from . import _lanes
from ._lanes import Array

__all__ = [
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


def softmax(x: Any, axis: int = -1) -> Array:
    """exp(x) / sum(exp(x)) along ``axis``, computed stably."""
    return _lanes.softmax(x, axis)


def log_softmax(x: Any, axis: int = -1) -> Array:
    """x - logsumexp(x) along ``axis``."""
    return _lanes.log_softmax(x, axis)


def logsumexp(x: Any, axis: Any = None, keepdims: bool = False) -> Array:
    """log(sum(exp(x))) over ``axis`` (all axes when None), computed stably."""
    return _lanes.logsumexp(x, axis, keepdims)


def softmax_cross_entropy(logits: Any, labels: Any, axis: int = -1) -> Array:
    """The cross entropy of softmax(logits) against a distribution ``labels`` along ``axis``."""
    return _lanes.softmax_cross_entropy(logits, labels, axis)


def one_hot(x: Any, num_classes: int, dtype: Any = None) -> Array:
    """``num_classes``-wide one-hot rows for integer ``x`` (float32 unless ``dtype``)."""
    return _lanes.one_hot(x, num_classes, dtype)


def conv2d(x: Any, weight: Any, stride: Sequence[int] = (1, 1), padding: Sequence[int] = (0, 0),
           dilation: Sequence[int] = (1, 1), groups: int = 1) -> Array:
    """2-d cross-correlation, NCHW input (or one CHW example), OIHW weight (PyTorch's layout)."""
    return _lanes.conv2d(x, weight, list(stride), list(padding), list(dilation), groups)


def dropout(x: Any, rate: float, key: Any, training: bool = True) -> Array:
    """Inverted dropout: each element kept with probability 1 - rate and scaled by
    1 / (1 - rate) when training, x itself otherwise. ``key``: a random key or Generator."""
    return _lanes.random.dropout(x, float(rate), key, training)
