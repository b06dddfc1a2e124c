"""numpy indexing for lanes.Array (``x[...]``) and jax's ``x.at[...]`` updates.

Basic indices (ints, slices with any step, None, Ellipsis) become views and flips; one integer
array (or a traced integer scalar) per subscript becomes a take / dynamic index. ``x.at[key]``
finds the flat positions ``key`` selects by indexing an iota the same way, then scatters.
"""

from __future__ import annotations

import numbers
from typing import Any, Iterator

import numpy as np

from . import _lanes
from ._lanes import Array, LanesError


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
    parts = _expand(key, x.ndim)
    advanced = 0
    axis = 0
    for k in parts:
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
        else:
            index = _as_index_array(k)
            if index is None:
                raise LanesError(f"unsupported index {k!r} of type {type(k).__name__}")
            advanced += 1
            if advanced > 1:
                raise LanesError("lanes supports one integer-array index per subscript")
            if index.ndim == 0:
                # A (possibly traced) integer scalar: a dynamic slice, clamped as jax does.
                # Moving the axis first and dropping it keeps the other axes in order.
                x = _lanes.dynamic_index(_lanes.moveaxis(x, axis, 0), index)
            else:
                x = _lanes.take(x, index, axis)
                axis += index.ndim
    return x


def iterate(x: Array) -> Iterator[Array]:
    """``iter(x)``: the slices along the first axis."""
    if x.ndim == 0:
        raise TypeError("iteration over a 0-d array")
    return (getitem(x, i) for i in range(x.shape[0]))


class _IndexUpdate:
    __slots__ = ("array", "key")

    def __init__(self, array: Array, key: Any) -> None:
        self.array, self.key = array, key

    def _scatter(self, value: Any, mode: str) -> Array:
        x = self.array
        positions = getitem(_lanes.reshape(_lanes.iota((x.size,), 0, np.int64), x.shape),
                            self.key)
        if isinstance(value, (bool, int, float)):
            updates = _lanes.full(positions.shape, float(value), x.dtype)
        else:
            value = _lanes.cast(_lanes.asarray(value, None), x.dtype)
            updates = _lanes.broadcast_to(value, positions.shape)
        flat = _lanes.reshape(x, (x.size,))
        return _lanes.reshape(
            _lanes.scatter(flat, _lanes.reshape(positions, (positions.size,)),
                           _lanes.reshape(updates, (positions.size,)), mode, 0),
            x.shape,
        )

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
