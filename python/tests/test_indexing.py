"""lanes.Array indexing (numpy's rules, jax's clamping) and .at updates."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

import lanes
from conftest import assert_equal


def data_address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


@pytest.fixture
def a() -> np.ndarray:
    return np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 7.5


# ---- indexing ---------------------------------------------------------------------------------

INDEX_KEYS: list[Any] = [
    0, -1, 1, (1, 2), (-1, -2, -3), (0, slice(None), 3),
    slice(None), slice(1, None), slice(None, None, -1), slice(None, None, 2),
    (slice(None), slice(None, None, -2)), (slice(None), slice(3, 0, -1)),
    (slice(None), slice(-1, None, -2), slice(None, 1)), (slice(5, 1),), (slice(-100, 100),),
    None, (None, 0), (0, None, slice(None), None), Ellipsis, (Ellipsis, 1), (1, Ellipsis),
    (None, Ellipsis, 1), (0, Ellipsis, None, slice(1, 3)), (slice(None), 1, slice(None, None, -1)),
]


@pytest.mark.parametrize("key", INDEX_KEYS, ids=repr)
def test_basic_indexing_matches_numpy(a: np.ndarray, key: Any) -> None:
    assert_equal(lanes.asarray(a)[key], a[key])


@pytest.mark.parametrize("make_index", [np.array, list, lambda v: lanes.asarray(np.array(v))],
                         ids=["numpy", "list", "lanes"])
def test_integer_array_index(a: np.ndarray, make_index: Callable) -> None:
    idx = [1, 0, 1, 1]
    assert_equal(lanes.asarray(a)[make_index(idx)], a[np.array(idx)])


@pytest.mark.parametrize("key_fn", [
    lambda i: (slice(None), i),
    lambda i: (Ellipsis, i),
    lambda i: (0, i),
    lambda i: (slice(None, None, -1), slice(1, 3), i),
    lambda i: (None, 1, i),
], ids=["slice-array", "ellipsis-array", "int-array", "flip-slice-array", "none-int-array"])
def test_integer_array_index_combinations(a: np.ndarray, key_fn: Callable) -> None:
    idx = np.array([2, 0, 2])
    assert_equal(lanes.asarray(a)[key_fn(lanes.asarray(idx))], a[key_fn(idx)])


def test_two_dimensional_index_array(a: np.ndarray) -> None:
    idx = np.array([[0, 2], [1, 1]])
    assert_equal(lanes.asarray(a)[:, lanes.asarray(idx)], a[:, idx])


def test_negative_integer_array_index(a: np.ndarray) -> None:
    idx = np.array([-1, 0, -3])
    assert_equal(lanes.asarray(a)[0, lanes.asarray(idx)], a[0, idx])


def test_out_of_bounds_int_raises_index_error(a: np.ndarray) -> None:
    with pytest.raises(IndexError):
        lanes.asarray(a)[2]
    with pytest.raises(IndexError):
        lanes.asarray(a)[0, -4]


def test_iteration_matches_numpy(a: np.ndarray) -> None:
    rows = list(lanes.asarray(a))
    assert len(rows) == 2
    for got, want in zip(rows, a):
        assert_equal(got, want)


def test_setitem_raises_type_error_mentioning_at(a: np.ndarray) -> None:
    x = lanes.asarray(a)
    with pytest.raises(TypeError, match=r"\.at"):
        x[0] = 1.0
    with pytest.raises(TypeError, match=r"\.at"):
        x[:, 1] = np.zeros(4, np.float32)


# ---- .at updates ------------------------------------------------------------------------------

AT_KEYS: list[Any] = [1, (0, 2), (slice(None), 1), (Ellipsis, slice(None, None, -2)),
                      (0, slice(1, 3), -1)]


@pytest.mark.parametrize("key", AT_KEYS, ids=repr)
def test_at_set(a: np.ndarray, key: Any) -> None:
    want = a.copy()
    want[key] = 100.0
    assert_equal(lanes.asarray(a).at[key].set(100.0), want)


@pytest.mark.parametrize("key", AT_KEYS, ids=repr)
def test_at_set_array_value(a: np.ndarray, key: Any) -> None:
    want = a.copy()
    value = np.arange(want[key].size, dtype=np.float32).reshape(np.shape(want[key])) * 10
    want[key] = value
    assert_equal(lanes.asarray(a).at[key].set(value), want)


@pytest.mark.parametrize("mode", ["add", "multiply", "min", "max"])
@pytest.mark.parametrize("key", AT_KEYS, ids=repr)
def test_at_arithmetic(a: np.ndarray, mode: str, key: Any) -> None:
    ufunc = {"add": np.add, "multiply": np.multiply, "min": np.minimum, "max": np.maximum}[mode]
    want = a.copy()
    want[key] = ufunc(want[key], 2.0)
    got = getattr(lanes.asarray(a).at[key], mode)(2.0)
    assert_equal(got, want)


def test_at_does_not_modify_original(a: np.ndarray) -> None:
    x = lanes.asarray(a)
    x.at[0].set(0.0)
    assert_equal(x, a)


@pytest.mark.parametrize("make_index", [np.array, lambda v: lanes.asarray(np.array(v))],
                         ids=["numpy", "lanes"])
def test_at_add_repeated_indices_accumulate(make_index: Callable) -> None:
    base = np.zeros(5, np.float32)
    idx = [0, 1, 1, 3, 1]
    vals = np.array([1.0, 2.0, 3.0, 4.0, 5.0], np.float32)
    want = base.copy()
    np.add.at(want, np.array(idx), vals)
    assert_equal(lanes.asarray(base).at[make_index(idx)].add(vals), want)


@pytest.mark.parametrize("mode", ["min", "max", "multiply"])
def test_at_repeated_indices_other_modes(mode: str) -> None:
    base = np.full(4, 2.0, np.float32)
    idx = np.array([0, 2, 2, 0])
    vals = np.array([5.0, -1.0, 3.0, 0.5], np.float32)
    ufunc = {"multiply": np.multiply, "min": np.minimum, "max": np.maximum}[mode]
    want = base.copy()
    ufunc.at(want, idx, vals)
    got = getattr(lanes.asarray(base).at[lanes.asarray(idx)], mode)(vals)
    assert_equal(got, want)


def test_at_set_row_with_index_array(a: np.ndarray) -> None:
    want = a.copy()
    want[:, [0, 2]] = -1.0
    got = lanes.asarray(a).at[:, lanes.asarray(np.array([0, 2]))].set(-1.0)
    assert_equal(got, want)


@pytest.mark.parametrize("mode", ["set", "add", "multiply", "min", "max"])
def test_at_update_at_a_traced_out_of_bounds_index_is_dropped(mode: str) -> None:
    # jax clamps a traced index when reading and drops an update there; a negative index in
    # bounds counts from the end.
    base = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    ufunc = {"set": lambda old, v: v, "add": np.add, "multiply": np.multiply,
             "min": np.minimum, "max": np.maximum}[mode]

    def reference(i: int, j: int) -> np.ndarray:
        out = base.copy()
        if -3 <= i < 3 and -4 <= j < 4:
            out[i, j] = ufunc(out[i, j], 50.0)
        return out

    rows = np.array([0, 2, -1, 3, -4, 1, 7], dtype=np.int32)
    cols = np.array([1, -1, 0, 0, 2, 4, 2], dtype=np.int32)
    x = lanes.asarray(base)
    got = lanes.vmap(lambda i, j: getattr(x.at[i, j], mode)(50.0))(lanes.asarray(rows),
                                                                   lanes.asarray(cols))
    assert_equal(got, np.stack([reference(int(i), int(j)) for i, j in zip(rows, cols)]))
    row = lanes.jit(lambda i: getattr(x.at[i, 1:3], mode)(50.0))
    for i in (1, 3, -4):
        want = base.copy()
        if -3 <= i < 3:
            want[i, 1:3] = ufunc(want[i, 1:3], 50.0)
        assert_equal(row(lanes.asarray(np.int32(i))), want)


@pytest.mark.parametrize("key", [(0, slice(None), [0, 1]), (slice(None), 0, [1, 2]),
                                 (1, None, [0, 2]), ([1, 0], Ellipsis, 2), (0, [0, 2]),
                                 (None, 0, slice(None), [[0, 1], [2, 3]])], ids=repr)
def test_integer_array_index_dims_go_where_numpy_puts_them(a: np.ndarray, key: Any) -> None:
    # Integers among the advanced indices: apart from the array, its dims come first.
    assert_equal(lanes.asarray(a)[key], a[key])
    want = a.copy()
    want[key] = -1.0
    assert_equal(lanes.asarray(a).at[key].set(-1.0), want)


def test_several_traced_integer_scalars_in_one_subscript(a: np.ndarray) -> None:
    x = lanes.asarray(a)
    pick = lanes.jit(lambda v, i, j: v[i, :, j])
    assert_equal(pick(x, lanes.asarray(np.int32(1)), lanes.asarray(np.int32(-1))), a[1, :, -1])
    assert_equal(x[lanes.asarray(np.int32(0)), lanes.asarray(np.int32(2))], a[0, 2])
    rows = np.array([0, 1, 1], dtype=np.int32)
    cols = np.array([2, 0, 3], dtype=np.int32)
    got = lanes.vmap(lambda i, j: x[i, 1, j])(lanes.asarray(rows), lanes.asarray(cols))
    assert_equal(got, a[rows, 1, cols])


def test_at_get(a: np.ndarray) -> None:
    assert_equal(lanes.asarray(a).at[1, ::-1].get(), a[1, ::-1])


def test_slice_with_a_traced_bound_points_to_dynamic_slice() -> None:
    x = lanes.asarray(np.arange(10.0, dtype=np.float32))
    with pytest.raises(lanes.ConcretizationError, match="lax.dynamic_slice"):
        lanes.jit(lambda v, i: v[i:i + 2])(x, lanes.asarray(np.int32(3)))
    # Concrete Array bounds are plain ints.
    assert_equal(x[lanes.asarray(np.int32(2)):lanes.asarray(np.int32(5))],
                 np.arange(2.0, 5.0, dtype=np.float32))


@pytest.mark.parametrize("key", [([0, 1], [2, 0]), ([1, 0], [0, 2], [3, 1]), ([1], [0, 2, 1]),
                                 (slice(None), [0, 2], [3, -1]), ([0, -1], slice(None), [1, 2]),
                                 (np.array([[0], [1]]), np.array([0, 2, 1])),
                                 (1, [0, 2], [3, 0]), ([0, 1], 2, [3, 0]),
                                 (Ellipsis, [0, 2], [1, 1]), ([1, 0], None, [2, 2]),
                                 (slice(None, None, -1), [2, 0], [0, 3])], ids=repr)
def test_several_index_arrays_broadcast_together(a: np.ndarray, key: Any) -> None:
    # numpy's rule: the arrays (and integers among them) broadcast to one shape; its dims take
    # their place when they are adjacent, else come first.
    assert_equal(lanes.asarray(a)[key], a[key])
    want = a.copy()
    want[key] = -1.0
    assert_equal(lanes.asarray(a).at[key].set(-1.0), want)
    added = a.copy()
    np.add.at(added, key, 2.0)
    assert_equal(lanes.asarray(a).at[key].add(2.0), added)


def test_several_index_arrays_out_of_bounds() -> None:
    base = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    x = lanes.asarray(base)
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 3"):
        x[[0, 3], [1, 1]]
    # Traced: a read clamps, as jax's does; an update there is dropped.
    rows = np.array([0, 2, 5, -1], dtype=np.int32)
    cols = np.array([1, 9, 0, -4], dtype=np.int32)
    read = lanes.jit(lambda v, i, j: v[i, j])(x, rows, cols)
    assert_equal(read, base[np.clip(np.where(rows < 0, rows + 3, rows),
                                    0, 2), np.clip(np.where(cols < 0, cols + 4, cols), 0, 3)])
    got = lanes.jit(lambda v, i, j: v.at[i, j].set(50.0))(x, rows, cols)
    want = base.copy()
    want[0, 1] = want[-1, -4] = 50.0
    assert_equal(got, want)


def test_picking_each_rows_label_under_grad_and_vmap() -> None:
    # The log-likelihood idiom: logp[arange(n), labels].
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((5, 4, 3)).astype(np.float32)
    labels = rng.integers(0, 3, (5, 4)).astype(np.int32)

    def nll(z: lanes.Array, y: lanes.Array) -> lanes.Array:
        return -lanes.nn.log_softmax(z)[lanes.numpy.arange(4), y].sum()

    grads = lanes.vmap(lanes.grad(nll))(logits, labels)
    p = np.exp(logits - logits.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    want = p - np.eye(3, dtype=np.float32)[labels]
    np.testing.assert_allclose(np.asarray(grads), want, rtol=1e-5, atol=1e-6)
