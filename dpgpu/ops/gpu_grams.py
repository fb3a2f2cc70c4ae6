"""CUDA kernels for gram keys and level histograms (CuPy arrays only).

GPU twins of the ``xp`` reference in :mod:`dpgpu.ops.keys` and
:meth:`dpgpu.ops.grams.GramEngine.next_symbol_histogram`, with the same
results bit for bit.  The kernels are ``dpgpu_packed_keys`` and
``dpgpu_level_histogram`` and ``dpgpu_unpack_counts`` in
``kernels/grams.cu``, the dense histograms and hash tables of
``kernels/gram_counts.cu`` and their read-out in ``kernels/gram_readout.cu``;
the per-element logic is in ``kernels/grams.cuh``.

Importing this module imports neither CuPy nor NVRTC.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..backend import cuda
from .keys import decode_packed, fits_exact


def packed_keys_gpu(tokens: Any, n: int, radix: int):
    """Exact keys ``(N, W-n+1)`` int64 of every length-``n`` window, on the GPU.

    Same result as :func:`dpgpu.ops.keys.packed_keys`: windows overlapping
    padding get keys too.

    Parameters
    ----------
    tokens : cupy.ndarray of int32, shape (N, W)
        Padded symbol ids (padding -1).  Any row stride is accepted; other
        layouts are copied first.
    n : int
        Window length (>= 0).
    radix : int
        Key radix, normally ``n_symbols + 1``.

    Returns
    -------
    cupy.ndarray of int64, shape (N, max(W - n + 1, 0))
    """
    import cupy  # noqa: PLC0415 - GPU path only

    tokens, row_stride = _rows(tokens)
    n_rows, width = tokens.shape
    n_windows = max(width - n + 1, 0)
    keys = cupy.empty((n_rows, n_windows), dtype=cupy.int64)
    if keys.size:
        cuda.launch(cuda.function("grams", "dpgpu_packed_keys"), keys.size,
                    (tokens, np.int64(row_stride), np.int64(n_rows), np.int64(n_windows),
                     np.int32(n), np.int64(radix), keys))
    return keys


#: Dense key spaces up to this many bins are counted in shared memory (4 B a bin: 48 KiB).
SHARED_BINS = 12_288
#: Blocks per multiprocessor of the shared-memory histogram kernel (best of 4, 8, 16 on an H100).
_SHARED_BLOCKS_PER_SM = 8
#: Table entries per warp of the read-out kernels (``kernels/gram_readout.cu``): 16 per lane.
READOUT_CHUNK = 512
#: Kernel name suffix of each counter type.
_SUFFIX = {np.dtype(np.uint32): "u32", np.dtype(np.uint64): "u64", np.dtype(np.int64): "u64"}


def count_grams_gpu(blocks: list, n: int, radix: int, windows: int, dense_space: int,
                    max_bytes: int, *, keys: bool = False):
    """All distinct length-``n`` windows of padded blocks with their counts, on the GPU.

    Key spaces of at most ``dense_space`` bins are counted in a dense
    histogram (:func:`dense_counts_gpu`) and read out in key order with no
    sort, as words ``(key << count_bits) | count``; larger ones, and
    counts too wide to share a word with the key, go through a hash table
    (:func:`hash_counts_gpu`).
    Counters are 32-bit when there are fewer than ``2**32`` windows.

    Parameters
    ----------
    blocks : list of (tokens, lengths)
        Padded CuPy blocks: int32 symbol ids ``0 .. radix-2`` (padding -1)
        and the valid length of each row.
    n : int
        Window length (>= 1); keys must be exact (``radix**n < 2**63``).
    radix : int
        Key radix, normally ``n_symbols + 1``.
    windows : int
        Number of length-``n`` windows inside their sequences in ``blocks``
        (:meth:`dpgpu.ops.grams.GramEngine.n_windows`), exactly: it sizes
        the counters and the hash table, so a smaller number would let
        counts overflow.
    dense_space : int
        Largest key space to count densely.
    max_bytes : int
        Device memory a hash table may take.
    keys : bool
        Return the grams' packed keys (int64, increasing) instead of their
        symbol rows.

    Returns
    -------
    (grams, counts) or None
        ``(U, n)`` int32 grams in lexicographic order (or their keys) and
        their int64 counts; ``None`` when the hash table would need more
        than ``max_bytes`` (the caller then sorts the keys instead).
    """
    import cupy  # noqa: PLC0415 - GPU path only

    space = radix ** n
    count_bits = max(windows, 1).bit_length()
    if space > dense_space or (space - 1).bit_length() + count_bits > 64:
        return hash_counts_gpu(blocks, n, radix, max_bytes, windows, keys=keys)
    hist = cupy.zeros(space, dtype=cupy.uint32 if windows < 2 ** 32 else cupy.uint64)
    for tokens, lengths in blocks:
        dense_counts_gpu(tokens, lengths, n, radix, hist)
    return _unpacked(pack_nonzero(hist, count_bits), count_bits, n, radix, keys)


def dense_counts_gpu(tokens: Any, lengths: Any, n: int, radix: int, counts: Any) -> Any:
    """Add the count of every length-``n`` window inside its sequence to ``counts[key]``.

    One pass over the block: each window's packed key is formed from the
    tokens and counted at once (no key array is stored).  Key spaces of at
    most :data:`SHARED_BINS` bins use a private histogram per block in
    shared memory; larger ones add straight to ``counts``, merging equal
    keys within a warp first so that frequent grams do not serialise on one
    counter.

    Parameters
    ----------
    tokens : cupy.ndarray of int32, shape (N, W)
        Padded symbol ids ``0 .. radix-2`` (padding -1).
    lengths : cupy.ndarray of int, shape (N,)
        Valid symbols per row.
    n : int
        Window length (>= 1); ``radix**n`` must be the size of ``counts``
        and below ``2**31`` (bins are matched as 32-bit ints).
    radix : int
        Key radix, normally ``n_symbols + 1``.
    counts : cupy.ndarray of uint32, uint64 or int64
        C-contiguous histogram to add to.  Atomic additions of integers:
        the result is deterministic.  32-bit counters must not pass 2**32.

    Returns
    -------
    cupy.ndarray
        ``counts``.

    Raises
    ------
    ValueError
        When the key space reaches ``2**31`` or ``counts`` has the wrong
        size, dtype or layout.
    """
    space = radix ** n
    if space >= 2 ** 31:
        raise ValueError(f"dense_counts_gpu: {space} bins; dense histograms hold below 2**31")
    if counts.shape != (space,) or counts.dtype not in _SUFFIX or not counts.flags.c_contiguous:
        raise ValueError("dense_counts_gpu: counts must be C-contiguous uint32, uint64 or "
                         f"int64 of shape ({space},)")
    suffix = _SUFFIX[counts.dtype]
    found = _window_args(tokens, lengths, n, radix)
    if found is None:
        return counts
    total, args = found
    if space <= SHARED_BINS:
        # a block's 32-bit counters see at most total / blocks < 2**32 windows
        blocks = max(_SHARED_BLOCKS_PER_SM * cuda.multiprocessors(), -(-total // 2 ** 31))
        cuda.launch(cuda.function("gram_counts", f"dpgpu_gram_counts_shared_{suffix}"), total,
                    args + (np.int32(space), counts), max_blocks=blocks, shared_mem=4 * space)
    else:
        cuda.launch(cuda.function("gram_counts", f"dpgpu_gram_counts_{suffix}"), total,
                    args + (counts,))
    return counts


def hash_counts_gpu(blocks: list, n: int, radix: int, max_bytes: int, windows: int, *,
                    keys: bool = False):
    """Distinct length-``n`` windows of padded blocks with counts, by hashing.

    Every valid window of every block goes into one open-addressing table
    (``kernels/gram_counts.cu``) in one pass, at most two thirds full; only
    the distinct keys are then sorted, not every window.  When a key and a
    count fit one 64-bit word together, a slot is that word
    (``dpgpu_gram_hash_packed``): the table's nonzero slots, read out in two
    passes (:func:`pack_nonzero`), sort as they are.  Otherwise a slot is a
    (key, count) pair (``dpgpu_gram_hash_counts``).

    Parameters
    ----------
    blocks : list of (tokens, lengths)
        Padded CuPy blocks as in :func:`count_grams_gpu`.
    n : int
        Window length (>= 1); keys must be exact (``radix**n < 2**63``).
    radix : int
        Key radix.
    max_bytes : int
        Device memory the table may take.
    windows : int
        Number of valid windows in ``blocks``, exactly (as in
        :func:`count_grams_gpu`).
    keys : bool
        Return packed keys instead of symbol rows.

    Returns
    -------
    (grams, counts) or None
        As :func:`count_grams_gpu`; ``None`` when a table with room for
        every window would need more than ``max_bytes``.
    """
    import cupy  # noqa: PLC0415 - GPU path only

    most = min(windows, radix ** n)  # distinct keys, at most
    capacity = most + most // 2 + 1  # > most: every probe ends
    count_bits = max(windows, 1).bit_length()
    packed = (radix ** n - 1).bit_length() + count_bits <= 64
    if capacity * (8 if packed else 16) > max_bytes:
        return None
    if packed:
        table = cupy.zeros(capacity, dtype=cupy.uint64)
        extra, kernel = (np.int32(count_bits), table), "dpgpu_gram_hash_packed"
    else:
        table = cupy.full((capacity, 2), -1, dtype=cupy.int64)  # (key, count) pairs
        table[:, 1] = 0
        extra, kernel = (table,), "dpgpu_gram_hash_counts"
    for tokens, lengths in blocks:
        found = _window_args(tokens, lengths, n, radix)
        if found is not None:
            cuda.launch(cuda.function("gram_counts", kernel), found[0],
                        found[1] + (np.int64(capacity),) + extra)
    if packed:
        words = pack_nonzero(table, -1)
        words.sort()
        return _unpacked(words, count_bits, n, radix, keys)
    found = table[cupy.flatnonzero(table[:, 1])]
    order = found[:, 0].argsort()
    return (found[order, 0] if keys else decode_packed(found[order, 0], n, radix)), found[order, 1]


def pack_nonzero(values: Any, index_shift: int) -> Any:
    """The nonzero entries of a counting table in index order, as uint64 words.

    Two passes over chunks of :data:`READOUT_CHUNK` entries, one warp a
    chunk (``kernels/gram_readout.cu``): count each chunk's nonzero entries,
    then write them from the chunk's offset.

    Parameters
    ----------
    values : cupy.ndarray of uint32 or uint64, shape (S,)
        A dense histogram or a hash table of packed slots.
    index_shift : int
        Entry ``i`` is written as ``(i << index_shift) | values[i]``; when
        negative, as ``values[i]`` alone.

    Returns
    -------
    cupy.ndarray of uint64
    """
    import cupy  # noqa: PLC0415 - GPU path only

    suffix = _SUFFIX[values.dtype]
    chunks = -(-values.size // READOUT_CHUNK)
    if chunks == 0:
        return cupy.zeros(0, dtype=cupy.uint64)
    found = cupy.empty(chunks, dtype=cupy.int32)
    head = (values, np.int64(values.size))
    cuda.launch(cuda.function("gram_readout", f"dpgpu_nonzero_chunks_{suffix}"), 32 * chunks,
                head + (found,))
    ends = cupy.cumsum(found, dtype=cupy.int64)
    out = cupy.empty(int(ends[-1]), dtype=cupy.uint64)
    if out.size:
        cuda.launch(cuda.function("gram_readout", f"dpgpu_pack_chunks_{suffix}"), 32 * chunks,
                    head + (ends, np.int32(index_shift), out))
    return out


def unpack_counts(words: Any, count_bits: int, n: int, radix: int):
    """Gram rows and counts of packed words ``(key << count_bits) | count``.

    Parameters
    ----------
    words : cupy.ndarray of uint64, shape (U,)
    count_bits : int
        Low bits holding the count (1 .. 63).
    n : int
        Digits of each key.
    radix : int
        Key radix.

    Returns
    -------
    grams : cupy.ndarray of int32, shape (U, n)
    counts : cupy.ndarray of int64, shape (U,)
    """
    import cupy  # noqa: PLC0415 - GPU path only

    grams = cupy.empty((words.size, n), dtype=cupy.int32)
    counts = cupy.empty(words.size, dtype=cupy.int64)
    if words.size:
        cuda.launch(cuda.function("grams", "dpgpu_unpack_counts"), words.size,
                    (words, np.int64(words.size), np.int32(count_bits), np.int32(n),
                     np.int64(radix), grams, counts))
    return grams, counts


def _unpacked(words: Any, count_bits: int, n: int, radix: int, keys: bool):
    """Gram rows (or keys, when ``keys``) and counts of packed words, increasing."""
    if keys:
        return ((words >> np.uint64(count_bits)).astype(np.int64),
                (words & np.uint64((1 << count_bits) - 1)).astype(np.int64))
    return unpack_counts(words, count_bits, n, radix)


def level_histogram_gpu(tokens: Any, lengths: Any, m: int, sorted_ctx_keys: Any,
                        ctx_order: Any, n_symbols: int, out: Any = None):
    """Counts of each symbol following each context in one padded block, on the GPU.

    For every window of length ``m + 1`` inside its sequence whose
    ``m``-prefix has a packed key in ``sorted_ctx_keys`` (at position ``i``),
    adds 1 to ``out[ctx_order[i], next_symbol]``.

    Parameters
    ----------
    tokens : cupy.ndarray of int32, shape (N, W)
        Padded symbol ids ``0 .. n_symbols-1`` (padding -1).
    lengths : cupy.ndarray of int32, shape (N,)
        Valid symbols per row.
    m : int
        Context length (>= 0); prefix keys must be exact, i.e.
        ``(n_symbols + 1)**m < 2**63``.
    sorted_ctx_keys : cupy.ndarray of int64, shape (F,)
        Packed keys (radix ``n_symbols + 1``) of the contexts, ascending.
    ctx_order : cupy.ndarray of int, shape (F,)
        Row of ``out`` for each sorted key (``argsort`` of the unsorted keys).
    n_symbols : int
        Number of symbol ids.
    out : cupy.ndarray of int64, shape (F, n_symbols), optional
        C-contiguous histogram to add to; a new zero one when omitted.

    Returns
    -------
    cupy.ndarray of int64, shape (F, n_symbols)
        ``out``.  Atomic additions of integers: deterministic.

    Raises
    ------
    ValueError
        When prefix keys of length ``m`` are not exact, or ``out`` has the
        wrong shape, dtype or layout.
    """
    import cupy  # noqa: PLC0415 - GPU path only

    if not fits_exact(m, n_symbols):
        raise ValueError(f"level_histogram_gpu: keys of {m}-grams over {n_symbols} "
                         "symbols do not fit 63 bits")
    n_ctx = sorted_ctx_keys.shape[0]
    if out is None:
        out = cupy.zeros((n_ctx, n_symbols), dtype=cupy.int64)
    elif out.shape != (n_ctx, n_symbols) or out.dtype != cupy.int64 \
            or not out.flags.c_contiguous:
        raise ValueError("level_histogram_gpu: out must be C-contiguous int64 of shape (F, n_symbols)")
    tokens, row_stride = _rows(tokens)
    n_rows, width = tokens.shape
    n_windows = width - m
    if n_windows <= 0 or n_rows == 0 or n_ctx == 0:
        return out
    cuda.launch(cuda.function("grams", "dpgpu_level_histogram"), n_rows * n_windows,
                (tokens, np.int64(row_stride),
                 cupy.ascontiguousarray(lengths, dtype=cupy.int32),
                 np.int64(n_rows), np.int64(n_windows), np.int32(m), np.int64(n_symbols + 1),
                 cupy.ascontiguousarray(sorted_ctx_keys, dtype=cupy.int64),
                 cupy.ascontiguousarray(ctx_order, dtype=cupy.int64),
                 np.int64(n_ctx), np.int32(n_symbols), out))
    return out


def _window_args(tokens: Any, lengths: Any, n: int, radix: int):
    """``(work items, leading arguments)`` of a window kernel over one padded block, or None
    when the block has no length-``n`` window.

    The arguments every ``gram_counts.cu`` kernel starts with: ``tokens``,
    row stride, ``lengths`` (int32), rows, windows per row, ``n``, ``radix``.
    """
    import cupy  # noqa: PLC0415 - GPU path only

    tokens, row_stride = _rows(tokens)
    n_rows, width = tokens.shape
    n_windows = width - n + 1
    if n_windows <= 0 or n_rows == 0:
        return None
    return n_rows * n_windows, (tokens, np.int64(row_stride),
                                cupy.ascontiguousarray(lengths, dtype=cupy.int32),
                                np.int64(n_rows), np.int64(n_windows), np.int32(n),
                                np.int64(radix))


def _rows(tokens: Any):
    """``tokens`` as int32 with unit column stride, and its row stride in elements."""
    import cupy  # noqa: PLC0415 - GPU path only

    if tokens.ndim != 2:
        raise ValueError("tokens must be a 2-D (N, W) array")
    tokens = tokens.astype(cupy.int32, copy=False)
    item = tokens.itemsize
    row_bytes, col_bytes = tokens.strides
    if (col_bytes != item and tokens.shape[1] > 1) or row_bytes % item:
        tokens = cupy.ascontiguousarray(tokens)
        row_bytes = tokens.strides[0]
    return tokens, row_bytes // item
