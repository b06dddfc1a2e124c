"""Thread safety of a shared jitted function, and memory that stays flat over many calls."""

from __future__ import annotations

import gc
import os
import threading
from typing import Any

import numpy as np
import pytest

import lanes
import lanes.numpy as lnp
from conftest import assert_close


def rss_bytes() -> int:
    """The resident set size of this process, from /proc/self/statm."""
    with open("/proc/self/statm") as f:
        resident_pages = int(f.read().split()[1])
    return resident_pages * os.sysconf("SC_PAGE_SIZE")


def test_two_threads_share_a_jitted_function() -> None:
    rng = np.random.default_rng(0)
    w = rng.normal(size=(256, 256)).astype(np.float32) / 16.0
    x = rng.normal(size=(256, 256)).astype(np.float32)

    f = lanes.jit(lambda a, b: lnp.tanh(lnp.matmul(a, b)))
    expected = np.asarray(f(w, x)).copy()
    assert_close(expected, np.tanh(w.astype(np.float64) @ x.astype(np.float64)), rtol=1e-4,
                 atol=1e-5)

    results: dict[int, list[np.ndarray]] = {0: [], 1: []}
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def worker(k: int) -> None:
        try:
            start.wait()
            for _ in range(50):
                results[k].append(np.array(f(w, x)))
        except BaseException as e:  # reported in the main thread
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    assert not errors, errors
    for k in (0, 1):
        assert len(results[k]) == 50
        for r in results[k]:
            np.testing.assert_array_equal(r, expected)


def test_two_threads_trace_concurrently() -> None:
    """Both threads trace (new shapes) and run vmap / grad at the same time."""
    errors: list[BaseException] = []

    def worker(k: int) -> None:
        try:
            rng = np.random.default_rng(k)
            for n in range(1, 8):
                xs = rng.normal(size=(n, 3))
                got = lanes.vmap(lanes.grad(lambda v: lnp.sum(lnp.sin(v) * v)))(xs)
                np.testing.assert_allclose(np.asarray(got), np.sin(xs) + xs * np.cos(xs),
                                           rtol=1e-12)
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors


@pytest.mark.parametrize("wrap", [np.asarray, lanes.asarray], ids=["numpy", "lanes"])
def test_many_jit_calls_keep_memory_flat(wrap: Any) -> None:
    f = lanes.jit(lambda a, b: lnp.sum(a * b + 1.0, axis=0))
    a = wrap(np.ones((4, 8), np.float32))
    b = wrap(np.full((4, 8), 2.0, np.float32))

    def run(n: int) -> Any:
        out = None
        for _ in range(n):
            out = f(a, b)
            np.asarray(out)  # a numpy view each time, released right away
        return out

    run(500)  # warm-up: trace, caches, allocator pools
    gc.collect()
    before = rss_bytes()
    out = run(100_000)
    gc.collect()
    growth = rss_bytes() - before
    assert_close(out, np.full(8, 12.0))
    # 8 MiB over 10^5 calls: a leak of 80 bytes a call (one small Python object) would show.
    assert growth < 8 * 1024 * 1024, f"RSS grew by {growth / 2**20:.1f} MiB over 10^5 calls"


def test_many_vmap_grad_calls_keep_memory_flat() -> None:
    """vmap traces on every call; its graph caches are bounded, so memory stays flat."""
    f = lanes.vmap(lanes.grad(lambda w, x: lnp.sum(lnp.tanh(w * x))), in_axes=(None, 0))
    w = np.full(4, 0.5, np.float32)
    xs = np.ones((8, 4), np.float32)
    for _ in range(200):
        f(w, xs)
    gc.collect()
    before = rss_bytes()
    for _ in range(3000):
        out = f(w, xs)
    gc.collect()
    growth = rss_bytes() - before
    assert_close(out, np.tile(xs[0] * (1 - np.tanh(0.5) ** 2), (8, 1)), rtol=1e-5)
    assert growth < 20 * 1024 * 1024, f"RSS grew by {growth / 2**20:.1f} MiB over 3000 calls"


def test_set_num_threads_gives_same_results() -> None:
    rng = np.random.default_rng(1)
    w = rng.normal(size=(64, 64))
    x = rng.normal(size=(64, 32))
    f = lanes.jit(lambda a, b: lnp.tanh(lnp.matmul(a, b)))
    before = lanes.num_threads()
    assert before >= 1
    try:
        lanes.set_num_threads(1)
        assert lanes.num_threads() == 1
        one = np.array(f(w, x))
        lanes.set_num_threads(2)
        two = np.array(f(w, x))
    finally:
        lanes.set_num_threads(before)
    assert lanes.num_threads() == before
    assert_close(one, np.tanh(w @ x), rtol=1e-12, atol=1e-12)
    assert_close(two, one, rtol=1e-12, atol=1e-12)
