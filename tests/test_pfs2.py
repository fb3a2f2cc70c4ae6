"""PFS^2 (ICDE'16): sequence shrinking, threshold relaxation, supports, privacy audit, release."""

from __future__ import annotations

import json
import math
import re
from itertools import combinations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpgpu
from dpgpu import InvalidParameter, SequenceDB
from dpgpu.audit import audit
from dpgpu.backend import get_backend
from dpgpu.cli import main
from dpgpu.eval.truth import _candidates, _dedupe, frequent_subsequences
from dpgpu.mechanisms import pfs2 as pfs2_module
from dpgpu.mechanisms.pfs2 import PreMining, capped_candidates, mine, pfs2
from dpgpu.mechanisms.pfs2.relax import normal_laplace_cdf, relaxed_threshold
from dpgpu.mechanisms.pfs2.shrink import compress, delete_irrelevant, is_subsequence, \
    reconstruct, shrink
from dpgpu.mechanisms.pfs2.support import supports
from dpgpu.privacy import DiscreteLaplace, NoiseKey, PrivacyLedger


def contain(seq, cands):
    return {c for c in cands if is_subsequence(c, seq)}


def brute_contains(pattern, seq):
    """Brute force: some choice of positions spells the pattern."""
    return any(tuple(seq[i] for i in pos) == tuple(pattern)
               for pos in combinations(range(len(seq)), len(pattern)))


seqs = st.lists(st.integers(0, 4), max_size=14)
cand_sets = st.integers(1, 3).flatmap(
    lambda k: st.tuples(st.just(k), st.lists(st.tuples(*[st.integers(0, 4)] * k), min_size=1,
                                             max_size=12, unique=True)))


# ------------------------------------------------------------------- shrinking
@settings(max_examples=300, deadline=None)
@given(seqs, cand_sets)
def test_deletion_and_compression_keep_contained_candidates(seq, kc):
    """Lemmas 1 and 2: Contain_k is unchanged by deletion and by compression."""
    k, cands = kc
    db = SequenceDB.from_sequences([[str(x) for x in seq]], vocab=[str(i) for i in range(5)])
    relevant = np.zeros(5, dtype=bool)
    relevant[[x for c in cands for x in c]] = True
    deleted = delete_irrelevant(db, relevant).sequence_ids(0).tolist()
    assert contain(deleted, cands) == contain(seq, cands)
    assert contain(compress(seq, k), cands) == contain(seq, cands)
    assert contain(compress(deleted, k), cands) == contain(seq, cands)


def test_compression_examples():
    assert compress([0, 1, 1, 1, 3], 2) == [0, 1, 1, 3]  # Example 5.1: abbbe -> abbe
    assert compress([0, 1, 0, 1, 0, 1, 0, 1], 2) == [0, 1, 0, 1]
    assert compress([0, 1, 2] * 4 + [3], 1) == [0, 1, 2, 3]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 4), max_size=30), cand_sets, st.integers(1, 6))
def test_reconstruction_never_exceeds_l_max(seq, kc, l_max):
    k, cands = kc
    cands = sorted(cands)
    out = reconstruct(seq, cands, k, l_max)
    assert len(out) <= l_max
    if contain(seq, cands) and l_max >= k:  # keeps at least one candidate it had
        assert contain(out, cands)


def reconstruct_reference(seq, candidates, k, l_max):
    """Algorithm 2 as first written (all checks in plain Python): the fast path must match it."""
    from collections import Counter
    contained = [c for c in candidates if is_subsequence(c, seq)]
    if not contained:
        return []
    children = {}
    for c in contained:
        children.setdefault(c[:-1], set()).add(c[-1])
    remaining = set(contained)

    def c_score(c):
        return sum(len(children[g]) for g in {c[:i] + c[i + 1:] for i in range(k)}
                   if g in children)

    def best_candidate():
        pool = [c for c in contained if c in remaining]
        return max(pool, key=lambda c: (c_score(c), len(set(c)), [-x for x in c]))

    out = []

    def drop_contained():
        for c in [c for c in remaining if is_subsequence(c, out)]:
            remaining.discard(c)
            children[c[:-1]].discard(c[-1])

    out.extend(best_candidate()[:l_max])
    drop_contained()
    while len(out) < l_max and remaining:
        votes = Counter()
        for g, kids in children.items():
            if kids and is_subsequence(g, out):
                votes.update(kids)
        if votes:
            top = max(votes.values())
            out.append(min(x for x, v in votes.items() if v == top))
        else:
            out.extend(best_candidate()[:l_max - len(out)])
        drop_contained()
    return out


def compress_reference(seq, k, max_pattern=3):
    """Lemma 2 as first written (plain Python): the Numba kernel must match it."""
    cur = list(seq)
    for p in range(1, max_pattern + 1):
        out, i, n = [], 0, len(cur)
        while i < n:
            if i + p * (k + 1) <= n:
                unit = cur[i:i + p]
                r = 1
                while cur[i + r * p:i + (r + 1) * p] == unit:
                    r += 1
                if r > k:
                    out.extend(unit * k)
                    i += r * p
                    continue
            out.append(cur[i])
            i += 1
        cur = out
    return cur


def shrink_reference(db, candidates, k, l_max):
    """Section V-A in plain Python: deletion, compression, Algorithm 2, sequence by sequence."""
    relevant = {x for c in candidates for x in c}
    rows, stats = [], {"compressed": 0, "reconstructed": 0}
    for i in range(len(db)):
        s = [x for x in db.sequence_ids(i).tolist() if x in relevant]
        if len(s) > l_max:
            stats["compressed"] += 1
            s = compress_reference(s, k)
            if len(s) > l_max:
                stats["reconstructed"] += 1
                s = reconstruct_reference(s, candidates, k, l_max)
        rows.append(s)
    lens = [len(r) for r in rows]
    return SequenceDB(np.array([x for r in rows for x in r], dtype=np.int32),
                      np.concatenate([[0], np.cumsum(lens)]), db.vocab), stats


def rows_of(db):
    return [db.sequence_ids(i).tolist() for i in range(len(db))]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 3), max_size=40), st.integers(1, 4), st.integers(1, 4))
def test_compression_equals_reference(seq, k, max_pattern):
    assert compress(seq, k, max_pattern) == compress_reference(seq, k, max_pattern)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.integers(0, 5), max_size=40), min_size=1, max_size=6),
       st.integers(1, 4).flatmap(lambda k: st.tuples(st.just(k), st.lists(
           st.tuples(*[st.integers(0, 5)] * k), min_size=1, max_size=40, unique=True))),
       st.integers(1, 8))
def test_fast_shrinking_equals_reference(rows, kc, l_max):
    """The Numba kernels change no shrunk sequence (empty, short and repetitive ones included)."""
    k, cands = kc
    cands = sorted(cands)
    for r in rows:
        assert reconstruct(r, cands, k, l_max) == reconstruct_reference(r, cands, k, l_max)
    db = SequenceDB.from_sequences([[str(x) for x in r] for r in rows],
                                   vocab=[str(i) for i in range(6)])
    out, stats = shrink(db, cands, k, l_max)
    want, want_stats = shrink_reference(db, cands, k, l_max)
    assert rows_of(out) == rows_of(want) and stats == want_stats


@pytest.mark.parametrize("seed", range(4))
def test_shrinking_random_databases_equals_reference(seed):
    """Larger random samples: many long sequences per kernel call, candidates in any order."""
    rng = np.random.default_rng(seed)
    n_items, k, l_max = int(rng.integers(3, 12)), int(rng.integers(1, 5)), int(rng.integers(1, 12))
    rows = [rng.integers(0, n_items, size=int(rng.geometric(0.05)) - 1).tolist()
            for _ in range(300)] + [[], [0] * 50, [0, 1] * 30]
    cands = list({tuple(rng.integers(0, n_items, size=k).tolist()) for _ in range(150)})
    db = SequenceDB.from_sequences([[str(x) for x in r] for r in rows],
                                   vocab=[str(i) for i in range(n_items)])
    out, stats = shrink(db, cands, k, l_max)
    want, want_stats = shrink_reference(db, sorted(cands), k, l_max)
    assert rows_of(out) == rows_of(want) and stats == want_stats
    assert stats["reconstructed"] > 0


def test_shrink_rejects_malformed_candidates():
    db = SequenceDB.from_sequences([["0", "1"]], vocab=["0", "1"])
    for cands, k in [([(0, 1), (0,)], 2), ([(0, 1), (0, 1)], 2), ([(0,)], 0)]:
        with pytest.raises(ValueError):
            shrink(db, cands, k, 1)


def test_pfs2_release_is_unchanged_by_the_fast_shrinking(monkeypatch):
    """End to end, fixed seed: the release equals the one with the plain-Python shrinking."""
    rng = np.random.default_rng(5)
    rows = [[f"i{x}" for x in rng.choice(8, size=rng.integers(0, 30),
                                         p=[0.3, 0.2, 0.15, 0.1, 0.1, 0.05, 0.05, 0.05])]
            for _ in range(2000)]
    db = SequenceDB.from_sequences(rows, vocab=[f"i{x}" for x in range(8)])
    reconstructed = []

    def counted(*args):
        out, stats = shrink(*args)
        reconstructed.append(stats["reconstructed"])
        return out, stats

    def release(shrinker):
        monkeypatch.setattr(pfs2_module, "shrink", shrinker)
        rel = pfs2(db, 2.0, 0.2, seed=3, l_upper=12)
        return rel.frequent(), [(lvl.to_dict(), lvl.local_noisy) for lvl in rel.levels]

    fast = release(counted)
    assert sum(reconstructed) > 100  # the levels do reconstruct sequences
    assert fast == release(shrink_reference)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(st.integers(0, 4), max_size=25), min_size=1, max_size=8), cand_sets,
       st.integers(1, 6))
def test_shrink_enforces_l_max_and_keeps_short_sequences(rows, kc, l_max):
    k, cands = kc
    cands = sorted(cands)
    db = SequenceDB.from_sequences([[str(x) for x in r] for r in rows],
                                   vocab=[str(i) for i in range(5)])
    out, _ = shrink(db, cands, k, l_max)
    assert len(out) == len(db) and int(out.lengths.max(initial=0)) <= l_max
    for i in range(len(db)):
        got = out.sequence_ids(i).tolist()
        if compress([x for x in rows[i] if any(x in c for c in cands)], k) == got:
            assert contain(got, cands) == contain(rows[i], cands)


# ----------------------------------------------------------- threshold relaxation
@pytest.mark.parametrize("theta,n,sens,eps", [(0.01, 1e5, 28, 0.45), (0.3, 10, 1, 1.5),
                                              (0.05, 2000, 70, 0.45)])
def test_relaxed_threshold_matches_monte_carlo(theta, n, sens, eps):
    zeta = 0.3
    z = relaxed_threshold(theta, n, sens, eps, zeta)
    rng = np.random.default_rng(0)
    m = 400_000
    draws = rng.normal(theta * n, math.sqrt(theta * (1 - theta) * n), m) + \
        rng.laplace(0.0, sens / eps, m)
    assert abs(np.mean(draws < z) - zeta) < 4 * math.sqrt(zeta * (1 - zeta) / m)


def test_normal_laplace_cdf_limits():
    assert normal_laplace_cdf(5.0, 5.0, 2.0, 3.0) == pytest.approx(0.5)
    assert normal_laplace_cdf(1e4, 0.0, 1.0, 1.0) == pytest.approx(1.0)
    assert normal_laplace_cdf(-1e4, 0.0, 1.0, 1.0) == pytest.approx(0.0, abs=1e-12)


# --------------------------------------------------------------------- supports
def test_supports_equal_brute_force():
    rng = np.random.default_rng(3)
    rows = [rng.integers(0, 6, size=rng.integers(0, 12)).tolist() for _ in range(300)]
    db = SequenceDB.from_sequences([[str(x) for x in r] for r in rows],
                                   vocab=[str(i) for i in range(6)])
    uniq, w = _dedupe(db)
    pats = sorted({tuple(rng.integers(0, 6, size=rng.integers(1, 5)).tolist())
                   for _ in range(200)})
    got = supports(uniq, w, pats, get_backend("numpy"))
    want = [sum(brute_contains(p, r) for r in rows) for p in pats]
    assert got.tolist() == want


# --------------------------------------------------------------- privacy audit
# The mining phase (Algorithm 3, lines 11-23) with fixed public pre-mining results
# |D|~ = 3, l_max = 3, L_f = 2 over the single item "a": C_k = {a^k}, Delta_k = 1, so a
# local support gets scale 1 / eps_4 and a full support 1 / (eps_5 / 2).  d0 is empty and
# d1 holds the one sequence "a a a".  With threshold 0.3, a^k is frequent iff its noisy
# full support is >= 1 (0.3 |D|~ = 0.9), and the relaxed local threshold (-0.34) keeps
# every local support >= 0.
#
# The added sequence moves the full supports of a and a a by one (eps_5 / 2 each) and, in
# the one sample it lands in, one local support by one (eps_4).  Which sample is random and
# never released, but for discrete Laplace noise P[1 + Z >= 1] = e^(1/scale) P[Z >= 1], so
# the joint upper tail {all four supports >= 1} has likelihood ratio e^eps_4 whichever
# sample it is, times e^eps_5: exactly e^(eps_4 + eps_5), the claim.  Its d0 probability is
# only 0.0125, so 12,000 runs per side: a twin with every scale times 2/3 (loss 3.0 for the
# claimed 2.0; d0 probability 0.0048) is rejected with probability 0.9999, and one that
# counts every level on the whole database (the partition skipped: both local supports
# move, loss 2 eps_4 + eps_5 = 2.75) with probability above 0.9999.  The lower tail at
# d0's values ({a's local support <= 0 and a not frequent}: mining stops after level 1)
# loses much less; it is there for the direction d0/d1.
#
# Each run is mine() itself, on a fresh ledger (so a fresh random partition).  Per batch,
# the data steps are memoised (the samples, the shrunk samples and their exact supports:
# data, not noise), the relaxed threshold too (a function of public values), and mine()'s
# DiscreteLaplace(scale) serves values from large block draws of the real sampler at each
# scale it asks for (independent values, at exactly that scale).
PRE = PreMining(n_noisy=3, l_max=3, L_f=2)
EPS_PRUNE, EPS_SUPPORT = 0.75, 1.25
AUD_D0 = SequenceDB.from_sequences([], vocab=["a"])
AUD_D1 = SequenceDB.from_sequences([["a"] * 3], vocab=["a"])
AUDIT_TRIALS = 12_000
NOT_RELEASED = np.iinfo(np.int64).min  # a level not mined, or a pattern not frequent


class _Memo:
    """``fn`` with its results kept by ``key(*args)``."""

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
    """mine()'s DiscreteLaplace(scale).sample(...), served from block draws at that scale."""

    def __init__(self, seed, block):
        from dpgpu.privacy import NoiseKey  # noqa: PLC0415

        self._key, self._block, self._left, self._blocks = NoiseKey.from_seed(seed), block, {}, 0

    def __call__(self, scale):
        pool = self

        class Sampler:
            def sample(self, key, identities, *, tag, backend=None):
                return pool.take(scale, len(identities))

        return Sampler()

    def take(self, scale, n):
        from dpgpu.privacy import DiscreteLaplace  # noqa: PLC0415 - the real sampler

        left = self._left.get(scale, np.empty(0, dtype=np.int64))
        if left.size < n:
            self._blocks += 1
            size = max(self._block, n)
            left = np.concatenate([left, DiscreteLaplace(scale).sample(
                self._key, np.arange(size), tag=self._blocks, backend="numpy")])
        self._left[scale] = left[n:]
        return left[:n]


def _supports_of(levels):
    """Per run: a^k's noisy local support for k = 1 .. L_f, then its released support."""
    out = np.full(2 * PRE.L_f, NOT_RELEASED, dtype=np.int64)
    for lvl in levels:
        pattern = (0,) * lvl.k
        out[lvl.k - 1] = lvl.local_noisy[pattern]
        out[PRE.L_f + lvl.k - 1] = dict(lvl.frequent).get(pattern, NOT_RELEASED)
    return out


def _mine(db, ledger):
    return mine(db, ledger, PRE, threshold=0.3, eps_prune=EPS_PRUNE, eps_support=EPS_SUPPORT,
                zeta=0.3, max_candidates=100, backend=get_backend("numpy"))


def mining_runs(db, seed, trials):
    with pytest.MonkeyPatch.context() as mp:
        for name, key in [("_mining_data", lambda part, n, rows: (_content(part), n,
                                                                  rows.tobytes())),
                          ("shrink", lambda sample, cands, k, l_max: (_content(sample),
                                                                      tuple(cands), k, l_max)),
                          ("supports", lambda sample, weights, cands, backend: (
                              _content(sample), weights.tobytes(), tuple(cands))),
                          ("relaxed_threshold", lambda *args: args)]:
            mp.setattr(pfs2_module, name, _Memo(getattr(pfs2_module, name), key))
        mp.setattr(pfs2_module, "DiscreteLaplace", _NoisePool(seed, 4 * trials))
        return np.stack([_supports_of(_mine(db, PrivacyLedger(
            EPS_PRUNE + EPS_SUPPORT, max_sampling_delta=1e-6, seed=seed * trials + i)))
            for i in range(trials)])


def mining_events(out):
    local, released = out[:, :PRE.L_f], out[:, PRE.L_f:]
    return np.stack([(out >= 1).all(axis=1),
                     (local[:, 0] <= 0) & (released[:, 0] == NOT_RELEASED)], axis=1)


def mining_audit():
    return audit(mining_runs, AUD_D0, AUD_D1, mining_events,
                 epsilon=EPS_PRUNE + EPS_SUPPORT, trials=AUDIT_TRIALS, alpha=1e-4, seed=7,
                 batch=True)


@pytest.mark.slow
def test_audit_passes_the_mining_phase():
    levels = _mine(AUD_D1, PrivacyLedger(2.0, max_sampling_delta=1e-6, seed=1))
    assert levels[0].sensitivity == 1 and levels[0].relaxed_threshold < 0  # the premise
    result = mining_audit()
    assert result.passed, result.summary()
    assert result.epsilon_lower_bound > 1.3, result.summary()  # the events see the loss


@pytest.mark.slow
@pytest.mark.parametrize("twin", ["partition-skipped", "scales-two-thirds"])
def test_audit_rejects_a_broken_mining_phase(monkeypatch, twin):
    if twin == "partition-skipped":
        monkeypatch.setattr(pfs2_module, "sample_databases", lambda db, n, key: [_dedupe(db)] * n)
    else:
        scale = pfs2_module.laplace_scale
        monkeypatch.setattr(pfs2_module, "laplace_scale",
                            lambda epsilon, sensitivity=1.0, **kw: 2 / 3 * scale(epsilon, sensitivity,
                                                                                **kw))
    result = mining_audit()
    assert not result.passed, result.summary()


# --------------------------------------------------------------------- release
def toy_db(seed=0, n=3000):
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n):
        r = rng.choice(6, size=rng.integers(1, 9), p=[0.3, 0.25, 0.2, 0.1, 0.1, 0.05])
        rows.append([f"i{x}" for x in r])
    return SequenceDB.from_sequences(rows, vocab=[f"i{x}" for x in range(6)])


def test_pfs2_finds_the_frequent_sequences_and_spends_epsilon(tmp_path):
    db = toy_db()
    rel = pfs2(db, 2.0, 0.1, seed=1)
    exact, _ = frequent_subsequences(db, 300)
    found = set(rel.patterns)
    assert len(found & set(exact)) >= 0.6 * len(exact)
    assert len(found - set(exact)) <= 0.2 * len(found)
    r = rel.report
    assert r["epsilon"] <= 2.0 and r["ledger"]["spent"]["epsilon"] <= 2.0
    assert r["pre_mining"]["L_f"] == len(r["levels"]) or r["levels"][-1]["frequent"] == 0
    out = rel.save(tmp_path / "rel")
    header, *lines = (out / "frequent.tsv").read_text().splitlines()
    assert header == "pattern\tsupport" and len(lines) == len(rel.patterns)
    report = json.loads((out / "report.json").read_text())
    assert report["parameters"]["threshold"] == 0.1 and report["seeded"] is True
    assert str(len(db)) not in json.dumps(report["pre_mining"])  # |D| itself is not released


@pytest.mark.parametrize("scale, threshold", [(3.0, 2.0), (10.0, 40.0), (0.7, 3.5)])
def test_the_noise_warnings_chance_is_the_samplers_tail(scale, threshold):
    draws = DiscreteLaplace(scale).sample(NoiseKey.from_seed(11), np.arange(400_000), tag=0,
                                          backend="numpy")
    p = float(np.mean(draws >= threshold))
    chance = pfs2_module.warn_of_noise(1, scale, threshold)
    assert abs(p - chance) <= 4 * math.sqrt(chance * (1 - chance) / draws.size) + 1e-9


def test_levels_whose_supports_are_mostly_noise_are_warned_of(caplog):
    db = toy_db(0, 300)
    with caplog.at_level("WARNING", logger="dpgpu"):
        noisy = pfs2(db, 0.5, 0.1, seed=1)
    warned = {int(r.getMessage().split()[2][:-1]) for r in caplog.records
              if "largely noise" in r.getMessage()}
    levels = {lvl["k"]: lvl for lvl in noisy.report["levels"]}
    threshold = 0.1 * noisy.report["pre_mining"]["n_sequences_noisy"]
    expect = {k for k, lvl in levels.items() if lvl["support_noise_scale"] is not None
              and pfs2_module.warn_of_noise(k, lvl["support_noise_scale"], threshold)
              >= pfs2_module.NOISE_WARNING_CHANCE}
    assert warned == expect and 1 in warned
    for lvl in levels.values():
        if lvl["survivors"]:
            assert lvl["support_noise_scale"] == pytest.approx(
                lvl["survivors"] / (0.45 * 0.5 / noisy.report["pre_mining"]["L_f"]))
    caplog.clear()
    with caplog.at_level("WARNING", logger="dpgpu"):
        pfs2(toy_db(0, 20_000), 20.0, 0.1, seed=1, max_candidates=1000)
    assert not [r for r in caplog.records if "largely noise" in r.getMessage()]


def test_pfs2_is_reproducible_with_a_seed():
    db = toy_db(1, 1000)
    a, b = pfs2(db, 1.0, 0.1, seed=4), pfs2(db, 1.0, 0.1, seed=4)
    assert a.patterns == b.patterns and a.supports.tolist() == b.supports.tolist()


@pytest.mark.parametrize("kwargs", [{"epsilon": float("nan")}, {"epsilon": 0.0},
                                    {"threshold": 1.0}, {"threshold": -0.1},
                                    {"zeta": float("inf")}, {"budget_split": (1, 1, 1)}])
def test_invalid_parameters(kwargs):
    args = {"epsilon": 1.0, "threshold": 0.1, **kwargs}
    with pytest.raises(InvalidParameter):
        pfs2(toy_db(0, 10), **args)


def test_cli_pfs2_and_evaluate(tmp_path):
    data = tmp_path / "toy.txt"
    db = toy_db(2, 500)
    data.write_text("\n".join(" ".join(s) for s in db) + "\n")
    status = main(["pfs2", str(data), "--epsilon", "2", "--threshold", "0.1", "--out",
                   str(tmp_path / "rel"), "--seed", "1"])
    assert status == 0 and (tmp_path / "rel" / "frequent.tsv").exists()
    assert main(["evaluate", "--release", str(tmp_path / "rel"), "--original", str(data)]) == 0


def test_exported():
    assert dpgpu.pfs2 is pfs2


# ----------------------------------------------- parameters refused before any data is read
@pytest.fixture
def no_data_read(monkeypatch):
    """Fail any PFS2 run that reaches the data."""
    def read(*args, **kwargs):
        raise AssertionError("the data was read")
    monkeypatch.setattr(pfs2_module, "partition", read)


def test_max_candidates_below_the_vocabulary_is_refused_up_front(no_data_read):
    """Regression: level 1 ranked its candidates by the empty previous level (KeyError: ())
    after the ledger had been charged.  Level 1's candidates are the public vocabulary and
    no private rule keeps only some of them, so max_candidates must cover it."""
    db = SequenceDB.from_sequences([["a", "b"], ["b", "c"], ["a", "c"]], vocab=["a", "b", "c"])
    with pytest.raises(InvalidParameter, match=r"^max_candidates: 2 is below the vocabulary's "
                                               r"3 items"):
        pfs2(db, 1.0, 0.3, max_candidates=2)


def test_max_candidates_equal_to_the_vocabulary_runs():
    r = pfs2(toy_db(0, 500), 1.0, 0.1, max_candidates=6, seed=1)
    assert r.levels[0].candidates == 6 and not r.levels[0].capped
    assert r.report["parameters"]["max_candidates"] == 6


def test_samplers_bound_is_checked_up_front_naming_pfs2s_options(no_data_read):
    """Regression: epsilon 14 (at the then default of 10^7 candidates; 20 at 10^6) was
    refused only after pre-mining, advising to lower 'contribution, l_max, l_top' (options
    of other mechanisms)."""
    with pytest.raises(InvalidParameter, match=r"^epsilon: .*lower epsilon \(or that number, "
                                               r"set by max_candidates and l_upper\)") as info:
        pfs2(toy_db(0, 50), 20.0, 0.02)
    assert "l_top" not in str(info.value)


@pytest.mark.parametrize("max_candidates", [60, 4_000_000])
def test_an_epsilon_too_small_for_any_levels_noise_is_refused_up_front(no_data_read,
                                                                       max_candidates):
    """Regression: epsilon 1e-14 passed the up-front checks and failed at level 1's supports
    on D, after pre-mining had been charged, with a scale set by the noisy survivor count."""
    db = SequenceDB.from_sequences([[str(i)] for i in range(60)],
                                   vocab=[str(i) for i in range(60)])
    with pytest.raises(InvalidParameter, match=rf"^epsilon: too small for the .* step with "
                                               rf"max_candidates={max_candidates} and "
                                               r"l_upper=20"):
        pfs2(db, 1e-14, 0.1, max_candidates=max_candidates)


@pytest.mark.parametrize("split, step", [((1e-17, 1, 1, 1, 1), "noisy |D|"),
                                         ((1, 1, 1e-17, 1, 1), "maximal-support queries"),
                                         ((1, 1, 1, 1e-12, 1), "pruning")])
def test_a_budget_share_too_small_for_its_step_is_refused_up_front(no_data_read, split, step):
    """Each step's largest scale is public, so a budget_split that starves one step is
    refused before the steps before it are charged, naming that step."""
    db = SequenceDB.from_sequences([["a", "b"]] * 10, vocab=["a", "b"])
    with pytest.raises(InvalidParameter, match=rf"^epsilon: too small for the {re.escape(step)} "
                                               r".*share of budget_split"):
        pfs2(db, 1.0, 0.1, budget_split=split)


@pytest.mark.parametrize("epsilon, why", [
    (2000.0, r"needs sampling_delta=inf"),  # e^epsilon overflows: no finite sampling delta
    (1e300, r"needs sampling_delta=inf"),
    (5e-324, r"too small for the noisy \|D\| \(eps_1\) step .* a scale of inf"),  # shares of 0
])
def test_an_epsilon_out_of_the_samplers_range_is_refused_naming_epsilon(no_data_read, epsilon,
                                                                        why):
    """Regression: epsilon 2000 raised an OverflowError (the sampling bound summed an infinite
    delta as a Fraction), and 5e-324, whose budget shares round to 0, an InvalidParameter
    naming ``total`` (split_budget's parameter); N-gram refuses both naming epsilon."""
    with pytest.raises(InvalidParameter, match=rf"^epsilon: .*{why}"):
        pfs2(toy_db(0, 50), epsilon, 0.1)


def test_an_epsilon_whose_worst_level_noise_is_drawable_runs():
    # the worst level scale, 6 / (an l_upper-th of eps_5 = 1e-8 x its weight), is drawable
    r = pfs2(toy_db(0, 50), 1e-8, 0.1, max_candidates=6, seed=1)
    assert 0 < r.report["epsilon"] <= 1e-8 and r.report["levels"]  # it ran to a level


def test_sampling_bound_covers_every_step_of_a_run():
    """No step can be refused on what the data gives: the bound checked up front holds the
    sampling delta the run's steps charge together (here at the default budget split)."""
    from dpgpu.mechanisms.pfs2 import BUDGET_SPLIT, sampling_bound  # noqa: PLC0415
    from dpgpu.privacy.ledger import split_budget  # noqa: PLC0415

    r = pfs2(toy_db(0, 2000), 12.0, 0.05, max_candidates=100_000, seed=3)
    spent = r.report["ledger"]["spent"]["sampling_delta"]
    bound = sampling_bound(split_budget(12.0, BUDGET_SPLIT), 20, 100_000)
    assert 0 < spent <= bound <= 1e-6
    assert len(r.report["levels"]) >= 2                          # supports on D were charged


def test_cli_pfs2_max_candidates(tmp_path, capsys):
    data = tmp_path / "toy.txt"
    data.write_text("\n".join(" ".join(s) for s in toy_db(2, 300)) + "\n")
    base = ["pfs2", str(data), "--threshold", "0.1", "--seed", "1", "--quiet"]
    assert main(base + ["--epsilon", "20", "--out", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err
    assert "max_candidates" in err and len(err.strip().splitlines()) == 1
    assert main(base + ["--epsilon", "20", "--max-candidates", "1e5", "--out",
                        str(tmp_path / "b")]) == 0  # written as the README writes it
    report = json.loads((tmp_path / "b" / "report.json").read_text())
    assert report["parameters"]["max_candidates"] == 100_000
    assert main(base + ["--epsilon", "1", "--max-candidates", "2", "--out",
                        str(tmp_path / "c")]) == 2
    assert capsys.readouterr().err.startswith("dpgpu: error: max_candidates: 2 is below")
    assert main(base + ["--epsilon", "1", "--max-candidates", "1500.5", "--out",
                        str(tmp_path / "d")]) == 2
    assert "--max-candidates: expected a whole number" in capsys.readouterr().err


# ------------------------------------------------------------------ any zeta in (0, 1)
@pytest.mark.parametrize("zeta", [1e-30, 1e-300, 5e-324, 0.3, 1 - 2 ** -53])
@pytest.mark.parametrize("n", [0.5, 10, 1000, 1e5])
def test_relaxed_threshold_brackets_every_zeta(zeta, n):
    """Regression: zeta 1e-30 raised 'f(a) and f(b) must have different signs' (the bracket
    was mu +- 40 (sigma + phi) + 1, short of the Laplace tail's phi log(1 / zeta))."""
    t = relaxed_threshold(0.3, n, 5, 0.45, zeta)
    mu, sigma, phi = 0.3 * n, math.sqrt(0.21 * n), 5 / 0.45
    assert normal_laplace_cdf(t, mu, sigma, phi) == pytest.approx(zeta, rel=1e-6)


def test_pfs2_runs_at_a_tiny_zeta(tmp_path):
    data = tmp_path / "small.txt"
    data.write_text("\n".join(" ".join(s) for s in toy_db(4, 30)) + "\n")
    assert main(["pfs2", str(data), "--epsilon", "1", "--threshold", "0.3", "--zeta", "1e-30",
                 "--seed", "2", "--quiet", "--out", str(tmp_path / "o")]) == 0


def _all_then_capped(prev, budget):
    """The selection by brute force: every candidate built, the best ``budget`` kept."""
    cands = sorted(_candidates(sorted(prev)))
    if len(cands) <= budget:
        return cands, False
    best = sorted(sorted(cands), key=lambda c: -min(prev[c[:-1]], prev[c[1:]]))[:budget]
    return sorted(best), True


@pytest.mark.parametrize("seed", range(12))
def test_capped_candidates_are_the_best_of_all_without_building_all(seed):
    """The join stops early, yet keeps what building every candidate and keeping the best
    (ties in lexicographic order) keeps, capped or not; supports with many ties included."""
    rng = np.random.default_rng(seed)
    k, n_items = 2 + seed % 3, 6 + seed
    patterns = {tuple(rng.integers(0, n_items, size=k).tolist()) for _ in range(60 * k)}
    prev = {p: int(rng.integers(1, 6 if seed % 2 else 400)) for p in sorted(patterns)}
    total = len(_candidates(sorted(prev)))
    for budget in sorted({1, 2, total // 3, total - 1, total, total + 5} - {0}):
        assert capped_candidates(prev, budget) == _all_then_capped(prev, budget)
