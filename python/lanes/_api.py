"""The transforms over Python functions and pytrees (jax's names and signatures).

Each flattens its arguments into leaves, hands lanes' C++ transform a function of a flat list
of Arrays, and rebuilds the output trees. The C++ side traces that function with tracer Arrays,
once per call (vmap, grad) or once per signature (jit), as in C++.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Sequence

from . import _lanes
from ._lanes import Array, LanesError
from ._tracing import tracing
from .tree_util import PyTreeDef, broadcast_prefix, tree_flatten, tree_unflatten

__all__ = [
    "batch_jacobian",
    "explain",
    "grad",
    "hessian",
    "hvp",
    "jacfwd",
    "jacrev",
    "jit",
    "jvp",
    "make_graph",
    "value_and_grad",
    "vjp",
    "vmap",
]


def _arrays(leaves: Sequence[Any], what: str) -> list[Array]:
    out = []
    for leaf in leaves:
        if isinstance(leaf, Array):
            out.append(leaf)
            continue
        try:
            out.append(_lanes.asarray(leaf, None))
        except (LanesError, TypeError) as e:
            raise LanesError(
                f"{what}: a leaf of type {type(leaf).__name__} is not an array ({e})"
            ) from None
    return out


def _argnums_tuple(argnums: int | Sequence[int], nargs: int, what: str) -> tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for a in nums:
        if not -nargs <= a < nargs:
            raise LanesError(f"{what}: argnum {a} out of range for {nargs} arguments")
    return tuple(a % nargs for a in nums)


class _Trees:
    """The output structures of one jitted function's traces, one per signature traced; each
    trace returns its leaves with its index, which lanes.Jit keeps with the signature and hands
    back with every call's results (the structure may differ between signatures)."""

    __slots__ = ("trees",)

    def __init__(self) -> None:
        self.trees: list[PyTreeDef] = []

    def flatten(self, out: Any) -> tuple[list[Array], int]:
        leaves, tree = tree_flatten(out)
        self.trees.append(tree)
        return _arrays(leaves, "jit output"), len(self.trees) - 1

    def form(self, index: int) -> int | None:
        """The output of trace `index` as lanes.JitDispatch builds it without a call back: -1 one
        leaf, n >= 0 a tuple of n leaves, -2 - n a list of n; None another tree (``rebuild``)."""
        tree = self.trees[index]
        if tree.kind is None:
            return -1
        if tree.kind not in (tuple, list) or any(c.kind is not None for c in tree.children):
            return None
        return len(tree.children) if tree.kind is tuple else -2 - len(tree.children)

    def rebuild(self, result: tuple[list[Array], int]) -> Any:
        leaves, index = result
        tree = self.trees[index]
        return leaves[0] if tree.kind is None else tree_unflatten(tree, leaves)


class _Outputs:
    """The output structure a traced function recorded (read back after the C++ call)."""

    __slots__ = ("tree", "single")

    def __init__(self) -> None:
        self.tree: PyTreeDef | None = None
        self.single = False  # the output is one leaf (no tree to rebuild)

    def flatten(self, out: Any, what: str) -> list[Array]:
        leaves, self.tree = tree_flatten(out)
        self.single = self.tree.kind is None
        return _arrays(leaves, f"{what} output")

    def rebuild(self, leaves: Sequence[Array]) -> Any:
        assert self.tree is not None
        return tree_unflatten(self.tree, leaves)


# ---- vmap -------------------------------------------------------------------------------------


def vmap(
    fun: Callable,
    in_axes: Any = 0,
    out_axes: Any = 0,
    *,
    axis_name: str | None = None,
    axis_size: int | None = None,
    chunk_size: int | None = None,
    max_memory_bytes: int | None = None,
    randomness: str = "error",
    cond: str = "auto",
    loop: str = "auto",
) -> Callable:
    """Vectorizes ``fun`` over a batch axis (jax.vmap).

    ``fun`` is written for one example; the result takes a batch and runs as a few large ops.

    ``in_axes``: per argument (a tuple as long as the arguments, or one value for all), the
    axis of each leaf that is the batch: an int (negative counts from the end) or None for a
    value shared by every example. A nested tuple, list or dict gives one per leaf of that
    argument, as a prefix of its structure: ``in_axes=(0, None, {"w": 1, "b": None})``.
    ``out_axes``: where each output leaf's batch axis goes, the same way (None: the output does
    not depend on the batch). ``axis_size`` gives the batch size when no argument is mapped.
    ``axis_name`` names the axis for ``lax.psum`` and friends. ``chunk_size`` /
    ``max_memory_bytes`` bound the memory (run the batch in pieces, same results).
    ``randomness``: "error", "same" or "different" for draws of a ``random.Generator``.
    ``cond``: "auto", "select" or "partition"; ``loop``: "auto", "mask" or "compact": how a
    ``lax.cond`` / ``lax.while_loop`` whose predicate differs between examples runs.
    """
    cache: dict[Any, tuple[Any, _Outputs]] = {}
    options = (axis_name, axis_size, chunk_size, max_memory_bytes, randomness, cond, loop)

    def entry(args: tuple, kwargs: dict) -> tuple[Any, _Outputs, list[Array]]:
        spec = tuple(in_axes) if isinstance(in_axes, list) else in_axes
        if isinstance(spec, tuple) and len(spec) != len(args):
            raise LanesError(
                f"vmap: in_axes has {len(spec)} entries but the function got {len(args)} "
                "positional arguments"
            )
        if kwargs:  # keyword arguments are mapped over their axis 0, as in jax
            spec = (spec if isinstance(spec, tuple) else (spec,) * len(args)) + (0,)
            args = args + (kwargs,)
        leaves, treedef = tree_flatten(args)
        axes = broadcast_prefix(spec, args, "vmap in_axes")
        key = (treedef, tuple(axes), bool(kwargs))
        found = cache.get(key)
        if found is None:
            outputs = _Outputs()

            def flat(leaf_list: list[Array]) -> list[Array]:
                call = list(tree_unflatten(treedef, leaf_list))
                named = call.pop() if kwargs else {}
                with tracing("vmap"):
                    out = fun(*call, **named)
                return outputs.flatten(out, "vmap")

            def decide_out_axes() -> list[int | None]:
                assert outputs.tree is not None
                shape = tree_unflatten(outputs.tree, [0] * outputs.tree.num_leaves)
                return broadcast_prefix(out_axes, shape, "vmap out_axes")

            found = cache[key] = (_lanes.Vmap(flat, axes, decide_out_axes, *options), outputs)
        return found[0], found[1], _arrays(leaves, "vmap argument")

    @functools.wraps(fun)
    def batched(*args: Any, **kwargs: Any) -> Any:
        vm, outputs, leaves = entry(args, kwargs)
        return outputs.rebuild(vm(leaves))

    def explain_call(*args: Any, **kwargs: Any) -> str:
        vm, _, leaves = entry(args, kwargs)
        return vm.explain(leaves)

    batched._lanes_explain = explain_call  # type: ignore[attr-defined]
    return batched


# ---- reverse mode -----------------------------------------------------------------------------


def value_and_grad(
    fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False
) -> Callable:
    """``fun``'s value and its gradient with respect to the arguments in ``argnums``
    (jax.value_and_grad). ``fun`` returns a 0-d float array, or ``(value, aux)`` with
    ``has_aux=True``; the gradient has the structure of the argument (a tuple of them when
    ``argnums`` is a tuple)."""

    @functools.wraps(fun)
    def value_and_grad_fun(*args: Any, **kwargs: Any) -> Any:
        nums = _argnums_tuple(argnums, len(args), "grad")
        diff_leaves, diff_def = tree_flatten([args[i] for i in nums])
        # The other arguments and the keyword arguments are passed through, not differentiated.
        rest = ([a for i, a in enumerate(args) if i not in nums], kwargs)
        rest_leaves, rest_def = tree_flatten(rest)
        aux_out = _Outputs()

        def flat(diff: list[Array], others: list[Array]) -> list[Array]:
            d = iter(tree_unflatten(diff_def, diff))
            positional, named = tree_unflatten(rest_def, others)
            r = iter(positional)
            full = [next(d) if i in nums else next(r) for i in range(len(args))]
            with tracing("grad"):
                out = fun(*full, **named)
            if has_aux:
                if not (isinstance(out, (tuple, list)) and len(out) == 2):
                    raise LanesError("grad: with has_aux=True the function must return "
                                     "(value, aux)")
                value, aux = out
            else:
                value, aux = out, None
            return _arrays([value], "grad output") + aux_out.flatten(aux, "grad aux")

        value, aux, grads = _lanes.value_and_grad(
            flat, _arrays(diff_leaves, "grad argument"), _arrays(rest_leaves, "grad argument")
        )
        per_arg = tree_unflatten(diff_def, grads)
        g = per_arg[0] if isinstance(argnums, int) else tuple(per_arg)
        return ((value, aux_out.rebuild(aux)) if has_aux else value), g

    return value_and_grad_fun


def grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False) -> Callable:
    """The gradient of ``fun`` (returning a 0-d float array) with respect to the arguments in
    ``argnums`` (jax.grad); with ``has_aux=True`` returns ``(gradient, aux)``."""
    vg = value_and_grad(fun, argnums, has_aux)

    @functools.wraps(fun)
    def grad_fun(*args: Any, **kwargs: Any) -> Any:
        value, g = vg(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return grad_fun


def vjp(fun: Callable, *primals: Any, has_aux: bool = False) -> tuple:
    """``(fun(*primals), f_vjp)`` where ``f_vjp(cotangent)`` returns a tuple with the cotangent
    of each primal (jax.vjp); with ``has_aux=True`` also fun's aux."""
    leaves, treedef = tree_flatten(primals)
    outputs, aux_out = _Outputs(), _Outputs()

    def flat(leaf_list: list[Array]) -> list[Array]:
        with tracing("vjp"):
            out = fun(*tree_unflatten(treedef, leaf_list))
        if not has_aux:
            return outputs.flatten(out, "vjp")
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            raise LanesError("vjp: with has_aux=True the function must return (value, aux)")
        # aux rides along as extra outputs whose cotangents are zeros.
        return outputs.flatten(out[0], "vjp") + aux_out.flatten(out[1], "vjp aux")

    outs, pullback = _lanes.vjp(flat, _arrays(leaves, "vjp primal"))
    assert outputs.tree is not None
    n_out = outputs.tree.num_leaves
    aux_zeros = [_lanes.full(a.shape, 0.0, a.dtype) for a in outs[n_out:]]

    def f_vjp(cotangent: Any) -> tuple:
        ct_leaves, ct_def = tree_flatten(cotangent)
        if ct_def != outputs.tree:
            raise LanesError(
                f"vjp: the cotangent's structure {ct_def} differs from the output's "
                f"{outputs.tree}"
            )
        cts = _arrays(ct_leaves, "vjp cotangent") + aux_zeros
        return tuple(tree_unflatten(treedef, pullback(cts)))

    result = outputs.rebuild(outs[:n_out])
    if has_aux:
        return result, f_vjp, aux_out.rebuild(outs[n_out:])
    return result, f_vjp


def jvp(fun: Callable, primals: Sequence[Any], tangents: Sequence[Any],
        has_aux: bool = False) -> tuple:
    """``(fun(*primals), the derivative of fun at primals along tangents)`` (jax.jvp); with
    ``has_aux=True`` fun returns ``(value, aux)`` and aux comes third, undifferentiated."""
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise LanesError("jvp: primals and tangents must be tuples or lists of arguments")
    leaves, treedef = tree_flatten(tuple(primals))
    t_leaves, t_def = tree_flatten(tuple(tangents))
    if t_def != treedef:
        raise LanesError(
            f"jvp: the tangents' structure {t_def} differs from the primals' {treedef}"
        )
    outputs, aux_out = _Outputs(), _Outputs()

    def flat(leaf_list: list[Array]) -> list[Array]:
        with tracing("jvp"):
            out = fun(*tree_unflatten(treedef, leaf_list))
        if not has_aux:
            return outputs.flatten(out, "jvp")
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            raise LanesError("jvp: with has_aux=True the function must return (value, aux)")
        return outputs.flatten(out[0], "jvp") + aux_out.flatten(out[1], "jvp aux")

    outs, dirs = _lanes.jvp(flat, _arrays(leaves, "jvp primal"), _arrays(t_leaves, "jvp tangent"))
    assert outputs.tree is not None
    n = outputs.tree.num_leaves  # the aux leaves' tangents, if any, are dropped
    result = outputs.rebuild(outs[:n]), outputs.rebuild(dirs[:n])
    return result + (aux_out.rebuild(outs[n:]),) if has_aux else result


# ---- Jacobians --------------------------------------------------------------------------------


def _substitute(args: tuple, nums: tuple[int, ...], values: Sequence[Any]) -> list[Any]:
    full = list(args)
    for i, v in zip(nums, values):
        full[i] = v
    return full


def _basis_rows(leaves: Sequence[Array], total: int) -> list[Array]:
    """For leaves of sizes n_k (summing to total): leaf k's slice of the (total, total) identity,
    shaped (total, *leaf.shape), in the leaf's dtype."""
    rows, offset = [], 0
    for leaf in leaves:
        eye = _lanes.eye(total, leaf.dtype)
        part = _lanes.slice_axis(eye, 1, offset, offset + leaf.size, 1)
        rows.append(_lanes.reshape(part, (total,) + leaf.shape))
        offset += leaf.size
    return rows


def _blocks(stacked: Sequence[Array], row_leaves: Sequence[Array],
            col_leaves: Sequence[Array], rows_first: bool) -> list[list[Array]]:
    """Splits per-column-leaf stacks of shape (total_rows, *col.shape) into the Jacobian blocks
    row.shape + col.shape (rows_first) or col.shape + row.shape."""
    out = []
    for col, s in zip(col_leaves, stacked):
        per_row, offset = [], 0
        for row in row_leaves:
            part = _lanes.slice_axis(s, 0, offset, offset + row.size, 1)
            offset += row.size
            if rows_first:
                per_row.append(_lanes.reshape(part, row.shape + col.shape))
            else:
                flat = _lanes.reshape(part, (row.size, col.size))
                per_row.append(_lanes.reshape(_lanes.transpose(flat, None), col.shape + row.shape))
        out.append(per_row)
    return out


def _jacobian(fun: Callable, argnums: int | Sequence[int], reverse: bool,
              chunk_size: int | None, name: str, has_aux: bool = False) -> Callable:
    @functools.wraps(fun)
    def jac(*args: Any) -> Any:
        nums = _argnums_tuple(argnums, len(args), name)
        chosen = tuple(args[i] for i in nums)
        in_leaves, in_def = tree_flatten(chosen)
        in_leaves = _arrays(in_leaves, f"{name} argument")
        for leaf in in_leaves:
            if leaf.dtype.kind != "f":
                raise LanesError(f"{name}: differentiates float arguments only, got {leaf.dtype}")

        def partial(*values: Any) -> Any:
            return fun(*_substitute(args, nums, values))

        n_in = sum(leaf.size for leaf in in_leaves)
        aux = None
        if reverse:
            found = vjp(partial, *tree_unflatten(in_def, in_leaves), has_aux=has_aux)
            out, pullback = found[0], found[1]
            aux = found[2] if has_aux else None
            out_leaves, out_def = tree_flatten(out)
            n_out = sum(leaf.size for leaf in out_leaves)
            basis = tree_unflatten(out_def, _basis_rows(out_leaves, n_out))
            rows = vmap(pullback, chunk_size=chunk_size)(basis)  # per input: (n_out, *in)
            stacked, _ = tree_flatten(rows)
            blocks = _blocks(stacked, out_leaves, in_leaves, rows_first=True)
        else:
            primals = tree_unflatten(in_def, in_leaves)
            probe = jvp(partial, primals, primals, has_aux=has_aux)
            out_probe, aux = probe[0], (probe[2] if has_aux else None)
            out_leaves, out_def = tree_flatten(out_probe)
            basis = tree_unflatten(in_def, _basis_rows(in_leaves, n_in))

            def column(tangents: Any) -> Any:
                return jvp(partial, primals, tangents, has_aux=has_aux)[1]

            cols = vmap(column, chunk_size=chunk_size)(basis)  # per output: (n_in, *out)
            stacked, _ = tree_flatten(cols)
            by_out = _blocks(stacked, in_leaves, out_leaves, rows_first=False)
            blocks = [[by_out[o][i] for o in range(len(out_leaves))]
                      for i in range(len(in_leaves))]
        # The output's structure, each leaf holding the inputs' structure (a tuple of the
        # arguments when argnums is a tuple).
        per_out = []
        for o in range(len(out_leaves)):
            per_in = tree_unflatten(in_def, [blocks[i][o] for i in range(len(in_leaves))])
            per_out.append(per_in[0] if isinstance(argnums, int) else tuple(per_in))
        jacobian = tree_unflatten(out_def, per_out)
        return (jacobian, aux) if has_aux else jacobian

    return jac


def jacrev(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, *,
           chunk_size: int | None = None) -> Callable:
    """The Jacobian of ``fun`` by reverse mode (jax.jacrev): one vmap of the vjp over the rows
    of the identity. Each output leaf holds one block per input leaf, shaped
    ``out.shape + in.shape``; ``chunk_size`` bounds the rows run at once. With
    ``has_aux=True`` fun returns ``(value, aux)`` and the result is ``(jacobian, aux)``."""
    return _jacobian(fun, argnums, True, chunk_size, "jacrev", has_aux)


def jacfwd(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, *,
           chunk_size: int | None = None) -> Callable:
    """The Jacobian of ``fun`` by forward mode (jax.jacfwd): one vmap of the jvp over the
    columns of the identity; ``has_aux`` as in jacrev."""
    return _jacobian(fun, argnums, False, chunk_size, "jacfwd", has_aux)


def hessian(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, *,
            chunk_size: int | None = None) -> Callable:
    """The Hessian of a scalar ``fun``: ``jacfwd(jacrev(fun))`` (jax.hessian); ``has_aux`` as
    in jacrev."""
    return jacfwd(jacrev(fun, argnums, has_aux, chunk_size=chunk_size), argnums, has_aux,
                  chunk_size=chunk_size)


def hvp(fun: Callable) -> Callable:
    """``hvp(f)(x, v)``: the Hessian of scalar ``f`` at ``x`` times ``v``, forward over reverse;
    no Hessian is formed."""

    def product(x: Any, v: Any) -> Any:
        return jvp(grad(fun), (x,), (v,))[1]

    return product


def batch_jacobian(fun: Callable) -> Callable:
    """For ``fun`` mapping a batch ``(B, ...)`` to ``(B, ...)`` with independent examples, each
    example's Jacobian, ``(B, *out, *in)`` (tf's GradientTape.batch_jacobian): a vmap of
    jacrev, never the ``(B, ..., B, ...)`` Jacobian."""

    def one(x: Array) -> Array:
        return fun(_lanes.expand_dims(x, 0))[0]

    return vmap(jacrev(one))


# ---- compile ----------------------------------------------------------------------------------


def jit(fun: Callable, static_argnums: int | Sequence[int] = (),
        static_argnames: str | Sequence[str] = ()) -> Callable:
    """``fun`` traced and optimized once per signature (jax.jit; lanes::compile): the shapes
    and dtypes of the array leaves, the pytree structure and the values of the arguments in
    ``static_argnums`` and of the keyword arguments in ``static_argnames`` (hashable Python
    values, given to ``fun`` as they are; a positional parameter named there is static too)."""
    statics = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
    names = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
    statics += _positions_of(fun, names)
    cache: dict[Any, tuple[Any, _Outputs]] = {}

    def make(layout: tuple) -> tuple[Any, _Trees]:
        """The compiled function (and its output trees) of one layout of the arguments."""
        found = cache.get(layout)
        if found is None:
            trees = _Trees()
            found = cache[layout] = (_lanes.Jit(_flat_call(fun, layout, trees)), trees)
        return found

    if not statics:
        # The common calls (each argument an Array, or a plain tuple or list of Arrays) are
        # dispatched in C++ (lanes._lanes.JitDispatch, the jitted function itself); the others
        # come back to `general`.
        dispatch = _lanes.JitDispatch(make, lambda a, k: general(a, k))
        jitted: Any = functools.update_wrapper(dispatch, fun)

    else:

        @functools.wraps(fun)
        def jitted(*args: Any, **kwargs: Any) -> Any:
            return general(args, kwargs)

    def call_flat(layout: tuple, leaves: list[Array]) -> Any:
        compiled, trees = make(layout)
        return trees.rebuild(compiled(leaves))

    def general(args: tuple, kwargs: dict | None = None) -> Any:
        kwargs = dict(kwargs or {})
        static_named = {k: kwargs.pop(k) for k in names if k in kwargs}
        nums = tuple(sorted({s % len(args) for s in statics if -len(args) <= s < len(args)}))
        static = tuple(args[i] for i in nums) + tuple(sorted(static_named.items()))
        # Keyword arguments are traced like positional ones (their names are part of the key).
        dynamic = [a for i, a in enumerate(args) if i not in nums] + ([kwargs] if kwargs else [])
        leaves, treedef = tree_flatten(dynamic)
        if not static and not kwargs and all(c.kind is None for c in treedef.children):
            # Array-like leaves only (numpy arrays, scalars): the fast path's entry, so an
            # argument's type never makes a second trace of one signature.
            return call_flat((-1,) * len(args), _arrays(leaves, "jit argument"))
        try:
            key = (treedef, static)
            found = cache.get(key)
        except TypeError:
            raise LanesError("jit: static arguments must be hashable") from None
        if found is None:
            trees = _Trees()

            def flat(leaf_list: list[Array]) -> tuple[list[Array], int]:
                values = list(tree_unflatten(treedef, leaf_list))
                named = values.pop() if kwargs else {}
                d, s = iter(values), iter(static)
                full = [next(s) if i in nums else next(d) for i in range(len(args))]
                with tracing("jit"):
                    out = fun(*full, **named, **static_named)
                return trees.flatten(out)

            found = cache[key] = (_lanes.Jit(flat), trees)
        compiled, trees = found
        return trees.rebuild(compiled(_arrays(leaves, "jit argument")))

    return jitted


def _positions_of(fun: Callable, names: tuple[str, ...]) -> tuple[int, ...]:
    """The positions of fun's positional parameters named in ``names``."""
    if not names:
        return ()
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):  # a builtin without a signature: keyword use only
        return ()
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return tuple(i for i, p in enumerate(params) if p.kind in positional and p.name in names)


def _flat_call(fun: Callable, layout: tuple, trees: _Trees) -> Callable:
    """fun as a function of the leaf list, its arguments rebuilt by jit's layout key (-1: an
    Array; (tuple or list, n): n of them), recording its output structure."""

    def flat(leaf_list: list[Array]) -> tuple[list[Array], int]:
        args, i = [], 0
        for part in layout:
            if part == -1:
                args.append(leaf_list[i])
                i += 1
            else:
                kind, n = part
                args.append(kind(leaf_list[i:i + n]))
                i += n
        with tracing("jit"):
            out = fun(*args)
        return trees.flatten(out)

    return flat


# ---- looking inside ---------------------------------------------------------------------------


def explain(fun: Callable) -> Callable[..., str]:
    """``explain(lanes.vmap(f))(*args)``: what the vmap runs for these arguments (the batched
    graph, the strategies chosen, what is materialized), as C++'s lanes::explain prints it.
    Nothing is computed."""
    call = getattr(fun, "_lanes_explain", None)
    if call is None:
        raise LanesError("explain: the function must be a lanes.vmap(...) result")
    return call


class Graph:
    """A traced graph, printed like C++'s lanes::Graph (jax.make_jaxpr's result)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text

    __str__ = __repr__


def make_graph(fun: Callable) -> Callable[..., Graph]:
    """``make_graph(f)(*args)``: the graph ``f`` traces to at these arguments (jax.make_jaxpr)."""

    def graph(*args: Any) -> Graph:
        leaves, treedef = tree_flatten(args)
        outputs = _Outputs()

        def flat(leaf_list: list[Array]) -> list[Array]:
            with tracing("make_graph"):
                out = fun(*tree_unflatten(treedef, leaf_list))
            return outputs.flatten(out, "make_graph")

        return Graph(_lanes.make_graph(flat, _arrays(leaves, "make_graph argument")))

    return graph
