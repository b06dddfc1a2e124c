"""lax control flow (cond, switch, while_loop, fori_loop, scan, map) and dynamic slices against
Python references: eager, under vmap (each strategy), under grad and under jit."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

import lanes
import lanes.numpy as lnp
from conftest import assert_close, assert_equal, numeric_grad
from lanes import lax

COND_STRATEGIES = ["auto", "select", "partition"]
LOOP_STRATEGIES = ["auto", "mask", "compact"]


@pytest.fixture
def xs(rng: np.random.Generator) -> np.ndarray:
    """A batch whose rows send lax.cond different ways (row sums of both signs)."""
    x = rng.normal(size=(6, 3)).astype(np.float32)
    x[::2] = np.abs(x[::2])
    x[1::2] = -np.abs(x[1::2])
    return x


# ---- cond -------------------------------------------------------------------------------------


def branchy(x: Any) -> Any:
    return lax.cond(lnp.sum(x) > 0, lambda v: lnp.sin(v) * 2.0, lambda v: v * v - 1.0, x)


def branchy_ref(x: np.ndarray) -> np.ndarray:
    return np.sin(x) * 2.0 if x.sum() > 0 else x * x - 1.0


@pytest.mark.parametrize("pred", [True, False, 1, 0, np.bool_(True), np.int32(0)])
def test_cond_eager_python_predicates(pred: Any) -> None:
    x = np.array([1.0, 2.0], np.float32)
    got = lax.cond(pred, lambda v: v + 1.0, lambda v: v - 1.0, x)
    assert_close(got, x + 1 if pred else x - 1)


def test_cond_eager_array_predicate(xs: np.ndarray) -> None:
    for x in xs:
        assert_close(branchy(x), branchy_ref(x))


def test_cond_multiple_operands_and_pytree_output() -> None:
    a, b = np.float32(2.0), np.array([1.0, 3.0], np.float32)
    out = lax.cond(a > 1.0, lambda p, q: {"s": p * q, "t": (q,)},
                   lambda p, q: {"s": q - p, "t": (q * 0.0,)}, a, b)
    assert_close(out["s"], a * b)
    assert_close(out["t"][0], b)


def test_cond_no_operands() -> None:
    assert_close(lax.cond(False, lambda: lnp.ones(2), lambda: lnp.zeros(2)), np.zeros(2))


def test_cond_branches_close_over_values(xs: np.ndarray) -> None:
    w = np.float32(3.0)
    got = lax.cond(True, lambda: xs * w, lambda: xs)
    assert_close(got, xs * 3)


@pytest.mark.parametrize("strategy", COND_STRATEGIES)
def test_cond_under_vmap(xs: np.ndarray, strategy: str) -> None:
    got = lanes.vmap(branchy, cond=strategy)(xs)
    assert_close(got, np.stack([branchy_ref(x) for x in xs]))


@pytest.mark.parametrize("strategy", COND_STRATEGIES)
def test_cond_under_vmap_all_same_way(xs: np.ndarray, strategy: str) -> None:
    pos = np.abs(xs) + 0.1
    assert_close(lanes.vmap(branchy, cond=strategy)(pos), np.stack([branchy_ref(x) for x in pos]))
    neg = -pos
    assert_close(lanes.vmap(branchy, cond=strategy)(neg), np.stack([branchy_ref(x) for x in neg]))


@pytest.mark.parametrize("strategy", COND_STRATEGIES)
def test_cond_under_vmap_unbatched_operand(xs: np.ndarray, strategy: str) -> None:
    w = np.array([1.0, -2.0, 0.5], np.float32)

    def f(x: Any, w_: Any) -> Any:
        return lax.cond(lnp.sum(x) > 0, lambda v, u: v * u, lambda v, u: u - 1.0, x, w_)

    got = lanes.vmap(f, in_axes=(0, None), cond=strategy)(xs, w)
    want = np.stack([x * w if x.sum() > 0 else w - 1 for x in xs])
    assert_close(got, want)


@pytest.mark.parametrize("strategy", COND_STRATEGIES)
def test_cond_under_vmap_unbatched_predicate(xs: np.ndarray, strategy: str) -> None:
    def f(flag: Any, x: Any) -> Any:
        return lax.cond(flag, lambda v: v * 2.0, lambda v: v + 10.0, x)

    assert_close(lanes.vmap(f, in_axes=(None, 0), cond=strategy)(True, xs), xs * 2)
    assert_close(lanes.vmap(f, in_axes=(None, 0), cond=strategy)(False, xs), xs + 10)


def test_cond_under_grad(rng: np.random.Generator) -> None:
    def f(x: Any) -> Any:
        return lnp.sum(lax.cond(lnp.sum(x) > 0, lambda v: lnp.sin(v) * v, lambda v: v ** 3, x))

    def f_np(x: np.ndarray) -> float:
        return float(np.sum(np.sin(x) * x if x.sum() > 0 else x ** 3))

    for x in (np.abs(rng.normal(size=3)), -np.abs(rng.normal(size=3))):
        assert_close(lanes.grad(f)(x), numeric_grad(f_np, x), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("strategy", COND_STRATEGIES)
def test_cond_per_example_grad(xs: np.ndarray, strategy: str) -> None:
    xs64 = xs.astype(np.float64)

    def f(x: Any) -> Any:
        return lnp.sum(branchy(x))

    got = lanes.vmap(lanes.grad(f), cond=strategy)(xs64)
    want = np.stack([numeric_grad(lambda v: branchy_ref(v).sum(), x) for x in xs64])
    assert_close(got, want, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("strategy", COND_STRATEGIES)
def test_cond_gradient_never_sees_the_branch_not_taken(strategy: str) -> None:
    # sqrt of a negative number is NaN: the lanes with x <= 0 must not pick up its gradient.
    xs = np.array([-1.0, 4.0, 0.0, 9.0, -4.0], np.float64)

    def f(x: Any) -> Any:
        return lax.cond(x > 0, lnp.sqrt, lambda v: v * 0.0, x)

    got = lanes.vmap(lanes.grad(f), cond=strategy)(xs)
    want = np.where(xs > 0, 0.5 / np.sqrt(np.maximum(np.abs(xs), 1e-300)), 0.0)
    assert not np.isnan(np.asarray(got)).any()
    assert_close(got, want, rtol=1e-12)
    assert_close(lanes.vmap(f, cond=strategy)(xs), np.sqrt(np.maximum(xs, 0.0)), rtol=1e-12)


def test_cond_under_jit(xs: np.ndarray) -> None:
    calls = []

    def f(x: Any) -> Any:
        calls.append(1)
        return branchy(x)

    g = lanes.jit(f)
    for x in xs:
        assert_close(g(x), branchy_ref(x))
    assert len(calls) == 1  # both branches traced once; the predicate decides at run time


def test_cond_branch_mismatch_raises() -> None:
    x = np.ones(2, np.float32)
    with pytest.raises(lanes.LanesError):
        lax.cond(True, lambda v: v, lambda v: (v, v), x)
    with pytest.raises(lanes.LanesError):
        lax.cond(True, lambda v: v, lambda v: lnp.sum(v), x)


# ---- switch -----------------------------------------------------------------------------------

BRANCHES: list[Callable[[Any], Any]] = [lambda v: v + 1.0, lambda v: v * 2.0,
                                        lambda v: lnp.sin(v)]
BRANCHES_NP: list[Callable[[np.ndarray], np.ndarray]] = [lambda v: v + 1.0, lambda v: v * 2.0,
                                                         np.sin]


@pytest.mark.parametrize("index, chosen", [(0, 0), (1, 1), (2, 2), (3, 2), (7, 2), (-1, 0)])
def test_switch_eager_clamps(index: int, chosen: int) -> None:
    x = np.array([0.5, -1.0], np.float32)
    assert_close(lax.switch(index, BRANCHES, x), BRANCHES_NP[chosen](x))
    assert_close(lax.switch(np.int32(index), BRANCHES, x), BRANCHES_NP[chosen](x))


@pytest.mark.parametrize("strategy", COND_STRATEGIES)
def test_switch_under_vmap(xs: np.ndarray, strategy: str) -> None:
    idx = np.array([0, 1, 2, 5, -3, 1], np.int32)
    got = lanes.vmap(lambda i, x: lax.switch(i, BRANCHES, x), cond=strategy)(idx, xs)
    want = np.stack([BRANCHES_NP[int(np.clip(i, 0, 2))](x) for i, x in zip(idx, xs)])
    assert_close(got, want)


def test_switch_under_grad_and_jit(rng: np.random.Generator) -> None:
    x = rng.normal(size=3)
    for i in range(3):
        g = lanes.grad(lambda v: lnp.sum(lax.switch(i, BRANCHES, v) ** 2))(x)
        want = numeric_grad(lambda v: float(np.sum(BRANCHES_NP[i](v) ** 2)), x)
        assert_close(g, want, rtol=1e-6, atol=1e-8)
    f = lanes.jit(lambda i, v: lax.switch(i, BRANCHES, v))
    for i in range(3):
        assert_close(f(np.int32(i), x), BRANCHES_NP[i](x), rtol=1e-12)


# ---- while_loop / fori_loop -------------------------------------------------------------------


def doubling(x: Any) -> Any:
    """Doubles x until its sum of squares reaches 50; returns (steps, x)."""
    return lax.while_loop(lambda c: lnp.sum(c[1] * c[1]) < 50.0,
                          lambda c: (c[0] + 1, c[1] * 2.0), (0, x))


def doubling_ref(x: np.ndarray) -> tuple[int, np.ndarray]:
    n = 0
    while np.sum(x * x) < 50.0:
        n, x = n + 1, x * 2.0
    return n, x


@pytest.fixture
def loop_xs(rng: np.random.Generator) -> np.ndarray:
    """Rows that need different trip counts (0 to ~8)."""
    x = rng.normal(size=(6, 2)).astype(np.float32)
    scales = np.array([10.0, 0.05, 1.0, 0.3, 3.0, 0.01], np.float32)
    return x * scales[:, None]


def test_while_loop_eager(loop_xs: np.ndarray) -> None:
    for x in loop_xs:
        n, out = doubling(x)
        n_ref, out_ref = doubling_ref(x)
        assert int(n) == n_ref
        assert_close(out, out_ref)


def test_while_loop_zero_trips() -> None:
    x = np.array([100.0], np.float32)
    n, out = doubling(x)
    assert int(n) == 0
    assert_close(out, x)


@pytest.mark.parametrize("strategy", LOOP_STRATEGIES)
def test_while_loop_under_vmap(loop_xs: np.ndarray, strategy: str) -> None:
    n, out = lanes.vmap(doubling, loop=strategy)(loop_xs)
    refs = [doubling_ref(x) for x in loop_xs]
    assert len({r[0] for r in refs}) > 2  # the trip counts differ between examples
    assert_equal(n, np.array([r[0] for r in refs], np.int32))
    assert_close(out, np.stack([r[1] for r in refs]))


@pytest.mark.parametrize("strategy", LOOP_STRATEGIES)
def test_while_loop_under_vmap_with_unbatched_carry(loop_xs: np.ndarray, strategy: str) -> None:
    def f(x: Any, limit: Any) -> Any:
        return lax.while_loop(lambda c: c[0] < limit, lambda c: (c[0] + lnp.sum(lnp.abs(x)),
                                                                 c[1] + 1), (0.0, 0))[1]

    limit = np.float32(5.0)
    got = lanes.vmap(f, in_axes=(0, None), loop=strategy)(loop_xs, limit)
    want = []
    for x in loop_xs:
        s, n = 0.0, 0
        while s < limit:
            s, n = s + np.float32(np.abs(x).sum()), n + 1
        want.append(n)
    assert_equal(got, np.array(want, np.int32))


@pytest.mark.parametrize("strategy", LOOP_STRATEGIES)
def test_newton_sqrt_under_vmap(strategy: str) -> None:
    a = np.array([2.0, 9.0, 0.25, 100.0, 1e4], np.float64)

    def sqrt(v: Any) -> Any:
        def body(c: tuple) -> tuple:
            return c[0] + 1, 0.5 * (c[1] + v / c[1])

        def keep_going(c: tuple) -> Any:
            return lnp.logical_and(lnp.abs(c[1] * c[1] - v) > 1e-10 * v, c[0] < 100)

        return lax.while_loop(keep_going, body, (0, v))

    steps, root = lanes.vmap(sqrt, loop=strategy)(a)
    assert_close(root, np.sqrt(a), rtol=1e-10)
    assert len(set(np.asarray(steps).tolist())) > 1


def test_while_loop_under_grad(rng: np.random.Generator) -> None:
    def f(x: Any) -> Any:
        return lnp.sum(lax.while_loop(lambda c: c[0] < 3,
                                      lambda c: (c[0] + 1, lnp.sin(c[1]) * x), (0, x))[1])

    def f_np(x: np.ndarray) -> float:
        c = x
        for _ in range(3):
            c = np.sin(c) * x
        return float(np.sum(c))

    x = rng.normal(size=3)
    assert_close(lanes.grad(f)(x), numeric_grad(f_np, x), rtol=1e-6, atol=1e-8)


def test_while_loop_under_jit(loop_xs: np.ndarray) -> None:
    g = lanes.jit(doubling)
    for x in loop_xs:
        n, out = g(x)
        n_ref, out_ref = doubling_ref(x)
        assert int(n) == n_ref
        assert_close(out, out_ref)


def test_while_loop_body_changing_dtype_raises() -> None:
    with pytest.raises(lanes.LanesError):
        lax.while_loop(lambda c: c < 3, lambda c: c + 0.5, 0)


@pytest.mark.parametrize("lower, upper", [(0, 5), (2, 6), (3, 3), (5, 2)])
def test_fori_loop_eager(lower: int, upper: int) -> None:
    x = np.array([1.0, -0.5], np.float32)
    got = lax.fori_loop(lower, upper, lambda i, c: c * 1.5 + i, x)
    want = x.copy()
    for i in range(lower, upper):
        want = want * np.float32(1.5) + np.float32(i)
    assert_close(got, want)


@pytest.mark.parametrize("strategy", LOOP_STRATEGIES)
def test_fori_loop_with_batched_upper(strategy: str) -> None:
    uppers = np.array([0, 1, 4, 2, 7], np.int32)
    got = lanes.vmap(lambda n: lax.fori_loop(0, n, lambda i, c: c + i * i, 0), loop=strategy)(
        uppers)
    assert_equal(got, np.array([sum(i * i for i in range(n)) for n in uppers], np.int32))


def test_fori_loop_under_vmap_and_grad(rng: np.random.Generator) -> None:
    xs = rng.normal(size=(4, 3))

    def f(x: Any) -> Any:
        return lnp.sum(lax.fori_loop(0, 4, lambda i, c: lnp.tanh(c) + x * i, x))

    def f_np(x: np.ndarray) -> float:
        c = x
        for i in range(4):
            c = np.tanh(c) + x * i
        return float(np.sum(c))

    assert_close(lanes.vmap(f)(xs), [f_np(x) for x in xs], rtol=1e-12)
    got = lanes.vmap(lanes.grad(f))(xs)
    assert_close(got, np.stack([numeric_grad(f_np, x) for x in xs]), rtol=1e-6, atol=1e-8)


def test_fori_loop_under_jit() -> None:
    f = lanes.jit(lambda n, x: lax.fori_loop(0, n, lambda i, c: c * 2.0, x))
    x = np.array([1.0, 3.0], np.float32)
    for n in range(4):
        assert_close(f(np.int32(n), x), x * 2 ** n)


# ---- scan -------------------------------------------------------------------------------------


def cumulative_ref(init: np.ndarray, xs: np.ndarray, reverse: bool = False
                   ) -> tuple[np.ndarray, np.ndarray]:
    carry, ys = init, []
    order = range(len(xs) - 1, -1, -1) if reverse else range(len(xs))
    out = [None] * len(xs)
    for i in order:
        out[i] = carry * xs[i]
        carry = carry + xs[i]
    ys = np.stack(out)
    return carry, ys


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_eager(rng: np.random.Generator, reverse: bool) -> None:
    seq = rng.normal(size=(5, 3)).astype(np.float32)
    init = np.zeros(3, np.float32) + 0.5
    carry, ys = lax.scan(lambda c, x: (c + x, c * x), init, seq, reverse=reverse)
    want_c, want_ys = cumulative_ref(init, seq, reverse)
    assert_close(carry, want_c)
    assert_close(ys, want_ys)


def test_scan_pytree_carry_and_xs(rng: np.random.Generator) -> None:
    a = rng.normal(size=(4, 2)).astype(np.float32)
    b = rng.normal(size=(4,)).astype(np.float32)

    def step(c: dict[str, Any], x: tuple[Any, Any]) -> tuple[dict[str, Any], Any]:
        new = {"s": c["s"] + x[0] * x[1], "n": c["n"] + 1}
        return new, {"prod": x[0] * x[1], "n": c["n"]}

    carry, ys = lax.scan(step, {"s": np.zeros(2, np.float32), "n": 0}, (a, b))
    assert_close(carry["s"], (a * b[:, None]).sum(axis=0))
    assert int(carry["n"]) == 4
    assert_close(ys["prod"], a * b[:, None])
    assert_equal(ys["n"], np.arange(4, dtype=np.int32))


def test_scan_without_xs_uses_length() -> None:
    carry, ys = lax.scan(lambda c, _: (c * 2.0, c), np.float32(1.0), None, length=4)
    assert_close(carry, 16.0)
    assert_close(ys, [1.0, 2.0, 4.0, 8.0])


def test_scan_empty_ys() -> None:
    seq = np.arange(4, dtype=np.float32)
    carry, ys = lax.scan(lambda c, x: (c + x, None), np.float32(0.0), seq)
    assert_close(carry, seq.sum())
    assert ys is None


def test_scan_under_vmap(rng: np.random.Generator) -> None:
    seqs = rng.normal(size=(3, 5, 2)).astype(np.float32)
    init = np.ones(2, np.float32)
    carry, ys = lanes.vmap(lambda s: lax.scan(lambda c, x: (c + x, c * x), init, s))(seqs)
    refs = [cumulative_ref(init, s) for s in seqs]
    assert_close(carry, np.stack([r[0] for r in refs]))
    assert_close(ys, np.stack([r[1] for r in refs]))


def test_scan_under_grad(rng: np.random.Generator) -> None:
    seq = rng.normal(size=(4, 3))
    w = rng.normal(size=(3,))

    def rnn(w_: Any, s: Any) -> Any:
        carry, ys = lax.scan(lambda h, x: (lnp.tanh(h * w_ + x),) * 2, lnp.zeros(3, np.float64),
                             s)
        return lnp.sum(ys ** 2) + lnp.sum(carry)

    def rnn_np(w_: np.ndarray, s: np.ndarray) -> float:
        h, total = np.zeros(3), 0.0
        for x in s:
            h = np.tanh(h * w_ + x)
            total += float(np.sum(h ** 2))
        return total + float(np.sum(h))

    gw, gs = lanes.grad(rnn, argnums=(0, 1))(w, seq)
    assert_close(gw, numeric_grad(lambda v: rnn_np(v, seq), w), rtol=1e-6, atol=1e-8)
    assert_close(gs, numeric_grad(lambda v: rnn_np(w, v), seq), rtol=1e-6, atol=1e-8)


def test_scan_under_jit(rng: np.random.Generator) -> None:
    f = lanes.jit(lambda init, s: lax.scan(lambda c, x: (c + x, c * x), init, s))
    init = np.zeros(2, np.float32)
    for n in (3, 3, 5):
        seq = rng.normal(size=(n, 2)).astype(np.float32)
        carry, ys = f(init, seq)
        want_c, want_ys = cumulative_ref(init, seq)
        assert_close(carry, want_c)
        assert_close(ys, want_ys)


# ---- map --------------------------------------------------------------------------------------


@pytest.mark.parametrize("batch_size", [None, 1, 2, 4, 10])
def test_map(rng: np.random.Generator, batch_size: int | None) -> None:
    xs = rng.normal(size=(7, 3)).astype(np.float32)
    got = lax.map(lambda x: lnp.sum(lnp.sin(x)) * x, xs, batch_size=batch_size)
    assert_close(got, np.stack([np.sin(x).sum() * x for x in xs]))


def test_map_pytree() -> None:
    xs = {"a": np.arange(6, dtype=np.float32).reshape(3, 2), "b": np.arange(3, dtype=np.float32)}
    got = lax.map(lambda d: (d["a"] * d["b"], lnp.sum(d["a"])), xs)
    assert_close(got[0], xs["a"] * xs["b"][:, None])
    assert_close(got[1], xs["a"].sum(axis=1))


def test_map_under_grad(rng: np.random.Generator) -> None:
    xs = rng.normal(size=(4, 2))
    g = lanes.grad(lambda v: lnp.sum(lax.map(lambda x: lnp.exp(x) * x, v)))(xs)
    assert_close(g, np.exp(xs) * (1 + xs), rtol=1e-12)


# ---- dynamic_slice / dynamic_update_slice -----------------------------------------------------


@pytest.mark.parametrize("starts, sizes", [
    ((0, 0), (2, 3)), ((1, 2), (2, 2)), ((3, 4), (1, 1)),
    ((5, 1), (2, 2)),    # clamped: starts so the slice fits, as jax does
    ((-3, 0), (2, 5)),   # negative starts clamp to 0
    ((2, 9), (3, 2)),
])
def test_dynamic_slice(starts: tuple[int, int], sizes: tuple[int, int]) -> None:
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    clamped = [int(np.clip(s, 0, d - n)) for s, d, n in zip(starts, x.shape, sizes)]
    want = x[clamped[0]:clamped[0] + sizes[0], clamped[1]:clamped[1] + sizes[1]]
    assert_equal(lax.dynamic_slice(x, starts, sizes), want)
    assert_equal(lax.dynamic_slice(x, [np.int32(s) for s in starts], sizes), want)


@pytest.mark.parametrize("starts", [(0, 0), (1, 2), (3, 4), (-2, 7)])
def test_dynamic_update_slice(starts: tuple[int, int]) -> None:
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    upd = -np.ones((2, 3), np.float32) * np.arange(1, 4, dtype=np.float32)
    clamped = [int(np.clip(s, 0, d - n)) for s, d, n in zip(starts, x.shape, upd.shape)]
    want = x.copy()
    want[clamped[0]:clamped[0] + 2, clamped[1]:clamped[1] + 3] = upd
    assert_equal(lax.dynamic_update_slice(x, upd, starts), want)


def test_dynamic_slice_under_vmap_with_traced_starts() -> None:
    x = np.arange(30, dtype=np.float32).reshape(6, 5)
    starts = np.array([0, 2, 4, 1], np.int32)
    got = lanes.vmap(lambda s: lax.dynamic_slice(x, (s, s), (2, 2)))(starts)
    want = []
    for s in starts:
        r, c = min(s, 4), min(s, 3)
        want.append(x[r:r + 2, c:c + 2])
    assert_equal(got, np.stack(want))


def test_dynamic_update_slice_under_vmap_and_grad(rng: np.random.Generator) -> None:
    base = rng.normal(size=(6,))
    upd = rng.normal(size=(3, 2))
    starts = np.array([0, 3, 5], np.int32)
    got = lanes.vmap(lambda u, s: lax.dynamic_update_slice(base, u, (s,)))(upd, starts)
    want = []
    for u, s in zip(upd, starts):
        w = base.copy()
        s = min(s, 4)
        w[s:s + 2] = u
        want.append(w)
    assert_equal(got, np.stack(want))

    def f(b: Any, u: Any) -> Any:
        return lnp.sum(lax.dynamic_update_slice(b, u, (np.int32(2),)) ** 2)

    gb, gu = lanes.grad(f, argnums=(0, 1))(base, upd[0])
    want_b = 2 * base
    want_b[2:4] = 0.0
    assert_close(gb, want_b, rtol=1e-12)
    assert_close(gu, 2 * upd[0], rtol=1e-12)


def test_dynamic_slice_under_grad_and_jit(rng: np.random.Generator) -> None:
    x = rng.normal(size=(5, 4))
    g = lanes.grad(lambda v: lnp.sum(lax.dynamic_slice(v, (1, 2), (3, 2)) ** 3))(x)
    want = np.zeros_like(x)
    want[1:4, 2:4] = 3 * x[1:4, 2:4] ** 2
    assert_close(g, want, rtol=1e-12)
    f = lanes.jit(lambda v, i: lax.dynamic_slice(v, (i, 0), (2, 4)))
    for i in range(4):
        assert_equal(f(x, np.int32(i)), x[i:i + 2])


def test_traced_integer_index_uses_dynamic_slice() -> None:
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    got = lanes.vmap(lambda i: lanes.asarray(x)[i], )(np.array([3, 0, 2], np.int32))
    assert_equal(got, x[[3, 0, 2]])
