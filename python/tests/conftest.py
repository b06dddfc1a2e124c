"""Shared helpers for the lanes Python tests.

Every test compares lanes against an independent reference: numpy, a per-example Python loop,
or float64 finite differences computed here.
"""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any, Callable

import numpy as np
import pytest

import lanes.numpy as lnp


def to_numpy(x: Any) -> np.ndarray:
    """``x`` (a lanes Array, numpy array or Python value) as a numpy array."""
    return np.asarray(x)


def assert_close(actual: Any, expected: Any, rtol: float = 1e-5, atol: float = 1e-6,
                 check_shape: bool = True) -> None:
    """Asserts ``actual`` equals ``expected`` to tolerance, converting both with np.asarray."""
    a, e = to_numpy(actual), to_numpy(expected)
    if check_shape:
        assert a.shape == e.shape, f"shape {a.shape} != expected {e.shape}"
    np.testing.assert_allclose(a.astype(np.float64) if a.dtype.kind in "fiub" else a,
                               e.astype(np.float64) if e.dtype.kind in "fiub" else e,
                               rtol=rtol, atol=atol, equal_nan=True)


def assert_equal(actual: Any, expected: Any) -> None:
    """Asserts exact equality of values and shapes."""
    a, e = to_numpy(actual), to_numpy(expected)
    assert a.shape == e.shape, f"shape {a.shape} != expected {e.shape}"
    np.testing.assert_array_equal(a, e)


def numeric_grad(f: Callable[[np.ndarray], float], x: np.ndarray,
                 eps: float = 1e-6) -> np.ndarray:
    """The gradient of the scalar ``f`` at ``x`` by float64 central differences."""
    x = np.array(x, dtype=np.float64)
    g = np.zeros_like(x)
    flat, gflat = x.reshape(-1), g.reshape(-1)
    for i in range(flat.size):
        old = flat[i]
        flat[i] = old + eps
        hi = float(np.asarray(f(x)))
        flat[i] = old - eps
        lo = float(np.asarray(f(x)))
        flat[i] = old
        gflat[i] = (hi - lo) / (2 * eps)
    return g


def numeric_jacobian(f: Callable[[np.ndarray], Any], x: np.ndarray,
                     eps: float = 1e-6) -> np.ndarray:
    """The Jacobian of ``f`` at ``x``, shaped ``out.shape + x.shape``, by float64 central
    differences."""
    x = np.array(x, dtype=np.float64)
    out_shape = np.asarray(f(x)).shape
    jac = np.zeros(out_shape + x.shape)
    flat = x.reshape(-1)
    for i in range(flat.size):
        old = flat[i]
        flat[i] = old + eps
        hi = np.asarray(f(x), dtype=np.float64)
        flat[i] = old - eps
        lo = np.asarray(f(x), dtype=np.float64)
        flat[i] = old
        jac[(...,) + np.unravel_index(i, x.shape)] = (hi - lo) / (2 * eps)
    return jac


@pytest.fixture
def rng() -> np.random.Generator:
    """A seeded numpy generator, fresh per test."""
    return np.random.default_rng(0)


try:  # hypothesis: modest example counts, no per-example deadline (the first call traces)
    import tempfile
    from pathlib import Path

    from hypothesis import HealthCheck, settings
    from hypothesis.configuration import set_hypothesis_home_dir

    # Keep hypothesis' files (example database, constants cache) out of the source tree.
    set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "lanes-hypothesis")
    settings.register_profile(
        "lanes", max_examples=25, deadline=None, database=None, print_blob=True,
        derandomize=True,  # the same examples on every run: failures reproduce
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    # A longer search on demand: pytest --hypothesis-profile=lanes-thorough
    settings.register_profile("lanes-thorough", parent=settings.get_profile("lanes"),
                              max_examples=300, derandomize=False)
    settings.load_profile("lanes")
except ImportError:  # pragma: no cover
    pass


# ---- a small model the transform tests share (test_transforms.py, test_jit.py) ----------------


def mlp(xp: ModuleType, w: Any, b: Any, x: Any) -> Any:
    """One layer written for numpy or lanes.numpy: tanh(W x + b)."""
    return xp.tanh(xp.matmul(w, x) + b)


@pytest.fixture
def params(rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {
        "w": rng.normal(size=(3, 4)).astype(np.float32),
        "b": rng.normal(size=(3,)).astype(np.float32),
        "xs": rng.normal(size=(5, 4)).astype(np.float32),
    }


def loss_np(w: np.ndarray, b: np.ndarray, x: np.ndarray) -> float:
    return float(np.sum(mlp(np, w, b, x) ** 2))


def loss_lanes(w: Any, b: Any, x: Any) -> Any:
    return lnp.sum(mlp(lnp, w, b, x) ** 2)


@pytest.fixture
def params64(params: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {k: v.astype(np.float64) for k, v in params.items()}


def sigma_bound(std: float, n: int, k: float = 6.0) -> float:
    """k standard errors of a mean of n samples of standard deviation std."""
    return k * std / math.sqrt(n)
