"""The PFS^2 ablation baselines RR, SR and PL (variant=; dpgpu/mechanisms/pfs2/variants.py).

Behaviour is checked with the noise switched off (a zero sampler in place of
DiscreteLaplace, so every noisy value is the exact count), PL's privacy by a
statistical audit of its two levels together and a broken twin the same audit
rejects; RR's and SR's pruning by the level-2 audit of tests/test_pfs2_audit.py, each
with a twin it rejects.
"""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from scipy.stats import chisquare

from dpgpu import SequenceDB
from dpgpu.audit import audit
from dpgpu.backend import get_backend
from dpgpu.cli import main
from dpgpu.errors import InvalidParameter
from dpgpu.mechanisms import pfs2 as pfs2_module
from dpgpu.mechanisms.pfs2 import BUDGET_SPLIT, PreMining, mine, pfs2, sampling_bound
from dpgpu.mechanisms.pfs2.premining import tv_delta
from dpgpu.mechanisms.pfs2.shrink import is_subsequence, shrink
from dpgpu.mechanisms.pfs2.support import supports
from dpgpu.mechanisms.pfs2.variants import VARIANTS, pl_epsilons, random_deletion
from dpgpu.privacy import NoiseKey, PrivacyLedger
from dpgpu.privacy.ledger import split_budget
from dpgpu.scale.partitions import LocalPartitions
from test_pfs2_audit import (L2_ADDED, L2_D0, L2_D1, L2_PAIRS, L2_PRE, L2_VOCAB, NOT_MINED,
                             _content, _cut_key, _fixed_partition as _added_last, _l2_mine,
                             _mining_harness, _Memo, _no_shrinking, level2_audit)

ITEMS = ["a", "b", "c", "d", "e"]


def toy_db(seed=0, n=400):
    rng = np.random.default_rng(seed)
    rows = [[ITEMS[x] for x in rng.choice(5, size=rng.integers(1, 12),
                                          p=[0.35, 0.25, 0.2, 0.12, 0.08])] for _ in range(n)]
    return SequenceDB.from_sequences(rows, vocab=ITEMS)


class _ZeroNoise:
    """``DiscreteLaplace(scale)`` that draws zeros: every noisy value is exact."""

    def __init__(self, scale):
        self.scale = scale

    def sample(self, key, identities, *, tag, backend=None):
        return np.zeros(len(identities), dtype=np.int64)


PRE = PreMining(n_noisy=400, l_max=4, L_f=3)


def _mine(db, variant, seed=1, data=None, threshold=0.1):
    return mine(db, PrivacyLedger(3.0, max_sampling_delta=1e-6, seed=seed), PRE,
                threshold=threshold, eps_prune=1.0, eps_support=1.0, zeta=0.3,
                max_candidates=1000, backend=get_backend("numpy"), data=data, variant=variant)


# ------------------------------------------------------------ API, CLI, parameters
@pytest.mark.parametrize("variant", VARIANTS)
def test_each_variant_runs_through_the_api(variant):
    release = pfs2(toy_db(), 4.0, 0.1, l_upper=6, seed=3, variant=variant)
    report = release.report
    assert report["parameters"]["variant"] == variant
    assert report["epsilon"] <= 4.0 and len(release.patterns) > 0
    names = [step["name"] for step in report["ledger"]["steps"]]
    assert any("pruning" in n for n in names) == (variant != "pl")
    assert any("(PL)" in n for n in names) == (variant == "pl")
    assert release.supports.dtype == np.int64


def test_default_variant_is_pfs2():
    db = toy_db(1)
    default, explicit = pfs2(db, 2.0, 0.1, seed=4), pfs2(db, 2.0, 0.1, seed=4, variant="pfs2")
    assert default.patterns == explicit.patterns
    assert default.supports.tolist() == explicit.supports.tolist()
    assert default.report["ledger"] == explicit.report["ledger"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_each_variant_runs_through_the_cli(tmp_path, variant):
    data = tmp_path / "seqs.txt"
    data.write_text("a b c\na b\nb c a\na b c d\nc a b\na b\nb c\na c b\n" * 20)
    (tmp_path / "vocab.txt").write_text("a\nb\nc\nd\n")
    out = tmp_path / "out"
    assert main(["pfs2", str(data), "--vocab", str(tmp_path / "vocab.txt"), "--epsilon", "4",
                 "--threshold", "0.2", "--l-upper", "5", "--variant", variant, "--seed", "2",
                 "--out", str(out)]) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["parameters"]["variant"] == variant
    assert (out / "frequent.tsv").read_text().startswith("pattern\tsupport")


def test_cli_help_names_the_variants(capsys):
    assert main(["pfs2", "--help"]) == 0
    text = capsys.readouterr().out
    assert "--variant" in text and all(v in text for v in VARIANTS)


@pytest.mark.parametrize("bad", ["RR", "plain", "", None, 1, float("nan")])
def test_an_unknown_variant_is_refused(bad):
    with pytest.raises(InvalidParameter, match="variant"):
        pfs2(toy_db(), 1.0, 0.1, variant=bad)


def test_the_cli_refuses_an_unknown_variant(tmp_path, capsys):
    data = tmp_path / "seqs.txt"
    data.write_text("a b\n")
    assert main(["pfs2", str(data), "--epsilon", "1", "--threshold", "0.1", "--variant", "xx",
                 "--out", str(tmp_path / "out")]) == 2
    assert "--variant: invalid choice: 'xx'" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_pl_budget_and_public_bound():
    eps = split_budget(2.0, BUDGET_SPLIT)
    pl = pl_epsilons(eps)
    assert pl[:3] == tuple(eps[:3]) and pl[3] <= eps[3] + eps[4]
    assert pl[3] == pytest.approx(eps[3] + eps[4], rel=1e-15)
    want = (tv_delta(1, pl[0]) + tv_delta(21, pl[1]) + tv_delta(5, pl[2])
            + tv_delta(1000, pl[3]))
    assert sampling_bound(pl, 20, 1000) == pytest.approx(want, rel=1e-12)
    assert sampling_bound(pl, 20, 1000) >= want
    release = pfs2(toy_db(), 2.0, 0.1, seed=3, variant="pl")
    steps = release.report["ledger"]["steps"]
    levels = [s["epsilon"] for s in steps if "(PL)" in s["name"]]
    L_f = release.report["pre_mining"]["L_f"]
    assert len(levels) <= L_f
    assert all(e == split_budget(pl[3], [1.0] * L_f)[0] for e in levels)


# ------------------------------------------------------------------ random deletion
def test_random_deletion_keeps_a_keyed_random_subsequence():
    rng = np.random.default_rng(3)
    rows = [rng.integers(0, 5, size=n).tolist() for n in rng.integers(0, 30, size=300)]
    db = SequenceDB.from_sequences([[ITEMS[x] for x in r] for r in rows], vocab=ITEMS)
    index = np.arange(len(db), dtype=np.int64) + 1000
    level = rng.integers(1, 4, size=len(db))
    key = NoiseKey.from_seed(9)
    cut = random_deletion(db, 6, key, index, level)
    assert len(cut) == len(db)
    for i, row in enumerate(rows):
        got = cut.sequence_ids(i).tolist()
        assert len(got) == min(len(row), 6) and is_subsequence(got, row)
        if len(row) <= 6:
            assert got == row
    again = random_deletion(db, 6, NoiseKey.from_seed(9), index, level)
    assert again.items.tolist() == cut.items.tolist()
    other = random_deletion(db, 6, NoiseKey.from_seed(10), index, level)
    assert other.items.tolist() != cut.items.tolist()
    # a sequence's cut depends on its own identity only: alone, or among other sequences
    for i in (5, 17, 123):
        alone = random_deletion(db.select(np.array([i])), 6, key, index[[i]], level[[i]])
        assert alone.sequence_ids(0).tolist() == cut.sequence_ids(i).tolist()
    relevelled = level.copy()
    relevelled[0] = level[0] % 3 + 1
    moved = random_deletion(db, 6, key, index, relevelled)
    assert all(moved.sequence_ids(i).tolist() == cut.sequence_ids(i).tolist()
               for i in range(1, len(db)))


def test_random_deletion_is_uniform_over_subsets():
    n = 20_000
    db = SequenceDB.from_sequences([ITEMS] * n, vocab=ITEMS)
    cut = random_deletion(db, 2, NoiseKey.from_seed(4), np.arange(n, dtype=np.int64),
                          np.ones(n, dtype=np.int64))
    pairs = cut.items.reshape(n, 2)
    subsets = list(itertools.combinations(range(5), 2))
    codes = pairs[:, 0] * 5 + pairs[:, 1]
    observed = np.array([(codes == a * 5 + b).sum() for a, b in subsets])
    assert observed.sum() == n
    assert chisquare(observed).pvalue > 1e-4


# --------------------------------------------------------- behaviour without noise
@pytest.fixture
def no_noise(monkeypatch):
    monkeypatch.setattr(pfs2_module, "DiscreteLaplace", _ZeroNoise)


def _fixed_partition(n, n_samples, key):
    return np.arange(n, dtype=np.int64) % n_samples


@pytest.mark.parametrize("variant", ["rr", "sr"])
def test_rr_and_sr_use_the_unrelaxed_threshold(no_noise, variant):
    db = toy_db(2)
    levels = _mine(db, variant)
    relaxed = _mine(db, "pfs2")
    assert len(levels) >= 2
    for lvl in levels:
        assert lvl.relaxed_threshold == pytest.approx(0.1 * PRE.n_noisy / PRE.L_f)
        passed = sorted(c for c, v in lvl.local_noisy.items() if v >= lvl.relaxed_threshold)
        assert lvl.survivors == len(passed)
    assert all(lvl.relaxed_threshold != pytest.approx(0.1 * PRE.n_noisy / PRE.L_f)
               for lvl in relaxed)


def test_sr_counts_the_shrunk_sample(no_noise, monkeypatch):
    monkeypatch.setattr(pfs2_module, "sample_assignment", _fixed_partition)
    db = toy_db(2)
    for lvl in _mine(db, "sr"):
        sample = db.select(np.arange(len(db)) % PRE.L_f == lvl.k - 1)
        cands = sorted(lvl.local_noisy)
        shrunk = shrink(sample, cands, lvl.k, PRE.l_max)[0]
        want = supports(shrunk, np.ones(len(shrunk), dtype=np.int64), cands,
                        get_backend("numpy"))
        assert [lvl.local_noisy[c] for c in cands] == want.tolist()


def test_rr_counts_the_randomly_cut_sample(no_noise, monkeypatch):
    monkeypatch.setattr(pfs2_module, "sample_assignment", _fixed_partition)
    cuts = []

    def recorded(db, l_max, key, index, level):
        cut = random_deletion(db, l_max, key, index, level)
        cuts.append((db, cut, level))
        return cut

    monkeypatch.setattr(pfs2_module, "random_deletion", recorded)
    db = toy_db(2)
    levels = _mine(db, "rr")
    (original, cut, level), = cuts
    assert level.tolist() == (np.arange(len(db)) % PRE.L_f + 1).tolist()
    assert (cut.lengths <= PRE.l_max).all() and (db.lengths > PRE.l_max).any()
    for i in range(len(db)):
        assert is_subsequence(cut.sequence_ids(i).tolist(), original.sequence_ids(i).tolist())
    for lvl in levels:
        sample = cut.select(np.arange(len(db)) % PRE.L_f == lvl.k - 1)
        cands = sorted(lvl.local_noisy)
        want = supports(sample, np.ones(len(sample), dtype=np.int64), cands,
                        get_backend("numpy"))
        assert [lvl.local_noisy[c] for c in cands] == want.tolist()
    # keyed: the same seed cuts the same way, another seed another way
    first = cut.items.tolist()
    _mine(db, "rr")
    _mine(db, "rr", seed=2)
    assert cuts[1][1].items.tolist() == first and cuts[2][1].items.tolist() != first


def test_pl_counts_the_whole_shrunk_database(no_noise):
    db = toy_db(3)
    levels = _mine(db, "pl", threshold=0.05)
    assert len(levels) >= 2
    weights = np.ones(len(db), dtype=np.int64)
    for lvl in levels:
        cands = sorted(lvl.local_noisy)
        shrunk = shrink(db, cands, lvl.k, PRE.l_max)[0]
        want = supports(shrunk, weights, cands, get_backend("numpy")).tolist()
        assert [lvl.local_noisy[c] for c in cands] == want
        assert lvl.sensitivity == min(math.comb(PRE.l_max, lvl.k), len(cands))
        assert lvl.relaxed_threshold == 0.05 * PRE.n_noisy
        assert sorted(lvl.frequent) == sorted((c, v) for c, v in zip(cands, want)
                                              if v >= 0.05 * PRE.n_noisy)
        assert lvl.support_noise_scale == pytest.approx(
            lvl.sensitivity / split_budget(2.0, [1.0] * PRE.L_f)[0])


@pytest.mark.parametrize("variant", VARIANTS)
def test_variants_are_the_same_over_partitions(variant):
    """Two partitions of the sequences give the release of one (per-sequence randomness)."""
    db = toy_db(4)
    rows = [np.arange(0, 150, dtype=np.int64), np.arange(150, len(db), dtype=np.int64)]
    parts = LocalPartitions([db.select(r) for r in rows], rows)
    whole, split = _mine(db, variant), _mine(db, variant, data=parts)
    assert len(whole) >= 2
    assert [lvl.local_noisy for lvl in split] == [lvl.local_noisy for lvl in whole]
    assert [lvl.frequent for lvl in split] == [lvl.frequent for lvl in whole]


def test_variants_are_the_same_on_dask():
    """RR's cuts are keyed per sequence, so Dask workers cut as a local run does."""
    distributed = pytest.importorskip("dask.distributed")
    db = toy_db(5, n=600)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client:
        for variant in ("rr", "pl"):
            local = pfs2(db, 3.0, 0.1, l_upper=6, seed=5, variant=variant)
            remote = pfs2(db, 3.0, 0.1, l_upper=6, seed=5, variant=variant, engine="dask",
                          client=client)
            assert len(remote.levels) >= 2
            assert [lvl.local_noisy for lvl in remote.levels] == \
                [lvl.local_noisy for lvl in local.levels]
            assert remote.patterns == local.patterns
            assert remote.supports.tolist() == local.supports.tolist()


# ---------------------------------------------------------------- PL privacy audit
# PL's mining phase, mine(variant="pl"), with the public pre-mining results of
# tests/test_pfs2_audit.py: |D|~ = 4000, l_max = 3, L_f = 2, items a b c d; d0 holds 1000
# copies of each one-item sequence, d1 adds "a b c d" (4 items, longer than l_max).
# PL's levels share eps_4 + eps_5 = 2.0: eps_k = 1.0 each.
#
# Level 1: C_1 = {a, b, c, d}, Delta_1 = min(C(3, 1), 4) = 3, scale 3.  The supports are
# 1000 (1001) against the threshold 0.1 * 4000 = 400, so all four are released except
# with probability below e^-130, and level 2 has the 16 candidates {a, b, c, d}^2 with
# Delta_2 = min(C(3, 2), 16) = 3, scale 3.  Shrunk to l_max = 3, "a b c d" becomes "a b c"
# at both levels: it adds 1 to the supports of a, b, c (level 1) and of ab, ac, bc
# (level 2), six values at scale 3: a loss of exactly 6 / 3 = 2.0 = eps_4 + eps_5, the
# claim, on the joint upper tail {a, b, c >= 1001 and ab, ac, bc >= 1} (and the lower
# tail at d0's values for d0/d1).  Probabilities 0.039 (d1) and 0.0053 (d0); at 10,000
# runs the bound is about 1.5.  Twin: Delta_k = 1 (scale 1): loss 6.0 on the same events,
# probabilities 0.15 and 0.0004, bound about 4.5.  Data steps memoised and noise from
# _NoisePool, as in tests/test_pfs2_audit.py (and PL's whole-database data step too).
PL_EPS_PRUNE, PL_EPS_SUPPORT = 0.5, 1.5
PL_ITEMS = [(0,), (1,), (2,)]
PL_PAIRS = [(0, 1), (0, 2), (1, 2)]
PL_TRIALS = 10_000


def _pl_mine(db, ledger):
    return mine(db, ledger, L2_PRE, threshold=0.1, eps_prune=PL_EPS_PRUNE,
                eps_support=PL_EPS_SUPPORT, zeta=0.3, max_candidates=100,
                backend=get_backend("numpy"), variant="pl")


def _pl_values(levels):
    if len(levels) < 2 or levels[1].candidates != 16:
        return np.full(len(PL_ITEMS) + len(PL_PAIRS), NOT_MINED, dtype=np.int64)
    return np.array([levels[0].local_noisy[c] for c in PL_ITEMS]
                    + [levels[1].local_noisy[c] for c in PL_PAIRS], dtype=np.int64)


def pl_runs(db, seed, trials):
    with _mining_harness(seed, trials), pytest.MonkeyPatch.context() as mp:
        mp.setattr(pfs2_module, "_whole_data", _Memo(pfs2_module._whole_data,
                                                     lambda part, n: (_content(part), n)))
        return np.stack([_pl_values(_pl_mine(db, PrivacyLedger(
            PL_EPS_PRUNE + PL_EPS_SUPPORT, max_sampling_delta=1e-6, seed=seed * trials + i)))
            for i in range(trials)])


def pl_events(out):
    assert (out != NOT_MINED).all(), "a run did not mine level 2 with all 16 candidates"
    items, pairs = out[:, :len(PL_ITEMS)], out[:, len(PL_ITEMS):]
    return np.stack([(items >= 1001).all(axis=1) & (pairs >= 1).all(axis=1),
                     (items <= 1000).all(axis=1) & (pairs <= 0).all(axis=1)], axis=1)


def pl_audit():
    return audit(pl_runs, L2_D0, L2_D1, pl_events, epsilon=PL_EPS_PRUNE + PL_EPS_SUPPORT,
                 trials=PL_TRIALS, alpha=1e-4, seed=23, batch=True)


def test_pl_audit_premise():
    """Both levels shrink "a b c d" to "a b c"; Delta_k = 3, eps_k = 1.0, everything released."""
    added = SequenceDB.from_sequences([["a", "b", "c", "d"]], vocab=L2_VOCAB)
    items = [(i,) for i in range(4)]
    pairs = sorted(itertools.product(range(4), repeat=2))
    assert shrink(added, items, 1, L2_PRE.l_max)[0].sequence_ids(0).tolist() == [0, 1, 2]
    assert shrink(added, pairs, 2, L2_PRE.l_max)[0].sequence_ids(0).tolist() == [0, 1, 2]
    levels = _pl_mine(L2_D1, PrivacyLedger(2.0, max_sampling_delta=1e-6, seed=1))
    assert [lvl.candidates for lvl in levels] == [4, 16]
    assert [lvl.sensitivity for lvl in levels] == [3, 3]
    assert [lvl.support_noise_scale for lvl in levels] == [pytest.approx(3.0)] * 2


def test_pl_audit_passes():
    result = pl_audit()
    assert result.passed, result.summary()
    assert result.epsilon_lower_bound > 1.0, result.summary()  # the events see the loss


@pytest.mark.slow
def test_pl_audit_rejects_sensitivity_one(monkeypatch):
    monkeypatch.setattr(pfs2_module, "support_sensitivity", lambda l_max, k, n_candidates: 1)
    levels = _pl_mine(L2_D1, PrivacyLedger(2.0, max_sampling_delta=1e-6, seed=1))
    assert [lvl.support_noise_scale for lvl in levels] == [pytest.approx(1.0)] * 2
    result = pl_audit()
    assert not result.passed, result.summary()


# ------------------------------------------------------- RR and SR privacy audits
# The level-2 audit of tests/test_pfs2_audit.py (|D|~ = 4000, l_max = 3, L_f = 2, d1 adds
# "a b c d" to the background of one-item sequences, in sample 2), run with variant="rr"
# and "sr".  The claim is eps_4 = 2.0, the pruning step's; the runs release the noisy
# local supports of the six pairs of "a b c d" at level 2, scale Delta_2 / eps_4 = 1.5.
#
# SR shrinks as PFS^2 does ("a b c d" -> "a b c", three pairs moved) and only compares
# with another public threshold, so its local supports are PFS^2's: the audit guards that
# SR keeps shrinking.  Twin: SR without shrinking (all six pairs move: loss 2 eps_4).
#
# RR cuts "a b c d" to a uniformly random 3 of its items, which hold 3 of the 6 pairs:
# whichever cut, three local supports move by 1 at scale 1.5, so the six-pair events
# {all six >= 1} and {all six <= 0} have likelihood ratio exactly e^eps_4 (the claim),
# and the three-pair events less (a mixture over the cuts).  Twin: RR whose random
# deletion cuts nothing, so the added sequence moves all six pairs: loss 2 eps_4 = 4.0 on
# the six-pair events, as for the no-shrinking twin of PFS^2.  The cut is memoised by
# the cut of the long sequence itself (_cut_key), so each run cuts one sequence of four
# items rather than rebuilding the samples.  At 10,000 runs the bounds are about 1.46 (RR)
# and 1.81 (SR), and 2.93 for both twins (audit seed 11).


def _no_deletion(mp):
    """Twin: RR's random deletion keeps every sequence whole."""
    mp.setattr(pfs2_module, "random_deletion", lambda db, l_max, key, index, level: db)


def _added_pair_supports(variant, key=NoiseKey.from_seed(0)):
    """The exact level-2 supports of L2_PAIRS in sample 2 (the added sequence alone)."""
    assignment = _added_last(len(L2_D1), L2_PRE.L_f, None)
    if variant == "rr":
        data = pfs2_module._cut_mining_data(L2_D1, L2_PRE.L_f, L2_PRE.l_max, key, assignment,
                                            np.arange(len(L2_D1), dtype=np.int64))
        count = pfs2_module._cut_supports
    else:
        data, count = pfs2_module._mining_data(L2_D1, L2_PRE.L_f, assignment), \
            pfs2_module._sample_supports
    return count(data, 2, L2_PAIRS, L2_PRE.l_max, "numpy")


def test_rr_audit_premise(monkeypatch):
    """Level 2 has the 16 pairs at Delta_2 = 3; "a b c d" is cut to each 3-subset."""
    monkeypatch.setattr(pfs2_module, "sample_assignment", _added_last)
    for variant in ("rr", "sr"):
        levels = _l2_mine(L2_D1, PrivacyLedger(3.0, max_sampling_delta=1e-6, seed=1), variant)
        assert [lvl.candidates for lvl in levels[:2]] == [4, 16]
        assert levels[1].sensitivity == 3
        assert levels[1].relaxed_threshold == pytest.approx(0.1 * L2_PRE.n_noisy / L2_PRE.L_f)
        assert _added_pair_supports(variant).sum() == 3  # three of the six pairs are counted
    index = np.arange(len(L2_D1), dtype=np.int64)
    assignment = _added_last(len(L2_D1), L2_PRE.L_f, None)
    kept = {}
    for seed in range(40):
        key = NoiseKey.from_seed(seed)
        data = pfs2_module._cut_mining_data(L2_D1, L2_PRE.L_f, L2_PRE.l_max, key,
                                            assignment, index)
        (sample, weights) = data.samples[1]
        assert len(sample) == 1 and weights.tolist() == [1]  # the added sequence alone
        cut = sample.sequence_ids(0).tolist()
        assert len(cut) == L2_PRE.l_max and is_subsequence(cut, [0, 1, 2, 3])
        assert sum(is_subsequence(p, cut) for p in L2_PAIRS) == 3
        # the harness's memo key determines the cut data: equal keys, equal samples
        memo_key = _cut_key(L2_D1, L2_PRE.L_f, L2_PRE.l_max, key, assignment, index)
        assert kept.setdefault(memo_key, cut) == cut
    assert sorted(kept.values()) == sorted(map(list, itertools.combinations(range(4), 3)))
    assert len(L2_ADDED) > L2_PRE.l_max


@pytest.mark.parametrize("variant", ["rr", "sr"])
def test_rr_and_sr_audits_pass(variant):
    result = level2_audit(variant)
    assert result.passed, result.summary()
    assert result.epsilon_lower_bound > 1.0, result.summary()  # the events see the loss


@pytest.mark.slow
@pytest.mark.parametrize("variant, twin", [("rr", _no_deletion), ("sr", _no_shrinking)],
                         ids=["rr-no-deletion", "sr-no-shrinking"])
def test_rr_and_sr_audits_reject_a_broken_twin(monkeypatch, variant, twin):
    twin(monkeypatch)
    assert _added_pair_supports(variant).tolist() == [1] * len(L2_PAIRS)  # the twin took effect
    result = level2_audit(variant)
    assert not result.passed, result.summary()
