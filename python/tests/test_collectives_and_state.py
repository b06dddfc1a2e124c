"""Collectives over a named vmap axis, lanes.Variable and set_num_threads against independent
references: numpy reductions over the batch, float64 finite differences of the equivalent
whole-batch function, and plain Python re-evaluation."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import lanes
import lanes.numpy as lnp
from conftest import assert_close, assert_equal, numeric_grad
from lanes import lax


@pytest.fixture
def batch(rng: np.random.Generator) -> np.ndarray:
    return rng.normal(size=(5, 3)).astype(np.float32)


# ---- collectives: values ----------------------------------------------------------------------


def test_center_with_pmean(batch: np.ndarray) -> None:
    got = lanes.vmap(lambda x: x - lax.pmean(x, "i"), axis_name="i")(batch)
    assert_close(got, batch - batch.mean(0), atol=1e-6)


@pytest.mark.parametrize("name,ref", [
    ("psum", lambda b: b.sum(0)),
    ("pmean", lambda b: b.mean(0)),
    ("pmax", lambda b: b.max(0)),
    ("pmin", lambda b: b.min(0)),
])
@pytest.mark.parametrize("shape", [(6,), (4, 3), (3, 2, 2)])
def test_reductions_match_numpy(name: str, ref: Any, shape: tuple[int, ...],
                                rng: np.random.Generator) -> None:
    b = rng.normal(size=shape).astype(np.float32)
    op = getattr(lax, name)
    got = lanes.vmap(lambda x: op(x, "i"), axis_name="i")(b)
    want = np.broadcast_to(ref(b.astype(np.float64)), b.shape)
    assert_close(got, want, rtol=1e-5, atol=1e-6)


def test_psum_integer(rng: np.random.Generator) -> None:
    b = rng.integers(-50, 50, size=(7, 2)).astype(np.int32)
    got = lanes.vmap(lambda x: lax.psum(x, "i"), axis_name="i")(b)
    assert np.asarray(got).dtype.kind == "i"
    assert_equal(got, np.broadcast_to(b.sum(0), b.shape))


def test_batch_softmax_via_psum(batch: np.ndarray) -> None:
    got = lanes.vmap(lambda x: lnp.exp(x) / lax.psum(lnp.exp(x), "i"), axis_name="i")(batch)
    e = np.exp(batch.astype(np.float64))
    assert_close(got, e / e.sum(0), rtol=1e-5)


@pytest.mark.parametrize("axis", [0, 1])
def test_all_gather(batch: np.ndarray, axis: int) -> None:
    got = lanes.vmap(lambda x: lax.all_gather(x, "i", axis=axis), axis_name="i")(batch)
    one = batch if axis == 0 else batch.T
    assert_close(got, np.broadcast_to(one, (batch.shape[0],) + one.shape))


def test_all_gather_then_compute(batch: np.ndarray) -> None:
    # each example's squared distance to every example of the batch
    def f(x: Any) -> Any:
        allx = lax.all_gather(x, "i")
        return lnp.sum((allx - x) ** 2, axis=1)

    got = lanes.vmap(f, axis_name="i")(batch)
    b = batch.astype(np.float64)
    want = ((b[:, None, :] - b[None, :, :]) ** 2).sum(-1)
    assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_axis_index(batch: np.ndarray) -> None:
    got = lanes.vmap(lambda x: lax.axis_index("i"), axis_name="i")(batch)
    assert np.asarray(got).dtype.kind == "i"
    assert_equal(got, np.arange(batch.shape[0]))
    # used in arithmetic: each example scaled by its index
    got2 = lanes.vmap(lambda x: x * lax.axis_index("i"), axis_name="i")(batch)
    assert_close(got2, batch * np.arange(batch.shape[0])[:, None])


def test_collectives_with_unmapped_argument(batch: np.ndarray) -> None:
    w = np.array([1.0, -2.0, 0.5], np.float32)
    got = lanes.vmap(lambda x, v: lax.psum(x * v, "i") - x, in_axes=(0, None),
                     axis_name="i")(batch, w)
    assert_close(got, (batch * w).sum(0) - batch, rtol=1e-5, atol=1e-5)


def test_nested_named_axes(rng: np.random.Generator) -> None:
    b = rng.normal(size=(3, 4)).astype(np.float32)

    def inner(x: Any) -> Any:
        return lax.psum(x, "j") * 10.0 + lax.psum(x, "i")

    got = lanes.vmap(lanes.vmap(inner, axis_name="j"), axis_name="i")(b)
    want = b.sum(1, keepdims=True) * 10.0 + b.sum(0, keepdims=True)
    assert_close(got, want, rtol=1e-5, atol=1e-5)
    idx = lanes.vmap(lanes.vmap(lambda x: lax.axis_index("i") * 10 + lax.axis_index("j"),
                                axis_name="j"), axis_name="i")(b)
    assert_equal(idx, np.arange(3)[:, None] * 10 + np.arange(4)[None, :])


def test_collectives_under_jit(batch: np.ndarray) -> None:
    f = lanes.jit(lanes.vmap(lambda x: (x - lax.pmean(x, "i")) / (lax.pmax(x, "i") -
                                                                  lax.pmin(x, "i")),
                             axis_name="i"))
    b = batch.astype(np.float64)
    want = (b - b.mean(0)) / (b.max(0) - b.min(0))
    assert_close(f(batch), want, rtol=1e-5, atol=1e-6)
    assert_close(f(batch * 2.0), want, rtol=1e-5, atol=1e-6)


def test_collectives_in_chunked_vmap_match_numpy_or_raise(batch: np.ndarray) -> None:
    """chunk_size with collectives: either correct over the whole batch or a LanesError."""
    try:
        got = lanes.vmap(lambda x: x - lax.pmean(x, "i"), axis_name="i", chunk_size=2)(batch)
    except lanes.LanesError:
        return
    assert_close(got, batch - batch.mean(0), atol=1e-6)


# ---- collectives: gradients -------------------------------------------------------------------


def test_vmap_grad_through_pmean_matches_fd_of_total(batch: np.ndarray) -> None:
    """vmap(grad(f)) with pmean inside is the gradient of the summed per-example losses (the vjp
    of pmean is the pmean of the cotangents)."""

    def per(x: Any) -> Any:
        return lnp.sum((x - lax.pmean(x, "i")) ** 2 * lnp.sin(x))

    got = lanes.vmap(lanes.grad(per), axis_name="i")(batch)

    def total(b: np.ndarray) -> float:
        return float(np.sum((b - b.mean(0)) ** 2 * np.sin(b)))

    assert_close(got, numeric_grad(total, batch), rtol=1e-4, atol=1e-5)


def test_vmap_grad_through_psum_matches_fd_of_total(batch: np.ndarray) -> None:
    def per(x: Any) -> Any:
        s = lax.psum(lnp.exp(x), "i")
        return lnp.sum(x * lnp.log(s))

    got = lanes.vmap(lanes.grad(per), axis_name="i")(batch)

    def total(b: np.ndarray) -> float:
        return float(np.sum(b * np.log(np.exp(b).sum(0))))

    assert_close(got, numeric_grad(total, batch), rtol=1e-4, atol=1e-5)


def test_vmap_grad_through_pmax_matches_fd_of_total(batch: np.ndarray) -> None:
    def per(x: Any) -> Any:
        return lnp.sum(lnp.cos(x) * lax.pmax(x, "i"))

    got = lanes.vmap(lanes.grad(per), axis_name="i")(batch)

    def total(b: np.ndarray) -> float:
        return float(np.sum(np.cos(b) * b.max(0)))

    assert_close(got, numeric_grad(total, batch), rtol=1e-4, atol=1e-5)


def test_vmap_grad_through_pmax_splits_ties() -> None:
    """Documented convention (lanes/collectives.h): the cotangents are routed to the lanes that
    hold the maximum, split among ties. Total = 4 * max, so the gradient is 4 shared by the two
    maximal lanes."""
    xs = np.array([1.0, 3.0, 3.0, 2.0], np.float32)
    got = lanes.vmap(lanes.grad(lambda x: lax.pmax(x, "i")), axis_name="i")(xs)
    assert_close(got, np.array([0.0, 2.0, 2.0, 0.0]))


def test_vmap_grad_through_all_gather_matches_fd_of_total(batch: np.ndarray) -> None:
    c = np.linspace(0.5, 2.0, batch.size, dtype=np.float32).reshape(batch.shape)

    def per(x: Any) -> Any:
        return lnp.sum(lnp.sin(lax.all_gather(x, "i")) * c) * lnp.sum(x)

    got = lanes.vmap(lanes.grad(per), axis_name="i")(batch)

    def total(b: np.ndarray) -> float:
        return float(np.sum(np.sin(b) * c) * np.sum(b))

    assert_close(got, numeric_grad(total, batch), rtol=1e-4, atol=1e-5)


def test_grad_of_vmapped_pmean_loss(batch: np.ndarray) -> None:
    """grad outside the vmap: d/dB of sum over examples, same reference."""

    def loss(b: Any) -> Any:
        centered = lanes.vmap(lambda x: x - lax.pmean(x, "i"), axis_name="i")(b)
        return lnp.sum(centered ** 2 * lnp.tanh(b))

    def ref(b: np.ndarray) -> float:
        return float(np.sum((b - b.mean(0)) ** 2 * np.tanh(b)))

    assert_close(lanes.grad(loss)(batch), numeric_grad(ref, batch), rtol=1e-4, atol=1e-5)


def test_data_parallel_mean_gradient(rng: np.random.Generator) -> None:
    """pmean of per-example gradients equals the gradient of the mean loss (numpy reference)."""
    w = rng.normal(size=(3,)).astype(np.float32)
    xs = rng.normal(size=(6, 3)).astype(np.float32)
    ys = rng.normal(size=(6,)).astype(np.float32)

    def step(w_: Any, x: Any, y: Any) -> Any:
        g = lanes.grad(lambda v: (lnp.dot(v, x) - y) ** 2)(w_)
        return lax.pmean(g, "batch")

    got = lanes.vmap(step, in_axes=(None, 0, 0), axis_name="batch")(w, xs, ys)
    want = numeric_grad(lambda v: np.mean((xs.astype(np.float64) @ v - ys) ** 2), w)
    assert_close(got, np.broadcast_to(want, (6, 3)), rtol=1e-4, atol=1e-5)


# ---- collectives: errors ----------------------------------------------------------------------


def test_unknown_axis_name_raises(batch: np.ndarray) -> None:
    for op in (lax.psum, lax.pmean, lax.pmax, lax.pmin, lax.all_gather):
        with pytest.raises(lanes.LanesError):
            lanes.vmap(lambda x: op(x, "j"), axis_name="i")(batch)
    with pytest.raises(lanes.LanesError):
        lanes.vmap(lambda x: x * lax.axis_index("j"), axis_name="i")(batch)
    with pytest.raises(lanes.LanesError):
        lanes.vmap(lambda x: lax.psum(x, "i"))(batch)  # vmap without a name


def test_collective_outside_vmap_raises(batch: np.ndarray) -> None:
    with pytest.raises(lanes.LanesError):
        lax.psum(batch, "i")
    with pytest.raises(lanes.LanesError):
        lax.axis_index("i")


# ---- Variable ---------------------------------------------------------------------------------


def test_variable_value_assign_assign_add() -> None:
    init = np.array([1.0, 2.0, 3.0], np.float32)
    v = lanes.Variable(init, name="w")
    assert v.name == "w"
    assert_equal(v.value, init)
    v.assign(np.array([4.0, 5.0, 6.0], np.float32))
    assert_equal(v.value, np.array([4.0, 5.0, 6.0], np.float32))
    v.assign_add(np.array([0.5, -1.0, 2.0], np.float32))
    assert_close(v.value, np.array([4.5, 4.0, 8.0]))
    v.assign_add(1.0)
    assert_close(v.value, np.array([5.5, 5.0, 9.0]))
    assert np.asarray(v.value).dtype == np.float32
    # the initial numpy array is not aliased: mutating it later does not change the Variable
    init[:] = -7.0
    assert_close(v.value, np.array([5.5, 5.0, 9.0]))


def test_variable_repeated_assign_add_accumulates() -> None:
    v = lanes.Variable(np.zeros((2, 2), np.float64))
    ref = np.zeros((2, 2))
    for i in range(10):
        d = np.full((2, 2), i * 0.25)
        v.assign_add(d)
        ref += d
    assert_close(v.value, ref)


def test_jit_sees_assigned_value(rng: np.random.Generator) -> None:
    v = lanes.Variable(np.array([1.0, 2.0, 3.0], np.float32))
    f = lanes.jit(lambda x: lnp.sum(v.value * x))
    x = np.array([1.0, 10.0, 100.0], np.float32)
    assert_close(f(x), 321.0)
    v.assign(np.array([3.0, 2.0, 1.0], np.float32))
    assert_close(f(x), 123.0)
    v.assign_add(np.ones(3, np.float32))
    assert_close(f(x), 4 + 30 + 200.0)
    for _ in range(3):
        new = rng.normal(size=3).astype(np.float32)
        v.assign(new)
        assert_close(f(x), np.sum(new * x), rtol=1e-5)


def test_jit_without_arguments_sees_assigned_value() -> None:
    v = lanes.Variable(np.float32(2.0))
    f = lanes.jit(lambda: v.value * 3.0)
    assert_close(f(), 6.0)
    v.assign(np.float32(5.0))
    assert_close(f(), 15.0)


def test_jit_after_assigning_new_shape() -> None:
    v = lanes.Variable(np.ones(3, np.float32))
    total = lanes.jit(lambda: lnp.sum(v.value))
    scaled = lanes.jit(lambda x: v.value * x)
    assert_close(total(), 3.0)
    assert_close(scaled(np.float32(2.0)), np.full(3, 2.0))
    v.assign(np.arange(7, dtype=np.float32))
    assert_close(total(), 21.0)
    assert_close(scaled(np.float32(2.0)), np.arange(7) * 2.0)
    v.assign(np.ones((2, 2), np.float32) * 4)
    assert_close(total(), 16.0)
    assert_close(scaled(np.float32(0.5)), np.full((2, 2), 2.0))
    v.assign(np.ones(3, np.float32) * 5)  # back to the first shape
    assert_close(total(), 15.0)


def test_vmap_and_grad_read_current_value(rng: np.random.Generator) -> None:
    v = lanes.Variable(np.array([1.0, 2.0], np.float32))
    xs = rng.normal(size=(4, 2)).astype(np.float32)
    f = lanes.vmap(lambda x: lnp.dot(v.value, x))
    g = lanes.grad(lambda x: lnp.sum(v.value * x ** 2))
    assert_close(f(xs), xs @ np.array([1.0, 2.0]), rtol=1e-5)
    assert_close(g(xs[0]), 2 * np.array([1.0, 2.0]) * xs[0], rtol=1e-5)
    h = lanes.jit(lanes.vmap(lambda x: lnp.dot(v.value, x)))
    assert_close(h(xs), xs @ np.array([1.0, 2.0]), rtol=1e-5)
    v.assign(np.array([-3.0, 0.5], np.float32))
    assert_close(f(xs), xs @ np.array([-3.0, 0.5]), rtol=1e-5)
    assert_close(h(xs), xs @ np.array([-3.0, 0.5]), rtol=1e-5)
    assert_close(g(xs[0]), 2 * np.array([-3.0, 0.5]) * xs[0], rtol=1e-5)


def test_training_loop_with_variable(rng: np.random.Generator) -> None:
    """SGD on a Variable through a jitted gradient, against the same loop in numpy."""
    xs = rng.normal(size=(8, 3)).astype(np.float32)
    ys = (xs @ np.array([1.0, -2.0, 0.5]) + 0.1).astype(np.float32)
    w = lanes.Variable(np.zeros(3, np.float32))
    grad = lanes.jit(lambda x, y: lanes.grad(
        lambda v: lnp.mean((lnp.matmul(x, v) - y) ** 2))(w.value))
    w_np = np.zeros(3)
    for _ in range(20):
        w.assign_add(-0.1 * np.asarray(grad(xs, ys)))
        w_np -= 0.1 * (2.0 / len(xs)) * xs.T.astype(np.float64) @ (xs @ w_np - ys)
    assert_close(w.value, w_np, rtol=1e-4, atol=1e-5)


def test_variable_assign_while_tracing_raises() -> None:
    v = lanes.Variable(np.ones(3, np.float32))

    def bad(x: Any) -> Any:
        v.assign(x)
        return x

    with pytest.raises(lanes.LanesError):
        lanes.jit(bad)(np.zeros(3, np.float32))
    with pytest.raises(lanes.LanesError):
        lanes.vmap(lambda x: (v.assign_add(x), x)[1])(np.zeros((2, 3), np.float32))
    assert_equal(v.value, np.ones(3, np.float32))


# ---- set_num_threads --------------------------------------------------------------------------


def test_set_num_threads_gives_identical_results(rng: np.random.Generator) -> None:
    a = rng.normal(size=(192, 160)).astype(np.float32)
    b = rng.normal(size=(160, 176)).astype(np.float32)
    c = rng.normal(size=(176, 64)).astype(np.float32)
    xs = rng.normal(size=(16, 192)).astype(np.float32)

    def heavy(x: Any) -> Any:
        h = lnp.tanh(lnp.matmul(x, a))
        h = lnp.tanh(lnp.matmul(h, b))
        return lnp.matmul(h, c)

    batched = lanes.vmap(heavy)
    jitted = lanes.jit(lambda x: lnp.sum(batched(x) ** 2))
    grads = lanes.grad(lambda x: lnp.sum(batched(x) ** 2))
    mm = lambda: lnp.matmul(lnp.matmul(xs, a), b)  # noqa: E731

    before = lanes.num_threads()
    assert before >= 1
    ref = [np.asarray(batched(xs)), np.asarray(jitted(xs)), np.asarray(grads(xs)),
           np.asarray(mm())]
    try:
        lanes.set_num_threads(1)
        assert lanes.num_threads() == 1
        one = [np.asarray(batched(xs)), np.asarray(jitted(xs)), np.asarray(grads(xs)),
               np.asarray(mm())]
    finally:
        lanes.set_num_threads(before)
    assert lanes.num_threads() == before
    again = [np.asarray(batched(xs)), np.asarray(jitted(xs)), np.asarray(grads(xs)),
             np.asarray(mm())]
    for r, o, g in zip(ref, one, again):
        assert_equal(o, r)
        assert_equal(g, r)
    # and the values themselves are right (float64 numpy reference)
    x64 = xs.astype(np.float64)
    want = np.tanh(np.tanh(x64 @ a) @ b) @ c
    assert_close(ref[0], want, rtol=1e-3, atol=1e-3)


def test_collectives_over_pytrees_and_several_axis_names() -> None:
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    row = lanes.asarray(x[0])
    pair = lanes.vmap(lambda a: lanes.lax.psum((a, {"twice": 2 * a}), "i"), axis_name="i")(row)
    assert_equal(pair[0], np.full(3, x[0].sum(), np.float32))
    assert_equal(pair[1]["twice"], np.full(3, 2 * x[0].sum(), np.float32))
    both = lanes.vmap(lanes.vmap(lambda a: lanes.lax.psum(a, ("o", "i")), axis_name="i"),
                      axis_name="o")(lanes.asarray(x))
    assert_equal(both, np.full((2, 3), x.sum(), np.float32))
    means = lanes.vmap(lambda a: lanes.lax.pmean([a, a * a], "i"), axis_name="i")(row)
    assert_close(means[1], np.full(3, (x[0] ** 2).mean(), np.float32))
    gathered = lanes.vmap(lambda a: lanes.lax.all_gather((a, -a), "i"), axis_name="i")(row)
    assert_equal(gathered[1], np.broadcast_to(-x[0], (3, 3)))
