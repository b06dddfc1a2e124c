"""lanes.random and nn.dropout against independent references: exact-value checks on keys,
sample statistics against the distributions' closed-form moments (numpy / math), per-key Python
loops for vmap, and eager draws for jit."""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import pytest

import lanes
import lanes.numpy as lnp
from conftest import assert_close, assert_equal, sigma_bound
from lanes import nn, random

N = 200_000  # large-sample size for the statistical checks


def bits(k: Any) -> int:
    """A key's 64 bits as a Python int (exact: via numpy, never through float)."""
    a = np.asarray(k)
    assert a.dtype == np.int64 and a.shape == ()
    return int(a)


# ---- keys -------------------------------------------------------------------------------------


def test_key_is_0d_int64_array() -> None:
    k = random.key(0)
    assert isinstance(k, lanes.Array)
    assert k.shape == () and k.ndim == 0
    assert np.dtype(k.dtype) == np.int64
    assert np.asarray(k).dtype == np.int64
    # PRNGKey is jax's older name for the same thing
    assert bits(random.PRNGKey(7)) == bits(random.key(7))


def test_key_repr_shows_exact_bits() -> None:
    # keys use all 64 bits; printing one must not round it through float64
    keys = random.split(random.key(0), 3)
    text = repr(keys)
    for b in np.asarray(keys).tolist():
        assert str(b) in text, f"{b} not in {text}"
    assert str(bits(keys[0])) in repr(keys[0])


def test_key_deterministic_and_seed_dependent() -> None:
    assert bits(random.key(3)) == bits(random.key(3))
    seeds = [0, 1, 2, 3, 12345, 2**40 + 1]
    assert len({bits(random.key(s)) for s in seeds}) == len(seeds)


@pytest.mark.parametrize("num", [2, 5, 64])
def test_split_gives_distinct_int64_keys(num: int) -> None:
    keys = random.split(random.key(0), num)
    arr = np.asarray(keys)
    assert keys.shape == (num,) and arr.dtype == np.int64
    assert len(set(arr.tolist())) == num
    # every element is itself a usable 0-d key, and none is the parent
    assert bits(random.key(0)) not in set(arr.tolist())
    for i in range(num):
        assert keys[i].shape == ()
        assert np.asarray(random.normal(keys[i], (2,))).shape == (2,)


def test_split_default_is_two_and_unpacks() -> None:
    k1, k2 = random.split(random.key(11))
    assert bits(k1) != bits(k2)
    assert_equal(random.split(random.key(11)), np.array([bits(k1), bits(k2)], np.int64))


def test_split_deterministic_and_seed_dependent() -> None:
    a = np.asarray(random.split(random.key(42), 16))
    b = np.asarray(random.split(random.key(42), 16))
    c = np.asarray(random.split(random.key(43), 16))
    assert_equal(a, b)
    assert not set(a.tolist()) & set(c.tolist())


def test_split_zero_and_one() -> None:
    k = random.key(5)
    one = random.split(k, 1)
    assert one.shape == (1,) and np.asarray(one).dtype == np.int64
    assert bits(one[0]) != bits(k)
    # jax.random.split(key, 0) is an empty batch of keys, like permutation(key, 0)
    empty = random.split(k, 0)
    assert empty.shape == (0,) and np.asarray(empty).dtype == np.int64


def test_split_of_split_keys_distinct() -> None:
    k = random.key(5)
    level1 = np.asarray(random.split(k, 8)).tolist()
    level2 = [x for sub in random.split(k, 8) for x in np.asarray(random.split(sub, 8)).tolist()]
    assert len(set(level1 + level2)) == 8 + 64


def test_fold_in_deterministic_and_distinct() -> None:
    k = random.key(0)
    folded = [bits(random.fold_in(k, d)) for d in range(32)]
    assert folded == [bits(random.fold_in(k, d)) for d in range(32)]
    assert len(set(folded)) == 32
    assert bits(k) not in folded
    # a different parent key gives different derived keys
    other = [bits(random.fold_in(random.key(1), d)) for d in range(32)]
    assert not set(folded) & set(other)
    # numpy integers and 0-d arrays are accepted as data and agree with Python ints
    assert bits(random.fold_in(k, np.int32(7))) == folded[7]
    assert bits(random.fold_in(k, np.array(7, np.int64))) == folded[7]


def test_fold_in_large_python_int() -> None:
    """A Python int data beyond int32 must not wrap silently: fold_in(k, 2**32) is the same key
    as the int64 numpy scalar gives, and not fold_in(k, 0)."""
    k = random.key(0)
    for d in (2**32, 2**40 + 5, 2**31):
        assert bits(random.fold_in(k, d)) == bits(random.fold_in(k, np.int64(d))), d
    assert bits(random.fold_in(k, 2**32)) != bits(random.fold_in(k, 0))


def test_fold_in_traced_under_vmap_equals_eager() -> None:
    k = random.key(9)
    data = np.arange(6, dtype=np.int32)
    got = lanes.vmap(lambda d: random.fold_in(k, d))(data)
    want = np.array([bits(random.fold_in(k, int(d))) for d in data], np.int64)
    assert np.asarray(got).dtype == np.int64
    assert_equal(got, want)


def test_fold_in_traced_then_draw_under_vmap_equals_loop() -> None:
    k = random.key(9)
    data = np.arange(5, dtype=np.int32)
    got = lanes.vmap(lambda d: random.normal(random.fold_in(k, d), (3,)))(data)
    want = np.stack([np.asarray(random.normal(random.fold_in(k, int(d)), (3,))) for d in data])
    assert_equal(got, want)


def test_fold_in_traced_under_jit_equals_eager() -> None:
    k = random.key(21)
    f = lanes.jit(lambda key, d: random.fold_in(key, d))
    for d in (0, 3, 17):
        assert bits(f(k, np.array(d, np.int32))) == bits(random.fold_in(k, d))


def test_bad_key_raises() -> None:
    with pytest.raises(lanes.LanesError):
        random.normal(np.float32(1.0), (2,))
    with pytest.raises(lanes.LanesError):
        random.normal(np.zeros(2, np.int64), (2,))


# ---- distributions: shape, dtype, range, statistics -------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("lo,hi", [(0.0, 1.0), (-2.0, 3.0), (10.0, 10.5)])
def test_uniform_range_and_moments(dtype: Any, lo: float, hi: float) -> None:
    u = random.uniform(random.key(1), (N,), dtype=dtype, minval=lo, maxval=hi)
    a = np.asarray(u)
    assert u.shape == (N,) and a.dtype == dtype
    assert a.min() >= lo and a.max() < hi
    width = hi - lo
    std = width / math.sqrt(12)
    assert abs(a.mean() - (lo + hi) / 2) < sigma_bound(std, N)
    assert abs(a.astype(np.float64).std() - std) < 0.01 * std
    # roughly flat: each of 10 bins holds ~10%
    hist = np.histogram(a, bins=10, range=(lo, hi))[0] / N
    np.testing.assert_allclose(hist, 0.1, atol=0.006)


def test_uniform_defaults_and_shapes() -> None:
    k = random.key(2)
    u = random.uniform(k)
    assert u.shape == () and np.asarray(u).dtype == np.float32
    assert 0.0 <= float(np.asarray(u)) < 1.0
    assert random.uniform(k, 4).shape == (4,)
    assert random.uniform(k, (2, 3, 4)).shape == (2, 3, 4)
    # the shape is a layout of the same draw: a 2-d draw has independent-looking elements
    a = np.asarray(random.uniform(k, (300, 400)))
    assert a.shape == (300, 400) and len(np.unique(a)) > 0.99 * a.size


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_normal_moments(dtype: Any) -> None:
    a = np.asarray(random.normal(random.key(3), (400, 500), dtype))
    assert a.shape == (400, 500) and a.dtype == dtype
    n = a.size
    x = a.astype(np.float64)
    assert abs(x.mean()) < sigma_bound(1.0, n)
    assert abs(x.std() - 1.0) < 0.01
    assert abs(np.mean(x**3)) < 0.03  # skewness
    assert abs(np.mean(x**4) - 3.0) < 0.06  # kurtosis
    # tail mass matches the normal distribution: P(|z| > 2) = 0.0455
    assert abs(np.mean(np.abs(x) > 2.0) - 0.0455) < 0.003
    # neighbouring elements are uncorrelated
    assert abs(np.corrcoef(x[:, :-1].ravel(), x[:, 1:].ravel())[0, 1]) < 0.01


def test_normal_independent_across_keys() -> None:
    k1, k2 = random.split(random.key(4))
    a = np.asarray(random.normal(k1, (N,)), np.float64)
    b = np.asarray(random.normal(k2, (N,)), np.float64)
    assert abs(np.corrcoef(a, b)[0, 1]) < 0.015


@pytest.mark.parametrize("p", [0.1, 0.5, 0.73])
def test_bernoulli_frequency(p: float) -> None:
    b = random.bernoulli(random.key(5), p, (N,))
    a = np.asarray(b)
    assert b.shape == (N,) and a.dtype == np.bool_
    assert abs(a.mean() - p) < sigma_bound(math.sqrt(p * (1 - p)), N)


def test_bernoulli_extremes() -> None:
    k = random.key(6)
    assert not np.asarray(random.bernoulli(k, 0.0, (1000,))).any()
    assert np.asarray(random.bernoulli(k, 1.0, (1000,))).all()
    assert random.bernoulli(k).shape == ()


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("lo,hi", [(0, 2), (-3, 4), (100, 107)])
def test_randint_bounds_and_frequencies(dtype: Any, lo: int, hi: int) -> None:
    r = random.randint(random.key(7), (N,), lo, hi, dtype)
    a = np.asarray(r)
    assert r.shape == (N,) and a.dtype == dtype
    assert a.min() == lo and a.max() == hi - 1  # both ends reached, maxval excluded
    freq = np.bincount(a - lo, minlength=hi - lo) / N
    p = 1.0 / (hi - lo)
    np.testing.assert_allclose(freq, p, atol=sigma_bound(math.sqrt(p * (1 - p)), N))


def test_randint_default_dtype_and_wide_range() -> None:
    k = random.key(8)
    r = random.randint(k, (3, 4), 0, 10)
    assert r.shape == (3, 4) and np.asarray(r).dtype == np.int32
    big = np.asarray(random.randint(k, (N,), 0, 2**40, np.int64))
    assert big.min() >= 0 and big.max() < 2**40
    assert abs(big.mean() / 2**40 - 0.5) < sigma_bound(1 / math.sqrt(12), N)
    assert big.max() > 2**40 * 0.999  # the high bits are used
    full = np.asarray(random.randint(k, (N,), -(2**31), 2**31 - 1, np.int32))
    assert (full < 0).mean() == pytest.approx(0.5, abs=0.01)


def softmax_np(logits: np.ndarray, axis: int = -1) -> np.ndarray:
    z = np.asarray(logits, np.float64)
    z = z - z.max(axis=axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


def test_categorical_frequencies_match_softmax() -> None:
    logits = np.array([0.0, 1.0, 2.0, -1.0, 0.5], np.float32)
    batch = np.tile(logits, (N, 1))
    c = random.categorical(random.key(9), batch)
    a = np.asarray(c)
    assert c.shape == (N,) and a.dtype.kind == "i"
    assert a.min() >= 0 and a.max() < len(logits)
    freq = np.bincount(a, minlength=len(logits)) / N
    p = softmax_np(logits)
    np.testing.assert_allclose(freq, p, atol=sigma_bound(0.5, N))


def test_categorical_axis0_and_rows_differ() -> None:
    # rows of different distributions along axis 0: column j is most likely class j % 3
    m = 3000
    logits = np.full((3, m), -3.0, np.float32)
    logits[np.arange(m) % 3, np.arange(m)] = 3.0
    a = np.asarray(random.categorical(random.key(10), logits, axis=0))
    assert a.shape == (m,)
    hit = np.mean(a == np.arange(m) % 3)
    p_hit = softmax_np(np.array([3.0, -3.0, -3.0]))[0]
    assert abs(hit - p_hit) < sigma_bound(math.sqrt(p_hit * (1 - p_hit)), m)


def test_categorical_one_dimensional_logits_and_zero_gradient() -> None:
    k = random.key(12)
    c = random.categorical(k, np.array([0.0, 1.0, -1.0], np.float32))
    assert c.shape == () and 0 <= int(np.asarray(c)) < 3
    # argmax of perturbed logits is piecewise constant: zero gradient, as in jax
    g = lanes.grad(lambda lg: lnp.sum(random.categorical(k, lg).astype(np.float32)))(
        np.zeros((3, 4), np.float32))
    assert_equal(g, np.zeros((3, 4), np.float32))


def test_invalid_parameters_raise() -> None:
    k = random.key(0)
    with pytest.raises(lanes.LanesError):
        random.bernoulli(k, 1.5, (3,))
    with pytest.raises(lanes.LanesError):
        random.randint(k, (3,), 5, 5)
    with pytest.raises(lanes.LanesError):
        random.uniform(k, (3,), dtype=np.int32)
    with pytest.raises(lanes.LanesError):
        random.uniform(k, (3,), minval=2.0, maxval=1.0)
    with pytest.raises(lanes.LanesError):
        random.truncated_normal(k, 1.0, -1.0, (3,))
    with pytest.raises(lanes.LanesError):
        nn.dropout(np.ones(3, np.float32), 1.0, k)


def test_categorical_never_draws_minus_inf() -> None:
    logits = np.tile(np.array([0.0, -np.inf, 1.0], np.float32), (20000, 1))
    a = np.asarray(random.categorical(random.key(11), logits))
    counts = np.bincount(a, minlength=3)
    assert counts[1] == 0
    assert abs(counts[2] / 20000 - softmax_np(np.array([0.0, 1.0]))[1]) < 0.02


def test_permutation_of_int() -> None:
    k = random.key(12)
    p = np.asarray(random.permutation(k, 50))
    assert p.shape == (50,) and p.dtype.kind == "i"
    assert_equal(np.sort(p), np.arange(50))
    assert not np.array_equal(p, np.arange(50))
    assert_equal(random.permutation(k, 50), p)
    assert not np.array_equal(np.asarray(random.permutation(random.key(13), 50)), p)


def test_permutation_of_array_shuffles_rows() -> None:
    x = np.arange(24, dtype=np.float32).reshape(8, 3) * 1.5
    out = random.permutation(random.key(14), x)
    a = np.asarray(out)
    assert a.shape == x.shape and a.dtype == x.dtype
    # every row is a row of x, each used once
    idx = [int(np.flatnonzero((x == row).all(axis=1))[0]) for row in a]
    assert sorted(idx) == list(range(8))
    assert idx != list(range(8))


def test_permutation_uniform_over_keys() -> None:
    keys = random.split(random.key(15), 20000)
    perms = np.asarray(lanes.vmap(lambda k: random.permutation(k, 5))(keys))
    assert perms.shape == (20000, 5)
    assert (np.sort(perms, axis=1) == np.arange(5)).all()
    # each element lands in each position with probability 1/5
    for pos in range(5):
        freq = np.bincount(perms[:, pos], minlength=5) / 20000
        np.testing.assert_allclose(freq, 0.2, atol=sigma_bound(0.4, 20000))


def truncnorm_moments(lo: float, hi: float) -> tuple[float, float]:
    """Mean and standard deviation of the standard normal conditioned on [lo, hi]."""
    pdf = lambda x: math.exp(-x * x / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    cdf = lambda x: 0.5 * (1 + math.erf(x / math.sqrt(2)))  # noqa: E731
    z = cdf(hi) - cdf(lo)
    mean = (pdf(lo) - pdf(hi)) / z
    var = 1 + (lo * pdf(lo) - hi * pdf(hi)) / z - mean**2
    return mean, math.sqrt(var)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("lo,hi", [(-2.0, 2.0), (-1.0, 0.5), (0.5, 3.0), (4.0, 6.0)])
def test_truncated_normal_bounds_and_moments(dtype: Any, lo: float, hi: float) -> None:
    t = random.truncated_normal(random.key(16), lo, hi, (N,), dtype)
    a = np.asarray(t)
    assert t.shape == (N,) and a.dtype == dtype
    assert a.min() >= lo and a.max() <= hi
    mean, std = truncnorm_moments(lo, hi)
    x = a.astype(np.float64)
    assert abs(x.mean() - mean) < sigma_bound(std, N)
    assert abs(x.std() - std) < 0.01 * std


# ---- reproducibility, vmap, jit ---------------------------------------------------------------

DRAWS: dict[str, Callable[[Any], Any]] = {
    "uniform": lambda k: random.uniform(k, (4,), minval=-1.0, maxval=2.0),
    "uniform64": lambda k: random.uniform(k, (4,), dtype=np.float64),
    "normal": lambda k: random.normal(k, (3,)),
    "bernoulli": lambda k: random.bernoulli(k, 0.4, (6,)),
    "randint": lambda k: random.randint(k, (5,), -10, 10),
    "categorical": lambda k: random.categorical(k, np.array([[0.0, 1.0, 2.0], [1.0, 0.0, -1.0]],
                                                            np.float32)),
    "permutation": lambda k: random.permutation(k, 7),
    "permutation_array": lambda k: random.permutation(k, np.arange(12.0, dtype=np.float32)
                                                      .reshape(6, 2)),
    "truncated_normal": lambda k: random.truncated_normal(k, -0.5, 1.5, (4,)),
    "dropout": lambda k: nn.dropout(np.arange(1.0, 9.0, dtype=np.float32), 0.5, k),
}


@pytest.mark.parametrize("name", sorted(DRAWS))
def test_same_key_same_bits_different_key_different(name: str) -> None:
    draw = DRAWS[name]
    a = np.asarray(draw(random.key(17)))
    assert_equal(draw(random.key(17)), a)
    # some of 8 other keys must give a different draw (a single one could collide by chance
    # for the small discrete draws)
    others = [np.asarray(draw(k)) for k in random.split(random.key(18), 8)]
    assert any(not np.array_equal(o, a) for o in others)


@pytest.mark.parametrize("name", sorted(DRAWS))
def test_vmap_over_keys_equals_loop(name: str) -> None:
    draw = DRAWS[name]
    keys = random.split(random.key(19), 5)
    got = lanes.vmap(draw)(keys)
    want = np.stack([np.asarray(draw(keys[i])) for i in range(5)])
    assert_equal(got, want)


def test_vmap_normal_over_split_keys_equals_stacked_eager() -> None:
    key = random.key(0)
    keys = random.split(key, 5)
    got = lanes.vmap(lambda k: random.normal(k, (3,)))(keys)
    want = np.stack([np.asarray(random.normal(k, (3,))) for k in keys])
    assert got.shape == (5, 3)
    assert_equal(got, want)
    assert len({tuple(r) for r in np.asarray(got).tolist()}) == 5


def test_vmap_keys_with_data_in_axes() -> None:
    keys = random.split(random.key(20), 4)
    xs = np.arange(12, dtype=np.float32).reshape(4, 3)
    got = lanes.vmap(lambda k, x: x + random.normal(k, (3,)))(keys, xs)
    want = np.stack([xs[i] + np.asarray(random.normal(keys[i], (3,))) for i in range(4)])
    assert_close(got, want)
    shared = lanes.vmap(lambda k, x: x * random.uniform(k, (3,)), in_axes=(None, 0))(keys[0], xs)
    u = np.asarray(random.uniform(keys[0], (3,)))
    assert_close(shared, xs * u)


@pytest.mark.parametrize("name", sorted(DRAWS))
def test_jit_same_bits_as_eager(name: str) -> None:
    draw = DRAWS[name]
    f = lanes.jit(draw)
    for seed in (21, 22):
        k = random.key(seed)
        assert_equal(f(k), np.asarray(draw(k)))


def test_jit_split_and_draw_same_as_eager() -> None:
    def f(k: Any) -> Any:
        k1, k2 = random.split(k)
        return random.normal(k1, (3,)) + random.uniform(random.fold_in(k2, 4), (3,))

    k = random.key(23)
    assert_equal(lanes.jit(f)(k), np.asarray(f(k)))
    assert_equal(lanes.jit(lambda k: random.split(k, 4))(k), np.asarray(random.split(k, 4)))


# ---- Generator --------------------------------------------------------------------------------


def test_generator_successive_draws_differ_and_counter_advances() -> None:
    g = random.Generator(0)
    assert g.counter == 0
    a = np.asarray(random.normal(g, (4,)))
    assert g.counter == 1
    b = np.asarray(random.normal(g, (4,)))
    assert g.counter == 2
    c = np.asarray(random.uniform(g, (4,)))
    assert g.counter == 3
    assert not np.array_equal(a, b)
    assert not np.array_equal(a, c) and not np.array_equal(b, c)


def test_generator_rewind_reproduces() -> None:
    g = random.Generator(1)
    draws = [np.asarray(random.normal(g, (3,))) for _ in range(4)]
    g.counter = 2
    assert_equal(random.normal(g, (3,)), draws[2])
    assert g.counter == 3
    g.counter = 0
    assert_equal(random.normal(g, (3,)), draws[0])


def test_generator_same_seed_same_stream_different_seed_differs() -> None:
    g1, g2, g3 = random.Generator(5), random.Generator(5), random.Generator(6)
    for _ in range(3):
        a, b, c = (np.asarray(random.normal(g, (4,))) for g in (g1, g2, g3))
        assert_equal(a, b)
        assert not np.array_equal(a, c)


def test_generator_draw_uses_next_key() -> None:
    g = random.Generator(7)
    k0 = g.next_key()
    assert np.asarray(k0).dtype == np.int64 and k0.shape == ()
    assert g.counter == 1
    g.counter = 0
    assert_equal(random.normal(g, (3,)), np.asarray(random.normal(k0, (3,))))


def test_generator_stream_is_fold_in_of_seed_key() -> None:
    """Documented (lanes/random.h): the n-th draw of Generator(seed) uses fold_in(key(seed), n)."""
    g = random.Generator(3)
    base = random.key(3)
    for n in range(4):
        assert_equal(random.normal(g, (3,)), np.asarray(random.normal(random.fold_in(base, n),
                                                                       (3,))))
    g.counter = 1000
    assert_equal(random.uniform(g, (2,)), np.asarray(random.uniform(random.fold_in(base, 1000),
                                                                     (2,))))


def test_generator_under_jit_draws_fresh_numbers() -> None:
    """A jitted function drawing from a Generator draws new numbers on every call (no stale
    trace) and advances the counter as eager would."""
    g = random.Generator(4)
    eager = [np.asarray(random.normal(g, (3,))) for _ in range(3)]
    g.counter = 0
    f = lanes.jit(lambda x: x + random.normal(g, (3,)))
    z = np.zeros(3, np.float32)
    got = [np.asarray(f(z)) for _ in range(3)]
    assert g.counter == 3
    for a, b in zip(got, eager):
        assert_equal(a, b)
    g.counter = 1
    assert_equal(f(z), eager[1])


def test_generator_vmap_different_is_per_lane_stream() -> None:
    """randomness="different": lane i of the call with key K draws from the stream of
    fold_in(K, i) (documented, lanes/random.h); K is the generator's next key."""
    seed = 5
    g = random.Generator(seed)
    f = lanes.vmap(lambda x: x + random.normal(g, (2,)) + 10.0 * random.uniform(g, (2,)),
                   randomness="different")
    z = np.zeros((4, 2), np.float32)
    first = np.asarray(f(z))
    assert g.counter == 1
    second = np.asarray(f(z))
    assert g.counter == 2
    for call, out in enumerate((first, second)):
        K = random.fold_in(random.key(seed), call)
        want = []
        for i in range(4):
            lane = random.fold_in(K, i)
            want.append(np.asarray(random.normal(random.fold_in(lane, 0), (2,))) +
                        10.0 * np.asarray(random.uniform(random.fold_in(lane, 1), (2,))))
        assert_close(out, np.stack(want), rtol=1e-6)
    assert not np.array_equal(first, second)
    # and the same under jit
    g.counter = 0
    assert_close(lanes.jit(f)(z), first, rtol=1e-6)


def test_generator_vmap_same_advances_per_call() -> None:
    g = random.Generator(6)
    f = lanes.vmap(lambda x: x + random.normal(g, (2,)), randomness="same")
    z = np.zeros((3, 2), np.float32)
    a = np.asarray(f(z))
    assert g.counter == 1
    b = np.asarray(f(z))
    assert g.counter == 2
    assert (a == a[0]).all() and (b == b[0]).all()
    assert not np.array_equal(a[0], b[0])


def test_generator_every_distribution() -> None:
    g = random.Generator(8)
    assert np.asarray(random.bernoulli(g, 0.5, (10,))).dtype == np.bool_
    r = np.asarray(random.randint(g, (100,), 3, 6))
    assert r.min() >= 3 and r.max() < 6
    assert_equal(np.sort(np.asarray(random.permutation(g, 9))), np.arange(9))
    t = np.asarray(random.truncated_normal(g, -1.0, 1.0, (100,)))
    assert t.min() >= -1 and t.max() <= 1
    assert random.categorical(g, np.zeros((4, 3), np.float32)).shape == (4,)
    assert g.counter == 5


def test_generator_statistics() -> None:
    g = random.Generator(9)
    a = np.asarray(random.normal(g, (N,)), np.float64)
    assert abs(a.mean()) < sigma_bound(1.0, N) and abs(a.std() - 1) < 0.01


def test_generator_in_vmap_randomness_error() -> None:
    g = random.Generator(10)
    xs = np.zeros((4, 2), np.float32)
    with pytest.raises(lanes.LanesError):
        lanes.vmap(lambda x: x + random.normal(g, (2,)))(xs)
    with pytest.raises(lanes.LanesError):
        lanes.vmap(lambda x: x + random.normal(g, (2,)), randomness="error")(xs)


def test_generator_in_vmap_randomness_same() -> None:
    g = random.Generator(11)
    xs = np.arange(8, dtype=np.float32).reshape(4, 2)
    out = np.asarray(lanes.vmap(lambda x: x + random.normal(g, (2,)), randomness="same")(xs))
    noise = out - xs
    for row in noise[1:]:
        assert_close(row, noise[0])
    assert np.abs(noise[0]).max() > 0


def test_generator_in_vmap_randomness_different() -> None:
    g = random.Generator(12)
    xs = np.zeros((6, 3), np.float32)
    out = np.asarray(lanes.vmap(lambda x: x + random.normal(g, (3,)), randomness="different")(xs))
    assert len({tuple(r) for r in out.tolist()}) == 6
    big = np.asarray(lanes.vmap(lambda x: x + random.uniform(g, ()), randomness="different")(
        np.zeros(N // 10, np.float32)))
    assert len(np.unique(big)) > 0.99 * big.size
    assert abs(big.mean() - 0.5) < sigma_bound(1 / math.sqrt(12), big.size)


def test_array_parameters_of_full_uniform_and_bernoulli_may_be_traced() -> None:
    key = lanes.random.key(0)
    scales = lanes.asarray(np.array([1.0, 2.0], np.float32))
    assert_equal(lanes.vmap(lambda s: lanes.numpy.full((2,), s))(scales),
                 np.array([[1.0, 1.0], [2.0, 2.0]], np.float32))
    ints = lanes.vmap(lambda s: lanes.numpy.full_like(np.zeros(3, np.int32), s))(scales)
    assert ints.dtype == np.int32
    assert_equal(ints, np.array([[1, 1, 1], [2, 2, 2]], np.int32))
    lows = lanes.asarray(np.array([0.0, 10.0], np.float32))
    draws = lanes.vmap(lambda lo: lanes.random.uniform(key, (2000,), minval=lo, maxval=lo + 1))(lows)
    d = np.asarray(draws)
    assert (d[0] >= 0).all() and (d[0] < 1).all() and (d[1] >= 10).all() and (d[1] < 11).all()
    assert abs(d[0].mean() - 0.5) < 0.03
    p = lanes.asarray(np.array([0.2, 0.8], np.float32))
    freq = np.asarray(lanes.random.bernoulli(key, p, (8000, 2))).mean(axis=0)
    assert abs(freq[0] - 0.2) < 0.02 and abs(freq[1] - 0.8) < 0.02
    certain = lanes.vmap(lambda q: lanes.random.bernoulli(key, q, (3,)))(
        lanes.asarray(np.array([0.0, 1.0], np.float32)))
    assert_equal(certain, np.array([[False] * 3, [True] * 3]))


def test_split_shapes_categorical_shape_exponential_and_choice() -> None:
    key = random.key(3)
    assert random.split(key, (2, 3)).shape == (2, 3) + random.split(key).shape[1:]
    draws = np.asarray(random.categorical(key, lnp.log(lnp.asarray([0.2, 0.3, 0.5])),
                                          shape=(20000,)))
    assert np.abs(np.bincount(draws, minlength=3) / 20000 - [0.2, 0.3, 0.5]).max() < 0.02
    sure = random.categorical(key, lnp.asarray([[0.0, 30.0], [30.0, 0.0]]), shape=(3, 2))
    assert_equal(sure, np.array([[1, 0]] * 3))
    e = np.asarray(random.exponential(key, (20000,)))
    assert (e >= 0).all() and abs(e.mean() - 1.0) < 0.03
    picks = np.asarray(random.choice(key, 5, (1000,)))
    assert picks.min() >= 0 and picks.max() <= 4
    weighted = np.asarray(random.choice(key, 3, (20000,), p=lnp.asarray([0.1, 0.1, 0.8])))
    assert np.abs(np.bincount(weighted, minlength=3) / 20000 - [0.1, 0.1, 0.8]).max() < 0.02
    distinct = np.asarray(random.choice(key, lnp.arange(10.0) * 10, (10,), replace=False))
    assert sorted(distinct.tolist()) == [10.0 * i for i in range(10)]
    top = np.asarray(random.choice(key, 4, (4,), replace=False, p=lnp.asarray([0.25] * 4)))
    assert sorted(top.tolist()) == [0, 1, 2, 3]
    with pytest.raises(lanes.LanesError, match="without replacement"):
        random.choice(key, 3, (4,), replace=False)
    assert lanes.vmap(lambda k: random.exponential(k, (2,)))(random.split(key, 3)).shape == (3, 2)
