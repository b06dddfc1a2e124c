"""lanes.FlopCounter: what a call evaluates, counted against closed forms (the flops of a
product, one evaluation per eager op), nesting, threads, and misuse."""

import threading

import numpy as np
import pytest

import lanes
import lanes.numpy as lnp


def test_counts_a_products_flops_and_one_evaluation_per_eager_op():
    a = lanes.asarray(np.ones((6, 5), np.float32))
    b = lanes.asarray(np.ones((5, 7), np.float32))
    with lanes.FlopCounter() as c:
        lnp.matmul(a, b)
        lnp.negative(a)
    assert c.flops == 2 * 6 * 5 * 7 + 6 * 5
    assert c.evaluations == 2
    rows = c.by_primitive
    assert rows["dot_general"]["evaluations"] == 1
    assert rows["dot_general"]["flops"] == 2 * 6 * 5 * 7
    assert rows["neg"]["evaluations"] == 1
    assert all(r["seconds"] >= 0 for r in rows.values())


def test_counts_a_jitted_vmap_call_as_its_compiled_graph():
    w = lanes.asarray(np.ones((8, 4), np.float32))
    x = lanes.asarray(np.ones((16, 8), np.float32))
    f = lanes.jit(lanes.vmap(lambda w, v: lnp.sum(lnp.tanh(v @ w)), in_axes=(None, 0)))
    f(w, x)
    with lanes.FlopCounter() as once:
        f(w, x)
    with lanes.FlopCounter() as twice:
        f(w, x)
        f(w, x)
    assert once.flops >= 2 * 16 * 8 * 4  # the product, at least
    assert twice.flops == 2 * once.flops
    assert twice.evaluations == 2 * once.evaluations
    assert {k: 2 * v["evaluations"] for k, v in once.by_primitive.items()} == {
        k: v["evaluations"] for k, v in twice.by_primitive.items()}


def test_counters_nest_and_keep_their_values_after_the_block():
    x = lanes.asarray(np.ones((3,), np.float32))
    with lanes.FlopCounter() as outer:
        lnp.negative(x)
        with lanes.FlopCounter() as inner:
            lnp.negative(x)
            assert inner.evaluations == 1  # read live inside the block
        lnp.negative(x)
    assert inner.evaluations == 1 and outer.evaluations == 3
    lnp.negative(x)
    assert outer.evaluations == 3


def test_another_threads_calls_are_not_counted():
    x = lanes.asarray(np.ones((3,), np.float32))
    seen = []

    def other():
        with lanes.FlopCounter() as mine:
            lnp.negative(x)
            lnp.negative(x)
        seen.append(mine.evaluations)

    with lanes.FlopCounter() as c:
        t = threading.Thread(target=other)
        t.start()
        t.join()
        lnp.negative(x)
    assert c.evaluations == 1 and seen == [2]


def test_misuse_is_an_error_not_a_corrupted_count():
    c = lanes.FlopCounter()
    with c:
        pass
    with pytest.raises(lanes.LanesError, match="counts once"):
        c.__enter__()
    a, b = lanes.FlopCounter(), lanes.FlopCounter()
    a.__enter__()
    b.__enter__()
    with pytest.raises(lanes.LanesError, match="innermost first"):
        a.__exit__(None, None, None)
    b.__exit__(None, None, None)
    a.__exit__(None, None, None)
    with pytest.raises(lanes.LanesError, match="without __enter__"):
        lanes.FlopCounter().__exit__(None, None, None)
    x = lanes.asarray(np.ones((3,), np.float32))
    with lanes.FlopCounter() as after:  # the thread counts as before
        lnp.negative(x)
    assert after.evaluations == 1
