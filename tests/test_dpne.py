"""DPNE (NeurIPS'21): calibration, contribution bounding, pruning, spurious rate, audit, CLI."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

from dpgpu import InvalidParameter, SequenceDB
from dpgpu.audit import audit, threshold_events
from dpgpu.cli import main
from dpgpu.mechanisms.dpne import dpne
from dpgpu.mechanisms.dpne.calibration import GRID, dpsu_integer_threshold, tail_probability, \
    tail_threshold, unit_weights, zcdp_delta, zcdp_sigma
from dpgpu.mechanisms.dpne.histogram import bounded_histogram
from dpgpu.privacy import DiscreteGaussian, NoiseKey, analytic_gaussian_sigma


def test_unit_weights_are_floor_and_unit_norm():
    w = unit_weights(50)
    for t in range(1, 51):
        assert w[t] == math.floor(GRID / math.sqrt(t))
        assert t * w[t] ** 2 <= GRID ** 2


def test_zcdp_sigma_meets_target_and_is_near_analytic():
    s = zcdp_sigma(1.0, 5e-8)
    assert zcdp_delta(s, 1.0) <= 5e-8 < zcdp_delta(s * 0.999, 1.0)
    # zCDP conversion is never better than the exact Gaussian profile.
    assert analytic_gaussian_sigma(1.0, 5e-8) < s < 1.1 * analytic_gaussian_sigma(1.0, 5e-8)


def test_tail_threshold_against_brute_force():
    s = 7.3
    k = np.arange(-200, 201)
    p = np.exp(-k * k / (2 * s * s))
    p /= p.sum()
    for q in (0.2, 1e-3, 1e-9):
        c = tail_threshold(s, __import__("fractions").Fraction(q))
        assert p[k > c].sum() <= q * (1 + 1e-9)
        assert p[k > c - 1].sum() > q
        assert abs(float(tail_probability(s, c)) - p[k > c].sum()) < 1e-12


def test_dpsu_threshold_close_to_paper_formula():
    # On a fine grid the integer threshold approaches Theorem 2.1's rho_1 (in grid units).
    from dpgpu.privacy import dpsu_threshold
    sigma = 2.0
    c = dpsu_integer_threshold(GRID * sigma, 1e-5, 3)
    assert abs(c / GRID - dpsu_threshold(sigma, 1e-5, 3)) < 0.1


def test_contribution_bounding_l2_at_most_one():
    rng = np.random.default_rng(0)
    users = rng.integers(0, 20, 3000)
    grams = rng.integers(0, 400, 3000)
    key = NoiseKey.from_seed(1)
    keys, w = bounded_histogram(users, grams, 7, key, 0)
    # brute force: per user, the weights it adds, recomputed by removing the user
    for u in range(20):
        rest = users != u
        k2, w2 = bounded_histogram(users[rest], grams[rest], 7, NoiseKey.from_seed(1), 0)
        full = dict(zip(keys.tolist(), w.tolist()))
        for g, v in zip(k2.tolist(), w2.tolist()):
            full[g] -= v
        diff = np.array(list(full.values()), dtype=float)
        assert np.sqrt((diff ** 2).sum()) <= GRID
        assert np.count_nonzero(diff) <= 7


def test_subset_is_uniform():
    # one user with 4 distinct grams, cap 2: each of the 6 pairs about equally often
    seen = {}
    for seed in range(600):
        keys, _ = bounded_histogram(np.zeros(4, np.int64), np.arange(4), 2,
                                    NoiseKey.from_seed(seed), 0)
        seen[tuple(keys.tolist())] = seen.get(tuple(keys.tolist()), 0) + 1
    assert len(seen) == 6 and min(seen.values()) > 60


def _popular_db(n_users=400):
    rng = np.random.default_rng(3)
    base = [["a", "b", "c", "d"], ["b", "c", "a"], ["d", "a", "b"]]
    seqs = [base[i % 3] for i in range(n_users)]
    seqs += [list(rng.choice(list("abcdefgh"), 5)) for _ in range(50)]
    return SequenceDB.from_sequences(seqs, vocab=list("abcdefgh"))


def test_release_downward_closed_and_popular_grams_found():
    db = _popular_db()
    r = dpne(db, 4.0, 1e-6, max_n=4, contribution=10, seed=2)
    grams = set(r.grams())
    for g in grams:
        for i, j in itertools.combinations(range(len(g) + 1), 2):
            assert g[i:j] in grams                      # Proposition 2.1
    assert ("a", "b", "c", "d") in grams


def test_spurious_rate_bounded_by_eta():
    db = _popular_db(2000)
    true = set()
    for s in db:
        for n in range(1, len(s) + 1):
            true.update(tuple(s[i:i + n]) for i in range(len(s) - n + 1))
    spurious = total = 0
    for seed in range(5):
        r = dpne(db, 2.0, 1e-6, max_n=4, contribution=10, eta=0.1, seed=seed)
        g = r.grams()
        total += len(g)
        spurious += sum(x not in true for x in g)
    assert spurious <= 0.1 * total + 3


def test_no_counts_in_release(tmp_path):
    db = _popular_db()
    r = dpne(db, 2.0, 1e-6, max_n=3, contribution=5, seed=1)
    r.save(tmp_path / "rel")
    lines = (tmp_path / "rel" / "ngrams.tsv").read_text().splitlines()
    assert lines[0] == "k\tgram"
    assert all(len(x.split("\t")) == 2 for x in lines)
    rep = json.loads((tmp_path / "rel" / "report.json").read_text())
    assert rep["seeded"] and rep["mechanism"] == "dpne"


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), 0.0, -1.0])
def test_invalid_parameters(bad):
    db = _popular_db()
    with pytest.raises(InvalidParameter, match="epsilon"):
        dpne(db, bad, 1e-6)
    with pytest.raises(InvalidParameter, match="eta"):
        dpne(db, 1.0, 1e-6, eta=bad)


# ------------------------------------------------------------------ audit
# The DP core of a level: the noisy weights of the grams a user touches.  d1 adds a
# user holding 8 distinct grams; with the cap (Delta = 2) its L2 shift is at most
# GRID, and the sum of the noisy values is a 1-D Gaussian mechanism.  Ignoring the
# cap (weights still 1/sqrt(Delta)) shifts the sum by 2 * GRID.
EPS, SIGMA = 1.0, 1.0
D0 = (np.zeros(0, np.int64), np.zeros(0, np.int64))
D1 = (np.zeros(8, np.int64), np.arange(8, dtype=np.int64))


def _core(bound):
    def mech(data, seed, trials):
        keys, w = bounded_histogram(*data, 2, NoiseKey.from_seed(seed), 0, bound=bound)
        h = np.zeros(8, np.int64)
        h[keys] = w
        noise = DiscreteGaussian(GRID * SIGMA).sample(NoiseKey.from_seed(seed + 1),
                                                      np.arange(8 * trials), tag=0)
        return (h[None, :] + noise.reshape(trials, 8)).sum(axis=1) / GRID
    return mech


def test_audit_passes_at_claimed_and_rejects_uncapped():
    from dpgpu.privacy import gaussian_delta
    claimed = gaussian_delta(SIGMA, EPS) * 1.05
    events = threshold_events(np.linspace(-2, 12, 29))
    ok = audit(_core(True), D0, D1, events, EPS, claimed, trials=100_000, seed=5, batch=True)
    assert ok.passed, ok.summary()
    bad = audit(_core(False), D0, D1, events, EPS, claimed, trials=100_000, seed=5, batch=True)
    assert not bad.passed, bad.summary()


def test_cli_dpne(tmp_path):
    path = tmp_path / "d.txt"
    path.write_text("\n".join(" ".join(s) for s in _popular_db()) + "\n")
    assert main(["dpne", str(path), "--epsilon", "2", "--delta", "1e-6", "--max-n", "3",
                 "--contribution", "5", "--seed", "1", "--out", str(tmp_path / "o")]) == 0
    assert (tmp_path / "o" / "ngrams.tsv").is_file()


def test_too_large_epsilon_names_epsilon_not_an_internal_cap():
    db = SequenceDB.from_sequences([["a", "b"]] * 5, vocab=["a", "b"])
    with pytest.raises(InvalidParameter, match="epsilon: 20 is too large"):
        dpne(db, 20.0, 1e-5)


@pytest.mark.parametrize("epsilon", [100.0, 800.0, 1e6])
def test_huge_epsilon_calibrates_or_fails_clearly(epsilon):
    """No underflow in the zCDP conversion (it used to raise 'math domain error' at 100)."""
    from dpgpu.mechanisms.dpne.calibration import _log_zcdp_delta  # noqa: PLC0415

    sigma = zcdp_sigma(epsilon, 1e-7)
    assert 0 < sigma < zcdp_sigma(epsilon / 2, 1e-7)
    assert _log_zcdp_delta(sigma, epsilon) <= math.log(1e-7)
    assert zcdp_delta(sigma, epsilon) <= 1e-7
    db = SequenceDB.from_sequences([["a", "b"]] * 5, vocab=["a", "b"])
    with pytest.raises(InvalidParameter, match="epsilon: .* is too large"):
        dpne(db, epsilon, 1e-5)
