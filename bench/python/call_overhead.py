"""Per-call overhead of lanes' Python API against jax (and torch.compile), on an 8-element input.

    PYTHONPATH=build/python build/peers-venv/bin/python bench/python/call_overhead.py

Rows: jit(vmap(f))(x) for lanes, jax and torch.compile(torch.vmap(f)); the un-jitted vmap(f)(x)
of lanes and jax. Median microseconds per call over repeated timed blocks, one process.
"""

from __future__ import annotations

import statistics
import time
from typing import Callable

import numpy as np


def per_call_us(call: Callable[[], object], block: int = 200, blocks: int = 15) -> float:
    for _ in range(3):
        call()
    times = []
    for _ in range(blocks):
        start = time.perf_counter()
        for _ in range(block):
            call()
        times.append((time.perf_counter() - start) / block * 1e6)
    return statistics.median(times)


def main() -> None:
    x_np = np.arange(8, dtype=np.float32).reshape(8, 1) / 8
    rows: list[tuple[str, float]] = []

    import lanes
    import lanes.numpy as lnp

    def f_lanes(x):
        return lnp.sin(x) * 2.0 + 1.0

    x_l = lanes.asarray(x_np)
    jitted = lanes.jit(lanes.vmap(f_lanes))
    plain = lanes.vmap(f_lanes)
    rows.append(("lanes jit(vmap(f))(x)", per_call_us(lambda: jitted(x_l))))
    rows.append(("lanes vmap(f)(x)", per_call_us(lambda: plain(x_l))))
    # The call path alone (build/bench/call_overhead's "no work" row through Python): a jitted
    # function of perex_linear's arguments that returns its parameters.
    params = (lanes.asarray(np.ones((32, 1), np.float32)), lanes.asarray(np.zeros(1, np.float32)))
    batch, labels = (lanes.asarray(np.ones(s, np.float32)) for s in ((10, 32), (10, 1)))
    no_work = lanes.jit(lambda p, x, y: p)
    rows.append(("lanes jit(p, x, y -> p), no work",
                 per_call_us(lambda: no_work(params, batch, labels))))

    try:
        import jax
        import jax.numpy as jnp

        def f_jax(x):
            return jnp.sin(x) * 2.0 + 1.0

        x_j = jnp.asarray(x_np)
        jj = jax.jit(jax.vmap(f_jax))
        jv = jax.vmap(f_jax)
        rows.append(("jax jit(vmap(f))(x)", per_call_us(lambda: jj(x_j).block_until_ready())))
        rows.append(("jax vmap(f)(x)",
                     per_call_us(lambda: jv(x_j).block_until_ready(), block=20)))
        jp = tuple(jnp.asarray(np.asarray(a)) for a in params)
        jb, jl = jnp.asarray(np.asarray(batch)), jnp.asarray(np.asarray(labels))
        jn = jax.jit(lambda p, x, y: p)
        rows.append(("jax jit(p, x, y -> p), no work",
                     per_call_us(lambda: jax.block_until_ready(jn(jp, jb, jl)))))
    except ImportError:
        print("jax is not installed: its rows are missing")
    try:
        import torch

        def f_torch(x):
            return torch.sin(x) * 2.0 + 1.0

        x_t = torch.from_numpy(x_np)
        tc = torch.compile(torch.vmap(f_torch))
        rows.append(("torch compile(vmap(f))(x)", per_call_us(lambda: tc(x_t))))
        tv = torch.vmap(f_torch)
        rows.append(("torch vmap(f)(x)", per_call_us(lambda: tv(x_t))))
    except ImportError:
        print("torch is not installed: its rows are missing")

    print(f"{'call on an 8-element input':34s} {'us/call':>9s}")
    for name, us in rows:
        print(f"{name:34s} {us:9.2f}")


if __name__ == "__main__":
    main()
