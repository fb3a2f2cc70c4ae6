"""PrivTree's EM baseline (Section 6.2): greedy selection, privacy audit, validation, ledger.

Also the non-private Truncate baseline (exact top-k of the cut data) against brute force.
"""

from __future__ import annotations

import importlib
import json
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpgpu
from dpgpu import InputError, InvalidParameter, SequenceDB
from dpgpu.audit import audit
from dpgpu.eval.truth import top_k_strings
from dpgpu.ops.grams import GramEngine
from dpgpu.privacy import DiscreteLaplace, NoiseKey, PrivacyLedger

em_module = importlib.import_module("dpgpu.mechanisms.privtree.em")

ITEMS = list("abcd")
SEQS = st.lists(st.lists(st.sampled_from(ITEMS), min_size=0, max_size=8), min_size=1,
                max_size=20)


# ------------------------------------------------------------------ plain-Python reference
def occurrences(seqs, l_top, string):
    """Contiguous occurrences of ``string`` (labels) in the sequences cut to ``l_top`` items."""
    n = len(string)
    total = 0
    for s in seqs:
        cut = list(s)[:l_top]
        total += sum(tuple(cut[j:j + n]) == string for j in range(len(cut) - n + 1))
    return total


def argmax_set(seqs, l_top, candidates):
    """The candidates of largest count."""
    counts = {c: occurrences(seqs, l_top, c) for c in candidates}
    best = max(counts.values())
    return {c for c, v in counts.items() if v == best}


def expand(candidates, string, items):
    """R with ``string`` replaced by its one-item extensions."""
    return [c for c in candidates if c != string] + [string + (x,) for x in items]


def greedy(seqs, items, k, l_top):
    """The paper's R-expansion rule without noise; ties to the smallest id string."""
    rank = {x: i for i, x in enumerate(items)}
    candidates = [(x,) for x in items]
    out = []
    for _ in range(k):
        best = min(argmax_set(seqs, l_top, candidates), key=lambda c: [rank[x] for x in c])
        out.append(best)
        candidates = expand(candidates, best, items)
    return out


class ZeroNoise:
    """The epsilon -> infinity limit of the discrete Laplace sampler: always 0."""

    tv_per_draw = 0.0

    def __init__(self, scale):
        self.scale = scale

    def sample(self, key, identities, *, tag, backend=None):
        return np.zeros(len(identities), dtype=np.int64)


# ------------------------------------------------------------------ (a) greedy selection
@given(SEQS, st.integers(1, 12), st.integers(1, 6))
@settings(max_examples=60, deadline=None)
def test_without_noise_em_is_the_greedy_top_k(seqs, k, l_top):
    db = SequenceDB.from_sequences(seqs, vocab=ITEMS)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(em_module, "DiscreteLaplace", ZeroNoise)
        release = dpgpu.em_top_k(db, 1e6, k, l_top=l_top, seed=1)
    assert release.strings() == greedy(seqs, ITEMS, k, l_top)
    assert release.report["epsilon"] == 1e6


def test_a_huge_epsilon_is_refused_for_the_samplers_not_run():
    # epsilon / k = 1e6: the samplers' accounted delta (1 + e^eps) x draws x tv is infinite
    db = SequenceDB.from_sequences([list("ab")], vocab=ITEMS)
    with pytest.raises(InvalidParameter, match="epsilon"):
        dpgpu.em_top_k(db, 1e6, 1)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_with_little_noise_every_selection_is_a_largest_count(seed):
    """The real sampler at a large epsilon (scale 8 / 15) on counts at least 60 apart: each
    round must pick one of the largest counts of R (any one of tied ones)."""
    rng = np.random.default_rng(seed)
    base = [list(rng.choice(ITEMS, size=rng.integers(1, 7))) for _ in range(12)]
    seqs = base * 60
    db = SequenceDB.from_sequences(seqs, vocab=ITEMS)
    k, l_top = 8, 4
    release = dpgpu.em_top_k(db, 15.0 * k, k, l_top=l_top, seed=seed)
    assert release.report["selection"]["noise_scale"] < 0.6
    candidates = [(x,) for x in ITEMS]
    for chosen in release.strings():
        assert chosen in argmax_set(seqs, l_top, candidates)
        candidates = expand(candidates, chosen, ITEMS)


def test_strings_are_distinct_and_longer_than_l_top_count_zero():
    # one item: R is always the one string a^t; EM must walk a, aa, aaa, ... past l_top
    db = SequenceDB.from_sequences([list("aaa")] * 5, vocab=["a"])
    release = dpgpu.em_top_k(db, 5.0, 6, l_top=2, seed=3)
    assert release.strings() == [("a",) * n for n in range(1, 7)]


# ------------------------------------------------------------------ (b) privacy audit
# Each trial is one run of the mechanism's own selection loop (em_module.select, a forest of
# independent trials, as the release runs one) with the release's own calibration
# (em_module.calibrate, looked up when the audit runs, so a test can swap in a broken twin).
#
# Neighbours: items a, b; l_top = 6; d0 holds "b b b b b b", d1 adds "a a a a a a" (a full
# l_top-item sequence: the count of a moves by Delta = 6, aa by 5).  k = 2 rounds at
# epsilon / 2 = 1 each.  Adding a sequence moves every count up, so with the scale
# 2 Delta / eps_round a round can lose only about eps_round / 2 here (the proof's 2 Delta
# covers counts moving both ways); the broken twin calibrated for Delta = 1 instead of
# l_top = 6 has a sixth of the scale and can lose up to 3 per round, above the claim of 2.
AUD_ITEMS = list("ab")
AUD_D0 = SequenceDB.from_sequences([["b"] * 6], vocab=AUD_ITEMS)
AUD_D1 = SequenceDB.from_sequences([["b"] * 6, ["a"] * 6], vocab=AUD_ITEMS)
AUD_EPS, AUD_K, AUD_LTOP, AUD_TRIALS = 2.0, 2, 6, 20_000
A, B = 0, 1
OUTCOMES = [((A,), (A, A)), ((A,), (A, B)), ((A,), (B,)),
            ((B,), (A,)), ((B,), (B, A)), ((B,), (B, B))]


def em_forest(db, seed, trials):
    """Per trial: the index in OUTCOMES of its two selections."""
    _, scale = em_module.calibrate(AUD_EPS, AUD_K, AUD_LTOP)
    runs = em_module.select(GramEngine(db, AUD_LTOP, backend="numpy"), db.vocab.size, AUD_K,
                            DiscreteLaplace(scale), NoiseKey.from_seed(seed), n_trials=trials)
    return np.array([OUTCOMES.index(tuple(run)) for run in runs])


def em_events(out):
    """Every outcome, and the first round's two."""
    each = out[:, None] == np.arange(len(OUTCOMES))[None, :]
    return np.concatenate([each, (out < 3)[:, None], (out >= 3)[:, None]], axis=1)


def em_audit():
    return audit(em_forest, AUD_D0, AUD_D1, em_events, epsilon=AUD_EPS, trials=AUD_TRIALS,
                 alpha=1e-4, seed=13, batch=True)


def test_the_audit_pair_premise():
    for db, a in ((AUD_D0, 0), (AUD_D1, 6)):
        engine = GramEngine(db, AUD_LTOP, backend="numpy")
        grams, counts = engine.count(1)
        assert dict(zip(grams[:, 0].tolist(), counts.tolist())) == ({B: 6} if a == 0
                                                                    else {A: 6, B: 6})
    assert AUD_D1.lengths.max() == AUD_LTOP


def test_audit_passes_em():
    result = em_audit()
    assert result.passed, result.summary()
    assert result.epsilon_lower_bound > 0.3, result.summary()  # the events see the loss


def test_audit_rejects_em_calibrated_for_sensitivity_1(monkeypatch):
    monkeypatch.setattr(em_module, "_sensitivity", lambda l_top: 1)
    result = em_audit()
    assert not result.passed, result.summary()


# ------------------------------------------------------------------ (c) validation
@pytest.mark.parametrize("kwargs", [
    {"epsilon": float("nan")}, {"epsilon": float("inf")}, {"epsilon": 0}, {"epsilon": -1.0},
    {"epsilon": "1"}, {"k": 0}, {"k": -2}, {"k": 2.5}, {"k": 3.0}, {"k": True}, {"k": "3"},
    {"k": float("nan")}, {"l_top": 0}, {"l_top": 2.5}, {"l_top": float("inf")},
    {"k": 10**7},                           # too many noisy values: names k
    {"epsilon": 1e6},                       # the samplers' delta: names epsilon
])
def test_invalid_parameters_are_refused_before_the_ledger_is_charged(monkeypatch, kwargs):
    charged = []

    class SpyLedger(PrivacyLedger):
        def charge(self, *args, **kw):
            step = super().charge(*args, **kw)
            charged.append(step)
            return step

    def no_counting(*args, **kw):
        raise AssertionError("the data was counted")

    monkeypatch.setattr(em_module, "PrivacyLedger", SpyLedger)
    monkeypatch.setattr(em_module, "GramEngine", no_counting)
    args = {"epsilon": 1.0, "k": 3, **kwargs}
    db = SequenceDB.from_sequences([list("abc")] * 3, vocab=ITEMS)
    with pytest.raises(InvalidParameter, match=next(iter(kwargs))):
        dpgpu.em_top_k(db, args.pop("epsilon"), args.pop("k"), **args)
    assert charged == []


def test_data_must_be_a_sequence_database():
    with pytest.raises(InvalidParameter, match="db"):
        dpgpu.em_top_k([["a", "b"]], 1.0, 2)


# ------------------------------------------------------------------ (d) ledger and release
@pytest.mark.parametrize("epsilon", [1.0, 0.1, 0.3, 2.0, 7.7, 1e-5])
@pytest.mark.parametrize("k", [1, 3, 7, 20])
def test_the_ledger_spends_exactly_epsilon(epsilon, k):
    db = SequenceDB.from_sequences([list("abcab"), list("dcba")] * 4, vocab=ITEMS)
    report = dpgpu.em_top_k(db, epsilon, k, l_top=4, seed=1).report
    assert report["epsilon"] == epsilon
    assert report["ledger"]["spent"]["epsilon"] == epsilon
    assert Fraction(sum(Fraction(s["epsilon"]) for s in report["ledger"]["steps"])) == \
        Fraction(epsilon)
    rounds = report["selection"]
    assert Fraction(rounds["epsilon_per_round"]) * k <= Fraction(epsilon)
    assert rounds["noise_scale"] >= 2 * 4 / rounds["epsilon_per_round"]
    assert 0 < report["delta"] <= 1e-6 and report["private"] is True


def test_release_report_file_and_reproducibility(tmp_path):
    db = SequenceDB.from_sequences([list("abcab"), list("bca"), list("cab")] * 30, vocab=ITEMS)
    a = dpgpu.em_top_k(db, 2.0, 5, l_top=4, seed=9)
    b = dpgpu.em_top_k(db, 2.0, 5, l_top=4, seed=9)
    assert a.strings() == b.strings() and len(set(a.strings())) == 5
    assert repr(a).startswith("EMRelease(em-top-k, epsilon=2.0")
    out = a.save(tmp_path / "rel")
    report = json.loads((out / "report.json").read_text())
    assert report["mechanism"] == "em-top-k" and report["seeded"] is True
    assert report["parameters"] == {"epsilon": 2.0, "k": 5, "l_top": 4}
    assert report["files"] == ["topk.tsv"] and "timings" not in report
    lines = (out / "topk.tsv").read_text().splitlines()
    assert lines[0] == "rank\tstring"
    assert lines[1:] == [f"{i}\t{' '.join(s)}" for i, s in enumerate(a.strings(), 1)]
    with pytest.raises(InputError):
        a.save(tmp_path / "rel")
    a.save(tmp_path / "rel", force=True)
    fresh = dpgpu.em_top_k(db, 2.0, 5, l_top=4)
    assert fresh.report["seeded"] is False


# ------------------------------------------------------------------ Truncate
@given(SEQS, st.integers(1, 6))
@settings(max_examples=40, deadline=None)
def test_truncate_is_the_exact_top_k_of_the_cut_data(seqs, l_top):
    db = SequenceDB.from_sequences(seqs, vocab=ITEMS)
    patterns, counts = top_k_strings(db, 10, l_max=l_top, backend="numpy")
    every = Counter()
    for s in seqs:
        cut = tuple(s[:l_top])
        for n in range(1, len(cut) + 1):
            for j in range(len(cut) - n + 1):
                every[cut[j:j + n]] += 1
    got = [tuple(db.vocab.decode(p)) for p in patterns]
    assert [every[g] for g in got] == counts.tolist()
    kth = sorted(every.values(), reverse=True)[:10]
    assert counts.tolist() == kth
