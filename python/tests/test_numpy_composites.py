"""lanes.numpy's composed functions (lanes/_composites.py: tile, roll, diag, median, linalg.norm,
...) against numpy on the same arrays, and under vmap and grad."""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np
import pytest

import lanes
import lanes.numpy as lnp
from conftest import assert_close, assert_equal


_rng = np.random.default_rng(0)
_x = _rng.normal(size=(3, 4)).astype(np.float32)
_y = _rng.normal(size=(3, 4)).astype(np.float32)
_u = _rng.uniform(-0.99, 0.99, size=(3, 4)).astype(np.float32)
_v = _rng.normal(size=5).astype(np.float32)
_i = _rng.integers(-4, 4, size=(3, 4)).astype(np.int32)
_order = np.argsort(_x, 1)

# (name, call): the composed functions, called with lanes.numpy and with numpy as `m` on the
# same arrays.
_COMPOSITES: list[tuple[str, Callable]] = [
    ("isinf", lambda m, x, y, u, v, i: m.isinf(m.asarray(np.array([1, np.inf, -np.inf, np.nan],
                                                                   np.float32)))),
    ("isclose", lambda m, x, y, u, v, i: m.isclose(x, x + 1e-6)),
    ("allclose", lambda m, x, y, u, v, i: m.allclose(x, y)),
    ("log2", lambda m, x, y, u, v, i: m.log2(m.abs(x))),
    ("log10", lambda m, x, y, u, v, i: m.log10(m.abs(x))),
    ("tan", lambda m, x, y, u, v, i: m.tan(u)),
    ("sinh", lambda m, x, y, u, v, i: m.sinh(x)),
    ("cosh", lambda m, x, y, u, v, i: m.cosh(x)),
    ("arctan", lambda m, x, y, u, v, i: m.arctan(x)),
    ("arcsin", lambda m, x, y, u, v, i: m.arcsin(u)),
    ("arccos", lambda m, x, y, u, v, i: m.arccos(u)),
    ("hypot", lambda m, x, y, u, v, i: m.hypot(x, y)),
    ("logaddexp", lambda m, x, y, u, v, i: m.logaddexp(x, y)),
    ("trunc", lambda m, x, y, u, v, i: m.trunc(x * 3)),
    ("tile", lambda m, x, y, u, v, i: m.tile(x, (2, 1, 3))),
    ("tile_int", lambda m, x, y, u, v, i: m.tile(v, 2)),
    ("repeat", lambda m, x, y, u, v, i: m.repeat(x, 2, axis=1)),
    ("repeat_flat", lambda m, x, y, u, v, i: m.repeat(x, 3)),
    ("roll", lambda m, x, y, u, v, i: m.roll(x, 1, axis=1)),
    ("roll_flat", lambda m, x, y, u, v, i: m.roll(x, -5)),
    ("roll_axes", lambda m, x, y, u, v, i: m.roll(x, (1, 2), axis=(0, 1))),
    ("triu", lambda m, x, y, u, v, i: m.triu(x, 1)),
    ("tril", lambda m, x, y, u, v, i: m.tril(x, -1)),
    ("diag_of_matrix", lambda m, x, y, u, v, i: m.diag(x, 1)),
    ("diag_below", lambda m, x, y, u, v, i: m.diag(x, -1)),
    ("diag_of_vector", lambda m, x, y, u, v, i: m.diag(v)),
    ("diag_above", lambda m, x, y, u, v, i: m.diag(v, 2)),
    ("diag_vector_below", lambda m, x, y, u, v, i: m.diag(v, -1)),
    ("trace", lambda m, x, y, u, v, i: m.trace(x)),
    ("trace_offset", lambda m, x, y, u, v, i: m.trace(x, 1)),
    ("vstack", lambda m, x, y, u, v, i: m.vstack([x, y])),
    ("vstack_vectors", lambda m, x, y, u, v, i: m.vstack([v, v])),
    ("hstack", lambda m, x, y, u, v, i: m.hstack([x, y])),
    ("hstack_vectors", lambda m, x, y, u, v, i: m.hstack([v, v])),
    ("diff", lambda m, x, y, u, v, i: m.diff(x)),
    ("diff_twice", lambda m, x, y, u, v, i: m.diff(x, 2, axis=0)),
    ("take_along_axis", lambda m, x, y, u, v, i: m.take_along_axis(x, m.asarray(_order), 1)),
    ("count_nonzero", lambda m, x, y, u, v, i: m.count_nonzero(i, axis=1)),
    ("average", lambda m, x, y, u, v, i: m.average(x, axis=1, weights=m.arange(1.0, 5.0))),
    ("median", lambda m, x, y, u, v, i: m.median(x, axis=1)),
    ("median_all", lambda m, x, y, u, v, i: m.median(x)),
    ("median_keepdims", lambda m, x, y, u, v, i: m.median(x, axis=0, keepdims=True)),
    ("norm", lambda m, x, y, u, v, i: m.linalg.norm(x)),
    ("norm_1", lambda m, x, y, u, v, i: m.linalg.norm(v, 1)),
    ("norm_inf", lambda m, x, y, u, v, i: m.linalg.norm(x, np.inf, axis=1)),
    ("norm_3", lambda m, x, y, u, v, i: m.linalg.norm(v, 3)),
]


@pytest.mark.parametrize("name,call", _COMPOSITES, ids=[c[0] for c in _COMPOSITES])
def test_composed_numpy_functions_match_numpy(name: str, call: Callable) -> None:
    arrays = (_x, _y, _u, _v, _i)
    got = call(lnp, *(lanes.asarray(a) for a in arrays))
    want = call(np, *arrays)
    assert np.asarray(got).shape == np.shape(want), name
    np.testing.assert_allclose(np.asarray(got), want, rtol=2e-5, atol=2e-6, err_msg=name)


def test_composed_splits_and_grids_match_numpy() -> None:
    x, v = lanes.asarray(_x), lanes.asarray(_v)
    pairs = [(lnp.split(x, 2, axis=1), np.split(_x, 2, axis=1)),
             (lnp.split(v, [1, 3]), np.split(_v, [1, 3])),
             (lnp.meshgrid(v, x[0]), np.meshgrid(_v, _x[0])),
             (lnp.meshgrid(v, x[0], indexing="ij"), np.meshgrid(_v, _x[0], indexing="ij"))]
    for got, want in pairs:
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert_equal(g, w)


def test_composed_functions_batch_and_differentiate() -> None:
    x = lanes.asarray(_x)
    assert_close(lanes.grad(lambda a: lnp.sinh(a).sum())(x), np.cosh(_x))
    assert_close(lanes.grad(lambda a: lnp.linalg.norm(a))(x), _x / np.linalg.norm(_x))
    assert_equal(lanes.vmap(lambda r: lnp.roll(r, 1))(x), np.roll(_x, 1, axis=1))
    assert_close(lanes.vmap(lnp.median)(x), np.median(_x, axis=1))


def test_nonzero_argwhere_and_where_with_and_without_size() -> None:
    a = np.array([[0, 3, 0], [5, 0, 7]], np.int32)
    x = lanes.asarray(a)
    for got, want in zip(lnp.nonzero(x), np.nonzero(a)):
        assert_equal(got, want.astype(np.int64))
    assert_equal(lnp.argwhere(x), np.argwhere(a))
    assert_equal(lnp.flatnonzero(x), np.flatnonzero(a))
    for got, want in zip(lnp.where(x > 0), np.where(a > 0)):
        assert_equal(got, want.astype(np.int64))
    assert lnp.argwhere(lanes.asarray(3)).shape == np.argwhere(3).shape
    assert lnp.argwhere(lanes.asarray(0)).shape == np.argwhere(0).shape
    # jax's static-size form: the first `size`, padded with fill_value; traceable.
    rows, cols = lanes.jit(lambda m: lnp.nonzero(m, size=4, fill_value=-1))(x)
    assert_equal(rows, np.array([0, 1, 1, -1]))
    assert_equal(cols, np.array([1, 0, 2, -1]))
    firsts = lanes.vmap(lambda r: lnp.flatnonzero(r, size=2))(x)
    assert_equal(firsts, np.array([[1, 0], [0, 2]]))
    with pytest.raises(lanes.LanesError, match="give size="):
        lanes.jit(lambda m: lnp.nonzero(m))(x)


@pytest.mark.parametrize("q,kwargs", [(0.3, {}), ([0.1, 0.5, 0.9], {}), (0.5, {"axis": 1}),
                                      (0.25, {"axis": 0, "keepdims": True}), (1.0, {}),
                                      ([0.2, 0.4], {"keepdims": True})], ids=repr)
def test_quantile_and_percentile_match_numpys_linear_method(q: Any, kwargs: dict) -> None:
    x = np.random.default_rng(0).normal(size=(4, 7)).astype(np.float32)
    assert_close(lnp.quantile(lanes.asarray(x), q, **kwargs), np.quantile(x, q, **kwargs))
    percent = np.asarray(q) * 100
    assert_close(lnp.percentile(lanes.asarray(x), percent, **kwargs),
                 np.percentile(x, percent, **kwargs), atol=1e-5)


@pytest.mark.parametrize("name", ["nansum", "nanmax", "nanmin", "nanmean", "nanvar", "nanstd"])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_nan_reductions_ignore_nan_as_numpy(name: str, axis: Any) -> None:
    y = np.random.default_rng(0).normal(size=(4, 7)).astype(np.float32)
    y[0, 2] = np.nan
    y[1, :] = np.nan  # a row of NaN only: NaN out, where numpy also warns
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = getattr(np, name)(y, axis=axis)
    got = np.asarray(getattr(lnp, name)(lanes.asarray(y), axis=axis))
    assert got.shape == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, equal_nan=True)
