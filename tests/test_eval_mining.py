"""The exact subsequence miner (dpgpu.eval.truth): array levels, the Numba GSP join and
prune, prefix grouping, checked against brute force and the tuple reference."""

from __future__ import annotations

import itertools
import logging
from collections import Counter

import numpy as np
import pytest

from dpgpu import SequenceDB
from dpgpu.errors import InvalidParameter
from dpgpu.eval import truth as T
from dpgpu.eval.subseq_numba import gsp_candidates


def _random_db(seed):
    """A small random database: skewed items (long frequent patterns), repeats, duplicate
    and empty sequences."""
    rng = np.random.default_rng(seed)
    n_items = int(rng.integers(2, 7))
    p = rng.dirichlet(np.full(n_items, 0.7))
    rows = [rng.choice(n_items, size=int(rng.integers(0, 10)), p=p).tolist()
            for _ in range(int(rng.integers(1, 25)))]
    rows += rows[:int(rng.integers(0, 4))]
    return rows, n_items


def _db(rows, n_items):
    return SequenceDB.from_sequences([[str(x) for x in r] for r in rows],
                                     vocab=[str(i) for i in range(n_items)])


def _brute_supports(rows, l_max=None):
    """Support of every subsequence: each sequence's distinct subsequences, counted once."""
    sup = Counter()
    for r in rows:
        r = r if l_max is None else r[:l_max]
        sup.update({tuple(r[i] for i in idx)
                    for n in range(1, len(r) + 1)
                    for idx in itertools.combinations(range(len(r)), n)})
    return sup


def _ranked(sup, min_length, max_length):
    """Patterns of a length in range, ranked by support, then length, then ids."""
    out = [(p, c) for p, c in sup.items()
           if len(p) >= min_length and (max_length is None or len(p) <= max_length)]
    return sorted(out, key=lambda pc: (-pc[1], len(pc[0]), pc[0]))


PARAMS = [dict(), dict(max_length=2), dict(max_length=3, min_length=2), dict(min_length=3),
          dict(l_max=4), dict(l_max=6, min_length=2, max_length=4)]


@pytest.mark.parametrize("seed", range(16))
@pytest.mark.parametrize("kw", PARAMS, ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()))
def test_frequent_subsequences_equal_brute_force(seed, kw):
    rows, n_items = _random_db(seed)
    sup = _brute_supports(rows, kw.get("l_max"))
    db = _db(rows, n_items)
    for min_support in (1, 2, 3, max(1, len(rows) // 3)):
        pats, got = T.frequent_subsequences(db, min_support, **kw)
        want = [(p, c) for p, c in _ranked(sup, kw.get("min_length", 1), kw.get("max_length"))
                if c >= min_support]
        assert list(zip(pats, got.tolist())) == want
        assert all(type(p) is tuple and all(type(x) is int for x in p) for p in pats)
        assert got.dtype == np.int64


@pytest.mark.parametrize("seed", range(16))
@pytest.mark.parametrize("kw", PARAMS, ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()))
def test_top_k_subsequences_equal_brute_force(seed, kw):
    """The threshold rises with the k-th support kept; ties at the cut go by length, ids."""
    rows, n_items = _random_db(seed)
    ranked = _ranked(_brute_supports(rows, kw.get("l_max")), kw.get("min_length", 1),
                     kw.get("max_length"))
    db = _db(rows, n_items)
    for k in (1, 2, 5, 17, 400):
        pats, got = T.top_k_subsequences(db, k, **kw)
        assert list(zip(pats, got.tolist())) == ranked[:k]


def test_mining_an_empty_database():
    db = _db([], 3)
    pats, sup = T.frequent_subsequences(db, 1)
    assert pats == [] and sup.dtype == np.int64 and sup.size == 0
    assert T.top_k_subsequences(db, 4)[0] == []


def test_mining_logs_one_line_per_level(caplog):
    rows = [[0, 1, 2, 3], [0, 1, 2], [0, 2, 3], [1, 2, 3]]
    with caplog.at_level(logging.INFO, logger="dpgpu"):
        T.frequent_subsequences(_db(rows, 5), 2)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("exact mining")]
    # length 1: 5 items, 4 frequent; 2: the 6 pairs held (0 1, 0 2, 0 3, 1 2, 1 3, 2 3), all
    # frequent; 3: 4 candidates, 0 1 2, 0 2 3, 1 2 3 frequent (0 1 3 held once); 4: none
    assert lines == ["exact mining: length 1: 5 candidates, 4 frequent",
                     "exact mining: length 2: 6 candidates, 6 frequent",
                     "exact mining: length 3: 4 candidates, 3 frequent"]


# ------------------------------------------------------- the candidate kernel
def _join_only(level):
    """The GSP join without the prune."""
    return sorted(p + q[-1:] for p in level for q in level if p[1:] == q[:-1])


def _kernel(level, n, n_chunks=3):
    mat = np.array(level, dtype=np.int32).reshape(-1, n)
    out = gsp_candidates(mat, n_chunks)
    assert out.dtype == np.int32 and out.shape[1] == n + 1
    return [tuple(r) for r in out.tolist()]


def test_gsp_candidates_by_hand():
    # 0 1 + 1 2 -> 0 1 2, pruned: 0 2 is not in the level
    assert _join_only([(0, 1), (1, 2)]) == [(0, 1, 2)]
    assert _kernel([(0, 1), (1, 2)], 2) == []
    assert _kernel([(0, 1), (0, 2), (1, 2)], 2) == [(0, 1, 2)]
    # a level of one item: every ordered pair, repeats included, nothing to prune
    assert _kernel([(0,), (2,)], 1) == [(0, 0), (0, 2), (2, 0), (2, 2)]
    assert _kernel([], 1) == [] and _kernel([], 4) == []
    # 1 1 1 1 alone joins itself; every deletion leaves 1 1 1
    assert _kernel([(1, 1, 1)], 3) == [(1, 1, 1, 1)]


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_gsp_candidates_equal_the_tuple_join(n):
    """Random sorted levels, dense (most candidates kept) to sparse (most pruned): the kernel
    gives the tuple reference's candidates in its order, for any number of chunks."""
    rng = np.random.default_rng(n)
    pruned = 0
    for trial in range(60):
        n_items = int(rng.integers(1, 5))
        size = int(rng.integers(0, min(n_items ** n, 80) + 1))
        level = sorted({tuple(rng.integers(0, n_items, size=n).tolist()) for _ in range(size)})
        want = T._candidates(level)
        assert want == sorted(want)
        for n_chunks in (1, 4, 64):
            assert _kernel(level, n, n_chunks) == want
        pruned += len(_join_only(level)) > len(want)
    assert pruned >= (0 if n < 3 else 10)  # the prune has work from length 3 on


def test_gsp_candidates_of_frequent_levels():
    """The levels of a real mining run (every subsequence of a frequent pattern frequent)."""
    rows, n_items = _random_db(3)
    pats, _ = T.frequent_subsequences(_db(rows, n_items), 2)
    for n in range(1, max(map(len, pats))):
        level = sorted(p for p in pats if len(p) == n)
        assert _kernel(level, n) == T._candidates(level)


# ------------------------------------------------------------ prefix grouping
def _grouped_by_dict(pats):
    """group_by_prefix's definition: prefixes in order of first appearance, members in
    input order."""
    groups: dict[tuple, list[int]] = {}
    for i, p in enumerate(pats):
        groups.setdefault(p[:-1], []).append(i)
    members = [i for g in groups.values() for i in g]
    return ([x for p in groups for x in p], np.cumsum([0] + [len(p) for p in groups]).tolist(),
            np.cumsum([0] + [len(g) for g in groups.values()]).tolist(),
            [pats[i][-1] for i in members], members)


@pytest.mark.parametrize("seed", range(8))
def test_group_by_prefix_equals_its_definition(seed):
    rng = np.random.default_rng(seed)
    pats = [tuple(rng.integers(0, 3, size=rng.integers(1, 5)).tolist())
            for _ in range(int(rng.integers(0, 40)))]
    got = T.group_by_prefix(pats)
    assert [a.dtype for a in got] == [np.int32, np.int64, np.int64, np.int32, np.int64]
    assert [a.tolist() for a in got] == list(_grouped_by_dict(pats))


def test_group_by_prefix_refuses_empty_patterns():
    with pytest.raises(InvalidParameter):
        T.group_by_prefix([(1, 2), ()])


def test_top_k_stops_extending_patterns_tied_with_the_kth(caplog):
    """Long random sequences over 5 items hold every short pattern: all supports tie.

    Extending every pattern tied with the k-th support would mine every length
    up to the sequences' (millions of candidates by length 9); a longer tied
    pattern ranks after the k kept, so mining ends at the length that fills k.
    """
    rng = np.random.default_rng(2)
    rows = [[str(x) for x in rng.integers(0, 5, 100)] for _ in range(20)]
    db = SequenceDB.from_sequences(rows, vocab=[str(i) for i in range(5)])
    with caplog.at_level(logging.INFO, logger="dpgpu"):
        pats, sups = T.top_k_subsequences(db, 100)
    assert sups.tolist() == [20] * 100
    assert pats == [(i,) for i in range(5)] + list(itertools.product(range(5), repeat=2)) + \
        list(itertools.product(range(5), repeat=3))[:70]
    mined = [r.getMessage().split()[3] for r in caplog.records
             if r.getMessage().startswith("exact mining")]
    assert mined == ["1:", "2:", "3:"]
