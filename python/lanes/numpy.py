"""numpy's names and signatures over lanes' ops (``import lanes.numpy as lnp``; jax.numpy).

Every function takes Arrays, numpy arrays, nested lists or Python scalars; Python scalars are
weakly typed (``lnp.multiply(x, 2.0)`` keeps x's float32). A numpy name lanes does not have
raises AttributeError saying so.
"""

from __future__ import annotations

import builtins
import types as _types
from typing import Any, Sequence

import numpy as _np

from . import _lanes, _nested
from ._composites import (allclose, arccos, arcsin, arctan, argwhere, average,  # noqa: F401
                          cosh, count_nonzero, diag, diagonal, diff, flatnonzero, hstack, hypot,
                          isclose, isinf, linalg, log2, log10, logaddexp, median, meshgrid,
                          nanmax, nanmean, nanmin, nanstd, nansum, nanvar, nonzero, percentile,
                          quantile, repeat, roll, sinh, split, take_along_axis, tan, tile, trace,
                          tril, triu, trunc, vstack)
from ._lanes import Array, LanesError
from ._numpy_more import (atleast_1d, atleast_2d, atleast_3d, bincount,  # noqa: F401
                          broadcast_arrays, can_cast, cbrt, copysign, cross, deg2rad, degrees,
                          diag_indices, dsplit, dstack, exp2, fabs, fliplr, flipud, float_power,
                          fmax, fmin, fmod, gcd, heaviside, histogram, hsplit, indices, inner,
                          interp, iscomplexobj, isneginf, isposinf, isscalar, issubdtype, kron,
                          lcm, ldexp, logaddexp2, logspace, nan_to_num, nanargmax, nanargmin,
                          nancumsum, nanprod, ndim, polyval, promote_types, ptp, rad2deg, radians,
                          ravel_multi_index, result_type, rint, rot90, select, shape, signbit,
                          sinc, size, trapezoid, tri, unique, unravel_index, vdot)

# dtypes are numpy's.
bool_ = _np.bool_
uint8 = _np.uint8
int32 = _np.int32
int64 = _np.int64
float32 = _np.float32
float64 = _np.float64
dtype = _np.dtype
pi = _np.pi
e = _np.e
inf = _np.inf
nan = _np.nan
newaxis = None
ndarray = Array

# ---- elementwise ------------------------------------------------------------------------------

abs = absolute = _lanes.abs
negative = _lanes.negative
exp = _lanes.exp
log = _lanes.log
log1p = _lanes.log1p
expm1 = _lanes.expm1
sqrt = _lanes.sqrt
tanh = _lanes.tanh
sin = _lanes.sin
cos = _lanes.cos
sign = _lanes.sign
floor = _lanes.floor
ceil = _lanes.ceil
square = _lanes.square
logical_not = _lanes.logical_not
add = _lanes.add
subtract = _lanes.subtract
multiply = _lanes.multiply
divide = true_divide = _lanes.divide
power = _lanes.power
maximum = _lanes.maximum
minimum = _lanes.minimum
arctan2 = _lanes.arctan2
equal = _lanes.equal
not_equal = _lanes.not_equal
less = _lanes.less
less_equal = _lanes.less_equal
greater = _lanes.greater
greater_equal = _lanes.greater_equal
logical_and = _lanes.logical_and
logical_or = _lanes.logical_or
logical_xor = _lanes.logical_xor
bitwise_and = _lanes.bitwise_and
bitwise_or = _lanes.bitwise_or
bitwise_xor = _lanes.bitwise_xor
bitwise_not = bitwise_invert = invert = _lanes.bitwise_not
left_shift = bitwise_left_shift = _lanes.left_shift
right_shift = bitwise_right_shift = _lanes.right_shift
matmul = _lanes.matmul
dot = _lanes.dot
outer = _lanes.outer


def asarray(a: Any, dtype: Any = None) -> Array:
    """``a`` as an Array (no copy for numpy arrays lanes can view; lists holding Arrays, traced
    ones too, are stacked); ``dtype`` converts."""
    if _nested.holds_array(a):
        return _nested.from_nested(a, dtype)
    return _lanes.asarray(a, dtype)


def array(a: Any, dtype: Any = None) -> Array:
    """``a`` as an Array (lanes arrays are immutable, so sharing memory is safe)."""
    return asarray(a, dtype)


def positive(x: Any) -> Array:
    return asarray(x)


def reciprocal(x: Any) -> Array:
    return _lanes.divide(1.0, x)


def floor_divide(a: Any, b: Any) -> Array:
    a = asarray(a)
    return a // b


def mod(a: Any, b: Any) -> Array:
    a = asarray(a)
    return a % b


remainder = mod


def isnan(x: Any) -> Array:
    x = asarray(x)
    return _lanes.not_equal(x, x)


def isfinite(x: Any) -> Array:
    x = asarray(x)
    return _lanes.less(_lanes.abs(x), _np.inf) if x.dtype.kind == "f" else full_like(x, True, bool_)


def where(condition: Any, x: Any = None, y: Any = None, *, size: int | None = None,
          fill_value: Any = None) -> Any:
    """``x`` where ``condition`` holds, else ``y`` (broadcast). With neither x nor y, the indices
    of the true elements: ``nonzero(condition, size=, fill_value=)``."""
    if x is None and y is None:
        return nonzero(condition, size=size, fill_value=fill_value)
    if x is None or y is None:
        raise LanesError("where: give both x and y, or neither (the indices of the true elements)")
    return _lanes.where(condition, x, y)


def round(a: Any, decimals: int = 0) -> Array:
    """Half to even, as numpy; with ``decimals``, of ``a * 10**decimals`` scaled back."""
    if decimals == 0:
        return _lanes.round(a)
    scale = 10.0 ** decimals
    return _lanes.round(asarray(a) * scale) / scale


around = round


def clip(a: Any, a_min: Any = None, a_max: Any = None, *, min: Any = None,
         max: Any = None) -> Array:
    """``a`` limited to [a_min, a_max]; ``min`` / ``max`` are numpy 2.1's and jax's names."""
    a_min = min if a_min is None else a_min
    a_max = max if a_max is None else a_max
    a = asarray(a)
    if a_min is not None:
        a = _lanes.maximum(a, a_min)
    if a_max is not None:
        a = _lanes.minimum(a, a_max)
    return a


# ---- reductions -------------------------------------------------------------------------------


def _prepared(a: Any, dtype: Any, where: Any, identity: float) -> Array:
    a = asarray(a)
    if dtype is not None:
        a = _lanes.cast(a, dtype)
    if where is not None:
        # The identity in a's own dtype (an int sum stays int): +-inf is the integers' extreme.
        kind = a.dtype.kind
        if kind in "iu" and _np.isinf(identity):
            info = _np.iinfo(a.dtype)
            identity = float(info.max if identity > 0 else info.min)
        elif kind == "b" and _np.isinf(identity):
            identity = 1.0 if identity > 0 else 0.0
        a = _lanes.where(where, a, _lanes.full((), identity, a.dtype))
    return a


def sum(a: Any, axis: Any = None, dtype: Any = None, keepdims: bool = False,
        where: Any = None) -> Array:
    return _lanes.sum(_prepared(a, dtype, where, 0.0), axis, keepdims)


def prod(a: Any, axis: Any = None, dtype: Any = None, keepdims: bool = False,
         where: Any = None) -> Array:
    return _lanes.prod(_prepared(a, dtype, where, 1.0), axis, keepdims)


def mean(a: Any, axis: Any = None, dtype: Any = None, keepdims: bool = False,
         where: Any = None) -> Array:
    if where is None:
        return _lanes.mean(_prepared(a, dtype, None, 0.0), axis, keepdims)
    a = _prepared(a, dtype, where, 0.0)
    count = _lanes.sum(_lanes.cast(_lanes.broadcast_to(where, a.shape), a.dtype), axis, keepdims)
    return _lanes.divide(_lanes.sum(a, axis, keepdims), count)


def max(a: Any, axis: Any = None, keepdims: bool = False, initial: Any = None,
        where: Any = None) -> Array:
    a = _prepared(a, None, where, -_np.inf)
    out = _lanes.max(a, axis, keepdims)
    return out if initial is None else _lanes.maximum(out, initial)


def min(a: Any, axis: Any = None, keepdims: bool = False, initial: Any = None,
        where: Any = None) -> Array:
    a = _prepared(a, None, where, _np.inf)
    out = _lanes.min(a, axis, keepdims)
    return out if initial is None else _lanes.minimum(out, initial)


amax, amin = max, min


def any(a: Any, axis: Any = None, keepdims: bool = False) -> Array:
    nonzero = _lanes.cast(_lanes.not_equal(a, 0), int32)
    return _lanes.greater(_lanes.sum(nonzero, axis, keepdims), 0)


def all(a: Any, axis: Any = None, keepdims: bool = False) -> Array:
    zero = _lanes.cast(_lanes.equal(a, 0), int32)
    return _lanes.equal(_lanes.sum(zero, axis, keepdims), 0)


def var(a: Any, axis: Any = None, dtype: Any = None, ddof: int = 0,
        keepdims: bool = False) -> Array:
    a = _prepared(a, dtype, None, 0.0)
    centered = a - _lanes.mean(a, axis, True)
    n = a.size if axis is None else _np.prod([a.shape[i] for i in _axes(axis, a.ndim)])
    return _lanes.sum(centered * centered, axis, keepdims) / (n - ddof)


def std(a: Any, axis: Any = None, dtype: Any = None, ddof: int = 0,
        keepdims: bool = False) -> Array:
    return _lanes.sqrt(var(a, axis, dtype, ddof, keepdims))


def _axes(axis: Any, ndim: int) -> list[int]:
    axes = [axis] if isinstance(axis, int) else list(axis)
    return [a % ndim for a in axes]


def _flat_or(a: Any, axis: Any) -> tuple[Array, int]:
    a = asarray(a)
    return (_lanes.reshape(a, (a.size,)), 0) if axis is None else (a, axis)


def _arg_reduce(op: Any, a: Any, axis: Any, keepdims: bool) -> Array:
    a = asarray(a)
    if axis is not None:
        return op(a, axis, keepdims)
    out = op(_lanes.reshape(a, (a.size,)), 0, False)
    return _lanes.reshape(out, (1,) * a.ndim) if keepdims else out


def argmax(a: Any, axis: Any = None, keepdims: bool = False) -> Array:
    return _arg_reduce(_lanes.argmax, a, axis, keepdims)


def argmin(a: Any, axis: Any = None, keepdims: bool = False) -> Array:
    return _arg_reduce(_lanes.argmin, a, axis, keepdims)


def cumsum(a: Any, axis: Any = None, dtype: Any = None) -> Array:
    x, ax = _flat_or(_prepared(a, dtype, None, 0.0), axis)
    return _lanes.cumsum(x, ax, False)


def cumprod(a: Any, axis: Any = None, dtype: Any = None) -> Array:
    x, ax = _flat_or(_prepared(a, dtype, None, 0.0), axis)
    return _lanes.cumprod(x, ax, False)


def sort(a: Any, axis: int | None = -1, *, kind: str | None = None, stable: bool = True,
         descending: bool = False) -> Array:
    """Sorted along ``axis`` (flattened for None). lanes' sort is stable, whatever ``kind``."""
    x, ax = _flat_or(a, axis)
    out = _lanes.sort(x, ax)
    return _lanes.flip(out, [ax]) if descending else out


def argsort(a: Any, axis: int | None = -1, *, kind: str | None = None, stable: bool = True,
            descending: bool = False) -> Array:
    """The indices that sort ``a`` along ``axis``; stable (equal elements keep their order,
    also with ``descending``)."""
    x, ax = _flat_or(a, axis)
    if not descending:
        return _lanes.argsort(x, ax)
    # Ascending over the reversed axis, reversed back: the largest first, ties in order.
    n = x.shape[ax]
    order = _lanes.flip(_lanes.argsort(_lanes.flip(x, [ax]), ax), [ax])
    return (n - 1) - order


def searchsorted(a: Any, v: Any, side: str = "left") -> Array:
    return _lanes.searchsorted(a, v, side)


# ---- shapes -----------------------------------------------------------------------------------


def reshape(a: Any, newshape: Any = None, order: str = "C", *, shape: Any = None) -> Array:
    """``a`` with a new shape (``shape=`` is numpy 2's and jax's name); ``order='F'`` reads and
    writes the elements column-major."""
    target = shape if shape is not None else newshape
    if target is None:
        raise LanesError("reshape: give the new shape")
    a = asarray(a)
    if order == "C":
        return a.reshape(target)
    if order != "F":
        raise LanesError(f"reshape: order must be 'C' or 'F', got {order!r}")
    dims = (target,) if isinstance(target, int) else tuple(target)
    if -1 in dims:  # resolve it against the size first: it is reversed below
        known = int(_np.prod([d for d in dims if d != -1]))
        dims = tuple(a.size // known if d == -1 else d for d in dims)
    # Column-major order is the row-major order of the reversed axes.
    flipped = _lanes.transpose(a, list(range(a.ndim))[::-1]).reshape(dims[::-1])
    return _lanes.transpose(flipped, list(range(len(dims)))[::-1])


def ravel(a: Any) -> Array:
    a = asarray(a)
    return _lanes.reshape(a, (a.size,))


def transpose(a: Any, axes: Sequence[int] | None = None) -> Array:
    return _lanes.transpose(a, None if axes is None else list(axes))


def moveaxis(a: Any, source: int | Sequence[int], destination: int | Sequence[int]) -> Array:
    """Axes ``source`` moved to ``destination`` (ints or sequences of ints), the others in
    order."""
    a = asarray(a)
    if isinstance(source, int) and isinstance(destination, int):
        return _lanes.moveaxis(a, source, destination)
    src = [s % a.ndim for s in ([source] if isinstance(source, int) else source)]
    dst = [d % a.ndim for d in ([destination] if isinstance(destination, int) else destination)]
    if len(src) != len(dst):
        raise LanesError(f"moveaxis: {len(src)} source axes but {len(dst)} destinations")
    rest = [d for d in range(a.ndim) if d not in src]
    order = [0] * a.ndim
    for s, d in sorted(zip(src, dst), key=lambda p: p[1]):
        order[d] = s
    free = iter(rest)
    perm = [order[i] if i in dst else next(free) for i in range(a.ndim)]
    return _lanes.transpose(a, perm)


swapaxes = _lanes.swapaxes


def expand_dims(a: Any, axis: int | Sequence[int]) -> Array:
    a = asarray(a)
    axes = [axis] if isinstance(axis, int) else list(axis)
    ndim = a.ndim + len(axes)
    for ax in sorted(x % ndim for x in axes):
        a = _lanes.expand_dims(a, ax)
    return a


def squeeze(a: Any, axis: Any = None) -> Array:
    return _lanes.squeeze(a, axis)


def broadcast_to(a: Any, shape: Any) -> Array:
    return _lanes.broadcast_to(a, shape)


def concatenate(arrays: Sequence[Any], axis: int | None = 0) -> Array:
    if axis is None:  # numpy: the arrays flattened first
        return _lanes.concatenate([ravel(a) for a in arrays], 0)
    return _lanes.concatenate(list(arrays), axis)


def stack(arrays: Sequence[Any], axis: int = 0) -> Array:
    return _lanes.stack(list(arrays), axis)


def flip(m: Any, axis: Any = None) -> Array:
    return _lanes.flip(m, axis)


def take(a: Any, indices: Any, axis: int | None = None) -> Array:
    x, ax = _flat_or(a, axis)
    return _lanes.take(x, asarray(indices), ax)


def pad(array: Any, pad_width: Any, mode: str = "constant", constant_values: Any = 0) -> Array:
    """numpy's pad: mode 'constant' (a number or an array value, traced too), 'edge', 'wrap',
    'reflect' or 'symmetric'."""
    array = asarray(array)
    widths = _np.broadcast_to(_np.asarray(pad_width, dtype=_np.int64), (array.ndim, 2))
    low, high = [int(w) for w in widths[:, 0]], [int(w) for w in widths[:, 1]]
    if mode == "constant":
        if not isinstance(constant_values, (Array, _np.ndarray)):
            return _lanes.pad(array, low, high, float(constant_values))
        # An array value: the zero-padded array plus the value where the padding is.
        inside = _lanes.pad(_lanes.full(array.shape, 1.0, bool_), low, high, 0.0)
        value = _lanes.cast(asarray(constant_values), array.dtype)
        return _lanes.where(inside, _lanes.pad(array, low, high, 0.0), value)
    if mode not in ("edge", "wrap", "reflect", "symmetric"):
        raise LanesError(f"pad: mode '{mode}' is not supported (constant, edge, wrap, reflect, "
                         "symmetric)")
    for axis in range(array.ndim):
        array = _pad_axis(array, axis, low[axis], high[axis], mode)
    return array


def _pad_axis(x: Array, axis: int, low: int, high: int, mode: str) -> Array:
    """x extended along one axis by its own elements (numpy's non-constant modes): output
    position i reads x at an index that each mode's pattern gives, periodic in i, so pads wider
    than the axis repeat it as numpy does."""
    n = x.shape[axis]
    if low == 0 and high == 0:
        return x
    if n == 0:
        raise LanesError(f"pad: mode '{mode}' cannot extend an empty axis")
    i = _np.arange(-low, n + high)
    if mode == "edge":
        index = _np.clip(i, 0, n - 1)
    elif mode == "wrap":
        index = i % n
    elif mode == "symmetric":  # the edge element repeated: period 2n
        j = i % (2 * n)
        index = _np.where(j < n, j, 2 * n - 1 - j)
    elif n == 1:  # reflect about a single element: itself
        index = _np.zeros_like(i)
    else:  # reflect (the edge element not repeated): period 2(n - 1)
        j = i % (2 * (n - 1))
        index = _np.where(j < n, j, 2 * (n - 1) - j)
    return _lanes.take(x, _lanes.asarray(index.astype(_np.int32), None), axis)


def einsum(subscripts: str, *operands: Any) -> Array:
    return _lanes.einsum(subscripts, list(operands))


def tensordot(a: Any, b: Any, axes: Any = 2) -> Array:
    a, b = asarray(a), asarray(b)
    if isinstance(axes, int):
        a_axes = list(range(a.ndim - axes, a.ndim))
        b_axes = list(range(axes))
    else:
        a_axes, b_axes = ([x] if isinstance(x, int) else list(x) for x in axes)
    return _lanes.tensordot(a, b, a_axes, b_axes)


# ---- creation ---------------------------------------------------------------------------------


def _shape(shape: Any) -> tuple[int, ...]:
    return (int(shape),) if isinstance(shape, (int, _np.integer)) else tuple(shape)


def zeros(shape: Any, dtype: Any = None) -> Array:
    return _lanes.full(_shape(shape), 0.0, dtype)


def ones(shape: Any, dtype: Any = None) -> Array:
    return _lanes.full(_shape(shape), 1.0, dtype)


def _filled(shape: tuple, fill_value: Any, dtype: Any) -> Array:
    """An array fill value (traced too) broadcast to ``shape``, as jax's full."""
    value = asarray(fill_value)
    if dtype is not None and value.dtype != _np.dtype(dtype):
        value = _lanes.cast(value, dtype)
    return _lanes.broadcast_to(value, shape)


def full(shape: Any, fill_value: Any, dtype: Any = None) -> Array:
    if isinstance(fill_value, (Array, _np.ndarray)):
        return _filled(_shape(shape), fill_value, dtype)
    if dtype is None and isinstance(fill_value, builtins.bool):
        dtype = bool_
    elif dtype is None and isinstance(fill_value, int):
        dtype = int32
    return _lanes.full(_shape(shape), float(fill_value), dtype)


def zeros_like(a: Any, dtype: Any = None) -> Array:
    a = asarray(a)
    return _lanes.full(a.shape, 0.0, a.dtype if dtype is None else dtype)


def empty(shape: Any, dtype: Any = None) -> Array:
    """Zeros (as jax: an immutable array has no uninitialized state to expose)."""
    return zeros(shape, dtype)


def empty_like(a: Any, dtype: Any = None) -> Array:
    """Zeros shaped like ``a`` (as jax)."""
    return zeros_like(a, dtype)


finfo, iinfo = _np.finfo, _np.iinfo  # limits of lanes' dtypes, which are numpy's


def ones_like(a: Any, dtype: Any = None) -> Array:
    a = asarray(a)
    return _lanes.full(a.shape, 1.0, a.dtype if dtype is None else dtype)


def full_like(a: Any, fill_value: Any, dtype: Any = None) -> Array:
    a = asarray(a)
    if isinstance(fill_value, (Array, _np.ndarray)):
        return _filled(a.shape, fill_value, a.dtype if dtype is None else dtype)
    return _lanes.full(a.shape, float(fill_value), a.dtype if dtype is None else dtype)


def arange(start: Any, stop: Any = None, step: Any = 1, dtype: Any = None) -> Array:
    if stop is None:
        start, stop = 0, start
    if dtype is None:
        ints = builtins.all(isinstance(v, (int, _np.integer)) for v in (start, stop, step))
        dtype = int32 if ints else float32
    return _lanes.arange(float(start), float(stop), float(step), dtype)


def linspace(start: float, stop: float, num: int = 50, endpoint: bool = True,
             retstep: bool = False, dtype: Any = None) -> Any:
    """``num`` evenly spaced values from start to stop; ``retstep`` also returns the step."""
    div = (num - 1) if endpoint else num
    step = (stop - start) / div if div > 0 else 0.0
    steps = _lanes.cast(_lanes.iota((num,), 0, int32), float64)
    out = _lanes.cast(steps * step + start, float32 if dtype is None else dtype)
    return (out, step) if retstep else out


def eye(N: int, M: int | None = None, k: int = 0, dtype: Any = None) -> Array:
    """Ones on diagonal ``k`` of an (N, M) matrix."""
    if M is None and k == 0:
        return _lanes.eye(N, dtype)
    cols = N if M is None else M
    i = _lanes.iota((N, cols), 0, int32)
    j = _lanes.iota((N, cols), 1, int32)
    return _lanes.cast(_lanes.equal(j - i, k), float32 if dtype is None else dtype)


def identity(n: int, dtype: Any = None) -> Array:
    return _lanes.eye(n, dtype)


def _document_from_numpy() -> None:
    """Every public function says what it is: numpy's function of that name, over lanes arrays."""
    for name, value in list(globals().items()):
        public = not name.startswith("_")
        if isinstance(value, _types.FunctionType) and public and not value.__doc__:
            value.__doc__ = (f"numpy.{name} over lanes arrays: numpy's signature and results "
                             "(Python scalars weakly typed, as jax.numpy).")


_document_from_numpy()


def _add_array_methods() -> None:
    """jax.Array's methods that are lanes.numpy functions: ``x.any()`` is ``lnp.any(x)``."""
    def method(fn: Any) -> Any:
        def call(self: Array, *args: Any, **kwargs: Any) -> Any:
            return fn(self, *args, **kwargs)
        call.__name__, call.__doc__ = fn.__name__, fn.__doc__
        return call

    for name in ("any", "all", "var", "std", "argmax", "argmin", "argsort", "cumsum", "cumprod",
                 "clip", "sort", "take"):
        setattr(Array, name, method(globals()[name]))
    scalar_item = Array.item

    def item(self: Array, *args: Any) -> Any:
        """The element as a Python scalar: of a one-element array, or at a flat index or an
        index per axis (numpy's ``item``)."""
        if not args:
            return scalar_item(self)
        at = self.reshape(-1)[args[0]] if len(args) == 1 else self[args]
        return scalar_item(at)

    def format_(self: Array, spec: str) -> str:
        return format(self.item(), spec) if self.ndim == 0 else format(str(self), spec)

    def round_(self: Array, ndigits: int | None = None) -> Any:
        return builtins.round(self.item(), ndigits)

    def reduce_(self: Array) -> tuple:
        # pickle and copy.deepcopy: the values through numpy (a traced array has none to save).
        return asarray, (_np.array(self),)

    Array.item = item
    Array.__reduce__ = reduce_
    Array.__format__ = format_
    Array.__round__ = round_
    Array.copy = lambda self: self  # immutable: the array itself is its copy (jax returns one)
    Array.nbytes = property(lambda self: self.size * self.dtype.itemsize,
                            doc="Bytes the elements take (size * itemsize).")
    Array.itemsize = property(lambda self: self.dtype.itemsize, doc="Bytes per element.")


_add_array_methods()


def __getattr__(name: str) -> Any:
    if hasattr(_np, name):
        raise AttributeError(f"lanes.numpy has no '{name}': numpy's {name} is not implemented in "
                             "lanes yet")
    raise AttributeError(f"module 'lanes.numpy' has no attribute '{name}'")
