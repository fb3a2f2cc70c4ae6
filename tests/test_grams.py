"""Exact gram engine against brute force (hypothesis-generated data and all of MSNBC)."""

from __future__ import annotations

import gzip
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpgpu import SequenceDB
from dpgpu.ops import keys as K
from dpgpu.ops.grams import GramEngine
from shared_data import dataset, needs

MSNBC = dataset("msnbc/msnbc990928.seq.gz")


def brute_grams(seqs, n, l_max=None):
    c = Counter()
    for s in seqs:
        s = list(s)[:l_max] if l_max else list(s)
        c.update(tuple(s[i:i + n]) for i in range(len(s) - n + 1))
    return dict(c)


def marked(seqs, l_max, start, end):
    out = []
    for s in seqs:
        cut = list(s)[:l_max] if l_max else list(s)
        row = (["$"] if start else []) + cut
        if end and (l_max is None or len(s) <= l_max):
            row.append("&")
        out.append(row)
    return out


def sequences(alphabet_size, max_len=12, max_seqs=25):
    item = st.integers(0, alphabet_size - 1).map(str)
    return st.lists(st.lists(item, max_size=max_len), max_size=max_seqs)


def vocab_of(alphabet_size):
    return [str(i) for i in range(alphabet_size)]


common = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@common
@given(seqs=sequences(1), n=st.integers(1, 5), l_max=st.one_of(st.none(), st.integers(1, 8)))
def test_alphabet_of_one(seqs, n, l_max):
    db = SequenceDB.from_sequences(seqs, vocab=vocab_of(1))
    assert db.gram_counts(n, l_max=l_max) == brute_grams(seqs, n, l_max)


@common
@given(seqs=sequences(3), n=st.integers(1, 5), l_max=st.one_of(st.none(), st.integers(1, 8)))
def test_small_alphabet_repeated_items(seqs, n, l_max):
    db = SequenceDB.from_sequences(seqs, vocab=vocab_of(3))
    assert db.gram_counts(n, l_max=l_max) == brute_grams(seqs, n, l_max)


@common
@given(seqs=sequences(100_000), n=st.integers(1, 5), l_max=st.one_of(st.none(), st.integers(1, 8)))
def test_alphabet_of_100000_uses_hashes_exactly(seqs, n, l_max):
    db = SequenceDB.from_sequences(seqs, vocab=vocab_of(100_000))
    assert db.gram_counts(n, l_max=l_max) == brute_grams(seqs, n, l_max)


@common
@given(seqs=sequences(100, max_len=200, max_seqs=8), n=st.integers(1, 4))
def test_long_sequences(seqs, n):
    db = SequenceDB.from_sequences(seqs, vocab=vocab_of(100))
    assert db.gram_counts(n) == brute_grams(seqs, n)


@common
@given(seqs=sequences(4), n=st.integers(1, 4), l_max=st.one_of(st.none(), st.integers(1, 6)),
       start=st.booleans(), end=st.booleans())
def test_markers(seqs, n, l_max, start, end):
    db = SequenceDB.from_sequences(seqs, vocab=vocab_of(4))
    grams, counts = GramEngine(db, l_max, start=start, end=end).count(n)
    labels = db.vocab.labels + ["&", "$"]
    got = {tuple(labels[i] for i in g): int(c) for g, c in zip(grams.tolist(), counts.tolist())}
    assert got == brute_grams(marked(seqs, l_max, start, end), n)


@common
@given(seqs=sequences(5), m=st.integers(0, 3), start=st.booleans(),
       l_max=st.one_of(st.none(), st.integers(1, 6)), data=st.data())
def test_next_symbol_histogram(seqs, m, start, l_max, data):
    db = SequenceDB.from_sequences(seqs, vocab=vocab_of(5))
    rows = marked(seqs, l_max, start, True)
    symbols = db.vocab.labels + ["&", "$"]
    ctx = data.draw(st.lists(st.lists(st.sampled_from(symbols), min_size=m, max_size=m),
                             min_size=1, max_size=6, unique_by=tuple))
    hist = GramEngine(db, l_max, start=start, end=True).next_symbol_histogram(
        np.array([[symbols.index(x) for x in c] for c in ctx], dtype=np.int32).reshape(len(ctx), m))
    after = brute_grams(rows, m + 1)
    for f, c in enumerate(ctx):
        expect = [after.get(tuple(c) + (x,), 0) for x in symbols]
        assert hist[f].tolist() == expect


@common
@given(seqs=sequences(3, max_len=9), m=st.integers(0, 4), start=st.booleans(),
       end=st.sampled_from([False, True, "all"]), l_max=st.one_of(st.none(), st.integers(1, 5)),
       n_ctx=st.integers(1, 40), seed=st.integers(0, 2 ** 32 - 1))
def test_next_symbol_histogram_on_every_row_layout(seqs, m, start, end, l_max, n_ctx, seed):
    """Brute force over markers, cuts and (on the CPU) the context table's probing.

    Contexts are drawn from every symbol, so many match no window and some
    windows match none; ``end="all"`` puts '&' after cut rows too.
    """
    db = SequenceDB.from_sequences(seqs, vocab=vocab_of(3))
    engine = GramEngine(db, l_max, start=start, end=end)
    rng = np.random.default_rng(seed)
    contexts = np.unique(rng.integers(0, engine.n_symbols, size=(n_ctx, m)), axis=0)
    contexts = contexts[rng.permutation(len(contexts))].astype(np.int32)  # any order
    rows = []
    for s in seqs:
        cut = list(s)[:l_max] if l_max else list(s)
        ends = end == "all" or (end and (l_max is None or len(s) <= l_max))
        rows.append((["$"] if start else []) + cut + (["&"] if ends else []))
    after = brute_grams(rows, m + 1)
    symbols = db.vocab.labels + ["&", "$"]
    expect = [[after.get(tuple(symbols[i] for i in c) + (x,), 0) for x in symbols]
              for c in contexts.reshape(len(contexts), m).tolist()]
    got = engine.next_symbol_histogram(contexts.reshape(len(contexts), m))
    assert got.tolist() == expect


def test_context_table_probes_past_collisions_and_keeps_first_index():
    from dpgpu.ops.grams_numba import find_index, key_table

    keys = np.array([7, 2 ** 40 + 3, 0, 7, 99, 12345678901], dtype=np.int64)
    for bits in (3, 4, 8):  # 3: six keys in eight slots, probing all the way
        slot_keys, slot_index = key_table(keys, bits)
        assert sorted(slot_keys[slot_keys >= 0].tolist()) == sorted(set(keys.tolist()))
        for i, key in enumerate(keys.tolist()):
            assert find_index(slot_keys, slot_index, bits, key) == keys.tolist().index(key), (bits, i)
        for absent in (1, 8, 2 ** 40, 98):
            assert find_index(slot_keys, slot_index, bits, absent) == -1


def test_hash_collisions_are_detected_and_counted_exactly(monkeypatch, caplog):
    """With a hash that sends every window to 0, nothing may be merged."""
    seqs = [["1", "2", "3", "4", "5"], ["5", "4", "3", "2", "1"], ["1", "2", "3", "4", "5"], []]
    db = SequenceDB.from_sequences(seqs, vocab=vocab_of(100_000))
    assert not K.fits_exact(4, db.vocab.size + 2)
    monkeypatch.setattr(K, "hashed_keys", lambda tokens, n: K.array_module(tokens).zeros(
        (tokens.shape[0], max(tokens.shape[1] - n + 1, 0)), dtype=np.uint64))
    with caplog.at_level("DEBUG", logger="dpgpu"):
        assert db.gram_counts(4) == brute_grams(seqs, 4)
    assert "collision" in caplog.text
    engine = GramEngine(db)
    # one context: windows whose (fake) hash matches it are compared item by item
    one = engine.next_symbol_histogram(np.array([[1, 2, 3, 4]]))
    assert one[0, 5] == 2 and one.sum() == 2
    # two contexts with the same hash: matched exactly instead
    two = engine.next_symbol_histogram(np.array([[1, 2, 3, 4], [5, 4, 3, 2]]))
    assert two[0, 5] == 2 and two[1, 1] == 1 and two.sum() == 3


def test_padded_never_pads_to_the_longest():
    db = SequenceDB.from_sequences([["1"] * 1000, ["2"]] + [["3", "4"]] * 50)
    tokens, lengths = db.padded(3, end=True)
    assert tokens.shape == (52, 4)
    assert tokens[0].tolist() == [0, 0, 0, -1]  # cut: no end marker
    assert tokens[1].tolist() == [1, 4, -1, -1]
    assert lengths[:3].tolist() == [3, 2, 3]
    engine = GramEngine(db)
    assert max(t.shape[1] for t, _ in engine.blocks) == 1000
    assert sum(t.size for t, _ in engine.blocks) < 2 * (1000 + 1 + 100)


def _msnbc_rows():
    with gzip.open(MSNBC, "rt") as f:
        lines = f.read().split("\n")
    start = lines.index("% Sequences:") + 2
    return [line.split() for line in lines[start:] if line.strip()]


@needs("msnbc/msnbc990928.seq.gz")
def test_msnbc_all_grams_n1_to_5_equal_brute_force():
    import dpgpu

    rows = _msnbc_rows()
    assert len(rows) == 989_818
    db = dpgpu.load(MSNBC)
    engine = GramEngine(db)
    for n in range(1, 6):
        grams, counts = engine.count(n)
        got = {tuple(db.vocab.labels[i] for i in g): c
               for g, c in zip(grams.tolist(), counts.tolist())}
        assert got == brute_grams(rows, n), n


def test_tiny_blocks_give_the_same_counts_and_histograms():
    seqs = [["1", "2", "3", "1"], ["2"], ["3", "3", "3", "3", "3", "3"], [], ["1", "2"]] * 7
    db = SequenceDB.from_sequences(seqs, vocab=vocab_of(4))
    whole = GramEngine(db, 5, start=True, end="all")
    tiny = GramEngine(db, 5, start=True, end="all", max_block_cells=8)
    assert len(tiny.blocks) > len(whole.blocks)
    for n in range(1, 5):
        a, b = whole.count(n), tiny.count(n)
        assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    ctx = np.array([[1], [3], [5]], dtype=np.int32)  # '1', '3', '$'
    assert np.array_equal(whole.next_symbol_histogram(ctx), tiny.next_symbol_histogram(ctx))


@pytest.mark.parametrize("values", [[], [5], [3, 1, 3, 2, 1], [-4, 7, 7, -4, 0, 2 ** 40]])
def test_sorted_unique_equals_numpy_unique(values):
    from dpgpu.ops.keys import sorted_unique  # noqa: PLC0415

    a = np.array(values, dtype=np.int64).reshape(-1, 1)
    got = sorted_unique(a)
    assert got.dtype == np.int64 and got.tolist() == np.unique(a).tolist()


@pytest.mark.parametrize("span,size", [(1, 0), (5, 40), (100, 13), (10 ** 9, 50)])
def test_sorted_unique_ints_by_mask_or_by_sort(span, size):
    """Dense values go through a mask, sparse ones through a sort: both give numpy.unique."""
    from dpgpu.ops.keys import sorted_unique_ints  # noqa: PLC0415

    values = np.random.default_rng(size).integers(0, span, size).astype(np.int32)
    got = sorted_unique_ints(values)
    assert got.dtype == np.int64 and got.tolist() == np.unique(values).tolist()
