"""DPNE's memory-lean paths against plain-Python brute force.

The release keeps few bytes per text position (int32 indices, a one-byte
remaining length, a mask of valid occurrences) and bounds its histograms in
blocks of whole users.  These tests force tiny blocks (module constants) so
that users cross block boundaries and one table of sums takes many blocks,
and check every result against a direct computation.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpgpu import SequenceDB
from dpgpu.mechanisms.dpne import Occurrences
from dpgpu.mechanisms.dpne import histogram as H
from dpgpu.mechanisms.dpne import levels as L
from dpgpu.mechanisms.dpne.calibration import GRID
from dpgpu.privacy import NoiseKey

VOCAB = [str(i) for i in range(6)]


def _db(rng, *, users: bool, long: int = 0) -> SequenceDB:
    """Random sequences over 6 items, some empty, one of ``long`` items."""
    lengths = rng.integers(0, 9, 40).tolist() + [long, 0, 3]
    seqs = [rng.integers(0, 6, n).astype(str).tolist() for n in lengths]
    owner = rng.integers(0, 7, len(seqs)) if users else None
    return SequenceDB.from_sequences(seqs, vocab=VOCAB, users=owner)


def _by_position(db: SequenceDB):
    """(sequence, items left) of every position, by a loop."""
    out = []
    for s in range(len(db)):
        lo, hi = int(db.offsets[s]), int(db.offsets[s + 1])
        out += [(s, hi - p) for p in range(lo, hi)]
    return out


@pytest.mark.parametrize("users", [False, True])
def test_positions_against_a_loop(users):
    db = _db(np.random.default_rng(1), users=users, long=L.MAX_REMAIN + 40)
    pos = L.Positions.of(db)
    seq, left = zip(*_by_position(db))
    owner = db.users[list(seq)] if users else np.array(seq)
    assert pos.items is db.items                                   # shared, not copied
    assert pos.users.dtype == np.int32 and pos.users.tolist() == owner.tolist()
    assert pos.remain.dtype == np.uint8
    assert pos.remain.tolist() == [min(n, L.MAX_REMAIN) for n in left]
    assert pos.offsets is db.offsets
    for k in (1, 2, 7, L.MAX_REMAIN - 1, L.MAX_REMAIN, L.MAX_REMAIN + 1, L.MAX_REMAIN + 40,
              L.MAX_REMAIN + 41):                         # past the clipped lengths too
        assert pos.windows(k).tolist() == [p for p, n in enumerate(left) if n >= k]


@pytest.mark.parametrize("size", [0, 1, 20, 3000])
def test_index_of_against_a_dictionary(size):
    rng = np.random.default_rng(size)
    released = np.unique(rng.integers(0, 5 * size + 50, size))
    values = rng.integers(-5, 5 * size + 60, 4001)
    where = {v: i for i, v in enumerate(released.tolist())}
    for dtype in (np.int32, np.int64):
        got = L.index_of(values, released, dtype)
        assert got.dtype == dtype
        assert got.tolist() == [where.get(v, -1) for v in values.tolist()]
    items = values.astype(np.int32)[values >= 0]                   # int32 values, as items are
    assert L.index_of(items, released).tolist() == [where.get(v, -1) for v in items.tolist()]


def _windows(db, k):
    """{start: items of the window} of every length-k window."""
    return {p: tuple(db.items[p:p + k].tolist())
            for p, (_, n) in enumerate(_by_position(db)) if n >= k}


@pytest.mark.parametrize("both", [True, False])
def test_occurrences_against_a_loop(both):
    """Levels 2 and 3: valid occurrences, candidate keys and released indices."""
    rng = np.random.default_rng(7)
    db = _db(rng, users=True, long=30)
    s1 = np.array([0, 2, 3, 5])
    n_right = {2: s1.size}
    occ = Occurrences.of(db).released(s1, True)
    grams = {1: [(x,) for x in s1.tolist()]}
    for k in (2, 3):
        left = {g: i for i, g in enumerate(grams[k - 1])}
        right = left if both else {g: i for i, g in enumerate(grams[1])}
        n_right = len(right)
        occ = occ.candidates(k, n_right, both)
        want = {}
        for p, w in _windows(db, k).items():
            a, b = left.get(w[:-1], -1), right.get(w[1:] if both else w[-1:], -1)
            if a >= 0 and b >= 0:
                want[p] = a * n_right + b
        assert np.flatnonzero(occ.valid).tolist() == sorted(want)
        assert occ.cand.dtype == np.int64 and occ.cand.tolist() == [want[p] for p in sorted(want)]
        out = np.unique(rng.choice(occ.cand, occ.cand.size // 2))   # some released keys
        occ = occ.released(out, False)
        assert occ.idx_prev.dtype == np.int32 and (occ.idx1 is None) == both
        index = {key: i for i, key in enumerate(out.tolist())}
        assert occ.idx_prev.tolist() == [index.get(want.get(p, -1), -1)
                                         for p in range(db.items.size)]
        rows = {key: left_gram + (right_gram[-1],)
                for left_gram, a in left.items() for right_gram, b in right.items()
                for key in [a * n_right + b]}
        grams[k] = [rows[key] for key in out.tolist()]


def test_candidate_keys_do_not_wrap_with_int32_indices():
    """Keys a * n_right + b pass 2**31 while the indices are int32 (NEP 50: no wrap)."""
    db = SequenceDB.from_sequences([["1", "2", "3"]] * 3, vocab=VOCAB)
    occ = Occurrences.of(db).released(np.array([1, 2, 3]), True)
    assert occ.idx_prev.dtype == np.int32
    n_right = 2 ** 40
    cand = occ.candidates(2, n_right, True).cand
    assert cand.tolist() == [0 * n_right + 1, 1 * n_right + 2] * 3


def _kept_by_loop(users, grams, cap, key, tag):
    """{user: (kept grams, distinct grams held)}: the cap smallest keyed words by rank."""
    out = {}
    for u in sorted(set(users.tolist())):
        held = sorted(set(grams[users == u].tolist()))
        if len(held) > cap:
            ids = (np.uint64(u) << np.uint64(32)) | np.arange(len(held), dtype=np.uint64)
            words = key.packed_words(ids, tag + H.TAG_SUBSET, backend="numpy")
            held_kept = sorted(held[i] for i in np.argsort(words, kind="stable")[:cap])
        else:
            held_kept = held
        out[u] = (held_kept, len(held))
    return out


@pytest.mark.parametrize("block", [1, 4, 50, 1 << 18])
@pytest.mark.parametrize("wide", [False, True])
def test_bounded_histogram_in_blocks_against_a_loop(monkeypatch, block, wide):
    """Blocks of whole users (one user larger than a block included), over-cap users
    choosing by keyed words, and grams of 60 bits and more."""
    monkeypatch.setattr(H, "PAIR_BLOCK", block)
    rng = np.random.default_rng(block)
    users = np.r_[rng.integers(0, 40, 600), np.full(120, 17)]     # user 17 holds many grams
    grams = rng.integers(0, 30, users.size) * (2 ** 55 if wide else 1)  # wide: 62 bits passed
    order = rng.permutation(users.size)
    users, grams = users[order].astype(np.int32), grams[order]
    key, cap, tag = NoiseKey.from_seed(block), 6, 8
    want = {}
    for held_kept, t in _kept_by_loop(users, grams, cap, key, tag).values():
        for g in held_kept:
            want[g] = want.get(g, 0) + math.isqrt(GRID * GRID // min(t, cap))
    keys, weights = H.bounded_histogram(users, grams, cap, key, tag)
    assert keys.dtype == weights.dtype == np.int64
    assert keys.tolist() == sorted(want) and weights.tolist() == [want[g] for g in sorted(want)]
    u, g, t = H.bounded_pairs(users, grams, cap, key, tag)
    by_loop = _kept_by_loop(users, grams, cap, key, tag)
    assert [(a, b) for a, b in zip(u.tolist(), g.tolist())] == \
        [(a, b) for a in sorted(by_loop) for b in by_loop[a][0]]
    assert t.tolist() == [by_loop[a][1] for a in u.tolist()]


@pytest.mark.parametrize("weight_bits", [8, 40])
def test_merge_histograms_of_sorted_runs(weight_bits):
    """The stable (run-merging) sort sums as a dictionary does, on both packing paths."""
    rng = np.random.default_rng(weight_bits)
    parts, want = [], {}
    for _ in range(5):
        keys = np.unique(rng.integers(0, 2 ** 30, rng.integers(1, 200)))
        weights = rng.integers(0, 2 ** weight_bits, keys.size)
        parts.append((keys, weights))
        for g, w in zip(keys.tolist(), weights.tolist()):
            want[g] = want.get(g, 0) + w
    keys, sums = H.merge_histograms(parts)
    assert keys.tolist() == sorted(want) and sums.tolist() == [want[g] for g in sorted(want)]
