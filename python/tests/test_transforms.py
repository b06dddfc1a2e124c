"""vmap, grad, vjp/jvp, Jacobians, explain and make_graph (jit: test_jit.py) against independent
references: per-example numpy loops, float64 finite differences and analytic derivatives."""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import numpy as np
import pytest

import lanes
import lanes.numpy as lnp
from conftest import (assert_close, assert_equal, loss_lanes, loss_np, mlp, numeric_grad,
                      numeric_jacobian)


# ---- vmap -------------------------------------------------------------------------------------


def test_vmap_matches_loop(params: dict[str, np.ndarray]) -> None:
    w, b, xs = params["w"], params["b"], params["xs"]
    got = lanes.vmap(lambda x: mlp(lnp, w, b, x))(xs)
    want = np.stack([mlp(np, w, b, x) for x in xs])
    assert_close(got, want)


@pytest.mark.parametrize("axis", [0, 1, -1, -2])
def test_vmap_in_axes_int(rng: np.random.Generator, axis: int) -> None:
    xs = rng.normal(size=(3, 4, 2)).astype(np.float32)
    got = lanes.vmap(lambda x: lnp.sum(x * x, axis=0) + x[-1], in_axes=axis)(xs)
    want = np.stack([np.sum(x * x, axis=0) + x[-1] for x in np.moveaxis(xs, axis, 0)])
    assert_close(got, want)


def test_vmap_in_axes_none(params: dict[str, np.ndarray]) -> None:
    w, b, xs = params["w"], params["b"], params["xs"]
    got = lanes.vmap(lambda w_, b_, x: mlp(lnp, w_, b_, x), in_axes=(None, None, 0))(w, b, xs)
    assert_close(got, np.stack([mlp(np, w, b, x) for x in xs]))


def test_vmap_in_axes_list_is_accepted(params: dict[str, np.ndarray]) -> None:
    w, b, xs = params["w"], params["b"], params["xs"]
    got = lanes.vmap(lambda w_, b_, x: mlp(lnp, w_, b_, x), in_axes=[None, None, 0])(w, b, xs)
    assert_close(got, np.stack([mlp(np, w, b, x) for x in xs]))


def test_vmap_per_leaf_in_axes_dict(params: dict[str, np.ndarray], rng: np.random.Generator
                                    ) -> None:
    w, xs = params["w"], params["xs"]
    bs = rng.normal(size=(3, 5)).astype(np.float32)  # batch on axis 1

    def f(p: dict[str, Any], x: Any) -> Any:
        return mlp(lnp, p["w"], p["b"], x)

    got = lanes.vmap(f, in_axes=({"w": None, "b": 1}, 0))({"w": w, "b": bs}, xs)
    want = np.stack([mlp(np, w, bs[:, i], xs[i]) for i in range(5)])
    assert_close(got, want)


def test_vmap_per_leaf_in_axes_tuple(params: dict[str, np.ndarray]) -> None:
    w, b, xs = params["w"], params["b"], params["xs"]

    def f(wb: tuple[Any, Any], x: Any) -> Any:
        return mlp(lnp, wb[0], wb[1], x)

    got = lanes.vmap(f, in_axes=((None, None), 0))((w, b), xs)
    assert_close(got, np.stack([mlp(np, w, b, x) for x in xs]))


class Layer(NamedTuple):
    w: Any
    b: Any


@dataclasses.dataclass
class Example:
    x: Any
    scale: Any


def test_vmap_namedtuple_argument_and_output(params: dict[str, np.ndarray]) -> None:
    w, b, xs = params["w"], params["b"], params["xs"]

    def f(layer: Layer, x: Any) -> Layer:
        return Layer(mlp(lnp, layer.w, layer.b, x), lnp.sum(x))

    out = lanes.vmap(f, in_axes=(Layer(None, None), 0))(Layer(w, b), xs)
    assert isinstance(out, Layer)
    assert_close(out.w, np.stack([mlp(np, w, b, x) for x in xs]))
    assert_close(out.b, xs.sum(axis=1))


def test_vmap_dataclass_argument(params: dict[str, np.ndarray], rng: np.random.Generator
                                 ) -> None:
    w, b, xs = params["w"], params["b"], params["xs"]
    scales = rng.uniform(1, 2, size=(5,)).astype(np.float32)

    def f(ex: Example) -> Any:
        return mlp(lnp, w, b, ex.x) * ex.scale

    got = lanes.vmap(f)(Example(xs, scales))
    want = np.stack([mlp(np, w, b, x) * s for x, s in zip(xs, scales)])
    assert_close(got, want)


def test_vmap_dataclass_output(params: dict[str, np.ndarray]) -> None:
    xs = params["xs"]
    out = lanes.vmap(lambda x: Example(x * 2.0, lnp.max(x)))(xs)
    assert isinstance(out, Example)
    assert_close(out.x, xs * 2)
    assert_close(out.scale, xs.max(axis=1))


def test_vmap_out_axes_1(params: dict[str, np.ndarray]) -> None:
    w, b, xs = params["w"], params["b"], params["xs"]
    got = lanes.vmap(lambda x: mlp(lnp, w, b, x), out_axes=1)(xs)
    assert_close(got, np.stack([mlp(np, w, b, x) for x in xs], axis=1))


def test_vmap_out_axes_negative_and_per_output(params: dict[str, np.ndarray]) -> None:
    xs = params["xs"]
    got_a, got_b = lanes.vmap(lambda x: (lnp.outer(x, x), lnp.sum(x)), out_axes=(-1, 0))(xs)
    assert_close(got_a, np.stack([np.outer(x, x) for x in xs], axis=-1))
    assert_close(got_b, xs.sum(axis=1))


def test_vmap_out_axes_none(params: dict[str, np.ndarray]) -> None:
    w, b, xs = params["w"], params["b"], params["xs"]
    got = lanes.vmap(lambda x, w_: lnp.tanh(w_) * 2.0, in_axes=(0, None), out_axes=None)(xs, w)
    assert_close(got, np.tanh(w) * 2)
    mixed = lanes.vmap(lambda x: (x * 3.0, lnp.tanh(b)), out_axes=(0, None))(xs)
    assert_close(mixed[0], xs * 3)
    assert_close(mixed[1], np.tanh(b))


def test_vmap_out_axes_per_leaf_dict(params: dict[str, np.ndarray]) -> None:
    xs = params["xs"]
    out = lanes.vmap(lambda x: {"a": lnp.outer(x, x), "b": lnp.ones(2)},
                     out_axes={"a": 1, "b": None})(xs)
    assert_close(out["a"], np.stack([np.outer(x, x) for x in xs], axis=1))
    assert_close(out["b"], np.ones(2))


def test_vmap_in_and_out_axes_negative(rng: np.random.Generator) -> None:
    xs = rng.normal(size=(3, 4)).astype(np.float32)
    got = lanes.vmap(lambda x: lnp.cumsum(x), in_axes=-1, out_axes=-1)(xs)
    assert_close(got, np.stack([np.cumsum(c) for c in xs.T], axis=-1))


def test_vmap_out_axes_none_for_mapped_output_raises(params: dict[str, np.ndarray]) -> None:
    with pytest.raises(lanes.LanesError, match="out_axes"):
        lanes.vmap(lambda x: x * 2.0, out_axes=None)(params["xs"])


def test_vmap_axis_size_without_mapped_inputs() -> None:
    got = lanes.vmap(lambda: lnp.arange(3) * 2, axis_size=4)()
    assert_close(got, np.tile(np.arange(3) * 2, (4, 1)))
    got = lanes.vmap(lambda c: c + 1.0, in_axes=None, axis_size=2)(np.float32(5.0))
    assert_close(got, np.full(2, 6.0))


@pytest.mark.parametrize("options", [{"chunk_size": 1}, {"chunk_size": 2}, {"chunk_size": 7},
                                     {"max_memory_bytes": 64}, {"max_memory_bytes": 1 << 20}],
                         ids=repr)
def test_vmap_chunking_gives_same_results(rng: np.random.Generator, options: dict) -> None:
    w = rng.normal(size=(6, 6)).astype(np.float32)
    xs = rng.normal(size=(7, 6)).astype(np.float32)

    def f(x: Any) -> Any:
        h = lnp.tanh(lnp.matmul(w, x))
        return h, lnp.sum(h * h)

    got_h, got_s = lanes.vmap(f, **options)(xs)
    want_h = np.stack([np.tanh(w @ x) for x in xs])
    assert_close(got_h, want_h)
    assert_close(got_s, (want_h ** 2).sum(axis=1), rtol=1e-5)


def test_vmap_nested(rng: np.random.Generator) -> None:
    a = rng.normal(size=(3, 4)).astype(np.float32)
    bm = rng.normal(size=(5, 4)).astype(np.float32)
    dist = lanes.vmap(lanes.vmap(lambda u, v: lnp.sum((u - v) ** 2), in_axes=(None, 0)),
                      in_axes=(0, None))(a, bm)
    want = np.array([[np.sum((u - v) ** 2) for v in bm] for u in a])
    assert_close(dist, want, rtol=1e-5)


def test_vmap_nested_inner_axis_1(rng: np.random.Generator) -> None:
    xs = rng.normal(size=(2, 3, 4)).astype(np.float32)
    got = lanes.vmap(lanes.vmap(lambda v: v * lnp.sum(v), in_axes=1, out_axes=0))(xs)
    want = np.stack([np.stack([v * v.sum() for v in x.T]) for x in xs])
    assert_close(got, want, rtol=1e-5)


def test_vmap_python_scalar_output_broadcasts(params: dict[str, np.ndarray]) -> None:
    xs = params["xs"]
    got = lanes.vmap(lambda x: (x, 1.5))(xs)
    assert_close(got[0], xs)
    assert_close(got[1], np.full(5, 1.5))


def test_vmap_retrace_for_new_shapes(rng: np.random.Generator) -> None:
    f = lanes.vmap(lambda x: lnp.sum(x, axis=0))
    for n, d in ((2, 3), (4, 3), (2, 5)):
        xs = rng.normal(size=(n, d, 2))
        assert_close(f(xs), xs.sum(axis=1), rtol=1e-12)


# ---- grad / value_and_grad --------------------------------------------------------------------


def test_grad_vs_finite_differences(params64: dict[str, np.ndarray]) -> None:
    w, b, x = params64["w"], params64["b"], params64["xs"][0]
    g = lanes.grad(loss_lanes)(w, b, x)
    assert g.shape == w.shape and g.dtype == np.float64
    assert_close(g, numeric_grad(lambda w_: loss_np(w_, b, x), w), rtol=1e-6, atol=1e-8)


def test_grad_float32(params: dict[str, np.ndarray], params64: dict[str, np.ndarray]) -> None:
    w, b, x = params["w"], params["b"], params["xs"][0]
    g = lanes.grad(loss_lanes)(w, b, x)
    assert g.dtype == np.float32
    want = numeric_grad(lambda w_: loss_np(w_, params64["b"], params64["xs"][0]),
                        params64["w"])
    assert_close(g, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("argnum", [1, 2, -1])
def test_grad_argnums_int(params64: dict[str, np.ndarray], argnum: int) -> None:
    args = [params64["w"], params64["b"], params64["xs"][0]]
    i = argnum % 3

    def partial(v: np.ndarray) -> float:
        a = list(args)
        a[i] = v
        return loss_np(*a)

    g = lanes.grad(loss_lanes, argnums=argnum)(*args)
    assert_close(g, numeric_grad(partial, args[i]), rtol=1e-6, atol=1e-8)


def test_grad_argnums_tuple(params64: dict[str, np.ndarray]) -> None:
    w, b, x = params64["w"], params64["b"], params64["xs"][0]
    gw, gx = lanes.grad(loss_lanes, argnums=(0, 2))(w, b, x)
    assert_close(gw, numeric_grad(lambda v: loss_np(v, b, x), w), rtol=1e-6, atol=1e-8)
    assert_close(gx, numeric_grad(lambda v: loss_np(w, b, v), x), rtol=1e-6, atol=1e-8)


def test_grad_argnums_single_tuple_returns_tuple(params64: dict[str, np.ndarray]) -> None:
    w, b, x = params64["w"], params64["b"], params64["xs"][0]
    out = lanes.grad(loss_lanes, argnums=(1,))(w, b, x)
    assert isinstance(out, tuple) and len(out) == 1
    assert_close(out[0], numeric_grad(lambda v: loss_np(w, v, x), b), rtol=1e-6, atol=1e-8)


def test_value_and_grad(params64: dict[str, np.ndarray]) -> None:
    w, b, x = params64["w"], params64["b"], params64["xs"][0]
    value, g = lanes.value_and_grad(loss_lanes)(w, b, x)
    assert_close(value, loss_np(w, b, x), rtol=1e-12)
    assert_close(g, numeric_grad(lambda v: loss_np(v, b, x), w), rtol=1e-6, atol=1e-8)


def test_grad_has_aux(params64: dict[str, np.ndarray]) -> None:
    w, b, x = params64["w"], params64["b"], params64["xs"][0]

    def f(w_: Any) -> tuple[Any, dict[str, Any]]:
        h = mlp(lnp, w_, b, x)
        return lnp.sum(h ** 2), {"h": h, "n": lnp.max(h)}

    g, aux = lanes.grad(f, has_aux=True)(w)
    assert_close(g, numeric_grad(lambda v: loss_np(v, b, x), w), rtol=1e-6, atol=1e-8)
    assert set(aux) == {"h", "n"}
    assert_close(aux["h"], mlp(np, w, b, x), rtol=1e-12)
    assert_close(aux["n"], mlp(np, w, b, x).max(), rtol=1e-12)

    (value, aux2), g2 = lanes.value_and_grad(f, has_aux=True)(w)
    assert_close(value, loss_np(w, b, x), rtol=1e-12)
    assert_close(g2, g, rtol=1e-12)
    assert_close(aux2["h"], aux["h"], rtol=1e-12)


def test_grad_pytree_argument(params64: dict[str, np.ndarray]) -> None:
    w, b, x = params64["w"], params64["b"], params64["xs"][0]

    def f(p: dict[str, Any], x_: Any) -> Any:
        return loss_lanes(p["w"], p["layer"][0], x_)

    g = lanes.grad(f)({"w": w, "layer": (b,)}, x)
    assert isinstance(g, dict) and set(g) == {"w", "layer"}
    assert isinstance(g["layer"], tuple)
    assert_close(g["w"], numeric_grad(lambda v: loss_np(v, b, x), w), rtol=1e-6, atol=1e-8)
    assert_close(g["layer"][0], numeric_grad(lambda v: loss_np(w, v, x), b), rtol=1e-6,
                 atol=1e-8)


def test_grad_namedtuple_argument(params64: dict[str, np.ndarray]) -> None:
    w, b, x = params64["w"], params64["b"], params64["xs"][0]
    g = lanes.grad(lambda layer: loss_lanes(layer.w, layer.b, x))(Layer(w, b))
    assert isinstance(g, Layer)
    assert_close(g.b, numeric_grad(lambda v: loss_np(w, v, x), b), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name, f_lanes, f_np", [
    ("exp-sin", lambda x: lnp.sum(lnp.exp(lnp.sin(x))), lambda x: np.sum(np.exp(np.sin(x)))),
    ("log-sqrt", lambda x: lnp.sum(lnp.log(lnp.sqrt(x * x + 1.0))),
     lambda x: np.sum(np.log(np.sqrt(x * x + 1.0)))),
    ("max-min", lambda x: lnp.max(x) - 2.0 * lnp.min(x), lambda x: np.max(x) - 2.0 * np.min(x)),
    ("mean-var", lambda x: lnp.var(x) + lnp.mean(x) ** 2, lambda x: np.var(x) + np.mean(x) ** 2),
    ("division", lambda x: lnp.sum(1.0 / (x * x + 2.0)), lambda x: np.sum(1.0 / (x * x + 2.0))),
    ("indexing", lambda x: lnp.sum(x[1:, ::-1] * x[0]), lambda x: np.sum(x[1:, ::-1] * x[0])),
    ("cumsum", lambda x: lnp.sum(lnp.cumsum(x, axis=1) ** 2),
     lambda x: np.sum(np.cumsum(x, axis=1) ** 2)),
    ("softmax-like", lambda x: lnp.sum(lnp.exp(x) / lnp.sum(lnp.exp(x), axis=1, keepdims=True)
                                       * x),
     lambda x: np.sum(np.exp(x) / np.sum(np.exp(x), axis=1, keepdims=True) * x)),
])
def test_grad_of_ops_vs_finite_differences(rng: np.random.Generator, name: str, f_lanes: Any,
                                           f_np: Any) -> None:
    x = rng.normal(size=(3, 4))
    assert_close(lanes.grad(f_lanes)(x), numeric_grad(f_np, x), rtol=1e-5, atol=1e-7)


def test_grad_of_at_set_and_where(rng: np.random.Generator) -> None:
    x = rng.normal(size=(5,))

    def f(v: Any) -> Any:
        return lnp.sum(lnp.where(v > 0, v * v, 3.0 * v).at[1].set(0.0))

    def f_np(v: np.ndarray) -> float:
        out = np.where(v > 0, v * v, 3.0 * v)
        out[1] = 0.0
        return float(out.sum())

    assert_close(lanes.grad(f)(x), numeric_grad(f_np, x), rtol=1e-6, atol=1e-8)


# ---- vjp / jvp --------------------------------------------------------------------------------


def test_vjp_vs_jacobian(params64: dict[str, np.ndarray], rng: np.random.Generator) -> None:
    w, b, x = params64["w"], params64["b"], params64["xs"][0]
    out, f_vjp = lanes.vjp(lambda w_, x_: mlp(lnp, w_, b, x_), w, x)
    assert_close(out, mlp(np, w, b, x), rtol=1e-12)
    ct = rng.normal(size=(3,))
    ct_w, ct_x = f_vjp(ct)
    jw = numeric_jacobian(lambda v: mlp(np, v, b, x), w)  # (3, 3, 4)
    jx = numeric_jacobian(lambda v: mlp(np, w, b, v), x)  # (3, 4)
    assert_close(ct_w, np.tensordot(ct, jw, axes=1), rtol=1e-6, atol=1e-8)
    assert_close(ct_x, ct @ jx, rtol=1e-6, atol=1e-8)
    # The pullback can be called again with another cotangent.
    ct2 = rng.normal(size=(3,))
    assert_close(f_vjp(ct2)[1], ct2 @ jx, rtol=1e-6, atol=1e-8)


def test_vjp_pytree_output(rng: np.random.Generator) -> None:
    x = rng.normal(size=(4,))
    out, f_vjp = lanes.vjp(lambda v: {"s": lnp.sum(v ** 2), "e": lnp.exp(v)}, x)
    assert_close(out["s"], np.sum(x ** 2), rtol=1e-12)
    ct_e = rng.normal(size=(4,))
    (g,) = f_vjp({"s": np.float64(2.0), "e": ct_e})
    assert_close(g, 2.0 * 2 * x + ct_e * np.exp(x), rtol=1e-12)


def test_vjp_has_aux(rng: np.random.Generator) -> None:
    x = rng.normal(size=(3,))
    out, f_vjp, aux = lanes.vjp(lambda v: (lnp.sin(v), lnp.sum(v)), x, has_aux=True)
    assert_close(out, np.sin(x), rtol=1e-12)
    assert_close(aux, x.sum(), rtol=1e-12)
    ct = rng.normal(size=(3,))
    assert_close(f_vjp(ct)[0], ct * np.cos(x), rtol=1e-12)


def test_jvp_vs_jacobian(params64: dict[str, np.ndarray], rng: np.random.Generator) -> None:
    w, b, x = params64["w"], params64["b"], params64["xs"][0]
    tw, tx = rng.normal(size=w.shape), rng.normal(size=x.shape)
    out, tangent = lanes.jvp(lambda w_, x_: mlp(lnp, w_, b, x_), (w, x), (tw, tx))
    assert_close(out, mlp(np, w, b, x), rtol=1e-12)
    jw = numeric_jacobian(lambda v: mlp(np, v, b, x), w)
    jx = numeric_jacobian(lambda v: mlp(np, w, b, v), x)
    want = np.tensordot(jw, tw, axes=2) + jx @ tx
    assert_close(tangent, want, rtol=1e-6, atol=1e-8)


def test_jvp_analytic(rng: np.random.Generator) -> None:
    x = rng.normal(size=(4,))
    t = rng.normal(size=(4,))
    out, tangent = lanes.jvp(lambda v: lnp.tanh(v) * v, (x,), (t,))
    assert_close(out, np.tanh(x) * x, rtol=1e-12)
    assert_close(tangent, ((1 - np.tanh(x) ** 2) * x + np.tanh(x)) * t, rtol=1e-12)


def test_jvp_pytree(rng: np.random.Generator) -> None:
    p = {"a": rng.normal(size=(2,)), "b": rng.normal(size=(2,))}
    t = {"a": rng.normal(size=(2,)), "b": rng.normal(size=(2,))}
    out, tangent = lanes.jvp(lambda d: (d["a"] * d["b"], lnp.sum(d["a"])), (p,), (t,))
    assert_close(out[0], p["a"] * p["b"], rtol=1e-12)
    assert_close(tangent[0], t["a"] * p["b"] + p["a"] * t["b"], rtol=1e-12)
    assert_close(tangent[1], t["a"].sum(), rtol=1e-12)


# ---- Jacobians --------------------------------------------------------------------------------


def tanh_layer_jacobians(w: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Analytic Jacobians of tanh(W x) w.r.t. x (m, n) and W (m, m, n)."""
    d = 1.0 - np.tanh(w @ x) ** 2
    jx = d[:, None] * w
    jw = np.einsum("i,ij,k->ijk", d, np.eye(w.shape[0]), x)
    return jx, jw


@pytest.mark.parametrize("jac", [lanes.jacrev, lanes.jacfwd], ids=["jacrev", "jacfwd"])
def test_jacobian_of_tanh_layer(params64: dict[str, np.ndarray], jac: Any) -> None:
    w, x = params64["w"], params64["xs"][0]
    jx_want, jw_want = tanh_layer_jacobians(w, x)

    def f(w_: Any, x_: Any) -> Any:
        return lnp.tanh(lnp.matmul(w_, x_))

    assert_close(jac(f, argnums=1)(w, x), jx_want, rtol=1e-10, atol=1e-12)
    assert_close(jac(f)(w, x), jw_want, rtol=1e-10, atol=1e-12)
    jw, jx = jac(f, argnums=(0, 1))(w, x)
    assert_close(jw, jw_want, rtol=1e-10, atol=1e-12)
    assert_close(jx, jx_want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("jac", [lanes.jacrev, lanes.jacfwd], ids=["jacrev", "jacfwd"])
def test_jacobian_chunked_and_float32(params: dict[str, np.ndarray], jac: Any) -> None:
    w, x = params["w"], params["xs"][0]
    jx_want, _ = tanh_layer_jacobians(w.astype(np.float64), x.astype(np.float64))
    got = jac(lambda v: lnp.tanh(lnp.matmul(w, v)), chunk_size=2)(x)
    assert got.dtype == np.float32
    assert_close(got, jx_want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("jac", [lanes.jacrev, lanes.jacfwd], ids=["jacrev", "jacfwd"])
def test_jacobian_pytree_input_and_output(rng: np.random.Generator, jac: Any) -> None:
    p = {"a": rng.normal(size=(2,)), "b": rng.normal(size=(3,))}

    def f(d: dict[str, Any]) -> tuple[Any, Any]:
        return lnp.outer(d["a"], d["b"]), lnp.sum(d["a"] ** 2)

    j_outer, j_sum = jac(f)(p)
    assert_close(j_outer["a"], np.einsum("ik,j->ijk", np.eye(2), p["b"]), rtol=1e-12)
    assert_close(j_outer["b"], np.einsum("i,jk->ijk", p["a"], np.eye(3)), rtol=1e-12)
    assert_close(j_sum["a"], 2 * p["a"], rtol=1e-12)
    assert_close(j_sum["b"], np.zeros(3), atol=1e-14)


def test_jacobian_matrix_input_vs_finite_differences(rng: np.random.Generator) -> None:
    m = rng.normal(size=(2, 3))

    def f_np(a: np.ndarray) -> np.ndarray:
        return np.sin(a) @ a.T

    def f(a: Any) -> Any:
        return lnp.matmul(lnp.sin(a), a.T)

    want = numeric_jacobian(f_np, m)
    assert_close(lanes.jacrev(f)(m), want, rtol=1e-6, atol=1e-8)
    assert_close(lanes.jacfwd(f)(m), want, rtol=1e-6, atol=1e-8)


def test_hessian_of_cubic(rng: np.random.Generator) -> None:
    x = rng.normal(size=(4,))
    h = lanes.hessian(lambda v: lnp.sum(v ** 3))(x)
    assert_close(h, np.diag(6 * x), rtol=1e-12, atol=1e-12)


def test_hessian_of_quadratic_form(rng: np.random.Generator) -> None:
    a = rng.normal(size=(3, 3))
    x = rng.normal(size=(3,))
    h = lanes.hessian(lambda v: lnp.dot(v, lnp.matmul(a, v)) + lnp.sum(lnp.sin(v)))(x)
    assert_close(h, a + a.T - np.diag(np.sin(x)), rtol=1e-12, atol=1e-12)


def test_hessian_matrix_argument(rng: np.random.Generator) -> None:
    m = rng.normal(size=(2, 2))
    h = lanes.hessian(lambda a: lnp.sum(a ** 3))(m)
    want = np.zeros((2, 2, 2, 2))
    for i in range(2):
        for j in range(2):
            want[i, j, i, j] = 6 * m[i, j]
    assert_close(h, want, rtol=1e-12, atol=1e-12)


def test_hvp(rng: np.random.Generator) -> None:
    x = rng.normal(size=(4,))
    v = rng.normal(size=(4,))
    a = rng.normal(size=(4, 4))
    got = lanes.hvp(lambda u: lnp.sum(u ** 3) + lnp.dot(u, lnp.matmul(a, u)))(x, v)
    assert_close(got, (np.diag(6 * x) + a + a.T) @ v, rtol=1e-12, atol=1e-12)


def test_batch_jacobian(params64: dict[str, np.ndarray]) -> None:
    w, xs = params64["w"], params64["xs"]

    def f(batch: Any) -> Any:
        return lnp.tanh(lnp.matmul(batch, w.T))  # (B, 4) -> (B, 3)

    got = lanes.batch_jacobian(f)(xs)
    want = np.stack([tanh_layer_jacobians(w, x)[0] for x in xs])
    assert got.shape == (5, 3, 4)
    assert_close(got, want, rtol=1e-10, atol=1e-12)


# ---- per-example gradients --------------------------------------------------------------------


def test_per_example_gradients(rng: np.random.Generator) -> None:
    w = rng.normal(size=(4,))
    xs = rng.normal(size=(6, 4))
    ys = rng.normal(size=(6,))

    def loss(w_: Any, x: Any, y: Any) -> Any:
        return (lnp.dot(x, w_) - y) ** 2

    got = lanes.vmap(lanes.grad(loss), in_axes=(None, 0, 0))(w, xs, ys)
    want = np.stack([2 * (x @ w - y) * x for x, y in zip(xs, ys)])
    assert_close(got, want, rtol=1e-12)


def test_per_example_gradients_mlp(params64: dict[str, np.ndarray]) -> None:
    w, b, xs = params64["w"], params64["b"], params64["xs"]
    got_w, got_b = lanes.vmap(lanes.grad(loss_lanes, argnums=(0, 1)),
                              in_axes=(None, None, 0))(w, b, xs)
    for i, x in enumerate(xs):
        assert_close(got_w[i], numeric_grad(lambda v: loss_np(v, b, x), w), rtol=1e-6,
                     atol=1e-8)
        assert_close(got_b[i], numeric_grad(lambda v: loss_np(w, v, x), b), rtol=1e-6,
                     atol=1e-8)


def test_per_example_gradients_with_aux_and_pytree(rng: np.random.Generator) -> None:
    p = {"w": rng.normal(size=(3,)), "c": np.float64(0.5)}
    xs = rng.normal(size=(4, 3))

    def loss(q: dict[str, Any], x: Any) -> tuple[Any, Any]:
        r = lnp.dot(q["w"], x) + q["c"]
        return r ** 2, r

    grads, aux = lanes.vmap(lanes.grad(loss, has_aux=True), in_axes=(None, 0))(p, xs)
    r = xs @ p["w"] + p["c"]
    assert_close(aux, r, rtol=1e-12)
    assert_close(grads["w"], 2 * r[:, None] * xs, rtol=1e-12)
    assert_close(grads["c"], 2 * r, rtol=1e-12)


# ---- looking inside ---------------------------------------------------------------------------


def test_explain_returns_text(params: dict[str, np.ndarray]) -> None:
    w, b, xs = params["w"], params["b"], params["xs"]
    text = lanes.explain(lanes.vmap(lambda x: mlp(lnp, w, b, x)))(xs)
    assert isinstance(text, str) and text.strip()
    assert "5" in text  # the batch size


def test_explain_needs_a_vmap() -> None:
    with pytest.raises(lanes.LanesError):
        lanes.explain(lambda x: x)(np.ones(2, np.float32))


def test_make_graph_returns_text(params: dict[str, np.ndarray]) -> None:
    w, b, x = params["w"], params["b"], params["xs"][0]
    graph = lanes.make_graph(lambda v: mlp(lnp, w, b, v))(x)
    text = str(graph)
    assert isinstance(text, str) and text.strip()
    assert "tanh" in text
    assert repr(graph) == text


def test_keyword_arguments_reach_the_function() -> None:
    # jax's rules: vmap maps keyword arguments over their axis 0; grad passes them through
    # undifferentiated; jit traces them (their names are part of the signature).
    x = np.array([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]], np.float32)
    s = np.array([2.0, 3.0], np.float32)
    lx = lanes.asarray(x)

    def scaled(a: Any, scale: Any = 1.0) -> Any:
        return a * scale

    assert_equal(lanes.vmap(scaled)(lx, scale=lanes.asarray(s)), x * s[:, None])
    cols = np.array([1.0, 2.0, 3.0], np.float32)
    assert_equal(lanes.vmap(scaled, in_axes=(1,))(lx, scale=lanes.asarray(cols)),
                 (x * cols).T)

    def loss(a: Any, scale: Any = 1.0) -> Any:
        return (a ** 2).sum() * scale

    assert_equal(lanes.grad(loss)(lx, scale=3.0), 2 * x * 3)
    assert_equal(lanes.grad(loss)(lx, scale=lanes.asarray(np.float32(3.0))), 2 * x * 3)
    jitted = lanes.jit(loss)
    assert float(jitted(lx, scale=2.0)) == float((x ** 2).sum() * 2)
    assert float(jitted(lx)) == float((x ** 2).sum())
    with_static = lanes.jit(lambda a, n, scale=1.0: a * n * scale, static_argnums=1)
    assert_equal(with_static(lx, 3, scale=lanes.asarray(np.float32(2.0))), x * 6)


def test_has_aux_in_jvp_and_jacobians() -> None:
    x = np.array([1.0, 2.0, 3.0], np.float32)
    lx = lanes.asarray(x)

    def f(v: Any) -> Any:
        return lnp.sin(v) * 2, {"total": v.sum()}

    value, tangent, aux = lanes.jvp(f, (lx,), (lanes.asarray(np.ones(3, np.float32)),),
                                    has_aux=True)
    assert_close(value, np.sin(x) * 2)
    assert_close(tangent, np.cos(x) * 2)
    assert float(aux["total"]) == 6.0
    for jacobian in (lanes.jacrev, lanes.jacfwd):
        jac, aux = jacobian(f, has_aux=True)(lx)
        assert_close(jac, np.diag(np.cos(x) * 2))
        assert float(aux["total"]) == 6.0
    hess, aux = lanes.hessian(lambda v: ((v ** 3).sum(), v * 2), has_aux=True)(lx)
    assert_close(hess, np.diag(6 * x))
    assert_equal(aux, x * 2)
