"""Regression tests for DP bugs found in real libraries (anchors-dp-libraries.md A3.3/A4).

Only the classes that apply to the privacy core are here; each test names the
issue it guards against.  Related guards elsewhere: fixed work per draw
(divviup/libprio-rs#645, timing of rejection samplers) in
``test_privacy_samplers.py::test_work_per_draw_depends_on_the_scale_only``;
NaN/inf parameters (diffprivlib, dp_accounting probes) in
``test_privacy_validation.py``; correlated noise from one seed
(IBM/differential-privacy-library#31) in ``test_privacy_ledger.py``.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import dpgpu
from dpgpu.errors import BudgetExceeded, InvalidParameter
from dpgpu.privacy import DiscreteGaussian, DiscreteLaplace, NoiseKey, PrivacyLedger, \
    analytic_gaussian_sigma, gaussian_delta, integer_threshold, laplace_scale, \
    sample_discrete_laplace

PACKAGE = Path(dpgpu.__file__).parent


def test_no_float_noise_sources_in_the_privacy_core():
    """Mironov 2012 / precision attacks (IBM/differential-privacy-library#19, #94,
    opendp/smartnoise-core#242): no floating-point Laplace/Gaussian anywhere noise is made."""
    forbidden = re.compile(r"random\.(laplace|normal|exponential|standard_normal|default_rng|"
                           r"random|rand|randn)\b|curand|xoroshiro|philox", re.IGNORECASE)
    for path in sorted((PACKAGE / "privacy").glob("*.py")):
        hits = [line for line in path.read_text().splitlines() if forbidden.search(line)]
        assert not hits, f"{path.name}: {hits}"


def test_noisy_counts_stay_on_the_integer_lattice():
    """Float outputs leak low-order bits; integer counts plus integer noise cannot."""
    for sampler in (DiscreteLaplace(3.0), DiscreteGaussian(3.0)):
        noise = sampler.sample(NoiseKey.from_seed(1), np.arange(1000), tag=0, backend="numpy")
        assert noise.dtype == np.int64
        released = np.int64(41) + noise
        assert released.dtype == np.int64


def test_laplace_scale_is_exact_and_not_truncated():
    """opendp/opendp#314: ``d_in * (U - L) / 2`` truncated to an integer lost 0.5."""
    assert laplace_scale(0.5, 3) == 6.0
    assert laplace_scale(1.0, 2.5) == 2.5
    assert laplace_scale(3.0) >= 1 / 3                    # rounded up, never down


def test_integer_threshold_rounds_past_rho():
    """google/differential-privacy PR#101: threshold 37.3 cast to 37 let counts of 37 through."""
    assert integer_threshold(37.3) == 38
    assert integer_threshold(37.0) == 38                  # "> 37" means ">= 38"
    assert integer_threshold(-0.5) == 0


def test_less_noise_never_costs_less():
    """OpenMined/PySyft#6914 (less noise, less budget) and dp_accounting's NaN -> epsilon 0."""
    sigmas = np.geomspace(0.2, 30, 40)                   # beyond ~40 delta underflows to 0
    deltas = [gaussian_delta(s, 1.0) for s in sigmas]
    assert all(a > b for a, b in zip(deltas, deltas[1:]))
    for bad in (float("nan"), float("inf"), 0.0):
        with pytest.raises(InvalidParameter):
            gaussian_delta(bad, 1.0)
        with pytest.raises(InvalidParameter):
            analytic_gaussian_sigma(1.0, 1e-5, bad)


def test_infinite_epsilon_does_not_release_the_exact_value():
    """diffprivlib probe: ``Laplace(epsilon=inf)`` returned the true value with no noise."""
    for call in (lambda: laplace_scale(float("inf")), lambda: DiscreteLaplace(0.0),
                 lambda: PrivacyLedger(float("inf"))):
        with pytest.raises(InvalidParameter):
            call()


def test_failed_charge_means_no_noise_is_drawn(monkeypatch):
    """opendp/opendp#1908: the privacy map failed but the measurement still ran."""
    drawn = []
    monkeypatch.setattr(NoiseKey, "words", lambda self, *a, **k: drawn.append(a))

    def release(ledger, counts):
        step = ledger.charge("counts", 0.6)             # charge first ...
        return counts + DiscreteLaplace(2.0).sample(step.key, np.arange(counts.size), tag=0)

    ledger = PrivacyLedger(1.0)
    ledger.charge("earlier", 0.5)
    with pytest.raises(BudgetExceeded):
        release(ledger, np.zeros(5, np.int64))
    assert drawn == [] and len(ledger.steps()) == 1


def test_recomputing_a_release_reproduces_it():
    """DPNE pitfall (noise re-drawn on every Spark action) / Tumult's materialize rule:
    evaluating the same step twice gives the same noise, never fresh noise."""
    step = PrivacyLedger(1.0).charge("counts", 1.0)
    ids = np.array([17, 3, 99, 3])
    first = DiscreteLaplace(1.0).sample(step.key, ids, tag=0, backend="numpy")
    np.testing.assert_array_equal(first, DiscreteLaplace(1.0).sample(step.key, ids, tag=0,
                                                                      backend="numpy"))
    assert first[1] == first[3]                          # one identity, one value


def test_default_randomness_is_not_predictable():
    """Reference DPSU code seeds ``np.random.seed(42)``; dpgpu's default key is fresh."""
    a = sample_discrete_laplace(1e6, 64, backend="numpy")
    b = sample_discrete_laplace(1e6, 64, backend="numpy")
    assert not np.array_equal(a, b)
    assert PrivacyLedger(1.0).to_dict()["seeded"] is False


def test_errors_do_not_depend_on_the_data():
    """IBM/differential-privacy-library#20, diffprivlib's empty-input ZeroDivisionError:
    an empty batch is a valid input, not an error."""
    key = NoiseKey.from_seed(1)
    for sampler in (DiscreteLaplace(2.0), DiscreteGaussian(2.0)):
        assert sampler.sample(key, np.array([], np.int64), tag=0, backend="numpy").size == 0


RELEASES = {
    "ngram": lambda db: dpgpu.ngram(db, 1.0, l_max=8, n_max=5, seed=3),
    "pst": lambda db: dpgpu.pst(db, 1.0, l_top=8, seed=3),
    "pfs2": lambda db: dpgpu.pfs2(db, 1.0, 0.05, seed=3),
    "dpne": lambda db: dpgpu.dpne(db, 4.0, 1e-6, max_n=4, contribution=6, seed=3),
    "spatial": lambda db: dpgpu.privtree_spatial(
        np.random.default_rng(3).random((3000, 2)), 1.0, bounds=[(0, 1), (0, 1)], seed=3),
}


@pytest.mark.parametrize("mechanism", sorted(RELEASES))
def test_no_two_draws_of_a_release_share_key_tag_and_identity(mechanism, noise_draws):
    """One noise value per noised quantity: within a (key, tag), every identity is drawn once
    (content hashes of long grams could collide; DESIGN.md: each value drawn once)."""
    rng = np.random.default_rng(4)
    db = dpgpu.SequenceDB.from_sequences(
        [[f"w{x}" for x in rng.zipf(1.6, rng.integers(1, 12)) % 40] for _ in range(3000)],
        vocab=[f"w{i}" for i in range(40)])
    RELEASES[mechanism](db)
    assert noise_draws
    noise_draws.assert_distinct()


def test_ngram_sampling_delta_counts_touched_counts_not_candidates():
    """Regression: N-gram charged (1 + e^eps) * min(max_draws, possible nodes) * tv, which
    grew with the vocabulary size (|I| * (|I| + 1)**(n_max - 1) nodes, a statistic of the
    data when the vocabulary comes from it) and passed 1e-8 for big alphabets.  Only the
    n_max * l_max counts one sequence touches need exact noise."""
    from dpgpu.privacy import sampling_delta
    from dpgpu.privacy.samplers import LAPLACE_TV_BOUND

    small = dpgpu.SequenceDB.from_sequences([["a", "b"]] * 20, vocab=["a", "b"])
    big = dpgpu.SequenceDB.from_sequences([["a", "b"]] * 20,
                                          vocab=["a", "b"] + [f"x{i}" for i in range(5000)])
    charged = [dpgpu.ngram(db, 1.0, l_max=6, n_max=3, seed=1, synthetic=False
                           ).report["ledger"]["steps"][0]["sampling_delta"] for db in (small, big)]
    assert charged[0] == charged[1] == sampling_delta(LAPLACE_TV_BOUND, 3 * 6, 1.0)


def test_pst_sampling_delta_counts_touched_counts_not_leaf_counts():
    """Regression: PST charged its leaf histograms (1 + e^eps) * max_nodes * (|I| + 1) * tv, which
    grew with the vocabulary (a statistic of the data when taken from it): 10,002 items at
    epsilon 1 were refused as 'epsilon too large for the samplers'.  Only the l_top leaf
    counts one sequence touches need exact noise, as for N-gram."""
    from dpgpu.privacy import sampling_delta
    from dpgpu.privacy.samplers import LAPLACE_TV_BOUND

    small = dpgpu.SequenceDB.from_sequences([["a", "b"]] * 20, vocab=["a", "b"])
    big = dpgpu.SequenceDB.from_sequences([["a", "b"]] * 20,
                                          vocab=["a", "b"] + [f"x{i}" for i in range(10_000)])
    steps = [dpgpu.pst(db, 1.0, l_top=8, seed=1, synthetic=False).report["ledger"]["steps"]
             for db in (small, big)]
    eps_hist = [s[1]["epsilon"] for s in steps]
    assert [s[1]["sampling_delta"] for s in steps] == [
        sampling_delta(LAPLACE_TV_BOUND, 8, e) for e in eps_hist]


def test_an_epsilon_too_large_for_the_samplers_says_so():
    """Regression: epsilon 800 gave 'sampling_delta: must be finite and >= 0, got inf', and
    epsilon 20 'needs epsilon=20 ... but the run has epsilon=20 ... left'.  One check in the
    ledger now says it for every mechanism (DPNE had its own, the baselines another)."""
    db = dpgpu.SequenceDB.from_sequences([["a", "b"]] * 20, vocab=["a", "b"])
    for epsilon, needed in ((800.0, "inf"), (20.0, r"1\.07\d*e-05")):  # past 1; past 1e-6
        with pytest.raises(InvalidParameter, match=rf"epsilon: .*needs sampling_delta={needed} but a run "
                                                 rf"allows at most 1e-06.*epsilon={epsilon:g} and "
                                                 r"with the number of noisy values.*lower epsilon"):
            dpgpu.ngram(db, epsilon, seed=1)
    for method in ("dpne", "dpsu-all"):  # DPNE and its baselines say the same
        with pytest.raises(InvalidParameter, match=r"epsilon: .*needs sampling_delta=.*lower epsilon \(or"):
            dpgpu.dpne(dpgpu.SequenceDB.from_sequences([["a", "b"]] * 20, vocab=["a", "b"],
                                                       users=np.arange(20) // 2),
                       40.0, 1e-6, method=method, seed=1)
