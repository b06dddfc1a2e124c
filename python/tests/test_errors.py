"""Errors: lanes::Error as LanesError (a ValueError), ConcretizationError on Python control flow
over traced values, and user exceptions propagating through transforms."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

import lanes
import lanes.numpy as lnp
from conftest import assert_close
from lanes import lax

Transform = Callable[[Callable], Callable]

TRANSFORMS: list[tuple[str, Transform, Any]] = [
    ("vmap", lanes.vmap, np.ones((3, 2), np.float32)),
    ("grad", lanes.grad, np.float32(1.5)),
    ("jit", lanes.jit, np.ones(2, np.float32)),
]
IDS = [t[0] for t in TRANSFORMS]


def test_lanes_error_is_value_error() -> None:
    assert issubclass(lanes.LanesError, ValueError)


def test_concretization_error_hierarchy() -> None:
    assert issubclass(lanes.ConcretizationError, lanes.LanesError)
    assert issubclass(lanes.ConcretizationError, TypeError)
    assert issubclass(lanes.ConcretizationError, ValueError)


def test_matmul_shape_mismatch_raises_lanes_error() -> None:
    a = lanes.asarray(np.ones((2, 3), np.float32))
    with pytest.raises(lanes.LanesError, match=r"\(2, 3\)") as info:
        a @ a
    assert isinstance(info.value, ValueError)
    assert "matmul" in str(info.value)
    with pytest.raises(ValueError):
        lnp.matmul(np.ones((2, 3)), np.ones((4, 2)))


def test_broadcast_mismatch_raises_lanes_error() -> None:
    with pytest.raises(lanes.LanesError, match=r"\(3,\).*\(4,\)|\(4,\).*\(3,\)"):
        lanes.asarray(np.ones(3, np.float32)) + lanes.asarray(np.ones(4, np.float32))


def test_bad_axis_raises_lanes_error() -> None:
    with pytest.raises(lanes.LanesError):
        lnp.sum(np.ones((2, 3)), axis=2)


def test_error_inside_transform_is_lanes_error() -> None:
    with pytest.raises(lanes.LanesError, match="matmul"):
        lanes.vmap(lambda x: lnp.matmul(x, np.ones((5, 2), np.float32)))(np.ones((3, 4),
                                                                                np.float32))


# ---- concretization ---------------------------------------------------------------------------


def python_if(x: Any) -> Any:
    if lnp.sum(x) > 0:
        return x * 2.0
    return x


@pytest.mark.parametrize("name, transform, arg", TRANSFORMS, ids=IDS)
def test_python_if_on_tracer_raises_concretization_error(name: str, transform: Transform,
                                                         arg: Any) -> None:
    f = (lambda v: lnp.sum(python_if(v))) if name == "grad" else python_if
    with pytest.raises(lanes.ConcretizationError) as info:
        transform(f)(arg)
    message = str(info.value)
    assert name in message
    assert "lax.cond" in message
    assert isinstance(info.value, TypeError)
    assert isinstance(info.value, lanes.LanesError)


@pytest.mark.parametrize("name, transform, arg", TRANSFORMS, ids=IDS)
@pytest.mark.parametrize("convert", [float, bool, int], ids=["float", "bool", "int"])
def test_scalar_conversion_of_tracer_raises(name: str, transform: Transform, arg: Any,
                                            convert: Callable) -> None:
    def f(x: Any) -> Any:
        convert(lnp.sum(x))
        return lnp.sum(x)

    with pytest.raises(lanes.ConcretizationError) as info:
        transform(f)(arg)
    assert name in str(info.value)
    assert "lax" in str(info.value)


@pytest.mark.parametrize("name, transform, arg", TRANSFORMS, ids=IDS)
def test_item_and_numpy_of_tracer_raise(name: str, transform: Transform, arg: Any) -> None:
    for peek in (lambda v: v.item(), lambda v: np.asarray(v), lambda v: v.tolist()):
        def f(x: Any, peek: Callable = peek) -> Any:
            peek(lnp.sum(x))
            return lnp.sum(x)

        with pytest.raises(lanes.ConcretizationError, match=name):
            transform(f)(arg)


def test_while_on_tracer_in_vmap_points_to_while_loop() -> None:
    def f(x: Any) -> Any:
        while x < 10.0:
            x = x * 2.0
        return x

    with pytest.raises(lanes.ConcretizationError, match="while_loop") as info:
        lanes.vmap(f)(np.ones(3, np.float32))
    assert "vmap" in str(info.value)


def test_concretization_inside_cond_branch_under_vmap() -> None:
    def f(x: Any) -> Any:
        return lax.cond(x > 0, lambda v: v if float(v) > 1 else -v, lambda v: v, x)

    with pytest.raises(lanes.ConcretizationError):
        lanes.vmap(f)(np.ones(3, np.float32))


def test_nested_transform_message_names_a_transform() -> None:
    def loss(w: Any, x: Any) -> Any:
        return lnp.sum(python_if(w * x))

    with pytest.raises(lanes.ConcretizationError) as info:
        lanes.vmap(lanes.grad(loss), in_axes=(None, 0))(np.float32(1.0),
                                                         np.ones(3, np.float32))
    assert "grad" in str(info.value) or "vmap" in str(info.value)


def test_concrete_values_still_convert_outside_transforms() -> None:
    x = lanes.asarray(np.float32(2.0))
    assert float(x) == 2.0 and bool(x) and int(x) == 2
    assert python_if(np.ones(2, np.float32)).tolist() == [2.0, 2.0]


def test_static_argnums_allow_python_control_flow() -> None:
    f = lanes.jit(lambda x, flag: x * 2.0 if flag > 0 else x, static_argnums=1)
    assert_close(f(np.ones(2, np.float32), 1), [2.0, 2.0])
    assert_close(f(np.ones(2, np.float32), 0), [1.0, 1.0])


# ---- user exceptions propagate ----------------------------------------------------------------


class MyError(Exception):
    pass


@pytest.mark.parametrize("name, transform, arg", TRANSFORMS, ids=IDS)
def test_user_exception_propagates_with_its_type(name: str, transform: Transform,
                                                 arg: Any) -> None:
    state = {"fail": True}

    def f(x: Any) -> Any:
        if state["fail"]:
            raise MyError("boom from user code")
        return lnp.sum(x * x)

    g = transform(f)
    with pytest.raises(MyError, match="boom from user code"):
        g(arg)
    state["fail"] = False
    out = g(arg)  # the same transformed function works on the next call
    a = np.asarray(arg, np.float64)
    if name == "vmap":
        assert_close(out, (a * a).sum(axis=1))
    elif name == "grad":
        assert_close(out, 2 * a)
    else:
        assert_close(out, (a * a).sum())


@pytest.mark.parametrize("name, transform, arg", TRANSFORMS, ids=IDS)
def test_builtin_exceptions_propagate(name: str, transform: Transform, arg: Any) -> None:
    def f(x: Any) -> Any:
        return {"a": x}["missing"]

    with pytest.raises(KeyError):
        transform(f)(arg)

    def g(x: Any) -> Any:
        raise ZeroDivisionError("user division")

    with pytest.raises(ZeroDivisionError):
        transform(g)(arg)


def test_user_exception_inside_cond_branch_propagates() -> None:
    def bad(v: Any) -> Any:
        raise MyError("in branch")

    with pytest.raises(MyError):
        lax.cond(True, bad, lambda v: v, np.ones(2, np.float32))
    with pytest.raises(MyError):
        lanes.vmap(lambda x: lax.cond(x > 0, bad, lambda v: v, x))(np.ones(3, np.float32))


def test_user_exception_inside_scan_and_while_propagates() -> None:
    def step(c: Any, x: Any) -> Any:
        raise MyError("in scan")

    with pytest.raises(MyError):
        lax.scan(step, np.float32(0.0), np.ones(3, np.float32))

    def body(c: Any) -> Any:
        raise MyError("in while")

    with pytest.raises(MyError):
        lax.while_loop(lambda c: c < 3, body, 0)


def test_user_exception_inside_nested_transforms_propagates() -> None:
    calls = {"n": 0}

    def loss(w: Any, x: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            raise MyError("first call fails")
        return lnp.sum(w * x) ** 2

    f = lanes.jit(lanes.vmap(lanes.grad(loss), in_axes=(None, 0)))
    w, xs = np.ones(2, np.float32), np.arange(6, dtype=np.float32).reshape(3, 2)
    with pytest.raises(MyError):
        f(w, xs)
    got = f(w, xs)
    assert_close(got, np.stack([2 * (w @ x) * x for x in xs]))


# ---- transform misuse -------------------------------------------------------------------------


def test_vmap_mismatched_batch_sizes_raises() -> None:
    with pytest.raises(lanes.LanesError) as info:
        lanes.vmap(lambda a, b: a + b)(np.ones(3, np.float32), np.ones(4, np.float32))
    assert "3" in str(info.value) and "4" in str(info.value)


def test_vmap_in_axes_out_of_range_raises() -> None:
    with pytest.raises(lanes.LanesError):
        lanes.vmap(lambda a: a, in_axes=2)(np.ones((3, 2), np.float32))


def test_vmap_in_axes_wrong_length_raises() -> None:
    with pytest.raises((lanes.LanesError, ValueError)):
        lanes.vmap(lambda a, b: a + b, in_axes=(0, 0, 0))(np.ones(3), np.ones(3))


def test_vmap_no_mapped_input_without_axis_size_raises() -> None:
    with pytest.raises(lanes.LanesError):
        lanes.vmap(lambda a: a * 2.0, in_axes=None)(np.ones(3, np.float32))


def test_vmap_bad_strategy_name_raises() -> None:
    with pytest.raises(lanes.LanesError, match="partition"):
        lanes.vmap(lambda a: a, cond="bogus")(np.ones(3, np.float32))


def test_grad_non_scalar_output_raises() -> None:
    with pytest.raises(lanes.LanesError, match="grad"):
        lanes.grad(lambda a: a * 2.0)(np.ones(3, np.float32))


def test_grad_of_integer_output_raises() -> None:
    with pytest.raises(lanes.LanesError):
        lanes.grad(lambda a: lnp.argmax(a))(np.ones(3, np.float32))


def test_grad_argnums_out_of_range_raises() -> None:
    with pytest.raises(lanes.LanesError, match="argnum"):
        lanes.grad(lambda a: lnp.sum(a), argnums=3)(np.ones(3, np.float32))


def test_grad_has_aux_without_pair_raises() -> None:
    with pytest.raises(lanes.LanesError, match="aux"):
        lanes.grad(lambda a: lnp.sum(a), has_aux=True)(np.ones(3, np.float32))


def test_jit_unhashable_static_argument_raises() -> None:
    with pytest.raises(lanes.LanesError, match="hashable"):
        lanes.jit(lambda a, s: a, static_argnums=1)(np.ones(2), [1, 2])


def test_non_array_leaf_raises_lanes_error() -> None:
    with pytest.raises(lanes.LanesError, match="object"):
        lanes.vmap(lambda a, o: a)(np.ones(3), object())


def test_indexing_errors() -> None:
    x = lanes.asarray(np.ones((2, 3), np.float32))
    with pytest.raises(lanes.LanesError):
        x[0, 0, 0]
    with pytest.raises(lanes.LanesError):
        x[..., ...]
    with pytest.raises(lanes.LanesError):
        x[lanes.asarray(np.array([True, False]))]


def test_jit_call_of_arrays_raises_with_type_and_traceback() -> None:
    # Arrays as arguments take jit's C++ call path (lanes._lanes.JitDispatch's call slot): a
    # user exception keeps its type and the frames of the user's function, a lanes::Error
    # becomes LanesError, and the next call works.
    def user_function(x: Any) -> Any:
        raise MyError("raised while tracing")

    with pytest.raises(MyError, match="raised while tracing") as caught:
        lanes.jit(user_function)(lanes.asarray(np.ones(3, np.float32)))
    assert "user_function" in [entry.name for entry in caught.traceback]

    product = lanes.jit(lambda x: x @ x)
    with pytest.raises(lanes.LanesError, match="not aligned"):
        product(lanes.asarray(np.ones((2, 3), np.float32)))
    assert_close(product(lanes.asarray(np.ones((2, 2), np.float32))), np.full((2, 2), 2.0))
