"""numpy indexing for lanes.Array (``x[...]``) and jax's ``x.at[...]`` updates.

Basic indices (ints, slices with any step, None, Ellipsis) become views and flips; one integer
array per subscript becomes a take (its dims placed as numpy places them), and each integer
scalar Array (traced or not) a dynamic index, clamped as jax reads. Two or more index arrays
(``x[rows, labels]``) are broadcast together and folded into one index of the axes they pick.
``x.at[key]`` finds the flat positions ``key`` selects by indexing an iota the same way, then
scatters; an update at a traced index out of bounds is dropped, as jax's scatter drops it.
"""

from __future__ import annotations

import numbers
from typing import Any, Iterator

import numpy as np

from . import _lanes
from ._lanes import Array, LanesError
from ._tracing import ConcretizationError


def _is_int(k: Any) -> bool:
    return isinstance(k, numbers.Integral) and not isinstance(k, bool)


def _as_index_array(k: Any) -> Array | None:
    """k as an integer Array when it is an array-like index (not an int, slice, None, ...)."""
    if isinstance(k, Array):
        a = k
    elif isinstance(k, (list, np.ndarray)):
        a = _lanes.asarray(np.asarray(k), None)
    else:
        return None
    if a.dtype == np.bool_:
        raise LanesError("indexing with a boolean mask is not supported (its result's shape "
                         "depends on the values); use lanes.numpy.where")
    if a.dtype.kind not in "iu":
        raise LanesError(f"indices must be integers, got an array of {a.dtype}")
    return a


def _expand(key: Any, ndim: int) -> list[Any]:
    key = list(key) if isinstance(key, tuple) else [key]
    if sum(k is Ellipsis for k in key) > 1:
        raise LanesError("an index can only have a single ellipsis ('...')")
    used = sum(1 for k in key if k is not None and k is not Ellipsis)
    if used > ndim:
        raise LanesError(f"too many indices: {used} for an array of {ndim} dimensions")
    at = next((i for i, k in enumerate(key) if k is Ellipsis), None)
    if at is not None:
        key[at:at + 1] = [slice(None)] * (ndim - used)
    return key


def _slice(x: Array, axis: int, s: slice) -> Array:
    bounds = (s.start, s.stop, s.step)
    if any(isinstance(b, Array) and b.is_traced for b in bounds):
        # A slice's length must be known while tracing; its start may vary (jax's rule too).
        raise ConcretizationError(
            f"a slice with a traced bound ({s.start!r}:{s.stop!r}:{s.step!r}) has a length "
            "that is not known while tracing; for a window of fixed size at a traced start use "
            "lanes.lax.dynamic_slice(x, starts, sizes) (and dynamic_update_slice to write one)")
    dim = x.shape[axis]
    start, stop, step = s.indices(dim)
    r = range(start, stop, step)
    if len(r) == 0:
        return _lanes.slice_axis(x, axis, 0, 0, 1)
    if step > 0:
        return _lanes.slice_axis(x, axis, r[0], r[-1] + 1, step)
    # A negative step: the same elements in ascending order, then flipped.
    return _lanes.flip(_lanes.slice_axis(x, axis, r[-1], r[0] + 1, -step), axis)


def getitem(x: Array, key: Any) -> Array:
    """numpy's ``x[key]``."""
    return _getitem(x, key)[0]


def _getitem(x: Array, key: Any) -> tuple[Array, Array | None]:
    """``x[key]``, and where a traced index array is within its axis (None when the key has no
    traced index array of one or more dims, or only one), broadcastable to the result."""
    parts = _expand(key, x.ndim)
    arrays = [_as_index_array(k) for k in parts]
    if sum(1 for a in arrays if a is not None and a.ndim > 0) > 1:
        return _index_arrays(x, parts, arrays)
    axis = 0
    taken = None  # (axis, ndim) of the dims an integer-array index put into x
    for k, index in zip(parts, arrays):
        if k is None:
            x = _lanes.expand_dims(x, axis)
            axis += 1
        elif isinstance(k, slice):
            x = _slice(x, axis, k)
            axis += 1
        elif _is_int(k):
            dim = x.shape[axis]
            i = int(k)
            if not -dim <= i < dim:
                raise IndexError(f"index {i} is out of bounds for axis {axis} with size {dim}")
            i %= dim
            x = _lanes.squeeze(_lanes.slice_axis(x, axis, i, i + 1, 1), axis)
        elif index is None:
            raise LanesError(f"unsupported index {k!r} of type {type(k).__name__}")
        elif index.ndim == 0:
            # A (possibly traced) integer scalar: a dynamic slice, clamped as jax does.
            # Moving the axis first and dropping it keeps the other axes in order.
            x = _lanes.dynamic_index(_lanes.moveaxis(x, axis, 0), index)
        else:
            x = _lanes.take(x, index, axis)
            taken = (axis, index.ndim)
            axis += index.ndim
    if taken is not None and not _advanced_adjacent(parts, arrays):
        # numpy: advanced indices (integers among them) apart from each other put the index
        # array's dims first (x[0, :, [0, 1]] has shape (2, x.shape[1])).
        first, ndim = taken
        moved = list(range(first, first + ndim))
        x = _lanes.transpose(x, moved + [d for d in range(x.ndim) if d not in moved])
    return x, None


def _index_arrays(x: Array, parts: list[Any], arrays: list[Array | None]
                  ) -> tuple[Array, Array | None]:
    """numpy's rule for two or more index arrays: every advanced entry (the arrays, integers,
    integer scalar Arrays) is broadcast to one shape and picks one element of the axes it
    indexes; the broadcast dims take those axes' place when the entries are adjacent, else come
    first. One take of the flat index into those axes, merged, does it."""
    basic, picks, axis = [], [], 0  # picks: (axis after the basic entries, index)
    for k, a in zip(parts, arrays):
        if k is None or isinstance(k, slice):
            basic.append(k)
        elif a is None and not _is_int(k):
            raise LanesError(f"unsupported index {k!r} of type {type(k).__name__}")
        else:
            basic.append(slice(None))
            picks.append((axis, a if a is not None else _lanes.asarray(np.asarray(int(k)), None)))
        axis += 1
    x = getitem(x, tuple(basic))
    shape = np.broadcast_shapes(*(tuple(i.shape) for _, i in picks))
    flat, inside, size = None, None, 1
    for ax, index in reversed(picks):  # row-major over the picked axes
        dim = x.shape[ax]
        index = _lanes.cast(index, np.int64)
        if not index.is_traced:
            values = np.asarray(index)
            bad = values[(values < -dim) | (values >= dim)]
            if bad.size:
                raise IndexError(f"index {bad.flat[0]} is out of bounds for axis {ax} with "
                                 f"size {dim}")
        index = _lanes.where(index < 0, index + dim, index)
        if index.is_traced:  # read clamped, as jax reads; an update there is dropped (.at)
            ok = (index >= 0) & (index < dim)
            inside = ok if inside is None else inside & ok
            index = _lanes.clip(index, 0, dim - 1)
        flat = index * size if flat is None else flat + index * size
        size *= dim
    axes = [ax for ax, _ in picks]
    rest = [d for d in range(x.ndim) if d not in axes]
    x = _lanes.transpose(x, axes + rest)
    x = _lanes.reshape(x, (size,) + tuple(x.shape[len(axes):]))
    x = _lanes.take(x, _lanes.broadcast_to(flat, shape), 0)
    front = len(shape) if _advanced_adjacent(parts, arrays) else 0
    if front:  # the broadcast dims where the first picked axis was
        at = axes[0]
        order = list(range(len(shape), len(shape) + at)) + list(range(len(shape)))
        x = _lanes.transpose(x, order + list(range(len(shape) + at, x.ndim)))
    if inside is not None:
        inside = _lanes.reshape(_lanes.broadcast_to(inside, shape),
                                (1,) * (axes[0] if front else 0) + tuple(shape)
                                + (1,) * (len(rest) - (axes[0] if front else 0)))
    return x, inside


def _advanced_adjacent(parts: list[Any], arrays: list[Array | None]) -> bool:
    """Whether the advanced entries of an expanded key (integers, integer arrays) are adjacent."""
    at = [i for i, (k, a) in enumerate(zip(parts, arrays)) if _is_int(k) or a is not None]
    return at[-1] - at[0] + 1 == len(at)


def iterate(x: Array) -> Iterator[Array]:
    """``iter(x)``: the slices along the first axis."""
    if x.ndim == 0:
        raise TypeError("iteration over a 0-d array")
    return (getitem(x, i) for i in range(x.shape[0]))


class _IndexUpdate:
    __slots__ = ("array", "key")

    def __init__(self, array: Array, key: Any) -> None:
        self.array, self.key = array, key

    def _scalars_in_bounds(self) -> Array | None:
        """Whether every integer-scalar Array of the key (a traced index) is within its axis, or
        None when the key has none. Reading clamps such an index, as jax does; an update there
        must be dropped instead (jax's scatter), not land on the clamped element."""
        ok = None
        axis = 0  # the axis of self.array that the key's next entry indexes
        for k in _expand(self.key, self.array.ndim):
            if k is None:
                continue
            if isinstance(k, Array) and k.ndim == 0:
                dim = self.array.shape[axis]
                inside = (k >= -dim) & (k < dim)
                ok = inside if ok is None else ok & inside
            axis += 1
        return ok

    def _scatter(self, value: Any, mode: str) -> Array:
        x = self.array
        positions, inside = _getitem(
            _lanes.reshape(_lanes.iota((x.size,), 0, np.int64), x.shape), self.key)
        if isinstance(value, (bool, int, float)):
            updates = _lanes.full(positions.shape, float(value), x.dtype)
        else:
            value = _lanes.cast(_lanes.asarray(value, None), x.dtype)
            updates = _lanes.broadcast_to(value, positions.shape)
        flat = _lanes.reshape(x, (x.size,))
        checks = [ok for ok in (self._scalars_in_bounds(), inside) if ok is not None]
        for ok in checks:  # out of bounds: to one element past the end, dropped after
            positions = _lanes.where(ok, positions, x.size)
        if checks:
            flat = _lanes.concatenate([flat, _lanes.full((1,), 0.0, x.dtype)], 0)
        flat = _lanes.scatter(flat, _lanes.reshape(positions, (positions.size,)),
                              _lanes.reshape(updates, (positions.size,)), mode, 0)
        if checks:
            flat = _lanes.slice_axis(flat, 0, 0, x.size, 1)
        return _lanes.reshape(flat, x.shape)

    def get(self) -> Array:
        """``x[key]``."""
        return getitem(self.array, self.key)

    def set(self, value: Any) -> Array:
        """x with ``x[key]`` replaced by value (broadcast); the last write wins on repeats."""
        return self._scatter(value, "set")

    def add(self, value: Any) -> Array:
        """x with value added at ``x[key]`` (repeated indices accumulate)."""
        return self._scatter(value, "add")

    def multiply(self, value: Any) -> Array:
        """x with ``x[key]`` multiplied by value."""
        return self._scatter(value, "multiply")

    def min(self, value: Any) -> Array:
        """x with ``x[key]`` replaced by its minimum with value."""
        return self._scatter(value, "min")

    def max(self, value: Any) -> Array:
        """x with ``x[key]`` replaced by its maximum with value."""
        return self._scatter(value, "max")


class _At:
    __slots__ = ("array",)

    def __init__(self, array: Array) -> None:
        self.array = array

    def __getitem__(self, key: Any) -> _IndexUpdate:
        return _IndexUpdate(self.array, key)


def at(x: Array) -> _At:
    """``x.at[key].set(v)`` and friends: functional updates (jax's ``.at``)."""
    return _At(x)
