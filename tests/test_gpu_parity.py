"""CUDA gram kernels against the NumPy reference, full size, on a real GPU.

Run with ``pytest -m gpu`` on a machine with a usable CUDA GPU; skipped elsewhere.
"""

from __future__ import annotations


import numpy as np
import pytest

import dpgpu
from dpgpu import SequenceDB
from dpgpu.backend import cuda
from dpgpu.ops import keys as K
from dpgpu.ops.gpu_grams import (SHARED_BINS, dense_counts_gpu, hash_counts_gpu,
                                 level_histogram_gpu, pack_nonzero, packed_keys_gpu,
                                 unpack_counts)
from dpgpu.ops.grams import GramEngine
from shared_data import dataset

pytestmark = pytest.mark.gpu

SHARED_MSNBC = dataset("msnbc/msnbc990928.seq.gz")


@pytest.fixture(scope="module")
def cp():
    return pytest.importorskip("cupy")


@pytest.fixture(scope="module")
def msnbc():
    """MSNBC (bundled copy, else the shared one), else random data of a similar shape."""
    for path in (dpgpu.demo_path(), SHARED_MSNBC):
        if path.exists():
            return dpgpu.load(path)
    rng = np.random.default_rng(0)
    lens = np.minimum(rng.geometric(0.21, size=200_000), 500)
    items = rng.integers(0, 17, size=int(lens.sum()))
    offsets = np.concatenate([[0], np.cumsum(lens)])
    return SequenceDB(items, offsets, dpgpu.Vocabulary([str(i) for i in range(17)]))


def random_block(rng, n_rows, width, n_symbols):
    tokens = rng.integers(0, n_symbols, size=(n_rows, width), dtype=np.int32)
    lengths = rng.integers(0, width + 1, size=n_rows).astype(np.int32)
    tokens[np.arange(width)[None, :] >= lengths[:, None]] = -1
    return tokens, lengths


def distinct_contexts(tokens, lengths, m, n_symbols):
    """All distinct m-grams present, plus one absent context (when m > 0)."""
    if m == 0:
        return np.zeros((1, 0), dtype=np.int32)
    n_win = tokens.shape[1] - m + 1
    r, j = np.nonzero(K.window_valid(lengths, m, n_win))
    present = np.unique(tokens[r[:, None], j[:, None] + np.arange(m)], axis=0)
    absent = np.full((1, m), n_symbols, dtype=np.int32)  # id out of range: never present
    return np.concatenate([present, absent]).astype(np.int32)


def reference_histogram(tokens, lengths, m, contexts, n_symbols):
    """NumPy oracle for one block: the exact-key step of ``next_symbol_histogram``."""
    radix = n_symbols + 1
    ctx_keys = K.rows_keys(contexts, radix, True)
    order = np.argsort(ctx_keys)
    srt = ctx_keys[order]
    out = np.zeros((len(contexts), n_symbols), dtype=np.int64)
    n_win = tokens.shape[1] - m
    if n_win <= 0:
        return out
    r, j = np.nonzero(K.window_valid(lengths, m + 1, n_win))
    wk = K.packed_keys(tokens, m, radix)[r, j]
    pos = np.minimum(np.searchsorted(srt, wk), len(srt) - 1)
    hit = srt[pos] == wk
    flat = order[pos[hit]] * n_symbols + tokens[r[hit], j[hit] + m]
    return np.bincount(flat, minlength=out.size).reshape(out.shape)


def gpu_histogram(cp, tokens, lengths, m, contexts, n_symbols):
    ctx_keys = K.rows_keys(cp.asarray(contexts), n_symbols + 1, True)
    order = cp.argsort(ctx_keys)
    return level_histogram_gpu(cp.asarray(tokens), cp.asarray(lengths), m, ctx_keys[order],
                               order, n_symbols).get()


@pytest.mark.parametrize("n,n_symbols", [(1, 20), (2, 20), (3, 20), (5, 20), (8, 9),
                                         (3, 2 ** 21 - 2), (5, 2 ** 20)])
def test_packed_keys_parity(cp, n, n_symbols):
    rng = np.random.default_rng(n)
    tokens, _ = random_block(rng, 20_011, 203, n_symbols)
    radix = n_symbols + 1
    dev = cp.asarray(tokens)
    expected = K.packed_keys(tokens, n, radix)
    first = packed_keys_gpu(dev, n, radix).get()
    np.testing.assert_array_equal(first, expected)
    np.testing.assert_array_equal(packed_keys_gpu(dev, n, radix).get(), first)  # deterministic
    np.testing.assert_array_equal(K.packed_keys(dev, n, radix).get(), expected)  # dispatch


@pytest.mark.parametrize("view", ["head", "every_other_column", "reversed_rows"])
def test_packed_keys_views(cp, view):
    rng = np.random.default_rng(5)
    tokens, _ = random_block(rng, 3_001, 77, 30)
    take = {"head": lambda a: a[:, :-1], "every_other_column": lambda a: a[:, ::2],
            "reversed_rows": lambda a: a[::-1]}[view]
    np.testing.assert_array_equal(packed_keys_gpu(take(cp.asarray(tokens)), 3, 31).get(),
                                  K.packed_keys(take(tokens), 3, 31))


def test_packed_keys_empty(cp):
    assert packed_keys_gpu(cp.zeros((0, 9), dtype=cp.int32), 3, 5).shape == (0, 7)
    assert packed_keys_gpu(cp.zeros((4, 2), dtype=cp.int32), 3, 5).shape == (4, 0)


@pytest.mark.parametrize("m", [0, 1, 2, 3, 4])
def test_level_histogram_parity(cp, m):
    rng = np.random.default_rng(10 + m)
    n_symbols = 19
    tokens, lengths = random_block(rng, 50_021, 41, n_symbols)
    contexts = distinct_contexts(tokens, lengths, m, n_symbols)
    expected = reference_histogram(tokens, lengths, m, contexts, n_symbols)
    first = gpu_histogram(cp, tokens, lengths, m, contexts, n_symbols)
    np.testing.assert_array_equal(first, expected)
    np.testing.assert_array_equal(gpu_histogram(cp, tokens, lengths, m, contexts, n_symbols),
                                  first)
    assert expected.sum() > 0


def test_level_histogram_one_bin(cp):
    """6.3 million atomic additions to one counter."""
    tokens = np.zeros((100_000, 64), dtype=np.int32)
    lengths = np.full(100_000, 64, dtype=np.int32)
    got = gpu_histogram(cp, tokens, lengths, 1, np.zeros((1, 1), dtype=np.int32), 3)
    np.testing.assert_array_equal(got, [[100_000 * 63, 0, 0]])


def test_level_histogram_accumulates(cp):
    rng = np.random.default_rng(3)
    tokens, lengths = random_block(rng, 1_000, 30, 5)
    contexts = distinct_contexts(tokens, lengths, 2, 5)
    ctx_keys = K.rows_keys(cp.asarray(contexts), 6, True)
    order = cp.argsort(ctx_keys)
    out = cp.zeros((len(contexts), 5), dtype=cp.int64)
    for _ in range(2):
        level_histogram_gpu(cp.asarray(tokens), cp.asarray(lengths), 2, ctx_keys[order],
                            order, 5, out=out)
    np.testing.assert_array_equal(out.get(), 2 * reference_histogram(tokens, lengths, 2,
                                                                     contexts, 5))


@pytest.mark.parametrize("n,n_symbols,shared", [(1, 3, True), (2, 17, True), (3, 22, True),
                                                (3, 30, False), (2, 200, False)])
def test_dense_counts_parity(cp, n, n_symbols, shared):
    """Shared-memory (radix**n <= SHARED_BINS) and global histograms equal a NumPy count."""
    rng = np.random.default_rng(n * n_symbols)
    tokens, lengths = random_block(rng, 20_000, 40, n_symbols)
    tokens[:5_000] = np.where(tokens[:5_000] >= 0, 0, -1)  # a hot gram: 0 0 .. 0
    radix = n_symbols + 1
    n_win = tokens.shape[1] - n + 1
    r, j = np.nonzero(K.window_valid(lengths, n, n_win))
    keys = K.packed_keys(tokens, n, radix)[r, j]
    expected = np.bincount(keys, minlength=radix ** n)
    for dtype in (cp.int64, cp.uint32):  # 64- and 32-bit counters
        got = cp.zeros(radix ** n, dtype=dtype)
        dense_counts_gpu(cp.asarray(tokens), cp.asarray(lengths), n, radix, got)
        np.testing.assert_array_equal(got.get(), expected)
        wide = np.concatenate([tokens, np.ones((tokens.shape[0], 3), dtype=np.int32)], axis=1)
        dense_counts_gpu(cp.asarray(wide)[:, :40], cp.asarray(lengths), n, radix, got)  # stride 43
        np.testing.assert_array_equal(got.get(), 2 * expected)  # accumulates, deterministic
    assert (radix ** n <= SHARED_BINS) == shared


def test_dense_counts_one_bin(cp):
    """6.4 million windows of one gram: shared-memory atomics on one bin and the per-block
    counters add up."""
    tokens = cp.zeros((100_000, 64), dtype=cp.int32)
    got = cp.zeros(2, dtype=cp.int64)
    dense_counts_gpu(tokens, cp.full(100_000, 64, dtype=cp.int32), 1, 2, got)
    np.testing.assert_array_equal(got.get(), [0, 6_400_000])


@pytest.mark.parametrize("n,n_symbols,packed", [(4, 150, True), (5, 40, True), (3, 3000, True),
                                                (5, 3000, False)])
def test_hash_counts_equal_the_engine_on_numpy(cp, n, n_symbols, packed):
    """Key spaces too large to hold densely: one hash-table pass over every block.

    Keys and counts share one word where they fit 64 bits, else a slot is a pair.
    """
    rng = np.random.default_rng(n + n_symbols)
    zipf = np.minimum(rng.zipf(1.3, size=400_000), n_symbols) - 1  # hot grams and a long tail
    lens = rng.geometric(0.1, size=30_000)
    offsets = np.concatenate([[0], np.cumsum(lens)])
    vocab = dpgpu.Vocabulary([str(i) for i in range(n_symbols)])
    db = SequenceDB(zipf[:offsets[-1]], offsets, vocab)
    gpu = GramEngine(db, 30, start=True, backend="cupy", max_block_cells=50_000)
    assert len(gpu.blocks) > 3 and gpu.radix ** n > 2 ** 27
    grams, counts = GramEngine(db, 30, start=True, backend="numpy").count(n)
    windows = int(counts.sum())
    assert ((gpu.radix ** n - 1).bit_length() + windows.bit_length() <= 64) == packed
    found = hash_counts_gpu(gpu.blocks, n, gpu.radix, 2 ** 34, windows)
    assert found is not None
    np.testing.assert_array_equal(found[0].get(), grams)
    np.testing.assert_array_equal(found[1].get(), counts)
    got_grams, got_counts = gpu.count(n)
    np.testing.assert_array_equal(got_grams.get(), grams)
    np.testing.assert_array_equal(got_counts.get(), counts)
    assert hash_counts_gpu(gpu.blocks, n, gpu.radix, 1024, windows) is None  # too big: caller sorts


@pytest.mark.parametrize("dtype", ["uint32", "uint64"])
def test_dense_read_out_in_key_order(cp, dtype):
    """Both read-out passes on a large histogram: every nonzero bin, in order, with its count."""
    rng = np.random.default_rng(5)
    hist = np.where(rng.random(3_000_017) < 0.01, rng.integers(1, 2 ** 30, size=3_000_017), 0)
    words = pack_nonzero(cp.asarray(hist.astype(dtype)), 31).get()
    keys = np.flatnonzero(hist)
    np.testing.assert_array_equal(words, (keys.astype(np.uint64) << np.uint64(31))
                                  | hist[keys].astype(np.uint64))
    grams, counts = unpack_counts(cp.asarray(words), 31, 3, 145)
    np.testing.assert_array_equal(grams.get(), K.decode_packed(keys, 3, 145))
    np.testing.assert_array_equal(counts.get(), hist[keys])


def test_module_memoised(cp):
    assert cuda.module("grams") is cuda.module("grams")


@pytest.mark.parametrize("l_max,markers", [(None, True), (20, False)])
def test_engine_backends_agree(msnbc, l_max, markers):
    engines = {b: GramEngine(msnbc, l_max, start=markers, end=markers, backend=b)
               for b in ("numpy", "cupy")}
    for m in range(4):
        grams, counts = engines["numpy"].count(m + 1)
        got_grams, got_counts = engines["cupy"].count(m + 1)
        np.testing.assert_array_equal(got_grams.get(), grams)
        np.testing.assert_array_equal(got_counts.get(), counts)
        contexts = engines["numpy"].count(m)[0] if m else np.zeros((1, 0), dtype=np.int32)
        expected = engines["numpy"].next_symbol_histogram(contexts)
        for _ in range(2):  # deterministic
            got = engines["cupy"].next_symbol_histogram(engines["cupy"].xp.asarray(contexts))
            np.testing.assert_array_equal(got.get(), expected)


@pytest.mark.parametrize("l_max,markers,path", [(None, True, "dense"), (20, False, "dense"),
                                                (20, True, "sorted")])
def test_count_levels_backends_agree(msnbc, monkeypatch, l_max, markers, path):
    """Every level of count_levels on CuPy equals NumPy's: the top level's keys from the
    dense kernel and dense merges, or (path "sorted") from the hash table and sorted
    merges (levels.merge_counts)."""
    from dpgpu.ops import grams, levels  # noqa: PLC0415

    want = GramEngine(msnbc, l_max, start=markers, end=markers, backend="numpy").count_levels(5)
    if path == "sorted":
        monkeypatch.setattr(grams, "_gpu_dense_space", lambda backend: 0)
        monkeypatch.setattr(levels, "DENSE_MERGE_BINS", 0)
    got = GramEngine(msnbc, l_max, start=markers, end=markers, backend="cupy").count_levels(5)
    for (g, c), (wg, wc) in zip(got, want, strict=True):
        np.testing.assert_array_equal(g.get(), wg)
        np.testing.assert_array_equal(c.get(), wc)


@pytest.mark.parametrize("n_symbols", [3, 2 ** 13])
def test_count_levels_on_short_rows_and_wide_keys(cp, n_symbols):
    """n_max past every row (levels with no row end: CuPy's bincount of nothing) and, with
    2**13 symbols, a top level below n_max whose longer levels are hashed."""
    rng = np.random.default_rng(n_symbols)
    rows = [[str(x) for x in rng.integers(0, 3, size=k)] for k in rng.integers(0, 4, size=300)]
    db = SequenceDB.from_sequences(rows, vocab=[str(i) for i in range(n_symbols)])
    want = GramEngine(db, end=True, backend="numpy").count_levels(6)
    got = GramEngine(db, end=True, backend="cupy").count_levels(6)
    for (g, c), (wg, wc) in zip(got, want, strict=True):
        np.testing.assert_array_equal(cp.asnumpy(g), wg)
        np.testing.assert_array_equal(cp.asnumpy(c), wc)


def test_multiprocessors_is_the_device_count(cp):
    assert cuda.multiprocessors() == cp.cuda.Device().attributes["MultiProcessorCount"] > 0
    assert cuda.multiprocessors() == cuda.multiprocessors()  # the cached answer
