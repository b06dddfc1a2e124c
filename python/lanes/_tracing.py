"""Which transforms are tracing on this thread, for ConcretizationError's message."""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Iterator

from ._lanes import LanesError


class ConcretizationError(LanesError, TypeError):
    """Python needed the value of an array that a transform is tracing (``if x > 0:``,
    ``float(x)``, ``bool(x)`` inside vmap, grad or jit). Use ``lanes.lax.cond`` /
    ``lanes.lax.while_loop`` for control flow on traced values."""


_active = threading.local()


def _stack() -> list[str]:
    stack = getattr(_active, "names", None)
    if stack is None:
        stack = _active.names = []
    return stack


@contextlib.contextmanager
def tracing(name: str) -> Iterator[None]:
    """Marks the body as traced by the transform ``name`` (vmap, grad, jit, ...)."""
    stack = _stack()
    stack.append(name)
    try:
        yield
    finally:
        stack.pop()


def raise_concretization(what: str, value: Any) -> None:
    """Raises ConcretizationError for ``what`` (``bool()``, ``float()``, ...) on a traced value."""
    stack = _stack()
    where = f"inside lanes.{stack[-1]}" if stack else "inside a lanes transform"
    raise ConcretizationError(
        f"{what} needs the value of {value!r}, which is traced {where}: its value exists only "
        "when the transformed function runs. Python control flow on a traced value cannot be "
        "transformed; use lanes.lax.cond / lanes.lax.switch for branches and "
        "lanes.lax.while_loop / lanes.lax.fori_loop for loops (or jit's static_argnums for a "
        "value that is a Python constant)."
    )
