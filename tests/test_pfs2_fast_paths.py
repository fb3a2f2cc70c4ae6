"""The faster paths of PFS² at scale, against brute force.

* deduplication (:func:`dpgpu.eval.truth._dedupe`, the kernels
  :func:`~dpgpu.eval.subseq_numba.sequence_hashes` and
  :func:`~dpgpu.eval.subseq_numba.group_rows`): exact whatever the hashes,
  with duplicates, empty sequences and weights;
* the maximal-support search (:mod:`dpgpu.mechanisms.pfs2.premining_numba`):
  the index built by counting sorts, the children a node lists while it reads
  its windows, the tail bound's weights, alphabets whose ranks need more
  than 8 bits;
* sequence reconstruction with ``Contain_k`` listed in the same kernel:
  a batch equals its sequences one at a time, for any number of runs.
"""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest

from dpgpu import SequenceDB
from dpgpu.eval.subseq_numba import gather_rows, group_rows, sequence_hashes
from dpgpu.eval.truth import _dedupe
from dpgpu.mechanisms.pfs2 import premining
from dpgpu.mechanisms.pfs2.premining import maximal_support
from dpgpu.mechanisms.pfs2.premining_numba import first_occurrences, tail_weights, \
    weights_with_room, window_children
from dpgpu.mechanisms.pfs2.shrink import candidate_tables, reconstruct, reconstruct_flat


def random_rows(rng, n_items, n_seq, max_len, share=0.5):
    """Rows over ``n_items`` items, about ``share`` of them copies of earlier rows, some empty."""
    rows = []
    for _ in range(n_seq):
        if rows and rng.random() < share:
            rows.append(list(rows[int(rng.integers(0, len(rows)))]))
        else:
            rows.append(rng.integers(0, n_items, int(rng.integers(0, max_len + 1))).tolist())
    return rows


def db_of(rows, n_items):
    return SequenceDB.from_sequences(rows, vocab=[str(i) for i in range(n_items)])


def rows_of(db):
    return [db.items[a:b].tolist() for a, b in zip(db.offsets[:-1], db.offsets[1:])]


# -------------------------------------------------------------- deduplication
@pytest.mark.parametrize("seed", range(4))
def test_dedupe_equals_brute_force(seed):
    rng = np.random.default_rng(seed)
    rows = random_rows(rng, int(rng.integers(1, 5)), int(rng.integers(1, 300)), 6)
    db = db_of(rows, 5)
    weights = rng.integers(0, 4, len(rows))
    want = Counter()
    for r, w in zip(rows, weights.tolist()):
        want[tuple(r)] += w
    uniq, got = _dedupe(db, weights)
    distinct = [tuple(r) for r in rows_of(uniq)]
    assert dict(zip(distinct, got.tolist())) == dict(want)
    assert distinct == list(dict.fromkeys(tuple(r) for r in rows))  # first occurrences, in order
    assert got.dtype == np.int64 and uniq.vocab is db.vocab


def test_dedupe_of_empty_sequences_and_no_sequences():
    uniq, w = _dedupe(db_of([[], [], [], []], 2))
    assert rows_of(uniq) == [[]] and w.tolist() == [4]
    uniq, w = _dedupe(db_of([], 2))
    assert len(uniq) == 0 and w.tolist() == []


@pytest.mark.parametrize("fold", [1, 3])
def test_grouping_is_exact_when_hashes_collide(fold):
    """Hashes with 1 or 3 values: every distinct sequence still gets its own group."""
    rng = np.random.default_rng(11)
    db = db_of(random_rows(rng, 3, 400, 5, share=0.7), 3)
    weights = rng.integers(1, 5, len(db)).astype(np.int64)
    real = group_rows(db.items, db.offsets, sequence_hashes(db.items, db.offsets), weights)
    bad = sequence_hashes(db.items, db.offsets) % np.uint64(fold)
    collided = group_rows(db.items, db.offsets, bad, weights)
    assert [a.tolist() for a in collided] == [a.tolist() for a in real]


def test_hashes_follow_items_and_order():
    db = db_of([[0, 1], [1, 0], [0, 1], [], [0], [0, 0]], 2)
    h = sequence_hashes(db.items, db.offsets).tolist()
    assert h[0] == h[2] and len({h[0], h[1], h[3], h[4], h[5]}) == 5


def test_gather_rows():
    db = db_of([[0, 1, 2], [], [2], [1, 1]], 3)
    items, offsets = gather_rows(db.items, db.offsets, np.array([3, 1, 0, 3]))
    assert items.tolist() == [1, 1, 0, 1, 2, 1, 1] and offsets.tolist() == [0, 2, 2, 5, 7]


# ------------------------------------------------------ maximal-support search
def ranks_and_offsets(rng, n_seq, n_items, dtype):
    lens = rng.integers(0, 9, n_seq)
    offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    return rng.integers(-1, n_items, int(offsets[-1])).astype(dtype), offsets


@pytest.mark.parametrize("dtype", [np.int8, np.int16])
def test_first_occurrences_equal_brute_force(dtype):
    rng = np.random.default_rng(5)
    rank_at, offsets = ranks_and_offsets(rng, 60, 7, dtype)
    at, seq, pos = first_occurrences(rank_at, offsets, 7)
    for r in range(7):
        want = [(s, a + rank_at[a:b].tolist().index(r)) for s, (a, b)
                in enumerate(zip(offsets[:-1], offsets[1:])) if r in rank_at[a:b].tolist()]
        assert list(zip(seq[at[r]:at[r + 1]].tolist(), pos[at[r]:at[r + 1]].tolist())) == want


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("n_chunks", [1, 3])
def test_window_children_equal_brute_force(seed, n_chunks):
    """Bounds of every child; sequences and match ends of those above ``best``, in order."""
    rng = np.random.default_rng(seed)
    n_items = 6
    rank_at, offsets = ranks_and_offsets(rng, 50, n_items, np.int8)
    end, w = offsets[1:].astype(np.int32), rng.integers(0, 4, 50).astype(np.int64)
    seqs = np.sort(rng.choice(50, 30, replace=False)).astype(np.int32)
    e = (offsets[seqs] - 1 + rng.integers(0, 3, seqs.size)).astype(np.int32)
    room = int(rng.integers(0, 3))
    best = int(rng.integers(0, 8))
    bounds, at, child_seq, child_end = window_children(rank_at, end, w, seqs, e, room, n_items,
                                                       best, n_chunks)
    assert child_seq.dtype == seqs.dtype and child_end.dtype == e.dtype
    for r in range(n_items):
        want = []
        for s, ej in zip(seqs.tolist(), e.tolist()):
            window = rank_at[ej + 1:end[s] - room].tolist()
            if r in window:
                want.append((s, ej + 1 + window.index(r)))
        assert bounds[r] == sum(w[s] for s, _ in want)
        got = list(zip(child_seq[at[r]:at[r + 1]].tolist(), child_end[at[r]:at[r + 1]].tolist()))
        assert got == (want if bounds[r] > best else [])


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("n_chunks", [1, 4])
def test_tail_weights_equal_brute_force(seed, n_chunks):
    """Per tail, the weight of the node's sequences where it starts after the given position."""
    rng = np.random.default_rng(seed)
    n_seq, n_tails = 40, 5
    tails = rng.integers(-1, 12, (n_seq, n_tails)).astype(np.int32)
    w = rng.integers(0, 5, n_seq).astype(np.int64)
    seqs = rng.choice(n_seq, 25, replace=False).astype(np.int32)
    after = rng.integers(-2, 12, seqs.size).astype(np.int32)
    want = [sum(int(w[s]) for s, a in zip(seqs.tolist(), after.tolist()) if tails[s, q] > a)
            for q in range(n_tails)]
    assert tail_weights(tails, seqs, after, w, n_chunks).tolist() == want
    assert tail_weights(tails, seqs[:0], after[:0], w, n_chunks).tolist() == [0] * n_tails


def test_weights_with_room():
    at = np.array([0, 3, 3, 5])
    seq, room_of = np.array([0, 2, 3, 1, 2]), np.array([5, 1, 2, 3, 0])
    w = np.array([10, 20, 30, 40])
    assert weights_with_room(at, seq, room_of, w, 1).tolist() == [10 + 40, 0, 20]


def brute_maximal_support(rows, y, floor):
    """The largest number of rows holding one pattern of ``y`` items, at least ``floor``."""
    support = Counter()
    for r in rows:
        support.update({tuple(r[i] for i in c) for c in itertools.combinations(range(len(r)), y)})
    return max([floor, *support.values()])


@pytest.mark.parametrize("windows", [False, True])
def test_maximal_supports_over_a_wide_alphabet(monkeypatch, windows):
    """More than 127 items above the floor: ranks in 16 bits, children listed from windows."""
    if windows:  # no table, no tails: every node reads its windows
        for name, value in {"NEXT_CELLS": 0, "TAIL_PATTERNS": 1, "UNIVERSAL_ITEMS": 0,
                            "_WINDOW_RATIO": 1e9}.items():
            monkeypatch.setattr(premining, name, value)
    rng = np.random.default_rng(21)
    n_items = 150
    rows = [rng.permutation(n_items)[:3].tolist() for _ in range(200)]  # every item held
    rows += [[7, 3, 7, 9, 3, 1][:int(rng.integers(0, 7))] for _ in range(60)]  # duplicates
    db = db_of(rows, n_items)
    assert premining._Index(*_dedupe(db), 0).rank_at.dtype == np.int16
    for y in range(1, 5):
        for floor in (0, 5):
            assert maximal_support(db, y, floor) == brute_maximal_support(rows, y, floor), \
                (y, floor)


# ------------------------------------------------------------ reconstruction
@pytest.mark.parametrize("k", [1, 2, 3])
def test_reconstructing_a_batch_equals_one_sequence_at_a_time(k):
    """Scratch shared by the sequences of a run is reset between them; runs do not matter."""
    rng = np.random.default_rng(k)
    rows = [rng.integers(0, 5, int(rng.integers(0, 14))).tolist() for _ in range(40)]
    cands = sorted({tuple(rng.integers(0, 5, k).tolist()) for _ in range(25)})
    l_max = 4
    items = np.concatenate([np.asarray(r, dtype=np.int32) for r in rows])
    offsets = np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype(np.int64)
    buf, lens = reconstruct_flat(items, offsets, candidate_tables(cands, k), l_max, 5)
    batch = [buf[s * l_max:s * l_max + n].tolist() for s, n in enumerate(lens.tolist())]
    assert batch == [reconstruct(r, cands, k, l_max) for r in rows]
    assert any(batch) and all(len(r) <= l_max for r in batch)
