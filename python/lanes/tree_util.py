"""Pytrees: nested tuples, lists, dicts, None, namedtuples, dataclasses and registered types.

The transforms flatten their arguments and results into leaves (Arrays and Python scalars) with
a ``PyTreeDef`` that rebuilds them, as ``jax.tree_util`` does.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Hashable, Iterable, NamedTuple

__all__ = [
    "PyTreeDef",
    "register_pytree_node",
    "tree_flatten",
    "tree_leaves",
    "tree_map",
    "tree_structure",
    "tree_unflatten",
]


class _Node(NamedTuple):
    flatten: Callable[[Any], tuple[Iterable[Any], Hashable]]
    unflatten: Callable[[Hashable, Iterable[Any]], Any]


_registry: dict[type, _Node] = {
    tuple: _Node(lambda t: (t, None), lambda _, c: tuple(c)),
    list: _Node(lambda x: (x, None), lambda _, c: list(c)),
    dict: _Node(
        lambda d: ([d[k] for k in sorted(d)], tuple(sorted(d))),
        lambda keys, c: dict(zip(keys, c)),
    ),
}


def register_pytree_node(
    nodetype: type,
    flatten_func: Callable[[Any], tuple[Iterable[Any], Hashable]],
    unflatten_func: Callable[[Hashable, Iterable[Any]], Any],
) -> None:
    """Registers a container type: ``flatten_func(x) -> (children, aux_data)`` and
    ``unflatten_func(aux_data, children) -> x`` (jax's signature)."""
    if nodetype in _registry:
        raise ValueError(f"register_pytree_node: {nodetype.__name__} is already registered")
    _registry[nodetype] = _Node(flatten_func, unflatten_func)


def _node_of(x: Any) -> _Node | None:
    node = _registry.get(type(x))
    if node is not None:
        return node
    if isinstance(x, tuple) and hasattr(type(x), "_fields"):  # a namedtuple
        cls = type(x)
        return _Node(lambda t: (tuple(t), None), lambda _, c: cls(*c))
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        cls = type(x)
        names = tuple(f.name for f in dataclasses.fields(x))
        return _Node(
            lambda d: ([getattr(d, n) for n in names], names),
            lambda ns, c: cls(**dict(zip(ns, c))),
        )
    return None


class PyTreeDef:
    """The structure of a pytree without its leaves; equal structures compare equal."""

    __slots__ = ("kind", "aux", "children", "num_leaves", "_hash")

    def __init__(self, kind: Any, aux: Hashable, children: tuple["PyTreeDef", ...]):
        self.kind = kind  # None: a leaf; "none": Python's None; else the container type
        self.aux = aux
        self.children = children
        self.num_leaves = 1 if kind is None else sum(c.num_leaves for c in children)
        self._hash = hash((kind, aux, children))

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, PyTreeDef)
            and self._hash == other._hash
            and self.kind == other.kind
            and self.aux == other.aux
            and self.children == other.children
        )

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        if self.kind is None:
            return "*"
        if self.kind == "none":
            return "None"
        inner = ", ".join(repr(c) for c in self.children)
        return f"PyTreeDef({self.kind.__name__}[{inner}])"


_LEAF = PyTreeDef(None, None, ())
_NONE = PyTreeDef("none", None, ())


def _flatten(x: Any, leaves: list[Any], is_leaf: Callable[[Any], bool] | None) -> PyTreeDef:
    if x is None:
        return _NONE
    if is_leaf is not None and is_leaf(x):
        leaves.append(x)
        return _LEAF
    node = _node_of(x)
    if node is None:
        leaves.append(x)
        return _LEAF
    children, aux = node.flatten(x)
    kind = type(x)
    return PyTreeDef(kind, aux, tuple(_flatten(c, leaves, is_leaf) for c in children))


def tree_flatten(
    tree: Any, is_leaf: Callable[[Any], bool] | None = None
) -> tuple[list[Any], PyTreeDef]:
    """The leaves of ``tree`` (depth first) and its structure."""
    leaves: list[Any] = []
    return leaves, _flatten(tree, leaves, is_leaf)


def _unflatten(treedef: PyTreeDef, leaves: Iterable[Any]) -> Any:
    if treedef.kind is None:
        return next(leaves)  # type: ignore[call-overload]
    if treedef.kind == "none":
        return None
    children = [_unflatten(c, leaves) for c in treedef.children]
    node = _registry.get(treedef.kind)
    if node is None:
        prototype_node = _node_for_type(treedef.kind)
        return prototype_node.unflatten(treedef.aux, children)
    return node.unflatten(treedef.aux, children)


def _node_for_type(kind: type) -> _Node:
    if issubclass(kind, tuple) and hasattr(kind, "_fields"):
        return _Node(lambda t: (tuple(t), None), lambda _, c: kind(*c))
    if dataclasses.is_dataclass(kind):
        return _Node(lambda d: ((), None), lambda ns, c: kind(**dict(zip(ns, c))))
    raise TypeError(f"tree_unflatten: {kind.__name__} is not a pytree node")


def tree_unflatten(treedef: PyTreeDef, leaves: Iterable[Any]) -> Any:
    """The tree of structure ``treedef`` holding ``leaves`` in order."""
    leaves = list(leaves)
    if len(leaves) != treedef.num_leaves:
        raise ValueError(
            f"tree_unflatten: the structure has {treedef.num_leaves} leaves, got {len(leaves)}"
        )
    return _unflatten(treedef, iter(leaves))


def tree_leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list[Any]:
    """The leaves of ``tree``, depth first."""
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> PyTreeDef:
    """The structure of ``tree``."""
    return tree_flatten(tree, is_leaf)[1]


def tree_map(f: Callable[..., Any], tree: Any, *rest: Any, is_leaf=None) -> Any:
    """``f`` applied to each leaf of ``tree`` (and the matching leaves of ``rest``)."""
    leaves, treedef = tree_flatten(tree, is_leaf)
    others = []
    for r in rest:
        r_leaves, r_def = tree_flatten(r, is_leaf)
        if r_def != treedef:
            raise ValueError(f"tree_map: structures differ: {treedef} and {r_def}")
        others.append(r_leaves)
    return tree_unflatten(treedef, [f(*xs) for xs in zip(leaves, *others)])


def broadcast_prefix(prefix: Any, tree: Any, what: str) -> list[Any]:
    """One entry of ``prefix`` per leaf of ``tree``: a prefix leaf (an int or None) applies to
    every leaf below it, as jax's in_axes and out_axes do."""
    out: list[Any] = []

    def walk(p: Any, t: Any, path: str) -> None:
        if p is None or isinstance(p, int):
            out.extend([p] * tree_structure(t).num_leaves)
            return
        p_node, t_node = _node_of(p), _node_of(t)
        if p_node is None or t_node is None or type(p) is not type(t) and not (
            isinstance(p, (list, tuple)) and isinstance(t, (list, tuple))
        ):
            raise ValueError(
                f"{what}: the spec {p!r} at {path or 'the top'} does not match the value's "
                f"structure {tree_structure(t)}"
            )
        p_children, p_aux = p_node.flatten(p)
        t_children, t_aux = t_node.flatten(t)
        p_children, t_children = list(p_children), list(t_children)
        if len(p_children) != len(t_children) or (isinstance(p, dict) and p_aux != t_aux):
            raise ValueError(
                f"{what}: the spec at {path or 'the top'} has {len(p_children)} entries but the "
                f"value has {len(t_children)}"
            )
        for i, (pc, tc) in enumerate(zip(p_children, t_children)):
            walk(pc, tc, f"{path}[{i}]")

    walk(prefix, tree, "")
    return out
