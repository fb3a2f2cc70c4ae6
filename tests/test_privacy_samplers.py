"""Samplers: goodness of fit against the exact pmf (with power checks), fixed work, bounds."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binomtest, chi2

from dpgpu.backend import to_numpy
from dpgpu.privacy import Bernoulli, DiscreteGaussian, DiscreteLaplace, NoiseKey, \
    sample_discrete_gaussian, sample_discrete_laplace
from dpgpu.privacy.samplers import LAPLACE_TV_BOUND

ALPHA = 1e-6
N = 100_000
SCALES = [0.5, 2.0, 50.0, 1e4]


def laplace_cdf(scale: float, k: np.ndarray) -> np.ndarray:
    """Exact CDF of P(X = k) = (1-q)/(1+q) q^|k|, q = exp(-1/scale)."""
    q = math.exp(-1 / scale)
    k = np.asarray(k, dtype=np.float64)
    return np.where(k < 0, q ** (-k) / (1 + q), 1 - q ** (np.maximum(k, 0) + 1) / (1 + q))


def gaussian_cdf(sigma: float, k: np.ndarray) -> np.ndarray:
    """Exact CDF of the discrete Gaussian (normalised over +-(12 sigma + 5))."""
    reach = math.ceil(12 * sigma) + 5
    support = np.arange(-reach, reach + 1)
    w = np.exp(-support.astype(np.float64) ** 2 / (2 * sigma * sigma))
    cdf = np.cumsum(w) / w.sum()
    return np.interp(np.clip(k, -reach, reach), support, cdf)


def chi_square_pvalue(samples: np.ndarray, cdf) -> float:
    """Pearson chi-square over ~64 near-equiprobable integer bins, small bins pooled."""
    lo, hi = int(samples.min()), int(samples.max())
    grid = np.arange(lo - 1, hi + 1)
    probs = cdf(grid)
    edges = np.unique(grid[np.searchsorted(probs, np.linspace(0, 1, 65)[1:-1])])
    upper = np.append(cdf(edges), 1.0)
    expected = np.diff(np.concatenate([[0.0], upper])) * samples.size
    observed = np.bincount(np.searchsorted(edges, samples, side="left"),
                           minlength=upper.size).astype(np.float64)
    observed, expected = list(observed), list(expected)
    while len(expected) > 2 and min(expected) < 20:          # pool sparse bins
        i = int(np.argmin(expected))
        j = i - 1 if i == len(expected) - 1 or (i > 0 and expected[i - 1] < expected[i + 1]) \
            else i + 1
        observed[j] += observed.pop(i)
        expected[j] += expected.pop(i)
    o, e = np.array(observed), np.array(expected)
    return float(chi2.sf(((o - e) ** 2 / e).sum(), len(e) - 1))


def draws(sampler, seed: int) -> np.ndarray:
    return sampler.sample(NoiseKey.from_seed(seed), np.arange(N), tag=0, backend="numpy")


@pytest.mark.parametrize("scale", SCALES)
def test_discrete_laplace_fits_exact_pmf_and_rejects_wrong_scales(scale):
    def cdf(k):
        return laplace_cdf(scale, k)

    assert chi_square_pvalue(draws(DiscreteLaplace(scale), 1), cdf) > ALPHA
    for factor in (0.7, 1.3):
        assert chi_square_pvalue(draws(DiscreteLaplace(scale * factor), 2), cdf) < ALPHA


@pytest.mark.parametrize("sigma", SCALES)
def test_discrete_gaussian_fits_exact_pmf_and_rejects_wrong_sigmas(sigma):
    def cdf(k):
        return gaussian_cdf(sigma, k)

    assert chi_square_pvalue(draws(DiscreteGaussian(sigma), 3), cdf) > ALPHA
    for factor in (0.7, 1.3):
        assert chi_square_pvalue(draws(DiscreteGaussian(sigma * factor), 4), cdf) < ALPHA


def test_bernoulli_frequency():
    bits = draws(Bernoulli(0.3), 5)
    assert bits.dtype == np.bool_
    assert binomtest(int(bits.sum()), N, 0.3).pvalue > ALPHA
    assert binomtest(int(bits.sum()), N, 0.3 * 1.1).pvalue < ALPHA


def test_packed_bernoulli_bits_are_words_of_shared_blocks():
    key, b = NoiseKey.from_seed(8), Bernoulli(0.3)
    rng = np.random.default_rng(2)
    ids = np.concatenate([np.arange(100, 180), rng.integers(0, 2 ** 63, 300),
                          np.arange(100, 120)]).astype(np.uint64)
    ids = np.concatenate([ids, np.array([2 ** 64 - 1, 7, 0], dtype=np.uint64)])
    ids = np.concatenate([ids, ids[rng.permutation(ids.size)]])   # repeats, out of order
    bits = b.sample_packed(key, ids, tag=9, backend="numpy")
    words = key.packed_key().words(ids >> np.uint64(3), 9, 8, backend="numpy")
    expected = words[(ids & np.uint64(7)).astype(np.int64), np.arange(ids.size)] < \
        np.uint64(round(0.3 * 2 ** 64))
    assert np.array_equal(bits, expected)
    for i in (0, 85, 400):                                    # alone, the same bit
        assert b.sample_packed(key, ids[i:i + 1], tag=9, backend="numpy")[0] == bits[i]
    assert np.array_equal(b.sample_packed(key, ids[::-1], tag=9, backend="numpy"), bits[::-1])
    # never the words of an unpacked draw of the same key and tag (8 j there is j here)
    plain = key.words(np.arange(50, dtype=np.uint64), 9, 1, backend="numpy")[0]
    assert not np.isin(key.packed_words(8 * np.arange(50, dtype=np.uint64), 9), plain).any()


def test_packed_bernoulli_frequency_and_independence_of_lanes():
    def packed(p):
        return Bernoulli(p).sample_packed(NoiseKey.from_seed(6), np.arange(N), tag=0,
                                          backend="numpy")

    def pairs_pvalue(bits):  # chi-square of lanes 2j, 2j+1 (one ChaCha block) being independent
        pairs = np.bincount(2 * bits[:-1:2].astype(int) + bits[1::2], minlength=4)
        return chi2.sf(((pairs - pairs.sum() / 4) ** 2 / (pairs.sum() / 4)).sum(), 3)

    bits = packed(0.5)
    assert binomtest(int(bits.sum()), N, 0.5).pvalue > ALPHA
    assert pairs_pvalue(bits) > ALPHA
    # the broken twins: a biased threshold, and neighbouring lanes reading one word
    assert binomtest(int(packed(0.5 * 1.1).sum()), N, 0.5).pvalue < ALPHA
    shared = bits.copy()
    shared[1::2] = shared[:-1:2][:shared[1::2].size]
    assert pairs_pvalue(shared) < ALPHA


def test_distance_from_exact_is_accounted_and_tiny():
    for scale in (1e-3, 0.5, 50, 1e4, 1e9, 2.0 ** 52):
        tv = DiscreteLaplace(scale).tv_per_draw
        assert 0 < tv < 1e-16
    for scale in np.geomspace(1e-2, 2.0 ** 52, 60):
        assert DiscreteLaplace(scale).tv_per_draw <= LAPLACE_TV_BOUND < 3e-16
    for sigma in (0.2, 2, 50, 1e4):
        assert 0 < DiscreteGaussian(sigma).tv_per_draw < 1e-14
    assert Bernoulli(0.1).tv_per_draw == 0.0     # float p >= 2**-11: p * 2**64 is an integer
    assert 0 < Bernoulli(1e-10).tv_per_draw <= 2.0 ** -65


@pytest.mark.parametrize("scale, words", [(0.5, 2), (2, 2), (50, 4), (1e4, 6), (1e9, 10),
                                          (2.0 ** 52, 16)])
def test_work_per_draw_depends_on_the_scale_only(scale, words, monkeypatch):
    """Fixed work: one words() request of a fixed size, whatever the draws turn out to be."""
    sampler = DiscreteLaplace(scale)
    assert sampler.n_words == words
    seen = []
    original = NoiseKey.words

    def spy(self, identities, tag, n_words, *, backend=None):
        seen.append(n_words)
        return original(self, identities, tag, n_words, backend=backend)

    monkeypatch.setattr(NoiseKey, "words", spy)
    sampler.sample(NoiseKey.from_seed(1), np.arange(1000), tag=0, backend="numpy")
    assert seen == [words]


def test_largest_scale_stays_within_int64():
    x = sample_discrete_laplace(2.0 ** 52, 10_000, seed=3, backend="numpy")
    assert x.dtype == np.int64
    assert np.abs(x).max() < 2 ** 62
    assert 0.5 < np.std(x.astype(np.float64)) / (2.0 ** 52 * math.sqrt(2)) < 2


def test_gaussian_support_is_the_accounted_table():
    x = sample_discrete_gaussian(0.3, 100_000, seed=4, backend="numpy")
    assert x.dtype == np.int64
    assert set(np.unique(x)) <= {-2, -1, 0, 1, 2}


def test_public_samplers_shape_seed_and_freshness():
    a = sample_discrete_laplace(3.0, (20, 5), seed=7, backend="numpy")
    assert a.shape == (20, 5) and a.dtype == np.int64
    # the default backend (CuPy on a GPU machine) draws the same values
    np.testing.assert_array_equal(a, to_numpy(sample_discrete_laplace(3.0, (20, 5), seed=7)))
    assert not np.array_equal(a, sample_discrete_laplace(3.0, (20, 5), seed=8, backend="numpy"))
    # Without a seed every call uses a fresh key.
    assert not np.array_equal(sample_discrete_laplace(1e3, 100, backend="numpy"),
                              sample_discrete_laplace(1e3, 100, backend="numpy"))
    g = sample_discrete_gaussian(3.0, 50, seed=7, backend="numpy")
    assert g.shape == (50,) and g.dtype == np.int64
    # Laplace and Gaussian draws under one seed are not the same stream.
    assert not np.array_equal(sample_discrete_laplace(3.0, 50, seed=7, backend="numpy"), g)


def test_empty_identities():
    out = DiscreteLaplace(2).sample(NoiseKey.from_seed(1), np.array([], np.int64), tag=0,
                                    backend="numpy")
    assert out.shape == (0,) and out.dtype == np.int64
