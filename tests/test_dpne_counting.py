"""DPNE's Numba counting loops (:mod:`dpgpu.mechanisms.dpne.counting_numba`) against
plain-Python brute force: grouping by user, per-user distinct grams, the table of
sums and the lookups of released keys (forced hash collisions and growth included),
candidate keys, gram codes and their ranks, and the three ways
:func:`~dpgpu.mechanisms.dpne.histogram.bounded_histogram` groups its rows."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpgpu import InvalidParameter, SequenceDB
from dpgpu.mechanisms.dpne import counting_numba as C
from dpgpu.mechanisms.dpne import histogram as H
from dpgpu.mechanisms.dpne.baselines import GramOccurrences
from dpgpu.mechanisms.dpne.calibration import GRID
from dpgpu.mechanisms.dpne.levels import Positions, index_of
from dpgpu.mechanisms.dpne.policy import policy_histogram
from dpgpu.privacy import NoiseKey

GOLDEN = 0x9E3779B97F4A7C15


def _home(key: int, bits: int) -> int:
    """The home slot of ``key`` in ``2**bits`` slots, as :func:`dpgpu.ops.grams_numba.home_slot`."""
    return (key * GOLDEN) % 2 ** 64 >> (64 - bits)


def _same_home(n: int, bits: int, start: int = 0) -> list[int]:
    """The first ``n`` keys from ``start`` on that share one home slot in ``2**bits`` slots."""
    seen: dict[int, list[int]] = {}
    key = start
    while True:
        group = seen.setdefault(_home(key, bits), [])
        group.append(key)
        if len(group) == n:
            return group
        key += 1


def _runs(lengths) -> np.ndarray:
    return np.r_[0, np.cumsum(lengths)].astype(np.int64)


def test_user_runs():
    users = np.array([0, 0, 3, 3, 3, 7, 9, 9], dtype=np.int32)
    starts, ids = C.user_runs(users)
    assert starts.tolist() == [0, 2, 5, 6, 8] and ids.tolist() == [0, 3, 7, 9]
    starts, ids = C.user_runs(np.array([1, 2, 2, 1]))
    assert starts.size == 0 and ids.size == 0                       # not in order
    starts, ids = C.user_runs(np.zeros(0, dtype=np.int64))
    assert starts.tolist() == [0] and ids.size == 0


@pytest.mark.parametrize("low", [0, 5, -3])
def test_group_by_user_is_a_stable_counting_sort(low):
    rng = np.random.default_rng(low + 10)
    users = rng.integers(low, low + 30, 500)
    users[users == low + 4] = low + 5                               # an id with no rows
    grams = rng.integers(0, 10 ** 12, users.size)
    grouped, starts, ids = C.group_by_user(users, grams, low, 30)
    order = np.argsort(users, kind="stable")
    assert grouped.tolist() == grams[order].tolist()
    present = sorted(set(users.tolist()))
    assert ids.tolist() == present
    assert np.diff(starts).tolist() == [int((users == u).sum()) for u in present]
    assert starts[0] == 0 and starts[-1] == users.size


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_distinct_in_runs_against_sets(dtype):
    rng = np.random.default_rng(4)
    lengths = np.r_[rng.integers(1, 9, 200), [C.INSERTION_MAX, C.INSERTION_MAX + 1, 300, 1]]
    values = rng.integers(0, 12, int(lengths.sum())).astype(dtype)  # many repeats
    values[-301:-1] = rng.integers(0, 2 ** 30, 300)                 # a long run, few repeats
    starts = _runs(lengths)
    before = values.copy()
    out = np.full(values.size + 3, -7, dtype=dtype)
    t = C.distinct_in_runs(values, starts, out)
    want = [sorted(set(values[a:b].tolist())) for a, b in zip(starts[:-1], starts[1:])]
    assert t.tolist() == [len(w) for w in want]
    assert out[:t.sum()].tolist() == [g for w in want for g in w]
    assert np.array_equal(values, before)                          # read only
    t = C.distinct_in_runs(values, starts[3:8], out)                 # runs that start later
    assert out[:t.sum()].tolist() == [g for w in want[3:7] for g in w]


def _table(slots: int) -> np.ndarray:
    table = np.zeros((slots, 2), dtype=np.int64)
    table[:, 0] = -1
    return table


def _sums(slots: np.ndarray) -> dict[int, int]:
    return {int(k): int(s) for k, s in slots[slots[:, 0] >= 0]}


def test_add_runs_with_colliding_keys():
    """Five keys with one home slot in eight slots (no growth below three quarters full)."""
    keys = _same_home(5, 3, 2 ** 33)
    grams = np.array(keys + keys[::-1] + keys[:2], dtype=np.int64)
    t = np.array([5, 5, 2])
    keep = np.ones(grams.size, dtype=bool)
    keep[6] = False                                                  # keys[3] in run 1
    slots, count = C.add_runs(_table(8), 0, grams, t, keep, np.array([5, 7, 11]))
    assert slots.shape == (8, 2) and count == 5
    want = {k: 5 + 7 for k in keys}
    want[keys[3]] -= 7
    for k in keys[:2]:
        want[k] += 11
    assert _sums(slots) == want


def test_add_runs_grows_the_table():
    rng = np.random.default_rng(8)
    lengths = rng.integers(1, 30, 400)
    grams = rng.integers(0, 3000, int(lengths.sum()))
    weights = rng.integers(1, 300, lengths.size)
    keep = rng.random(grams.size) < 0.8
    slots, count = _table(2), 0
    for lo, hi in ((0, 150), (150, 400)):                           # two blocks, one table
        part = slice(int(_runs(lengths)[lo]), int(_runs(lengths)[hi]))
        slots, count = C.add_runs(slots, count, grams[part], lengths[lo:hi], keep[part],
                                  weights[lo:hi])
    want: dict[int, int] = {}
    for g, w, k in zip(grams.tolist(), np.repeat(weights, lengths).tolist(), keep.tolist()):
        if k:
            want[g] = want.get(g, 0) + w
    assert _sums(slots) == want and count == len(want)
    assert 4 * count <= 3 * slots.shape[0] and slots.shape[0] < 4 * count  # 3/4 full at most


def test_index_of_with_colliding_keys():
    """Released keys that all share one home slot: the lookups probe past each other."""
    released = np.array(sorted(_same_home(12, (2 * 12 + 1).bit_length(), 2 ** 40)))
    values = np.r_[released, released + 1, released[::-1], [0, 2 ** 62, -1]]
    where = {v: i for i, v in enumerate(released.tolist())}
    assert index_of(values, released).tolist() == [where.get(v, -1) for v in values.tolist()]


def test_candidate_keys_against_a_loop():
    rng = np.random.default_rng(5)
    n, n_right = 300, 2 ** 35
    left = rng.integers(-1, 40, n).astype(np.int32)
    right = rng.integers(-1, 9, n).astype(np.int64)
    fits = rng.random(n) < 0.9
    for shift in (1, 4):
        valid = fits.copy()
        cand = C.candidate_keys(valid, left, right, shift, n_right)
        want = [p for p in range(n) if fits[p] and left[p] >= 0 and p + shift < n
                and right[p + shift] >= 0]
        assert np.flatnonzero(valid).tolist() == want
        assert cand.tolist() == [int(left[p]) * n_right + int(right[p + shift]) for p in want]


def test_window_codes_and_code_ranks_against_a_loop():
    rng = np.random.default_rng(6)
    items = rng.integers(0, 7, 400)
    prev_starts = np.flatnonzero(rng.random(400) < 0.8)
    prev_starts = prev_starts[prev_starts < 397]
    prev_ids = rng.integers(0, 50, prev_starts.size)
    starts = prev_starts[rng.random(prev_starts.size) < 0.7]
    codes = C.window_codes(prev_starts, prev_ids, starts, items, 3, 7)
    prefix = dict(zip(prev_starts.tolist(), prev_ids.tolist()))
    assert codes.tolist() == [prefix[s] * 7 + int(items[s + 2]) for s in starts.tolist()]
    values = np.unique(codes[::2])
    probe = np.r_[codes, -5, -1, 0, values[-1] + 1, 10 ** 9, values]
    for radix in (1, 7, 1000):
        assert C.code_ranks(probe, values, radix).tolist() == \
            np.searchsorted(values, probe).tolist()
    empty = np.zeros(0, dtype=np.int64)
    assert C.code_ranks(probe, empty, 7).tolist() == [0] * probe.size


@pytest.mark.parametrize("n_items", [3, 4000])  # a mask of the codes, or a sort
def test_gram_codes_and_ids_against_a_loop(n_items):
    rng = np.random.default_rng(n_items)
    seqs = [rng.integers(0, min(n_items, 30), rng.integers(0, 12)).tolist() for _ in range(60)]
    db = SequenceDB.from_sequences([[str(x) for x in s] for s in seqs],
                                   vocab=[str(i) for i in range(n_items)])
    occ = GramOccurrences(Positions.of(db), n_items)
    for k in (1, 2, 3, 4):
        occ = occ.next_codes()
        values = occ.distinct_codes()
        assert values.dtype == np.int64
        assert values.tolist() == sorted(set(occ.code.tolist()))
        occ = occ.assign(values)
        grams = sorted({tuple(s[i:i + k]) for s in seqs for i in range(len(s) - k + 1)})
        rank = {g: i for i, g in enumerate(grams)}
        want = [rank[tuple(s[i:i + k])] for s in seqs for i in range(len(s) - k + 1)]
        assert occ.ids[-1].tolist() == want


def test_policy_histogram_keys_are_the_kept_grams():
    users = np.array([0, 0, 0, 1, 1, 2], dtype=np.int64)
    grams = np.array([1, 4, 6, 4, 9, 0], dtype=np.int64)
    keys, weights = policy_histogram(users, grams, 12, GRID, 10 * GRID)
    assert keys.dtype == np.int64 and keys.tolist() == [0, 1, 4, 6, 9]
    assert weights.sum() == 3 * GRID


def _layout(layout: str, rng) -> tuple[np.ndarray, np.ndarray]:
    """Rows of 40 users; ``layout`` picks which way bounded_histogram groups them."""
    users = np.r_[rng.integers(0, 40, 900), np.full(150, 17)]      # user 17 holds many grams
    grams = rng.integers(0, 60, users.size) * 2 ** 20
    if layout == "sorted":                                          # run scan
        order = np.argsort(users, kind="stable")
    else:                                                           # counting sort / argsort
        order = rng.permutation(users.size)
    users, grams = users[order], grams[order]
    if layout == "sparse":
        users = users * 7_000_003 + 11
    return users.astype(np.int64), grams


def _weights_by_loop(users, grams, cap, key, tag):
    want: dict[int, int] = {}
    for u in sorted(set(users.tolist())):
        held = sorted(set(grams[users == u].tolist()))
        kept = held
        if len(held) > cap:
            ids = (np.uint64(u) << np.uint64(32)) | np.arange(len(held), dtype=np.uint64)
            words = key.packed_words(ids, tag + H.TAG_SUBSET, backend="numpy")
            kept = [held[i] for i in np.argsort(words, kind="stable")[:cap]]
        for g in kept:
            want[g] = want.get(g, 0) + math.isqrt(GRID * GRID // min(len(held), cap))
    return want


@pytest.mark.parametrize("layout", ["sorted", "dense", "sparse"])
@pytest.mark.parametrize("block", [3, 1 << 18])
def test_bounded_histogram_groupings_against_a_loop(monkeypatch, layout, block):
    monkeypatch.setattr(H, "PAIR_BLOCK", block)
    monkeypatch.setattr(H, "TABLE_START", 2)                        # the table grows
    rng = np.random.default_rng(len(layout) + block)
    users, grams = _layout(layout, rng)
    key, cap, tag = NoiseKey.from_seed(9), 7, 12
    want = _weights_by_loop(users, grams, cap, key, tag)
    keys, weights = H.bounded_histogram(users, grams, cap, key, tag)
    assert keys.dtype == weights.dtype == np.int64
    assert keys.tolist() == sorted(want) and weights.tolist() == [want[g] for g in sorted(want)]
    u, g, t = H.bounded_pairs(users, grams, cap, key, tag)
    assert u.dtype == g.dtype == t.dtype == np.int64
    assert np.all(np.diff(u) >= 0) and np.all((np.diff(g) > 0) | (np.diff(u) > 0))
    loose = H.bounded_histogram(users, grams, cap, key, tag, bound=False)
    held = {x: len(set(grams[users == x].tolist())) for x in set(users.tolist())}
    every: dict[int, int] = {}
    for x, y in set(zip(users.tolist(), grams.tolist())):
        every[y] = every.get(y, 0) + math.isqrt(GRID * GRID // min(held[x], cap))
    assert loose[0].tolist() == sorted(every)
    assert loose[1].tolist() == [every[y] for y in sorted(every)]


def test_bounding_refuses_user_ids_past_32_bits():
    """The subset identities are user * 2**32 + rank: an id that does not fit is refused."""
    users = np.r_[np.zeros(5), np.full(3, 2 ** 32)].astype(np.int64)
    grams = np.arange(8, dtype=np.int64)
    with pytest.raises(InvalidParameter, match="2\\*\\*32"):
        H.bounded_histogram(users, grams, 2, NoiseKey.from_seed(1), 0)
    keys, _ = H.bounded_histogram(users, grams, 5, NoiseKey.from_seed(1), 0)  # none over cap
    assert keys.tolist() == list(range(8))
