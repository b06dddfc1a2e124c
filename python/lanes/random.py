"""Counter-based random numbers (jax.random's names): keys are 0-d int64 Arrays, split into more
keys, and every draw is a pure function of its key, so draws batch under vmap and reproduce
under jit. A ``Generator`` is a stateful stream of keys for code that prefers one (its draws
inside vmap follow vmap's ``randomness`` option).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from . import _lanes
from ._lanes import Array

Generator = _lanes.random.Generator

__all__ = [
    "Generator",
    "bernoulli",
    "categorical",
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


def split(key: Any, num: int = 2) -> Array:
    """``num`` independent keys from ``key``, stacked: ``k1, k2 = random.split(key)``."""
    return _r.split(key, num)


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


def categorical(key: Any, logits: Any, axis: int = -1) -> Array:
    """Samples of the categorical distribution of unnormalized log-probabilities ``logits``."""
    return _r.categorical(key, logits, axis)


def permutation(key: Any, x: Any) -> Array:
    """A permutation of range(x) for an int, else x shuffled along its first axis."""
    return _r.permutation(key, int(x) if isinstance(x, (int, np.integer)) else x)


def truncated_normal(key: Any, lower: float, upper: float, shape: Sequence[int] = (),
                     dtype: Any = np.float32) -> Array:
    """Standard normal conditioned on [lower, upper]."""
    return _r.truncated_normal(key, float(lower), float(upper), _shape(shape), dtype)
