"""jax.lax's control flow and collectives over lanes (``from lanes import lax``).

Branches and loop bodies are traced once into lanes' cond / while / scan, so they work on traced
values under every transform: vmap runs a cond whose predicate differs between examples by the
strategy vmap's ``cond`` option names, and a while_loop by its ``loop`` option.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from . import _lanes
from ._api import _arrays, _Outputs
from ._lanes import Array, LanesError
from .tree_util import tree_flatten, tree_map, tree_unflatten

__all__ = [
    "all_gather",
    "axis_index",
    "cond",
    "conv",
    "dynamic_slice",
    "dynamic_update_slice",
    "fori_loop",
    "map",
    "pmax",
    "pmean",
    "pmin",
    "psum",
    "scan",
    "stop_gradient",
    "switch",
    "while_loop",
]


def _branch(fn: Callable, treedef: Any, outputs: _Outputs, what: str) -> Callable:
    def flat(leaves: list[Array]) -> list[Array]:
        out = fn(*tree_unflatten(treedef, leaves))
        before = outputs.tree
        result = outputs.flatten(out, what)
        if before is not None and before != outputs.tree:
            raise LanesError(f"{what}: the branches return different structures: {before} and "
                             f"{outputs.tree}")
        return result

    return flat


def cond(pred: Any, true_fun: Callable, false_fun: Callable, *operands: Any) -> Any:
    """``true_fun(*operands)`` if pred else ``false_fun(*operands)`` (jax.lax.cond); pred is a
    0-d bool or number, traced or not. Both branches must return the same structure, shapes and
    dtypes."""
    leaves, treedef = tree_flatten(operands)
    outputs = _Outputs()
    pred = _lanes.asarray(pred, None)
    if pred.dtype != np.bool_:
        pred = _lanes.not_equal(pred, 0)  # a number: true when nonzero, as jax
    out = _lanes.cond(pred, _branch(true_fun, treedef, outputs, "cond"),
                      _branch(false_fun, treedef, outputs, "cond"), _arrays(leaves, "cond"))
    return outputs.rebuild(out)


def switch(index: Any, branches: Sequence[Callable], *operands: Any) -> Any:
    """``branches[index](*operands)`` with index clamped into range (jax.lax.switch)."""
    if not branches:
        raise LanesError("switch: no branches")
    leaves, treedef = tree_flatten(operands)
    outputs = _Outputs()
    flat = [_branch(b, treedef, outputs, "switch") for b in branches]
    index = _lanes.cast(index, "int32")
    out = _lanes.switch(index, flat, _arrays(leaves, "switch"))
    return outputs.rebuild(out)


def while_loop(cond_fun: Callable, body_fun: Callable, init_val: Any) -> Any:
    """Runs ``val = body_fun(val)`` while ``cond_fun(val)`` (jax.lax.while_loop). The body must
    keep the carry's structure, shapes and dtypes."""
    leaves, treedef = tree_flatten(init_val)

    def flat_cond(carry: list[Array]) -> Array:
        return _lanes.asarray(cond_fun(tree_unflatten(treedef, carry)), None)

    def flat_body(carry: list[Array]) -> list[Array]:
        out = body_fun(tree_unflatten(treedef, carry))
        out_leaves, out_def = tree_flatten(out)
        if out_def != treedef:
            raise LanesError(f"while_loop: the body returned {out_def}, the carry is {treedef}")
        return _arrays(out_leaves, "while_loop body")

    return tree_unflatten(treedef, _lanes.while_loop(flat_cond, flat_body,
                                                     _arrays(leaves, "while_loop")))


def fori_loop(lower: Any, upper: Any, body_fun: Callable, init_val: Any) -> Any:
    """``val = body_fun(i, val)`` for i in [lower, upper) (jax.lax.fori_loop). With Python int
    bounds it is a scan over the indices (reverse mode differentiates it), else a while_loop."""
    if isinstance(lower, (int, np.integer)) and isinstance(upper, (int, np.integer)):
        if upper <= lower:
            return init_val
        indices = _lanes.arange(float(lower), float(upper), 1.0, "int32")
        return scan(lambda val, i: (body_fun(i, val), ()), init_val, indices)[0]

    def cond_fun(state: tuple) -> Array:
        return state[0] < upper

    def step(state: tuple) -> tuple:
        i, val = state
        return i + 1, body_fun(i, val)

    start = _lanes.asarray(lower, "int32")
    return while_loop(cond_fun, step, (start, init_val))[1]


def scan(f: Callable, init: Any, xs: Any = None, length: int | None = None,
         reverse: bool = False, unroll: int | bool = 1) -> tuple[Any, Any]:
    """``carry, y = f(carry, x)`` over the leading axis of xs, stacking the ys (jax.lax.scan).
    ``unroll`` is accepted for jax's signature; compile's scan passes decide what runs inside
    the loop, and the results do not depend on it."""
    c_leaves, c_def = tree_flatten(init)
    x_leaves, x_def = tree_flatten(xs)
    ys = _Outputs()

    def step(carry: list[Array], x: list[Array]) -> tuple[list[Array], list[Array]]:
        out = f(tree_unflatten(c_def, carry), tree_unflatten(x_def, x))
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            raise LanesError("scan: f must return (carry, y)")
        new_leaves, new_def = tree_flatten(out[0])
        if new_def != c_def:
            raise LanesError(f"scan: f returned the carry {new_def}, the init is {c_def}")
        return _arrays(new_leaves, "scan carry"), ys.flatten(out[1], "scan y")

    carry, y_leaves = _lanes.scan(step, _arrays(c_leaves, "scan init"),
                                  _arrays(x_leaves, "scan xs"), length, reverse)
    return tree_unflatten(c_def, carry), ys.rebuild(y_leaves)


def map(f: Callable, xs: Any, batch_size: int | None = None) -> Any:
    """``f`` over the leading axis of xs, one at a time (jax.lax.map); with ``batch_size``, a
    vmap over chunks of that many."""
    if batch_size is not None:
        from ._api import vmap

        return vmap(f, chunk_size=batch_size)(xs)
    return scan(lambda c, x: (c, f(x)), (), xs)[1]


def dynamic_slice(operand: Any, start_indices: Sequence[Any], slice_sizes: Sequence[int]) -> Array:
    """``operand[s0:s0+n0, ...]`` with traced starts clamped so the slice fits."""
    starts = [_lanes.asarray(s, "int32") for s in start_indices]
    return _lanes.dynamic_slice(operand, starts, list(slice_sizes))


def dynamic_update_slice(operand: Any, update: Any, start_indices: Sequence[Any]) -> Array:
    """operand with ``update`` written at the (clamped) start indices."""
    starts = [_lanes.asarray(s, "int32") for s in start_indices]
    return _lanes.dynamic_update_slice(operand, update, starts)


stop_gradient = _lanes.stop_gradient


def _over_axes(op: Callable, x: Any, axis_name: Any) -> Any:
    """op over each leaf of the pytree x, and over each of several axis names in turn (jax
    reduces over all of them)."""
    names = tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)

    def one(leaf: Any) -> Array:
        for name in names:
            leaf = op(leaf, name)
        return leaf

    return tree_map(one, x)


def psum(x: Any, axis_name: Any) -> Any:
    """The sum of x (an array or a pytree of them) over the examples of the vmap named
    ``axis_name`` (or of several vmaps: a tuple of names)."""
    return _over_axes(_lanes.psum, x, axis_name)


def pmean(x: Any, axis_name: Any) -> Any:
    """The mean of x (an array or a pytree) over the examples of the vmap(s) ``axis_name``."""
    return _over_axes(_lanes.pmean, x, axis_name)


def pmax(x: Any, axis_name: Any) -> Any:
    """The maximum of x (an array or a pytree) over the examples of the vmap(s) ``axis_name``."""
    return _over_axes(_lanes.pmax, x, axis_name)


def pmin(x: Any, axis_name: Any) -> Any:
    """The minimum of x (an array or a pytree) over the examples of the vmap(s) ``axis_name``."""
    return _over_axes(_lanes.pmin, x, axis_name)


def all_gather(x: Any, axis_name: str, *, axis: int = 0) -> Any:
    """Every example's x (an array or a pytree), stacked along ``axis``."""
    return tree_map(lambda leaf: _lanes.all_gather(leaf, axis_name, axis), x)


def conv(lhs: Any, rhs: Any, window_strides: Sequence[int], padding: Any) -> Array:
    """jax.lax.conv: NCHW ``lhs``, OIHW ``rhs``; ``padding`` 'SAME', 'VALID' or (low, high)
    pairs (lanes.nn.conv2d)."""
    from .nn import conv2d  # nn imports nothing of lax; imported here to keep lax light

    return conv2d(lhs, rhs, stride=window_strides, padding=padding)


def axis_index(axis_name: str) -> Array:
    """This example's index along the vmap named ``axis_name``."""
    return _lanes.axis_index(axis_name)
