"""lanes.random's distributions built from uniform and normal draws (gamma, beta, dirichlet,
chisquare, t, poisson, gumbel, laplace, logistic, cauchy, rademacher): sample moments against the
closed forms (math), frequencies against exact probabilities, vmap against a per-key loop and jit
against eager."""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import pytest

import lanes
from conftest import assert_equal, sigma_bound
from lanes import random

N = 200_000


def draw(fn: Callable, *args: Any, seed: int = 0) -> np.ndarray:
    return np.asarray(fn(random.key(seed), *args))


@pytest.mark.parametrize("a", [0.3, 1.0, 2.5, 10.0])
def test_gamma_moments(a: float) -> None:
    x = draw(random.gamma, a, (N,))
    assert x.dtype == np.float32 and (x > 0).all()
    assert abs(x.mean() - a) < sigma_bound(math.sqrt(a), N)
    # The variance estimate's standard error: sqrt((mu4 - var^2) / n), mu4 = 3a^2 + 6a.
    assert abs(x.var() - a) < 6 * math.sqrt((3 * a * a + 6 * a - a * a) / N)


def test_gamma_of_shape_one_is_exponential() -> None:
    x = draw(random.gamma, 1.0, (N,), seed=1)
    for q in (0.25, 1.0, 3.0):
        p = 1 - math.exp(-q)
        assert abs((x < q).mean() - p) < sigma_bound(math.sqrt(p * (1 - p)), N)


def test_gamma_takes_one_shape_per_element_and_float64() -> None:
    a = np.array([0.5, 5.0])
    x = draw(lambda k: random.gamma(k, a, (N, 2), np.float64))
    assert x.dtype == np.float64
    np.testing.assert_array_less(np.abs(x.mean(0) - a), [sigma_bound(math.sqrt(v), N) for v in a])
    assert draw(random.gamma, np.array([[1.0], [2.0]])).shape == (2, 1)


def test_beta_dirichlet_chisquare_t_moments() -> None:
    b = draw(random.beta, 2.0, 5.0, (N,))
    mean, var = 2 / 7, 2 * 5 / (7 * 7 * 8)
    assert (b > 0).all() and (b < 1).all()
    assert abs(b.mean() - mean) < sigma_bound(math.sqrt(var), N)
    alpha = np.array([1.0, 2.0, 3.0])
    d = draw(random.dirichlet, alpha, (N,))
    assert d.shape == (N, 3)
    np.testing.assert_allclose(d.sum(1), 1.0, rtol=1e-5)
    share = alpha / alpha.sum()
    np.testing.assert_array_less(np.abs(d.mean(0) - share),
                                 sigma_bound(math.sqrt(share.max() * (1 - share.max()) / 7), N))
    c = draw(random.chisquare, 3.0, (N,))
    assert abs(c.mean() - 3.0) < sigma_bound(math.sqrt(6.0), N)
    t = draw(random.t, 10.0, (N,))
    assert abs(t.mean()) < sigma_bound(math.sqrt(10 / 8), N)
    assert abs((np.abs(t) < 1.0).mean() - 0.6591) < 0.01  # P(|T_10| < 1)


@pytest.mark.parametrize("lam", [0.5, 4.0, 20.0])
def test_poisson_frequencies(lam: float) -> None:
    k = draw(random.poisson, lam, (N,))
    assert k.dtype == np.int32 and (k >= 0).all()
    assert abs(k.mean() - lam) < sigma_bound(math.sqrt(lam), N)
    for value in range(int(lam) - 1, int(lam) + 2):
        if value < 0:
            continue
        p = math.exp(-lam) * lam**value / math.factorial(value)
        assert abs((k == value).mean() - p) < sigma_bound(math.sqrt(p * (1 - p)), N)


def test_location_scale_families() -> None:
    g = draw(random.gumbel, (N,))
    assert abs(g.mean() - 0.5772157) < sigma_bound(math.pi / math.sqrt(6), N)
    lap = draw(random.laplace, (N,))
    assert abs(lap.mean()) < sigma_bound(math.sqrt(2), N)
    assert abs((np.abs(lap) < 1).mean() - (1 - math.exp(-1))) < sigma_bound(0.5, N)
    lo = draw(random.logistic, (N,))
    assert abs((lo < 1).mean() - 1 / (1 + math.exp(-1))) < sigma_bound(0.5, N)
    c = draw(random.cauchy, (N,))
    assert abs((np.abs(c) < 1).mean() - 0.5) < sigma_bound(0.5, N)  # its quartiles are -1, 1
    r = draw(random.rademacher, (N,))
    assert set(np.unique(r).tolist()) == {-1, 1} and abs(r.mean()) < sigma_bound(1.0, N)


@pytest.mark.parametrize("name", ["gamma", "poisson", "beta"])
def test_draws_under_vmap_match_a_loop_and_jit_matches_eager(name: str) -> None:
    # gamma and poisson loop until every element is done: under vmap each example stops on its
    # own, so its draws are its key's.
    sample = {"gamma": lambda k: random.gamma(k, 0.7, (5,)),
              "poisson": lambda k: random.poisson(k, 3.0, (5,)),
              "beta": lambda k: random.beta(k, 0.5, 2.0, (5,))}[name]
    keys = random.split(random.key(4), 6)
    assert_equal(lanes.vmap(sample)(keys), np.stack([np.asarray(sample(k)) for k in keys]))
    assert_equal(lanes.jit(sample)(keys[0]), sample(keys[0]))
