"""custom_vjp, custom_jvp and custom_vmap against independent references: numpy forward values,
the analytic derivative the custom rule states, float64 finite differences of a numerically
stable numpy function, and per-example numpy loops."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import lanes
import lanes.numpy as lnp
from conftest import assert_close, numeric_grad


def np_softplus(x: np.ndarray) -> np.ndarray:
    """log(1 + exp(x)) in float64, stable for every x."""
    return np.logaddexp(0.0, np.asarray(x, np.float64))


def np_sigmoid(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.float64)
    return 0.5 * (1 + np.tanh(x / 2))


@pytest.fixture
def xs(rng: np.random.Generator) -> np.ndarray:
    return rng.uniform(-2.0, 2.0, size=(5, 3)).astype(np.float32)


# ---- custom_vjp -------------------------------------------------------------------------------


def make_scaled_sin() -> lanes.custom_vjp:
    """sin(x) whose custom gradient is deliberately 3 * cos(x)."""

    @lanes.custom_vjp
    def f(x: Any) -> Any:
        return lnp.sin(x)

    def fwd(x: Any) -> Any:
        return lnp.sin(x), (lnp.cos(x),)

    def bwd(res: Any, g: Any) -> Any:
        return (3.0 * res[0] * g,)

    f.defvjp(fwd, bwd)
    return f


def test_custom_vjp_forward_is_f(xs: np.ndarray) -> None:
    f = make_scaled_sin()
    assert_close(f(xs), np.sin(xs))
    assert_close(lanes.jit(f)(xs), np.sin(xs))


def test_custom_vjp_grad_uses_bwd(xs: np.ndarray) -> None:
    f = make_scaled_sin()
    g = lanes.grad(lambda x: lnp.sum(f(x)))(xs)
    assert_close(g, 3.0 * np.cos(xs), rtol=1e-5)
    # vjp with a non-trivial cotangent
    ct = np.linspace(-1, 1, xs.size, dtype=np.float32).reshape(xs.shape)
    out, f_vjp = lanes.vjp(f, xs)
    assert_close(out, np.sin(xs))
    (gx,) = f_vjp(ct)
    assert_close(gx, 3.0 * np.cos(xs) * ct, rtol=1e-5)


def make_log1pexp() -> lanes.custom_vjp:
    """log(1 + exp(x)) whose custom gradient 1 - 1 / (1 + exp(x)) stays finite at large x."""

    @lanes.custom_vjp
    def log1pexp(x: Any) -> Any:
        return lnp.log(1.0 + lnp.exp(x))

    def fwd(x: Any) -> Any:
        return lnp.log(1.0 + lnp.exp(x)), x

    def bwd(x: Any, g: Any) -> Any:
        return (g * (1.0 - 1.0 / (1.0 + lnp.exp(x))),)

    log1pexp.defvjp(fwd, bwd)
    return log1pexp


def test_custom_vjp_stable_log1pexp_gradient() -> None:
    f = make_log1pexp()
    moderate = np.array([-5.0, -1.0, 0.0, 2.0, 10.0], np.float32)
    assert_close(f(moderate), np_softplus(moderate), rtol=1e-5)
    x = np.array([-20.0, -5.0, 0.0, 5.0, 50.0, 100.0], np.float32)
    g = np.asarray(lanes.grad(lambda v: lnp.sum(f(v)))(x))
    want = numeric_grad(lambda v: np.sum(np_softplus(v)), x, eps=1e-4)
    assert np.isfinite(g).all()
    assert_close(g, want, rtol=1e-4, atol=1e-6)
    # the naive gradient of the same expression is NaN at 100 (inf / inf): the rule matters
    naive = np.asarray(lanes.grad(lambda v: lnp.sum(lnp.log(1.0 + lnp.exp(v))))(x))
    assert not np.isfinite(naive[-1])


def test_custom_vjp_none_cotangent_is_zero(xs: np.ndarray) -> None:
    @lanes.custom_vjp
    def mul(x: Any, y: Any) -> Any:
        return x * y

    mul.defvjp(lambda x, y: (x * y, (x, y)), lambda r, g: (None, 2.0 * g * r[0]))
    y = xs + 1.0
    assert_close(mul(xs, y), xs * y)
    gx, gy = lanes.grad(lambda a, b: lnp.sum(mul(a, b)), argnums=(0, 1))(xs, y)
    assert_close(gx, np.zeros_like(xs))
    assert_close(gy, 2.0 * xs)


def test_custom_vjp_none_cotangent_for_pytree_argument(rng: np.random.Generator) -> None:
    p = {"a": rng.normal(size=(2,)).astype(np.float32), "b": np.float32(1.5)}
    x = rng.normal(size=(2,)).astype(np.float32)

    @lanes.custom_vjp
    def f(q: Any, v: Any) -> Any:
        return lnp.sum(q["a"] * v) * q["b"]

    f.defvjp(lambda q, v: (lnp.sum(q["a"] * v) * q["b"], q),
             lambda q, g: (None, g * q["a"] * q["b"]))
    gp, gx = lanes.grad(f, argnums=(0, 1))(p, x)
    assert_close(gp["a"], np.zeros(2))
    assert_close(gp["b"], 0.0)
    assert_close(gx, p["a"] * 1.5, rtol=1e-6)


def test_custom_vjp_multiple_arguments(rng: np.random.Generator) -> None:
    a = rng.normal(size=(4,)).astype(np.float32)
    b = rng.normal(size=(4,)).astype(np.float32)

    @lanes.custom_vjp
    def f(x: Any, y: Any) -> Any:
        return x * lnp.exp(y)

    def fwd(x: Any, y: Any) -> Any:
        e = lnp.exp(y)
        return x * e, (x, e)

    def bwd(res: Any, g: Any) -> Any:
        x, e = res
        return (g * e, g * x * e)  # the true derivative, given by hand

    f.defvjp(fwd, bwd)
    loss = lambda x, y: lnp.sum(f(x, y) ** 2)  # noqa: E731
    ga, gb = lanes.grad(loss, argnums=(0, 1))(a, b)
    ref = lambda x, y: np.sum((x * np.exp(y)) ** 2)  # noqa: E731
    assert_close(ga, numeric_grad(lambda x: ref(x, b.astype(np.float64)), a), rtol=1e-4)
    assert_close(gb, numeric_grad(lambda y: ref(a.astype(np.float64), y), b), rtol=1e-4)


def test_custom_vjp_pytree_arguments(rng: np.random.Generator) -> None:
    p = {"w": rng.normal(size=(3, 2)).astype(np.float32), "b": rng.normal(size=(3,)).astype(
        np.float32)}
    x = rng.normal(size=(2,)).astype(np.float32)

    @lanes.custom_vjp
    def affine(params: Any, v: Any) -> Any:
        return lnp.matmul(params["w"], v) + params["b"]

    def fwd(params: Any, v: Any) -> Any:
        return lnp.matmul(params["w"], v) + params["b"], (params, v)

    def bwd(res: Any, g: Any) -> Any:
        params, v = res
        # deliberately halved gradient for w, true ones for b and v
        gw = 0.5 * g[:, None] * v[None, :]
        return ({"w": gw, "b": g}, lnp.matmul(params["w"].T, g))

    affine.defvjp(fwd, bwd)
    assert_close(affine(p, x), p["w"] @ x + p["b"])
    gp, gx = lanes.grad(lambda q, v: lnp.sum(affine(q, v) ** 2), argnums=(0, 1))(p, x)
    r = 2 * (p["w"] @ x + p["b"])
    assert set(gp) == {"w", "b"}
    assert_close(gp["w"], 0.5 * np.outer(r, x), rtol=1e-5)
    assert_close(gp["b"], r, rtol=1e-5)
    assert_close(gx, p["w"].T @ r, rtol=1e-5)


def test_custom_vjp_tuple_output(xs: np.ndarray) -> None:
    @lanes.custom_vjp
    def sincos(x: Any) -> Any:
        return lnp.sin(x), lnp.cos(x)

    def fwd(x: Any) -> Any:
        return (lnp.sin(x), lnp.cos(x)), x

    def bwd(x: Any, g: Any) -> Any:
        gs, gc = g
        return (10.0 * gs + 100.0 * gc,)  # marks which output's cotangent went where

    sincos.defvjp(fwd, bwd)
    s, c = sincos(xs)
    assert_close(s, np.sin(xs))
    assert_close(c, np.cos(xs))
    g = lanes.grad(lambda x: lnp.sum(2.0 * sincos(x)[0] + 3.0 * sincos(x)[1]))(xs)
    assert_close(g, np.full_like(xs, 2.0 * 10.0 + 3.0 * 100.0))


def test_custom_vjp_vmap_per_example_grads_equal_loop(rng: np.random.Generator) -> None:
    f = make_scaled_sin()
    w = rng.normal(size=(3,)).astype(np.float32)
    batch = rng.normal(size=(6, 3)).astype(np.float32)
    loss = lambda w_, x: lnp.sum(f(w_ * x))  # noqa: E731
    got = lanes.vmap(lanes.grad(loss), in_axes=(None, 0))(w, batch)
    want = np.stack([3.0 * np.cos(w * x) * x for x in batch])  # the custom rule, per example
    assert_close(got, want, rtol=1e-5)
    # the forward under vmap is f per example
    assert_close(lanes.vmap(f)(batch), np.sin(batch))


def test_custom_vjp_per_example_clipping_under_vmap(rng: np.random.Generator) -> None:
    """A bwd that clips one example's cotangent to norm 1 clips each example under vmap."""

    @lanes.custom_vjp
    def clip_grad(x: Any) -> Any:
        return x

    def bwd(_: Any, g: Any) -> Any:
        norm = lnp.sqrt(lnp.sum(g * g))
        return (g / lnp.maximum(norm, 1.0),)

    clip_grad.defvjp(lambda x: (x, ()), bwd)
    scales = np.array([0.1, 1.0, 5.0, 30.0], np.float32)
    batch = rng.normal(size=(4, 3)).astype(np.float32)
    got = np.asarray(lanes.vmap(lanes.grad(lambda x, s: s * lnp.sum(clip_grad(x))),
                                in_axes=(0, 0))(batch, scales))
    want = []
    for s in scales:
        gvec = np.full(3, s, np.float64)
        want.append(gvec / max(np.linalg.norm(gvec), 1.0))
    assert_close(got, np.stack(want), rtol=1e-5)


def test_custom_vjp_under_jit(xs: np.ndarray) -> None:
    f = make_scaled_sin()
    g = lanes.jit(lanes.grad(lambda x: lnp.sum(f(x))))
    assert_close(g(xs), 3.0 * np.cos(xs), rtol=1e-5)
    assert_close(g(xs * 0.5), 3.0 * np.cos(xs * 0.5), rtol=1e-5)
    # jit inside grad too
    g2 = lanes.grad(lambda x: lnp.sum(lanes.jit(f)(x)))
    assert_close(g2(xs), 3.0 * np.cos(xs), rtol=1e-5)
    # and vmap of it under jit
    g3 = lanes.jit(lanes.vmap(lanes.grad(lambda x: lnp.sum(f(x)))))
    assert_close(g3(xs), 3.0 * np.cos(xs), rtol=1e-5)


def test_custom_vjp_forward_mode_differentiates_f(xs: np.ndarray) -> None:
    """Documented (lanes/custom.h): jvp of a custom_vjp function takes f's own derivative."""
    f = make_scaled_sin()
    t = np.ones_like(xs)
    out, tan = lanes.jvp(f, (xs,), (t,))
    assert_close(out, np.sin(xs))
    assert_close(tan, np.cos(xs), rtol=1e-5)


def test_custom_vjp_fwd_may_call_f(xs: np.ndarray) -> None:
    """The idiom of jax's docs and of lanes' own docstring: fwd returns ``f(x), residuals``."""

    @lanes.custom_vjp
    def f(x: Any) -> Any:
        return lnp.sin(x)

    def f_fwd(x: Any) -> Any:
        return f(x), lnp.cos(x)

    def f_bwd(cos_x: Any, g: Any) -> Any:
        return (2.0 * cos_x * g,)

    f.defvjp(f_fwd, f_bwd)
    assert_close(f(xs), np.sin(xs))
    assert_close(lanes.grad(lambda x: lnp.sum(f(x)))(xs), 2.0 * np.cos(xs), rtol=1e-5)


def test_custom_vjp_errors(xs: np.ndarray) -> None:
    @lanes.custom_vjp
    def f(x: Any) -> Any:
        return x * 2.0

    with pytest.raises(lanes.LanesError):
        f(xs)  # no defvjp

    f.defvjp(lambda x: x * 2.0, lambda r, g: (g,))  # fwd not returning a pair
    with pytest.raises(lanes.LanesError):
        lanes.grad(lambda x: lnp.sum(f(x)))(xs)

    @lanes.custom_vjp
    def h(x: Any, y: Any) -> Any:
        return x * y

    h.defvjp(lambda x, y: (x * y, (x, y)), lambda r, g: (g,))  # one cotangent for two args
    with pytest.raises(lanes.LanesError):
        lanes.grad(lambda x: lnp.sum(h(x, x)))(xs)


# ---- custom_jvp -------------------------------------------------------------------------------


def make_scaled_sin_jvp() -> lanes.custom_jvp:
    """sin(x) whose custom tangent is deliberately 2 * cos(x) * t."""

    @lanes.custom_jvp
    def f(x: Any) -> Any:
        return lnp.sin(x)

    @f.defjvp
    def f_jvp(primals: Any, tangents: Any) -> Any:
        (x,), (t,) = primals, tangents
        return lnp.sin(x), 2.0 * lnp.cos(x) * t

    return f


def test_custom_jvp_forward_and_jvp_use_rule(xs: np.ndarray) -> None:
    f = make_scaled_sin_jvp()
    assert_close(f(xs), np.sin(xs))
    t = np.linspace(-1.0, 2.0, xs.size, dtype=np.float32).reshape(xs.shape)
    out, tan = lanes.jvp(f, (xs,), (t,))
    assert_close(out, np.sin(xs))
    assert_close(tan, 2.0 * np.cos(xs) * t, rtol=1e-5)


def test_custom_jvp_grad_transposes_rule(xs: np.ndarray) -> None:
    f = make_scaled_sin_jvp()
    assert_close(lanes.grad(lambda x: lnp.sum(f(x)))(xs), 2.0 * np.cos(xs), rtol=1e-5)
    ct = np.arange(xs.size, dtype=np.float32).reshape(xs.shape)
    _, f_vjp = lanes.vjp(f, xs)
    assert_close(f_vjp(ct)[0], 2.0 * np.cos(xs) * ct, rtol=1e-5)


def test_custom_jvp_vmap(xs: np.ndarray) -> None:
    f = make_scaled_sin_jvp()
    assert_close(lanes.vmap(f)(xs), np.sin(xs))
    got = lanes.vmap(lanes.grad(lambda x: lnp.sum(f(x) ** 2)))(xs)
    want = np.stack([2.0 * np.sin(x) * 2.0 * np.cos(x) for x in xs])  # chain rule over the rule
    assert_close(got, want, rtol=1e-5)
    t = np.ones_like(xs)
    _, tan = lanes.vmap(lambda x, v: lanes.jvp(f, (x,), (v,)))(xs, t)
    assert_close(tan, 2.0 * np.cos(xs), rtol=1e-5)
    assert_close(lanes.jit(lanes.vmap(lanes.grad(lambda x: lnp.sum(f(x)))))(xs),
                 2.0 * np.cos(xs), rtol=1e-5)


def test_custom_jvp_stable_softplus() -> None:
    """The example of lanes/custom.h: where(x > 30, x, log1p(exp(x))) with tangent sigmoid(x) t;
    the naive derivative is NaN at 1000 (0 * inf from the branch where() did not take)."""

    def raw(x: Any) -> Any:
        return lnp.where(x > 30.0, x, lnp.log1p(lnp.exp(x)))

    @lanes.custom_jvp
    def softplus(x: Any) -> Any:
        return raw(x)

    @softplus.defjvp
    def softplus_jvp(primals: Any, tangents: Any) -> Any:
        (x,), (t,) = primals, tangents
        return raw(x), t * lanes.nn.sigmoid(x)

    x = np.array([-30.0, -3.0, 0.0, 3.0, 29.0, 31.0, 1000.0], np.float32)
    assert_close(softplus(x), np_softplus(x), rtol=1e-5)
    g = lanes.grad(lambda v: lnp.sum(softplus(v)))(x)
    assert_close(g, numeric_grad(lambda v: np.sum(np_softplus(v)), x, eps=1e-4), rtol=1e-4,
                 atol=1e-6)
    assert_close(lanes.vmap(lanes.grad(softplus))(x), np_sigmoid(x), rtol=1e-5, atol=1e-7)


def test_custom_jvp_multiple_arguments(rng: np.random.Generator) -> None:
    a = rng.normal(size=(4,)).astype(np.float32)
    b = rng.normal(size=(4,)).astype(np.float32)

    @lanes.custom_jvp
    def f(x: Any, y: Any) -> Any:
        return x * y

    @f.defjvp
    def f_jvp(primals: Any, tangents: Any) -> Any:
        (x, y), (tx, ty) = primals, tangents
        return x * y, 5.0 * tx * y + x * ty  # the x-derivative deliberately scaled by 5

    assert_close(f(a, b), a * b)
    ga, gb = lanes.grad(lambda x, y: lnp.sum(f(x, y)), argnums=(0, 1))(a, b)
    assert_close(ga, 5.0 * b, rtol=1e-5)
    assert_close(gb, a, rtol=1e-5)
    _, tan = lanes.jvp(f, (a, b), (np.ones_like(a), np.zeros_like(b)))
    assert_close(tan, 5.0 * b, rtol=1e-5)


def test_custom_jvp_pytree_argument(rng: np.random.Generator) -> None:
    p = {"a": rng.normal(size=(3,)).astype(np.float32), "b": np.float32(0.7)}

    @lanes.custom_jvp
    def f(q: Any) -> Any:
        return lnp.sum(q["a"] * q["b"])

    @f.defjvp
    def f_jvp(primals: Any, tangents: Any) -> Any:
        (q,), (t,) = primals, tangents
        return lnp.sum(q["a"] * q["b"]), lnp.sum(t["a"] * q["b"] + q["a"] * t["b"])

    g = lanes.grad(f)(p)
    assert_close(g["a"], np.full(3, 0.7), rtol=1e-5)
    assert_close(g["b"], np.sum(p["a"]), rtol=1e-5)


def test_custom_jvp_rule_may_call_f(xs: np.ndarray) -> None:
    """The idiom of jax's docs and of lanes' own docstring: the rule returns ``f(*primals)``."""

    @lanes.custom_jvp
    def f(x: Any) -> Any:
        return lnp.sin(x)

    @f.defjvp
    def f_jvp(primals: Any, tangents: Any) -> Any:
        (x,), (t,) = primals, tangents
        return f(x), 2.0 * lnp.cos(x) * t

    assert_close(f(xs), np.sin(xs))
    assert_close(lanes.grad(lambda x: lnp.sum(f(x)))(xs), 2.0 * np.cos(xs), rtol=1e-5)


def test_custom_jvp_missing_rule_raises(xs: np.ndarray) -> None:
    @lanes.custom_jvp
    def f(x: Any) -> Any:
        return x

    with pytest.raises(lanes.LanesError):
        f(xs)

    @lanes.custom_jvp
    def g(x: Any) -> Any:
        return x

    g.defjvp(lambda p, t: p[0])  # not a pair
    with pytest.raises(lanes.LanesError):
        lanes.jvp(g, (xs,), (xs,))


# ---- custom_vmap ------------------------------------------------------------------------------


def test_custom_vmap_rule_runs_under_vmap(rng: np.random.Generator) -> None:
    calls: list[tuple[int, Any]] = []

    @lanes.custom_vmap
    def dot(x: Any, y: Any) -> Any:
        return lnp.sum(x * y)

    @dot.def_vmap
    def dot_rule(axis_size: int, in_batched: Any, x: Any, y: Any) -> Any:
        calls.append((axis_size, in_batched))
        # a different batched formula: one matmul of the (B, n) batch with the shared y
        assert in_batched == (True, False)
        return lnp.matmul(x, y), True

    xs = rng.normal(size=(6, 4)).astype(np.float32)
    y = rng.normal(size=(4,)).astype(np.float32)
    # eager call: f, not the rule
    assert_close(dot(xs[0], y), np.dot(xs[0], y), rtol=1e-5)
    assert calls == []
    got = lanes.vmap(dot, in_axes=(0, None))(xs, y)
    assert_close(got, np.stack([np.dot(x, y) for x in xs]), rtol=1e-5)
    assert len(calls) >= 1
    assert calls[-1] == (6, (True, False))


def test_custom_vmap_rule_result_is_what_vmap_returns(rng: np.random.Generator) -> None:
    """The rule's value is used (not f's): a rule that adds 100 shows up in the result."""

    @lanes.custom_vmap
    def f(x: Any) -> Any:
        return x * 2.0

    @f.def_vmap
    def rule(n: int, in_batched: Any, x: Any) -> Any:
        return x * 2.0 + 100.0, True

    xs = rng.normal(size=(3, 2)).astype(np.float32)
    assert_close(f(xs[0]), xs[0] * 2.0)
    assert_close(lanes.vmap(f)(xs), xs * 2.0 + 100.0)


def test_custom_vmap_in_batched_flags(rng: np.random.Generator) -> None:
    seen: list[Any] = []

    @lanes.custom_vmap
    def f(x: Any, y: Any) -> Any:
        return x + y

    @f.def_vmap
    def rule(n: int, in_batched: Any, x: Any, y: Any) -> Any:
        seen.append(tuple(in_batched))
        return x + y, bool(in_batched[0] or in_batched[1])

    a = rng.normal(size=(4, 3)).astype(np.float32)
    b = rng.normal(size=(4, 3)).astype(np.float32)
    assert_close(lanes.vmap(f, in_axes=(0, 0))(a, b), a + b)
    assert seen[-1] == (True, True)
    assert_close(lanes.vmap(f, in_axes=(0, None))(a, b[0]), a + b[0])
    assert seen[-1] == (True, False)
    assert_close(lanes.vmap(f, in_axes=(None, 0))(a[0], b), a[0] + b)
    assert seen[-1] == (False, True)


def test_custom_vmap_unbatched_output_broadcasts(rng: np.random.Generator) -> None:
    @lanes.custom_vmap
    def f(x: Any, y: Any) -> Any:
        return x * 0.0 + lnp.sum(y)

    @f.def_vmap
    def rule(n: int, in_batched: Any, x: Any, y: Any) -> Any:
        assert not in_batched[1]
        return lnp.sum(y), False  # the same for every example: unbatched

    xs = rng.normal(size=(5,)).astype(np.float32)
    y = rng.normal(size=(3,)).astype(np.float32)
    got = lanes.vmap(f, in_axes=(0, None))(xs, y)
    assert_close(got, np.full(5, y.sum()), rtol=1e-5)


def test_custom_vmap_pytree_argument(rng: np.random.Generator) -> None:
    seen: list[Any] = []

    @lanes.custom_vmap
    def f(p: Any, x: Any) -> Any:
        return p["w"] * x + p["b"]

    @f.def_vmap
    def rule(n: int, in_batched: Any, p: Any, x: Any) -> Any:
        seen.append(in_batched)
        return p["w"] * x + p["b"], True

    p = {"w": rng.normal(size=(3,)).astype(np.float32), "b": rng.normal(size=(3,)).astype(
        np.float32)}
    xs = rng.normal(size=(4, 3)).astype(np.float32)
    got = lanes.vmap(f, in_axes=(None, 0))(p, xs)
    assert_close(got, np.stack([p["w"] * x + p["b"] for x in xs]), rtol=1e-5)
    in_batched = seen[-1]
    assert in_batched[0] == {"w": False, "b": False} and in_batched[1] is True


def test_custom_vmap_nested_vmap_equals_loop(rng: np.random.Generator) -> None:
    sizes: list[int] = []

    @lanes.custom_vmap
    def f(x: Any) -> Any:
        return lnp.sum(x * x)

    @f.def_vmap
    def rule(n: int, in_batched: Any, x: Any) -> Any:
        sizes.append(n)
        return lnp.sum(x * x, axis=-1), True

    xs = rng.normal(size=(3, 4, 5)).astype(np.float32)
    got = lanes.vmap(lanes.vmap(f))(xs)
    assert_close(got, np.array([[np.sum(v * v) for v in row] for row in xs]), rtol=1e-5)
    assert 4 in sizes


def test_custom_vmap_jit_and_grad(rng: np.random.Generator) -> None:
    calls = []

    @lanes.custom_vmap
    def f(x: Any) -> Any:
        return lnp.sin(x) * x

    @f.def_vmap
    def rule(n: int, in_batched: Any, x: Any) -> Any:
        calls.append(n)
        return x * lnp.sin(x), True  # the same function, written the other way round

    xs = rng.normal(size=(4, 3)).astype(np.float32)
    assert_close(lanes.jit(f)(xs[0]), np.sin(xs[0]) * xs[0], rtol=1e-5)
    assert_close(lanes.jit(lanes.vmap(f))(xs), np.sin(xs) * xs, rtol=1e-5)
    assert calls and calls[-1] == 4
    # reverse mode differentiates f; per-example grads equal the loop's finite differences
    got = lanes.vmap(lanes.grad(lambda x: lnp.sum(f(x))))(xs)
    want = np.stack([numeric_grad(lambda v: np.sum(np.sin(v) * v), x) for x in xs])
    assert_close(got, want, rtol=1e-4, atol=1e-5)


def test_custom_vmap_missing_rule_raises(rng: np.random.Generator) -> None:
    @lanes.custom_vmap
    def f(x: Any) -> Any:
        return x

    with pytest.raises(lanes.LanesError):
        f(np.ones(3, np.float32))
    with pytest.raises(lanes.LanesError):
        lanes.vmap(f)(np.ones((2, 3), np.float32))


def test_custom_vmap_rule_mismatched_out_batched_raises() -> None:
    @lanes.custom_vmap
    def f(x: Any) -> Any:
        return x, x

    @f.def_vmap
    def rule(n: int, in_batched: Any, x: Any) -> Any:
        return (x, x), [True]  # two outputs, one flag

    with pytest.raises(lanes.LanesError):
        lanes.vmap(f)(np.ones((2, 3), np.float32))


def test_custom_vjp_nondiff_argnums_pass_functions_and_constants_through() -> None:
    import functools

    @functools.partial(lanes.custom_vjp, nondiff_argnums=(0, 2))
    def scaled_apply(f: Any, x: Any, scale: float) -> Any:
        return f(x) * scale

    def fwd(f: Any, x: Any, scale: float) -> Any:
        return f(x) * scale, x

    def bwd(f: Any, scale: float, x: Any, g: Any) -> Any:  # nondiff first, as in jax
        return (g * scale * lnp.cos(x),)

    scaled_apply.defvjp(fwd, bwd)
    x = np.array([0.5, 1.0, 2.0], np.float32)
    lx = lanes.asarray(x)
    assert_close(scaled_apply(lnp.sin, lx, 3.0), np.sin(x) * 3)
    got = lanes.vmap(lanes.grad(lambda v: scaled_apply(lnp.sin, v, 3.0)))(lx)
    assert_close(got, 3 * np.cos(x))
    with pytest.raises(lanes.LanesError, match="one per differentiated argument"):
        bad = lanes.custom_vjp(lambda f, v: f(v), nondiff_argnums=(0,))
        bad.defvjp(lambda f, v: (f(v), v), lambda f, r, g: (g, g))
        lanes.grad(lambda v: bad(lnp.sin, v))(lanes.asarray(np.float32(1.0)))


def test_custom_jvp_defjvps_one_rule_per_argument() -> None:
    @lanes.custom_jvp
    def f(x: Any, y: Any) -> Any:
        return lnp.sin(x) * y

    f.defjvps(lambda tx, ans, x, y: lnp.cos(x) * y * tx, lambda ty, ans, x, y: lnp.sin(x) * ty)
    x, y = np.float32(0.5), np.float32(3.0)
    gx, gy = lanes.grad(f, argnums=(0, 1))(lanes.asarray(x), lanes.asarray(y))
    assert_close(gx, np.cos(x) * y)
    assert_close(gy, np.sin(x))

    @lanes.custom_jvp
    def scaled(v: Any, n: Any) -> Any:
        return v * n

    scaled.defjvps(lambda t, ans, v, n: t * n, None)  # no rule: no tangent through n
    assert float(lanes.grad(scaled, argnums=1)(lanes.asarray(x), lanes.asarray(y))) == 0.0
    assert float(lanes.grad(scaled)(lanes.asarray(x), lanes.asarray(y))) == 3.0
