"""Integer keys of contiguous windows (n-grams) of a padded token tensor.

Symbols are ids ``0 .. n_symbols-1`` (items, then the end marker ``&`` and
the start marker ``$``); padding is -1.  A window of ``n`` symbols gets

* an **exact packed key** ``sum((s_i + 1) * radix**(n-1-i))`` with
  ``radix = n_symbols + 1`` whenever ``radix**n < 2**63`` (collision-free,
  decodable), else
* a **64-bit hash** (a SplitMix64 step per symbol), whose collisions the
  callers detect by comparing the windows themselves.

All functions take and return arrays of the caller's namespace ``xp``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

INT63 = 2 ** 63 - 1
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


def fits_exact(n: int, n_symbols: int) -> bool:
    """True when n-grams over ``n_symbols`` symbols have exact packed keys."""
    return (n_symbols + 1) ** n <= INT63


def index_dtype(bound: int) -> type:
    """``int32`` where indices below ``bound`` fit it (``bound <= 2**31``), else ``int64``."""
    return np.int32 if bound <= 2 ** 31 else np.int64


def array_module(a: Any):
    """NumPy or CuPy, whichever ``a`` belongs to."""
    if type(a).__module__.startswith("cupy"):
        import cupy  # noqa: PLC0415 - only reached with CuPy arrays

        return cupy
    return np


def sorted_unique(a: Any):
    """The distinct values of ``a`` (flattened), ascending: ``unique(a)`` by sorting.

    NumPy 2.3 and later answer a plain ``numpy.unique`` from a hash table,
    which is several times slower than sorting on large arrays (4.7 million
    int64 values: 4.2 s against 0.13 s with NumPy 2.4), so dpgpu sorts.

    Parameters
    ----------
    a : numpy.ndarray or cupy.ndarray
        Numbers without NaN.

    Returns
    -------
    numpy.ndarray or cupy.ndarray
        One-dimensional, of ``a``'s dtype and array module.
    """
    xp = array_module(a)
    return distinct_sorted(xp.sort(xp.asarray(a).ravel()))


def sorted_unique_ints(values: np.ndarray) -> np.ndarray:
    """The distinct values of the non-negative NumPy integers ``values``, ascending, as int64.

    Where they span at most eight values per entry (dense ids), a mask over
    the span gives them in order in linear time, with no more memory than
    the copy a sort makes; otherwise :func:`sorted_unique`.
    """
    span = int(values.max()) + 1 if values.size else 0
    if span > 8 * values.size:
        return sorted_unique(values).astype(np.int64, copy=False)
    present = np.zeros(span, dtype=bool)
    present[values] = True
    return np.flatnonzero(present).astype(np.int64, copy=False)


def distinct_sorted(values: Any):
    """The distinct values of the sorted one-dimensional array ``values``, in order."""
    if values.size < 2:
        return values
    xp = array_module(values)
    first = xp.empty(values.size, dtype=bool)
    first[0] = True
    xp.not_equal(values[1:], values[:-1], out=first[1:])
    return values[first]


def window_valid(lengths: Any, n: int, n_windows: int):
    """Mask ``(N, n_windows)``: window ``j`` of row ``r`` lies inside ``lengths[r]``."""
    xp = array_module(lengths)
    pos = xp.arange(n_windows, dtype=xp.int32)[None, :]
    return pos + n <= lengths[:, None]


def packed_keys(tokens: Any, n: int, radix: int):
    """Exact keys ``(N, W-n+1)`` int64 of every length-``n`` window.

    Windows that overlap padding get keys too; mask them with
    :func:`window_valid`.
    """
    xp = array_module(tokens)
    if xp is not np and tokens.dtype == xp.int32:  # CUDA kernel (dpgpu/ops/gpu_grams.py)
        from .gpu_grams import packed_keys_gpu  # noqa: PLC0415 - GPU path only

        return packed_keys_gpu(tokens, n, radix)
    n_windows = max(tokens.shape[1] - n + 1, 0)
    keys = xp.zeros((tokens.shape[0], n_windows), dtype=xp.int64)
    for i in range(n if n_windows else 0):
        keys *= radix
        keys += tokens[:, i:i + n_windows] + 1
    return keys


def hashed_keys(tokens: Any, n: int):
    """64-bit hash keys ``(N, W-n+1)`` uint64 of every length-``n`` window."""
    xp = array_module(tokens)
    n_windows = max(tokens.shape[1] - n + 1, 0)
    h = xp.zeros((tokens.shape[0], n_windows), dtype=xp.uint64)
    for i in range(n if n_windows else 0):
        h += (tokens[:, i:i + n_windows] + 1).astype(xp.uint64) + _GOLDEN
        h = _splitmix(h, xp)
    return h


def rows_keys(rows: Any, radix: int, exact: bool):
    """Keys of the rows of an ``(M, n)`` symbol matrix, matching the window keys."""
    if exact:
        return packed_keys(rows, rows.shape[1], radix)[:, 0] if rows.shape[1] else \
            array_module(rows).zeros(rows.shape[0], dtype=np.int64)
    return hashed_keys(rows, rows.shape[1])[:, 0] if rows.shape[1] else \
        array_module(rows).zeros(rows.shape[0], dtype=np.uint64)


def decode_packed(keys: Any, n: int, radix: int):
    """Symbol matrix ``(M, n)`` int32 of exact packed keys."""
    xp = array_module(keys)
    out = xp.empty((keys.shape[0], n), dtype=xp.int32)
    rest = keys.copy()
    for i in range(n - 1, -1, -1):
        out[:, i] = (rest % radix - 1).astype(xp.int32)
        rest //= radix
    return out


def _splitmix(h: Any, xp: Any):
    h = h ^ (h >> np.uint64(30))
    h = h * _MIX1
    h = h ^ (h >> np.uint64(27))
    h = h * _MIX2
    return h ^ (h >> np.uint64(31))
