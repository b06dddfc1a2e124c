"""More numpy functions composed from lanes.numpy's own (re-exported there, as those of
_composites.py): elementwise math, building and splitting arrays, counting and interpolating,
and dtype queries. Each is a few lanes ops, so it traces, batches and differentiates as they do."""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ._lanes import Array, LanesError


def _lnp() -> Any:
    from . import numpy as lnp  # (lanes.numpy imports this module)

    return lnp


def _arr(x: Any) -> Array:
    return _lnp().asarray(x)


def _floating(x: Any) -> Array:
    x = _arr(x)
    return x if x.dtype.kind == "f" else x.astype(np.float32)


# ---- elementwise -------------------------------------------------------------------------------


def signbit(x: Any) -> Array:
    """Whether the sign bit is set: true for -0.0 too."""
    lnp, x = _lnp(), _arr(x)
    if x.dtype.kind != "f":
        return lnp.less(x, 0)
    return lnp.less(x, 0) | (lnp.equal(x, 0) & lnp.less(1.0 / x, 0))


def copysign(x1: Any, x2: Any) -> Array:
    lnp = _lnp()
    return lnp.where(signbit(x2), -lnp.abs(_floating(x1)), lnp.abs(_floating(x1)))


def cbrt(x: Any) -> Array:
    lnp, x = _lnp(), _floating(x)
    return lnp.sign(x) * lnp.abs(x) ** (1.0 / 3.0)


def deg2rad(x: Any) -> Array:
    return _floating(x) * (math.pi / 180.0)


def rad2deg(x: Any) -> Array:
    return _floating(x) * (180.0 / math.pi)


radians, degrees = deg2rad, rad2deg


def exp2(x: Any) -> Array:
    return _lnp().power(2.0, _floating(x))


def ldexp(x1: Any, x2: Any) -> Array:
    return _floating(x1) * exp2(x2)


def fabs(x: Any) -> Array:
    return _lnp().abs(_floating(x))


def float_power(x1: Any, x2: Any) -> Array:
    return _lnp().power(_floating(x1), _floating(x2))


def fmax(x1: Any, x2: Any) -> Array:
    """The maximum, ignoring a nan unless both are."""
    lnp, a, b = _lnp(), _arr(x1), _arr(x2)
    return lnp.where(lnp.isnan(a), b, lnp.where(lnp.isnan(b), a, lnp.maximum(a, b)))


def fmin(x1: Any, x2: Any) -> Array:
    lnp, a, b = _lnp(), _arr(x1), _arr(x2)
    return lnp.where(lnp.isnan(a), b, lnp.where(lnp.isnan(b), a, lnp.minimum(a, b)))


def fmod(x1: Any, x2: Any) -> Array:
    """C's remainder: the sign of x1 (numpy's remainder has x2's)."""
    lnp, a, b = _lnp(), _arr(x1), _arr(x2)
    r = lnp.remainder(a, b)
    return lnp.where(lnp.not_equal(r, 0) & lnp.not_equal(signbit(r), signbit(a)), r - b, r)


def _integers(x1: Any, x2: Any, what: str) -> tuple[Array, Array]:
    """|x1| and |x2| as integer arrays of their promoted dtype, broadcast together."""
    lnp = _lnp()
    a, b = _arr(x1), _arr(x2)
    for x in (a, b):
        if x.dtype.kind not in "iu":
            raise LanesError(f"{what}: integer arrays only, got {x.dtype}")
    dtype = lnp.promote_types(a.dtype, b.dtype)
    return tuple(lnp.abs(x.astype(dtype)) for x in broadcast_arrays(a, b))  # type: ignore


def gcd(x1: Any, x2: Any) -> Array:
    """The greatest common divisor of |x1| and |x2|, elementwise (numpy.gcd; gcd(0, 0) is 0):
    Euclid's algorithm as one lax.while_loop over the whole array, until every pair is done."""
    from . import lax  # (lax imports lanes.numpy's modules)

    lnp = _lnp()

    def step(pair: tuple[Array, Array]) -> tuple[Array, Array]:
        a, b = pair
        done = lnp.equal(b, 0)
        return lnp.where(done, a, b), lnp.where(done, b, a % lnp.where(done, 1, b))

    return lax.while_loop(lambda pair: lnp.any(lnp.not_equal(pair[1], 0)), step,
                          _integers(x1, x2, "gcd"))[0]


def lcm(x1: Any, x2: Any) -> Array:
    """The least common multiple of |x1| and |x2|, elementwise (numpy.lcm; 0 when either is)."""
    lnp = _lnp()
    a, b = _integers(x1, x2, "lcm")
    g = gcd(a, b)
    return lnp.where(lnp.equal(g, 0), 0, a // lnp.where(lnp.equal(g, 0), 1, g) * b)


def heaviside(x1: Any, x2: Any) -> Array:
    lnp, x = _lnp(), _floating(x1)
    step = lnp.where(lnp.less(x, 0), 0.0, lnp.where(lnp.greater(x, 0), 1.0, _floating(x2)))
    return lnp.where(lnp.isnan(x), x, step)


def isposinf(x: Any) -> Array:
    return _lnp().equal(_floating(x), np.inf)


def isneginf(x: Any) -> Array:
    return _lnp().equal(_floating(x), -np.inf)


def logaddexp2(x1: Any, x2: Any) -> Array:
    ln2 = math.log(2.0)
    return _lnp().logaddexp(_floating(x1) * ln2, _floating(x2) * ln2) / ln2


def nan_to_num(x: Any, copy: bool = True, nan: float = 0.0, posinf: float | None = None,
               neginf: float | None = None) -> Array:
    lnp, x = _lnp(), _arr(x)
    if x.dtype.kind != "f":
        return x
    big = float(np.finfo(x.dtype).max)
    x = lnp.where(lnp.isnan(x), nan, x)
    x = lnp.where(isposinf(x), big if posinf is None else posinf, x)
    return lnp.where(isneginf(x), -big if neginf is None else neginf, x)


def rint(x: Any) -> Array:
    """Round half to even, as numpy's round."""
    return _lnp().round(_floating(x))


def sinc(x: Any) -> Array:
    """sin(pi x) / (pi x), 1 at 0."""
    lnp, x = _lnp(), _floating(x)
    zero = lnp.equal(x, 0)
    px = lnp.where(zero, 1.0, x) * math.pi
    return lnp.where(zero, 1.0, lnp.sin(px) / px)


# ---- building and splitting arrays -------------------------------------------------------------


def _at_least(arrays: tuple, shape_of: Any) -> Any:
    out = [_lnp().reshape(a, shape_of(a)) for a in map(_arr, arrays)]
    return out[0] if len(out) == 1 else out


def atleast_1d(*arrays: Any) -> Any:
    return _at_least(arrays, lambda a: a.shape if a.ndim >= 1 else (1,))


def atleast_2d(*arrays: Any) -> Any:
    return _at_least(arrays, lambda a: a.shape if a.ndim >= 2 else (1,) * (2 - a.ndim) + a.shape)


def atleast_3d(*arrays: Any) -> Any:
    def shape(a: Array) -> tuple:  # numpy's: (N,) -> (1, N, 1), (M, N) -> (M, N, 1)
        return {0: (1, 1, 1), 1: (1,) + a.shape + (1,), 2: a.shape + (1,)}.get(a.ndim, a.shape)

    return _at_least(arrays, shape)


def broadcast_arrays(*args: Any) -> list[Array]:
    arrays = [_arr(a) for a in args]
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    return [_lnp().broadcast_to(a, shape) for a in arrays]


def fliplr(m: Any) -> Array:
    return _lnp().flip(_arr(m), 1)


def flipud(m: Any) -> Array:
    return _lnp().flip(_arr(m), 0)


def rot90(m: Any, k: int = 1, axes: tuple[int, int] = (0, 1)) -> Array:
    """m rotated by 90 degrees k times, from the first axis towards the second."""
    lnp, m = _lnp(), _arr(m)
    a0, a1 = (ax % m.ndim for ax in axes)
    if a0 == a1:
        raise LanesError("rot90: the axes must differ")
    order = list(range(m.ndim))
    order[a0], order[a1] = order[a1], order[a0]
    k %= 4
    if k == 0:
        return m
    if k == 2:
        return lnp.flip(lnp.flip(m, a0), a1)
    if k == 1:
        return lnp.transpose(lnp.flip(m, a1), order)
    return lnp.flip(lnp.transpose(m, order), a1)


def dstack(tup: Sequence[Any]) -> Array:
    return _lnp().concatenate([atleast_3d(a) for a in tup], axis=2)


def hsplit(ary: Any, indices_or_sections: Any) -> list[Array]:
    a = _arr(ary)
    return _lnp().split(a, indices_or_sections, axis=1 if a.ndim > 1 else 0)


def dsplit(ary: Any, indices_or_sections: Any) -> list[Array]:
    return _lnp().split(_arr(ary), indices_or_sections, axis=2)


def tri(N: int, M: int | None = None, k: int = 0, dtype: Any = np.float32) -> Array:
    lnp = _lnp()
    rows = lnp.arange(N).reshape(N, 1)
    cols = lnp.arange(N if M is None else M).reshape(1, -1)
    return lnp.greater_equal(rows + k, cols).astype(dtype)


def indices(dimensions: Sequence[int], dtype: Any = np.int32) -> Array:
    lnp = _lnp()
    grids = lnp.meshgrid(*(lnp.arange(d, dtype=dtype) for d in dimensions), indexing="ij")
    return lnp.stack(grids) if grids else lnp.zeros((0,), dtype)


def diag_indices(n: int, ndim: int = 2) -> tuple[Array, ...]:
    return (_lnp().arange(n),) * ndim


def kron(a: Any, b: Any) -> Array:
    lnp, a, b = _lnp(), _arr(a), _arr(b)
    nd = max(a.ndim, b.ndim)
    a = a.reshape((1,) * (nd - a.ndim) + a.shape)
    b = b.reshape((1,) * (nd - b.ndim) + b.shape)
    wide = [d for pair in zip(a.shape, (1,) * nd) for d in pair]
    tall = [d for pair in zip((1,) * nd, b.shape) for d in pair]
    product = lnp.reshape(a, wide) * lnp.reshape(b, tall)
    return product.reshape(tuple(x * y for x, y in zip(a.shape, b.shape)))


def inner(a: Any, b: Any) -> Array:
    lnp, a, b = _lnp(), _arr(a), _arr(b)
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    return lnp.tensordot(a, b, axes=([a.ndim - 1], [b.ndim - 1]))


def vdot(a: Any, b: Any) -> Array:
    lnp = _lnp()
    return lnp.dot(lnp.ravel(_arr(a)), lnp.ravel(_arr(b)))


def cross(a: Any, b: Any, axis: int = -1) -> Array:
    """The cross product of 3-vectors (or the z component for 2-vectors) along ``axis``."""
    lnp, a, b = _lnp(), _arr(a), _arr(b)
    a, b = lnp.moveaxis(a, axis, -1), lnp.moveaxis(b, axis, -1)
    if a.shape[-1] not in (2, 3) or b.shape[-1] not in (2, 3):
        raise LanesError("cross: vectors must have 2 or 3 components")
    a0, a1 = a[..., 0], a[..., 1]
    b0, b1 = b[..., 0], b[..., 1]
    a2 = a[..., 2] if a.shape[-1] == 3 else lnp.zeros_like(a0)
    b2 = b[..., 2] if b.shape[-1] == 3 else lnp.zeros_like(b0)
    if a.shape[-1] == 2 and b.shape[-1] == 2:
        return a0 * b1 - a1 * b0
    return lnp.moveaxis(lnp.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], -1),
                        -1, axis)


def logspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, base: float = 10.0,
             dtype: Any = None) -> Array:
    out = _lnp().power(base, _lnp().linspace(start, stop, num, endpoint=endpoint))
    return out if dtype is None else out.astype(dtype)


# ---- reductions, counting, interpolation -------------------------------------------------------


def ptp(a: Any, axis: Any = None, keepdims: bool = False) -> Array:
    lnp, a = _lnp(), _arr(a)
    return lnp.max(a, axis=axis, keepdims=keepdims) - lnp.min(a, axis=axis, keepdims=keepdims)


def nanargmax(a: Any, axis: int | None = None) -> Array:
    lnp, a = _lnp(), _floating(a)
    return lnp.argmax(lnp.where(lnp.isnan(a), -np.inf, a), axis=axis)


def nanargmin(a: Any, axis: int | None = None) -> Array:
    lnp, a = _lnp(), _floating(a)
    return lnp.argmin(lnp.where(lnp.isnan(a), np.inf, a), axis=axis)


def nanprod(a: Any, axis: Any = None, keepdims: bool = False) -> Array:
    lnp, a = _lnp(), _floating(a)
    return lnp.prod(lnp.where(lnp.isnan(a), 1.0, a), axis=axis, keepdims=keepdims)


def nancumsum(a: Any, axis: int | None = None) -> Array:
    lnp, a = _lnp(), _floating(a)
    return lnp.cumsum(lnp.where(lnp.isnan(a), 0.0, a), axis=axis)


def trapezoid(y: Any, x: Any = None, dx: float = 1.0, axis: int = -1) -> Array:
    lnp, y = _lnp(), _floating(y)
    n = y.shape[axis]
    mid = (lnp.take(y, lnp.arange(1, n), axis) + lnp.take(y, lnp.arange(n - 1), axis)) * 0.5
    if x is None:
        return lnp.sum(mid, axis=axis) * dx
    steps = lnp.diff(_floating(x), axis=axis if _arr(x).ndim > 1 else -1)
    if steps.ndim == 1:
        steps = steps.reshape((-1,) + (1,) * (y.ndim - 1 - axis % y.ndim))
    return lnp.sum(mid * steps, axis=axis)


def polyval(p: Any, x: Any) -> Array:
    """p[0] x^(n-1) + ... + p[n-1], by Horner's rule."""
    lnp, p, x = _lnp(), _arr(p), _arr(x)
    out = lnp.zeros_like(x * p[0])
    for i in range(p.shape[0]):
        out = out * x + p[i]
    return out


def select(condlist: Sequence[Any], choicelist: Sequence[Any], default: Any = 0) -> Array:
    """The choice of the first true condition, element by element; ``default`` where none is."""
    if len(condlist) != len(choicelist):
        raise LanesError("select: condlist and choicelist must have the same length")
    lnp = _lnp()
    out = _arr(default)
    for cond, choice in reversed(list(zip(condlist, choicelist))):
        out = lnp.where(cond, choice, out)
    return out


def interp(x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None) -> Array:
    """Piecewise-linear interpolation of (xp, fp) at x; xp increasing."""
    lnp, x, xp, fp = _lnp(), _floating(x), _floating(xp), _floating(fp)
    n = xp.shape[0]
    i = lnp.clip(lnp.searchsorted(xp, x, side="right"), 1, n - 1)
    x0, x1, y0, y1 = xp[i - 1], xp[i], fp[i - 1], fp[i]
    span = x1 - x0
    t = (x - x0) / lnp.where(lnp.equal(span, 0), 1.0, span)
    out = y0 + t * (y1 - y0)
    out = lnp.where(lnp.less(x, xp[0]), fp[0] if left is None else left, out)
    return lnp.where(lnp.greater(x, xp[n - 1]), fp[n - 1] if right is None else right, out)


def bincount(x: Any, weights: Any = None, minlength: int = 0, *, length: int | None = None
             ) -> Array:
    """Counts (or summed weights) of each value 0 .. length-1 in the non-negative integers x.
    Traced x needs ``length`` (jax's rule: the result's size must be known)."""
    lnp, x = _lnp(), _arr(x)
    if length is None:
        if x.is_traced:
            raise LanesError("bincount of a traced array needs length= (the number of bins)")
        length = max(int(np.asarray(x).max(initial=-1)) + 1, minlength)
    ones = lnp.ones(x.shape, np.int32) if weights is None else _arr(weights)
    return lnp.zeros((length,), ones.dtype).at[lnp.ravel(x)].add(lnp.ravel(ones))


def histogram(a: Any, bins: Any = 10, range: tuple[float, float] | None = None,
              weights: Any = None, density: bool = False) -> tuple[Array, Array]:
    """numpy's histogram: ``bins`` equal bins over ``range`` (the data's own for concrete data)
    or the given edges; the last bin includes its right edge."""
    lnp, a = _lnp(), _ravel(_floating(a))
    if isinstance(bins, (int, np.integer)):
        if range is None:
            if a.is_traced:
                raise LanesError("histogram of a traced array needs range= or explicit edges")
            values = np.asarray(a)
            range = (float(values.min()), float(values.max())) if values.size else (0.0, 1.0)
        lo, hi = range
        edges = lnp.linspace(lo, hi if hi > lo else lo + 1.0, int(bins) + 1)
    else:
        edges = _floating(bins)
    nbins = edges.shape[0] - 1
    index = lnp.searchsorted(edges, a, side="right") - 1
    index = lnp.where(lnp.equal(a, edges[nbins]), nbins - 1, index)  # the last bin is closed
    inside = lnp.greater_equal(index, 0) & lnp.less(index, nbins)
    w = lnp.ones(a.shape, np.float32) if weights is None else lnp.ravel(_floating(weights))
    # Values outside the edges land in one more bin, then dropped.
    counts = lnp.zeros((nbins + 1,), w.dtype).at[lnp.where(inside, index, nbins)].add(w)[:nbins]
    if density:
        counts = counts / (lnp.sum(counts) * lnp.diff(edges))
    return counts, edges


def _ravel(a: Array) -> Array:
    return _lnp().ravel(a)


def unravel_index(indices: Any, shape: Sequence[int]) -> tuple[Array, ...]:
    lnp, flat = _lnp(), _arr(indices)
    out = []
    for dim in reversed(tuple(shape)):
        out.append(lnp.remainder(flat, dim))
        flat = lnp.floor_divide(flat, dim)
    return tuple(reversed(out))


def ravel_multi_index(multi_index: Sequence[Any], dims: Sequence[int], mode: str = "raise",
                      order: str = "C") -> Array:
    """The flat index of each tuple of indices into an array of shape ``dims`` (row-major);
    mode 'clip' clamps, 'wrap' wraps, 'raise' checks concrete indices."""
    lnp = _lnp()
    if order != "C":
        raise LanesError("ravel_multi_index: only order='C'")
    flat, stride = None, 1
    for index, dim in reversed(list(zip(multi_index, dims))):
        index = _arr(index)
        if mode == "clip":
            index = lnp.clip(index, 0, dim - 1)
        elif mode == "wrap":
            index = lnp.remainder(index, dim)
        elif not index.is_traced and ((np.asarray(index) < 0) | (np.asarray(index) >= dim)).any():
            raise LanesError(f"ravel_multi_index: an index is out of bounds for a dim of {dim}")
        flat = index * stride if flat is None else flat + index * stride
        stride *= dim
    return flat


def unique(ar: Any, *, size: int | None = None, fill_value: Any = None) -> Array:
    """The sorted distinct values of ``ar``, flattened. Traced input needs ``size`` (jax's rule):
    the first ``size`` distinct values, padded with ``fill_value`` (default: the smallest)."""
    lnp, a = _lnp(), _ravel(_arr(ar))
    if size is None:
        if a.is_traced:
            raise LanesError("unique of a traced array needs size= (the result's length)")
        return lnp.asarray(np.unique(np.asarray(a)))
    s = lnp.sort(a)
    first = lnp.concatenate([lnp.ones((1,), np.bool_), lnp.not_equal(s[1:], s[:-1])])
    at = lnp.flatnonzero(first, size=size, fill_value=-1)
    fill = s[0] if fill_value is None else fill_value
    return lnp.where(lnp.less(at, 0), fill, s[lnp.maximum(at, 0)])


# ---- dtype queries -----------------------------------------------------------------------------


def _dtype_arg(x: Any) -> Any:
    """An argument of result_type as lanes promotes it: arrays and dtypes by their dtype (0-d
    zeros), Python scalars weakly (as themselves)."""
    if isinstance(x, (bool, int, float)):
        return x
    if isinstance(x, (Array, np.ndarray, np.generic)):
        return _lnp().zeros((), x.dtype)
    return _lnp().zeros((), np.dtype(x))


def result_type(*args: Any) -> np.dtype:
    """The dtype lanes' ops give these arguments (jax's rule: Python scalars are weak)."""
    if not args:
        raise LanesError("result_type needs at least one argument")
    lnp = _lnp()
    out = lnp.asarray(_dtype_arg(args[0]))
    for x in args[1:]:
        out = lnp.where(True, out, _dtype_arg(x))
    return out.dtype


def promote_types(type1: Any, type2: Any) -> np.dtype:
    return result_type(np.dtype(type1), np.dtype(type2))


def can_cast(from_: Any, to: Any, casting: str = "safe") -> bool:
    return bool(np.can_cast(from_.dtype if isinstance(from_, Array) else from_, to, casting))


def issubdtype(arg1: Any, arg2: Any) -> bool:
    return bool(np.issubdtype(arg1, arg2))


def isscalar(element: Any) -> bool:
    """Python and numpy scalars, and 0-d arrays (jax's rule)."""
    if isinstance(element, Array):
        return element.ndim == 0
    return bool(np.isscalar(element))


def iscomplexobj(x: Any) -> bool:
    return False  # lanes has no complex dtype


def ndim(a: Any) -> int:
    return _arr(a).ndim


def shape(a: Any) -> tuple[int, ...]:
    return tuple(_arr(a).shape)


def size(a: Any, axis: int | None = None) -> int:
    a = _arr(a)
    return a.size if axis is None else a.shape[axis]
