"""Custom derivative and batching rules as decorators (jax.custom_vjp, custom_jvp and
jax.custom_batching.custom_vmap) over lanes' C++ custom rules."""

from __future__ import annotations

import contextlib
import functools
import threading
from typing import Any, Callable

from . import _lanes
from ._api import _arrays, _Outputs
from ._lanes import Array, LanesError
from .tree_util import tree_flatten, tree_map, tree_unflatten


def _zeros_like(a: Array) -> Array:
    return _lanes.full(a.shape, 0.0, a.dtype)


class _InsideRule:
    """Whether this thread is tracing one of a custom function's rules: a rule that calls the
    function itself (``return f(x), residuals``, jax's idiom) then gets the plain function."""

    def __init__(self) -> None:
        self._local = threading.local()

    @property
    def active(self) -> bool:
        return getattr(self._local, "depth", 0) > 0

    @contextlib.contextmanager
    def scope(self) -> Any:
        self._local.depth = getattr(self._local, "depth", 0) + 1
        try:
            yield
        finally:
            self._local.depth -= 1


class custom_vjp:
    """``f`` with a reverse-mode rule::

        @lanes.custom_vjp
        def f(x, y): ...
        def f_fwd(x, y): return f(x, y), residuals
        def f_bwd(residuals, g): return (gx, gy)   # one per argument; None means zero
        f.defvjp(f_fwd, f_bwd)

    ``nondiff_argnums`` (``functools.partial(lanes.custom_vjp, nondiff_argnums=(0,))``, as in
    jax): those arguments (functions, Python values) are not differentiated; fwd takes every
    argument, bwd takes them first, ``bwd(*nondiff, residuals, g)``, and returns cotangents
    for the others only.
    """

    def __init__(self, fun: Callable, nondiff_argnums: tuple[int, ...] = ()) -> None:
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff = tuple(nondiff_argnums)
        self.fwd: Callable | None = None
        self.bwd: Callable | None = None
        self._inside = _InsideRule()

    def defvjp(self, fwd: Callable, bwd: Callable) -> None:
        self.fwd, self.bwd = fwd, bwd

    def __call__(self, *args: Any) -> Any:
        if self._inside.active:
            return self.fun(*args)
        if self.fwd is None or self.bwd is None:
            raise LanesError(f"custom_vjp: {self.__name__} has no rule; call defvjp(fwd, bwd)")
        fwd, bwd = self.fwd, self.bwd
        nums = tuple(sorted(i % len(args) for i in self.nondiff)) if args else ()
        fixed = [args[i] for i in nums]  # the nondiff arguments, passed as they are
        diff_args = [a for i, a in enumerate(args) if i not in nums]
        leaves, treedef = tree_flatten(diff_args)
        leaves = _arrays(leaves, "custom_vjp argument")
        outputs, residuals = _Outputs(), _Outputs()

        def full(ls: list[Array]) -> list[Any]:
            d, s = iter(tree_unflatten(treedef, ls)), iter(fixed)
            return [next(s) if i in nums else next(d) for i in range(len(args))]

        def flat_f(ls: list[Array]) -> list[Array]:
            return outputs.flatten(self.fun(*full(ls)), "custom_vjp")

        def flat_fwd(ls: list[Array]) -> tuple[list[Array], list[Array]]:
            with self._inside.scope():
                out = fwd(*full(ls))
            if not (isinstance(out, (tuple, list)) and len(out) == 2):
                raise LanesError("custom_vjp: fwd must return (output, residuals)")
            return outputs.flatten(out[0], "custom_vjp fwd"), residuals.flatten(out[1], "residual")

        def flat_bwd(res: list[Array], ct: list[Array]) -> list[Array]:
            with self._inside.scope():
                cts = bwd(*fixed, residuals.rebuild(res), outputs.rebuild(ct))
            if not isinstance(cts, (tuple, list)) or len(cts) != len(diff_args):
                raise LanesError(f"custom_vjp: bwd must return a tuple of {len(diff_args)} "
                                 "cotangents, one per differentiated argument")
            per_arg = [tree_flatten(c)[0] if c is not None else None for c in cts]
            flat: list[Any] = []
            for arg, c in zip(diff_args, per_arg):
                arg_leaves = _arrays(tree_flatten(arg)[0], "custom_vjp")
                flat.extend(_zeros_like(a) for a in arg_leaves) if c is None else flat.extend(c)
            return _arrays(flat, "custom_vjp cotangent")

        return outputs.rebuild(_lanes.custom_vjp_call(flat_f, flat_fwd, flat_bwd, leaves))


class custom_jvp:
    """``f`` with a forward-mode rule::

        @lanes.custom_jvp
        def f(x): ...
        @f.defjvp
        def f_jvp(primals, tangents): return f(*primals), tangent_out
    """

    def __init__(self, fun: Callable) -> None:
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.rule: Callable | None = None
        self._inside = _InsideRule()

    def defjvp(self, rule: Callable) -> Callable:
        self.rule = rule
        return rule

    def defjvps(self, *jvps: Callable | None) -> None:
        """One rule per argument (jax's defjvps): ``jvp_i(tangent_i, answer, *primals)`` gives
        argument i's part of the output tangent; None for an argument without one. The output
        tangent is their sum."""

        def rule(primals: tuple, tangents: tuple) -> tuple:
            if len(jvps) != len(primals):
                raise LanesError(f"custom_jvp: defjvps has {len(jvps)} rules for "
                                 f"{len(primals)} arguments")
            answer = self.fun(*primals)
            parts = [jvp(t, answer, *primals) for jvp, t in zip(jvps, tangents)
                     if jvp is not None]
            if not parts:
                raise LanesError("custom_jvp: defjvps needs at least one rule")
            total = parts[0]
            for part in parts[1:]:
                total = tree_map(lambda a, b: a + b, total, part)
            return answer, total

        self.defjvp(rule)

    def __call__(self, *args: Any) -> Any:
        if self._inside.active:
            return self.fun(*args)
        if self.rule is None:
            raise LanesError(f"custom_jvp: {self.__name__} has no rule; use @f.defjvp")
        rule = self.rule
        leaves, treedef = tree_flatten(args)
        outputs = _Outputs()

        def flat_f(ls: list[Array]) -> list[Array]:
            return outputs.flatten(self.fun(*tree_unflatten(treedef, ls)), "custom_jvp")

        def flat_rule(p: list[Array], t: list[Array]) -> tuple[list[Array], list[Array]]:
            with self._inside.scope():
                out = rule(tuple(tree_unflatten(treedef, p)), tuple(tree_unflatten(treedef, t)))
            if not (isinstance(out, (tuple, list)) and len(out) == 2):
                raise LanesError("custom_jvp: the rule must return (output, tangent_out)")
            tangent = _Outputs()
            return outputs.flatten(out[0], "custom_jvp"), tangent.flatten(out[1], "tangent")

        return outputs.rebuild(
            _lanes.custom_jvp_call(flat_f, flat_rule, _arrays(leaves, "custom_jvp argument")))


class custom_vmap:
    """``f`` with a batching rule (jax.custom_batching.custom_vmap)::

        @lanes.custom_vmap
        def f(x): ...
        @f.def_vmap
        def rule(axis_size, in_batched, *args): return out, out_batched

    ``in_batched`` mirrors the arguments with a bool per leaf; ``out_batched`` mirrors the output.
    """

    def __init__(self, fun: Callable, name: str = "") -> None:
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.name = name or getattr(fun, "__name__", "")
        self.rule: Callable | None = None
        self._by_structure: dict[Any, tuple[Any, _Outputs]] = {}

    def def_vmap(self, rule: Callable) -> Callable:
        self.rule = rule
        self._by_structure.clear()
        return rule

    def __call__(self, *args: Any) -> Any:
        if self.rule is None:
            raise LanesError(f"custom_vmap: {self.__name__} has no rule; use @f.def_vmap")
        leaves, treedef = tree_flatten(args)
        found = self._by_structure.get(treedef)
        if found is None:
            outputs, rule, fun = _Outputs(), self.rule, self.fun

            def flat_f(ls: list[Array]) -> list[Array]:
                return outputs.flatten(fun(*tree_unflatten(treedef, ls)), "custom_vmap")

            def flat_rule(size: int, batched: list[bool], ls: list[Array]) -> tuple:
                in_batched = tree_unflatten(treedef, batched)
                out, out_batched = rule(size, in_batched, *tree_unflatten(treedef, ls))
                out_leaves = outputs.flatten(out, "custom_vmap rule")
                assert outputs.tree is not None
                flags = tree_flatten(out_batched)[0]
                if isinstance(out_batched, bool):
                    flags = [out_batched] * outputs.tree.num_leaves
                if len(flags) != len(out_leaves):
                    raise LanesError("custom_vmap: out_batched must mirror the rule's output")
                return out_leaves, [bool(b) for b in flags]

            found = (_lanes.CustomVmap(flat_f, flat_rule, self.name), outputs)
            self._by_structure[treedef] = found
        call, outputs = found
        return outputs.rebuild(call(_arrays(leaves, "custom_vmap argument")))
