"""A vmapped Newton solve with lax.while_loop: each example iterates until its own tolerance.

Examples converge after different numbers of steps; under vmap the loop runs until the last one
finishes, each lane keeping its result once it is done (vmap's ``loop`` option picks masking or
compaction). Run: ./scripts/demo.sh (or PYTHONPATH=build/python python this_file).
"""

from __future__ import annotations

import numpy as np

import lanes
import lanes.numpy as lnp
from lanes import lax


def cube_root(a):
    """Newton's method on x**3 - a, from x = 1, until the step is below 1e-6."""

    def not_done(state):
        x, step, _ = state
        return lnp.abs(step) > 1e-6

    def newton_step(state):
        x, _, n = state
        step = (x ** 3 - a) / (3.0 * x ** 2)
        return x - step, step, n + 1

    x, _, steps = lax.while_loop(not_done, newton_step, (lnp.ones_like(a), lnp.ones_like(a), 0))
    return x, steps


def main() -> None:
    a = lanes.asarray(np.array([0.001, 1.0, 8.0, 27.0, 1000.0, 1e6], dtype=np.float32))
    roots, steps = lanes.jit(lanes.vmap(cube_root))(a)
    print("cube roots by a vmapped Newton while_loop:")
    for ai, r, n in zip(np.asarray(a), np.asarray(roots), np.asarray(steps)):
        print(f"  a = {ai:>10g}: {r:.6g} after {n} steps (numpy: {np.cbrt(ai):.6g})")
    assert np.allclose(np.asarray(roots), np.cbrt(np.asarray(a)), rtol=1e-5)


if __name__ == "__main__":
    main()
