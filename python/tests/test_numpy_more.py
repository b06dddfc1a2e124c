"""lanes.numpy's functions of _numpy_more.py against numpy on the same inputs (nan, signed zeros
and infinities among them), plus vmap / grad / jit for the ones that trace."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import lanes
import lanes.numpy as lnp
from conftest import assert_close, assert_equal

X = np.array([-2.5, -0.0, 0.0, 1.5, 3.0, np.nan, np.inf, -np.inf], np.float32)
Y = np.array([1.0, -2.0, 0.5, np.nan, 2.0, -0.0, 3.0, 1.0], np.float32)
M = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4) - 5.0


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name", ["signbit", "cbrt", "deg2rad", "rad2deg", "radians", "degrees",
                                  "exp2", "fabs", "isposinf", "isneginf", "rint", "sinc",
                                  "nan_to_num"])
def test_unary(name: str) -> None:
    got = np.asarray(getattr(lnp, name)(X))
    np.testing.assert_allclose(got, getattr(np, name)(X), rtol=2e-6, equal_nan=True)
    assert got.dtype == getattr(np, name)(X).dtype


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name", ["copysign", "fmax", "fmin", "fmod", "heaviside", "logaddexp2",
                                  "float_power"])
def test_binary(name: str) -> None:
    a = np.abs(X) if name == "float_power" else X
    want = getattr(np, name)(a, Y)
    np.testing.assert_allclose(np.asarray(getattr(lnp, name)(a, Y)), want.astype(np.float32),
                               rtol=2e-6, equal_nan=True)


@pytest.mark.parametrize("dtypes", [(np.int32, np.int32), (np.int64, np.int32),
                                    (np.uint8, np.int32), (np.uint8, np.uint8)])
def test_gcd_and_lcm_against_numpy(dtypes: tuple[Any, Any]) -> None:
    rng = np.random.default_rng(7)
    signed = [np.dtype(d).kind == "i" for d in dtypes]
    a = rng.integers(-60 if signed[0] else 0, 61, (5, 7)).astype(dtypes[0])
    b = rng.integers(-60 if signed[1] else 0, 61, (7,)).astype(dtypes[1])  # broadcast
    a[0, :3], b[:2] = 0, 0  # gcd(x, 0) = |x|, gcd(0, 0) = 0, lcm(x, 0) = 0
    for name in ("gcd", "lcm"):
        got, want = np.asarray(getattr(lnp, name)(a, b)), getattr(np, name)(a, b)
        assert got.dtype == want.dtype, name
        assert_equal(got, want)
    assert_equal(np.asarray(lnp.gcd(12, lanes.asarray(np.int32(18)))), np.int32(6))
    with pytest.raises(lanes.LanesError, match="gcd: integer arrays only"):
        lnp.gcd(np.float32(2.0), 4)


def test_gcd_under_vmap_and_jit() -> None:
    # Each example's loop runs its own number of steps (a masked while under vmap).
    a = np.array([[48, 7], [1071, 0], [0, 0]], np.int32)
    b = np.array([[18, 13], [462, 5], [0, 9]], np.int32)
    assert_equal(np.asarray(lanes.vmap(lnp.gcd)(a, b)), np.gcd(a, b))
    assert_equal(np.asarray(lanes.jit(lnp.lcm)(a, b)), np.lcm(a, b))


def test_integer_fmod_ldexp_and_signbit() -> None:
    a, b = np.array([7, -7, 7, -7, 0]), np.array([3, 3, -3, -3, 5])
    assert_equal(lnp.fmod(a.astype(np.int32), b.astype(np.int32)), np.fmod(a, b).astype(np.int32))
    e = np.array([0, 1, -2, 3], np.int32)
    np.testing.assert_allclose(np.asarray(lnp.ldexp(np.float32([1.5, 1.5, 1.5, -2.0]), e)),
                               np.ldexp(np.float32([1.5, 1.5, 1.5, -2.0]), e))
    assert_equal(lnp.signbit(np.array([-1, 0, 2], np.int32)), np.array([True, False, False]))


@pytest.mark.parametrize("k", range(-1, 5))
@pytest.mark.parametrize("axes", [(0, 1), (1, 2), (2, 0)])
def test_rot90(k: int, axes: tuple[int, int]) -> None:
    assert_equal(lnp.rot90(M, k, axes), np.rot90(M, k, axes))


def test_building_and_splitting() -> None:
    for f in ("atleast_1d", "atleast_2d", "atleast_3d"):
        for a in (np.float32(2.0), np.arange(3.0), np.ones((2, 3))):
            assert_equal(getattr(lnp, f)(a), getattr(np, f)(a))
    first, second = lnp.atleast_2d(np.arange(2.0), 1.0)
    assert first.shape == (1, 2) and second.shape == (1, 1)
    assert [a.shape for a in lnp.broadcast_arrays(np.zeros((3, 1)), np.zeros(4))] == [(3, 4)] * 2
    assert_equal(lnp.fliplr(M[0]), np.fliplr(M[0]))
    assert_equal(lnp.flipud(M[0]), np.flipud(M[0]))
    assert_equal(lnp.dstack([M[0], M[1]]), np.dstack([M[0], M[1]]))
    for got, want in zip(lnp.hsplit(M, 3), np.hsplit(M, 3)):
        assert_equal(got, want)
    for got, want in zip(lnp.dsplit(M, [1, 3]), np.dsplit(M, [1, 3])):
        assert_equal(got, want)
    assert_equal(lnp.tri(3, 5, 1), np.tri(3, 5, 1, dtype=np.float32))
    assert_equal(lnp.indices((2, 3)), np.indices((2, 3)).astype(np.int32))
    rows, cols = lnp.diag_indices(3)
    assert_equal(lnp.asarray(np.eye(3))[rows, cols], np.ones(3))
    np.testing.assert_allclose(np.asarray(lnp.logspace(0, 2, 5)), np.logspace(0, 2, 5), rtol=1e-6)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # numpy's cross of 2-vectors
def test_products() -> None:
    assert_equal(lnp.kron(M[0], M[1, :2, :2]), np.kron(M[0], M[1, :2, :2]))
    assert_equal(lnp.kron(np.arange(3.0), M[0]), np.kron(np.arange(3.0), M[0]))
    assert_close(lnp.inner(M, M[0]), np.inner(M, M[0]))
    assert_close(lnp.vdot(M, M), np.vdot(M, M))
    a, b = M[0, :, :3], M[1, :, :3]
    assert_close(lnp.cross(a, b), np.cross(a, b))
    assert_close(lnp.cross(M[0, :2, :3], M[1, :2, :3], axis=0),
                 np.cross(M[0, :2, :3], M[1, :2, :3], axis=0))
    assert_close(lnp.cross(a[:, :2], b[:, :2]), a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0])


def test_reductions_and_nan_variants() -> None:
    assert_equal(lnp.ptp(M, axis=1), np.ptp(M, axis=1))
    z = np.array([1.0, np.nan, 3.0, -1.0], np.float32)
    assert int(lnp.nanargmax(z)) == np.nanargmax(z) and int(lnp.nanargmin(z)) == np.nanargmin(z)
    assert float(lnp.nanprod(z)) == np.nanprod(z)
    assert_equal(lnp.nancumsum(z), np.nancumsum(z))
    y = np.arange(5.0, dtype=np.float32) ** 2
    assert float(lnp.trapezoid(y)) == np.trapezoid(y)
    assert_close(lnp.trapezoid(y, x=np.linspace(0, 1, 5, dtype=np.float32)),
                 np.trapezoid(y, x=np.linspace(0, 1, 5)))
    assert_close(lnp.trapezoid(M, axis=1), np.trapezoid(M, axis=1))
    assert_close(lnp.polyval([1.0, -2.0, 3.0], M), np.polyval([1.0, -2.0, 3.0], M))
    assert_equal(lnp.select([X < 0, X > 1], [X * 10, X * 100], -1.0),
                 np.select([X < 0, X > 1], [X * 10, X * 100], -1.0))


def test_interp_bincount_histogram_indices_unique() -> None:
    xp, fp = np.array([0.0, 1.0, 3.0]), np.array([0.0, 10.0, 30.0])
    q = np.array([-1.0, 0.0, 0.5, 1.0, 2.0, 3.0, 4.0])
    assert_close(lnp.interp(q, xp, fp), np.interp(q, xp, fp))
    assert_close(lnp.interp(q, xp, fp, left=-5.0, right=99.0),
                 np.interp(q, xp, fp, left=-5.0, right=99.0))
    assert_equal(lnp.bincount(np.array([0, 2, 2, 5])), np.bincount([0, 2, 2, 5]).astype(np.int32))
    assert_close(lnp.bincount(np.array([0, 2, 2]), weights=np.array([0.5, 1.0, 2.0]), length=4),
                 np.bincount([0, 2, 2], weights=[0.5, 1.0, 2.0], minlength=4))
    data = np.array([0.0, 1.0, 1.0, 2.5, 3.0, 7.0, -1.0])
    for bins, rng in ((3, None), (4, (0.0, 4.0)), (np.array([0.0, 0.5, 2.0, 3.0]), None)):
        counts, edges = lnp.histogram(data, bins=bins, range=rng)
        want_counts, want_edges = np.histogram(data, bins=bins, range=rng)
        assert_close(counts, want_counts.astype(np.float32))
        assert_close(edges, want_edges)
    dens, _ = lnp.histogram(data, bins=4, range=(0.0, 4.0), density=True)
    assert_close(dens, np.histogram(data, bins=4, range=(0.0, 4.0), density=True)[0])
    for got, want in zip(lnp.unravel_index(np.array([5, 7, 0]), (2, 4)),
                         np.unravel_index([5, 7, 0], (2, 4))):
        assert_equal(got, want)
    assert_equal(lnp.ravel_multi_index((np.array([1, 0]), np.array([1, 3])), (2, 4)),
                 np.ravel_multi_index(([1, 0], [1, 3]), (2, 4)))
    assert_equal(lnp.ravel_multi_index((np.array([2]), np.array([-1])), (2, 4), mode="clip"),
                 np.ravel_multi_index(([2], [-1]), (2, 4), mode="clip"))
    with pytest.raises(lanes.LanesError, match="out of bounds"):
        lnp.ravel_multi_index((np.array([2]), np.array([0])), (2, 4))
    v = np.array([3, 1, 3, 2, 1], np.int32)
    assert_equal(lnp.unique(v), np.unique(v))
    assert_equal(lanes.jit(lambda a: lnp.unique(a, size=4))(v), np.array([1, 2, 3, 1], np.int32))
    assert_equal(lanes.jit(lambda a: lnp.unique(a, size=2, fill_value=0))(v), np.array([1, 2]))


def test_traced_counts_need_a_size() -> None:
    v = np.array([0, 1, 1], np.int32)
    with pytest.raises(lanes.LanesError, match="length="):
        lanes.jit(lnp.bincount)(v)
    assert_equal(lanes.jit(lambda a: lnp.bincount(a, length=3))(v), np.array([1, 2, 0], np.int32))
    with pytest.raises(lanes.LanesError, match="size="):
        lanes.jit(lnp.unique)(v)
    with pytest.raises(lanes.LanesError, match="range="):
        lanes.jit(lambda a: lnp.histogram(a, bins=3))(np.float32([1.0, 2.0]))


def test_interp_under_vmap_and_grad() -> None:
    xp, fp = np.array([0.0, 1.0, 3.0], np.float32), np.array([0.0, 10.0, 30.0], np.float32)
    q = np.array([-1.0, 0.5, 2.0, 4.0], np.float32)
    assert_close(lanes.vmap(lambda v: lnp.interp(v, xp, fp))(q), np.interp(q, xp, fp))
    assert_close(lanes.grad(lambda v: lnp.interp(v, xp, fp).sum())(q), [0.0, 10.0, 10.0, 0.0])


@pytest.mark.parametrize("args,want", [((np.int32, 1.0), np.float32), ((np.float32, np.float64),
                                       np.float64), ((1, 2), np.int32), ((np.bool_, 1), np.int32),
                                       ((np.uint8, np.int32), np.int32), ((2.0,), np.float32),
                                       ((np.bool_, np.bool_), np.bool_)])
def test_result_type_is_lanes_promotion(args: tuple, want: Any) -> None:
    assert lnp.result_type(*args) == np.dtype(want)
    if len(args) == 2 and not isinstance(args[0], (int, float)):
        assert lnp.result_type(lnp.zeros((2,), args[0]), args[1]) == np.dtype(want)


def test_dtype_and_shape_queries() -> None:
    assert lnp.promote_types("uint8", "int32") == np.int32
    assert lnp.can_cast(np.int32, np.float64) and not lnp.can_cast(np.float64, np.int32)
    assert lnp.issubdtype(np.float32, np.floating) and not lnp.iscomplexobj(M)
    assert lnp.isscalar(3) and lnp.isscalar(lnp.zeros(())) and not lnp.isscalar(lnp.zeros(2))
    assert (lnp.shape(M), lnp.ndim(M), lnp.size(M), lnp.size(M, 1)) == ((2, 3, 4), 3, 24, 3)
