"""GramEngine.count_levels and dpgpu.ops.levels: every level from the longest one.

Each level is checked against a brute-force count of the windows (Counter),
never against the code under test, on random databases with markers,
l_max cuts, empty and short sequences, and both merges (dense and sorted);
on the CPU path (Numba dense counts and row ends read from the flat items)
and on the GPU path's array code run on NumPy (padded blocks, several of
them, sorted keys, row ends read from the blocks).
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpgpu import SequenceDB
from dpgpu.backend import Backend
from dpgpu.ops import levels
from dpgpu.ops.grams import GramEngine
from shared_data import dataset, needs


def marked_windows(seqs, n, l_max, start, end):
    """Brute-force counts of the length-n windows of the rows GramEngine lays out."""
    c = Counter()
    for s in seqs:
        row = (["$"] if start else []) + list(s)[:l_max]
        if end == "all" or (end and (l_max is None or len(s) <= l_max)):
            row.append("&")
        c.update(tuple(row[i:i + n]) for i in range(len(row) - n + 1))
    return dict(c)


def labelled(db, grams, counts):
    labels = db.vocab.labels + ["&", "$"]
    return {tuple(labels[i] for i in g): int(c)
            for g, c in zip(np.asarray(grams).tolist(), np.asarray(counts).tolist())}


def sequences(alphabet, max_len=12, max_seqs=30):
    return st.lists(st.lists(st.integers(0, alphabet - 1).map(str), max_size=max_len),
                    max_size=max_seqs)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seqs=sequences(4), n_max=st.integers(1, 6), l_max=st.one_of(st.none(), st.integers(1, 7)),
       start=st.booleans(), end=st.sampled_from([False, True, "all"]),
       cells=st.sampled_from([8, 64, 2 ** 20]), dense=st.booleans(), gpu_path=st.booleans())
def test_every_level_equals_brute_force(seqs, n_max, l_max, start, end, cells, dense, gpu_path):
    db = SequenceDB.from_sequences(seqs, vocab=[str(i) for i in range(4)])
    engine = GramEngine(db, l_max, start=start, end=end, max_block_cells=cells, backend="numpy")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(levels, "DENSE_MERGE_BINS", 2 ** 24 if dense else 0)
        if gpu_path:  # the GPU path's array code on NumPy: blocks, no counting kernels
            engine.backend = Backend("cupy", np)
            mp.setattr(engine, "_count_gpu", lambda n, keys=False: None)
            mp.setattr("dpgpu.ops.grams.row_suffix_keys", spy := _Spy(levels.row_suffix_keys))
        got = engine.count_levels(n_max)
    assert len(got) == n_max
    if gpu_path and n_max > 1:
        assert spy.calls == 1  # the row ends came from the padded blocks
    for n, (grams, counts) in enumerate(got, start=1):
        assert grams.shape == (counts.size, n) and grams.dtype == np.int32
        assert counts.dtype == np.int64
        assert labelled(db, grams, counts) == marked_windows(seqs, n, l_max, start, end), n
        keys = grams.astype(np.int64) @ 10 ** np.arange(n - 1, -1, -1)
        assert np.all(np.diff(keys) > 0)  # distinct, in lexicographic order


class _Spy:
    def __init__(self, fn):
        self.fn, self.calls = fn, 0

    def __call__(self, *args):
        self.calls += 1
        return self.fn(*args)


def test_levels_past_every_row_survive_an_empty_bincount(monkeypatch):
    """n_max past every row: some derived levels have no row end.  CuPy's bincount
    (before 14.2) fails on an empty array, so the merge must not call it then."""
    real = np.bincount

    def strict(x, *args, **kwargs):
        if x.size == 0:
            raise ValueError("zero-size array to reduction operation maximum")
        return real(x, *args, **kwargs)

    seqs = [["a", "b"], ["b"], []]
    db = SequenceDB.from_sequences(seqs, vocab=["a", "b"])
    monkeypatch.setattr(np, "bincount", strict)
    got = GramEngine(db, backend="numpy").count_levels(4)
    for n, (grams, counts) in enumerate(got, start=1):
        assert labelled(db, grams, counts) == marked_windows(seqs, n, None, False, False), n


def test_levels_past_exact_keys_are_counted_one_by_one():
    """2**13 items: keys of 5-grams pass 63 bits, so level 5 is hashed and 1..4 derived."""
    rng = np.random.default_rng(3)
    vocab = [str(i) for i in range(2 ** 13)]
    seqs = [[str(x) for x in rng.integers(0, 6, size=k)] for k in rng.integers(0, 9, size=200)]
    db = SequenceDB.from_sequences(seqs, vocab=vocab)
    got = GramEngine(db, backend="numpy").count_levels(6)
    for n, (grams, counts) in enumerate(got, start=1):
        assert labelled(db, grams, counts) == marked_windows(seqs, n, None, False, False), n


def test_the_top_level_is_the_only_pass_over_the_windows(monkeypatch):
    db = SequenceDB.from_sequences([["0", "1", "0"], ["1"], []], vocab=["0", "1"])
    engine = GramEngine(db, backend="numpy")
    counted = []
    real = engine._count_packed
    monkeypatch.setattr(engine, "_count_packed", lambda n: counted.append(n) or real(n))
    engine.count_levels(4)
    assert counted == [4]


def test_empty_database():
    db = SequenceDB.from_sequences([], vocab=["a"])
    for grams, counts in GramEngine(db, backend="numpy").count_levels(3):
        assert counts.size == 0 and grams.shape[0] == 0


@pytest.mark.parametrize("keys,counts,want", [
    ([], None, ([], [])),
    ([4], None, ([4], [1])),
    ([1, 1, 2, 5, 5, 5], None, ([1, 2, 5], [2, 1, 3])),
    ([1, 1, 2, 5, 5, 5], [3, 4, 1, 2, 2, 9], ([1, 2, 5], [7, 1, 13])),
])
def test_run_sums(keys, counts, want):
    got = levels.run_sums(np.array(keys, dtype=np.int64),
                          None if counts is None else np.array(counts, dtype=np.int64))
    assert [a.tolist() for a in got] == [list(w) for w in want]
    assert got[1].dtype == np.int64


@pytest.mark.parametrize("a,b", [
    ({1: 1, 4: 1, 9: 1}, {0: 5, 4: 6, 10: 7}),
    ({}, {2: 3}), ({2: 3}, {}), ({}, {}),
    ({5: 1, 6: 2}, {5: 3, 6: 4}),
    ({3: 1}, {0: 1, 1: 1, 7: 1, 8: 2}),
])
def test_merge_counts_is_the_union_with_summed_counts(a, b):
    def arrays(d):
        keys = np.array(sorted(d), dtype=np.int64)
        return keys, np.array([d[k] for k in keys.tolist()], dtype=np.int64)

    keys, counts = levels.merge_counts(*arrays(a), *arrays(b))
    want = Counter(a) + Counter(b)
    assert keys.tolist() == sorted(want) and counts.tolist() == [want[k] for k in sorted(want)]


def test_row_suffix_keys_pad_short_rows_with_zero_digits():
    tokens = np.array([[0, 1, 2], [1, -1, -1], [-1, -1, -1]], dtype=np.int32)
    lengths = np.array([3, 1, 0], dtype=np.int32)
    got = levels.row_suffix_keys([(tokens, lengths)], 2, 10, np)
    assert got.tolist() == [23, 2, 0]  # digits are symbol + 1, most significant first
    assert levels.row_suffix_keys([], 2, 10, np).shape == (0,)


MSNBC = dataset("msnbc/msnbc990928.seq.gz")


@needs("msnbc/msnbc990928.seq.gz")
def test_msnbc_levels_equal_the_per_level_count(monkeypatch):
    """989,818 sequences with l_max 20: count_levels equals count(n) (itself brute-force
    checked on MSNBC in test_grams.py) for n = 1..5, dense and sorted merges."""
    import dpgpu  # noqa: PLC0415

    db = dpgpu.load(MSNBC)
    engine = GramEngine(db, 20)
    want = [engine.count(n) for n in range(1, 6)]
    for bins in (2 ** 24, 0):
        monkeypatch.setattr(levels, "DENSE_MERGE_BINS", bins)
        got = GramEngine(db, 20).count_levels(5)
        for (g, c), (wg, wc) in zip(got, want):
            assert np.array_equal(g, wg) and np.array_equal(c, wc)


def test_dask_count_levels_equals_the_local_one():
    distributed = pytest.importorskip("dask.distributed")
    from dpgpu.scale.dask import DaskGramEngine  # noqa: PLC0415

    rng = np.random.default_rng(5)
    seqs = [[str(x) for x in rng.integers(0, 5, size=k)] for k in rng.geometric(0.15, size=300)]
    db = SequenceDB.from_sequences(seqs, vocab=[str(i) for i in range(5)])
    want = GramEngine(db, 9, start=True, end=True).count_levels(4)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client:
        engine = DaskGramEngine(db, 9, start=True, end=True, client=client, partitions=3)
        got = engine.count_levels(4)
        one = engine.count(3)
    for (g, c), (wg, wc) in zip(got, want, strict=True):
        assert np.array_equal(g, wg) and np.array_equal(c, wc) and c.dtype == np.int64
    assert np.array_equal(one[0], want[2][0]) and np.array_equal(one[1], want[2][1])
