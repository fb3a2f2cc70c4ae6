"""PFS² capped candidate generation (:mod:`dpgpu.mechanisms.pfs2.candidates`) against the
definition, built by brute force."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dpgpu.mechanisms.pfs2 import candidates as candidates_module
from dpgpu.mechanisms.pfs2 import capped_candidates


def every_candidate(prev):
    """Every candidate: every pair of patterns joined, then pruned."""
    have = set(prev)
    cands = []
    for p in prev:
        for q in prev:
            if p[1:] == q[:-1]:
                c = p + (q[-1],)
                if all(c[:i] + c[i + 1:] in have for i in range(1, len(c) - 1)):
                    cands.append(c)
    assert len(cands) == len(set(cands))
    return cands


def reference(prev, budget, cands=None):
    """The candidates scored, sorted by ``(-score, candidate)``, cut at ``budget`` and listed
    in lexicographic order; whether some were cut."""
    cands = every_candidate(prev) if cands is None else cands
    if len(cands) <= budget:
        return sorted(cands), False
    best = sorted(cands, key=lambda c: (-min(prev[c[:-1]], prev[c[1:]]), c))[:max(budget, 0)]
    return sorted(best), True


def random_level(rng, k, n_items, density, high):
    """A random level: a fraction of all ``k``-patterns over ``n_items``, in random order,
    with supports in ``1 .. high - 1`` (many ties when ``high`` is small)."""
    every = list(itertools.product(range(n_items), repeat=k))
    chosen = [every[i] for i in rng.permutation(len(every))[:max(1, int(density * len(every)))]]
    return {p: int(rng.integers(1, high)) for p in chosen}


def budgets(total):
    return sorted({-1, 0, 1, 2, 3, total // 3, total // 2, total - 1, total, total + 1,
                   2 * total + 7})


CASES = [(k, n_items, density, high)
         for k, n_items in [(1, 1), (1, 2), (1, 7), (1, 40), (2, 2), (2, 5), (2, 12),
                            (3, 2), (3, 4), (3, 7)]
         for density in (0.3, 0.7, 1.0)
         for high in (2, 4, 1000)]


@pytest.mark.parametrize("min_chunk", [None, 1, 3])
@pytest.mark.parametrize("seed", range(4))
def test_capped_candidates_are_the_definition(monkeypatch, seed, min_chunk):
    """Levels 1 to 3, several vocabularies and densities, supports with many ties or few,
    every kind of budget; ``min_chunk`` small makes the best be selected many times (the
    early stop and the written-only-if-it-can-enter filter at work)."""
    if min_chunk is not None:
        monkeypatch.setattr(candidates_module, "MIN_CHUNK", min_chunk)
    rng = np.random.default_rng(seed)
    for k, n_items, density, high in CASES:
        prev = random_level(rng, k, n_items, density, high)
        cands = every_candidate(prev)
        for budget in budgets(len(cands)):
            got = capped_candidates(prev, budget)
            assert got == reference(prev, budget, cands), (k, n_items, density, high, budget)
            assert all(type(c) is tuple and all(type(x) is int for x in c) for c in got[0])


@pytest.mark.parametrize("min_chunk", [None, 2])
def test_sparse_items_and_a_downward_closed_level(monkeypatch, min_chunk):
    """Large, scattered item ids, and a level whose candidates mostly survive the prune."""
    if min_chunk is not None:
        monkeypatch.setattr(candidates_module, "MIN_CHUNK", min_chunk)
    rng = np.random.default_rng(7)
    ids = [0, 3, 10 ** 5, 10 ** 9, 2 ** 40]
    for k in (1, 2, 3):
        prev = {p: int(rng.integers(1, 5)) for p in itertools.product(ids, repeat=k)
                if rng.random() < 0.9}
        cands = every_candidate(prev)
        for budget in budgets(len(cands)):
            assert capped_candidates(prev, budget) == reference(prev, budget, cands)


def test_empty_and_malformed_levels():
    assert capped_candidates({}, 5) == ([], False)
    assert capped_candidates({}, 0) == ([], False)
    assert capped_candidates({}, -1) == ([], True)
    assert capped_candidates({(4, 2): 3}, 5) == ([], False)
    assert capped_candidates({(4, 4): 3}, 5) == ([(4, 4, 4)], False)
    assert capped_candidates({(4, 4): 3}, 0) == ([], True)
    with pytest.raises(ValueError, match="one length"):
        capped_candidates({(1,): 3, (1, 2): 3}, 5)
    with pytest.raises(ValueError, match="one length"):
        capped_candidates({(): 3}, 5)


def expected_pairs(s, budget):
    """The best ``budget`` candidates of a level of single items with supports ``s``,
    computed from the rule directly: every pair ``(a, b)`` is a candidate, of score
    ``min(s[a], s[b])``; a score reaches ``t`` exactly when both items do."""
    values = np.unique(s)[::-1]
    n_ge = np.array([(s >= v).sum() for v in values])
    at = int(np.flatnonzero(n_ge ** 2 >= budget)[0])
    cut = values[at]
    n_gt = int(n_ge[at - 1]) if at else 0
    big = np.flatnonzero(s > cut)
    hi = np.stack([np.repeat(big, big.size), np.tile(big, big.size)], axis=1)
    ge = np.flatnonzero(s >= cut)
    a, b = np.meshgrid(ge, ge, indexing="ij")
    a, b = a.ravel(), b.ravel()  # lexicographic order
    at_cut = np.minimum(s[a], s[b]) == cut
    tied = np.stack([a[at_cut], b[at_cut]], axis=1)[:budget - n_gt ** 2]
    rows = np.concatenate([hi, tied])
    return rows[np.lexsort(rows.T[::-1])]


def test_twenty_thousand_frequent_items_and_a_million_candidates():
    """Level 2 of a large vocabulary, all frequent: 4e8 candidates, of which the best 1e6
    are kept without building the others."""
    n, budget = 20_000, 1_000_000
    s = np.random.default_rng(0).integers(50, 5000, size=n)  # about 4 items a support
    prev = {(i,): int(v) for i, v in enumerate(s)}
    got, capped = capped_candidates(prev, budget)
    assert capped and len(got) == budget
    want = expected_pairs(s, budget)
    assert got[:5] == [tuple(r) for r in want[:5].tolist()]
    assert got[-5:] == [tuple(r) for r in want[-5:].tolist()]
    assert np.array_equal(np.array(got, dtype=np.int64), want)
