"""The Numba loops behind PFS² at scale, against brute force.

* :mod:`dpgpu.eval.subseq_numba`: supports and the containment matrix, with
  the groups of patterns bucketed by their first item (patterns of one
  item, duplicates, empty sequences, items no sequence holds);
* :mod:`dpgpu.mechanisms.pfs2.premining_numba`: the window reads of the
  maximal-support search (item weights of windows, next occurrence of an
  item in a window, read or searched) and its counting sort of positions.

Every result is an exact integer, the same for any number of chunks.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpgpu import SequenceDB
from dpgpu.eval.subseq_numba import groups_by_first_item, sequence_hits, support_counts
from dpgpu.eval.truth import group_by_prefix, subsequence_supports
from dpgpu.mechanisms.pfs2.premining_numba import next_in_window, positions_by_item, \
    window_item_weights
from dpgpu.mechanisms.pfs2.shrink import is_subsequence


def random_rows(rng, n_items, n_seq, max_len):
    """Random sequences over ``n_items`` items, some empty, skewed towards low ids."""
    return [(rng.zipf(1.5, int(rng.integers(0, max_len + 1))) - 1) % n_items
            for _ in range(n_seq)]


def random_patterns(rng, n_items, n_pat, max_len):
    """Random patterns of 1 .. max_len items, some repeated."""
    pats = [tuple(int(x) for x in rng.integers(0, n_items, int(rng.integers(1, max_len + 1))))
            for _ in range(n_pat)]
    return pats + pats[:n_pat // 5]


def flat(rows):
    items = np.concatenate([np.asarray(r, dtype=np.int32) for r in rows] + [np.zeros(0, np.int32)])
    offsets = np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype(np.int64)
    return items, offsets


@pytest.mark.parametrize("seed", range(6))
def test_supports_and_containment_equal_brute_force(seed):
    rng = np.random.default_rng(seed)
    n_items = int(rng.integers(1, 12))
    rows = [r.tolist() for r in random_rows(rng, n_items, int(rng.integers(1, 60)), 14)]
    pats = random_patterns(rng, n_items + 2, int(rng.integers(1, 80)), 4)  # some absent items
    n_sym = n_items + 2
    weights = rng.integers(0, 5, len(rows)).astype(np.int64)
    want = np.array([[is_subsequence(p, r) for p in pats] for r in rows], dtype=bool)
    items, offsets = flat(rows)
    pre_flat, pre_off, grp_off, ext_item, members = group_by_prefix(pats)
    for n_chunks in (1, 3, len(rows) + 4):
        counts = support_counts(items, offsets, weights, pre_flat, pre_off, grp_off, ext_item,
                                n_sym, n_chunks)
        assert counts.tolist() == (weights @ want[:, members]).tolist()
    # each sequence's contained patterns, as PFS² reconstruction lists them
    buckets = groups_by_first_item(pre_flat, pre_off, n_sym)
    last, seen = np.full(n_sym, -1, dtype=np.int64), np.full(n_sym, -1, dtype=np.int64)
    hits = np.empty(ext_item.size, dtype=np.int64)
    for s, row in enumerate(want):
        n = sequence_hits(items, offsets[s], offsets[s + 1], last, seen, s, pre_flat, pre_off,
                          grp_off, ext_item, *buckets, hits)
        assert sorted(members[hits[:n]].tolist()) == np.flatnonzero(row).tolist()
        assert (last == -1).all()  # reset for the next sequence


def test_subsequence_supports_of_a_skewed_database():
    """Many groups sharing few first items, and sequences holding few of the items."""
    rng = np.random.default_rng(7)
    rows = [r.tolist() for r in random_rows(rng, 40, 300, 30)]
    db = SequenceDB.from_sequences(rows, vocab=[str(x) for x in range(40)])
    pats = random_patterns(rng, 40, 400, 5)
    want = [sum(is_subsequence(p, r) for r in rows) for p in pats]
    assert subsequence_supports(db, pats).tolist() == want


def window_rows(rng, n, n_items):
    """Ranks (-1: outside the alphabet) and random windows ``(e, limit)``, some empty."""
    rank_at = rng.integers(-1, n_items, n).astype(np.int32)
    e = rng.integers(-1, n, 40)
    limit = np.minimum(n, e + 1 + rng.integers(-2, n // 2 + 2, e.size))
    return rank_at, e, limit


@pytest.mark.parametrize("seed", range(5))
def test_window_item_weights_equal_brute_force(seed):
    rng = np.random.default_rng(seed)
    n_items = int(rng.integers(1, 8))
    rank_at, e, limit = window_rows(rng, int(rng.integers(1, 60)), n_items)
    w = rng.integers(0, 9, e.size).astype(np.int64)
    want = np.zeros(n_items, dtype=np.int64)
    for j in range(e.size):
        for r in set(rank_at[e[j] + 1:max(e[j] + 1, limit[j])].tolist()) - {-1}:
            want[r] += w[j]
    for n_chunks in (1, 4, e.size + 3):
        assert window_item_weights(rank_at, e, limit, w, n_items, n_chunks).tolist() == \
            want.tolist()


@pytest.mark.parametrize("seed", range(5))
def test_next_in_window_reads_or_searches_exactly(seed):
    rng = np.random.default_rng(100 + seed)
    n_items = int(rng.integers(1, 6))
    n = int(rng.integers(1, 80))
    rank_at, e, limit = window_rows(rng, n, n_items)
    m = n + 1
    pos = np.flatnonzero(rank_at >= 0)
    keys = np.append(np.sort(rank_at[pos].astype(np.int64) * m + pos), (n_items + 1) * m)
    for r in range(n_items):
        want = [next((p for p in range(e[j] + 1, limit[j]) if rank_at[p] == r), m)
                for j in range(e.size)]
        for max_scan in (0, 1, 3, n + 1):
            for parallel in (False, True):
                got = next_in_window(rank_at, keys, m, r, e, limit, max_scan, parallel)
                assert got.tolist() == want, (r, max_scan, parallel)


@pytest.mark.parametrize("n_sym, n", [(1, 0), (1, 5), (3, 1), (7, 200), (300, 1000)])
def test_positions_by_item_is_a_stable_argsort(n_sym, n):
    items = np.random.default_rng(n).integers(0, n_sym, n).astype(np.int32)
    assert positions_by_item(items, n_sym).tolist() == np.argsort(items, kind="stable").tolist()
