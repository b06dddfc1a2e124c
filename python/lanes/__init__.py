"""lanes: static automatic batching with jax's API over a C++ core.

Write a function for one example; ``lanes.vmap`` runs it over a batch as a few large tensor
operations, and it composes with ``grad``, ``jacrev``, ``hessian``, ``jit`` and control flow::

    import lanes, lanes.numpy as lnp
    per_example_grads = lanes.vmap(lanes.grad(loss), in_axes=(None, 0, 0))
"""

from __future__ import annotations

from . import _lanes, _nested
from ._api import (
    batch_jacobian,
    explain,
    grad,
    hessian,
    hvp,
    jacfwd,
    jacrev,
    jit,
    jvp,
    make_graph,
    value_and_grad,
    vjp,
    vmap,
)
from ._custom import custom_jvp, custom_vjp, custom_vmap
from ._lanes import Array, FlopCounter, LanesError, num_threads, set_num_threads
from ._tracing import ConcretizationError

Variable = _lanes.Variable
from . import lax, nn, random, tree_util  # noqa: E402  (after Array is complete)
from . import numpy as numpy  # noqa: E402

__all__ = [
    "Array",
    "ConcretizationError",
    "FlopCounter",
    "LanesError",
    "Variable",
    "asarray",
    "batch_jacobian",
    "custom_jvp",
    "custom_vjp",
    "custom_vmap",
    "explain",
    "from_dlpack",
    "grad",
    "hessian",
    "hvp",
    "jacfwd",
    "jacrev",
    "jit",
    "jvp",
    "lax",
    "make_graph",
    "nn",
    "num_threads",
    "numpy",
    "random",
    "set_num_threads",
    "tree_util",
    "value_and_grad",
    "vjp",
    "vmap",
]


def asarray(a, dtype=None) -> Array:
    """``a`` as a lanes Array: an Array as is, a numpy array (or any buffer / DLPack producer)
    without a copy where lanes can read its layout, Python scalars and nested lists with jax's
    default dtypes (float32, int32); lists that hold Arrays (traced ones too) are stacked.
    ``dtype`` converts."""
    if _nested.holds_array(a):
        return _nested.from_nested(a, dtype)
    return _lanes.asarray(a, dtype)


def from_dlpack(x) -> Array:
    """An Array viewing a DLPack producer's memory (a torch tensor, a numpy array), no copy."""
    return _lanes.asarray(x, None)
