"""DPNE (NeurIPS'21): calibration, contribution bounding, pruning, spurious rate, audit, CLI."""

from __future__ import annotations

import functools
import itertools
import json
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import binomtest

from dpgpu import InvalidParameter, SequenceDB
from dpgpu.audit import audit, threshold_events
from dpgpu.cli import main
from dpgpu.mechanisms import dpne as dpne_module
from dpgpu.mechanisms.dpne import Occurrences, dpne, sigma_schedule
from dpgpu.mechanisms.dpne.device import DeviceOccurrences
from dpgpu.mechanisms.dpne.calibration import GRID, dpsu_integer_threshold, tail_probability, \
    tail_threshold, unit_weights, zcdp_delta, zcdp_sigma
from dpgpu.mechanisms.dpne.histogram import TAG_SPURIOUS, bounded_histogram, bounded_pairs, \
    merge_histograms
from dpgpu.mechanisms.dpne.levels import Level, Space, first_level
from dpgpu.privacy import DiscreteGaussian, NoiseKey, analytic_gaussian_sigma, sampling_delta
from dpgpu.scale.partitions import partition


def test_unit_weights_are_floor_and_unit_norm():
    w = unit_weights(50)
    for t in range(1, 51):
        assert w[t] == math.floor(GRID / math.sqrt(t))
        assert t * w[t] ** 2 <= GRID ** 2


def test_unit_weights_lose_little_to_rounding():
    """Regression: with 64 grid units a user keeping 300 grams (the default contribution)
    added 3/64 instead of 1/sqrt(300) = 3.69/64 per gram, 19 % of its weight, and from 4,097
    grams on every weight was 0 (nothing could be released)."""
    from dpgpu.mechanisms.dpne import MAX_CONTRIBUTION

    w = unit_weights(MAX_CONTRIBUTION)
    assert min(w[1:]) >= 1
    assert all(w[t] / (GRID / math.sqrt(t)) > 0.93 for t in range(1, 301))


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


def test_subset_words_of_distinct_users_are_distinct(monkeypatch):
    """Regression: the subset words were keyed by splitmix(user * G ^ gram), which two
    (user, gram) pairs of different users can share -- correlated choices, whose joint law
    changes when adding a user renumbers the others.  Now each user draws its own identities
    (user * 2**32 + rank of the gram among the user's), and its choice is the same whatever
    the other users hold."""
    seen = []
    packed = NoiseKey.packed_words

    def spy(self, identities, tag, **kw):
        seen.append(np.asarray(identities).copy())
        return packed(self, identities, tag, **kw)

    monkeypatch.setattr(NoiseKey, "packed_words", spy)
    rng = np.random.default_rng(7)
    users = np.repeat(np.arange(50), 40)
    grams = rng.integers(0, 2 ** 40, users.size)
    key = NoiseKey.from_seed(3)
    u, g, _ = bounded_pairs(users, grams, 5, key, 0)
    ids = np.concatenate(seen)
    assert ids.size == np.unique(ids).size == 50 * 40
    assert set((ids >> np.uint64(32)).tolist()) == set(range(50))
    for who in (0, 17, 49):                                  # alone, the same choice
        mine = users == who
        alone = bounded_pairs(users[mine], grams[mine], 5, NoiseKey.from_seed(3), 0)[1]
        assert sorted(alone.tolist()) == sorted(g[u == who].tolist())


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


@pytest.mark.parametrize("decay", [1e-200, 1e200])
def test_a_decay_beyond_the_floats_is_refused_by_name(decay):
    with pytest.raises(InvalidParameter, match="^decay: "):
        dpne(_popular_db(), 1.0, 1e-6, max_n=4, schedule="geometric", decay=decay)


def test_geometric_schedule_splits_the_budget_by_decay():
    sigmas = sigma_schedule(5.0, 4, "geometric", 0.5)
    assert sum(s ** -2 for s in sigmas) <= 5.0 ** -2
    assert sum(s ** -2 for s in sigmas) == pytest.approx(5.0 ** -2)
    for a, b in zip(sigmas, sigmas[1:]):
        assert b / a == pytest.approx(0.5)


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


# The whole first level (DPNE's DPSU, max_n = 1) with the release's own calibration: the
# report gives sigma_1 (zcdp_sigma of (epsilon, delta / 2)) and rho_1
# (dpsu_integer_threshold), and each batch runs the level's own steps as dpne() does --
# the users' bounded histogram (Occurrences.first_histogram, partitioned by user) and
# _dpsu (noise, threshold) on it tiled over the trials, every (trial, item) its own noise
# identity.  (No user holds more than Delta items, so no subset choice is made.)  The
# proof splits delta in two: the noisy histogram is a Gaussian mechanism, (epsilon,
# delta / 2) by the zCDP conversion, and rho_1 keeps the items only the added user holds
# unreleased except with probability delta / 2.  A pair of neighbours reaches one half
# or the other, so each audit claims (epsilon, delta / 2) plus the samplers' delta; a
# large delta, 0.1, brings both halves within reach of the runs.
LEVEL_ONE = dict(epsilon=1.0, delta=0.1, max_n=1, contribution=4)
LEVEL_ONE_VOCAB = ["b", "p", "q", "r", "s", "x"]


def _level_one_claim(d1):
    """``(epsilon, delta' / 2 + sampling delta)`` (``delta'``: the mechanism's share of
    delta) and the grid's ``sigma_1``, ``rho_1``, from the report of a release of ``d1``."""
    rep = dpne(d1, seed=0, **LEVEL_ONE).report
    cal = rep["calibration"]
    return (rep["epsilon"], rep["delta"] - cal["delta_mechanism"] / 2, GRID * cal["sigmas"][0],
            cal["thresholds_grid"][0])


def _level_one(sigma, rho, watch):
    """Batched level 1 of dpne(): whether each run releases each of the ``watch`` items."""
    from dpgpu.mechanisms.dpne import Occurrences, _dpsu  # noqa: PLC0415
    from dpgpu.mechanisms.dpne.histogram import merge_histograms  # noqa: PLC0415
    from dpgpu.scale.partitions import partition  # noqa: PLC0415

    def mech(db, seed, trials):
        occ = partition(db, "local", by_user=True).map(Occurrences.of)
        bounding = NoiseKey.from_seed(11).derive("dpne: contribution bounding")
        keys, weights = merge_histograms(occ.gather(Occurrences.first_histogram,
                                                    LEVEL_ONE["contribution"], bounding, 0))
        n = db.vocab.size
        ids = (np.arange(trials, dtype=np.int64)[:, None] * n + keys[None, :]).ravel()
        out = np.zeros((trials, n), dtype=bool)
        hits = _dpsu((ids, np.tile(weights, trials)), sigma, rho, NoiseKey.from_seed(seed), 0)
        out[hits // n, hits % n] = True
        return out[:, [db.vocab.id_of(x) for x in watch]]
    return mech


def _released_any(out):
    return threshold_events([0.5])(out.any(axis=1).astype(np.int64))


def _audit_level_one(d0, d1, watch, trials):
    eps, delta, sigma, rho = _level_one_claim(d1)
    return audit(_level_one(sigma, rho, watch), d0, d1, _released_any, eps, delta,
                 trials=trials, alpha=1e-4, seed=5, batch=True)


# The Gaussian half: d0 has one user holding x, d1 a second one.  The added user's one
# item gets weight GRID, its whole L2 budget on one count, and with rho_1 1.9 sigma above
# d0's weight "x released" is the threshold test of a one-dimensional discrete Gaussian
# mechanism -- the best test of this pair at that threshold.  P[x released] is 0.027 in
# d0 and 0.094 in d1: 0.094 - e 0.027 = 0.021, the Gaussian's true delta at epsilon 1 (the
# zCDP conversion's delta / 2 = 0.05 is an upper bound).  A twin with sigma times 2/3 (and
# rho_1 recalibrated with it, so its lone items stay covered) has 0.196 - e 0.038 = 0.093
# > 0.05: at 100,000 runs it is rejected with probability above 0.9999.
GAUSSIAN_PAIR = ([["x"]], [["x"]] * 2)


def test_level_one_audit_passes_dpne_on_the_gaussian_half():
    d0, d1 = (SequenceDB.from_sequences(s, vocab=LEVEL_ONE_VOCAB) for s in GAUSSIAN_PAIR)
    result = _audit_level_one(d0, d1, ["x"], 100_000)
    assert result.passed, result.summary()
    assert result.delta_lower_bound > 0.005, result.summary()  # the events see the curve


def test_level_one_audit_rejects_two_thirds_of_sigma(monkeypatch):
    monkeypatch.setattr("dpgpu.mechanisms.dpne.zcdp_sigma",
                        lambda epsilon, delta: 2 / 3 * zcdp_sigma(epsilon, delta))
    d0, d1 = (SequenceDB.from_sequences(s, vocab=LEVEL_ONE_VOCAB) for s in GAUSSIAN_PAIR)
    result = _audit_level_one(d0, d1, ["x"], 100_000)
    assert not result.passed, result.summary()


# The threshold half: d1 adds a user holding four items no one else holds (t = Delta = 4,
# weight 128 each: the t with the largest w_t + c_t, which sets rho_1).  One of them is
# released with probability 1 - P[X <= rho_1 - 128]^4, just under delta / 2, and never in
# d0.  A twin whose threshold spends the whole delta (the Gaussian's half too) releases
# one with probability about delta: rejected at 50,000 runs with probability above 0.9999.
LONE_PAIR = ([["b"]], [["b"], ["p", "q", "r", "s"]])


@pytest.mark.parametrize("broken", [False, True], ids=["dpne", "threshold-at-full-delta"])
def test_level_one_audit_on_the_threshold_half(monkeypatch, broken):
    if broken:
        monkeypatch.setattr("dpgpu.mechanisms.dpne.dpsu_integer_threshold",
                            lambda s, delta, max_items: dpsu_integer_threshold(s, 2 * delta,
                                                                               max_items))
    d0, d1 = (SequenceDB.from_sequences(s, vocab=LEVEL_ONE_VOCAB) for s in LONE_PAIR)
    result = _audit_level_one(d0, d1, ["p", "q", "r", "s"], 50_000)
    assert result.passed != broken, result.summary()
    if not broken:
        assert result.counts[0, 0] == 0, result.summary()      # never released in d0
        assert result.delta_lower_bound > 0.04, result.summary()  # the events see delta / 2


# ------------------------------------------------------------------ audit: a level k >= 2
# A level-2 step of DPNE through dpne()'s own code for it, given the released S_1 (the
# proof conditions on released prefixes; here S_1 = every item, which the release of either
# neighbour gives too: 20 base users hold each item).  The step, as dpne() runs it: the
# users' bounded histogram over the candidate keys a * n_right + b (Occurrences.released,
# .candidates, .level_histogram, partitioned by user), noisy_release on the supported
# candidates and _spurious -- keyed Bernoulli bits at p_2 = tail_probability(s_2, c_2) --
# on the unsupported ones, with s_2 = GRID sigma_2, c_2 and Delta_2 read from the report of
# a release.  A batch tiles V_2 over the trials: candidate key x of trial i becomes
# i * |V_2| + x, which is its key in the space of `trials` copies of S_1 joined with S_1
# (the single-side Space: at k = 2 both rules give V_2 = S_1 x S_1).  So every (trial,
# candidate) draws its own noise value or bit, and trial 0 is the release's own level 2
# for the same keys (the first test checks this).  The subset choice uses one bounding key
# for both neighbours: the added user's choice is fixed, and the proof's bound holds given
# it.
#
# The claim: level 2 alone is 1 / (2 sigma_2**2)-zCDP with sigma_2 its share of the budget,
# sigma_schedule(zcdp_sigma(epsilon, delta / 2))[1] (sqrt(2) sigma* at max_n = 2), which
# gives (1.5, zcdp_delta(sigma_2, 1.5)) by the conversion DPNE uses (CKS20 Cor. 13), plus
# the samplers' delta.  Epsilon 2 (sigma_2 = 1.43) and the claim's 1.5 put the twins below
# well within reach of the runs.
#
# The pair: d0 has 20 users holding "x x" for each item x (the four bigrams x x are
# released in every run); d1 adds a user holding eight other bigrams, unsupported in d0.
# It keeps Delta_2 = 2 of them, each at floor(GRID / sqrt(2)) = 181 (L2 norm 255.97 <= GRID).
# In d0 those candidates are released only by their spurious bits, in d1 by the noise on
# their weight, so the audit sets the supported path against the unsupported one (the law
# of a zero entry).  eta = 0.4 puts c_2 where a twin shows best: q = eta / |S_1| = 0.1,
# c_2 = 1.28 s_2.  Events: how many of the added user's eight candidates are released, and
# how many of those it moves (>= j and <= j: the joint upper and lower tails, all released
# and none).  At 200,000 runs (audit seeds 5 to 9) the correct step's bound is 0.67 to 0.75
# for the claimed 1.5 (both moved candidates released: 0.046 in d1, p_2**2 = 0.0099 in d0);
# a twin with sigma times 2/3 (c_2 recalibrated with it) gets 1.69 to 1.75 (0.086 in d1), and
# one whose users keep every bigram (bound=False: 8 x 181, norm 2 GRID) 2.06 to 2.12 (five
# or more of the eight released: 0.071 in d1, 0.005 in d0).
LEVEL_TWO = dict(epsilon=2.0, delta=0.1, max_n=2, contribution=[4, 2], eta=0.4)
LEVEL_TWO_EPSILON = 1.5
LEVEL_TWO_ITEMS = ["a", "b", "c", "d"]
LEVEL_TWO_ADDED = [["a", "b"], ["b", "c"], ["c", "d"], ["d", "a"], ["a", "c"], ["b", "d"],
                   ["c", "a"], ["d", "b"]]
LEVEL_TWO_TRIALS = 200_000


def _level_two_pair():
    base = [[x, x] for x in LEVEL_TWO_ITEMS for _ in range(20)]
    users = np.arange(len(base), dtype=np.int32)
    d0 = SequenceDB.from_sequences(base, vocab=LEVEL_TWO_ITEMS, users=users)
    d1 = SequenceDB.from_sequences(base + LEVEL_TWO_ADDED, vocab=LEVEL_TWO_ITEMS,
                                   users=np.r_[users, [len(base)] * len(LEVEL_TWO_ADDED)])
    return d0, d1


def _level_two_calibration(report):
    """``(s_2, c_2, Delta_2)`` of a release: grid sigma, threshold and contribution bound."""
    cal = report["calibration"]
    return GRID * cal["sigmas"][1], cal["thresholds_grid"][1], report["parameters"][
        "contribution"][1]


def _level_two_claim():
    """``(epsilon, delta)`` that level 2's share of the budget gives, from an honest release."""
    rep = dpne(_level_two_pair()[1], seed=0, **LEVEL_TWO).report
    delta = rep["calibration"]["delta_mechanism"]             # delta less the samplers' share
    # the equal schedule gives each of max_n levels 1/max_n of the zCDP budget rho, so
    # sigma_2 = sigma* sqrt(max_n): worked out here, not taken from sigma_schedule, so that
    # a wrong schedule cannot move the claim along with the noise
    sigma_2 = zcdp_sigma(LEVEL_TWO["epsilon"], delta / 2) * math.sqrt(LEVEL_TWO["max_n"])
    assert rep["calibration"]["sigmas"][1] == pytest.approx(sigma_2, rel=1e-12)
    assert rep["calibration"]["sigmas"][1] >= sigma_2          # rounded up, never below
    return LEVEL_TWO_EPSILON, zcdp_delta(sigma_2, LEVEL_TWO_EPSILON) + rep["delta"] - delta


def _bounding():
    return NoiseKey.from_seed(11).derive("dpne: contribution bounding")


def _level_two_histogram(db, cap, bounding):
    """``(first, space, keys, weights)``: S_1 = every item (a Level), V_2 and dpne()'s
    bounded level-2 histogram over its candidate keys."""
    s1 = np.arange(db.vocab.size, dtype=np.int64)
    first = first_level(s1)
    space = Space(first, first, True)
    occ = partition(db, "local", by_user=True).map(Occurrences.of)
    occ = occ.map(Occurrences.released, s1, True).map(Occurrences.candidates, 2,
                                                       space.n_right, True)
    keys, weights = merge_histograms(occ.gather(Occurrences.level_histogram, cap, bounding,
                                                4 * 2))
    return first, space, keys, weights


def _level_two(db, calibration, key, bounding, trials):
    """``trials`` runs of dpne()'s level-2 step: ``(trials, |V_2|)`` masks of the released
    candidate keys (noise and bits keyed by ``key``, as the release's step key)."""
    s, c, cap = calibration
    first, space, keys, weights = _level_two_histogram(db, cap, bounding)
    v = space.size
    ids = (np.arange(trials, dtype=np.int64)[:, None] * v + keys[None, :]).ravel()
    mask = dpne_module.noisy_release(np.tile(weights, trials), ids, s, c, key, 4 * 2)
    zero = np.zeros(trials * first.grams.shape[0], dtype=np.int64)
    tiled = Space(Level(np.tile(first.grams, (trials, 1)), zero, zero), first, False)
    assert tiled.size == trials * v
    p = float(dpne_module.tail_probability(s, c))                    # as dpne() computes it
    spurious = dpne_module._spurious(tiled, ids, p, key, 4 * 2 + TAG_SPURIOUS)
    out = np.zeros(trials * v, dtype=bool)
    out[ids[mask]] = True
    out[spurious] = True
    return out.reshape(trials, v)


def test_level_two_step_is_the_release_level_two(monkeypatch):
    """One run of the batched step, with the keys a release drew its level 2 with, releases
    that release's S_2, for both neighbours and several seeds."""
    seen = {}
    noisy, spurious = dpne_module.noisy_release, dpne_module._spurious

    def noisy_spy(weights, identities, s, threshold, key, tag):
        if tag == 4 * 2:
            seen.update(key=key, noisy=(s, threshold))
        return noisy(weights, identities, s, threshold, key, tag)

    def spurious_spy(space, supported, p, key, tag):
        seen.update(p=p, spurious_key=key)
        return spurious(space, supported, p, key, tag)

    def histogram_spy(occurrences):  # the host path's and the GPU path's
        histogram = occurrences.level_histogram

        def spy(self, cap, key, tag):
            seen.update(bounding=key, cap=cap)
            return histogram(self, cap, key, tag)
        return spy

    n_spurious = 0
    for db, seed in itertools.product(_level_two_pair(), range(4)):
        seen.clear()
        with monkeypatch.context() as mp:
            mp.setattr(dpne_module, "noisy_release", noisy_spy)
            mp.setattr(dpne_module, "_spurious", spurious_spy)
            for occurrences in (Occurrences, DeviceOccurrences):
                mp.setattr(occurrences, "level_histogram", histogram_spy(occurrences))
            r = dpne(db, seed=seed, **LEVEL_TWO)
        cal = _level_two_calibration(r.report)
        assert r.levels[0].ravel().tolist() == [0, 1, 2, 3]           # S_1: every item
        assert seen["noisy"] == cal[:2] and seen["cap"] == cal[2]
        assert seen["spurious_key"] is seen["key"]
        assert seen["p"] == float(tail_probability(*cal[:2]))
        out = _level_two(db, cal, seen["key"], seen["bounding"], 1)[0]
        mine = sorted(divmod(int(x), 4) for x in np.flatnonzero(out))
        assert mine == sorted(map(tuple, r.levels[1].tolist())), seed
        n_spurious += sum(a != b for a, b in mine)
    assert n_spurious > 0                      # unsupported candidates released in some runs


@pytest.mark.parametrize("broken", [None, "two-thirds-sigma", "unbounded"])
def test_level_two_audit(monkeypatch, broken):
    eps, delta = _level_two_claim()
    if broken == "two-thirds-sigma":
        monkeypatch.setattr("dpgpu.mechanisms.dpne.zcdp_sigma",
                            lambda e, d: 2 / 3 * zcdp_sigma(e, d))
    d0, d1 = _level_two_pair()
    r = dpne(d1, seed=0, **LEVEL_TWO)
    assert r.levels[0].ravel().tolist() == [0, 1, 2, 3]               # S_1: every item
    cal = s, c, cap = _level_two_calibration(r.report)
    assert c == tail_threshold(s, Fraction(LEVEL_TWO["eta"]) / 4)      # q = eta / |S_1|
    if broken == "unbounded":
        monkeypatch.setattr("dpgpu.mechanisms.dpne.bounded_histogram",
                            functools.partial(bounded_histogram, bound=False))
    h0, h1 = (dict(zip(*(a.tolist() for a in _level_two_histogram(d, cap, _bounding())[2:])))
              for d in (d0, d1))
    ids = {x: j for j, x in enumerate(LEVEL_TWO_ITEMS)}
    watch = [4 * ids[a] + ids[b] for a, b in LEVEL_TWO_ADDED]
    assert not set(watch) & set(h0)                                    # unsupported in d0
    moved = [j for j, x in enumerate(watch) if x in h1]
    shift = np.array([h1[watch[j]] for j in moved])
    assert set(shift.tolist()) == {unit_weights(2)[2]} == {181}
    if broken == "unbounded":
        assert len(moved) == 8 and np.sum(shift ** 2) > 3.9 * GRID ** 2     # norm 2 GRID
    else:
        assert len(moved) == cap == 2 and np.sum(shift ** 2) <= GRID ** 2
    in_all = threshold_events(np.arange(len(watch) + 1))
    in_moved = threshold_events(np.arange(len(moved) + 1))

    def events(out):
        mine = out[:, watch]
        return np.concatenate([in_all(mine.sum(axis=1)), in_moved(mine[:, moved].sum(axis=1))],
                              axis=1)

    def mechanism(db, seed, trials):
        return _level_two(db, cal, NoiseKey.from_seed(seed), _bounding(), trials)

    result = audit(mechanism, d0, d1, events, eps, delta, trials=LEVEL_TWO_TRIALS,
                   alpha=1e-4, seed=5, batch=True)
    assert result.passed == (broken is None), result.summary()
    if broken is None:
        assert result.epsilon_lower_bound > 0.5, result.summary()  # the events see the loss


# The unsupported candidates' bits: in d0, every candidate but the four x x is unsupported,
# and each must be released at p_2 = P[N_Z(0, s_2**2) > c_2] -- here summed from the
# discrete Gaussian's density, not by the code under test -- independently of the others:
# each pair of them (the added user's two, in one ChaCha block, among them) both at p_2**2.
# Two-sided binomial tests, Bonferroni over the 12 + 66 at 1e-4: the correct bits pass
# (about 0.1 x 200,000 = 20,000 +- 134 hits each); a twin releasing them at 1.5 p_2 fails
# every one of them.
@pytest.mark.parametrize("broken", [False, True], ids=["dpne", "p-times-1.5"])
def test_level_two_spurious_bits_at_rate_p(monkeypatch, broken):
    d0, d1 = _level_two_pair()
    cal = s, c, cap = _level_two_calibration(dpne(d1, seed=0, **LEVEL_TWO).report)
    k = np.arange(-math.ceil(40 * s), math.ceil(40 * s) + 1)
    density = np.exp(-k.astype(float) ** 2 / (2 * s * s))
    p = density[k > c].sum() / density.sum()
    assert float(tail_probability(s, c)) == pytest.approx(p, abs=1e-12)
    assert 0.09 < p < 0.11
    if broken:
        monkeypatch.setattr("dpgpu.mechanisms.dpne.tail_probability",
                            lambda s, c: 1.5 * tail_probability(s, c))
    _, space, supported, _ = _level_two_histogram(d0, cap, _bounding())
    unsupported = np.setdiff1d(np.arange(space.size), supported)
    assert unsupported.size == 12
    out = _level_two(d0, cal, NoiseKey.from_seed(8), _bounding(), LEVEL_TWO_TRIALS)
    assert out[:, supported].all()                                    # x x: always released
    bits = out[:, unsupported]
    tests = [(int(n), p) for n in bits.sum(axis=0)]
    tests += [(int((bits[:, i] & bits[:, j]).sum()), p * p)
              for i, j in itertools.combinations(range(unsupported.size), 2)]
    pvalues = np.array([binomtest(n, LEVEL_TWO_TRIALS, q).pvalue for n, q in tests])
    level = 1e-4 / len(tests)
    if broken:
        assert (pvalues < level).all(), pvalues.max()
    else:
        assert (pvalues >= level).all(), pvalues.min()


def test_cli_dpne(tmp_path):
    path = tmp_path / "d.txt"
    path.write_text("\n".join(" ".join(s) for s in _popular_db()) + "\n")
    assert main(["dpne", str(path), "--epsilon", "2", "--delta", "1e-6", "--max-n", "3",
                 "--contribution", "5", "--seed", "1", "--out", str(tmp_path / "o")]) == 0
    assert (tmp_path / "o" / "ngrams.tsv").is_file()


def test_too_large_epsilon_names_epsilon_not_an_internal_cap():
    db = SequenceDB.from_sequences([["a", "b"]] * 5, vocab=["a", "b"])
    with pytest.raises(InvalidParameter, match="epsilon: .*needs sampling_delta=.*epsilon=20 and with the "
                                             "number of noisy values.*lower epsilon"):
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
    with pytest.raises(InvalidParameter, match="epsilon: .*needs sampling_delta=.*lower epsilon"):
        dpne(db, epsilon, 1e-5)


# ------------------------------------------------------- vocabulary, draw cap, identities
# A vocabulary read from the data is the set of items that occur: its size is an exact
# statistic of the data.  d0 and d1 are neighbours (d1 adds one user with one new word,
# which sorts last, so no other item's id moves): DPNE must not show, or decide anything
# from, the vocabulary's size.

def _data_vocab_pair(n_users=300):
    base = [list("abc"), list("def"), list("cab")]
    seqs = [base[i % 3] for i in range(n_users)]
    d0 = SequenceDB.from_sequences(seqs)                       # vocabulary from the data
    d1 = SequenceDB.from_sequences(seqs + [["zz"]])
    assert not d0.vocab.public and (d0.vocab.size, d1.vocab.size) == (6, 7)
    return d0, d1


def _without_timings(report):
    return {k: v for k, v in report.items() if k != "timings"}


@pytest.mark.parametrize("method", ["dpne", "dpsu-all", "dpsu-even"])
def test_report_does_not_show_a_data_vocabulary(tmp_path, method):
    d0, d1 = _data_vocab_pair()
    runs = [dpne(d, 8.0, 1e-6, max_n=2, contribution=4, method=method, seed=3)
            for d in (d0, d1)]
    assert runs[0].counts() == runs[1].counts() and runs[0].counts()[0] == 6
    assert runs[0].report["vocabulary"] == {"public": False}
    # nothing else in the report (ledger, calibration, "stopped", ...) tells d0 from d1
    assert _without_timings(runs[0].report) == _without_timings(runs[1].report)
    assert runs[0].summary() == runs[1].summary()
    runs[1].save(tmp_path / "rel")
    saved = json.loads((tmp_path / "rel" / "report.json").read_text())
    assert saved["vocabulary"] == {"public": False}
    # a public vocabulary is described
    pub = SequenceDB.from_sequences(list(d0), vocab=list("abcdef"))
    facts = dpne(pub, 8.0, 1e-6, max_n=2, contribution=4, method=method, seed=3
                 ).report["vocabulary"]
    assert facts["public"] and facts["size"] == 6 and len(facts["sha256"]) == 64


def test_work_cap_and_accounting_do_not_depend_on_the_data():
    """The sampling delta counts sum_k Delta_k draws (never |I| or |V_k|), and the work cap
    reads released sets only: d0 and d1 (7 items) stop, or not, alike."""
    d0, d1 = _data_vocab_pair()
    kw = dict(max_n=2, contribution=2, seed=1)
    # |S_1| = 6 (released), |V_2| = 36
    full = [dpne(d, 8.0, 1e-6, max_candidates=36, **kw) for d in (d0, d1)]
    for r in full:
        assert len(r.counts()) == 2 and r.counts()[0] == 6 and r.counts()[1] > 0
        assert r.report["stopped"] is None
        assert r.report["sampling"] == {"draws_one_user_can_change": 4}  # Delta_1 + Delta_2
    assert _without_timings(full[0].report) == _without_timings(full[1].report)
    small = [dpne(d, 8.0, 1e-6, max_candidates=35, **kw) for d in (d0, d1)]
    assert small[0].report["stopped"] == small[1].report["stopped"] == \
        "level 2: |V_k| = 36 exceeds max_candidates = 35"
    assert small[0].counts() == small[1].counts() == [6]              # level 2 not extracted
    for bad in (0, -1, 2.5):
        with pytest.raises(InvalidParameter, match="max_candidates"):
            dpne(d0, 8.0, 1e-6, max_candidates=bad, **kw)


def test_sampling_delta_counts_the_contributions_of_every_level():
    db = SequenceDB.from_sequences([list("abc")] * 20, vocab=list("abc"))
    r = dpne(db, 1.0, 1e-6, max_n=3, contribution=[5, 7, 11], seed=2)
    sampling = r.report["ledger"]["steps"][0]["sampling_delta"]
    tv = max(DiscreteGaussian(GRID * s).tv_per_draw for s in r.report["calibration"]["sigmas"])
    tv = max(tv, 0.01 * 2.0 ** -52 + 2.0 ** -64)
    assert sampling == pytest.approx(sampling_delta(tv, 23, 1.0))
    with pytest.raises(InvalidParameter, match="epsilon: .*epsilon=60 .*lower epsilon \\(or that number, "
                                             "set by contribution and max_n"):
        dpne(db, 60.0, 1e-6, max_n=9, contribution=10_000, seed=2)


def test_big_first_level_still_extracts_level_two():
    """Regression: the old draw cap counted |V_2| = |S_1|**2 draws; at epsilon 8 it allowed
    about 27,000, so 300 released items (90,000 candidates) stopped DPNE at level 1."""
    items = [f"w{i}" for i in range(300)]
    seqs = [[items[i], items[(i + 1) % 300]] for i in range(300) for _ in range(12)]
    db = SequenceDB.from_sequences(seqs, vocab=items)
    r = dpne(db, 8.0, 1e-6, max_n=2, contribution=2, seed=4)
    assert r.report["stopped"] is None
    assert r.counts()[0] == 300 and r.counts()[1] >= 250  # most of the 300 true bigrams


# Two 4-grams over a 2**20-item alphabet whose old noise identities (SplitMix64 content
# hashes: (2**20 + 3)**4 does not fit 63 bits) are equal: found by sorting the hashes of
# 2**23 random 3-item prefixes and completing the two closest with last items that make
# up the difference.
HUGE = 1 << 20
COLLIDING = ([878555, 791520, 401860, 0], [406172, 806167, 817392, 786710])


@pytest.fixture(scope="module")
def colliding_db():
    from dpgpu import Vocabulary
    vocab = Vocabulary([f"w{i}" for i in range(HUGE)])
    x, y = COLLIDING
    n_users = 1000
    items = np.tile(np.r_[x, y], n_users).astype(np.int32)    # each user writes x and y
    offsets = np.arange(2 * n_users + 1, dtype=np.int64) * 4
    return SequenceDB(items, offsets, vocab, users=np.repeat(np.arange(n_users), 2))


def test_old_content_identities_collide():
    """The premise of the identity tests: content hashes of the two grams are equal."""
    from dpgpu.mechanisms.dpne.levels import identities
    from dpgpu.ops import keys as K
    rows = np.array(COLLIDING, dtype=np.int32)
    assert not K.fits_exact(4, HUGE + 2)
    ids = identities(rows, HUGE)
    assert ids[0] == ids[1]


@pytest.mark.parametrize("method", ["dpne", "dpsu-all"])
def test_colliding_grams_get_distinct_identities(noise_draws, colliding_db, method):
    """Regression: the two grams got one noise identity, hence the same noise value."""
    r = dpne(colliding_db, 1.0, 1e-6, max_n=4, contribution=10, method=method, seed=4)
    x, y = COLLIDING
    assert sorted(r.levels[3].tolist()) == sorted([x, y])       # both drawn and released
    tags = noise_draws.assert_distinct()
    if method == "dpne":   # level 4's noise draw holds exactly the two 4-grams
        ids = np.concatenate(tags[4 * 4 + 1])
        assert ids.size == 2 and ids[0] != ids[1]


@pytest.mark.parametrize("method,rule", [("dpne", "both"), ("dpne", "single"),
                                          ("dpsu-all", None), ("dpsu-even", None)])
def test_identities_of_one_draw_are_distinct(noise_draws, method, rule):
    dpne_only = dict(eta=0.3, rule=rule) if method == "dpne" else {}
    r = dpne(_popular_db(), 4.0, 1e-6, max_n=4, contribution=10, method=method, seed=5,
             **dpne_only)
    assert r.counts()[1] > 0
    noise_draws.assert_distinct()
    if method == "dpne":                                            # spurious draws were made
        assert any(name == "Bernoulli" and packed for name, *_, packed in noise_draws)


def test_release_reproducible_for_a_key():
    db = _popular_db()
    a, b = (dpne(db, 2.0, 1e-6, max_n=4, contribution=10, eta=0.3, seed=9) for _ in range(2))
    assert [g.tolist() for g in a.levels] == [g.tolist() for g in b.levels]


# ------------------------------------------------ delta is the release's total; tiny delta, eta
@pytest.fixture
def no_data_read(monkeypatch):
    """Fail any DPNE run (or baseline) that reaches the data."""
    def read(*args, **kwargs):
        raise AssertionError("the data was read")
    monkeypatch.setattr(dpne_module, "partition", read)
    monkeypatch.setattr(dpne_module, "release_runs", read)


@pytest.mark.parametrize("method", ["dpne", "dpsu-all", "dpsu-even"])
def test_delta_caps_the_release_including_the_samplers(method):
    """Regression: the samplers' allowance (1e-9) was charged on top of delta, so
    ``--delta 1e-20`` released at delta 2.47e-12.  Now min(1e-9, delta / 100) of delta is
    kept for the samplers and the mechanism is calibrated at the rest."""
    r = dpne(_popular_db(), 2.0, 1e-6, max_n=3, contribution=10, method=method, seed=1)
    rep, cal = r.report, r.report["calibration"]
    assert cal["sampling_allowance"] == 1e-9
    assert cal["delta_mechanism"] == pytest.approx(1e-6 - 1e-9)
    spent = rep["ledger"]["spent"]
    assert Fraction(spent["delta"]) + Fraction(spent["sampling_delta"]) <= Fraction(1e-6)
    assert spent["delta"] == cal["delta_mechanism"] and 0 < spent["sampling_delta"] <= 1e-9
    assert rep["delta"] <= rep["parameters"]["delta"] == 1e-6
    if method == "dpne":                      # calibrated at delta less the allowance
        assert cal["sigma_star"] == zcdp_sigma(2.0, cal["delta_mechanism"] / 2)


@pytest.mark.parametrize("method", ["dpne", "dpsu-even"])
def test_delta_too_small_for_the_samplers_is_refused_before_reading_data(no_data_read, method):
    with pytest.raises(InvalidParameter, match=r"^delta: 1e-20 is too small for the samplers: "
                                               r".*needs delta >= \S+e-10"):
        dpne(_popular_db(), 2.0, 1e-20, max_n=3, method=method)


@pytest.mark.parametrize("kwargs,name", [
    ({"delta": 1e-22}, "delta"), ({"delta": 1e-22, "method": "dpsu-even"}, "delta"),
    ({"eta": 1e-25}, "eta"), ({"eta": 1e-22, "max_candidates": 1000}, "eta")])
def test_tiny_delta_or_eta_is_a_parameter_error_before_reading_data(no_data_read, kwargs, name):
    """Regression: ``--delta 1e-22`` and ``--eta 1e-25`` (and ``--method dpsu-even``) raised
    'ValueError: tail probability below the sampler's resolution' with a traceback, the eta
    one after the data was read."""
    args = {"delta": 1e-6, **kwargs}
    with pytest.raises(InvalidParameter, match=f"^{name}: "):
        dpne(_popular_db(), 2.0, max_n=3, **args)


@pytest.mark.parametrize("kwargs,name", [
    ({"epsilon": 1e-320}, "epsilon"), ({"epsilon": 1e308}, "epsilon"),
    ({"method": "dpsu-all", "policy": "laplace", "alpha": 1e308}, "alpha")])
def test_extreme_finite_parameters_are_refused_by_name(no_data_read, kwargs, name):
    """Regression: epsilon 1e-320 raised ZeroDivisionError, 1e308 scipy's 'Optimization
    bounds must be finite scalars', and alpha 1e308 an OverflowError."""
    args = {"epsilon": 1.0, "delta": 1e-5, **kwargs}
    with pytest.raises(InvalidParameter, match=f"^{name}: "):
        dpne(_popular_db(), max_n=2, **args)


@pytest.mark.parametrize("contribution", [np.array([5, 7]), range(5, 8, 2), (5, 7)])
def test_contribution_takes_any_sequence_of_ints(contribution):
    """Regression: a NumPy array or a range was refused as 'expected an integer'."""
    r = dpne(_popular_db(), 4.0, 1e-6, max_n=2, contribution=contribution, seed=1)
    assert r.report["parameters"]["contribution"] == [5, 7]


def test_eta_bound_is_eta_over_max_candidates():
    """Every level's tail share q_k >= eta / max_candidates: above 2**-79 nothing can fail
    later, whatever sizes the levels release."""
    r = dpne(_popular_db(), 4.0, 1e-6, max_n=3, contribution=10, eta=1e-20,
             max_candidates=1000, seed=2)
    assert r.counts()[1] > 0


def test_dpsu_threshold_refuses_a_share_below_the_tables_resolution():
    with pytest.raises(InvalidParameter, match=r"^delta: too small for the DPSU threshold"):
        dpsu_integer_threshold(GRID * 2.0, 1e-30, 300)
    assert dpsu_integer_threshold(GRID * 2.0, 1e-18, 300) > 0


def test_cli_tiny_delta_and_eta_are_one_line_errors(tmp_path, capsys):
    path = tmp_path / "posts.jsonl"
    rng = np.random.default_rng(0)
    path.write_text("".join(json.dumps({"user": f"u{u}", "text": " ".join(
        rng.choice([f"w{i}" for i in range(20)], 5))}) + "\n" for u in range(200)))
    base = ["dpne", str(path), "--user", "user", "--text", "text", "--epsilon", "2",
            "--max-n", "3", "--out", str(tmp_path / "o")]
    for extra, name in ((["--delta", "1e-20"], "delta"), (["--delta", "1e-22"], "delta"),
                        (["--delta", "1e-22", "--method", "dpsu-even"], "delta"),
                        (["--delta", "1e-6", "--eta", "1e-25"], "eta")):
        assert main(base + extra) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"dpgpu: error: {name}: ") and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("delta, warned", [(0.01, True), (0.0099, False), (0.5, True)])
def test_a_delta_not_below_one_over_the_sequences_is_warned(caplog, delta, warned):
    db = SequenceDB.from_sequences([["a", "b"]] * 100)  # 1 / |D| = 0.01
    with caplog.at_level("WARNING", logger="dpgpu"):
        dpne(db, 1.0, delta, max_n=2, contribution=2, seed=1)
    messages = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert any(m.startswith(f"dpne: delta={delta:g} is at least 1 / (number of sequences)")
               for m in messages) == warned
    assert not any("100" in m for m in messages)  # the count itself is not logged
