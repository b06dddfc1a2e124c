"""numpy functions that lanes.numpy composes from lanes' ops (re-exported there): each is a few
lanes ops, so it traces, batches and differentiates as they do."""

from __future__ import annotations

import math
import types
from typing import Any, Sequence

import numpy as np

from . import _lanes
from ._lanes import Array, LanesError


def _arr(x: Any) -> Array:
    return x if isinstance(x, Array) else _lanes.asarray(x, None)


def _floating(x: Any) -> Array:
    x = _arr(x)
    return x if x.dtype.kind == "f" else _lanes.cast(x, np.float32)


def _axis(axis: int, ndim: int) -> int:
    if not -ndim <= axis < max(ndim, 1):
        raise LanesError(f"axis {axis} is out of bounds for an array of {ndim} dimensions")
    return axis % max(ndim, 1)


# ---- elementwise -------------------------------------------------------------------------------


def isinf(x: Any) -> Array:
    x = _arr(x)
    if x.dtype.kind != "f":
        return _lanes.full(x.shape, 0.0, np.bool_)
    return _lanes.equal(_lanes.abs(x), np.inf)


def isclose(a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08,
            equal_nan: bool = False) -> Array:
    a, b = _floating(a), _floating(b)
    close = _lanes.less_equal(_lanes.abs(a - b), atol + rtol * _lanes.abs(b))
    close = close | _lanes.equal(a, b)  # equal infinities (inf - inf is nan)
    if equal_nan:
        close = close | (_lanes.not_equal(a, a) & _lanes.not_equal(b, b))
    return close


def allclose(a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> Array:
    close = _lanes.cast(isclose(a, b, rtol, atol, equal_nan), np.int32)
    return _lanes.equal(_lanes.sum(1 - close, None, False), 0)


def log2(x: Any) -> Array:
    return _lanes.log(_floating(x)) * (1 / math.log(2))


def log10(x: Any) -> Array:
    return _lanes.log(_floating(x)) * (1 / math.log(10))


def tan(x: Any) -> Array:
    x = _floating(x)
    return _lanes.sin(x) / _lanes.cos(x)


def sinh(x: Any) -> Array:
    x = _floating(x)  # through expm1: no cancellation near 0
    return (_lanes.expm1(x) - _lanes.expm1(-x)) * 0.5


def cosh(x: Any) -> Array:
    x = _floating(x)
    return (_lanes.exp(x) + _lanes.exp(-x)) * 0.5


def arctan(x: Any) -> Array:
    x = _floating(x)
    return _lanes.arctan2(x, _lanes.full((), 1.0, x.dtype))


def arcsin(x: Any) -> Array:
    x = _floating(x)  # sqrt((1 - x)(1 + x)) keeps the digits 1 - x*x loses near +-1
    return _lanes.arctan2(x, _lanes.sqrt((1 - x) * (1 + x)))


def arccos(x: Any) -> Array:
    x = _floating(x)
    return _lanes.arctan2(_lanes.sqrt((1 - x) * (1 + x)), x)


def hypot(a: Any, b: Any) -> Array:
    a, b = _lanes.abs(_floating(a)), _lanes.abs(_floating(b))
    big, small = _lanes.maximum(a, b), _lanes.minimum(a, b)
    ratio = _lanes.where(_lanes.equal(big, 0), 0.0, small / big)  # no overflow in the squares
    return big * _lanes.sqrt(1 + ratio * ratio)


def logaddexp(a: Any, b: Any) -> Array:
    a, b = _floating(a), _floating(b)
    big = _lanes.maximum(a, b)
    return big + _lanes.log1p(_lanes.exp(-_lanes.abs(a - b)))


def trunc(x: Any) -> Array:
    x = _arr(x)
    if x.dtype.kind != "f":
        return x
    return _lanes.where(_lanes.less(x, 0), _lanes.ceil(x), _lanes.floor(x))


# ---- shapes ------------------------------------------------------------------------------------


def tile(a: Any, reps: int | Sequence[int]) -> Array:
    a = _arr(a)
    reps = (reps,) if isinstance(reps, int) else tuple(reps)
    ndim = max(a.ndim, len(reps))
    a = _lanes.reshape(a, (1,) * (ndim - a.ndim) + a.shape)
    reps = (1,) * (ndim - len(reps)) + reps
    # Each dim d of size n becomes (reps[d], n), broadcast, then merged.
    wide = _lanes.reshape(a, sum(((1, n) for n in a.shape), ()))
    target = sum(((r, n) for r, n in zip(reps, a.shape)), ())
    return _lanes.reshape(_lanes.broadcast_to(wide, target),
                          tuple(r * n for r, n in zip(reps, a.shape)))


def repeat(a: Any, repeats: int, axis: int | None = None) -> Array:
    a = _arr(a)
    if not isinstance(repeats, int):
        raise LanesError("repeat: lanes repeats every element the same number of times "
                         "(an int); per-element counts give a value-dependent shape")
    if axis is None:
        a, axis = _lanes.reshape(a, (a.size,)), 0
    axis = _axis(axis, a.ndim)
    shape = a.shape
    wide = _lanes.expand_dims(a, axis + 1)
    target = shape[:axis + 1] + (repeats,) + shape[axis + 1:]
    return _lanes.reshape(_lanes.broadcast_to(wide, target),
                          shape[:axis] + (shape[axis] * repeats,) + shape[axis + 1:])


def roll(a: Any, shift: int | Sequence[int], axis: int | Sequence[int] | None = None) -> Array:
    a = _arr(a)
    if axis is None:
        return _lanes.reshape(roll(_lanes.reshape(a, (a.size,)), shift, 0), a.shape)
    shifts = (shift,) if isinstance(shift, int) else tuple(shift)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    for s, ax in zip(shifts, axes):
        ax = _axis(ax, a.ndim)
        n = a.shape[ax]
        if n == 0 or s % n == 0:
            continue
        s %= n
        a = _lanes.concatenate([_lanes.slice_axis(a, ax, n - s, n, 1),
                                _lanes.slice_axis(a, ax, 0, n - s, 1)], ax)
    return a


def _band(m: Any, k: int, upper: bool) -> Array:
    m = _arr(m)
    if m.ndim < 2:
        raise LanesError(f"{'triu' if upper else 'tril'}: needs at least 2 dimensions, got "
                         f"{m.ndim}")
    rows, cols = m.shape[-2:]
    i = _lanes.iota((rows, cols), 0, np.int32)
    j = _lanes.iota((rows, cols), 1, np.int32)
    keep = _lanes.greater_equal(j - i, k) if upper else _lanes.less_equal(j - i, k)
    return _lanes.where(keep, m, _lanes.full((), 0.0, m.dtype))


def triu(m: Any, k: int = 0) -> Array:
    return _band(m, k, True)


def tril(m: Any, k: int = 0) -> Array:
    return _band(m, k, False)


def diagonal(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Array:
    a = _arr(a)
    axis1, axis2 = _axis(axis1, a.ndim), _axis(axis2, a.ndim)
    rest = [d for d in range(a.ndim) if d not in (axis1, axis2)]
    a = _lanes.transpose(a, rest + [axis1, axis2])
    rows, cols = a.shape[-2:]
    n = max(0, min(rows, cols - offset) if offset >= 0 else min(rows + offset, cols))
    first = (0, offset) if offset >= 0 else (-offset, 0)
    # Element (r, c) of the last two dims is at r * cols + c; the diagonal steps by cols + 1.
    flat = _lanes.reshape(a, a.shape[:-2] + (rows * cols,))
    start = first[0] * cols + first[1]
    if n == 0:
        return _lanes.slice_axis(flat, flat.ndim - 1, 0, 0, 1)
    return _lanes.slice_axis(flat, flat.ndim - 1, start, start + (n - 1) * (cols + 1) + 1,
                             cols + 1)


def diag(v: Any, k: int = 0) -> Array:
    v = _arr(v)
    if v.ndim == 2:
        return diagonal(v, k)
    if v.ndim != 1:
        raise LanesError(f"diag: takes a 1-d or 2-d array, got {v.ndim} dimensions")
    n = v.shape[0] + abs(k)
    i = _lanes.iota((n, n), 0, np.int32)
    j = _lanes.iota((n, n), 1, np.int32)
    # Element (i, i + k) is v[i] for k >= 0, and (j - k, j) is v[j] for k < 0: v padded to n runs
    # down the rows or along the columns.
    padded = _lanes.pad(v, [0], [abs(k)], 0.0) if k else v
    values = _lanes.expand_dims(padded, 1 if k >= 0 else 0)
    return _lanes.where(_lanes.equal(j - i, k), values, _lanes.full((), 0.0, v.dtype))


def trace(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Array:
    d = diagonal(a, offset, axis1, axis2)
    return _lanes.sum(d, [d.ndim - 1], False)


def _atleast(a: Any, ndim: int) -> Array:
    a = _arr(a)
    if a.ndim >= ndim:
        return a
    return _lanes.reshape(a, (1,) * (ndim - a.ndim) + a.shape)


def vstack(arrays: Sequence[Any]) -> Array:
    return _lanes.concatenate([_atleast(a, 2) for a in arrays], 0)


def hstack(arrays: Sequence[Any]) -> Array:
    parts = [_atleast(a, 1) for a in arrays]
    return _lanes.concatenate(parts, 0 if parts[0].ndim == 1 else 1)


def split(a: Any, indices_or_sections: int | Sequence[int], axis: int = 0) -> list[Array]:
    a = _arr(a)
    axis = _axis(axis, a.ndim)
    n = a.shape[axis]
    if isinstance(indices_or_sections, int):
        if indices_or_sections <= 0 or n % indices_or_sections:
            raise LanesError(f"split: {n} elements do not split into {indices_or_sections} "
                             "equal parts")
        step = n // indices_or_sections
        bounds = list(range(0, n + 1, step))
    else:
        bounds = [0] + [min(max(int(i), 0), n) for i in indices_or_sections] + [n]
    return [_lanes.slice_axis(a, axis, lo, max(lo, hi), 1) for lo, hi in zip(bounds, bounds[1:])]


def diff(a: Any, n: int = 1, axis: int = -1) -> Array:
    a = _arr(a)
    axis = _axis(axis, a.ndim)
    for _ in range(n):
        m = a.shape[axis]
        a = _lanes.slice_axis(a, axis, 1, m, 1) - _lanes.slice_axis(a, axis, 0, max(m - 1, 0), 1)
    return a


def take_along_axis(arr: Any, indices: Any, axis: int) -> Array:
    arr, indices = _arr(arr), _arr(indices)
    if arr.ndim != indices.ndim:
        raise LanesError(f"take_along_axis: indices have {indices.ndim} dimensions, the array "
                         f"{arr.ndim}")
    axis = _axis(axis, arr.ndim)
    # Moved last and flattened: entry (..., j) reads row r's element indices[r, j].
    a = _lanes.moveaxis(arr, axis, arr.ndim - 1)
    idx = _lanes.moveaxis(indices, axis, arr.ndim - 1)
    lead = tuple(max(x, y) for x, y in zip(a.shape[:-1], idx.shape[:-1]))
    a = _lanes.broadcast_to(a, lead + a.shape[-1:])
    idx = _lanes.broadcast_to(_lanes.cast(idx, np.int64), lead + idx.shape[-1:])
    n = a.shape[-1]
    rows = int(np.prod(lead)) if lead else 1
    idx = _lanes.where(_lanes.less(idx, 0), idx + n, idx)  # numpy's negative indices
    base = _lanes.reshape(_lanes.iota((rows,), 0, np.int64) * n, lead + (1,))
    flat = _lanes.take(_lanes.reshape(a, (rows * n,)),
                       _lanes.reshape(idx + base, (idx.size,)), 0)
    return _lanes.moveaxis(_lanes.reshape(flat, idx.shape), arr.ndim - 1, axis)


def meshgrid(*xi: Any, indexing: str = "xy") -> list[Array]:
    if indexing not in ("xy", "ij"):
        raise LanesError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    xs = [_lanes.reshape(_arr(x), (_arr(x).size,)) for x in xi]
    shape = [x.shape[0] for x in xs]
    if indexing == "xy" and len(xs) >= 2:
        shape[0], shape[1] = shape[1], shape[0]
    out = []
    for k, x in enumerate(xs):
        at = (1 - k if k < 2 else k) if indexing == "xy" and len(xs) >= 2 else k
        view = [1] * len(xs)
        view[at] = x.shape[0]
        out.append(_lanes.broadcast_to(_lanes.reshape(x, tuple(view)), tuple(shape)))
    return out


# ---- reductions --------------------------------------------------------------------------------


def count_nonzero(a: Any, axis: Any = None, keepdims: bool = False) -> Array:
    nonzero = _lanes.cast(_lanes.not_equal(_arr(a), 0), np.int32)
    return _lanes.sum(nonzero, axis, keepdims)


def average(a: Any, axis: Any = None, weights: Any = None) -> Array:
    a = _floating(a)
    if weights is None:
        return _lanes.mean(a, axis, False)
    w = _lanes.cast(_arr(weights), a.dtype)
    if w.shape != a.shape:
        if axis is None or w.ndim != 1:
            raise LanesError("average: weights of another shape must be 1-d along an axis")
        view = [1] * a.ndim
        view[_axis(axis, a.ndim)] = w.shape[0]
        w = _lanes.reshape(w, tuple(view))
    return _lanes.sum(a * w, axis, False) / _lanes.sum(_lanes.broadcast_to(w, a.shape), axis,
                                                       False)


def median(a: Any, axis: int | None = None, keepdims: bool = False) -> Array:
    a = _floating(a)
    if axis is None:
        flat = _lanes.reshape(a, (a.size,))
        out = median(flat, 0)
        return _lanes.reshape(out, (1,) * a.ndim) if keepdims else out
    axis = _axis(axis, a.ndim)
    s = _lanes.sort(a, axis)
    n = a.shape[axis]
    lo = _lanes.slice_axis(s, axis, (n - 1) // 2, (n - 1) // 2 + 1, 1)
    hi = _lanes.slice_axis(s, axis, n // 2, n // 2 + 1, 1)
    out = (lo + hi) * 0.5
    return out if keepdims else _lanes.squeeze(out, axis)


def quantile(a: Any, q: Any, axis: int | None = None, keepdims: bool = False) -> Array:
    """numpy's quantile with its default (linear) method: between the two sorted neighbours of
    position q * (n - 1). ``q`` a number or a 1-d sequence (its axis first in the result)."""
    a = _floating(a)
    ndim = a.ndim
    if axis is None:
        a, axis, flat = _lanes.reshape(a, (a.size,)), 0, True
    else:
        axis, flat = _axis(axis, a.ndim), False
    qs = np.atleast_1d(np.asarray(q, dtype=np.float64))
    if ((qs < 0) | (qs > 1)).any():
        raise LanesError(f"quantile: q must be in [0, 1], got {q!r}")
    s = _lanes.sort(a, axis)
    n = a.shape[axis]
    outs = []
    for value in qs:
        pos = value * (n - 1)
        lo, frac = int(np.floor(pos)), float(pos - np.floor(pos))
        hi = min(lo + 1, n - 1)
        below = _lanes.slice_axis(s, axis, lo, lo + 1, 1)
        above = _lanes.slice_axis(s, axis, hi, hi + 1, 1)
        out = below + (above - below) * frac
        if flat and keepdims:  # every axis was reduced: each kept as size 1
            outs.append(_lanes.reshape(out, (1,) * ndim))
        else:
            outs.append(out if keepdims else _lanes.squeeze(out, axis))
    return outs[0] if np.ndim(q) == 0 else _lanes.stack(outs, 0)


def percentile(a: Any, q: Any, axis: int | None = None, keepdims: bool = False) -> Array:
    """numpy's percentile: quantile of q / 100."""
    return quantile(a, np.asarray(q, dtype=np.float64) / 100.0, axis, keepdims)


def _without_nan(a: Any, fill: float) -> Array:
    a = _floating(a)
    return _lanes.where(_lanes.not_equal(a, a), _lanes.full((), fill, a.dtype), a)


def nansum(a: Any, axis: Any = None, keepdims: bool = False) -> Array:
    return _lanes.sum(_without_nan(a, 0.0), axis, keepdims)


def nanmax(a: Any, axis: Any = None, keepdims: bool = False) -> Array:
    """The maximum ignoring NaN (NaN where every element is NaN, as numpy, without its
    warning)."""
    a = _floating(a)
    out = _lanes.max(_without_nan(a, -np.inf), axis, keepdims)
    every = _lanes.equal(nansum(_lanes.cast(_lanes.equal(a, a), a.dtype), axis, keepdims), 0)
    return _lanes.where(every, _lanes.full((), np.nan, a.dtype), out)


def nanmin(a: Any, axis: Any = None, keepdims: bool = False) -> Array:
    """The minimum ignoring NaN (NaN where every element is NaN)."""
    return -nanmax(-_floating(a), axis, keepdims)


def nanmean(a: Any, axis: Any = None, keepdims: bool = False) -> Array:
    a = _floating(a)
    count = _lanes.sum(_lanes.cast(_lanes.equal(a, a), a.dtype), axis, keepdims)
    return nansum(a, axis, keepdims) / count


def nanvar(a: Any, axis: Any = None, ddof: int = 0, keepdims: bool = False) -> Array:
    a = _floating(a)
    count = _lanes.sum(_lanes.cast(_lanes.equal(a, a), a.dtype), axis, True)
    centered = _without_nan(a - nansum(a, axis, True) / count, 0.0)
    total = _lanes.sum(centered * centered, axis, keepdims)
    n = count if keepdims else _lanes.sum(_lanes.cast(_lanes.equal(a, a), a.dtype), axis, False)
    return total / (n - ddof)


def nanstd(a: Any, axis: Any = None, ddof: int = 0, keepdims: bool = False) -> Array:
    return _lanes.sqrt(nanvar(a, axis, ddof, keepdims))


# ---- indices of true elements -------------------------------------------------------------------


def _nonzero_flat(a: Array, size: int | None, what: str) -> Array:
    """The flat indices of a's nonzero elements, ``size`` of them (jax's static-size form: the
    k-th entry is the index of the (k+1)-th nonzero element, or -1 past the last). Without ``size`` a concrete array gives all of them; a traced one cannot."""
    flat = _lanes.reshape(_lanes.cast(_lanes.not_equal(a, 0), np.int32), (a.size,))
    if size is None:
        if a.is_traced:
            raise LanesError(f"{what}: the number of nonzero elements of a traced array is not "
                             f"known while tracing; give size= (and fill_value=), as in jax")
        size = int(_lanes.sum(flat, None, False).item())
    if size == 0 or a.size == 0:
        return _lanes.full((size,), -1.0, np.int64)
    counts = _lanes.cumsum(flat, 0, False)
    # The (k+1)-th nonzero is where the running count first reaches k + 1.
    wanted = _lanes.iota((size,), 0, np.int32) + 1
    at = _lanes.cast(_lanes.searchsorted(counts, wanted, "left"), np.int64)
    return _lanes.where(_lanes.less(at, a.size), at, _lanes.full((), -1.0, np.int64))


def nonzero(a: Any, *, size: int | None = None, fill_value: Any = None) -> tuple[Array, ...]:
    """The indices of a's nonzero elements, one array per dim (numpy's nonzero). Under a
    transform give ``size`` (jax's form): the first ``size`` of them, padded with
    ``fill_value`` (default 0)."""
    a = _arr(a)
    if a.ndim == 0:
        raise LanesError("nonzero: a 0-d array has no indices; use atleast_1d first")
    flat = _nonzero_flat(a, size, "nonzero")
    missing = _lanes.less(flat, 0)
    out = []
    stride = int(np.prod(a.shape))
    for dim in a.shape:
        stride //= dim
        coord = (flat // stride) % dim
        fill = 0 if fill_value is None else fill_value
        out.append(_lanes.where(missing, _lanes.full((), float(fill), np.int64), coord))
    return tuple(out)


def flatnonzero(a: Any, *, size: int | None = None, fill_value: Any = None) -> Array:
    """The flat indices of a's nonzero elements (``size`` / ``fill_value`` as in nonzero)."""
    return nonzero(_lanes.reshape(_arr(a), (_arr(a).size,)), size=size,
                   fill_value=fill_value)[0]


def argwhere(a: Any, *, size: int | None = None, fill_value: Any = None) -> Array:
    """The indices of a's nonzero elements, one row each (``size`` / ``fill_value`` as in
    nonzero)."""
    a = _arr(a)
    if a.ndim == 0:  # numpy: one row of no coordinates if it is nonzero, else none
        rows = nonzero(_lanes.reshape(a, (1,)), size=size, fill_value=fill_value)[0].shape[0]
        return _lanes.full((rows, 0), 0.0, np.int64)
    return _lanes.stack(list(nonzero(a, size=size, fill_value=fill_value)), 1)


# ---- linalg ------------------------------------------------------------------------------------


def norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Array:
    """numpy.linalg.norm for vectors (ord None / 2, 1, inf, -inf, 0 and other powers) and, over
    two axes, the Frobenius norm (ord None / 'fro')."""
    x = _floating(x)
    axes = (tuple(range(x.ndim)) if axis is None else (axis,) if isinstance(axis, int)
            else tuple(axis))
    if len(axes) == 2 or (axis is None and x.ndim == 2):
        if ord not in (None, "fro"):
            raise LanesError(f"linalg.norm: matrix norm ord={ord!r} is not supported (only "
                             "the Frobenius norm)")
        return _lanes.sqrt(_lanes.sum(x * x, list(axes), keepdims))
    if axis is None and ord is not None:
        x, axes = _lanes.reshape(x, (x.size,)), (0,)
    a = _lanes.abs(x)
    ax = list(axes)
    if ord is None or ord == 2:
        return _lanes.sqrt(_lanes.sum(x * x, ax, keepdims))
    if ord == np.inf:
        return _lanes.max(a, ax, keepdims)
    if ord == -np.inf:
        return _lanes.min(a, ax, keepdims)
    if ord == 0:
        return _lanes.sum(_lanes.cast(_lanes.not_equal(a, 0), x.dtype), ax, keepdims)
    if ord == 1:
        return _lanes.sum(a, ax, keepdims)
    return _lanes.sum(a ** ord, ax, keepdims) ** (1.0 / ord)


linalg = types.SimpleNamespace(norm=norm)
linalg.__doc__ = "numpy.linalg's functions lanes has: norm."

__all__ = [
    "allclose", "arccos", "arcsin", "arctan", "argwhere", "average", "cosh", "count_nonzero",
    "diag", "diagonal", "diff", "flatnonzero", "hstack", "hypot", "isclose", "isinf", "linalg",
    "log10", "log2", "logaddexp", "median", "meshgrid", "nanmax", "nanmean", "nanmin", "nanstd",
    "nansum", "nanvar", "nonzero", "percentile", "quantile", "repeat", "roll", "sinh", "split",
    "take_along_axis", "tan", "tile", "trace", "tril", "triu", "trunc", "vstack",
]
