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
    "beta",
    "categorical",
    "cauchy",
    "chisquare",
    "choice",
    "dirichlet",
    "exponential",
    "fold_in",
    "gamma",
    "gumbel",
    "key",
    "laplace",
    "logistic",
    "normal",
    "permutation",
    "poisson",
    "rademacher",
    "randint",
    "split",
    "t",
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


# ---- distributions made from the draws above (jax.random's names and parameters) ------------

def _two(key: Any) -> tuple[Array, Array]:
    """Two keys from one split."""
    keys = _r.split(key, 2)
    return keys[0], keys[1]


def _open_unit(key: Any, shape: tuple[int, ...], dtype: Any) -> Array:
    """Uniform in (0, 1): never 0, so that its logarithm is finite."""
    return _r.uniform(key, shape, dtype, float(np.finfo(dtype).tiny), 1.0)


def gumbel(key: Any, shape: Sequence[int] = (), dtype: Any = np.float32) -> Array:
    """Standard Gumbel: -log(-log(u))."""
    return -_lanes.log(-_lanes.log(_open_unit(key, _shape(shape), dtype)))


def laplace(key: Any, shape: Sequence[int] = (), dtype: Any = np.float32) -> Array:
    """Standard Laplace (density exp(-|x|) / 2): the inverse CDF at u uniform in (-1, 1)."""
    u = _r.uniform(key, _shape(shape), dtype, float(np.nextafter(np.float32(-1), 0)), 1.0)
    return -_lanes.sign(u) * _lanes.log1p(-_lanes.abs(u))


def logistic(key: Any, shape: Sequence[int] = (), dtype: Any = np.float32) -> Array:
    """Standard logistic: log(u / (1 - u))."""
    u = _open_unit(key, _shape(shape), dtype)
    return _lanes.log(u) - _lanes.log1p(-u)


def cauchy(key: Any, shape: Sequence[int] = (), dtype: Any = np.float32) -> Array:
    """Standard Cauchy: tan(pi (u - 1/2))."""
    angle = (_open_unit(key, _shape(shape), dtype) - 0.5) * np.pi
    return _lanes.sin(angle) / _lanes.cos(angle)


def rademacher(key: Any, shape: Sequence[int] = (), dtype: Any = np.int32) -> Array:
    """-1 or +1 with equal probability."""
    return _lanes.cast(_r.randint(key, _shape(shape), 0, 2, np.int32) * 2 - 1, dtype)


def _parameter(value: Any, shape: Sequence[int] | None, dtype: Any) -> Array:
    """A distribution's parameter as an Array broadcast to ``shape`` (its own when None)."""
    a = _lanes.asarray(value, dtype)
    return a if shape is None else _lanes.broadcast_to(a, _shape(shape))


def _until_all(draw: Any, init: tuple, key: Any) -> tuple:
    """Runs ``draw(key, state) -> (state, done)`` with a fresh key each round until every
    element is done (lax.while_loop: under vmap each example stops with its last element)."""
    from . import numpy as lnp
    from .lax import while_loop

    def body(carry: tuple) -> tuple:
        next_key, key_now = _two(carry[0])
        return (next_key,) + draw(key_now, carry[1:])

    return while_loop(lambda carry: ~lnp.all(carry[-1]), body, (key,) + init)[1:]


def gamma(key: Any, a: Any, shape: Sequence[int] | None = None, dtype: Any = np.float32) -> Array:
    """Gamma with shape ``a`` (an array: one per element) and scale 1, by Marsaglia and Tsang's
    rejection method (each element draws until accepted, ~1.05 rounds on average); for a < 1 a
    draw for a + 1 times u^(1/a)."""
    a = _parameter(a, shape, dtype)
    boosted = _lanes.less(a, 1.0)
    d = _lanes.where(boosted, a + 1.0, a) - 1.0 / 3.0
    c = 1.0 / _lanes.sqrt(d * 9.0)
    loop_key, boost_key = _two(key)

    def draw(k: Any, state: tuple) -> tuple:
        value, done = state
        k1, k2 = _two(k)
        z = _r.normal(k1, a.shape, dtype)
        u = _open_unit(k2, a.shape, dtype)
        v = (z * c + 1.0) ** 3
        positive = v > 0.0
        safe_v = _lanes.where(positive, v, 1.0)
        accept = positive & (_lanes.log(u) < z * z * 0.5 + d - d * safe_v + d * _lanes.log(safe_v))
        fresh = accept & ~done
        return _lanes.where(fresh, d * safe_v, value), done | accept

    value, _ = _until_all(draw, (_lanes.full(a.shape, 0.0, dtype),
                                 _lanes.less(_lanes.full(a.shape, 1.0, dtype), 0.0)), loop_key)
    u = _open_unit(boost_key, a.shape, dtype)
    return _lanes.where(boosted, value * _lanes.exp(_lanes.log(u) / a), value)


def beta(key: Any, a: Any, b: Any, shape: Sequence[int] | None = None,
         dtype: Any = np.float32) -> Array:
    """Beta(a, b): X / (X + Y) for X ~ Gamma(a), Y ~ Gamma(b)."""
    if shape is None:
        shape = np.broadcast_shapes(np.shape(np.asarray(a) if not isinstance(a, Array) else a),
                                    np.shape(np.asarray(b) if not isinstance(b, Array) else b))
    kx, ky = _two(key)
    x = gamma(kx, a, shape, dtype)
    y = gamma(ky, b, shape, dtype)
    return x / (x + y)


def dirichlet(key: Any, alpha: Any, shape: Sequence[int] | None = None,
              dtype: Any = np.float32) -> Array:
    """Dirichlet(alpha) over alpha's last axis: gammas normalized to sum to 1; ``shape`` is the
    batch shape (alpha's leading dims broadcast to it)."""
    alpha = _lanes.asarray(alpha, dtype)
    batch = tuple(alpha.shape[:-1]) if shape is None else _shape(shape)
    g = gamma(key, alpha, batch + (alpha.shape[-1],), dtype)
    return g / _lanes.sum(g, [len(batch)], True)


def chisquare(key: Any, df: Any, shape: Sequence[int] | None = None,
              dtype: Any = np.float32) -> Array:
    """Chi-square with ``df`` degrees of freedom: 2 Gamma(df / 2)."""
    return gamma(key, _lanes.asarray(df, dtype) * 0.5, shape, dtype) * 2.0


def t(key: Any, df: Any, shape: Sequence[int] | None = None, dtype: Any = np.float32) -> Array:
    """Student's t with ``df`` degrees of freedom: z / sqrt(chi2(df) / df)."""
    df = _parameter(df, shape, dtype)
    kz, kc = _two(key)
    z = _r.normal(kz, df.shape, dtype)
    return z * _lanes.sqrt(df / chisquare(kc, df, None, dtype))


def poisson(key: Any, lam: Any, shape: Sequence[int] | None = None,
            dtype: Any = np.int32) -> Array:
    """Poisson with rate ``lam``: the number of unit-rate exponential arrivals within lam. Each
    round adds one arrival to every element still counting, so a call takes ~max(lam) + 1 rounds
    (jax switches to a rejection method above lam = 10; here large rates cost more rounds)."""
    lam = _parameter(lam, shape, np.float32)

    def draw(k: Any, state: tuple) -> tuple:
        count, elapsed, done = state
        elapsed = elapsed - _lanes.log(_open_unit(k, lam.shape, np.float32))
        over = elapsed > lam
        return count + _lanes.where(over | done, 0, 1), elapsed, done | over

    zeros = _lanes.full(lam.shape, 0.0, np.float32)
    count, _, _ = _until_all(draw, (_lanes.full(lam.shape, 0, np.int32), zeros,
                                    _lanes.less(lam, 0.0)), key)
    return _lanes.cast(count, dtype)
