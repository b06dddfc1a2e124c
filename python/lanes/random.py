"""Counter-based random numbers (jax.random's names): keys are 0-d int64 Arrays, split into more
keys, and every draw is a pure function of its key, so draws batch under vmap and reproduce
under jit. A ``Generator`` is a stateful stream of keys for code that prefers one (its draws
inside vmap follow vmap's ``randomness`` option).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from . import _lanes
from ._lanes import Array, LanesError

Generator = _lanes.random.Generator

__all__ = [
    "Generator",
    "bernoulli",
    "categorical",
    "choice",
    "exponential",
    "fold_in",
    "key",
    "normal",
    "permutation",
    "randint",
    "split",
    "truncated_normal",
    "uniform",
]

_r = _lanes.random


def _shape(shape: Any) -> tuple[int, ...]:
    return (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(shape)


def key(seed: int) -> Array:
    """A key from an integer seed."""
    return _r.key(int(seed) & 0xFFFFFFFFFFFFFFFF)


PRNGKey = key


def split(key: Any, num: int | Sequence[int] = 2) -> Array:
    """``num`` independent keys from ``key``, stacked: ``k1, k2 = random.split(key)``; a shape
    for ``num`` gives keys of that shape."""
    if isinstance(num, (int, np.integer)):
        return _r.split(key, int(num))
    shape = _shape(num)
    keys = _r.split(key, int(np.prod(shape)))
    return _lanes.reshape(keys, shape + tuple(keys.shape[1:]))


def fold_in(key: Any, data: Any) -> Array:
    """A key derived from ``key`` and an integer (traced integers too)."""
    return _r.fold_in(key, data)


def uniform(key: Any, shape: Sequence[int] = (), dtype: Any = np.float32, minval: float = 0.0,
            maxval: float = 1.0) -> Array:
    """Uniform in [minval, maxval); the bounds may be arrays (traced too), broadcast with
    ``shape``."""
    if isinstance(minval, (Array, np.ndarray)) or isinstance(maxval, (Array, np.ndarray)):
        lo, hi = _lanes.asarray(minval, dtype), _lanes.asarray(maxval, dtype)
        unit = _r.uniform(key, _shape(shape), dtype, 0.0, 1.0)
        # As jax: scaled, then kept >= minval (the rounding of lo + span * u can fall below).
        return _lanes.maximum(lo, unit * (hi - lo) + lo)
    return _r.uniform(key, _shape(shape), dtype, float(minval), float(maxval))


def normal(key: Any, shape: Sequence[int] = (), dtype: Any = np.float32) -> Array:
    """Standard normal."""
    return _r.normal(key, _shape(shape), dtype)


def bernoulli(key: Any, p: float = 0.5, shape: Sequence[int] = ()) -> Array:
    """Bools, true with probability p; an array p (traced too) gives one probability per
    element, its shape broadcast with ``shape``."""
    if isinstance(p, (Array, np.ndarray)):
        prob = _lanes.asarray(p, np.float32)
        out_shape = tuple(np.broadcast_shapes(_shape(shape), prob.shape))
        return _lanes.less(_r.uniform(key, out_shape, np.float32, 0.0, 1.0), prob)
    return _r.bernoulli(key, float(p), _shape(shape))


def randint(key: Any, shape: Sequence[int], minval: int, maxval: int,
            dtype: Any = np.int32) -> Array:
    """Integers uniform in [minval, maxval)."""
    return _r.randint(key, _shape(shape), int(minval), int(maxval), dtype)


def categorical(key: Any, logits: Any, axis: int = -1, shape: Sequence[int] | None = None) -> Array:
    """Samples of the categorical distribution of unnormalized log-probabilities ``logits``;
    ``shape`` (as jax's) draws that many, the logits' other dims broadcast to its trailing ones."""
    if shape is None:
        return _r.categorical(key, logits, axis)
    scores = _lanes.asarray(logits, None)
    scores = _lanes.moveaxis(scores, axis % scores.ndim, scores.ndim - 1)
    n = scores.shape[-1]
    scores = _lanes.broadcast_to(scores, _shape(shape) + (n,))
    # Gumbel-max: the argmax of logits + Gumbel noise is a draw from softmax(logits).
    tiny = float(np.finfo(np.float32).tiny)
    u = _r.uniform(key, _shape(shape) + (n,), scores.dtype, tiny, 1.0)
    gumbel = -_lanes.log(-_lanes.log(u))
    return _lanes.argmax(scores + gumbel, len(_shape(shape)), False)


def exponential(key: Any, shape: Sequence[int] = (), dtype: Any = np.float32) -> Array:
    """Exponential with rate 1: -log(1 - u) for u uniform in [0, 1)."""
    return -_lanes.log1p(-_r.uniform(key, _shape(shape), dtype, 0.0, 1.0))


def choice(key: Any, a: Any, shape: Sequence[int] = (), replace: bool = True, p: Any = None,
           axis: int = 0) -> Array:
    """Draws from range(a) for an int, else from a's entries along ``axis`` (jax's choice):
    uniformly or with probabilities ``p``, with or without replacement."""
    population = None if isinstance(a, (int, np.integer)) else _lanes.asarray(a, None)
    n = int(a) if population is None else population.shape[axis]
    out_shape = _shape(shape)
    count = int(np.prod(out_shape))
    if not replace and count > n:
        raise LanesError(f"choice: cannot draw {count} of {n} without replacement")
    if p is None and replace:
        index = _r.randint(key, out_shape, 0, n, np.int32)
    elif replace:
        index = categorical(key, _lanes.log(_lanes.asarray(p, np.float32)), shape=out_shape)
    elif p is None:
        index = _lanes.reshape(
            _lanes.slice_axis(_r.permutation(key, n), 0, 0, count, 1), out_shape)
    else:  # Gumbel top-k: the k largest of log p + Gumbel noise, a draw without replacement
        tiny = float(np.finfo(np.float32).tiny)
        u = _r.uniform(key, (n,), np.float32, tiny, 1.0)
        scores = _lanes.log(_lanes.asarray(p, np.float32)) - _lanes.log(-_lanes.log(u))
        top = _lanes.slice_axis(_lanes.argsort(-scores, 0), 0, 0, count, 1)
        index = _lanes.reshape(top, out_shape)
    return index if population is None else _lanes.take(population, index, axis)


def permutation(key: Any, x: Any) -> Array:
    """A permutation of range(x) for an int, else x shuffled along its first axis."""
    return _r.permutation(key, int(x) if isinstance(x, (int, np.integer)) else x)


def truncated_normal(key: Any, lower: float, upper: float, shape: Sequence[int] = (),
                     dtype: Any = np.float32) -> Array:
    """Standard normal conditioned on [lower, upper]."""
    return _r.truncated_normal(key, float(lower), float(upper), _shape(shape), dtype)
