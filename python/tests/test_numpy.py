"""lanes.numpy against numpy on random inputs (hypothesis)."""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import lanes
import lanes.numpy as lnp
from conftest import assert_close, assert_equal

FLOATS = [np.float32, np.float64]
SHAPES = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)
NONEMPTY = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4)


def tol(dtype: Any) -> dict[str, float]:
    return {"rtol": 2e-5, "atol": 2e-5} if np.dtype(dtype) == np.float32 else \
        {"rtol": 1e-11, "atol": 1e-11}


def arrays(dtype: Any, shape: Any = SHAPES, lo: float = -10.0, hi: float = 10.0,
           nonzero: bool = False) -> st.SearchStrategy[np.ndarray]:
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        lo, hi = float(dtype.type(lo)), float(dtype.type(hi))  # exactly representable bounds
        elems = st.floats(lo, hi, width=dtype.itemsize * 8, allow_nan=False,
                          allow_subnormal=False)
        if nonzero:
            elems = elems.filter(lambda v: abs(v) > 1e-3)
    elif dtype.kind == "b":
        elems = st.booleans()
    else:
        elems = st.integers(int(lo), int(hi))
        if nonzero:
            elems = elems.filter(lambda v: v != 0)
    return hnp.arrays(dtype, shape, elements=elems)


def axis_for(data: st.DataObject, ndim: int, allow_none: bool = True,
             allow_tuple: bool = True) -> Any:
    """None, an int in [-ndim, ndim) or a tuple of distinct axes (some negative)."""
    choices: list[st.SearchStrategy] = []
    if allow_none:
        choices.append(st.none())
    if ndim > 0:
        choices.append(st.integers(-ndim, ndim - 1))
        if allow_tuple:
            choices.append(st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim).map(
                lambda axes: tuple(a - ndim if i % 2 else a for i, a in enumerate(axes))))
    if not choices:
        return None
    return data.draw(st.one_of(*choices), label="axis")


def reduced_size_nonzero(shape: tuple[int, ...], axis: Any) -> bool:
    if axis is None:
        return int(np.prod(shape)) > 0
    axes = (axis,) if isinstance(axis, int) else axis
    return all(shape[a] > 0 for a in axes)


# ---- elementwise ------------------------------------------------------------------------------

UNARY: list[tuple[str, Callable, tuple[float, float]]] = [
    ("abs", np.abs, (-10, 10)),
    ("absolute", np.absolute, (-10, 10)),
    ("negative", np.negative, (-10, 10)),
    ("positive", np.positive, (-10, 10)),
    ("exp", np.exp, (-10, 10)),
    ("log", np.log, (0.01, 10)),
    ("log1p", np.log1p, (-0.9, 10)),
    ("expm1", np.expm1, (-5, 5)),
    ("sqrt", np.sqrt, (0, 10)),
    ("tanh", np.tanh, (-5, 5)),
    ("sin", np.sin, (-10, 10)),
    ("cos", np.cos, (-10, 10)),
    ("sign", np.sign, (-10, 10)),
    ("floor", np.floor, (-10, 10)),
    ("ceil", np.ceil, (-10, 10)),
    ("round", np.round, (-10, 10)),
    ("square", np.square, (-10, 10)),
    ("isnan", np.isnan, (-10, 10)),
    ("isfinite", np.isfinite, (-10, 10)),
]


@pytest.mark.parametrize("name, ref, bounds", UNARY, ids=[u[0] for u in UNARY])
@pytest.mark.parametrize("dtype", FLOATS, ids=["f32", "f64"])
@given(data=st.data())
def test_unary(name: str, ref: Callable, bounds: tuple[float, float], dtype: Any,
               data: st.DataObject) -> None:
    x = data.draw(arrays(dtype, lo=bounds[0], hi=bounds[1]))
    got = getattr(lnp, name)(x)
    want = ref(x)
    assert got.dtype == want.dtype
    assert_close(got, want, **tol(dtype))


def test_round_half_to_even() -> None:
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5], np.float32)
    assert_equal(lnp.round(x), np.round(x))


@pytest.mark.parametrize("name", ["abs", "negative", "sign", "square"])
@given(data=st.data())
def test_unary_int32(name: str, data: st.DataObject) -> None:
    x = data.draw(arrays(np.int32, lo=-100, hi=100))
    got = getattr(lnp, name)(x)
    assert got.dtype == np.int32
    assert_equal(got, getattr(np, name)(x))


@pytest.mark.parametrize("dtype", FLOATS, ids=["f32", "f64"])
@given(data=st.data())
def test_reciprocal(dtype: Any, data: st.DataObject) -> None:
    x = data.draw(arrays(dtype, nonzero=True))
    assert_close(lnp.reciprocal(x), np.reciprocal(x), **tol(dtype))


@given(x=arrays(np.bool_))
def test_logical_not(x: np.ndarray) -> None:
    assert_equal(lnp.logical_not(x), np.logical_not(x))


BINARY: list[tuple[str, Callable, bool]] = [  # name, numpy reference, int32 allowed
    ("add", np.add, True),
    ("subtract", np.subtract, True),
    ("multiply", np.multiply, True),
    ("divide", np.divide, False),
    ("true_divide", np.true_divide, False),
    ("maximum", np.maximum, True),
    ("minimum", np.minimum, True),
    ("arctan2", np.arctan2, False),
    ("equal", np.equal, True),
    ("not_equal", np.not_equal, True),
    ("less", np.less, True),
    ("less_equal", np.less_equal, True),
    ("greater", np.greater, True),
    ("greater_equal", np.greater_equal, True),
    ("floor_divide", np.floor_divide, True),
    ("mod", np.mod, True),
    ("remainder", np.remainder, True),
]
NEEDS_NONZERO = {"divide", "true_divide", "floor_divide", "mod", "remainder"}


@pytest.mark.parametrize("name, ref, allows_int", BINARY, ids=[b[0] for b in BINARY])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32], ids=["f32", "f64", "i32"])
@given(data=st.data())
def test_binary_broadcasting(name: str, ref: Callable, allows_int: bool, dtype: Any,
                             data: st.DataObject) -> None:
    if dtype == np.int32 and not allows_int:
        return
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3))
    x = data.draw(arrays(dtype, shapes.input_shapes[0]))
    y = data.draw(arrays(dtype, shapes.input_shapes[1], nonzero=name in NEEDS_NONZERO))
    got = getattr(lnp, name)(x, y)
    want = ref(x, y)
    assert got.shape == want.shape
    assert got.dtype == want.dtype, f"{got.dtype} != numpy's {want.dtype}"
    if name in ("floor_divide", "mod", "remainder") and dtype != np.int32:
        # floor(x / y) is sensitive to the rounding of the quotient: compare x - q * y instead.
        assert_close(got, want, rtol=1e-4, atol=1e-4 * float(np.max(np.abs(y), initial=1.0)))
    else:
        assert_close(got, want, **tol(dtype))


@pytest.mark.parametrize("dtype", FLOATS, ids=["f32", "f64"])
@given(data=st.data())
def test_power(dtype: Any, data: st.DataObject) -> None:
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3))
    x = data.draw(arrays(dtype, shapes.input_shapes[0], lo=0.1, hi=4.0))
    y = data.draw(arrays(dtype, shapes.input_shapes[1], lo=-3.0, hi=3.0))
    assert_close(lnp.power(x, y), np.power(x, y), rtol=1e-5 if dtype == np.float32 else 1e-11)


def test_power_integer_exponent_of_negative_base() -> None:
    x = np.array([-2.0, -1.5, 0.0, 3.0], np.float32)
    assert_close(lnp.power(x, 3.0), np.power(x, np.float32(3.0)))
    assert_close(lnp.power(x, 2), np.power(x, 2))


@pytest.mark.parametrize("name", ["logical_and", "logical_or", "logical_xor"])
@given(data=st.data())
def test_logical_binary(name: str, data: st.DataObject) -> None:
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3))
    x = data.draw(arrays(np.bool_, shapes.input_shapes[0]))
    y = data.draw(arrays(np.bool_, shapes.input_shapes[1]))
    assert_equal(getattr(lnp, name)(x, y), getattr(np, name)(x, y))


def test_binary_with_python_scalar_keeps_dtype() -> None:
    x = np.linspace(-1, 1, 5).astype(np.float32)
    got = lnp.multiply(x, 2.0)
    assert got.dtype == np.float32
    assert_close(got, x * np.float32(2.0))
    got = lnp.add(3, np.arange(4, dtype=np.int32))
    assert got.dtype == np.int32
    assert_equal(got, np.arange(4, dtype=np.int32) + 3)


@pytest.mark.parametrize("dtype", FLOATS, ids=["f32", "f64"])
@given(data=st.data())
def test_matmul_dot_outer(dtype: Any, data: st.DataObject) -> None:
    n, k, m = (data.draw(st.integers(1, 4)) for _ in range(3))
    batch = data.draw(st.sampled_from([(), (2,), (1, 3)]))
    a = data.draw(arrays(dtype, batch + (n, k)))
    b = data.draw(arrays(dtype, (k, m)))
    assert_close(lnp.matmul(a, b), np.matmul(a, b), rtol=1e-4, atol=1e-4)
    v = data.draw(arrays(dtype, (k,)))
    w = data.draw(arrays(dtype, (k,)))
    assert_close(lnp.dot(v, w), np.dot(v, w), rtol=1e-4, atol=1e-4)
    assert_close(lnp.matmul(a, v), np.matmul(a, v), rtol=1e-4, atol=1e-4)
    assert_close(lnp.dot(a[..., 0, :], b), np.dot(a[..., 0, :], b), rtol=1e-4, atol=1e-4)
    assert_close(lnp.outer(v, w), np.outer(v, w), rtol=1e-5, atol=1e-5)


# ---- reductions -------------------------------------------------------------------------------

REDUCTIONS: list[tuple[str, bool, bool]] = [  # name, needs nonempty, int32 allowed
    ("sum", False, True),
    ("mean", True, False),
    ("prod", False, True),
    ("max", True, True),
    ("min", True, True),
    ("amax", True, True),
    ("amin", True, True),
    ("var", True, False),
    ("std", True, False),
]


@pytest.mark.parametrize("name, nonempty, allows_int", REDUCTIONS,
                         ids=[r[0] for r in REDUCTIONS])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32], ids=["f32", "f64", "i32"])
@given(data=st.data())
def test_reductions(name: str, nonempty: bool, allows_int: bool, dtype: Any,
                    data: st.DataObject) -> None:
    if dtype == np.int32 and not allows_int:
        return
    lo, hi = (0.5, 1.5) if name == "prod" and dtype != np.int32 else (-10, 10)
    if name == "prod" and dtype == np.int32:
        lo, hi = -2, 2
    x = data.draw(arrays(dtype, lo=lo, hi=hi))
    axis = axis_for(data, x.ndim)
    keepdims = data.draw(st.booleans(), label="keepdims")
    if nonempty:
        assume(reduced_size_nonzero(x.shape, axis))
    got = getattr(lnp, name)(x, axis=axis, keepdims=keepdims)
    want = getattr(np, name)(x, axis=axis, keepdims=keepdims)
    assert got.shape == want.shape
    assert got.dtype.kind == want.dtype.kind
    if dtype == np.int32:
        assert got.dtype == np.int32 or name in ("sum", "prod")
        want = want.astype(got.dtype)  # numpy accumulates in int64; int32 arithmetic wraps
    t = tol(dtype)
    assert_close(got, want, rtol=max(t["rtol"], 1e-4 if name in ("var", "std") else 0),
                 atol=max(t["atol"], 1e-4 if dtype == np.float32 else 0))


@pytest.mark.parametrize("ddof", [0, 1])
def test_var_std_ddof(rng: np.random.Generator, ddof: int) -> None:
    x = rng.normal(size=(4, 5))
    assert_close(lnp.var(x, axis=1, ddof=ddof), np.var(x, axis=1, ddof=ddof), rtol=1e-10)
    assert_close(lnp.std(x, ddof=ddof), np.std(x, ddof=ddof), rtol=1e-10)


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32], ids=["f32", "f64", "i32"])
@given(data=st.data())
def test_argmax_argmin(name: str, dtype: Any, data: st.DataObject) -> None:
    x = data.draw(arrays(dtype, NONEMPTY, lo=-5, hi=5))  # small range: ties, first one wins
    axis = axis_for(data, x.ndim, allow_tuple=False)
    keepdims = data.draw(st.booleans(), label="keepdims")
    got = getattr(lnp, name)(x, axis=axis, keepdims=keepdims)
    want = getattr(np, name)(x, axis=axis, keepdims=keepdims)
    assert got.dtype.kind in "iu"
    assert_equal(got, want)


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("shape", [(3, 4), (2, 1, 3), (5,)])
def test_argmax_argmin_keepdims_without_axis(name: str, shape: tuple[int, ...]) -> None:
    x = np.random.default_rng(2).normal(size=shape).astype(np.float32)
    got = getattr(lnp, name)(x, axis=None, keepdims=True)
    assert_equal(got, getattr(np, name)(x, axis=None, keepdims=True))  # shape (1,) * ndim


@pytest.mark.parametrize("name", ["any", "all"])
@given(data=st.data())
def test_any_all(name: str, data: st.DataObject) -> None:
    dtype = data.draw(st.sampled_from([np.bool_, np.float32, np.int32]))
    x = data.draw(arrays(dtype, lo=-1, hi=1))
    axis = axis_for(data, x.ndim)
    keepdims = data.draw(st.booleans(), label="keepdims")
    got = getattr(lnp, name)(x, axis=axis, keepdims=keepdims)
    want = getattr(np, name)(x, axis=axis, keepdims=keepdims)
    assert got.dtype == np.bool_
    assert_equal(got, want)


@pytest.mark.parametrize("shape, axis", [((0,), None), ((2, 0), None), ((2, 0), 1),
                                         ((0, 3), 0)])
def test_any_all_of_empty_arrays(shape: tuple[int, ...], axis: Any) -> None:
    x = np.zeros(shape, np.bool_)
    assert_equal(lnp.any(x, axis=axis), np.any(x, axis=axis))  # False: no element is true
    assert_equal(lnp.all(x, axis=axis), np.all(x, axis=axis))  # True: no element is false


def test_any_all_of_fractional_floats() -> None:
    x = np.array([0.0, 0.5, -0.25], np.float32)
    assert_equal(lnp.any(x), np.any(x))
    assert_equal(lnp.all(x[1:]), np.all(x[1:]))


@pytest.mark.parametrize("name", ["sum", "mean"])
@pytest.mark.parametrize("dtype", FLOATS, ids=["f32", "f64"])
@given(data=st.data())
def test_sum_mean_where(name: str, dtype: Any, data: st.DataObject) -> None:
    x = data.draw(arrays(dtype, NONEMPTY))
    mask_shape = data.draw(st.sampled_from([x.shape, x.shape[-1:], (1,) * x.ndim]))
    mask = data.draw(arrays(np.bool_, mask_shape))
    axis = axis_for(data, x.ndim)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        want = getattr(np, name)(x, axis=axis, where=mask)
    got = getattr(lnp, name)(x, axis=axis, where=mask)
    assert_close(got, want, **tol(dtype))


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32], ids=["f32", "f64", "i32"])
@given(data=st.data())
def test_cumulative(name: str, dtype: Any, data: st.DataObject) -> None:
    lo, hi = (0.5, 1.5) if name == "cumprod" else (-10, 10)
    if dtype == np.int32:
        lo, hi = (-2, 2)
    x = data.draw(arrays(dtype, lo=lo, hi=hi))
    axis = axis_for(data, x.ndim, allow_tuple=False) if x.ndim else None
    got = getattr(lnp, name)(x, axis=axis)
    want = getattr(np, name)(x, axis=axis)
    assert got.dtype.kind == want.dtype.kind
    if dtype == np.int32:  # numpy accumulates in int64; int32 arithmetic wraps around
        want = want.astype(np.int32)
    assert_close(got, want, rtol=1e-4 if dtype == np.float32 else 1e-10,
                 atol=1e-4 if dtype == np.float32 else 1e-10)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32], ids=["f32", "f64", "i32"])
@given(data=st.data())
def test_sort_argsort(dtype: Any, data: st.DataObject) -> None:
    x = data.draw(arrays(dtype, NONEMPTY, lo=-5, hi=5))
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1), label="axis")
    assert_equal(lnp.sort(x, axis=axis), np.sort(x, axis=axis))
    order = np.asarray(lnp.argsort(x, axis=axis))
    assert order.dtype.kind in "iu"
    # Ties may come in any order: the permutation must sort x and be a permutation.
    assert_equal(np.take_along_axis(x, order.astype(np.int64), axis=axis),
                 np.sort(x, axis=axis))
    assert_equal(np.sort(order, axis=axis),
                 np.broadcast_to(np.arange(x.shape[axis]).reshape(
                     [-1 if i == axis % x.ndim else 1 for i in range(x.ndim)]), x.shape))


def test_sort_flat_axis_none() -> None:
    x = np.array([[3.0, 1.0], [2.0, 0.0]], np.float32)
    assert_equal(lnp.sort(x, axis=None), np.sort(x, axis=None))


# ---- shapes -----------------------------------------------------------------------------------


@given(data=st.data())
def test_reshape(data: st.DataObject) -> None:
    x = data.draw(arrays(np.float32))
    target = data.draw(st.sampled_from([(x.size,), (1, x.size), (x.size, 1), (-1,)]))
    assert_equal(lnp.reshape(x, target), np.reshape(x, target))
    assert_equal(lnp.ravel(x), np.ravel(x))


@given(data=st.data())
def test_transpose(data: st.DataObject) -> None:
    x = data.draw(arrays(np.float64))
    perm = data.draw(st.permutations(range(x.ndim)))
    assert_equal(lnp.transpose(x, perm), np.transpose(x, perm))
    assert_equal(lnp.transpose(x), np.transpose(x))


@given(data=st.data())
def test_moveaxis_swapaxes(data: st.DataObject) -> None:
    x = data.draw(arrays(np.float32, NONEMPTY))
    a = data.draw(st.integers(-x.ndim, x.ndim - 1))
    b = data.draw(st.integers(-x.ndim, x.ndim - 1))
    assert_equal(lnp.moveaxis(x, a, b), np.moveaxis(x, a, b))
    assert_equal(lnp.swapaxes(x, a, b), np.swapaxes(x, a, b))


@given(data=st.data())
def test_expand_dims(data: st.DataObject) -> None:
    x = data.draw(arrays(np.float32))
    axis = data.draw(st.integers(-x.ndim - 1, x.ndim))
    assert_equal(lnp.expand_dims(x, axis), np.expand_dims(x, axis))
    if x.ndim >= 1:
        axes = (0, -1)
        assert_equal(lnp.expand_dims(x, axes), np.expand_dims(x, axes))


@given(data=st.data())
def test_squeeze(data: st.DataObject) -> None:
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=1, max_side=3))
    x = data.draw(arrays(np.float32, shape))
    assert_equal(lnp.squeeze(x), np.squeeze(x))
    ones = [i for i, d in enumerate(shape) if d == 1]
    if ones:
        axis = data.draw(st.sampled_from(ones)) - (len(shape) if data.draw(st.booleans()) else 0)
        assert_equal(lnp.squeeze(x, axis=axis), np.squeeze(x, axis=axis))


@given(data=st.data())
def test_concatenate_stack(data: st.DataObject) -> None:
    shape = data.draw(NONEMPTY)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    n = data.draw(st.integers(1, 3))
    parts = []
    for _ in range(n):
        s = list(shape)
        s[axis] = data.draw(st.integers(0, 3))
        parts.append(data.draw(arrays(np.float32, tuple(s))))
    assert_equal(lnp.concatenate(parts, axis=axis), np.concatenate(parts, axis=axis))
    same = [data.draw(arrays(np.float32, shape)) for _ in range(n)]
    stack_axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    assert_equal(lnp.stack(same, axis=stack_axis), np.stack(same, axis=stack_axis))


@given(data=st.data())
def test_flip(data: st.DataObject) -> None:
    x = data.draw(arrays(np.float64))
    axis = axis_for(data, x.ndim)
    assert_equal(lnp.flip(x, axis=axis), np.flip(x, axis=axis))


@given(data=st.data())
def test_take(data: st.DataObject) -> None:
    x = data.draw(arrays(np.float32, NONEMPTY))
    axis = data.draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1)))
    n = x.size if axis is None else x.shape[axis]
    idx = data.draw(hnp.arrays(np.int32, data.draw(st.sampled_from([(3,), (2, 2), ()])),
                               elements=st.integers(0, n - 1)))
    assert_equal(lnp.take(x, idx, axis=axis), np.take(x, idx, axis=axis))


@given(data=st.data())
def test_pad(data: st.DataObject) -> None:
    x = data.draw(arrays(np.float32, NONEMPTY))
    widths = [(data.draw(st.integers(0, 2)), data.draw(st.integers(0, 2))) for _ in x.shape]
    value = data.draw(st.sampled_from([0.0, -1.5]))
    assert_equal(lnp.pad(x, widths, constant_values=value),
                 np.pad(x, widths, constant_values=value))
    assert_equal(lnp.pad(x, 1), np.pad(x, 1))


@pytest.mark.parametrize("dtype", [np.float32, np.int32], ids=["f32", "i32"])
@given(data=st.data())
def test_where(dtype: Any, data: st.DataObject) -> None:
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3, max_side=3))
    c = data.draw(arrays(np.bool_, shapes.input_shapes[0]))
    x = data.draw(arrays(dtype, shapes.input_shapes[1]))
    y = data.draw(arrays(dtype, shapes.input_shapes[2]))
    got = lnp.where(c, x, y)
    assert got.dtype == np.dtype(dtype)
    assert_equal(got, np.where(c, x, y))


def test_where_with_scalars_keeps_dtype() -> None:
    c = np.array([True, False, True])
    x = np.array([1.0, 2.0, 3.0], np.float32)
    got = lnp.where(c, x, 0.0)
    assert got.dtype == np.float32
    assert_equal(got, np.where(c, x, np.float32(0.0)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32], ids=["f32", "f64", "i32"])
@given(data=st.data())
def test_clip(dtype: Any, data: st.DataObject) -> None:
    x = data.draw(arrays(dtype))
    lo = data.draw(st.one_of(st.none(), st.integers(-5, 0)))
    hi = data.draw(st.one_of(st.none(), st.integers(1, 5)))
    got = lnp.clip(x, lo, hi)
    assert got.dtype == np.dtype(dtype)
    assert_equal(got, np.clip(x, lo, hi) if (lo, hi) != (None, None) else x)


EINSUMS: list[tuple[str, list[tuple[int, ...]]]] = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij->ji", [(2, 3)]),
    ("ii->i", [(3, 3)]),
    ("ii->", [(3, 3)]),
    ("ij->", [(2, 3)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]),
    ("i,i->", [(4,), (4,)]),
    ("i,j->ij", [(2,), (3,)]),
    ("ijk->kji", [(2, 3, 4)]),
    ("ij,kj->ik", [(2, 3), (4, 3)]),
    ("bhqd,bhkd->bhqk", [(1, 2, 3, 4), (1, 2, 5, 4)]),
    ("...ij,...jk->...ik", [(2, 2, 3), (2, 3, 1)]),
]


@pytest.mark.parametrize("spec, shapes", EINSUMS, ids=[e[0] for e in EINSUMS])
def test_einsum(rng: np.random.Generator, spec: str, shapes: list[tuple[int, ...]]) -> None:
    ops = [rng.normal(size=s).astype(np.float32) for s in shapes]
    assert_close(lnp.einsum(spec, *ops), np.einsum(spec, *ops), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("a_shape, b_shape, axes", [
    ((2, 3, 4), (3, 4, 5), 2),
    ((2, 3), (3, 4), 1),
    ((2, 3), (4, 5), 0),
    ((2, 3, 4), (4, 3, 5), ([1, 2], [1, 0])),
    ((3, 4), (4, 3), ((0,), (1,))),
    ((2, 3, 4), (2, 5), (0, 0)),
])
def test_tensordot(rng: np.random.Generator, a_shape: tuple[int, ...],
                   b_shape: tuple[int, ...], axes: Any) -> None:
    a = rng.normal(size=a_shape)
    b = rng.normal(size=b_shape)
    assert_close(lnp.tensordot(a, b, axes), np.tensordot(a, b, axes), rtol=1e-10)


@given(data=st.data())
def test_broadcast_to(data: st.DataObject) -> None:
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=1, max_dims=3, max_side=3))
    x = data.draw(arrays(np.float32, shapes.input_shapes[0]))
    assert_equal(lnp.broadcast_to(x, shapes.result_shape),
                 np.broadcast_to(x, shapes.result_shape))


# ---- creation ---------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(), 0, 3, (2, 3), (1, 0, 2)], ids=repr)
@pytest.mark.parametrize("dtype", [None, np.float64, np.int32, np.bool_])
def test_zeros_ones(shape: Any, dtype: Any) -> None:
    for name in ("zeros", "ones"):
        got = getattr(lnp, name)(shape, dtype=dtype)
        want = getattr(np, name)(shape, dtype=np.float32 if dtype is None else dtype)
        assert got.dtype == want.dtype
        assert_equal(got, want)


@pytest.mark.parametrize("fill, dtype, want_dtype", [
    (2.5, None, np.float32), (3, None, np.int32), (True, None, np.bool_),
    (7, np.float64, np.float64), (-1.0, np.int64, np.int64),
])
def test_full(fill: Any, dtype: Any, want_dtype: Any) -> None:
    got = lnp.full((2, 3), fill, dtype=dtype)
    assert got.dtype == np.dtype(want_dtype)
    assert_equal(got, np.full((2, 3), fill, dtype=want_dtype))


@pytest.mark.parametrize("args, kwargs", [
    ((5,), {}), ((2, 7), {}), ((0, 10, 3), {}), ((10, 0, -2), {}), ((0.0, 1.0, 0.25), {}),
    ((1, 2, 0.1), {}), ((3,), {"dtype": np.float64}), ((-3, 3), {"dtype": np.int64}), ((0,), {}),
], ids=repr)
def test_arange(args: tuple, kwargs: dict) -> None:
    got = lnp.arange(*args, **kwargs)
    want = np.arange(*args, **kwargs)
    if "dtype" not in kwargs:  # jax's defaults: int32 for integer arguments, else float32
        want = want.astype(np.int32 if want.dtype.kind == "i" else np.float32)
    assert got.dtype == want.dtype
    assert_close(got, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("start, stop, num, endpoint", [
    (0.0, 1.0, 5, True), (0.0, 1.0, 5, False), (-2.0, 3.0, 1, True), (1.0, -1.0, 7, True),
    (0.0, 10.0, 0, True), (0.0, 1.0, 50, True),
])
def test_linspace(start: float, stop: float, num: int, endpoint: bool) -> None:
    got = lnp.linspace(start, stop, num, endpoint=endpoint)
    want = np.linspace(start, stop, num, endpoint=endpoint, dtype=np.float32)
    assert got.dtype == np.float32
    assert_close(got, want, rtol=1e-6, atol=1e-6)
    got64 = lnp.linspace(start, stop, num, endpoint=endpoint, dtype=np.float64)
    assert_close(got64, np.linspace(start, stop, num, endpoint=endpoint), rtol=1e-12)


@pytest.mark.parametrize("n", [0, 1, 4])
@pytest.mark.parametrize("dtype", [None, np.float64, np.int32])
def test_eye(n: int, dtype: Any) -> None:
    got = lnp.eye(n, dtype=dtype)
    want = np.eye(n, dtype=np.float32 if dtype is None else dtype)
    assert got.dtype == want.dtype
    assert_equal(got, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.bool_])
def test_like_constructors(dtype: Any) -> None:
    x = np.zeros((2, 3), dtype=dtype)
    for name in ("zeros_like", "ones_like"):
        got = getattr(lnp, name)(lanes.asarray(x))
        want = getattr(np, name)(x)
        assert got.dtype == want.dtype
        assert_equal(got, want)
    got = lnp.full_like(x, 1)
    assert got.dtype == np.dtype(dtype)
    assert_equal(got, np.full_like(x, 1))
    assert lnp.zeros_like(x, dtype=np.float64).dtype == np.float64


def test_array_and_asarray() -> None:
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert_equal(lnp.array(a), a)
    assert_equal(lnp.asarray([[1, 2], [3, 4]], dtype=np.float64), np.array([[1.0, 2], [3, 4]]))
    assert lnp.asarray([1.0, 2.0]).dtype == np.float32


def test_dtypes_are_numpy_dtypes() -> None:
    assert lnp.float32 is np.float32
    assert lnp.int32 is np.int32
    assert lnp.zeros(2, dtype=lnp.float64).dtype == np.float64
    assert lnp.pi == np.pi


# ---- missing names ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["fft", "linalg_placeholder_that_numpy_lacks", "frexp"])
def test_missing_name_raises_attribute_error(name: str) -> None:
    with pytest.raises(AttributeError) as info:
        getattr(lnp, name)
    if hasattr(np, name):
        assert "lanes" in str(info.value) and name in str(info.value)


def test_missing_numpy_name_says_lanes_lacks_it() -> None:
    with pytest.raises(AttributeError, match=r"lanes\.numpy has no 'fft'"):
        lnp.fft  # noqa: B018
    assert not hasattr(lnp, "fft")


def test_asarray_of_lists_holding_traced_arrays_stacks_them() -> None:
    ones = lanes.asarray(np.ones(2, np.float32))
    got = lanes.vmap(lambda a: lnp.asarray([a, 1.0]))(ones)
    assert got.dtype == np.float32
    assert_equal(got, np.ones((2, 2), np.float32))
    assert float(lanes.grad(lambda a: lnp.asarray([a, 2 * a, 3]).sum())(
        lanes.asarray(np.float32(2.0)))) == 3.0
    three = lanes.asarray(np.int32(3))
    got = lanes.jit(lambda a: lnp.array([[a, 0], [0, a]]))(three)
    assert got.dtype == np.int32
    assert_equal(got, np.array([[3, 0], [0, 3]], np.int32))
    got = lanes.jit(lambda a: lnp.array([[a, 0.5], [0, a]]))(three)  # a float makes float32
    assert_equal(got, np.array([[3, 0.5], [0, 3]], np.float32))
    narrow = lanes.asarray(np.array([1, 2], np.uint8))
    assert lnp.asarray([narrow, narrow], dtype=np.float64).dtype == np.float64
    assert lanes.asarray((lanes.asarray(True), False)).dtype == np.bool_
    with pytest.raises(lanes.LanesError, match="different shapes"):
        lnp.asarray([ones, 1.0])
