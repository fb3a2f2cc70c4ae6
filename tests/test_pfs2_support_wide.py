"""Wide candidate levels: supports over large vocabularies, and their noise scales.

A group of patterns sharing a prefix (:mod:`dpgpu.eval.subseq_numba`) is
tested pattern by pattern, or, when it is much larger than what is left of
the sequence, from the sequence's items, each looked up among the group's
(``walk_ratio``); both give the same patterns, which brute force decides
here: every choice of positions, no greedy match.  A level's noise scale
that passes the samplers' limit names ``max_candidates``, which bounds it.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest

from dpgpu import SequenceDB
from dpgpu.backend import get_backend
from dpgpu.errors import InvalidParameter
from dpgpu.eval import subseq_numba
from dpgpu.eval.subseq_numba import ext_order, groups_by_first_item, sequence_hits, \
    support_counts
from dpgpu.eval.truth import group_by_prefix
from dpgpu.mechanisms.pfs2 import PreMining, mine
from dpgpu.mechanisms.pfs2 import support as support_module
from dpgpu.mechanisms.pfs2.support import sequence_work, supports
from dpgpu.privacy import PrivacyLedger


def contains(row, pattern):
    """Brute force: some positions of ``row``, in order, spell ``pattern``."""
    return any(tuple(row[i] for i in at) == tuple(pattern)
               for at in combinations(range(len(row)), len(pattern)))


def flat(rows):
    items = np.array([x for r in rows for x in r], dtype=np.int32)
    offsets = np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype(np.int64)
    return items, offsets


def random_case(seed):
    """Short sequences (some empty, items repeated) and patterns in groups both larger and
    smaller than the sequences: every item alone, every item after a few prefixes, and
    random patterns, some twice."""
    rng = np.random.default_rng(seed)
    n_sym = int(rng.integers(2, 40))
    rows = [rng.integers(0, min(n_sym, 6) if rng.random() < 0.3 else n_sym,
                         int(rng.integers(0, 10))).tolist()
            for _ in range(int(rng.integers(1, 40)))]
    pats = [(x,) for x in rng.permutation(n_sym).tolist()]  # one group of n_sym, unsorted
    for _ in range(3):
        pre = tuple(rng.integers(0, n_sym, int(rng.integers(1, 3))).tolist())
        pats += [pre + (x,) for x in range(n_sym)]
    pats += [tuple(rng.integers(0, n_sym, int(rng.integers(1, 4))).tolist()) for _ in range(20)]
    pats += pats[-5:] + [(0,)]  # repeats, in their groups too
    return rows, pats, n_sym, rng.integers(0, 4, len(rows)).astype(np.int64)


@pytest.mark.parametrize("seed", range(8))
def test_supports_walking_the_group_or_the_sequence_equal_brute_force(seed):
    rows, pats, n_sym, weights = random_case(seed)
    items, offsets = flat(rows)
    pre_flat, pre_off, grp_off, ext_item, members = group_by_prefix(pats)
    assert np.diff(grp_off).max() > max(map(len, rows))  # a group larger than any sequence
    want = [sum(int(w) for r, w in zip(rows, weights) if contains(r, pats[i])) for i in members]
    # 0: every group from the sequence's items; ext_item.size: every group pattern by pattern
    for walk_ratio in (0, 1, subseq_numba.WALK_RATIO, ext_item.size):
        for n_chunks in (1, 3):
            got = support_counts(items, offsets, weights, pre_flat, pre_off, grp_off, ext_item,
                                 n_sym, n_chunks, walk_ratio)
            assert got.tolist() == want, walk_ratio


@pytest.mark.parametrize("seed", range(4))
def test_sequence_hits_list_each_contained_pattern_once_on_either_walk(seed):
    rows, pats, n_sym, _ = random_case(seed)
    items, offsets = flat(rows)
    pre_flat, pre_off, grp_off, ext_item, members = group_by_prefix(pats)
    buckets = groups_by_first_item(pre_flat, pre_off, n_sym)
    order = ext_order(grp_off, ext_item)
    last, seen = np.full(n_sym, -1, dtype=np.int64), np.full(n_sym, -1, dtype=np.int64)
    hits = np.empty(ext_item.size, dtype=np.int64)
    for s, row in enumerate(rows):
        want = sorted(e for e in range(ext_item.size) if contains(row, pats[members[e]]))
        for walk_ratio in (0, ext_item.size):
            mark = 2 * s + (walk_ratio > 0)  # a new one each call
            n = sequence_hits(items, offsets[s], offsets[s + 1], last, seen, mark, pre_flat,
                              pre_off, grp_off, ext_item, *buckets, hits, order, walk_ratio)
            assert sorted(hits[:n].tolist()) == want
            assert (last == -1).all()


def test_both_walks_agree_on_a_large_vocabulary():
    """Single items of a 20000-item vocabulary and pairs after its frequent items, over
    sequences that hold few of them: the same supports whichever way each group is walked."""
    rng = np.random.default_rng(11)
    n_sym = 20_000
    lens = rng.integers(0, 25, 3000)
    items = ((rng.zipf(1.4, int(lens.sum())) - 1) % n_sym).astype(np.int32)
    offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    weights = rng.integers(1, 3, lens.size).astype(np.int64)
    top = np.argsort(-np.bincount(items, minlength=n_sym), kind="stable")[:300].tolist()
    pats = [(x,) for x in range(n_sym)] + [(a, b) for a in top[:30] for b in top]
    args = group_by_prefix(pats)[:4]
    by_group = support_counts(items, offsets, weights, *args, n_sym, 4, len(pats))
    by_items = support_counts(items, offsets, weights, *args, n_sym, 4, 0)
    assert by_items.tolist() == by_group.tolist()
    assert support_counts(items, offsets, weights, *args, n_sym, 4).tolist() == by_group.tolist()
    singles = np.zeros(n_sym, dtype=np.int64)  # a single item's support, by hand
    for s in range(lens.size):
        singles[np.unique(items[offsets[s]:offsets[s + 1]])] += weights[s]
    assert by_group[:n_sym].tolist() == singles.tolist()  # group 0 is the single items


def test_ext_order_sorts_each_group_by_item_keeping_pattern_order_among_equals():
    grp_off = np.array([0, 4, 4, 9, 10], dtype=np.int64)
    ext_item = np.array([5, 1, 5, 0, 2, 3, 4, 5, 6, 7], dtype=np.int32)
    assert ext_order(grp_off, ext_item).tolist() == [3, 1, 0, 2, 4, 5, 6, 7, 8, 9]


def test_supports_of_a_public_vocabulary_mostly_unseen():
    """Level 1 of PFS² over a public vocabulary far larger than the data's items: the
    supports of every item, weighted, as a Python count gives them."""
    n_sym = 50_000
    rows = [[7, 3, 7], [], [49_999, 0], [3], [12_345, 3, 7, 12_345]]
    db = SequenceDB(*flat(rows), [f"i{x}" for x in range(n_sym)])
    weights = np.array([2, 5, 1, 3, 4], dtype=np.int64)
    got = supports(db, weights, [(x,) for x in range(n_sym)], get_backend("numpy"))
    want = np.zeros(n_sym, dtype=np.int64)
    want[[0, 3, 7, 12_345, 49_999]] = [1, 2 + 3 + 4, 2 + 4, 4, 1]
    assert got.tolist() == want.tolist()


def test_sequence_work_bounds_each_try_by_the_sequence_not_the_group():
    # one group of 1000 single items: min(1000, WALK_RATIO * 10) steps, plus one
    pre_flat, pre_off, grp_off, _, _ = group_by_prefix([(x,) for x in range(1000)])
    assert sequence_work(pre_flat, pre_off, grp_off, 10) == 1 + 8 * 10
    # prefixes (0,), (0, 1) and (2,), with 3, 100 and 200 patterns, take 1 + 3, 2 + 32 and
    # 1 + 32 steps at 4 items: at each of 4 items the most a first item's groups take (item
    # 0's), or all groups once
    pats = [(0, x) for x in range(3)] + [(0, 1, x) for x in range(100)] \
        + [(2, x) for x in range(200)]
    pre_flat, pre_off, grp_off, _, _ = group_by_prefix(pats)
    assert sequence_work(pre_flat, pre_off, grp_off, 4) == 1 + min(4 * (4 + 34), 4 + 34 + 33)
    # at 1 item: 1 + 3, 2 + 8 and 1 + 8
    assert sequence_work(pre_flat, pre_off, grp_off, 1) == 1 + (4 + 10)


def test_cpu_supports_take_few_calls_on_a_large_vocabulary(monkeypatch):
    """Regression: chunks were cut at CHUNK_WORK // (number of patterns) sequences, so the
    single items of a 10^6-item vocabulary were counted 268 sequences a call, each call
    setting up scratch of the vocabulary's size: 46 calls and 22 s for 20000 sequences."""
    rows = [[x % 5000, (3 * x) % 5000] for x in range(1000)]
    db = SequenceDB(*flat(rows), [str(x) for x in range(5000)])
    calls = []
    kernel = subseq_numba.support_counts
    monkeypatch.setattr(subseq_numba, "support_counts",
                        lambda *args: calls.append(args[1].size - 1) or kernel(*args))
    monkeypatch.setattr(support_module, "CHUNK_WORK", 100 * 17)  # 17 steps a sequence
    monkeypatch.setattr(support_module, "MIN_CHUNK_SEQUENCES", 1)
    got = supports(db, np.ones(1000, dtype=np.int64), [(x,) for x in range(5000)],
                   get_backend("numpy"))
    assert calls == [100] * 10
    want = np.zeros(5000, dtype=np.int64)
    for row in rows:
        want[sorted(set(row))] += 1
    assert got.tolist() == want.tolist()


@pytest.mark.parametrize("eps_prune, eps_support", [(1e-14, 1.0), (10.0, 1e-14)])
def test_a_levels_noise_past_the_samplers_limit_names_max_candidates(eps_prune, eps_support):
    """60 candidates (and 60 survivors) over a budget of 1e-14 need a scale of 6e15, past
    2**52; at 1e-14 a sensitivity of 45 (2**52 / 1e14 = 45.04) is the most drawable."""
    labels = [str(i) for i in range(60)]
    db = SequenceDB.from_sequences([labels] * 50, vocab=labels)
    ledger = PrivacyLedger(eps_prune + eps_support, max_sampling_delta=1e-6, seed=1)
    with pytest.raises(InvalidParameter,
                       match=r"^max_candidates: 60 makes the noise scale 6e\+15 .* at this "
                             r"epsilon max_candidates can be at most 45: lower max_candidates"):
        mine(db, ledger, PreMining(50, 60, 1), threshold=0.1, eps_prune=eps_prune,
             eps_support=eps_support, zeta=0.3, max_candidates=60, backend=get_backend("numpy"))
