"""CUDA kernels for gram keys and level histograms (CuPy arrays only).

GPU twins of the ``xp`` reference in :mod:`dpgpu.ops.keys` and
:meth:`dpgpu.ops.grams.GramEngine.next_symbol_histogram`, with the same
results bit for bit.  The kernels are ``dpgpu_packed_keys`` and
``dpgpu_level_histogram`` in ``kernels/grams.cu`` and the dense histograms
of ``kernels/gram_counts.cu``; their per-element logic is in
``kernels/grams.cuh``.

Importing this module imports neither CuPy nor NVRTC.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..backend import cuda
from .keys import fits_exact


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
#: Blocks per multiprocessor of the shared-memory histogram kernel.
_SHARED_BLOCKS_PER_SM = 4


def dense_counts_gpu(tokens: Any, lengths: Any, n: int, radix: int, counts: Any) -> Any:
    """Add the count of every length-``n`` window inside its sequence to ``counts[key]``.

    One pass over the block: each window's packed key is formed from the
    tokens and counted at once (no key array is stored).  Key spaces of at
    most :data:`SHARED_BINS` bins use a private histogram per block in
    shared memory; larger ones add straight to ``counts``.  Both merge equal
    keys within a warp first, so frequent grams do not serialise on one
    counter.

    Parameters
    ----------
    tokens : cupy.ndarray of int32, shape (N, W)
        Padded symbol ids ``0 .. radix-2`` (padding -1).
    lengths : cupy.ndarray of int, shape (N,)
        Valid symbols per row.
    n : int
        Window length (>= 1); ``radix**n`` must be the size of ``counts``.
    radix : int
        Key radix, normally ``n_symbols + 1``.
    counts : cupy.ndarray of int64, shape (radix**n,)
        C-contiguous histogram to add to.  Atomic additions of integers:
        the result is deterministic.

    Returns
    -------
    cupy.ndarray
        ``counts``.

    Raises
    ------
    ValueError
        When ``counts`` has the wrong size, dtype or layout.
    """
    import cupy  # noqa: PLC0415 - GPU path only

    space = radix ** n
    if counts.shape != (space,) or counts.dtype != cupy.int64 or not counts.flags.c_contiguous:
        raise ValueError(f"dense_counts_gpu: counts must be C-contiguous int64 of shape ({space},)")
    tokens, row_stride = _rows(tokens)
    n_rows, width = tokens.shape
    n_windows = width - n + 1
    if n_windows <= 0 or n_rows == 0:
        return counts
    total = n_rows * n_windows
    args = (tokens, np.int64(row_stride), cupy.ascontiguousarray(lengths, dtype=cupy.int32),
            np.int64(n_rows), np.int64(n_windows), np.int32(n), np.int64(radix))
    if space <= SHARED_BINS:
        # a block's 32-bit counters see at most total / blocks < 2**32 windows
        blocks = max(_SHARED_BLOCKS_PER_SM * cuda.multiprocessors(), -(-total // 2 ** 31))
        cuda.launch(cuda.function("gram_counts", "dpgpu_gram_counts_shared"), total,
                    args + (np.int32(space), counts), max_blocks=blocks, shared_mem=4 * space)
    else:
        cuda.launch(cuda.function("gram_counts", "dpgpu_gram_counts"), total, args + (counts,))
    return counts


def hash_counts_gpu(blocks: list, n: int, radix: int, max_bytes: int):
    """Distinct packed keys of length-``n`` windows over padded blocks, with counts, by hashing.

    Every valid window of every block goes into one open-addressing table
    (``kernels/gram_counts.cu``, ``dpgpu_gram_hash_counts``) in one pass;
    only the distinct keys are then sorted, not every window.

    Parameters
    ----------
    blocks : list of (tokens, lengths)
        Padded CuPy blocks as in :func:`dense_counts_gpu`.
    n : int
        Window length (>= 1); keys must be exact (``radix**n < 2**63``).
    radix : int
        Key radix.
    max_bytes : int
        Device memory the table may take.

    Returns
    -------
    (keys, counts) or None
        Ascending int64 keys and their int64 counts; ``None`` when a table
        with room for every window would need more than ``max_bytes``.
    """
    import cupy  # noqa: PLC0415 - GPU path only

    windows = sum(int(cupy.maximum(lengths.astype(cupy.int64) - (n - 1), 0).sum())
                  for _, lengths in blocks)
    space = radix ** n
    most = min(windows, space)  # distinct keys, at most
    capacity = 1 << most.bit_length()  # > most: every probe ends
    if capacity < 2 * most and 32 * capacity <= max_bytes:
        capacity *= 2  # at most half full where memory allows, so probes stay short
    if capacity * 16 > max_bytes:
        return None
    table = cupy.full((capacity, 2), -1, dtype=cupy.int64)  # (key, count) pairs
    table[:, 1] = 0
    for tokens, lengths in blocks:
        tokens, row_stride = _rows(tokens)
        n_rows, width = tokens.shape
        n_windows = width - n + 1
        if n_windows <= 0 or n_rows == 0:
            continue
        cuda.launch(cuda.function("gram_counts", "dpgpu_gram_hash_counts"), n_rows * n_windows,
                    (tokens, np.int64(row_stride),
                     cupy.ascontiguousarray(lengths, dtype=cupy.int32), np.int64(n_rows),
                     np.int64(n_windows), np.int32(n), np.int64(radix),
                     np.int64(capacity - 1), table))
    found = table[cupy.flatnonzero(table[:, 1])]
    return _sorted_pairs(found[:, 0], found[:, 1], (space - 1).bit_length(),
                         max(windows, 1).bit_length())


def _sorted_pairs(keys: Any, counts: Any, key_bits: int, count_bits: int):
    """``(keys, counts)`` in ascending key order (keys distinct and non-negative).

    When a key and a count fit 63 bits together they are packed into one
    int64 and sorted once; otherwise the keys are argsorted and both gathered.
    """
    if key_bits + count_bits <= 63:
        packed = (keys << count_bits) | counts
        packed.sort()
        return packed >> count_bits, packed & ((1 << count_bits) - 1)
    order = keys.argsort()
    return keys[order], counts[order]


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
