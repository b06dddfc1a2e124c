"""lanes.jit against eager and numpy references: traces per signature, static arguments,
pytrees, output structures that differ between signatures, and jit composed with grad and
vmap."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pytest

import lanes
import lanes.numpy as lnp
from lanes import tree_util
from conftest import assert_close, assert_equal, loss_lanes, loss_np, mlp, numeric_grad


# ---- jit --------------------------------------------------------------------------------------


def test_jit_equals_numpy_reference(params: dict[str, np.ndarray]) -> None:
    w, b, x = params["w"], params["b"], params["xs"][0]
    f = lanes.jit(lambda w_, b_, x_: mlp(lnp, w_, b_, x_))
    assert_close(f(w, b, x), mlp(np, w, b, x))
    assert_close(f(w, b, params["xs"][1]), mlp(np, w, b, params["xs"][1]))


def test_jit_traces_once_per_signature(rng: np.random.Generator) -> None:
    calls = []

    def f(x: Any, y: Any) -> Any:
        calls.append(1)
        return lnp.sum(x * y, axis=0) + 1.0

    g = lanes.jit(f)
    a, b = rng.normal(size=(3, 2)).astype(np.float32), rng.normal(size=(3, 2)).astype(np.float32)
    assert_close(g(a, b), (a * b).sum(axis=0) + 1)
    assert_close(g(b, a), (a * b).sum(axis=0) + 1)
    assert len(calls) == 1
    c = rng.normal(size=(4, 2)).astype(np.float32)
    assert_close(g(c, c), (c * c).sum(axis=0) + 1)
    assert len(calls) == 2
    assert_close(g(a.astype(np.float64), b.astype(np.float64)), (a * b).sum(axis=0) + 1)
    assert len(calls) == 3
    g(a, b)
    g(c, c)
    assert len(calls) == 3


def test_jit_with_lanes_array_arguments(rng: np.random.Generator) -> None:
    calls = []

    def f(x: Any, y: Any) -> Any:
        calls.append(1)
        return lnp.tanh(x) * y, lnp.sum(y)

    g = lanes.jit(f)
    for shape in ((3,), (3,), (2, 2), (3,)):
        a = rng.normal(size=shape).astype(np.float32)
        b = rng.normal(size=shape).astype(np.float32)
        out, total = g(lanes.asarray(a), lanes.asarray(b))
        assert_close(out, np.tanh(a) * b)
        assert_close(total, b.sum())
    assert len(calls) == 2
    single = lanes.jit(lambda x: x * 2.0)
    got = single(lanes.asarray(np.ones(2, np.float32)))
    assert isinstance(got, lanes.Array)
    assert_close(got, [2.0, 2.0])


def test_jit_traces_once_for_numpy_and_lanes_arguments() -> None:
    calls = []

    def f(x: Any) -> Any:
        calls.append(1)
        return x + 1.0

    g = lanes.jit(f)
    a = np.arange(3, dtype=np.float32)
    assert_close(g(a), a + 1)
    assert_close(g(lanes.asarray(a)), a + 1)
    assert_close(g(a * 2), a * 2 + 1)
    assert len(calls) == 1  # one signature: f32[3], whichever array type carries it


def test_jit_parameter_sequences_and_other_containers(rng: np.random.Generator) -> None:
    """Tuples and lists of Arrays (parameters) take the C++ dispatch, one trace per layout;
    a namedtuple of Arrays, or a tuple holding a numpy array, goes the pytree way: every one
    gives the eager values."""
    from collections import namedtuple

    calls = []

    def f(p: Any, x: Any) -> Any:
        calls.append(1)
        w, b = p
        return lnp.tanh(x @ w + b), lnp.sum(b)

    w = rng.normal(size=(3, 2)).astype(np.float32)
    b = rng.normal(size=(2,)).astype(np.float32)
    x = rng.normal(size=(4, 3)).astype(np.float32)
    want = np.tanh(x @ w + b)
    g = lanes.jit(f)
    lw, lb, lx = lanes.asarray(w), lanes.asarray(b), lanes.asarray(x)
    Params = namedtuple("Params", "w b")
    for _ in range(2):
        for p in ((lw, lb), [lw, lb], Params(lw, lb), (w, lb)):
            out, total = g(p, lx)
            assert_close(out, want)
            assert_close(total, b.sum())
    assert len(calls) == 4  # tuple, list, namedtuple, and the tuple holding a numpy array
    single = lanes.jit(lambda p: p[0] * 2.0)
    assert isinstance(single([lw]), lanes.Array)
    assert_close(single((lw,)), w * 2)


def test_jit_outputs_keep_their_container_types(rng: np.random.Generator) -> None:
    """The C++ dispatch builds a plain tuple or list of leaves itself and hands other trees
    (nested, namedtuple, dict, None, empty) to the pytree rebuild: each comes back as the traced
    function returned it, with the eager values, on every call."""
    from collections import namedtuple

    Pair = namedtuple("Pair", "a b")
    x = rng.normal(size=(3,)).astype(np.float32)
    lx = lanes.asarray(x)
    outputs: dict[str, Any] = {
        "tuple": lambda y: (y, y * 2.0),
        "list": lambda y: [y, y * 2.0, lnp.sum(y)],
        "one-tuple": lambda y: (y * 2.0,),
        "empty-tuple": lambda y: (),
        "empty-list": lambda y: [],
        "nested": lambda y: (y, [y * 2.0]),
        "namedtuple": lambda y: Pair(y, y * 2.0),
        "dict": lambda y: {"a": y, "b": y * 2.0},
        "with-none": lambda y: (y, None),
    }
    for name, f in outputs.items():
        want = f(x)
        g = lanes.jit(f)
        for _ in range(3):
            got = g(lx)
            assert type(got) is type(want), name
            assert tree_util.tree_structure(got) == tree_util.tree_structure(want), name
            for a, b in zip(tree_util.tree_leaves(got), tree_util.tree_leaves(want)):
                assert isinstance(a, lanes.Array), name
                assert_close(a, b)


@pytest.mark.parametrize("wrap", [np.asarray, lanes.asarray], ids=["numpy", "lanes"])
def test_output_structure_may_differ_between_signatures(wrap: Any) -> None:
    def f(x: Any) -> Any:
        return lnp.sum(x) if x.ndim == 1 else (x, lnp.sum(x))

    one = wrap(np.arange(3, dtype=np.float32))
    two = wrap(np.ones((2, 2), np.float32))
    g = lanes.jit(f)
    for _ in range(2):
        assert_close(g(one), 3.0)
        out = g(two)
        assert isinstance(out, tuple)
        assert_close(out[0], np.ones((2, 2)))
        assert_close(out[1], 4.0)
    v = lanes.vmap(f)
    batch1, batch2 = wrap(np.ones((2, 3), np.float32)), wrap(np.ones((2, 2, 2), np.float32))
    for _ in range(2):
        assert_close(v(batch1), [3.0, 3.0])
        out = v(batch2)
        assert isinstance(out, tuple)
        assert_close(out[1], [4.0, 4.0])


def test_jit_pytree_arguments_and_outputs(params: dict[str, np.ndarray]) -> None:
    calls = []

    def f(p: dict[str, Any], x: Any) -> dict[str, Any]:
        calls.append(1)
        h = mlp(lnp, p["w"], p["b"], x)
        return {"h": h, "stats": (lnp.mean(h), lnp.max(h))}

    g = lanes.jit(f)
    p = {"w": params["w"], "b": params["b"]}
    for x in params["xs"][:3]:
        out = g(p, x)
        h = mlp(np, params["w"], params["b"], x)
        assert_close(out["h"], h)
        assert_close(out["stats"][0], h.mean())
        assert_close(out["stats"][1], h.max())
    assert len(calls) == 1


def test_jit_static_argnums(rng: np.random.Generator) -> None:
    calls = []

    def f(x: Any, n: int, mode: str) -> Any:
        calls.append((n, mode))
        out = x
        for _ in range(n):  # Python control flow on static values
            out = out * 2.0 if mode == "double" else out + 1.0
        return out

    g = lanes.jit(f, static_argnums=(1, 2))
    x = rng.normal(size=(3,)).astype(np.float32)
    assert_close(g(x, 3, "double"), x * 8)
    assert_close(g(x, 3, "double"), x * 8)
    assert_close(g(x, 2, "add"), x + 2)
    assert_close(g(x, 3, "double"), x * 8)
    assert calls == [(3, "double"), (2, "add")]


def test_jit_static_argnums_int_and_negative(rng: np.random.Generator) -> None:
    x = rng.normal(size=(2, 3)).astype(np.float32)
    g = lanes.jit(lambda v, axis: lnp.sum(v, axis=axis), static_argnums=-1)
    assert_close(g(x, 0), x.sum(axis=0))
    assert_close(g(x, 1), x.sum(axis=1))
    g1 = lanes.jit(lambda axis, v: lnp.max(v, axis=axis), static_argnums=0)
    assert_close(g1(1, x), x.max(axis=1))


def test_jit_of_grad_and_vmap(params64: dict[str, np.ndarray]) -> None:
    w, b, xs = params64["w"], params64["b"], params64["xs"]
    g = lanes.jit(lanes.vmap(lanes.grad(loss_lanes), in_axes=(None, None, 0)))
    got = g(w, b, xs)
    for i, x in enumerate(xs):
        assert_close(got[i], numeric_grad(lambda v: loss_np(v, b, x), w), rtol=1e-6, atol=1e-8)


def test_grad_of_jit(params64: dict[str, np.ndarray]) -> None:
    w, b, x = params64["w"], params64["b"], params64["xs"][0]
    g = lanes.grad(lanes.jit(loss_lanes))(w, b, x)
    assert_close(g, numeric_grad(lambda v: loss_np(v, b, x), w), rtol=1e-6, atol=1e-8)


def test_vmap_of_jit(params: dict[str, np.ndarray]) -> None:
    w, b, xs = params["w"], params["b"], params["xs"]
    got = lanes.vmap(lanes.jit(lambda x: mlp(lnp, w, b, x)))(xs)
    assert_close(got, np.stack([mlp(np, w, b, x) for x in xs]))


def test_static_argnames_by_keyword_or_position() -> None:
    traces: list[tuple[int, str]] = []

    def f(x: Any, n: int, scale: Any = 1.0, mode: str = "scale") -> Any:
        traces.append((n, mode))
        return x * n * scale if mode == "scale" else x - n

    jitted = lanes.jit(f, static_argnames=("n", "mode"))
    x = np.arange(3.0, dtype=np.float32)
    lx = lanes.asarray(x)
    assert_equal(jitted(lx, 2), x * 2)
    assert_equal(jitted(lx, 2), x * 2)
    assert_equal(jitted(lx, n=3), x * 3)
    assert_equal(jitted(lx, 2, mode="shift"), x - 2)
    assert_equal(jitted(lx, 2, scale=lanes.asarray(np.float32(10.0))), x * 20)
    assert traces == [(2, "scale"), (3, "scale"), (2, "shift"), (2, "scale")]
    power = lanes.jit(lambda v, k: v ** k, static_argnames="k")
    assert_equal(power(lx, k=2), x ** 2)
    assert_equal(power(lx, 3), x ** 3)


def test_jitted_function_is_named_binds_as_a_method_and_takes_keywords() -> None:
    def scaled(x: Any, factor: Any) -> Any:
        """x times factor."""
        return x * factor

    jitted = lanes.jit(scaled)
    assert jitted.__name__ == "scaled" and jitted.__doc__ == "x times factor."
    assert jitted.__wrapped__ is scaled and repr(jitted).startswith("<lanes.jit of <function")
    x = np.arange(4.0, dtype=np.float32)
    lx, two = lanes.asarray(x), lanes.asarray(np.float32(2.0))
    assert_equal(jitted(lx, two), x * 2)
    assert_equal(jitted(lx, factor=two), x * 2)  # keywords take the general path
    assert_equal(jitted(x, 3.0), x * 3)  # numpy and scalar arguments too

    class Model:
        def __init__(self, w: Any) -> None:
            self.w = w

        @lanes.jit
        def apply(self: Any, v: Any) -> Any:
            return v * self.w

    model = Model(np.float32(5.0))
    with pytest.raises(lanes.LanesError):  # self is not an array: a clear error
        model.apply(lx)
    assert Model.apply is Model.__dict__["apply"]

    class Params:
        @lanes.jit
        def apply(w: Any, v: Any) -> Any:  # noqa: N805 (the instance is an Array leaf here)
            return v * w

    bound = Params.apply.__get__(lx)
    assert_equal(bound(lx), x * x)


def test_jit_every_call_form_agrees_with_numpy(rng: np.random.Generator) -> None:
    # CPython hands a jitted function its arguments through vectorcall (a call, functools.partial,
    # a bound method), PyObject_Call (f(*args, **kwargs)) or with keywords: each form gets the
    # same result, and after a keyword call the fast path still works.
    def affine(x: Any, w: Any, b: Any) -> Any:
        return x * w + b

    x, w, b = (rng.standard_normal(5).astype(np.float32) for _ in range(3))
    lx, lw, lb = (lanes.asarray(v) for v in (x, w, b))
    jitted = lanes.jit(affine)
    outs = [jitted(lx, lw, lb), jitted(*(lx, lw, lb)), jitted(lx, **{"w": lw, "b": lb}),
            jitted(x=lx, w=lw, b=lb), functools.partial(jitted, lx, lw, lb)(),
            functools.partial(jitted, lx, b=lb)(w=lw), jitted(lx, lw, lb)]
    for out in outs:
        np.testing.assert_allclose(np.asarray(out), x * w + b, rtol=1e-6)

    # More positional arguments than the fast path keys (32): the general path.
    total = lanes.jit(lambda *vs: sum(vs[1:], vs[0]))
    vs = [rng.standard_normal(3).astype(np.float32) for _ in range(40)]
    np.testing.assert_allclose(np.asarray(total(*[lanes.asarray(v) for v in vs])),
                               np.sum(vs, axis=0), rtol=1e-5)


def test_scan_accepts_jax_unroll() -> None:
    xs = lanes.asarray(np.arange(4.0, dtype=np.float32))
    carry, ys = lanes.lax.scan(lambda c, v: (c + v, c), 0.0, xs, unroll=2)
    assert float(carry) == 6.0
    assert_equal(ys, np.array([0.0, 0.0, 1.0, 3.0], np.float32))
