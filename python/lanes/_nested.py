"""Arrays from nested lists and tuples that hold lanes Arrays: ``lanes.asarray([x, 1.0])`` with
``x`` traced (under vmap, grad or jit) stacks the parts, as ``jnp.array`` does, instead of asking
numpy for the tracer's value."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _lanes
from ._lanes import Array, LanesError

# lanes' dtypes in promotion order: two arrays promote to the later of their dtypes.
_ORDER = [np.dtype(t) for t in (np.bool_, np.uint8, np.int32, np.int64, np.float32, np.float64)]


def holds_array(value: Any) -> bool:
    """Whether a (nested) list or tuple holds a lanes Array somewhere."""
    return isinstance(value, (list, tuple)) and any(
        isinstance(v, Array) or holds_array(v) for v in value)


def _weak_floor(value: Any) -> np.dtype:
    """The least dtype a Python scalar asks of the arrays beside it (jax's weak types)."""
    if isinstance(value, bool):
        return _ORDER[0]
    if isinstance(value, int):
        return np.dtype(np.int32)
    if isinstance(value, float):
        return np.dtype(np.float32)
    raise LanesError(f"asarray: cannot make an array of {type(value).__name__} values")


def _build(value: Any) -> Any:
    """A list or tuple as one stacked Array; Arrays as they are; other values (Python scalars)
    as they are, for the enclosing level to type."""
    if isinstance(value, Array):
        return value
    if isinstance(value, np.ndarray):
        return _lanes.asarray(value, None)
    if not isinstance(value, (list, tuple)):
        return value
    parts = [_build(v) for v in value]
    if not parts:
        raise LanesError("asarray: an empty list beside arrays has no shape to stack with")
    arrays = [p for p in parts if isinstance(p, Array)]
    dtype = max((np.dtype(a.dtype) for a in arrays), key=_ORDER.index, default=None)
    for p in parts:
        if isinstance(p, Array):
            continue
        floor = _weak_floor(p)  # weak: it raises the kind, never the width
        if dtype is None or (floor.kind == "f" and dtype.kind != "f") or \
                (floor.kind == "i" and dtype.kind == "b"):
            dtype = floor
    shape = arrays[0].shape if arrays else ()
    out = []
    for p in parts:
        a = p if isinstance(p, Array) else _lanes.full((), float(p), dtype)
        if a.shape != shape:
            raise LanesError(f"asarray: the parts of a list have different shapes ({shape} and "
                             f"{a.shape}); numpy would make an object array")
        out.append(_lanes.cast(a, dtype) if np.dtype(a.dtype) != dtype else a)
    return _lanes.stack(out, 0)


def from_nested(value: Any, dtype: Any = None) -> Array:
    """``value`` (a nested list or tuple holding Arrays) as one Array; ``dtype`` converts."""
    out = _build(value)
    return out if dtype is None else _lanes.asarray(out, dtype)
