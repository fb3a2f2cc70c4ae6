"""PFS^2 privacy audits beyond tests/test_pfs2.py: shrinking, Delta_k > 1, |C'_k| > 1, pre-mining.

The audit of tests/test_pfs2.py adds "a a a" with l_max = 3 and C_k = {a^k}, so
Delta_k = min(C(3, k), 1) = 1 at every level and shrinking never changes anything: a twin
that skips shrinking, or that uses Delta_k = 1 everywhere, passes it.  The audits below
are tight for exactly those two parts (an added sequence longer than l_max holding many
candidates of a level), for the supports on D with several survivors (scale |C'_k| /
eps_k: the audit of tests/test_pfs2.py has one survivor per level), and for the pre-mining
phase (|D|~, the length histogram, the L_f search), which has no audit elsewhere.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import math
import types

import numpy as np
import pytest

from dpgpu import SequenceDB
from dpgpu.audit import audit
from dpgpu.backend import get_backend
from dpgpu.mechanisms import lengths as lengths_module
from dpgpu.mechanisms import pfs2 as pfs2_module
from dpgpu.mechanisms.pfs2 import PreMining, mine
from dpgpu.mechanisms.pfs2 import premining as premining_module
from dpgpu.mechanisms.pfs2.premining import length_constraint, max_frequent_length, noisy_size
from dpgpu.mechanisms.pfs2.shrink import is_subsequence, shrink
from dpgpu.privacy import DiscreteLaplace, NoiseKey, PrivacyLedger

ALPHA = 1e-4
NOT_MINED = np.iinfo(np.int64).min  # a level that a run did not reach


class _Memo:
    """``fn`` with its results kept by ``key(*args)`` (for deterministic data steps only)."""

    def __init__(self, fn, key):
        self._fn, self._key, self._memo = fn, key, {}

    def __call__(self, *args):
        k = self._key(*args)
        if k not in self._memo:
            self._memo[k] = self._fn(*args)
        return self._memo[k]


def _content(db):
    return db.items.tobytes(), db.offsets.tobytes()


class _NoisePool:
    """``DiscreteLaplace(scale).sample(...)`` served from block draws of the real sampler.

    Every value has its own identity under a fresh key, so the values handed out are
    independent draws at exactly the scale asked for; only the keys differ from a release.
    """

    def __init__(self, seed, block):
        self._key, self._block, self._left, self._blocks = NoiseKey.from_seed(seed), block, {}, 0

    def __call__(self, scale):
        pool = self

        class Sampler:
            def sample(self, key, identities, *, tag, backend=None):
                return pool.take(scale, len(identities))

        return Sampler()

    def take(self, scale, n):
        left = self._left.get(scale, np.empty(0, dtype=np.int64))
        if left.size < n:
            self._blocks += 1
            size = max(self._block, n)
            left = np.concatenate([left, DiscreteLaplace(scale).sample(
                self._key, np.arange(size), tag=self._blocks, backend="numpy")])
        self._left[scale] = left[n:]
        return left[:n]


# ------------------------------------------------ level 2: shrinking, Delta_k = 3
# The mining phase, mine(), with fixed public pre-mining results |D|~ = 4000, l_max = 3,
# L_f = 2, over the items a b c d.  d0 holds 1000 copies each of the one-item sequences
# "a", "b", "c", "d"; d1 adds "a b c d", 4 items: longer than l_max.
#
# Level 1 (sample 1) is the same in both worlds for all purposes: each item's full
# support (1000 or 1001, threshold 0.1 * 4000 = 400, noise scale 4 / (eps_5 / 2) = 8) is
# frequent except with probability below e^-70, so level 2 always has the 16 candidates
# C_2 = {a, b, c, d}^2 and Delta_2 = min(C(3, 2), 16) = 3: local supports get scale
# 3 / eps_4.  The background holds no pair, so in sample 2 every local support of d0 is 0.
#
# The added sequence contains 6 pairs (ab ac ad bc bd cd).  Shrunk to l_max = 3 items
# (Algorithm 2) it becomes "a b c", which contains 3 of them (ab ac bc): it moves three
# local supports by 1 at scale 3 / eps_4, a loss of exactly eps_4, the claim.  The joint
# upper tail {ab, ac, bc >= 1} has likelihood ratio exactly e^eps_4 (P[1 + Z >= 1] =
# e^(1/scale) P[Z >= 1] for discrete Laplace Z), and so does {all 6 pairs >= 1} (the other
# three are not moved); the lower tails at d0's values do the same for d0/d1.  Twins:
#   Delta_2 forced to 1: the same three counts at scale 1 / eps_4, loss 3 eps_4;
#   shrinking skipped:   all 6 pairs move at scale 3 / eps_4, loss 2 eps_4 (seen on the
#                        six-pair events only).
#
# Which sample the added sequence lands in is random in a release (probability 1/2 each
# here), and where it lands in sample 1 the level-2 counts do not see it.  The partition
# is a public, data-independent choice and the pruning step is eps_4-DP for every fixed
# partition (parallel composition), so the harness fixes the worst one: the background in
# sample 1, the added sequence in sample 2.  (The random partition itself is audited in
# tests/test_pfs2.py.)  Per batch, the data steps (sample databases, shrinking, exact
# supports) and the relaxed threshold are memoised, and the noise comes from _NoisePool.
L2_VOCAB = ["a", "b", "c", "d"]
L2_BACKGROUND = [[x] for x in L2_VOCAB for _ in range(1000)]
L2_ADDED = ["a", "b", "c", "d"]
L2_D0 = SequenceDB.from_sequences(L2_BACKGROUND, vocab=L2_VOCAB)
L2_D1 = SequenceDB.from_sequences(L2_BACKGROUND + [L2_ADDED], vocab=L2_VOCAB)
L2_PRE = PreMining(n_noisy=4000, l_max=3, L_f=2)
L2_EPS_PRUNE, L2_EPS_SUPPORT = 2.0, 1.0
#: The pairs of the added sequence: first those its shrunk form "a b c" keeps.
L2_PAIRS = [(0, 1), (0, 2), (1, 2), (0, 3), (1, 3), (2, 3)]
L2_KEPT = 3
L2_TRIALS = 10_000


def _fixed_partition(n, n_samples, key):
    """The background in the first sample, the added sequence (the last index) in the last."""
    out = np.zeros(n, dtype=np.int64)
    out[len(L2_BACKGROUND):] = n_samples - 1
    return out


def _l2_mine(db, ledger, variant="pfs2"):
    return mine(db, ledger, L2_PRE, threshold=0.1, eps_prune=L2_EPS_PRUNE,
                eps_support=L2_EPS_SUPPORT, zeta=0.3, max_candidates=100,
                backend=get_backend("numpy"), variant=variant)


def _l2_locals(levels):
    """Per run: the noisy local supports of L2_PAIRS (NOT_MINED unless level 2 has C_2 full)."""
    if len(levels) < 2 or levels[1].candidates != 16:
        return np.full(len(L2_PAIRS), NOT_MINED, dtype=np.int64)
    return np.array([levels[1].local_noisy[p] for p in L2_PAIRS], dtype=np.int64)


def _cut_key(part, n_samples, l_max, key, assignment, index):
    """What RR's cut mining data depends on: the data, and the cuts of its long sequences.

    The random deletion's key enters only through the cut of the sequences longer
    than ``l_max``, and a sequence's cut depends on its own identity alone, so
    cutting those sequences by themselves (with the random deletion the module
    holds now: a twin's if a test patched it) gives the same cuts, cheaply.
    """
    long_rows = part.lengths > l_max
    cut = pfs2_module.random_deletion(part.select(long_rows), l_max, key, index[long_rows],
                                      assignment[long_rows] + 1)
    return (_content(part), n_samples, l_max, assignment.tobytes(), index.tobytes(),
            _content(cut))


@contextlib.contextmanager
def _mining_harness(seed, trials):
    """mine() with the fixed partition, memoised data steps and _NoisePool noise."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(pfs2_module, "sample_assignment", _fixed_partition)
        for name, key in [("_mining_data", lambda part, n, rows: (_content(part), n,
                                                                  rows.tobytes())),
                          ("_cut_mining_data", _cut_key),
                          ("shrink", lambda sample, cands, k, l_max: (_content(sample),
                                                                      tuple(cands), k, l_max)),
                          ("supports", lambda sample, weights, cands, backend: (
                              _content(sample), weights.tobytes(), tuple(cands))),
                          ("relaxed_threshold", lambda *args: args)]:
            # looked up now, so a twin patched by the test is what gets memoised
            mp.setattr(pfs2_module, name, _Memo(getattr(pfs2_module, name), key))
        mp.setattr(pfs2_module, "DiscreteLaplace", _NoisePool(seed, 32 * trials))
        yield


def level2_runs(db, seed, trials, variant="pfs2"):
    with _mining_harness(seed, trials):
        total = L2_EPS_PRUNE + L2_EPS_SUPPORT
        return np.stack([_l2_locals(_l2_mine(db, PrivacyLedger(
            total, max_sampling_delta=1e-6, seed=seed * trials + i), variant))
            for i in range(trials)])


def level2_events(out):
    assert (out != NOT_MINED).all(), "a run did not mine level 2 with all 16 candidates"
    kept = out[:, :L2_KEPT]
    return np.stack([(kept >= 1).all(axis=1), (out >= 1).all(axis=1),
                     (kept <= 0).all(axis=1), (out <= 0).all(axis=1)], axis=1)


def level2_audit(variant="pfs2"):
    return audit(functools.partial(level2_runs, variant=variant), L2_D0, L2_D1, level2_events, epsilon=L2_EPS_PRUNE,
                 trials=L2_TRIALS, alpha=ALPHA, seed=11, batch=True)


def test_level2_pair_premise():
    """The pair is what the comment above says: Delta_2 = 3 and "a b c d" shrinks to 3 pairs."""
    cands = sorted(itertools.product(range(4), repeat=2))
    added = SequenceDB.from_sequences([L2_ADDED], vocab=L2_VOCAB)
    shrunk = shrink(added, cands, 2, L2_PRE.l_max)[0].sequence_ids(0).tolist()
    assert len(L2_ADDED) > L2_PRE.l_max and len(shrunk) <= L2_PRE.l_max
    assert [c for c in cands if is_subsequence(c, shrunk)] == sorted(L2_PAIRS[:L2_KEPT])
    assert [c for c in cands if is_subsequence(c, [0, 1, 2, 3])] == sorted(L2_PAIRS)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(pfs2_module, "sample_assignment", _fixed_partition)
        levels = _l2_mine(L2_D1, PrivacyLedger(3.0, max_sampling_delta=1e-6, seed=1))
    assert [lvl.candidates for lvl in levels] == [4, 16]
    assert levels[1].sensitivity == 3


def _delta_one(mp):
    """Twin: Delta_k = 1 instead of min(C(l_max, k), |C_k|)."""
    mp.setattr(pfs2_module, "support_sensitivity", lambda l_max, k, n_candidates: 1)


def _no_shrinking(mp):
    """Twin: the sample is counted as it is (sequences longer than l_max in full)."""
    mp.setattr(pfs2_module, "shrink", lambda db, cands, k, l_max: (db, {}))


def test_level2_audit_passes_the_mining_phase():
    result = level2_audit()
    assert result.passed, result.summary()
    assert result.epsilon_lower_bound > 1.5, result.summary()  # the events see the loss


@pytest.mark.slow
@pytest.mark.parametrize("twin", [_delta_one, _no_shrinking], ids=["delta-one", "no-shrinking"])
def test_level2_audit_rejects_a_broken_twin(monkeypatch, twin):
    twin(monkeypatch)
    levels = _l2_mine(L2_D1, PrivacyLedger(3.0, max_sampling_delta=1e-6, seed=1))
    assert levels[1].candidates == 16  # the twin still mines level 2
    assert levels[1].sensitivity == (1 if twin is _delta_one else 3)  # the twin took effect
    result = level2_audit()
    assert not result.passed, result.summary()


# ------------------------------------- supports on D: |C'_k| > 1 survivors
# The level-2 pair above, read at level 1 with eps_4 = 0.5 and eps_5 = 2.0 (L_f = 2, so
# eps_k = 1.0 per level).  All four items survive the sample at level 1 (local supports
# 1000 against a relaxed threshold of about 192, scale 3 / eps_4 = 6: each misses with
# probability below e^-130), so C'_1 = {a, b, c, d} and their supports on D get scale
# |C'_1| / eps_1 = 4.  The added sequence "a b c d" (supports on D are not shrunk) moves
# all four supports from 1000 to 1001, and nothing else at level 1 (the partition puts it
# in sample 2, which level 1 does not read): a loss of exactly 4 * 1 / 4 = eps_1 = 1.0 on
#     {all four released supports >= 1001}   (and on {all four <= 1000}, for d0/d1).
# The claim is eps_4 + eps_5 = 2.5.  Twin: the supports' scale computed with sensitivity 1
# instead of |C'_k| (scale 1 / eps_1 = 1): loss 4 eps_1 = 4.0 on the same events.  Earlier
# audits have one survivor per level, where the two coincide.  The event has probability
# about 0.10 under d1 and 0.037 under d0 (0.29 and 0.005 for the twin): at 10,000 runs the
# real code's bound is about 0.7 (0.62 .. 0.72 over audit seeds) and the twin's about 3.4
# (3.30 .. 3.55).  Per batch, the data steps are memoised and the noise comes from
# _NoisePool, as for the level-2 audit.
SUP_EPS_PRUNE, SUP_EPS_SUPPORT = 0.5, 2.0
SUP_EPS_K = SUP_EPS_SUPPORT / L2_PRE.L_f
SUP_ITEMS = [(i,) for i in range(len(L2_VOCAB))]
SUP_TRIALS = 10_000


def _sup_mine(db, ledger):
    return mine(db, ledger, L2_PRE, threshold=0.1, eps_prune=SUP_EPS_PRUNE,
                eps_support=SUP_EPS_SUPPORT, zeta=0.3, max_candidates=100,
                backend=get_backend("numpy"))


def supports_runs(db, seed, trials):
    """Per run: the released level-1 supports of SUP_ITEMS (NOT_MINED where not released)."""
    out = np.full((trials, len(SUP_ITEMS)), NOT_MINED, dtype=np.int64)
    with _mining_harness(seed, trials):
        for i in range(trials):
            frequent = dict(_sup_mine(db, PrivacyLedger(
                SUP_EPS_PRUNE + SUP_EPS_SUPPORT, max_sampling_delta=1e-6,
                seed=seed * trials + i))[0].frequent)
            out[i] = [frequent.get(c, NOT_MINED) for c in SUP_ITEMS]
    return out


def supports_events(out):
    assert (out != NOT_MINED).all(), "a run did not release all four level-1 supports"
    return np.stack([(out >= 1001).all(axis=1), (out <= 1000).all(axis=1)], axis=1)


def supports_audit(seed=17):
    return audit(supports_runs, L2_D0, L2_D1, supports_events,
                 epsilon=SUP_EPS_PRUNE + SUP_EPS_SUPPORT, trials=SUP_TRIALS, alpha=ALPHA,
                 seed=seed, batch=True)


def _sup_level1(db, seed):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(pfs2_module, "sample_assignment", _fixed_partition)
        return _sup_mine(db, PrivacyLedger(SUP_EPS_PRUNE + SUP_EPS_SUPPORT,
                                           max_sampling_delta=1e-6, seed=seed))[0]


def test_supports_pair_premise():
    """Four survivors at level 1, scale 4 / eps_1, and "a b c d" moves all four supports."""
    for db, want in [(L2_D0, 1000), (L2_D1, 1001)]:
        assert pfs2_module.supports(db, np.ones(len(db), dtype=np.int64), SUP_ITEMS,
                                    get_backend("numpy")).tolist() == [want] * len(SUP_ITEMS)
        for seed in range(5):
            level = _sup_level1(db, seed)
            assert level.survivors == len(SUP_ITEMS) >= 4
            assert level.support_noise_scale == pytest.approx(len(SUP_ITEMS) / SUP_EPS_K)
            assert sorted(c for c, _ in level.frequent) == SUP_ITEMS


def test_supports_audit_passes():
    result = supports_audit()
    assert result.passed, result.summary()
    assert result.epsilon_lower_bound > 0.5, result.summary()  # the events see the loss


def _supports_sensitivity_one(mp):
    """Twin: the supports on D at scale 1 / eps_k, |C'_k| ignored (pruning's scale kept)."""
    real = pfs2_module.laplace_scale
    mp.setattr(pfs2_module, "laplace_scale", lambda epsilon, sensitivity=1.0, **kw: (
        real(epsilon, **kw) if epsilon == SUP_EPS_K else real(epsilon, sensitivity, **kw)))


@pytest.mark.slow
def test_supports_audit_rejects_a_scale_that_ignores_the_survivors(monkeypatch):
    _supports_sensitivity_one(monkeypatch)
    level = _sup_level1(L2_D1, 1)
    assert level.survivors == len(SUP_ITEMS)  # still four survivors
    assert level.sensitivity == 3  # the pruning step is untouched
    assert level.support_noise_scale == pytest.approx(1 / SUP_EPS_K)  # the twin took effect
    result = supports_audit()
    assert not result.passed, result.summary()


# ------------------------------------------------------------------- pre-mining
# The pre-mining phase as pfs2() runs it: |D|~ = noisy_size (eps_1), l_max =
# length_constraint (eps_2: the length histogram of lengths 1 .. l_upper = 6), L_f =
# max_frequent_length (eps_3 over ceil(log2 l_max) binary-search queries).  One run's
# output is (|D|~, l_max, L_f).
#
# d0 holds 2 copies of "a b c d e" and 18 fillers of 5 items seen nowhere else (an item of
# support 1 is in no pattern of support above 1); d1 adds "a b c".  The added sequence
# moves |D| by 1, the count of length 3 from 0 to 1, and the maximal supports beta_2 and
# beta_3 from 2 to 3 (it contains "a b" and "a b c"; no sequence of d0 has fewer than 5
# items).  The public eta = 0.03 and theta = 0.1 are chosen so that, for every |D|~ = u in
# the window W = 21 .. 29, the length threshold eta u rounds up to 1 and the support
# threshold theta u to 3 = beta + 1 (the floor, max(1, int(theta u / 2)) = 1, stays below
# beta).  The event
#     {|D|~ in W, l_max = 3, L_f = 3}
# then has likelihood ratio exactly e^(eps_1 + eps_2 + eps_3), the claim:
#   * |D|~ = u >= 21 is 21 + Z under d1 and 20 + Z under d0: ratio e^eps_1 for each u;
#   * l_max = 3 iff the noisy cumulative counts of lengths 1 and 2 (noise only, the same
#     in both worlds) stay below 1 and S_2 + c_3 + Z_3 >= 1 with c_3 = 1 or 0: for each
#     such S_2 <= 0 the ratio is P[Z_3 >= -S_2] / P[Z_3 >= 1 - S_2] = e^eps_2;
#   * l_max = 3 takes ceil(log2 3) = 2 queries, so each has noise of scale 2 / eps_3, and
#     L_f = 3 iff both probes (y = 2, then y = 3) pass, max(beta_y, 1) + noise >= 3: ratio
#     e^(eps_3 / 2) per probe.
# Twins: the length histogram at half its scale (loss eps_1 + 2 eps_2 + eps_3) and the
# binary search with every query at eps_3 (the split into ceil(log2 l_max) shares
# forgotten: loss eps_1 + eps_2 + 2 eps_3).  With the split below the claim is 3.0 and
# the event has probability about 0.071 under d1 (0.16 and 0.10 for the twins) and 0.0035
# under d0 (0.0022, 0.0011): at 20,000 runs the real code's bound is about 2.4 and the
# twins' about 3.6.  Per batch, MaximalSupports.of (exact, data) is memoised and the
# noise comes from _NoisePool.
PM_VOCAB = ["a", "b", "c", "d", "e"] + [f"f{i}" for i in range(90)]
PM_BACKGROUND = [list("abcde")] * 2 + [[f"f{5 * j + i}" for i in range(5)] for j in range(18)]
PM_ADDED = ["a", "b", "c"]
PM_D0 = SequenceDB.from_sequences(PM_BACKGROUND, vocab=PM_VOCAB)
PM_D1 = SequenceDB.from_sequences(PM_BACKGROUND + [PM_ADDED], vocab=PM_VOCAB)
PM_EPS = (0.25, 1.25, 1.5)
PM_ETA, PM_THETA, PM_L_UPPER = 0.03, 0.1, 6
PM_WINDOW = range(21, 30)
PM_TRIALS = 20_000


def _pre_mining(db, ledger):
    """(|D|~, l_max, L_f) as pfs2() computes them."""
    n_noisy = noisy_size(db, ledger, PM_EPS[0])
    l_max = length_constraint(db, ledger, PM_EPS[1], n_noisy, PM_L_UPPER, PM_ETA)
    return n_noisy, l_max, max_frequent_length(db, ledger, PM_EPS[2], l_max,
                                               PM_THETA * n_noisy)


def pre_mining_runs(db, seed, trials):
    with pytest.MonkeyPatch.context() as mp:
        real = premining_module.MaximalSupports
        mp.setattr(premining_module, "MaximalSupports", types.SimpleNamespace(of=_Memo(
            real.of, lambda db, floor, data: (_content(db), floor))))
        pool = _NoisePool(seed, 8 * trials)
        mp.setattr(premining_module, "DiscreteLaplace", pool)
        mp.setattr(lengths_module, "DiscreteLaplace", pool)
        return np.array([_pre_mining(db, PrivacyLedger(
            sum(PM_EPS), max_sampling_delta=1e-6, seed=seed * trials + i))
            for i in range(trials)], dtype=np.int64)


def pre_mining_events(out):
    n_noisy, l_max, L_f = out.T
    return np.stack([np.isin(n_noisy, PM_WINDOW) & (l_max == 3) & (L_f == 3)], axis=1)


def pre_mining_audit():
    return audit(pre_mining_runs, PM_D0, PM_D1, pre_mining_events, epsilon=sum(PM_EPS),
                 trials=PM_TRIALS, alpha=ALPHA, seed=13, batch=True)


def test_pre_mining_pair_premise():
    """Thresholds over the window, and the maximal supports the comment above relies on."""
    for u in PM_WINDOW:
        assert math.ceil(PM_ETA * u) == 1 and math.ceil(PM_THETA * u) == 3
        assert max(1, int(premining_module.BETA_FLOOR * PM_THETA * u)) <= 2
    for db, want in [(PM_D0, 2), (PM_D1, 3)]:
        beta = premining_module.MaximalSupports(db, 1)
        assert [beta.exact(y) for y in (2, 3)] == [want, want]
    # lengths 0 .. 3: no empty sequences, and one sequence of 3 items in PM_D1
    assert lengths_module.length_counts(PM_D0.lengths, PM_L_UPPER)[:4].tolist() == [0, 0, 0, 0]
    assert lengths_module.length_counts(PM_D1.lengths, PM_L_UPPER)[:4].tolist() == [0, 0, 0, 1]


def test_pre_mining_audit_passes():
    result = pre_mining_audit()
    assert result.passed, result.summary()
    assert result.epsilon_lower_bound > 2.0, result.summary()  # the events see the loss


def _lengths_half_scale(mp):
    """Twin: the length histogram drawn at half its scale (2 eps_2 per count)."""
    real = premining_module.noisy_length_histogram
    mp.setattr(premining_module, "noisy_length_histogram",
               lambda counts, key, epsilon, *, tag: real(counts, key, 2 * epsilon, tag=tag))


def _queries_unsplit(mp):
    """Twin: every binary-search query at eps_3 (scale 1 / eps_3, not ceil(log2 l_max) / eps_3)."""
    real = premining_module.laplace_scale
    mp.setattr(premining_module, "laplace_scale", lambda epsilon, sensitivity=1.0: real(epsilon))


@pytest.mark.slow
@pytest.mark.parametrize("twin", [_lengths_half_scale, _queries_unsplit],
                         ids=["lengths-half-scale", "queries-unsplit"])
def test_pre_mining_audit_rejects_a_broken_twin(monkeypatch, twin):
    twin(monkeypatch)
    result = pre_mining_audit()
    assert not result.passed, result.summary()
