"""PFS^2 pre-mining: the per-length maximal supports and ``L_f`` against a brute-force oracle.

The oracle is the computation pre-mining used before the branch and bound:
mine every subsequence of support at least the floor (``frequent_subsequences``)
and keep the largest support of each length.
"""

from __future__ import annotations

import math
from itertools import product

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpgpu import InvalidParameter, SequenceDB
from dpgpu.eval.truth import frequent_subsequences
from dpgpu.mechanisms.pfs2 import premining
from dpgpu.mechanisms.lengths import length_counts
from dpgpu.mechanisms.pfs2.premining import (BETA_FLOOR, TAG_BETA, MaximalSupports,
                                             length_constraint, max_frequent_length,
                                             maximal_support, noisy_size, tv_delta)
from dpgpu.mechanisms.pfs2.shrink import is_subsequence
from dpgpu.privacy import DiscreteLaplace, PrivacyLedger
from dpgpu.scale.partitions import LocalPartitions


# ---------------------------------------------------------------- the oracle
def oracle(db, floor, l_max):
    """``max(beta_y, floor)`` for ``y = 1 .. l_max`` from all patterns of support >= floor."""
    pats, sups = frequent_subsequences(db, max(1, floor), max_length=l_max)
    best = [floor] * l_max
    for p, s in zip(pats, sups.tolist()):
        best[len(p) - 1] = max(best[len(p) - 1], s)
    return best


def old_max_frequent_length(db, ledger, epsilon, l_max, threshold):
    """``max_frequent_length`` as it was: every ``beta_y`` first, then the binary search."""
    queries = max(1, math.ceil(math.log2(l_max))) if l_max > 1 else 1
    step = ledger.charge(f"pfs2: noisy maximal supports (binary search, {queries} queries)",
                         epsilon, sampling_delta=tv_delta(queries, epsilon))
    if l_max == 1:
        return 1
    floor = max(1, int(BETA_FLOOR * threshold))
    beta = oracle(db, floor, l_max)
    sampler = DiscreteLaplace(queries / epsilon)
    lo, hi = 1, l_max
    while lo < hi:
        mid = (lo + hi + 1) // 2
        noise = int(sampler.sample(step.key, np.array([mid]), tag=TAG_BETA, backend="numpy")[0])
        if max(beta[mid - 1], floor) + noise >= threshold:
            lo = mid
        else:
            hi = mid - 1
    return lo


def random_db(rng, n_items, n_seq, lo, hi, duplicates=False):
    """Skewed item frequencies (some patterns much more frequent than others)."""
    p = rng.dirichlet(np.full(n_items, 0.7))
    rows = [rng.choice(n_items, size=int(rng.integers(lo, hi + 1)), p=p).tolist()
            for _ in range(n_seq)]
    if duplicates:
        rows += rows[: n_seq // 2]
    return SequenceDB.from_sequences(rows, vocab=[str(x) for x in range(n_items)])


def uniform_db(rng, n_items, n_seq, lo, hi):
    """Uniform random sequences: every pattern of a length has about the same support."""
    rows = [rng.integers(0, n_items, int(rng.integers(lo, hi + 1))).tolist()
            for _ in range(n_seq)]
    return SequenceDB.from_sequences(rows, vocab=[str(x) for x in range(n_items)])


# Search paths: default; no tail table; no next-occurrence table, tiny chunks; long tails; no
# universal rests; children counted from the windows after the matches (a child's next
# occurrence found by reading its window, or after one position by a binary search; the
# windows read in parallel however few), or by binary searches (no tables at all).
PATHS = {
    "default": {},
    "no-tail": {"TAIL_PATTERNS": 1},
    "no-next-table": {"NEXT_CELLS": 0, "_CHUNK_CELLS": 5},
    "long-tail": {"TAIL_PATTERNS": 10 ** 6, "TAIL_CELLS": 10 ** 8},
    "no-universal": {"UNIVERSAL_ITEMS": 0},
    "windows": {"TAIL_PATTERNS": 1, "NEXT_CELLS": 0, "UNIVERSAL_ITEMS": 0,
                "_WINDOW_RATIO": 10.0 ** 9},
    "windows-short-scan": {"TAIL_PATTERNS": 1, "NEXT_CELLS": 0, "_WINDOW_RATIO": 10.0 ** 9,
                           "_SCAN": 1},
    "binary-searches": {"TAIL_PATTERNS": 1, "NEXT_CELLS": 0, "_WINDOW_RATIO": 0.0, "_SCAN": 0},
    "windows-parallel": {"TAIL_PATTERNS": 1, "NEXT_CELLS": 0, "_WINDOW_RATIO": 10.0 ** 9,
                         "_PARALLEL_ROWS": 0},
}


@pytest.fixture(params=list(PATHS))
def path(request, monkeypatch):
    for name, value in PATHS[request.param].items():
        monkeypatch.setattr(premining, name, value)
    return request.param


# ------------------------------------------------------- per-length supports
@pytest.mark.parametrize("seed", range(4))
def test_maximal_support_equals_all_patterns(seed, path):
    rng = np.random.default_rng(seed)
    for trial in range(20):
        n_items = int(rng.integers(1, 7))
        lo = int(rng.integers(0, 4))
        make = uniform_db if trial % 4 == 3 else random_db
        args = (rng, n_items, int(rng.integers(1, 50)), lo, lo + int(rng.integers(0, 10)))
        db = make(*args) if make is uniform_db else make(*args, duplicates=trial % 3 == 0)
        floor = int(rng.integers(0, max(1, len(db) // 3)))
        l_max = int(min(8, db.max_length + 1))
        want = oracle(db, floor, l_max)
        assert [maximal_support(db, y, floor) for y in range(1, l_max + 1)] == want, (trial, path)
        # one object, lengths in random order: the bounds carried between lengths stay exact
        beta = MaximalSupports(db, floor)
        order = rng.permutation(l_max) + 1
        assert {int(y): beta.exact(int(y)) for y in order} == dict(enumerate(want, 1))


@pytest.mark.parametrize("seed", range(3))
def test_at_least_answers_every_threshold(seed, path):
    rng = np.random.default_rng(100 + seed)
    for trial in range(15):
        db = random_db(rng, int(rng.integers(1, 6)), int(rng.integers(5, 40)), 1, 10)
        floor = int(rng.integers(1, 6))
        l_max = min(7, db.max_length)
        want = oracle(db, floor, l_max)
        beta = MaximalSupports(db, floor)  # shared: answers may come from earlier searches
        for y in rng.permutation(l_max) + 1:
            v = want[y - 1]
            for target in (v - 1, v, v + 1, floor, int(rng.integers(0, len(db) + 2))):
                assert beta.at_least(int(y), target) == (v >= target), (trial, y, target)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.integers(0, 3), max_size=12), min_size=1, max_size=25),
       st.integers(0, 6), st.integers(1, 7))
def test_maximal_support_property(rows, floor, y):
    db = SequenceDB.from_sequences(rows, vocab=["0", "1", "2", "3"])
    assert maximal_support(db, y, floor) == oracle(db, floor, y)[y - 1]


def test_long_uniform_sequences(path):
    """Long sequences over few items (the case that made mining every pattern explode)."""
    rng = np.random.default_rng(7)
    db = uniform_db(rng, 3, 40, 8, 25)
    want = oracle(db, 1, 6)
    beta = MaximalSupports(db, 1)
    assert [beta.exact(y) for y in (6, 5, 4, 3, 2, 1)] == want[::-1]


def test_brute_force_on_every_pattern():
    """The oracle itself, checked on a tiny case against all |I|^y patterns."""
    rng = np.random.default_rng(3)
    db = random_db(rng, 3, 12, 0, 7)
    rows = [list(db.sequence_ids(i)) for i in range(len(db))]
    for y in range(1, 5):
        best = max(sum(is_subsequence(p, r) for r in rows) for p in product(range(3), repeat=y))
        assert maximal_support(db, y) == best


def test_no_pattern_of_that_length():
    db = SequenceDB.from_sequences([["a", "b"], ["b"], []], vocab=["a", "b", "c"])
    assert maximal_support(db, 3) == 0 and maximal_support(db, 3, 2) == 2
    assert maximal_support(db, 2) == 1 and maximal_support(db, 1) == 2
    empty = SequenceDB.from_sequences([], vocab=["a"])
    assert maximal_support(empty, 1, 4) == 4
    beta = MaximalSupports(db, 0)
    assert not beta.at_least(3, 1) and beta.at_least(3, 0) and beta.bounds(3) == (0, 0)


def test_universal_rests_hold_every_pattern():
    """``u[p]`` blocks: the rest from ``p`` holds every pattern of ``u[p]`` items, not more."""
    rng = np.random.default_rng(11)
    db = random_db(rng, 3, 30, 0, 14)
    beta = MaximalSupports(db, 0)
    beta.exact(4)
    index = beta._index
    u = index.universal(6)
    alphabet = sorted(set(beta._src.items.tolist()))  # X: the items that occur (floor 0)
    assert len(alphabet) == index.n_items
    for s in range(len(beta._src)):
        a, b = int(index.start[s]), int(index.end[s])
        seq = beta._src.items[a:b].tolist()
        for p in range(a, b):
            rest = seq[p - a:]
            holds = [all(is_subsequence(q, rest) for q in product(alphabet, repeat=r))
                     for r in range(1, 7)]
            assert u[p] == sum(holds) and holds == sorted(holds, reverse=True)
    assert u[index.m - 1] == 0


def test_greedy_descent_answers_easy_queries():
    """A target below the greedy path's support is met after one descent.

    One descent assesses at most ``|X|`` children per level (``1 + 6 * 9`` nodes here).
    """
    rng = np.random.default_rng(5)
    db = uniform_db(rng, 6, 300, 40, 80)
    beta = MaximalSupports(db, 1)
    assert beta.at_least(9, 100)
    assert beta.nodes <= 1 + 6 * 9
    nodes = beta.nodes
    assert not beta.at_least(9, len(db) + 1) and beta.nodes == nodes  # above the trivial bound


def test_invalid_arguments():
    db = SequenceDB.from_sequences([["a"]], vocab=["a"])
    with pytest.raises(InvalidParameter):
        MaximalSupports(db, -1)
    with pytest.raises(InvalidParameter):
        MaximalSupports(db, 1.5)
    with pytest.raises(InvalidParameter):
        maximal_support(db, 0)


# ------------------------------------------------------------------- L_f
def test_max_frequent_length_is_unchanged():
    rng = np.random.default_rng(21)
    dbs = [random_db(rng, 5, 400, 1, 12), random_db(rng, 3, 200, 2, 20, duplicates=True),
           uniform_db(rng, 4, 150, 3, 16)]
    cases = 0
    for db, seed, (theta, epsilon), l_max in product(dbs, range(4), [(0.05, 2.0), (0.2, 8.0),
                                                                    (0.5, 20.0)], (1, 2, 7, 12)):
        a = PrivacyLedger(10.0 * epsilon, max_sampling_delta=1e-6, seed=seed)
        b = PrivacyLedger(10.0 * epsilon, max_sampling_delta=1e-6, seed=seed)
        threshold = theta * len(db)
        new = max_frequent_length(db, a, epsilon, l_max, threshold)
        old = old_max_frequent_length(db, b, epsilon, l_max, threshold)
        assert new == old, (seed, theta, l_max)
        assert a.to_dict() == b.to_dict()  # the same charge
        cases += 1 < new < l_max
    assert cases >= 10  # the comparisons were not all trivial


# ----------------------------------------------------------- over partitions
def split_parts(db, rng, n_parts):
    """``db`` as ``n_parts`` random, disjoint local partitions (as Dask workers hold them)."""
    owner = rng.integers(0, n_parts, len(db))
    rows = [np.flatnonzero(owner == j) for j in range(n_parts)]
    return LocalPartitions([db.select(r) for r in rows], rows)


@pytest.mark.parametrize("seed", range(3))
def test_maximal_supports_from_partitions_equal_the_whole(seed):
    """Item-restricted, deduplicated parts merged on the client give the same answers."""
    rng = np.random.default_rng(300 + seed)
    for trial in range(12):
        db = random_db(rng, int(rng.integers(2, 8)), int(rng.integers(5, 80)), 0, 12,
                       duplicates=trial % 2 == 0)
        floor = int(rng.integers(0, max(1, len(db) // 4)))
        l_max = int(min(7, db.max_length + 1))
        want = oracle(db, floor, l_max)
        beta = MaximalSupports.of(db, floor, split_parts(db, rng, int(rng.integers(1, 5))))
        assert [beta.exact(y) for y in range(1, l_max + 1)] == want, (trial, floor)
        beta = MaximalSupports.of(db, floor)  # default: db itself, one partition
        for y in range(1, l_max + 1):
            assert beta.at_least(y, want[y - 1]) and not beta.at_least(y, want[y - 1] + 1)


def test_items_at_or_below_the_floor_are_not_sent():
    db = SequenceDB.from_sequences([["a", "b", "c"], ["a", "c"], ["a", "b"], ["b"]],
                                   vocab=["a", "b", "c"])
    distinct = premining._distinct(db)
    items, offsets, weights = premining._kept_distinct(distinct,
                                                       premining._item_supports(distinct) > 2)
    # supports a 3, b 3, c 2: c is dropped, then "a b" occurs twice
    assert db.vocab.size == 3 and premining._item_supports(distinct).tolist() == [3, 3, 2]
    got = sorted((tuple(items[lo:hi].tolist()), int(w))
                 for lo, hi, w in zip(offsets[:-1], offsets[1:], weights))
    assert got == [((0,), 1), ((0, 1), 2), ((1,), 1)]


def test_pre_mining_counts_over_partitions_equal_the_whole():
    rng = np.random.default_rng(8)
    db = random_db(rng, 5, 300, 0, 15, duplicates=True)
    parts = split_parts(db, rng, 3)
    results = []
    for data in (None, parts):
        ledger = PrivacyLedger(3.0, max_sampling_delta=1e-6, seed=4)
        n_noisy = noisy_size(db, ledger, 0.5, data)
        l_max = length_constraint(db, ledger, 0.5, n_noisy, 20, 0.85, data)
        L_f = max_frequent_length(db, ledger, 2.0, l_max, 0.1 * n_noisy, data)
        results.append((n_noisy, l_max, L_f, ledger.to_dict()))
    assert results[0] == results[1]
    assert abs(results[0][0] - len(db)) < 40 and results[0][2] > 1


def test_length_counts_against_brute_force():
    lengths = np.array([0, 1, 1, 3, 7, 2, 9, 3])
    assert length_counts(lengths, 4).tolist() == [sum(int(v) == k for v in lengths)
                                                  for k in range(0, 5)]


def test_weights_are_validated():
    db = SequenceDB.from_sequences([["a"], ["a", "b"]], vocab=["a", "b"])
    with pytest.raises(InvalidParameter, match="weights"):
        MaximalSupports(db, 0, np.array([1]))
    with pytest.raises(InvalidParameter, match="weights"):
        MaximalSupports(db, 0, np.array([1, -1]))
    assert MaximalSupports(db, 0, np.array([3, 2])).exact(1) == 5


def test_empty_sequences_count_as_covered_by_the_length_constraint():
    """Regression: the length histogram had no bin for empty sequences while |D|~ counted
    them, so with 60 % empty sequences no length reached 85 % and l_max came out l_1."""
    seqs = [[]] * 150 + [["a"]] * 50 + [["a", "b"]] * 30 + [["a"] * 5] * 15 + [["b"] * 9] * 5
    db = SequenceDB.from_sequences(seqs, vocab=["a", "b"])
    ledger = PrivacyLedger(16.0, max_sampling_delta=1e-6, seed=4)
    n_noisy = noisy_size(db, ledger, 8.0)  # noise of scale 1/8: nonzero with p < 1e-3
    assert n_noisy == 250
    # cumulative share: length 0: 60 %, 1: 80 %, 2: 92 %, 5: 98 %, 9: 100 %
    assert length_constraint(db, ledger, 8.0, n_noisy, 20, 0.85) == 2
