"""CUDA kernels for gram keys and level histograms (CuPy arrays only).

GPU twins of the ``xp`` reference in :mod:`dpgpu.ops.keys` and
:meth:`dpgpu.ops.grams.GramEngine.next_symbol_histogram`, with the same
results bit for bit.  The kernels are ``dpgpu_packed_keys`` and
``dpgpu_level_histogram`` in ``kernels/grams.cu``; their per-element logic
is in ``kernels/grams.cuh``.

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
