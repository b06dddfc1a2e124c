"""lanes.Array: properties, operators, indexing, .at updates and numpy / DLPack interop."""

from __future__ import annotations

import operator
from typing import Any, Callable

import numpy as np
import pytest

import lanes
from conftest import assert_close, assert_equal


def data_address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


@pytest.fixture
def a() -> np.ndarray:
    return np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 7.5


# ---- properties -------------------------------------------------------------------------------


def test_shape_is_tuple_of_ints(a: np.ndarray) -> None:
    x = lanes.asarray(a)
    assert x.shape == (2, 3, 4)
    assert isinstance(x.shape, tuple)
    assert all(isinstance(d, int) for d in x.shape)


def test_dtype_is_numpy_dtype(a: np.ndarray) -> None:
    x = lanes.asarray(a)
    assert isinstance(x.dtype, np.dtype)
    assert x.dtype == np.float32
    assert lanes.asarray(a.astype(np.float64)).dtype == np.dtype(np.float64)
    assert lanes.asarray(a.astype(np.int64)).dtype == np.dtype(np.int64)
    assert lanes.asarray(a > 0).dtype == np.dtype(np.bool_)


def test_ndim_size_len(a: np.ndarray) -> None:
    x = lanes.asarray(a)
    assert x.ndim == 3
    assert x.size == 24
    assert len(x) == 2
    s = lanes.asarray(np.float32(3.0))
    assert s.ndim == 0 and s.size == 1 and s.shape == ()


def test_transpose_property(a: np.ndarray) -> None:
    assert_equal(lanes.asarray(a).T, a.T)


def test_item_and_tolist(a: np.ndarray) -> None:
    x = lanes.asarray(a)
    assert lanes.asarray(np.float32(2.5)).item() == 2.5
    assert isinstance(lanes.asarray(np.int32(7)).item(), int)
    assert x.tolist() == a.tolist()
    assert lanes.asarray(a[0, 0, :1]).item() == a[0, 0, 0]


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.int64, np.bool_, np.uint8])
def test_astype(a: np.ndarray, dtype: Any) -> None:
    src = np.abs(a) if dtype == np.uint8 else a  # float -> uint8 of negatives is undefined
    y = lanes.asarray(src).astype(dtype)
    assert y.dtype == np.dtype(dtype)
    assert_equal(y, src.astype(dtype))


@pytest.mark.parametrize("shape", [(6, 4), (4, -1), (-1,), (2, 12), (24,), (1, 2, 1, 12)])
def test_reshape(a: np.ndarray, shape: tuple[int, ...]) -> None:
    assert_equal(lanes.asarray(a).reshape(shape), a.reshape(shape))
    assert_equal(lanes.asarray(a).reshape(*shape), a.reshape(*shape))


def test_reshape_bad_size_raises(a: np.ndarray) -> None:
    with pytest.raises(lanes.LanesError):
        lanes.asarray(a).reshape(5, -1)


@pytest.mark.parametrize("method", ["sum", "mean", "max", "min"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1, -2, (0, 2), (), (-1, 0)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reduction_methods(a: np.ndarray, method: str, axis: Any, keepdims: bool) -> None:
    got = getattr(lanes.asarray(a), method)(axis=axis, keepdims=keepdims)
    want = getattr(a, method)(axis=axis, keepdims=keepdims)
    assert_close(got, want)


def test_repr_starts_with_array(a: np.ndarray) -> None:
    assert repr(lanes.asarray(a)).startswith("Array(")
    assert repr(lanes.asarray(np.float32(1.0))).startswith("Array(")


def test_repr_names_every_dtype_as_jax() -> None:
    # numpy leaves out float64, int64 and bool; jax (whose defaults are 32-bit) names them all.
    assert repr(lanes.asarray(np.array([1.0, 2.0]))) == "Array([1., 2.], dtype=float64)"
    assert repr(lanes.asarray(np.array([1, 2]))) == "Array([1, 2], dtype=int64)"
    assert repr(lanes.asarray(np.array([True, False]))) == "Array([ True, False], dtype=bool)"
    assert repr(lanes.asarray(np.float32(2))) == "Array(2., dtype=float32)"
    assert repr(lanes.asarray(np.arange(20.0).reshape(2, 10))).endswith("dtype=float64)")


def test_unhashable(a: np.ndarray) -> None:
    with pytest.raises(TypeError):
        hash(lanes.asarray(a))


# ---- operators --------------------------------------------------------------------------------

BINARY_FLOAT_OPS: list[Callable[[Any, Any], Any]] = [
    operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
    operator.mod, operator.pow,
]
COMPARISONS = [operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne]


@pytest.fixture
def pair() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1)
    x = rng.uniform(0.5, 3.0, (3, 4)).astype(np.float32)
    y = rng.uniform(0.5, 3.0, (3, 4)).astype(np.float32)
    y[0, 0] = x[0, 0]  # an equal pair for the comparisons
    return x, y


@pytest.mark.parametrize("op", BINARY_FLOAT_OPS, ids=lambda o: o.__name__)
def test_binary_operators(pair: tuple[np.ndarray, np.ndarray], op: Callable) -> None:
    x, y = pair
    got = op(lanes.asarray(x), lanes.asarray(y))
    assert got.dtype == np.float32
    assert_close(got, op(x, y), rtol=1e-5)


@pytest.mark.parametrize("op", BINARY_FLOAT_OPS, ids=lambda o: o.__name__)
@pytest.mark.parametrize("scalar", [2.0, 3, 0.75])
def test_operators_with_python_scalars_both_sides(pair: tuple[np.ndarray, np.ndarray],
                                                  op: Callable, scalar: float) -> None:
    x, _ = pair
    lx = lanes.asarray(x)
    left, right = op(lx, scalar), op(scalar, lx)
    assert left.dtype == np.float32 and right.dtype == np.float32
    assert_close(left, op(x, np.float32(scalar)), rtol=1e-5)
    assert_close(right, op(np.float32(scalar), x), rtol=1e-5)


@pytest.mark.parametrize("op", BINARY_FLOAT_OPS + COMPARISONS, ids=lambda o: o.__name__)
def test_operators_with_numpy_operand_both_sides(pair: tuple[np.ndarray, np.ndarray],
                                                 op: Callable) -> None:
    x, y = pair
    assert_close(op(lanes.asarray(x), y), op(x, y), rtol=1e-5)
    got = op(x, lanes.asarray(y))
    assert isinstance(got, lanes.Array), "numpy should defer to lanes.Array's reflected operator"
    assert_close(got, op(x, y), rtol=1e-5)


@pytest.mark.parametrize("op", COMPARISONS, ids=lambda o: o.__name__)
def test_comparisons(pair: tuple[np.ndarray, np.ndarray], op: Callable) -> None:
    x, y = pair
    got = op(lanes.asarray(x), lanes.asarray(y))
    assert got.dtype == np.bool_
    assert_equal(got, op(x, y))
    assert_equal(op(lanes.asarray(x), 1.5), op(x, np.float32(1.5)))
    assert_equal(op(1.5, lanes.asarray(x)), op(np.float32(1.5), x))


def test_matmul_and_reflected(rng: np.random.Generator) -> None:
    m = rng.normal(size=(3, 4)).astype(np.float32)
    v = rng.normal(size=(4, 2)).astype(np.float32)
    assert_close(lanes.asarray(m) @ lanes.asarray(v), m @ v, rtol=1e-5)
    assert_close(lanes.asarray(m) @ v, m @ v, rtol=1e-5)
    got = m @ lanes.asarray(v)
    assert isinstance(got, lanes.Array)
    assert_close(got, m @ v, rtol=1e-5)


def test_unary_operators(pair: tuple[np.ndarray, np.ndarray]) -> None:
    x, _ = pair
    x = x - 1.5
    lx = lanes.asarray(x)
    assert_equal(-lx, -x)
    assert_equal(+lx, +x)
    assert_equal(abs(lx), abs(x))
    b = x > 0
    assert_equal(~lanes.asarray(b), ~b)


@pytest.mark.parametrize("op", [operator.and_, operator.or_, operator.xor],
                         ids=lambda o: o.__name__)
def test_logical_operators_on_bools(op: Callable) -> None:
    p = np.array([True, True, False, False])
    q = np.array([True, False, True, False])
    assert_equal(op(lanes.asarray(p), lanes.asarray(q)), op(p, q))
    assert_equal(op(lanes.asarray(p), True), op(p, True))
    assert_equal(op(True, lanes.asarray(p)), op(True, p))


def test_integer_operators() -> None:
    x = np.array([-7, -3, 0, 5, 9], dtype=np.int32)
    y = np.array([2, 3, 4, -3, 4], dtype=np.int32)
    lx, ly = lanes.asarray(x), lanes.asarray(y)
    for op in (operator.add, operator.sub, operator.mul, operator.floordiv, operator.mod):
        got = op(lx, ly)
        assert got.dtype == np.int32, op.__name__
        assert_equal(got, op(x, y))
    assert_close(lx / ly, x / y)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8], ids=lambda d: d.__name__)
def test_bitwise_operators_on_integers_match_numpy(dtype: Any) -> None:
    rng = np.random.default_rng(5)
    info = np.iinfo(dtype)
    x = rng.integers(max(info.min, -1000), min(info.max, 1000), size=(3, 7)).astype(dtype)
    y = rng.integers(max(info.min, -1000), min(info.max, 1000), size=(3, 7)).astype(dtype)
    lx, ly = lanes.asarray(x), lanes.asarray(y)
    for op in (operator.and_, operator.or_, operator.xor):
        got = op(lx, ly)
        assert got.dtype == dtype, op.__name__
        assert_equal(got, op(x, y))
        assert_equal(op(lx, 6), op(x, dtype(6)))  # a Python int is weakly typed
        assert_equal(op(6, lx), op(dtype(6), x))
        assert_equal(lanes.jit(op)(lx, ly), op(x, y))
        assert_equal(lanes.vmap(op)(lx, ly), op(x, y))
    assert (~lx).dtype == dtype
    assert_equal(~lx, ~x)
    assert_equal(lanes.numpy.invert(lx), np.invert(x))
    assert_equal(lanes.jit(lambda v: ~v & 12)(lx), ~x & dtype(12))


@pytest.mark.parametrize("dtype", [np.uint8, np.int32, np.int64])
def test_shifts_match_numpy(dtype: Any) -> None:
    bits = np.iinfo(dtype).bits
    x = np.array([0, 1, 5, 100, -7, -128, 3, 64], dtype=dtype) if dtype != np.uint8 else \
        np.array([0, 1, 5, 100, 249, 128, 3, 64], dtype=dtype)
    count = np.array([0, 1, 3, bits - 1, 2, 7, 5, 1], dtype=dtype)
    lx, lc = lanes.asarray(x), lanes.asarray(count)
    assert_equal(lx << lc, x << count)
    assert_equal(lx >> lc, x >> count)  # arithmetic for signed types, as numpy's
    assert_equal(lx << 2, x << dtype(2))
    assert_equal(3 >> lc, dtype(3) >> count)
    assert_equal(lanes.numpy.left_shift(lx, lc), np.left_shift(x, count))
    assert_equal(lanes.jit(lambda a, b: (a << b) >> 1)(lx, lc), (x << count) >> dtype(1))
    assert_equal(lanes.vmap(lambda a, b: a >> b)(lx, lc), x >> count)
    # Counts of the width or more: 0, or -1 for a negative value shifted right (numpy's results;
    # C++'s shift is undefined there).
    far = lanes.asarray(np.full(8, bits + 3, dtype=dtype))
    assert_equal(lx << far, np.zeros(8, dtype))
    assert_equal(lx >> far, np.where(x < 0, dtype(-1) if dtype != np.uint8 else 0, 0).astype(dtype))


def test_shifts_reject_floats_and_bools() -> None:
    with pytest.raises(lanes.LanesError, match="left_shift"):
        lanes.asarray(np.ones(3, np.float32)) << 1
    with pytest.raises(lanes.LanesError, match="right_shift"):
        lanes.asarray(np.ones(3, bool)) >> lanes.asarray(np.ones(3, bool))


def test_bitwise_operators_promote_and_reject_floats() -> None:
    flags = np.array([True, False, True])
    ints = np.array([6, 5, 0], dtype=np.int32)
    got = lanes.asarray(flags) & lanes.asarray(ints)
    assert got.dtype == np.int32
    assert_equal(got, flags & ints)
    assert_equal(lanes.numpy.bitwise_xor(lanes.asarray(flags), lanes.asarray(ints)), flags ^ ints)
    assert_equal(lanes.numpy.logical_xor(lanes.asarray(ints), lanes.asarray(flags)),
                 np.logical_xor(ints, flags))
    with pytest.raises(lanes.LanesError, match="bitwise_and"):
        lanes.asarray(np.ones(3, np.float32)) & lanes.asarray(np.ones(3, np.float32))
    with pytest.raises(lanes.LanesError, match="bitwise_not"):
        ~lanes.asarray(np.ones(3, np.float32))


def test_weak_typing_float32_times_python_float() -> None:
    x = lanes.asarray(np.ones(3, np.float32))
    for y in (x * 2.0, 2.0 * x, x + 1, x - 0.5, x / 3.0, x ** 2):
        assert y.dtype == np.float32


def test_weak_typing_int32_plus_python_int() -> None:
    x = lanes.asarray(np.arange(3, dtype=np.int32))
    for y in (x + 1, 1 + x, x * 3, x - 2, x // 2, x % 2):
        assert y.dtype == np.int32
    assert_equal(x + 1, np.arange(3, dtype=np.int32) + 1)


def test_python_int_out_of_the_weak_dtype_range_is_an_overflow_error() -> None:
    x = lanes.asarray(np.array([1, 3], dtype=np.int32))
    small = lanes.asarray(np.array([1], dtype=np.uint8))
    for call in (lambda: x + 2**40, lambda: 2**31 * x, lambda: small + 300, lambda: small - -1,
                 lambda: lanes.jit(lambda v: v + 2**33)(x),
                 lambda: lanes.vmap(lambda v: v * -2**40)(x)):
        with pytest.raises(OverflowError, match="too large to convert"):
            call()
    # The edges of each range convert; an int64 past 2**53 keeps every digit.
    assert_equal(x + (2**31 - 4), np.array([2**31 - 3, 2**31 - 1], dtype=np.int32))
    assert_equal(small + 254, np.array([255], dtype=np.uint8))
    big = lanes.asarray(np.array([1], dtype=np.int64)) + 2**60
    assert big.tolist() == [2**60 + 1]
    assert (lanes.asarray(np.ones(2, np.float32)) + 2**40).dtype == np.float32


def test_int32_times_python_float_is_float() -> None:
    x = lanes.asarray(np.arange(3, dtype=np.int32))
    y = x * 1.5
    assert y.dtype.kind == "f"
    assert_close(y, np.arange(3) * 1.5)


def test_float64_keeps_float64_with_scalars() -> None:
    x = lanes.asarray(np.ones(3, np.float64))
    assert (x * 2.0).dtype == np.float64
    assert (x + 1).dtype == np.float64


def test_bool_of_one_element_and_ambiguous() -> None:
    assert bool(lanes.asarray(np.array([2.0], np.float32)))
    assert not bool(lanes.asarray(np.float32(0.0)))
    with pytest.raises(ValueError):
        bool(lanes.asarray(np.ones(3, np.float32)))


def test_float_int_index_conversions() -> None:
    assert float(lanes.asarray(np.float32(2.5))) == 2.5
    assert int(lanes.asarray(np.int32(4))) == 4
    assert [10, 20, 30, 40, 50][lanes.asarray(np.int32(3))] == 40


# ---- numpy interop ----------------------------------------------------------------------------


def test_np_asarray_is_zero_copy(a: np.ndarray) -> None:
    x = lanes.asarray(a) + 1.0  # lanes-owned memory
    v1, v2 = np.asarray(x), np.asarray(x)
    assert data_address(v1) == data_address(v2)
    assert_equal(v1, a + 1.0)


def test_np_asarray_view_is_read_only(a: np.ndarray) -> None:
    v = np.asarray(lanes.asarray(a) * 2.0)
    assert not v.flags.writeable
    with pytest.raises(ValueError):
        v[0, 0, 0] = 1.0


def test_np_asarray_view_outlives_array(a: np.ndarray) -> None:
    x = lanes.asarray(a) * 3.0
    v = np.asarray(x)
    del x
    assert_equal(v, a * 3.0)


def test_np_array_with_dtype_and_copy(a: np.ndarray) -> None:
    x = lanes.asarray(a)
    c = np.array(x, dtype=np.float64)
    assert c.dtype == np.float64
    assert_equal(c, a.astype(np.float64))
    w = np.array(x, copy=True)
    w[0, 0, 0] = 42.0  # a copy is writable and independent
    assert x.tolist()[0][0][0] == a[0, 0, 0]


def test_lanes_asarray_of_c_contiguous_does_not_copy(a: np.ndarray) -> None:
    x = lanes.asarray(a)
    assert data_address(np.asarray(x)) == data_address(a)
    f64 = a.astype(np.float64)
    assert data_address(np.asarray(lanes.asarray(f64))) == data_address(f64)


def test_lanes_asarray_keeps_source_alive() -> None:
    src = np.arange(10, dtype=np.float32)
    x = lanes.asarray(src)
    del src
    assert_equal(x, np.arange(10, dtype=np.float32))


@pytest.mark.parametrize("key", [(slice(None), slice(None, None, 2)), (slice(1, 3), 1),
                                 (Ellipsis, slice(1, None, 3)), (slice(None), None)],
                         ids=repr)
def test_numpy_strided_views_convert(a: np.ndarray, key: Any) -> None:
    view = a[key]
    x = lanes.asarray(view)
    assert_equal(x, view)
    assert_equal(x + 0.0, view + 0.0)
    assert_equal(x.sum(axis=-1), view.sum(axis=-1))


def test_numpy_transposed_view_converts(a: np.ndarray) -> None:
    view = a.transpose(2, 0, 1)
    assert_equal(lanes.asarray(view), view)
    assert_close(lanes.asarray(view).sum(axis=0), view.sum(axis=0))


@pytest.mark.parametrize("key", [slice(None, None, -1), (slice(None), slice(None, None, -2)),
                                 (Ellipsis, slice(None, None, -1))], ids=repr)
def test_numpy_negative_stride_views_convert(a: np.ndarray, key: Any) -> None:
    view = a[key]
    assert_equal(lanes.asarray(view), view)
    assert_equal(lanes.asarray(view) * 2.0, view * 2.0)


@pytest.mark.parametrize("dtype", [np.float16, np.complex64, np.int16])
def test_unsupported_dtype_raises_lanes_error(dtype: Any) -> None:
    with pytest.raises(lanes.LanesError, match=np.dtype(dtype).name):
        lanes.asarray(np.zeros(3, dtype=dtype))


def test_astype_unsupported_dtype_raises_lanes_error() -> None:
    with pytest.raises(lanes.LanesError, match="float16"):
        lanes.asarray(np.zeros(3, np.float32)).astype(np.float16)


@pytest.mark.parametrize("value, dtype, want", [
    (1.5, np.float32, 1.5), (3, np.int32, 3), (True, np.bool_, True),
    ([[1.0, 2.0], [3.0, 4.5]], np.float32, [[1.0, 2.0], [3.0, 4.5]]),
    ([[1, 2], [3, 4]], np.int32, [[1, 2], [3, 4]]), ([1, 2.5], np.float32, [1.0, 2.5]),
    ([True, False], np.bool_, [True, False]),
])
def test_python_values_get_jax_defaults(value: Any, dtype: Any, want: Any) -> None:
    x = lanes.asarray(value)
    assert x.dtype == np.dtype(dtype)
    assert_equal(x, np.asarray(want, dtype=dtype))


def test_asarray_dtype_argument() -> None:
    x = lanes.asarray([1, 2, 3], dtype=np.float64)
    assert x.dtype == np.float64
    assert_equal(x, np.array([1.0, 2.0, 3.0]))


def test_asarray_of_array_is_identity(a: np.ndarray) -> None:
    x = lanes.asarray(a)
    y = lanes.asarray(x)
    assert data_address(np.asarray(y)) == data_address(np.asarray(x))


def test_asarray_of_object_raises() -> None:
    with pytest.raises((lanes.LanesError, TypeError)):
        lanes.asarray([object(), object()])


def test_np_from_dlpack_shares_memory(a: np.ndarray) -> None:
    x = lanes.asarray(a) * 2.0
    d = np.from_dlpack(x)
    assert_equal(d, a * 2.0)
    assert data_address(d) == data_address(np.asarray(x))


def test_np_from_dlpack_of_strided_array(a: np.ndarray) -> None:
    x = lanes.asarray(a[:, :, ::2])
    assert_equal(np.from_dlpack(x), a[:, :, ::2])


def test_lanes_from_dlpack_of_numpy(a: np.ndarray) -> None:
    x = lanes.from_dlpack(a)
    assert isinstance(x, lanes.Array)
    assert_equal(x, a)
    assert data_address(np.asarray(x)) == data_address(a)


def test_dlpack_device_is_cpu(a: np.ndarray) -> None:
    assert tuple(lanes.asarray(a).__dlpack_device__()) == (1, 0)


def test_numpy_ufunc_on_array(a: np.ndarray) -> None:
    assert_close(np.exp(lanes.asarray(a) / 10.0), np.exp(a / 10.0))


def test_numpy_functions_accept_array(a: np.ndarray) -> None:
    # np.sum / np.mean call the method with numpy's keywords (out=...), as they do for jax arrays.
    x = lanes.asarray(a)
    assert_close(np.sum(x), a.sum())
    assert_close(np.mean(x, axis=1), a.mean(axis=1))
    assert_close(np.max(x, axis=-1), a.max(axis=-1))


# ---- jax semantics numpy lacks ----------------------------------------------------------------


def test_integer_true_division_is_float32() -> None:
    x = lanes.asarray(np.arange(1, 4, dtype=np.int32))
    assert (x / 2).dtype == np.float32
    assert (x / x).dtype == np.float32
    assert_close(x / 2, np.arange(1, 4) / 2)


def test_bool_plus_python_int_is_int32() -> None:
    got = lanes.asarray(np.array([True, False])) + 1
    assert got.dtype == np.int32
    assert_equal(got, np.array([2, 1], np.int32))


def test_uint8_plus_python_int_stays_uint8() -> None:
    got = lanes.asarray(np.arange(3, dtype=np.uint8)) + 1
    assert got.dtype == np.uint8
    assert_equal(got, np.arange(1, 4, dtype=np.uint8))


def test_index_by_0d_array_wraps_negative_and_clamps() -> None:
    a = np.arange(12, dtype=np.float32).reshape(4, 3)
    x = lanes.asarray(a)
    assert_equal(x[lanes.asarray(np.int32(-1))], a[-1])
    assert_equal(x[lanes.asarray(np.int32(2))], a[2])
    got = lanes.vmap(lambda i: x[i])(np.array([-1, 0, 2, 9], np.int32))
    assert_equal(got, a[[3, 0, 2, 3]])  # traced: negative wraps, out of range clamps (jax)


def test_at_with_traced_index_under_vmap() -> None:
    base = np.zeros((3, 4), np.float32)
    idx = np.array([0, 3, -1], np.int32)
    got = lanes.vmap(lambda v, i: v.at[i].add(10.0))(base, idx)
    want = base.copy()
    for row, i in enumerate(idx):
        want[row, i] += 10.0
    assert_equal(got, want)


def test_buffer_protocol_is_a_read_only_view() -> None:
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = lanes.asarray(a)
    view = memoryview(x)
    assert view.readonly and view.format == "f" and view.shape == (3, 4)
    assert view.tolist() == a.tolist()
    # No copy: numpy over the buffer sees lanes' memory.
    assert np.asarray(view).__array_interface__["data"][0] == a.__array_interface__["data"][0]
    # Strided views keep their strides; every dtype has its format.
    assert memoryview(x[:, ::2]).tolist() == a[:, ::2].tolist()
    for dtype in (np.bool_, np.uint8, np.int32, np.int64, np.float64):
        b = np.ones(3, dtype)
        assert np.array_equal(np.asarray(memoryview(lanes.asarray(b))), b)


def test_jax_array_methods_match_numpy(a: np.ndarray) -> None:
    x = lanes.asarray(a)
    assert bool(x.any()) == a.any() and bool((x > -8).all()) == (a > -8).all()
    assert_equal((x > 0).any(axis=1), (a > 0).any(axis=1))
    assert_close(x.std(), a.std())
    assert_close(x.var(axis=0), a.var(axis=0))
    assert int(x.argmax()) == a.argmax()
    assert_equal(x.argmin(axis=2), a.argmin(axis=2))
    assert_equal(x.cumsum(axis=1), a.cumsum(axis=1))
    assert_equal(x.clip(-1, 2), a.clip(-1, 2))
    assert_equal(x.sort(axis=0), np.sort(a, axis=0))
    assert x.item(5) == a.item(5) and x.item(1, 2, 3) == a.item(1, 2, 3)
    assert x.nbytes == a.nbytes and x.itemsize == a.itemsize
    assert f"{x[0, 0, 1]:.3f}" == f"{a[0, 0, 1]:.3f}"
    assert round(lanes.asarray(np.float32(2.567)), 1) == 2.6
    assert x.copy().tolist() == a.tolist()
    assert_equal(lanes.vmap(lambda r: r.any())(x > 10), (a > 10).reshape(2, -1).any(axis=1))
    with pytest.raises(lanes.ConcretizationError):
        lanes.jit(lambda v: f"{v:.2f}")(x[0, 0, 0])


def test_comparing_with_none_is_false_and_arithmetic_with_none_a_type_error() -> None:
    x = lanes.asarray(np.array([1.0, 2.0], np.float32))
    assert (x == None) is False  # noqa: E711 (the operator itself is under test)
    assert (x != None) is True  # noqa: E711
    with pytest.raises(TypeError, match="unsupported operand"):
        x + None


def test_pickle_and_deepcopy_keep_values_and_dtype() -> None:
    import copy
    import pickle

    a = np.arange(6, dtype=np.int64).reshape(2, 3)
    x = lanes.asarray(a)
    back = pickle.loads(pickle.dumps(x))
    assert isinstance(back, lanes.Array) and back.dtype == np.int64
    assert_equal(back, a)
    assert_equal(copy.deepcopy(x[:, 1]), a[:, 1])
    with pytest.raises(lanes.ConcretizationError):
        lanes.jit(lambda v: pickle.dumps(v))(x)
