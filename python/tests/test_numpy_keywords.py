"""lanes.numpy's keyword arguments and forms from numpy 2 and jax (decimals, min= / max=,
axis=None, eye's M and k, where= on integers, descending sorts, empty, finfo) against numpy."""

from __future__ import annotations

import numpy as np
import pytest

import lanes
import lanes.numpy as lnp
from conftest import assert_close, assert_equal


def test_numpy_keywords_of_round_clip_concatenate_and_eye() -> None:
    x = np.array([[1.234, -2.567], [3.5, 4.45]], np.float32)
    lx = lanes.asarray(x)
    assert_close(lnp.round(lx, 1), np.round(x, 1))
    assert_equal(lnp.round(lx), np.round(x))
    assert_equal(lnp.clip(lx, min=0, max=2), np.clip(x, 0, 2))
    assert_equal(lnp.concatenate([lx, lx], axis=None), np.concatenate([x, x], axis=None))
    assert_equal(lnp.eye(3, 4, k=1), np.eye(3, 4, k=1, dtype=np.float32))
    assert_equal(lnp.eye(3, k=-1, dtype=np.int32), np.eye(3, k=-1, dtype=np.int32))
    assert_equal(lnp.identity(3), np.identity(3, dtype=np.float32))


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min"])
def test_integer_reductions_with_where_keep_the_dtype(name: str) -> None:
    values = np.array([[1, 5, 3], [4, -2, 6]], np.int32)
    mask = np.array([[True, False, True], [True, True, False]])
    extra = {} if name in ("sum", "prod") else {"initial": -100 if name == "max" else 100}
    got = getattr(lnp, name)(lanes.asarray(values), axis=1, where=lanes.asarray(mask), **extra)
    assert got.dtype == np.int32
    assert_equal(got, getattr(np, name)(values, axis=1, where=mask, **extra))


def test_empty_is_zeros_and_limits_are_numpys() -> None:
    assert_equal(lnp.empty((2, 3)), np.zeros((2, 3), np.float32))
    assert_equal(lnp.empty_like(lanes.asarray(np.ones(4, np.int32))), np.zeros(4, np.int32))
    assert lnp.finfo(lnp.float32).eps == np.finfo(np.float32).eps
    assert lnp.iinfo(lnp.int32).max == np.iinfo(np.int32).max


def test_sort_and_argsort_descending_keep_ties_in_order() -> None:
    x = np.array([[1, 2, 1, 3, 2], [0, 0, 5, 5, 1]], np.int32)
    lx = lanes.asarray(x)
    assert_equal(lnp.sort(lx, descending=True), -np.sort(-x))
    # numpy's stable argsort of -x: the largest first, equal elements in their order.
    assert_equal(lnp.argsort(lx, descending=True), np.argsort(-x, kind="stable"))
    assert_equal(lnp.argsort(lx, axis=0, descending=True), np.argsort(-x, axis=0, kind="stable"))
    assert_equal(lnp.sort(lx, axis=None, descending=True), -np.sort(-x, axis=None))
    assert_equal(lnp.argsort(lx, kind="stable"), np.argsort(x, kind="stable"))


@pytest.mark.parametrize("mode", ["edge", "wrap", "reflect", "symmetric"])
def test_pad_modes_match_numpy_also_wider_than_the_axis(mode: str) -> None:
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    for widths in (1, ((1, 2), (0, 3)), ((7, 5), (9, 0))):
        assert_equal(lnp.pad(lanes.asarray(x), widths, mode), np.pad(x, widths, mode))
    for v in (np.array([1.0, 2.0, 3.0], np.float32), np.array([4.0], np.float32)):
        assert_equal(lnp.pad(lanes.asarray(v), (5, 4), mode), np.pad(v, (5, 4), mode))


def test_pad_with_a_traced_constant_and_its_gradient() -> None:
    got = lanes.vmap(lambda c: lnp.pad(lnp.ones(2), 1, constant_values=c))(
        lanes.asarray(np.array([5.0, 7.0], np.float32)))
    assert_equal(got, np.array([[5, 1, 1, 5], [7, 1, 1, 7]], np.float32))
    # Each element counted as often as the reflected padding repeats it.
    grad = lanes.grad(lambda a: lnp.pad(a, 2, "reflect").sum())(
        lanes.asarray(np.array([1.0, 2.0, 3.0], np.float32)))
    assert_equal(grad, np.array([2.0, 3.0, 2.0], np.float32))


def test_moveaxis_of_several_reshape_in_fortran_order_and_linspace_step() -> None:
    x = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
    lx = lanes.asarray(x)
    for src, dst in (([0, 1], [-1, -2]), ([0], [2]), ((2, 0), (0, 1)), (1, 0)):
        assert_equal(lnp.moveaxis(lx, src, dst), np.moveaxis(x, src, dst))
    for shape in ((4, 6), (6, -1), (24,), (2, 2, 6)):
        assert_equal(lnp.reshape(lx, shape, order="F"), np.reshape(x, shape, order="F"))
        assert_equal(lnp.reshape(lx, shape=shape), np.reshape(x, shape))
    values, step = lnp.linspace(0, 1, 5, retstep=True)
    assert step == 0.25
    assert_close(values, np.linspace(0, 1, 5).astype(np.float32))
